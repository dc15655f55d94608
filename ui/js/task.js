// A task window: the task's title and status, its conversation, and the composer.

import { call, messageOf, onStoreEvent } from './api.js';
import { $, h, showFatal } from './dom.js';
import { ago, statusLabel, when } from './format.js';

const id = Number(new URLSearchParams(location.search).get('id'));
let dataDir = '';

function render(task) {
  $('#task-title').textContent = task.title;
  const status = $('#task-status');
  status.textContent = statusLabel(task.status);
  status.className = `badge status-${task.status}`;
  const meta = $('#task-meta');
  meta.textContent = `Started ${ago(task.createdAt)}`;
  meta.title = when(task.createdAt);
  renderPlan(task.todos || []);
  $('#composer-note').textContent =
    `Messages cannot be sent from this window yet: the agent runs from the command line today ` +
    `(codewright-cli exec --task ${task.id} "…"). The conversation view arrives next.`;
  $('#app').hidden = false;
}

const PLAN_MARKS = { pending: '○', in_progress: '◐', completed: '●' };
const PLAN_LABELS = { pending: 'to do', in_progress: 'in progress', completed: 'done' };

// The agent's plan for the task (todo_write), as it last wrote it.
function renderPlan(todos) {
  $('#plan').hidden = todos.length === 0;
  const done = todos.filter((t) => t.status === 'completed').length;
  $('#plan-progress').textContent = `${done} of ${todos.length} done`;
  $('#plan-items').replaceChildren(
    ...todos.map((t) =>
      h('li', { class: `plan-item plan-${t.status}`, dataset: { status: t.status } },
        h('span', { class: 'plan-mark', 'aria-label': PLAN_LABELS[t.status] || t.status, text: PLAN_MARKS[t.status] || '○' }),
        h('span', { class: 'plan-text', text: t.content }))),
  );
}

async function start() {
  const info = await call('app_info');
  dataDir = info.dataDir;
  if (info.startupError) {
    showFatal(messageOf(info.startupError), dataDir);
    return;
  }
  await onStoreEvent(async (event) => {
    if (event.type === 'resync') {
      // Changes were missed: read the task again (it may be gone).
      try {
        render(await call('get_task', { id }));
      } catch (e) {
        showFatal(messageOf(e), dataDir);
      }
    }
    if (event.type === 'taskUpserted' && event.task.id === id) render(event.task);
    if (event.type === 'taskDeleted' && event.taskId === id) {
      showFatal('This task was deleted.', dataDir, 'Task deleted');
    }
  });
  render(await call('get_task', { id }));
  document.body.dataset.ready = 'true';
}

start().catch((e) => showFatal(messageOf(e), dataDir));
