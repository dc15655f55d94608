// The Files tab of a project: its folders — or a worktree task's, chosen above the tree —
// opened one at a time, each entry with its git mark; a file can be put into the message of a
// task window working there (the worktree's task, or the project's task last in front), or
// opened in the system's default app. The open folders are watched by the backend, which says which of
// them changed; only those are read again. ↑/↓ move, → opens a folder, ← closes it (or goes to
// its parent), Enter opens or closes a folder.

import { call, messageOf, onTreeChange } from './api.js';
import { $, h, holdUnderPointer, toast } from './dom.js';

const MARKS = {
  modified: ['M', 'Modified'],
  added: ['A', 'Added'],
  deleted: ['D', 'Deleted'],
  renamed: ['R', 'Renamed'],
  untracked: ['U', 'Untracked'],
  conflicted: ['C', 'Conflicted'],
};

const state = {
  project: null,
  task: null, // a worktree task whose files are shown; null: the project's folder
  worktrees: [], // the project's tasks with a worktree on disk: { id, title, branch }
  drawn: null, // the list the choice above the tree shows (JSON)
  redraw: false, // it is to be drawn again when the user leaves it
  open: new Set(['']), // folders shown open ('' is the top)
  folders: new Map(), // path → what list_folder returned
};

/**
 * Whether a change on disk waits to be drawn: while the pointer moves over the tree, a file made
 * or removed above it would slide the rows — and a row's Attach or Open — under it
 * (`holdUnderPointer`, set up by `initTree`).
 */
let held = () => false;
/** The same for the choice of folder appearing or going above the tree (`showChoice`). */
let choiceHeld = () => false;

/** Where the tree's files are, as the commands take it. */
const place = () => ({ projectId: state.project, taskId: state.task });

/**
 * Shows the tree of `project` (a project id) — of the project's folder, or of the worktree
 * chosen among `worktrees` (its tasks with one on disk: `{ id, title, branch }`) — read again if
 * the place changed.
 */
export async function showTree(project, worktrees) {
  performance.mark('tree-asked'); // for scripts/bench-desktop.py, with 'tree-painted'
  if (state.project !== project) {
    state.project = project;
    state.task = null;
    forget();
  }
  setWorktrees(worktrees);
  await reload([...state.open]);
  watch();
}

/**
 * The project's worktree tasks changed (one made, renamed, discarded): the choice above the tree
 * lists them; if the one shown went away, the project's folder is shown instead.
 */
export function treeWorktrees(worktrees) {
  const shown = state.task;
  setWorktrees(worktrees);
  if (state.task !== shown) {
    reload([...state.open]);
    watch();
  }
}

function setWorktrees(worktrees) {
  state.worktrees = worktrees;
  if (state.task != null && !worktrees.some((w) => w.id === state.task)) {
    state.task = null;
    forget();
  }
  $('#tree').setAttribute('aria-label', state.task == null ? 'Files of the project' : 'Files of the task’s worktree');
  drawChoice();
}

/** The choice above the tree, drawn again when its list changed — not while the user is
 * choosing in it (its options would move under them), but once they leave it. */
function drawChoice() {
  const choice = $('#tree-where');
  const list = JSON.stringify(state.worktrees);
  if (list !== state.drawn) {
    if (document.activeElement === choice && state.drawn != null) {
      if (!state.redraw) {
        state.redraw = true;
        choice.addEventListener('blur', () => {
          state.redraw = false;
          drawChoice();
        }, { once: true });
      }
    } else {
      choice.replaceChildren(
        h('option', { value: '', text: 'Project folder' }),
        ...state.worktrees.map((w) => h('option', { value: String(w.id), text: `${w.title} — ${w.branch}` })));
      state.drawn = list;
    }
  }
  choice.value = state.task == null ? '' : String(state.task);
  showChoice();
}

/** The choice above the tree shown while the project has worktree tasks — shown or hidden when
 * the pointer is not moving over the tab (it would slide every row of the tree under it). */
function showChoice() {
  const row = $('#tree-where-row');
  const hide = state.worktrees.length === 0;
  if (row.hidden === hide) {
    delete row.dataset.held;
    return;
  }
  if (choiceHeld()) {
    row.dataset.held = 'true';
    return;
  }
  delete row.dataset.held;
  row.hidden = hide;
}

/** Drops what was read of the previous place. */
function forget() {
  state.open = new Set(['']);
  state.folders = new Map();
  $('#tree').replaceChildren();
}

async function choose() {
  const value = $('#tree-where').value;
  state.task = value === '' ? null : Number(value);
  forget();
  await reload(['']);
  watch();
}

/** Forgets the tree (no project selected, or its tab hidden): nothing is watched. */
export function hideTree() {
  if (state.project != null) call('watch_tree', { place: place(), folders: [] }).catch(() => {});
}

function watch() {
  if (state.project == null) return;
  call('watch_tree', { place: place(), folders: [...state.open] })
    .catch((e) => status(`Changes on disk are not followed: ${messageOf(e)}`));
}

function status(text) {
  const el = $('#tree-status');
  el.textContent = text;
  el.hidden = !text;
}

/**
 * Reads the folders `paths` again (those still open), then shows the tree — `onDisk`: for a
 * change on disk, which waits while the pointer moves over the tree.
 */
async function reload(paths, onDisk = false) {
  const asked = place();
  const wanted = paths.filter((p) => state.open.has(p));
  const read = await Promise.all(wanted.map((path) =>
    call('list_folder', { place: asked, path }).then(
      (folder) => [path, folder],
      (e) => [path, { error: messageOf(e) }])));
  if (asked.projectId !== state.project || asked.taskId !== state.task) return; // another place was chosen meanwhile
  // Nothing changed (a change elsewhere, or undone): the rows, and the focus, stay as they are.
  const same = read.every(([path, folder]) => JSON.stringify(state.folders.get(path)) === JSON.stringify(folder));
  if (same && read.length) return;
  for (const [path, folder] of read) {
    if (folder.error && path !== '') {
      // A folder that went away closes.
      state.open.delete(path);
      state.folders.delete(path);
    } else {
      state.folders.set(path, folder);
    }
  }
  const top = state.folders.get('');
  const whose = state.task == null ? 'The project’s files' : 'The worktree’s files';
  status(top?.error ? `${whose} cannot be read: ${top.error}` : '');
  if (onDisk && held()) {
    $('#tree').dataset.held = 'true';
    return;
  }
  render();
  // For scripts/bench-desktop.py: the frame after the tree was drawn again, numbered.
  const renders = $('#tree').dataset.renders;
  requestAnimationFrame(() => requestAnimationFrame(() => performance.mark('tree-painted', { detail: renders })));
}

function markOf(entry) {
  const mark = MARKS[entry.git];
  if (mark) return h('span', { class: `tree-mark mark-${entry.git}`, title: mark[1], text: mark[0] });
  if (entry.changedInside) return h('span', { class: 'tree-mark changed-inside', title: 'Changes inside' });
  return null;
}

/** Indents a row `level` steps (through the CSSOM: the page's CSP allows no style attribute). */
function indent(el, level) {
  el.style.setProperty('--level', String(level));
  return el;
}

function rows(path, level) {
  const folder = state.folders.get(path);
  if (!folder?.entries) return [];
  const out = [];
  for (const entry of folder.entries) {
    const expanded = entry.dir && state.open.has(entry.path);
    const label = `${entry.name}${entry.git ? `, ${MARKS[entry.git]?.[1].toLowerCase() ?? entry.git}` : ''}`;
    out.push(h('li', {
      role: 'treeitem',
      class: `tree-item${entry.git === 'deleted' ? ' deleted' : ''}`,
      'aria-level': String(level),
      'aria-expanded': entry.dir ? String(expanded) : null,
      dataset: { path: entry.path, dir: entry.dir ? 'true' : 'false' },
    },
    indent(h('div', { class: 'tree-row' },
      h('button', {
        type: 'button',
        class: 'tree-name',
        'aria-label': label,
        title: entry.path,
        onclick: () => (entry.dir ? toggle(entry.path) : null),
      },
      h('span', { class: 'tree-icon', 'aria-hidden': 'true', text: entry.dir ? (expanded ? '▾' : '▸') : '' }),
      h('span', { class: 'tree-label', text: entry.name }),
      markOf(entry)),
      entry.dir || entry.git === 'deleted' ? null : h('span', { class: 'tree-actions' },
        h('button', { type: 'button', class: 'button small', text: 'Attach', title: state.task == null ? 'Put it into the message of this project’s task window' : 'Put it into the message of this worktree’s task', 'aria-label': `Attach ${entry.path} to the task`, onclick: () => attach(entry.path) }),
        h('button', { type: 'button', class: 'button small', text: 'Open', title: 'Open it in the system’s default app', 'aria-label': `Open ${entry.path}`, onclick: () => openInApp(entry.path) }))), level - 1)));
    if (expanded) {
      const children = rows(entry.path, level + 1);
      if (children.length) out.push(...children);
      else if (!state.folders.has(entry.path)) out.push(indent(h('li', { class: 'tree-note muted', text: 'Reading…' }), level));
      else out.push(indent(h('li', { class: 'tree-note muted', text: 'Empty' }), level));
    }
  }
  if (folder.truncated) {
    out.push(indent(h('li', { class: 'tree-note muted', text: `Only the first ${folder.entries.length} entries are shown.` }), level - 1));
  }
  return out;
}

/** Re-renders the tree, keeping the keyboard focus on the same row. */
function render() {
  delete $('#tree').dataset.held;
  const focused = document.activeElement?.closest?.('.tree-item');
  const path = focused?.dataset.path;
  const button = document.activeElement?.className;
  const top = rows('', 1);
  $('#tree').replaceChildren(...top);
  $('#tree').dataset.renders = String(Number($('#tree').dataset.renders ?? 0) + 1);
  $('#tree-empty').hidden = top.length > 0 || !state.folders.get('')?.entries;
  if (path != null) {
    const row = [...document.querySelectorAll('.tree-item')].find((r) => r.dataset.path === path);
    const again = row && [...row.querySelectorAll('button')].find((b) => b.className === button);
    (again ?? row?.querySelector('.tree-name'))?.focus();
  }
}

async function toggle(path) {
  if (state.open.has(path)) {
    state.open.delete(path);
    for (const p of [...state.open]) if (p.startsWith(`${path}/`)) state.open.delete(p);
    render();
  } else {
    state.open.add(path);
    render(); // "Reading…" at once
    await reload([path]);
  }
  watch();
}

async function attach(path) {
  try {
    await call('attach_file', { place: place(), path });
  } catch (e) {
    toast(messageOf(e), { error: true });
  }
}

async function openInApp(path) {
  try {
    await call('open_file', { place: place(), path });
  } catch (e) {
    toast(messageOf(e), { error: true });
  }
}

function onKey(event) {
  const row = event.target.closest?.('.tree-item');
  if (!row || !event.target.classList.contains('tree-name')) return;
  const names = [...document.querySelectorAll('#tree .tree-name')];
  const at = names.indexOf(event.target);
  const dir = row.dataset.dir === 'true';
  const expanded = row.getAttribute('aria-expanded') === 'true';
  const move = (i) => names[Math.max(0, Math.min(names.length - 1, i))]?.focus();
  switch (event.key) {
    case 'ArrowDown': move(at + 1); break;
    case 'ArrowUp': move(at - 1); break;
    case 'ArrowRight': if (dir && !expanded) toggle(row.dataset.path); else move(at + 1); break;
    case 'ArrowLeft': {
      if (dir && expanded) { toggle(row.dataset.path); break; }
      const parent = row.dataset.path.includes('/') ? row.dataset.path.slice(0, row.dataset.path.lastIndexOf('/')) : null;
      const up = parent == null ? null : [...document.querySelectorAll('.tree-item')].find((r) => r.dataset.path === parent);
      up?.querySelector('.tree-name')?.focus();
      break;
    }
    default: return;
  }
  event.preventDefault();
}

/** Wires the tree, once: keys, and the changes on disk the backend reports. */
export function initTree() {
  $('#tree').addEventListener('keydown', onKey);
  $('#tree-where').addEventListener('change', () => choose());
  // Any change may change the marks of every open folder (they sum up what changed inside):
  // the open folders are read again, each one level deep.
  onTreeChange((change) => {
    if (change.projectId === state.project && (change.taskId ?? null) === state.task) reload([...state.open], true);
  });
  held = holdUnderPointer($('#tree'), render);
  choiceHeld = holdUnderPointer($('#files-panel'), showChoice);
}
