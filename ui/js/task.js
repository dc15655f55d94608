// A task window: the task's header, its conversation, and the composer. A view of the backend:
// it renders what `task_view` returns, then follows store events (what is stored, by any process)
// and agent events (what a run in this app does, as it happens).

import { call, closeWindow, messageOf, onAdopt, onAgentEvent, onAttach, onReveal, onStoreEvent } from './api.js';
import { $, h, restFocusInBackground, showFatal } from './dom.js';
import { LIVE_STATUSES } from './protocol.js';
import { addApproval, addQuestion, initPrompts, resolvePrompt } from './task/approval.js';
import { initActions, runAction } from './task/actions.js';
import { changesMayHaveMoved, initChanges, setChangesRunning, showChanges, showWorktree } from './task/changes.js';
import { initCheckpoints, showCheckpoints } from './task/checkpoints.js';
import { currentHint, initComposer, setOptions, setRunning, showError as showComposerError } from './task/composer.js';
import { Conversation } from './task/conversation.js';
import { initHeader, showAgentState, showContext, showPromptFiles, showTask } from './task/header.js';
import { interceptLinks } from './task/links.js';
import { textOf } from './task/messages.js';
import { insertMention } from './task/mentions.js';
import { renderNow } from './task/markdown.js';
import { loadHighlighter } from './task/code.js';
import { applyCallStates, findPanel, initTools, interruptUnfinished, resetTools, settleRunning, startCall } from './task/tools.js';

const params = new URLSearchParams(location.search);
/** The task shown; none yet in a spare window. */
let taskId = Number(params.get('id'));
/** The message to show first (a search's match), by seq; else the newest. */
let openAt = params.has('at') ? Number(params.get('at')) : null;
/** The Changes view opens first (asked from the main window's row). */
let openChanges = params.has('changes');
let dataDir = '';
let conversation = null;

const running = (state) => state != null && state !== 'idle';

function showState(state) {
  showAgentState(state);
  setRunning(running(state));
  setChangesRunning(running(state));
}

/** Shows the task as `task_view` returns it (`asked`: that call, if already under way). */
async function load(asked = call('task_view', { taskId })) {
  const view = await asked;
  performance.mark('task-view-loaded');
  resetTools();
  showTask(view.task);
  showWorktree(view.task);
  showState(view.state);
  setOptions(view.options, view.models, view.mainModel);
  showCheckpoints(view.checkpoints);
  conversation.show(view.messages, view.hasOlder, view.compactions);
  applyCallStates(view.calls, view.task.status === 'interrupted');
  // Sent while the agent worked and not delivered yet (kept through a crash).
  const runs = LIVE_STATUSES.includes(view.task.status);
  for (const message of view.queued) {
    conversation.enqueue(textOf(message), message.parts.filter((p) => p.type === 'attachment').length, !runs);
  }
  for (const request of view.approvals) addApproval(request);
  for (const question of view.questions) addQuestion(question);
}

/** Shows the message at `seq` (a search's match), or says it is gone. */
async function reveal(seq) {
  if (!(await conversation.reveal(seq))) conversation.notice('The message you searched for is no longer in this task.');
}

/** What the main window asked this open window to show: a message, or the Changes view. */
async function show({ at, changes }) {
  if (at != null) await reveal(at);
  if (changes) showChanges();
}

async function refreshCheckpoints() {
  try {
    showCheckpoints((await call('task_view', { taskId })).checkpoints);
  } catch (e) {
    conversation.error(`The checkpoints could not be read: ${messageOf(e)}`);
  }
}

// ---- events -------------------------------------------------------------------------------

function onStore(event) {
  switch (event.type) {
    case 'taskUpserted':
      if (event.task.id !== taskId) break;
      showTask(event.task);
      showWorktree(event.task);
      // Another process ran it and died (this app notices within 2 s).
      if (event.task.status === 'interrupted') interruptUnfinished();
      break;
    case 'taskDeleted':
      if (event.taskId === taskId) showFatal('This task was deleted.', dataDir, 'Task deleted');
      break;
    case 'messageUpserted':
      if (event.message.taskId === taskId) conversation.upsert(event.message);
      break;
    case 'resync':
      // Changes were missed: read the task again (it may be gone).
      load().catch((e) => showFatal(messageOf(e), dataDir));
      break;
  }
}

const AGENT = {
  state: (e) => showState(e.state),
  answerStarted: (e) => conversation.answerStarted(e.messageId),
  textDelta: (e) => conversation.textDelta(e.text),
  thinkingDelta: (e) => conversation.thinkingDelta(e.text),
  toolCallStarted: (e) => conversation.toolCallStarted(e.callId, e.name),
  toolCallArguments: (e) => findPanel(e.callId)?.appendArgs(e.delta),
  // Said for every call, even one whose streaming this window did not see (its stored copy came
  // first), and kept for a call not on screen yet (the stored copy comes later).
  toolRunning: (e) => startCall(e.callId),
  toolProgress: (e) => findPanel(e.callId)?.appendOutput(e.text),
  toolFinished: (e) => {
    findPanel(e.callId)?.finishFromEvent(e);
    changesMayHaveMoved();
  },
  approvalRequested: (e) => addApproval(e.request),
  approvalResolved: (e) => {
    resolvePrompt('approval', e.id);
    // An approved call runs now. Its panel says so even when this window opened after the call
    // was handed to its tool (the approval was asked again after a relaunch).
    const panel = e.decision.decision === 'reject' ? null : findPanel(e.callId);
    if (panel && panel.state !== 'running') panel.start();
  },
  promptRead: (e) => showPromptFiles(e.files),
  questionAsked: (e) => addQuestion(e.question),
  questionAnswered: (e) => resolvePrompt('question', e.id),
  usage: (e) => showContext(e.contextTokens / e.contextWindow,
    `${e.contextTokens.toLocaleString()} of ${e.contextWindow.toLocaleString()} tokens`),
  compaction: (e) => conversation.compaction(e),
  notice: (e) => conversation.notice(e.message),
  error: (e) => conversation.error(e.message, currentHint(e.kind)),
  runFinished: (e) => {
    conversation.endLive();
    settleRunning();
    showState(null);
    refreshCheckpoints();
    changesMayHaveMoved();
    // An honest outcome: an answer alone is said to be all the run did.
    const work = e.work ?? {};
    if (e.outcome === 'done' && !work.reads && !work.edits && !work.commands && !work.other) {
      conversation.notice('The agent answered without reading, changing or running anything.');
    }
    // …and one that ended while a check the message named still fails is not done.
    if (e.outcome !== 'failed' && e.outcome !== 'stopped' && work.failing?.length) {
      // (Named as the other notices name commands: plain, the words of the screen.)
      conversation.notice(`The task is not done: ${work.failing.join(' and ')} still fails.`);
    }
  },
};

function onAgent(event) {
  const owner = event.request?.taskId ?? event.question?.taskId ?? event.taskId;
  if (owner === taskId) AGENT[event.type]?.(event);
}

// ---- start --------------------------------------------------------------------------------

function wire() {
  restFocusInBackground();
  initHeader(taskId);
  initComposer(taskId, (text, images) => conversation.enqueue(text, images), runAction);
  initActions(taskId, {
    notice: (text) => conversation.notice(text),
    // Under the message box, where the command was typed (the conversation's errors are the run's).
    error: showComposerError,
  });
  initPrompts(taskId, (text) => conversation.notice(text));
  initCheckpoints(taskId, { notice: (text) => conversation.notice(text), refresh: refreshCheckpoints });
  initChanges(taskId, { notice: (text) => conversation.notice(text), checkpointsMoved: refreshCheckpoints });
  initTools(taskId);
  conversation = new Conversation(taskId);
  const view = $('#conversation');
  interceptLinks(view, taskId);
  view.addEventListener('click', (event) => {
    if (event.target.closest('.tool-stop')) call('stop_task', { taskId }).catch((e) => conversation.error(messageOf(e)));
  });
  // Ctrl+W closes the window; a run goes on, and reopening the task shows it again.
  document.addEventListener('keydown', (event) => {
    if ((event.ctrlKey || event.metaKey) && !event.altKey && event.key.toLowerCase() === 'w') {
      event.preventDefault();
      closeWindow();
    }
  });
}

/** A spare window, opened hidden before anyone asked for it so that opening a task skips starting
 * a web page: says it is ready, then waits for the task it is given and takes it on as if opened
 * for it (a reload shows the same task). */
async function adoption() {
  document.body.dataset.spare = 'true';
  warmUp();
  const given = await new Promise((resolve, reject) => {
    onAdopt(resolve)
      .then(() => call('spare_ready'))
      .then(() => { document.body.dataset.spare = 'ready'; })
      .catch(reject);
  });
  performance.mark('adopted');
  taskId = given.taskId;
  openAt = given.at ?? null;
  openChanges = Boolean(given.changes);
  history.replaceState(null, '', `task.html?id=${taskId}${openAt == null ? '' : `&at=${openAt}`}${openChanges ? '&changes=1' : ''}`);
  delete document.body.dataset.spare;
}

/** Lays out, unseen, a sample of what a conversation shows: the first layout of a new web page
 * loads its fonts and styles (~100 ms), which a spare window does before it is needed. */
function warmUp() {
  const app = $('#app');
  const sample = h('div', {},
    h('article', { class: 'message user' }, h('div', { class: 'message-text', text: 'Sample' })),
    h('article', { class: 'message assistant' }, h('div', { class: 'message-body' }, h('div', { class: 'markdown' },
      h('div', { class: 'md-chunk' }, h('div', { class: 'md-block' },
        h('h1', { text: 'Sample' }), h('h2', { text: 'Sample' }),
        h('p', {}, 'A ', h('strong', { text: 'sample' }), ' ', h('em', { text: 'of' }), ' ', h('code', { text: 'text' })),
        h('ul', {}, h('li', { text: 'item' })),
        h('div', { class: 'code-block' },
          h('div', { class: 'code-head' }, h('span', { class: 'code-lang', text: 'rust' }), h('button', { class: 'copy-code', type: 'button', text: 'Copy' })),
          h('pre', {}, h('code', { text: 'fn main() {}' })))))))));
  $('#messages').append(sample);
  app.style.visibility = 'hidden';
  app.hidden = false;
  app.getBoundingClientRect();
  app.hidden = true;
  app.style.visibility = '';
  sample.remove();
}

async function start() {
  performance.mark('task-script-started'); // for scripts/bench-task-window.py, as the marks below
  requestAnimationFrame(() => performance.mark('first-frame'));
  const info = await call('app_info');
  performance.mark('app-info-read');
  dataDir = info.dataDir;
  if (info.startupError) {
    showFatal(messageOf(info.startupError), dataDir);
    return;
  }
  // Listen before loading; what arrives meanwhile is applied after the first render, in order.
  // (A spare window listens before it has a task: events reach it only once it has one.)
  let pending = [];
  const later = (apply) => (event) => (pending ? pending.push(() => apply(event)) : apply(event));
  // Asked all at once: each is a round trip to the app.
  await Promise.all([
    onStoreEvent(later(onStore)),
    onAgentEvent(later(onAgent)),
    onReveal(later((asked) => show(asked).catch((e) => conversation.error(messageOf(e))))),
    onAttach(later((path) => insertMention($('#composer-input'), path))),
  ]);
  performance.mark('listening');
  if (!taskId) await adoption();
  const asked = call('task_view', { taskId }); // read while the page wires itself
  wire();
  await load(asked);
  performance.mark('conversation-shown');
  // The first screen's Markdown is rendered while the page is still hidden: laid out and painted
  // once, rendered, never as a flash of raw text (but a slow renderer is waited for 2 s at most).
  await Promise.race([renderNow(), new Promise((resolve) => setTimeout(resolve, 2000))]);
  performance.mark('markdown-settled');
  $('#app').hidden = false;
  if (openAt == null) conversation.scroll.toBottom();
  else await reveal(openAt);
  performance.mark('scrolled');
  for (const apply of pending) apply();
  pending = null;
  $('#composer-input').focus();
  if (openChanges) showChanges();
  document.body.dataset.ready = 'true';
  // For scripts/bench-task-window.py: the frame after the first full render.
  requestAnimationFrame(() => {
    performance.mark('ready-frame');
    requestAnimationFrame(() => {
      performance.mark('conversation-painted');
      loadHighlighter().catch((e) => console.warn('code stays plain:', e));
    });
  });
}

start().catch((e) => showFatal(messageOf(e), dataDir));
