// The project's task files (Markdown files in .codewright/tasks, or ayder's .ayder/tasks), under
// its tasks: each with its id, title and status, and a Run button that implements it in a new
// task (opened in its own window); the file is marked done when that task's run finishes done.

import { call, messageOf } from './api.js';
import { $, h, toast } from './dom.js';

let project = null;
let reads = 0;
/** Files whose Run is under way: their button stays disabled through re-renders. */
const starting = new Set();
let later = null;
let openTask = () => {};
/** What the list shows now: a read that finds the same is not drawn again, so a row is never
 * replaced under a click (a pointer pressed on a button that a re-render swaps out clicks
 * nothing). */
let drawn = '';

/** `open(taskId)` opens a task's window. */
export function initTaskFiles(open) {
  openTask = open;
}

/** Shows the task files of `projectId` (`null`: none); the section is hidden when it has none. */
export async function showTaskFiles(projectId) {
  project = projectId;
  const read = ++reads;
  if (projectId == null) return render({ files: [], broken: [] });
  let listed;
  try {
    listed = await call('task_files', { projectId });
  } catch (e) {
    listed = { files: [], broken: [], error: messageOf(e) };
  }
  if (read === reads) render(listed);
}

/** Reads the list again soon (a task of the project changed: a file may have been marked done). */
export function refreshTaskFiles() {
  clearTimeout(later);
  later = setTimeout(() => showTaskFiles(project), 300);
}

function render({ files, broken, error }) {
  const now = JSON.stringify([files, broken, error, [...starting]]);
  if (now === drawn) return;
  drawn = now;
  $('#task-files').hidden = files.length === 0 && broken.length === 0 && !error;
  $('#task-files-error').hidden = !error;
  $('#task-files-error').textContent = error ?? '';
  // Focus stays on the same file's button across a re-render.
  const focusedId = document.activeElement?.closest?.('.task-file')?.dataset.id;
  $('#task-file-list').replaceChildren(...files.map((file) => {
    const done = ['done', 'completed', 'complete', 'closed'].includes(file.status.toLowerCase());
    const label = `${file.id}: ${file.title}`;
    return h('li', { class: 'task-file', dataset: { id: file.id } },
      h('span', { class: 'task-file-text' },
        h('code', { class: 'task-file-id', text: file.id }),
        h('span', { class: 'task-file-title', text: file.title || '(untitled)', title: file.path })),
      h('span', { class: `badge ${done ? 'status-done' : ''}`, text: file.status }),
      h('button', {
        type: 'button', class: 'button small task-file-run', text: done ? 'Run again' : 'Run',
        disabled: starting.has(file.id),
        'aria-label': `${done ? 'Run again' : 'Run'} ${label}`,
        onclick: (event) => run(event.currentTarget, file.id),
      }));
  }));
  $('#task-file-broken').replaceChildren(...broken.map((b) =>
    h('li', { class: 'form-error', text: `${b.path}: ${b.reason}` })));
  if (focusedId) $(`.task-file[data-id="${CSS.escape(focusedId)}"] .task-file-run`)?.focus();
}

async function run(button, id) {
  if (starting.has(id)) return;
  starting.add(id);
  button.disabled = true;
  try {
    const task = await call('implement_task_file', { projectId: project, id });
    await openTask(task);
  } catch (e) {
    // `saved`: the task was made with its request, and can be continued once this is fixed.
    const saved = e?.saved ? ' The task is in the list with its request: open it to continue once that is fixed.' : '';
    toast(messageOf(e) + saved, { error: true });
  } finally {
    starting.delete(id);
    button.disabled = false;
    refreshTaskFiles();
  }
}
