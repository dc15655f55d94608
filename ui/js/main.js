// The main window: projects in the sidebar, the selected project's tasks on the right. A view of
// the backend: it renders what commands return and what store events say, and keeps no other state.

import { call, closeWindow, messageOf, onStanding, onStoreEvent } from './api.js';
import { confirmDialog, formDialog } from './dialogs.js';
import { $, h, holdUnderPointer, morph, restFocusInBackground, showFatal, toast } from './dom.js';
import { ago, statusLabel, visible, when } from './format.js';
import { initPalette, openPalette } from './palette.js';
import { closeSearch, initSearch, openSearch, searchOpen } from './search.js';
import { closeSettings, initSettings, openSettings, readiness, settingsOpen } from './settings.js';
import { initTaskFiles, refreshTaskFiles, showTaskFiles } from './task-files.js';
import { hideTree, initTree, showTree, treeWorktrees } from './tree.js';

const view = {
  dataDir: '',
  projects: new Map(), // id → project
  selected: null, // project id
  tasks: new Map(), // id → task, of the selected project
  needing: new Map(), // id → task, of every project: an approval waiting or a result not yet seen
  loads: 0, // bumps on every task-list load; a reply to an older load is dropped
  queued: null, // store events held while a load is in flight, applied after it
  standings: new Map(), // task id → where its worktree's branch stands (the backend follows the selected project)
};

const LAST_PROJECT = 'codewright.lastProject';

// ---- rendering ----------------------------------------------------------------------------

function byName(a, b) {
  return a.name.localeCompare(b.name, undefined, { sensitivity: 'base' }) || a.id - b.id;
}

const plural = (n, one, many) => `${n} ${n === 1 ? one : many}`;

/** A project's marks: how many of its tasks wait for the user, and a dot for unseen results. */
function projectMarks(projectId) {
  let asking = 0;
  let unread = 0;
  for (const t of view.needing.values()) {
    if (t.projectId !== projectId) continue;
    if (t.status === 'awaitingApproval') asking += 1;
    else if (t.unread) unread += 1;
  }
  const marks = [];
  if (asking) {
    const label = `${plural(asking, 'task needs', 'tasks need')} you`;
    marks.push(h('span', { class: 'project-asking', title: label, 'aria-hidden': 'true', text: String(asking) }),
      h('span', { class: 'visually-hidden', text: `, ${label}` }));
  }
  if (unread) {
    const label = `${plural(unread, 'finished task', 'finished tasks')} not yet seen`;
    marks.push(h('span', { class: 'unread-dot', title: label }),
      h('span', { class: 'visually-hidden', text: `, ${label}` }));
  }
  return marks;
}

function renderProjects() {
  const list = $('#projects');
  const projects = [...view.projects.values()].sort(byName);
  list.replaceChildren(...projects.map((p) =>
    h('li', { class: p.id === view.selected ? 'project selected' : 'project', dataset: { id: p.id } },
      h('button', {
        type: 'button',
        class: 'project-button',
        title: p.rootPath,
        'aria-current': p.id === view.selected ? 'true' : null,
        onclick: () => { closePages(); select(p.id); },
      },
      h('span', { class: 'project-initial', text: [...p.name][0]?.toUpperCase() ?? '?' }),
      h('span', { class: 'project-name', text: p.name }),
      ...projectMarks(p.id)))));
  $('#projects-empty').hidden = projects.length > 0;
  $('#app').hidden = false;
  const project = view.projects.get(view.selected);
  // The search or settings page, when open, takes the place of both.
  const paged = settingsOpen() || searchOpen();
  for (const [id, open] of [['#open-search', searchOpen()], ['#open-settings', settingsOpen()]]) {
    if (open) $(id).setAttribute('aria-current', 'page');
    else $(id).removeAttribute('aria-current');
  }
  $('#welcome').hidden = paged || projects.length > 0;
  $('#project-view').hidden = paged || !project;
  if (project) {
    $('#project-name').textContent = project.name;
    $('#project-path').textContent = project.rootPath;
    $('#project-path').title = project.rootPath;
  }
}

/** Leaves the search or settings page for the selected project. */
function closePages() {
  closeSearch();
  closeSettings();
}

/** Whether the task list's order is held (`holdUnderPointer`, set up by `start`). */
let listHeld = () => false;

/**
 * Shows the task list as the tasks now are. A row is drawn again in place (`morph`), never
 * replaced: tasks change many times a second while one runs, and a button swapped out between a
 * pointer's press and release clicks nothing. Only a row whose place changed is moved — and none
 * while the pointer moves over the list (a running task moving up would slide another's row
 * under it between aim and click): the rows take their order when it leaves, or has rested 2 s
 * (a pointer left over the list as its task's window opens holds nothing); a new one comes last
 * meanwhile.
 */
function renderTasks() {
  if (filesShown() && view.selected != null) treeWorktrees(worktrees());
  const list = $('#tasks');
  const focused = document.activeElement;
  const rows = new Map([...list.children].map((row) => [row.dataset.id, row]));
  // Rows of tasks gone go first, so that none of the others is moved to make room.
  for (const [id, row] of rows) if (!view.tasks.has(Number(id))) row.remove();
  let tasks = [...view.tasks.values()].sort((a, b) => b.updatedAt - a.updatedAt || b.id - a.id);
  if (listHeld()) {
    const place = new Map([...list.children].map((row, i) => [Number(row.dataset.id), i]));
    const last = list.children.length;
    tasks = tasks.sort((a, b) => (place.get(a.id) ?? last) - (place.get(b.id) ?? last));
  }
  tasks.forEach((t, i) => {
    const old = rows.get(String(t.id));
    const row = old ? morph(old, taskRow(t)) : taskRow(t);
    if (list.children[i] !== row) list.insertBefore(row, list.children[i] ?? null);
  });
  while (list.children.length > tasks.length) list.lastElementChild.remove(); // (none left, unless drawn twice)
  $('#tasks-empty').hidden = tasks.length > 0;
  // A moved row's focused button lost its focus in the move.
  if (focused?.isConnected && list.contains(focused) && document.activeElement !== focused) focused.focus({ preventScroll: true });
}

/** One task's row. Its buttons act on the task as it is when clicked (a kept row keeps them). */
function taskRow(t) {
  const task = () => view.tasks.get(t.id);
  return h('li', { class: t.unread ? 'task unread' : 'task', dataset: { id: t.id } },
    h('button', { type: 'button', class: 'task-open', title: 'Open in its own window', onclick: () => openTask(t.id) },
      h('span', { class: 'task-heading' },
        t.unread ? h('span', { class: 'unread-dot', title: 'Finished while you were away; not yet seen' }) : null,
        t.unread ? h('span', { class: 'visually-hidden', text: 'Not yet seen: ' }) : null,
        h('span', { class: 'task-title', text: t.title })),
      h('span', { class: 'task-meta' },
        h('span', { class: `badge status-${t.status}`, text: statusLabel(t.status) }),
        h('span', { class: 'task-time', title: when(t.updatedAt), text: ago(t.updatedAt) }),
        t.messageCount ? h('span', { class: 'task-count', text: `${t.messageCount} messages` }) : null),
      // Its own line: where a worktree task works, and where its branch stands.
      t.worktree ? h('span', { class: 'task-meta task-where' },
        h('span', {
          class: 'task-branch',
          title: t.worktree.state === 'discarded' ? 'Its worktree was discarded; Restore in the task brings it back' : `Works in its own worktree, from ${t.worktree.base}`,
        },
        h('span', { class: 'branch-icon', 'aria-hidden': 'true' }),
        h('span', { class: 'visually-hidden', text: 'Branch ' }),
        `${t.worktree.branch}${t.worktree.state === 'discarded' ? ' (discarded)' : ''}`),
        standingOf(t)) : null),
    h('span', { class: 'task-actions' },
      // (Always there, hidden unless its worktree is: the buttons keep their places.)
      h('button', { type: 'button', class: 'button small', dataset: { key: 'changes' }, hidden: t.worktree?.state !== 'active', title: 'What the task changed, for review', 'aria-label': `Changes of ${t.title}`, text: 'Changes', onclick: () => openTask(t.id, true) }),
      h('button', { type: 'button', class: 'button small', dataset: { key: 'rename' }, title: 'Rename task', 'aria-label': `Rename ${t.title}`, text: 'Rename', onclick: () => task() && renameTask(task()) }),
      h('button', { type: 'button', class: 'button small danger-outline', dataset: { key: 'delete' }, title: 'Delete task', 'aria-label': `Delete ${t.title}`, text: 'Delete', onclick: () => task() && deleteTask(task()) })));
}

/** Where a worktree task's branch stands, in a few words (the title says it in full); null when not known. */
function standingOf(t) {
  const s = view.standings.get(t.id);
  if (!s || t.worktree?.state !== 'active') return null;
  const base = t.worktree.base;
  const long = [s.files
    ? `${plural(s.files, 'file', 'files')} changed (+${s.added} −${s.removed}) since it left ${base}`
    : `nothing changed since it left ${base}`];
  if (s.ahead || s.behind) long.push(`${plural(s.ahead, 'commit', 'commits')} ahead of ${base}, ${s.behind} behind`);
  if (s.uncommitted) long.push(`${plural(s.uncommitted, 'file', 'files')} not committed`);
  if (s.conflicts.length) {
    const named = s.conflicts.slice(0, 5).join(', ');
    long.push(`merging it into ${base} now would conflict in ${named}${s.conflicts.length > 5 ? ` and ${s.conflicts.length - 5} more` : ''}`);
  }
  // The conflict first: it is what a narrow row must not cut off.
  return h('span', { class: 'task-standing', title: long.join('; ') },
    h('span', { class: 'visually-hidden', text: `${long.join('; ')}.` }),
    s.conflicts.length ? h('span', { 'aria-hidden': 'true', class: 'standing-conflicts', text: `conflicts with ${base}` }) : null,
    h('span', { 'aria-hidden': 'true', text: s.files ? `${plural(s.files, 'file', 'files')} +${s.added} −${s.removed}` : 'no changes' }),
    s.ahead ? h('span', { 'aria-hidden': 'true', text: `↑${s.ahead}` }) : null,
    s.behind ? h('span', { 'aria-hidden': 'true', text: `↓${s.behind}` }) : null,
    s.uncommitted ? h('span', { 'aria-hidden': 'true', class: 'standing-uncommitted', text: `${s.uncommitted} not committed` }) : null);
}

/** Shows where a task's branch stands now (null: not known), in its row, without rebuilding the list. */
function showStanding(taskId, standing) {
  if (standing) view.standings.set(taskId, standing);
  else view.standings.delete(taskId);
  const task = view.tasks.get(taskId);
  const row = $(`.task[data-id="${CSS.escape(String(taskId))}"]`);
  if (!task || !row) return;
  row.querySelector('.task-standing')?.remove();
  const shown = standingOf(task);
  if (shown) row.querySelector('.task-branch')?.after(shown);
}

/** Keeps "5 minutes ago" true without rebuilding the list. */
function refreshTimes() {
  for (const row of document.querySelectorAll('.task')) {
    const task = view.tasks.get(Number(row.dataset.id));
    const time = row.querySelector('.task-time');
    if (task && time) time.textContent = ago(task.updatedAt);
  }
}

// ---- loading ------------------------------------------------------------------------------

async function loadProjects() {
  const [projects, needing] = await Promise.all([call('list_projects'), call('tasks_needing_you')]);
  view.projects = new Map(projects.map((p) => [p.id, p]));
  view.needing = new Map(needing.map((t) => [t.id, t]));
}

/** Follows what needs the user in every project; true if a project's marks changed. */
function noteNeeding(task, deleted = false) {
  const before = view.needing.get(task.id);
  const needs = !deleted && (task.unread || task.status === 'awaitingApproval');
  if (needs) view.needing.set(task.id, task);
  else view.needing.delete(task.id);
  return (before?.status === 'awaitingApproval') !== (needs && task.status === 'awaitingApproval')
    || Boolean(before?.unread) !== Boolean(needs && task.unread);
}

/** Shows the Tasks or the Files tab of the project. */
function showTab(files) {
  $('#tab-tasks').setAttribute('aria-selected', String(!files));
  $('#tab-files').setAttribute('aria-selected', String(files));
  $('#tab-tasks').tabIndex = files ? -1 : 0;
  $('#tab-files').tabIndex = files ? 0 : -1;
  $('#tasks-panel').hidden = files;
  $('#files-panel').hidden = !files;
  if (files && view.selected != null) showTree(view.selected, worktrees()).catch(failed);
  else hideTree();
}

/** The selected project's tasks with a worktree on disk, for the Files tab's choice of folder. */
function worktrees() {
  return [...view.tasks.values()]
    .filter((t) => t.worktree?.state === 'active')
    .sort((a, b) => a.id - b.id)
    .map((t) => ({ id: t.id, title: t.title, branch: t.worktree.branch }));
}

const filesShown = () => !$('#files-panel').hidden;

async function select(id) {
  view.selected = view.projects.has(id) ? id : ([...view.projects.values()].sort(byName)[0]?.id ?? null);
  if (view.selected != null) localStorage.setItem(LAST_PROJECT, String(view.selected));
  if (filesShown()) showTab(true);
  // Clear at once: rows of the previous project must not stay clickable under this header.
  view.tasks = new Map();
  renderProjects();
  renderTasks();
  showTaskFiles(view.selected);
  const load = ++view.loads; // any load still in flight is now stale
  view.queued = null;
  if (view.selected == null) return;
  view.queued = [];
  // Where its worktree tasks' branches stand comes as it is read (the `standing` event).
  call('follow_standings', { projectId: view.selected }).catch(failed);
  try {
    const [tasks, settings] = await Promise.all([
      call('list_tasks', { projectId: view.selected }),
      call('project_settings', { projectId: view.selected }),
    ]);
    if (load !== view.loads) return; // another project was selected meanwhile
    view.tasks = new Map(tasks.map((t) => [t.id, t]));
    // The new-task box starts as the project says new tasks work.
    $('#new-task-worktree').checked = settings.worktrees;
  } catch (e) {
    if (load === view.loads) failed(e);
  }
  if (load !== view.loads) return;
  const queued = view.queued;
  view.queued = null;
  renderTasks();
  for (const event of queued) await apply(event); // changes made while the list was loading
  askTrust(view.selected);
}

// Projects asked about in this window: "Cancel" holds until the app starts again (Settings →
// Project trusts one at any time).
const trustAsked = new Set();

/**
 * The first time a project whose folder defines its own agents, commands or skills is opened:
 * shows what it defines and asks whether to trust it. Until then the engine uses only the
 * built-in ones and the user's own.
 */
async function askTrust(projectId) {
  if (projectId == null || trustAsked.has(projectId)) return;
  trustAsked.add(projectId);
  let trust;
  try {
    trust = await call('project_trust', { projectId });
  } catch (e) {
    return failed(e);
  }
  if (!trust.ask || projectId !== view.selected) return;
  const project = view.projects.get(projectId);
  const kinds = [['Agents', trust.defines.agents], ['Commands', trust.defines.commands], ['Skills', trust.defines.skills]];
  const list = kinds.filter(([, names]) => names.length)
    .map(([kind, names]) => h('li', {}, h('strong', { text: `${kind}: ` }), h('span', { class: 'trust-names', text: names.map(visible).join(', ') })));
  await formDialog({
    dialog: $('#trust-dialog'),
    title: `Trust “${project?.name ?? 'this project'}”?`,
    message: 'Its folder defines its own agents, commands or skills (in .codewright/ or .claude/). They change what the agent is told and which tools it has, so they are not used until you trust the project; the built-in ones and your own apply meanwhile. Trust it only if you trust where it came from.',
    body: [h('ul', { id: 'trust-list', class: 'trust-list' }, list)],
    submitLabel: 'Trust project',
    focusCancel: true,
    action: () => call('set_project_trusted', { projectId, trusted: true }),
  });
}

/** Shows an error: the error screen if the store is unusable, else a notice. */
function failed(e) {
  if (e && e.fatal) showFatal(messageOf(e), view.dataDir);
  else toast(messageOf(e), { error: true });
}

async function reloadAll() {
  await loadProjects();
  await select(view.selected);
}

// ---- store events -------------------------------------------------------------------------

function apply(event) {
  if (event.type === 'taskUpserted' && noteNeeding(event.task)) renderProjects();
  if (event.type === 'taskDeleted' && noteNeeding({ id: event.taskId }, true)) renderProjects();
  if (view.queued && event.type.startsWith('task')) {
    view.queued.push(event);
    return;
  }
  switch (event.type) {
    case 'projectUpserted':
      view.projects.set(event.project.id, event.project);
      if (view.selected == null) return select(event.project.id);
      renderProjects();
      break;
    case 'projectDeleted':
      view.projects.delete(event.projectId);
      for (const t of [...view.needing.values()]) if (t.projectId === event.projectId) view.needing.delete(t.id);
      if (event.projectId === view.selected) return select(null);
      renderProjects();
      break;
    case 'taskUpserted':
      if (event.task.projectId !== view.selected) return;
      view.tasks.set(event.task.id, event.task);
      renderTasks();
      refreshTaskFiles(); // a task file may have been marked done
      break;
    case 'taskDeleted':
      if (view.tasks.delete(event.taskId)) renderTasks();
      break;
    case 'resync':
      return reloadAll();
  }
}

// ---- actions ------------------------------------------------------------------------------

function addProject() {
  return formDialog({
    title: 'Add a project',
    message: 'Choose the folder the agent will work in. Nothing in it is changed by adding it.',
    fields: [
      { name: 'path', label: 'Folder', placeholder: '/home/you/code/my-app', browse: 'pick_folder' },
      { name: 'name', label: 'Name (optional)', placeholder: 'Defaults to the folder’s name' },
    ],
    submitLabel: 'Add project',
    action: async ({ path, name }) => {
      if (!path.trim()) throw new Error('Choose a folder, or type its path.');
      const project = await call('add_project', { path, name: name.trim() ? name : null });
      view.projects.set(project.id, project);
      await select(project.id);
      return project;
    },
  });
}

function renameProject() {
  const project = view.projects.get(view.selected);
  if (!project) return;
  return formDialog({
    title: 'Rename project',
    fields: [{ name: 'name', label: 'Name', value: project.name }],
    submitLabel: 'Rename',
    action: async ({ name }) => {
      const renamed = await call('rename_project', { id: project.id, name });
      view.projects.set(renamed.id, renamed);
      renderProjects();
      return renamed;
    },
  });
}

async function removeProject() {
  const project = view.projects.get(view.selected);
  if (!project) return;
  const count = view.tasks.size;
  const tasks = count === 0 ? '' : count === 1 ? 'Its task will be deleted from Codewright. ' : `Its ${count} tasks will be deleted from Codewright. `;
  const ok = await confirmDialog({
    title: `Remove “${project.name}”?`,
    message: `${tasks}The folder ${project.rootPath} and its files are not touched.`,
    confirmLabel: 'Remove project',
  });
  if (!ok) return;
  try {
    await call('remove_project', { id: project.id });
    view.projects.delete(project.id);
    await select(null);
  } catch (e) {
    failed(e);
  }
}

async function createTask(event) {
  event.preventDefault();
  const form = $('#new-task');
  const input = $('#new-task-title');
  const error = $('#new-task-error');
  if (form.dataset.busy) return; // a second Enter while the first is being saved
  form.dataset.busy = 'true';
  try {
    const worktree = $('#new-task-worktree').checked;
    const task = await call('create_task', { projectId: view.selected, title: input.value, worktree });
    input.value = '';
    error.hidden = true;
    view.tasks.set(task.id, task);
    renderTasks();
    await openTask(task.id);
  } catch (e) {
    if (e && e.fatal) return failed(e);
    error.textContent = messageOf(e);
    error.hidden = false; // the typed title stays in the box
  } finally {
    delete form.dataset.busy;
  }
}

/** Opens a task's window; `changes`: with its Changes view open. */
async function openTask(id, changes = false) {
  try {
    await call('open_task', { id, changes });
  } catch (e) {
    failed(e);
  }
}

function renameTask(task) {
  return formDialog({
    title: 'Rename task',
    fields: [{ name: 'title', label: 'Title', value: task.title }],
    submitLabel: 'Rename',
    action: async ({ title }) => {
      const renamed = await call('rename_task', { id: task.id, title });
      view.tasks.set(renamed.id, renamed);
      renderTasks();
      return renamed;
    },
  });
}

async function deleteTask(task) {
  const ok = await confirmDialog({
    title: `Delete “${task.title}”?`,
    message: task.worktree?.state === 'active'
      ? `The task and its conversation will be deleted. Its worktree is removed, and everything on it (committed or not) is kept in the repository under refs/codewright/archive/${task.id}. Files in the project are not touched.`
      : 'The task and its conversation will be deleted. Files in the project are not touched.',
    confirmLabel: 'Delete task',
  });
  if (!ok) return;
  try {
    await call('delete_task', { id: task.id });
    view.tasks.delete(task.id);
    renderTasks();
  } catch (e) {
    failed(e);
  }
}

// ---- start --------------------------------------------------------------------------------

async function start() {
  const info = await call('app_info');
  view.dataDir = info.dataDir;
  if (info.startupError) {
    showFatal(messageOf(info.startupError), info.dataDir);
    return;
  }
  // Listen before loading; events that arrive while loading are applied after it, in order.
  let pending = [];
  await onStanding(({ taskId, standing }) => showStanding(taskId, standing));
  await onStoreEvent((event) => {
    if (pending) pending.push(event);
    else apply(event);
  });
  await loadProjects();
  await select(Number(localStorage.getItem(LAST_PROJECT)));
  // Startup marker (read by scripts/bench-desktop.py): the frame after the first full render.
  requestAnimationFrame(() => requestAnimationFrame(() => performance.mark('sidebar-painted')));
  for (const event of pending) await apply(event);
  pending = null;
  // What was repaired in the tasks' worktrees at start: said once, kept until clicked.
  for (const note of info.repaired ?? []) toast(note, { error: true });

  for (const id of ['#add-project', '#add-project-empty', '#add-project-welcome']) {
    $(id).addEventListener('click', addProject);
  }
  $('#rename-project').addEventListener('click', renameProject);
  $('#remove-project').addEventListener('click', removeProject);
  $('#new-task').addEventListener('submit', createTask);
  listHeld = holdUnderPointer($('#tasks'), renderTasks);
  initSettings();
  initSearch();
  initPalette();
  initTree();
  initTaskFiles(openTask);
  $('#tab-tasks').addEventListener('click', () => showTab(false));
  $('#tab-files').addEventListener('click', () => showTab(true));
  // ←/→ move between the tabs (the tablist pattern).
  $('.project-tabs').addEventListener('keydown', (e) => {
    if (e.key !== 'ArrowLeft' && e.key !== 'ArrowRight') return;
    e.preventDefault();
    const files = !filesShown();
    showTab(files);
    $(files ? '#tab-files' : '#tab-tasks').focus();
  });
  const showSettings = (setup) => {
    closeSearch();
    return openSettings({ setup, layout: renderProjects }).catch(failed);
  };
  const showSearch = () => {
    closeSettings();
    openSearch({ layout: renderProjects });
  };
  const newTask = () => {
    if (view.selected == null) return addProject();
    closePages();
    showTab(false);
    $('#new-task-title').focus();
  };
  $('#open-settings').addEventListener('click', () => showSettings(false));
  $('#open-search').addEventListener('click', showSearch);
  const palette = () => openPalette({
    actions: [
      { label: 'New task', detail: 'Ctrl+N', run: newTask },
      { label: 'Search conversations', detail: 'Ctrl+F', run: showSearch },
      { label: 'Settings', detail: 'Ctrl+,', run: () => showSettings(false) },
      { label: 'Add a project…', detail: '', run: addProject },
    ],
    projects: [...view.projects.values()].sort(byName),
    projectName: (id) => view.projects.get(id)?.name ?? '',
    openProject: (id) => { closePages(); select(id); },
    openTask,
  });
  // Ctrl+W closes this window, as in a task window; the app quits when no task window is open.
  const shortcuts = { ',': () => showSettings(false), f: showSearch, n: newTask, k: palette, w: closeWindow };
  document.addEventListener('keydown', (e) => {
    const action = e.ctrlKey && !e.altKey && !e.shiftKey && !e.metaKey && shortcuts[e.key.toLowerCase()];
    if (!action || document.querySelector('dialog[open]')) return;
    e.preventDefault();
    action();
  });
  // No usable model yet: the first-run form instead of an empty screen.
  if ((await readiness()).missing) await showSettings(true);
  restFocusInBackground();
  // Relative times ("5 minutes ago") stay true without a reload.
  setInterval(refreshTimes, 60_000);
  document.body.dataset.ready = 'true';
}

start().catch((e) => showFatal(messageOf(e), view.dataDir));
