// The Changes view of a task in a worktree of its own: everything it changed against its base
// (committed or not), by file and hunk; a file or a hunk reverted; comments written on lines and
// sent to the agent as one message; and the task's work carried on — committed (the message
// drafted by the model), merged into its base, or discarded (kept until restored). For a task
// in the project folder: each file it changed, as it was before the task against it now, a file
// or a hunk reverted (a restore of the task's, undone with /undo), and comments sent. A view of
// what the backend says: every action is one command, every refusal its words.

import { call, messageOf } from '../api.js';
import { $, h } from '../dom.js';
import { ask } from '../dialogs.js';
import { hunkRange, hunkTable } from './diff.js';

/** Lines drawn at once when the view opens (a 5,000-line change is drawn whole in well under
 * 200 ms, BENCHMARKS.md); files past them open folded, drawn when unfolded. */
const OPEN_LINES = 8000;

const view = {
  taskId: 0,
  task: null,
  /** The last `task_changes` answer (for a task in the project folder, `folder_changes`'s
   * files as `{changes: {files}}`, with no worktree or status, and its `folder`: which files are
   * not committed and which git ignores). */
  review: null,
  /** Comments being written, by `path:line`: kept through every refresh until sent. */
  comments: new Map(),
  /** Each file the user opened or closed, by path: kept so through every refresh (one comes
   * with each of the agent's calls while the dialog is open). */
  opened: new Map(),
  running: false,
  notice: () => {},
  checkpointsMoved: () => {},
  refreshing: null,
};

/** `notice(text)` says in the conversation what an action did; `checkpointsMoved()` reads the
 * task's checkpoints again (a revert in the project folder is one). */
export function initChanges(taskId, { notice, checkpointsMoved }) {
  Object.assign(view, { taskId, notice, checkpointsMoved });
  $('#changes-open').addEventListener('click', open);
  $('#worktree-restore').addEventListener('click', restore);
  $('#worktree-checks').addEventListener('click', () => loadChecks());
  // The pull request's address, from GitHub's command line: opened in the browser on request.
  $('#worktree-pr').addEventListener('click', () => {
    const url = view.task?.worktree?.pullRequest;
    if (url) call('open_link', { taskId: view.taskId, url }).catch((e) => view.notice(messageOf(e)));
  });
}

/** The header's worktree line for `task` (hidden for a task in the project's folder). */
export function showWorktree(task) {
  view.task = task;
  const tree = task.worktree;
  $('#task-worktree').hidden = !tree;
  $('#changes-open').hidden = tree?.state === 'discarded';
  if (!tree) return;
  const discarded = tree.state === 'discarded';
  $('#worktree-branch').textContent = tree.branch;
  $('#worktree-branch').title = `${tree.path}, from ${tree.base}`;
  $('#worktree-pr').hidden = discarded || !tree.pullRequest;
  $('#worktree-pr').title = tree.pullRequest ?? '';
  $('#worktree-discarded').hidden = !discarded;
  $('#worktree-restore').hidden = !discarded;
  // The pull request's checks: read when it is opened (or first shown), on a click, and every
  // 30 s while some still run and the window is in view.
  const pr = discarded ? null : tree.pullRequest ?? null;
  if (pr !== checks.url) {
    checks.url = pr;
    loadChecks();
  }
}

const checks = { url: null, timer: null };
const CHECKS_AGAIN_MS = 30_000;

async function loadChecks() {
  clearTimeout(checks.timer);
  const button = $('#worktree-checks');
  button.hidden = !checks.url;
  if (!checks.url) return;
  const url = checks.url;
  button.textContent = 'Checks…';
  delete button.dataset.state;
  try {
    const c = await call('pull_request_checks', { taskId: view.taskId });
    if (url !== checks.url) return; // another pull request meanwhile
    const total = c.passed + c.failed + c.pending + c.skipped;
    const [text, state] = !total ? ['No checks', 'none']
      : c.failed ? [`${c.failed} of ${total} checks failed`, 'failed']
        : c.pending ? [`${c.pending} of ${total} checks running`, 'pending']
          : [`${c.passed} of ${total} checks passed`, 'passed'];
    button.textContent = text;
    button.dataset.state = state;
    button.title = [...c.failing.map((f) => `${f.name} failed${f.link ? `: ${f.link}` : ''}`), 'Click to read them again'].join('\n');
    if (c.pending) {
      checks.timer = setTimeout(function again() {
        if (document.visibilityState === 'visible') loadChecks();
        else checks.timer = setTimeout(again, CHECKS_AGAIN_MS);
      }, CHECKS_AGAIN_MS);
    }
  } catch (e) {
    if (url !== checks.url) return;
    button.textContent = 'Checks unknown';
    button.dataset.state = 'unknown';
    button.title = messageOf(e);
  }
}

/** Opens the Changes view, as its header button does (asked from the main window's row); says
 * why not when the task has no worktree to show. */
export function showChanges() {
  if (view.task?.worktree?.state === 'discarded') {
    view.notice('Its worktree was discarded; Restore brings it back, with its changes.');
  } else if (!$('#changes-dialog').open) {
    open();
  }
}

/** Whether a run is going in this task (the view's actions wait for it to stop). */
export function setChangesRunning(running) {
  view.running = running;
  const dialog = $('#changes-dialog');
  if (dialog.open) for (const b of dialog.querySelectorAll('[data-needs-stopped]')) b.disabled = running;
}

/** Reads the change again if the view is open (the agent wrote or ran something). */
export function changesMayHaveMoved() {
  if (!$('#changes-dialog').open || view.refreshing) return;
  view.refreshing = setTimeout(function later() {
    // Not while a comment is being written: its box would be drawn again and lose the caret.
    if (document.activeElement?.closest?.('.review-comment')) {
      view.refreshing = setTimeout(later, 1000);
      return;
    }
    view.refreshing = null;
    refresh();
  }, 300);
}

async function open() {
  // For scripts/bench-changes.py: opened → the change read → drawn and painted.
  for (const mark of ['changes-open', 'changes-read', 'changes-painted', 'diff-coloured']) performance.clearMarks(mark);
  performance.mark('changes-open');
  const dialog = $('#changes-dialog');
  dialog.replaceChildren(skeleton());
  // A task in the project folder: reviewed, commented on and committed (only its files); never merged.
  dialog.dataset.folder = String(!view.task?.worktree);
  dialog.showModal();
  await refresh();
  $('#changes-close').focus();
  requestAnimationFrame(() => requestAnimationFrame(() => performance.mark('changes-painted')));
}

function skeleton() {
  const close = h('button', { id: 'changes-close', type: 'button', class: 'icon-button', text: '×', 'aria-label': 'Close the changes', onclick: () => $('#changes-dialog').close() });
  return h('div', { class: 'changes' },
    h('header', { class: 'changes-head' },
      h('div', { class: 'changes-heading' },
        h('h2', { id: 'changes-title', text: 'Changes' }),
        h('p', { id: 'changes-summary', class: 'muted', role: 'status', text: 'Reading the change…' })),
      close),
    h('div', { id: 'changes-files', class: 'changes-files', tabindex: '-1' }),
    h('p', { id: 'changes-error', class: 'form-error', role: 'alert', hidden: true }),
    h('footer', { class: 'changes-actions' },
      h('button', { id: 'changes-send', type: 'button', class: 'button', onclick: sendComments, disabled: true, text: 'Send comments' }),
      h('span', { class: 'changes-finish' },
        h('button', { id: 'changes-discard', type: 'button', class: 'button danger-outline', dataset: { needsStopped: '' }, onclick: discard, text: 'Discard…' }),
        h('button', { id: 'changes-pr', type: 'button', class: 'button', dataset: { needsStopped: '' }, onclick: pullRequest, text: 'Pull request…' }),
        h('button', { id: 'changes-merge', type: 'button', class: 'button', dataset: { needsStopped: '' }, onclick: merge, text: 'Merge' }),
        h('button', { id: 'changes-commit', type: 'button', class: 'button primary', dataset: { needsStopped: '' }, onclick: commit, text: 'Commit…' }))));
}

async function refresh() {
  try {
    const review = view.task?.worktree
      ? await call('task_changes', { taskId: view.taskId })
      : await call('folder_changes', { taskId: view.taskId }).then((folder) =>
        ({ changes: { files: folder.files, patchCut: false }, status: null, worktree: null, folder }));
    performance.mark('changes-read');
    view.review = review;
    render();
    showError(null);
  } catch (e) {
    showError(messageOf(e));
  }
}

function showError(text, ...actions) {
  const error = $('#changes-error');
  if (!error) return;
  error.hidden = !text;
  error.replaceChildren(...(text ? [text, ...actions] : []));
}

function render() {
  const { changes, status, worktree } = view.review;
  const files = changes.files;
  const added = files.reduce((n, f) => n + (f.added ?? 0), 0);
  const removed = files.reduce((n, f) => n + (f.removed ?? 0), 0);
  const parts = [
    worktree ? `${worktree.branch} from ${worktree.base}` : 'In the project folder',
    files.length === 1 ? '1 file' : `${files.length} files`,
    `+${added} −${removed}`,
  ];
  if (worktree) {
    if (status.ahead) parts.push(status.ahead === 1 ? '1 commit' : `${status.ahead} commits`);
    if (status.behind) parts.push(`${worktree.base} is ${status.behind} ahead`);
    parts.push(status.uncommitted.length ? `${status.uncommitted.length} not committed` : 'all committed');
    $('#changes-merge').textContent = `Merge into ${worktree.base}`;
  } else {
    parts.push('each file against how it was before the task changed it');
    const { uncommitted, committed } = view.review.folder;
    if (uncommitted && files.length) {
      parts.push(uncommitted.length ? `${uncommitted.length} not committed`
        : committed.length === files.length ? 'all committed' : 'nothing to commit');
    }
  }
  $('#changes-summary').textContent = parts.join(' · ');
  const list = $('#changes-files');
  const scroll = list.scrollTop;
  // Hunks draw their lines as they come within a screen of the view.
  view.observer?.disconnect();
  view.observer = new IntersectionObserver((entries) => {
    for (const entry of entries) if (entry.isIntersecting) entry.target.draw?.();
  }, { root: list, rootMargin: '800px 0px' });
  if (!files.length) {
    list.replaceChildren(h('p', { class: 'changes-empty muted', text: 'Nothing has changed yet. The agent’s edits show here as it makes them.' }));
  } else {
    let budget = OPEN_LINES;
    list.replaceChildren(...files.map((file) => {
      const lines = file.hunks.reduce((n, hunk) => n + hunk.lines.length + 1, 0);
      // Open as the user left it, else while the budget lasts; only an open file spends it.
      const open = view.opened.get(file.path) ?? lines <= budget;
      if (open) budget -= lines;
      return fileView(file, open);
    }));
    if (changes.patchCut) list.append(h('p', { class: 'muted', text: 'The diff is cut here for its length; the files past this point are listed without their lines.' }));
  }
  list.scrollTop = scroll; // a refresh while the user reads does not move what they read
  for (const b of $('#changes-dialog').querySelectorAll('[data-needs-stopped]')) b.disabled = view.running;
  $('#changes-commit').disabled ||= !notCommitted().length;
  updateSend();
}

/** The files a commit would take: not committed yet (outside a git repository, every file the
 * task changed in the folder — the commit then says why it cannot). */
function notCommitted() {
  const { changes, status, worktree, folder } = view.review;
  if (worktree) return status.uncommitted;
  return folder.uncommitted ?? changes.files.map((f) => f.path).filter((p) => !p.startsWith('/'));
}

/** Where the file's change stands in git: ignored, or all of it committed; null when neither
 * (or not known). */
function gitTag(file) {
  const { worktree, folder } = view.review;
  const committed = worktree ? !notCommitted().includes(file.path) : folder.committed.includes(file.path);
  if (folder?.ignored.includes(file.path)) return h('span', { class: 'tag', title: 'Git ignores this file: no commit takes it', text: 'ignored' });
  if (!committed) return null;
  return h('span', { class: 'tag tag-ok', title: worktree ? 'Committed on the task’s branch' : 'Committed on the folder’s branch', text: 'committed' });
}

function fileView(file, open) {
  const tags = [];
  if (file.created) tags.push(h('span', { class: 'tag', text: 'new' }));
  if (file.deleted) tags.push(h('span', { class: 'tag tag-warn', text: 'deleted' }));
  if (file.oldPath) tags.push(h('span', { class: 'tag', text: `was ${file.oldPath}` }));
  if (file.added == null) tags.push(h('span', { class: 'tag', text: 'binary' }));
  const git = gitTag(file);
  if (git) tags.push(git);
  const counts = file.added == null ? null : h('span', { class: 'change-counts' },
    h('span', { class: 'count-add', text: `+${file.added}` }), ' ', h('span', { class: 'count-del', text: `−${file.removed}` }));
  const body = h('div', { class: 'change-hunks' });
  const details = h('details', { class: 'change-file', open: open || null, dataset: { path: file.path } },
    h('summary', { class: 'change-file-head', onclick: () => view.opened.set(file.path, !details.open) },
      h('span', { class: 'file-path', text: file.path }), counts, ...tags),
    h('div', { class: 'change-file-tools' },
      h('button', { type: 'button', class: 'button small', dataset: { needsStopped: '' }, text: 'Revert file', 'aria-label': `Revert ${file.path}`, onclick: () => revert(file, null) })),
    body);
  const fill = () => {
    if (body.childElementCount) return;
    body.append(...file.hunks.map((hunk) => hunkView(file, hunk)));
    // A comment on a line that is no longer in the change shows at the file's top (the others
    // show with their hunk's lines, once drawn).
    for (const comment of commentsOn(file.path)) {
      if (!file.hunks.some((hunk) => holds(hunk, comment.line))) placeComment(details, comment);
    }
  };
  if (open) fill();
  details.addEventListener('toggle', () => details.open && fill());
  return details;
}

/** Whether `line` (a line number of the file as it is now) is in `hunk`. */
const holds = (hunk, line) => line >= hunk.newStart && line < hunk.newStart + Math.max(hunk.newLines, 1);

/** One row of a diff's lines, in pixels (12 px text, line height 1.45): a hunk not drawn yet
 * takes the room it will take. */
const ROW_PX = 17.4;

/** A hunk: its bar at once; its lines when they come near the view (a 5,000-line change opens
 * without drawing 5,000 rows, and scrolling draws what comes). */
function hunkView(file, hunk) {
  const firstChange = hunk.lines.findIndex((l) => l.kind !== 'context');
  const changed = hunk.lines.filter((l) => l.kind !== 'context').map((l) => l.text).join('\n');
  const startLine = hunk.newStart + Math.max(0, hunk.lines.slice(0, firstChange).filter((l) => l.kind !== 'removed').length);
  const lines = h('div', { class: 'diff-lazy' });
  lines.style.height = `${hunk.lines.length * ROW_PX}px`;
  let table = null;
  const draw = () => {
    if (table) return table;
    view.observer?.unobserve(lines);
    table = hunkTable(hunk, file.path);
    // A click on a line writes a comment on it.
    let oldLine = hunk.oldStart;
    let newLine = hunk.newStart;
    const rows = [...table.querySelectorAll('tr')];
    for (const [i, row] of rows.entries()) {
      const line = hunk.lines[i];
      row.dataset.line = String(line.kind === 'removed' ? oldLine : newLine);
      if (line.kind !== 'added') oldLine++;
      if (line.kind !== 'removed') newLine++;
    }
    table.title = 'Click a line to comment on it';
    table.addEventListener('click', (event) => {
      const row = event.target.closest('tr[data-line]');
      if (row) addComment(file.path, Number(row.dataset.line), hunk.lines[rows.indexOf(row)].text, row);
    });
    lines.replaceWith(table);
    const fileView = table.closest('.change-file');
    for (const comment of commentsOn(file.path)) {
      if (holds(hunk, comment.line) && fileView) placeComment(fileView, comment);
    }
    return table;
  };
  lines.draw = draw;
  view.observer?.observe(lines);
  return h('div', { class: 'diff-hunk change-hunk' },
    h('div', { class: 'diff-range change-hunk-bar' },
      h('span', { text: hunkRange(hunk) }),
      h('span', { class: 'changes-spacer' }),
      h('button', { type: 'button', class: 'button small', text: 'Comment', 'aria-label': `Comment on ${file.path} line ${startLine}`,
        onclick: () => addComment(file.path, startLine, changed, draw().querySelector(`tr:nth-child(${firstChange + 1})`)) }),
      h('button', { type: 'button', class: 'button small change-revert', dataset: { needsStopped: '' }, text: 'Revert', 'aria-label': `Revert this hunk of ${file.path}`,
        onclick: () => revert(file, hunk) })),
    lines);
}

// ---- comments -----------------------------------------------------------------------------

const key = (path, line) => `${path}:${line}`;
const commentsOn = (path) => [...view.comments.values()].filter((c) => c.path === path);

function addComment(path, line, quote, row) {
  const k = key(path, line);
  if (!view.comments.has(k)) view.comments.set(k, { path, line, quote, comment: '' });
  const comment = view.comments.get(k);
  const file = row?.closest('.change-file');
  const placed = file ? placeComment(file, comment, row) : null;
  placed?.querySelector('textarea').focus();
  updateSend();
}

/** Shows `comment` under its line in the file's view (or at the file's top when its line is no
 * longer in the change); returns its box. */
function placeComment(fileView, comment, row = null) {
  const k = key(comment.path, comment.line);
  const existing = fileView.querySelector(`[data-comment="${CSS.escape(k)}"]`);
  if (existing) return existing;
  const input = h('textarea', { rows: 2, 'aria-label': `Comment on ${comment.path} line ${comment.line}`, placeholder: 'What should the agent change here?' });
  input.value = comment.comment;
  input.addEventListener('input', () => {
    comment.comment = input.value;
    updateSend();
  });
  const box = h('div', { class: 'review-comment', dataset: { comment: k } },
    h('div', { class: 'review-comment-head' },
      h('span', { class: 'muted', text: `Line ${comment.line}` }),
      h('button', { type: 'button', class: 'button small', text: 'Remove', 'aria-label': `Remove the comment on line ${comment.line}`,
        onclick: () => {
          view.comments.delete(k);
          (box.closest('tr') ?? box).remove();
          updateSend();
        } })),
    input);
  const at = row ?? [...fileView.querySelectorAll('tr[data-line]')].find((r) => r.dataset.line === String(comment.line) && !r.classList.contains('diff-del'));
  if (at) {
    at.after(h('tr', { class: 'comment-row' }, h('td', { colspan: 4 }, box)));
  } else {
    fileView.querySelector('.change-hunks').prepend(box);
  }
  return box;
}

function written() {
  return [...view.comments.values()].filter((c) => c.comment.trim());
}

function updateSend() {
  const button = $('#changes-send');
  if (!button) return;
  const n = written().length;
  button.disabled = n === 0;
  button.textContent = n === 0 ? 'Send comments' : n === 1 ? 'Send 1 comment' : `Send ${n} comments`;
}

async function sendComments() {
  const comments = written();
  try {
    await call('send_review', { taskId: view.taskId, comments });
    for (const c of comments) view.comments.delete(key(c.path, c.line));
    for (const box of $('#changes-dialog').querySelectorAll('.review-comment')) {
      if (!view.comments.has(box.dataset.comment)) (box.closest('tr') ?? box).remove();
    }
    updateSend();
    view.notice(comments.length === 1 ? 'Sent your comment to the agent.' : `Sent your ${comments.length} comments to the agent.`);
    $('#changes-dialog').close();
  } catch (e) {
    showError(messageOf(e));
  }
}

// ---- actions ------------------------------------------------------------------------------

async function revert(file, hunk) {
  const hunkRef = hunk ? { index: hunk.index, oldStart: hunk.oldStart, newStart: hunk.newStart } : null;
  try {
    await call('revert_change', { taskId: view.taskId, path: file.path, hunk: hunkRef });
    const base = view.review.worktree?.base;
    await refresh();
    view.checkpointsMoved();
    if (!base) {
      view.notice(hunk ? `Reverted a hunk of ${file.path} to how it was before the task; /undo puts it back.` : `Reverted ${file.path} to how it was before the task; /undo puts it back.`);
    } else {
      view.notice(hunk ? `Reverted a hunk of ${file.path}; /undo puts it back.` : `Reverted ${file.path} to how it is in ${base}; /undo puts it back.`);
    }
  } catch (e) {
    showError(messageOf(e));
    await refresh().catch(() => {});
  }
}

async function commit() {
  const message = h('textarea', { id: 'commit-message', rows: 5, 'aria-label': 'Commit message', placeholder: 'Drafting a message…' });
  const note = h('p', { class: 'muted draft-note', id: 'commit-note', role: 'status', text: 'The model is drafting a message from the change; edit it as you like.' });
  let typed = false;
  message.addEventListener('input', () => { typed = true; });
  call('draft_commit_message', { taskId: view.taskId })
    .then((drafted) => {
      if (!typed) message.value = drafted;
      note.textContent = 'Drafted by the model; edit it as you like.';
    })
    .catch((e) => {
      if (!typed && !message.value) message.value = view.task?.title ?? '';
      note.textContent = `No message could be drafted (${messageOf(e)}); the task’s title is used — edit it as you like.`;
    });
  const { worktree, status } = view.review;
  const files = notCommitted().length;
  const committed = await ask($('#finish-dialog'), {
    title: worktree ? `Commit on ${worktree.branch}` : 'Commit the task’s files',
    body: [
      h('p', { class: 'dialog-message', text: worktree
        ? `Commits everything not committed yet (${status.uncommitted.length === 1 ? '1 file' : `${status.uncommitted.length} files`}) on the task’s branch.`
        : `Commits the task’s ${files === 1 ? 'file' : `${files} files`} not committed yet, as ${files === 1 ? 'it is' : 'they are'} now, on the folder’s current branch; the folder’s other changes, staged or not, stay as they are.` }),
      h('label', { class: 'field' }, h('span', { class: 'field-label', text: 'Message' }), message),
      note,
    ],
    confirm: {
      label: 'Commit',
      action: async () => {
        if (!message.value.trim()) throw new Error('Write a commit message first.');
        const done = await call('commit_task', { taskId: view.taskId, message: message.value });
        view.notice(done.commit ? `Committed ${done.commit.slice(0, 12)} on ${done.branch}.` : `Nothing to commit on ${done.branch}.`);
      },
    },
  });
  if (committed) await refresh();
}

async function pullRequest() {
  const { worktree, status } = view.review;
  const title = h('input', { id: 'pr-title', type: 'text', 'aria-label': 'Pull request title', placeholder: 'Drafting a title…', autocomplete: 'off' });
  const body = h('textarea', { id: 'pr-body', rows: 6, 'aria-label': 'Pull request description', placeholder: 'Drafting a description…' });
  const note = h('p', { class: 'muted draft-note', role: 'status', text: 'The model is drafting the title and description from the change; edit them as you like.' });
  let typed = false;
  for (const field of [title, body]) field.addEventListener('input', () => { typed = true; });
  call('draft_pull_request', { taskId: view.taskId })
    .then((draft) => {
      if (!typed) {
        title.value = draft.title;
        body.value = draft.body;
      }
      body.placeholder = 'What the pull request changes, and why (optional)';
      note.textContent = 'Drafted by the model from the change; edit them as you like.';
    })
    .catch((e) => {
      if (!typed && !title.value) title.value = view.task?.title ?? '';
      note.textContent = `Nothing could be drafted (${messageOf(e)}); the task’s title is used.`;
    });
  const opened = await ask($('#finish-dialog'), {
    title: `Pull request from ${worktree.branch} into ${worktree.base}`,
    body: [
      h('p', { class: 'dialog-message', text: status.uncommitted.length
        ? `Commit first: ${status.uncommitted.length === 1 ? '1 file is' : `${status.uncommitted.length} files are`} not committed, and a pull request has only what is.`
        : 'Pushes the branch and opens the pull request with GitHub’s command line (gh).' }),
      h('label', { class: 'field' }, h('span', { class: 'field-label', text: 'Title' }), title),
      h('label', { class: 'field' }, h('span', { class: 'field-label', text: 'Description' }), body),
      note,
    ],
    confirm: {
      label: 'Open pull request',
      action: async () => {
        const url = await call('open_pull_request', { taskId: view.taskId, title: title.value, body: body.value });
        view.notice(`Opened the pull request: ${url}`);
      },
    },
  });
  if (opened) await refresh();
}

async function merge() {
  const base = view.review.worktree.base;
  try {
    const merged = await call('merge_task', { taskId: view.taskId, mode: 'auto' });
    view.notice(`Merged ${view.review.worktree.branch} into ${base} (${merged.fastForward ? 'a fast-forward' : 'a merge commit'}).`);
    await refresh();
  } catch (e) {
    const conflict = e?.kind === 'conflict' && /conflicts in/.test(messageOf(e));
    showError(messageOf(e), ...(conflict ? [' ', h('button', {
      type: 'button', id: 'changes-resolve', class: 'button small', text: 'Ask the agent to resolve',
      onclick: async () => {
        try {
          await call('resolve_conflicts', { taskId: view.taskId });
          $('#changes-dialog').close();
          view.notice(`Asked the agent to bring ${base} into its branch and resolve the conflicts.`);
        } catch (err) {
          showError(messageOf(err));
        }
      },
    })] : []));
  }
}

async function discard() {
  // What is there now, not when the view was drawn: the list is what the user agrees to.
  await refresh();
  const { status, worktree } = view.review;
  const lost = [];
  if (status.ahead) lost.push(h('li', { text: status.ahead === 1 ? `1 commit on ${worktree.branch}` : `${status.ahead} commits on ${worktree.branch}` }));
  for (const file of status.uncommitted) lost.push(h('li', {}, h('span', { class: 'file-path', text: file }), h('span', { class: 'muted', text: ' (not committed)' })));
  const ok = await ask($('#finish-dialog'), {
    title: 'Discard the task’s worktree?',
    body: [
      h('p', { class: 'dialog-message', text: lost.length ? 'The worktree and its branch are removed, with:' : 'The worktree and its branch are removed; they hold nothing that is not in the base.' }),
      lost.length ? h('ul', { class: 'restore-files' }, lost) : null,
      h('p', { class: 'muted', text: 'All of it is kept for you: “Restore” in the task brings it back as it was.' }),
    ],
    confirm: {
      label: 'Discard',
      danger: true,
      action: async () => {
        const done = await call('discard_task', { taskId: view.taskId });
        view.notice(`Discarded the worktree; its work is kept under ${done.archiveRef} — Restore brings it back.`);
      },
    },
  });
  if (ok) $('#changes-dialog').close();
}

async function restore() {
  try {
    const task = await call('restore_task', { taskId: view.taskId });
    showWorktree(task);
    view.notice(`Restored the worktree on ${task.worktree.branch}, as it was.`);
  } catch (e) {
    view.notice(`The worktree could not be restored: ${messageOf(e)}`);
  }
}
