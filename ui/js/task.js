// A task window: the task's title and status, its conversation, and the composer.

import { call, messageOf, onStoreEvent } from './api.js';
import { $, showFatal } from './dom.js';
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
  $('#app').hidden = false;
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
