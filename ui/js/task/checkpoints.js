// Checkpoints: the files each turn changed, as they were before it. Restoring a turn puts them
// back (with the changes of every later turn to them); the restore itself is a checkpoint, so it
// can be undone.

import { call } from '../api.js';
import { $, h, holdUnderPointer } from '../dom.js';
import { clock, visible } from '../format.js';
import { ask } from '../dialogs.js';

const view = { taskId: 0, checkpoints: [], notice: () => {}, refresh: () => {} };

/** Whether the rows wait to be drawn: a new checkpoint comes first, and while the pointer moves
 * over the list it would slide every row — and its Restore button — under it. */
let held = () => false;

/** After a restore, `notice(text)` says what it did and `refresh()` reads the list again. */
export function initCheckpoints(taskId, { notice, refresh }) {
  Object.assign(view, { taskId, notice, refresh });
  held = holdUnderPointer($('#checkpoint-list'), drawRows);
}

export function showCheckpoints(checkpoints) {
  view.checkpoints = checkpoints;
  $('#checkpoints').hidden = checkpoints.length === 0;
  $('#checkpoint-count').textContent = String(checkpoints.length);
  if (held()) {
    $('#checkpoint-list').dataset.held = 'true';
    return;
  }
  drawRows();
}

/** The list's rows, newest first. A checkpoint's row stays the same element while it says the
 * same (a turn's grows while the turn runs): a new one is put above it, so a button that has the
 * focus keeps it. */
function drawRows() {
  const list = $('#checkpoint-list');
  delete list.dataset.held;
  const wanted = [...view.checkpoints].sort((a, b) => b.id - a.id);
  const keys = new Set(wanted.map((c) => String(c.id)));
  for (const li of [...list.children]) if (!keys.has(li.dataset.key)) li.remove();
  const drawn = new Map([...list.children].map((li) => [li.dataset.key, li]));
  let next = list.firstElementChild;
  for (const checkpoint of wanted) {
    const fresh = row(checkpoint);
    let li = drawn.get(String(checkpoint.id)) ?? fresh;
    if (li !== fresh && li.textContent !== fresh.textContent) {
      li.replaceWith(fresh);
      if (next === li) next = fresh;
      li = fresh;
    }
    if (li === next) next = next.nextElementSibling;
    else list.insertBefore(li, next);
  }
}

/** `/undo`: offers to restore the files of the newest turn that changed any (or to undo the
 * newest restore). */
export function undoLastTurn() {
  const newest = view.checkpoints.reduce((a, b) => (!a || b.id > a.id ? b : a), null);
  if (!newest) {
    view.notice('Nothing to undo: the agent has not changed any file in this task.');
    return Promise.resolve();
  }
  return confirmRestore(newest);
}

/** What an undo checkpoint undoes, in words: a review's revert of a file, or a restore of a
 * turn. */
const undone = (checkpoint) => (checkpoint.reverted != null
  ? `revert of ${visible(checkpoint.reverted)}`
  : `restore of turn ${checkpoint.turn}`);

function row(checkpoint) {
  const undo = checkpoint.kind === 'restore';
  const files = checkpoint.files.length === 1 ? '1 file' : `${checkpoint.files.length} files`;
  const label = undo ? `Undo ${undone(checkpoint)}` : `Turn ${checkpoint.turn}`;
  const button = h('button', {
    type: 'button',
    class: undo ? 'button small restore-undo' : 'button small checkpoint-restore',
    dataset: { turn: checkpoint.turn },
    text: undo ? 'Undo' : 'Restore files to before this turn',
    'aria-label': undo ? `Undo the ${undone(checkpoint)}` : `Restore files to before turn ${checkpoint.turn}`,
  });
  button.addEventListener('click', () => confirmRestore(checkpoint));
  return h('li', { class: 'checkpoint', dataset: { key: String(checkpoint.id) } },
    h('span', { class: 'checkpoint-label', text: `${label} · ${files} · ${clock(checkpoint.createdAt)}` }),
    button);
}

// The files a restore changes: those of this checkpoint and of every later one, each as it was
// in the earliest of them.
function filesChangedBy(checkpoint) {
  const files = new Map();
  const from = view.checkpoints.filter((c) => c.id >= checkpoint.id).sort((a, b) => a.id - b.id);
  for (const c of from) for (const f of c.files) if (!files.has(f.path)) files.set(f.path, f);
  return [...files.values()];
}

async function confirmRestore(checkpoint) {
  const undo = checkpoint.kind === 'restore';
  const files = filesChangedBy(checkpoint);
  const ok = await ask($('#restore-dialog'), {
    title: undo ? `Undo the ${undone(checkpoint)}?` : `Restore files to before turn ${checkpoint.turn}?`,
    body: [
      h('p', { class: 'dialog-message', text: 'These files will be changed:' }),
      h('ul', { class: 'restore-files' }, files.map((f) => h('li', {},
        h('span', { class: 'file-path', text: f.path }),
        f.existed ? null : h('span', { class: 'tag tag-warn', text: 'will be removed' })))),
      h('p', { class: 'muted', text: 'Other files are not touched, and this restore can be undone.' }),
    ],
    confirm: {
      label: !undo ? 'Restore files' : checkpoint.reverted != null ? 'Undo revert' : 'Undo restore',
      // The id tells an undo from the turn's own checkpoint: both carry the same turn.
      action: () => call('restore_checkpoint', { taskId: view.taskId, checkpointId: checkpoint.id }),
    },
  });
  if (!ok) return;
  const count = files.length === 1 ? '1 file' : `${files.length} files`;
  view.notice(undo ? `Undid the ${undone(checkpoint)} (${count}).` : `Restored ${count} to before turn ${checkpoint.turn}.`);
  // The list is read again (once, so it never changes under the user's pointer twice).
  view.refresh();
}
