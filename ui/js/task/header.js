// The header: the task's title (renamable), what the agent is doing, how full the context is,
// what the task has cost, and its plan.

import { call, messageOf } from '../api.js';
import { $, h } from '../dom.js';
import { ago, dollars, stateLabel, statusLabel, tokens, visible, when } from '../format.js';
import { todoItems } from './todos.js';

// What a stored status adds when the task is not running in this app.
const NOT_HERE = {
  running: ' (in another window or process)',
  interrupted: ' — send a message to continue',
};

const view = { taskId: 0, task: null, agentState: null };

export function initHeader(taskId) {
  view.taskId = taskId;
  $('#task-rename').addEventListener('click', startRename);
  const input = $('#task-title-input');
  input.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && !event.isComposing) {
      event.preventDefault();
      saveTitle();
    } else if (event.key === 'Escape') {
      event.preventDefault();
      endRename();
    }
  });
}

export function showTask(task) {
  view.task = task;
  $('#task-title').textContent = task.title;
  const meta = $('#task-meta');
  meta.textContent = `Started ${ago(task.createdAt)}`;
  meta.title = when(task.createdAt);
  // A model with no price (a local one, say) costs nothing counted: no "$0.0000" as if it were.
  const usage = $('#task-usage');
  usage.textContent = `${tokens(task.inputTokens)} in · ${tokens(task.outputTokens)} out${task.cost > 0 ? ` · ${dollars(task.cost)}` : ''}`;
  usage.title = task.cost > 0 ? '' : 'No cost counted: the model has no price set, or none was reported yet';
  showContext(task.contextUsage);
  showPlan(task.todos || []);
  showState();
}

/**
 * The files the last run's prompt was made from (instructions, memory, skills), listed under
 * the title: a file git ignores, which the Files tab hides, is seen here when it steers the agent.
 */
export function showPromptFiles(files) {
  $('#prompt-file-count').textContent = String(files.length);
  $('#prompt-file-list').replaceChildren(...files.map((f) => h('li', { class: 'file-path', text: visible(f) })));
  $('#prompt-files').hidden = files.length === 0;
}

/** What the agent does in this app now; null when it does not run here. */
export function showAgentState(state) {
  view.agentState = state;
  showState();
}

function showState() {
  const { agentState, task } = view;
  const here = agentState && agentState !== 'idle';
  const key = here ? agentState : task?.status;
  const badge = $('#task-state');
  badge.textContent = key ? (here ? stateLabel(key) : statusLabel(key) + (NOT_HERE[key] ?? '')) : '';
  badge.className = `badge state-${key}`;
}

/** How full the context window is, 0–1; `detail` (tokens of window), if given, is its tooltip. */
export function showContext(fraction, detail) {
  const meter = $('#context-meter');
  meter.hidden = !(fraction > 0);
  const share = Math.min(Math.max(fraction, 0), 1);
  $('#context-gauge').value = share;
  $('#context-label').textContent = `${Math.round(share * 100)}% of context`;
  if (detail) meter.title = detail;
}

function showPlan(todos) {
  $('#plan').hidden = todos.length === 0;
  const done = todos.filter((t) => t.status === 'completed').length;
  $('#plan-progress').textContent = `${done} of ${todos.length} done`;
  const list = $('#plan-items');
  list.replaceChildren(...todoItems(todos));
  // A short window shows a line or two of the plan: make it the step in progress (once laid out).
  const current = list.querySelector('.plan-in_progress');
  if (current) requestAnimationFrame(() => { list.scrollTop = current.offsetTop - list.offsetTop; });
}

function startRename() {
  const input = $('#task-title-input');
  input.value = view.task?.title ?? '';
  $('#task-title').hidden = true;
  $('#task-rename').hidden = true;
  input.hidden = false;
  input.focus();
  input.select();
}

function endRename() {
  $('#task-title-input').hidden = true;
  $('#task-rename-error').hidden = true;
  $('#task-title').hidden = false;
  $('#task-rename').hidden = false;
  $('#task-rename').focus();
}

async function saveTitle() {
  const title = $('#task-title-input').value.trim();
  if (!title || title === view.task?.title) {
    endRename();
    return;
  }
  try {
    showTask(await call('rename_task', { id: view.taskId, title }));
    endRename();
  } catch (e) {
    const error = $('#task-rename-error');
    error.textContent = messageOf(e);
    error.hidden = false;
  }
}
