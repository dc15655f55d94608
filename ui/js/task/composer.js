// The composer: the message box with its attached images, Send and Stop, and the task's mode and
// model.

import { call, messageOf } from '../api.js';
import { $, h } from '../dom.js';
import { hintFor, providerOf } from './hints.js';
import { ask } from '../dialogs.js';
import { attachMentions, mentionsHandleKey } from './mentions.js';
import { clearAttachments, hasAttachments, initAttachments, pendingAttachments } from './attachments.js';

const state = {
  taskId: 0,
  options: { model: null, mode: 'normal' },
  models: [],
  mainModel: null,
  running: false,
  sending: false,
  composing: false, // an IME composition is open
  committing: false, // a composition just ended; WebKit may still send its Enter
  attachError: false, // the error shown is about attaching (a fine attach hides it)
  onSteered: () => {},
  onAction: () => {},
};

/**
 * `onSteered(text, images)` is called for a message queued while the agent works; `onAction(name, args)`
 * for a slash command that is an action of the window (other than /model and /mode, done here).
 */
export function initComposer(taskId, onSteered, onAction) {
  Object.assign(state, { taskId, onSteered, onAction });
  const input = $('#composer-input');
  input.addEventListener('compositionstart', () => { state.composing = true; });
  input.addEventListener('compositionend', () => {
    state.composing = false;
    state.committing = true;
  });
  input.addEventListener('keydown', onKey);
  attachMentions(input, { taskId, onCommand: () => send() });
  initAttachments({
    composer: $('.composer'),
    textarea: input,
    button: $('#composer-attach'),
    fileInput: $('#composer-file'),
    row: $('#composer-attachments'),
    onError: showAttachError,
  });
  $('#composer-send').addEventListener('click', send);
  $('#composer-stop').addEventListener('click', stop);
  $('#mode-select').addEventListener('change', changeMode);
  $('#model-select').addEventListener('change', () => saveOptions({ ...state.options, model: $('#model-select').value || null }));
}

/** Whether the task runs in this app now (Stop is offered). */
export function setRunning(running) {
  state.running = running;
  $('#composer-stop').hidden = !running;
}

export function setOptions(options, models = state.models, mainModel = state.mainModel) {
  state.options = options;
  state.models = models;
  state.mainModel = mainModel;
  $('#mode-select').value = options.mode;
  renderModels();
}

function renderModels() {
  const { model } = state.options;
  const ids = state.models.map((m) => m.id);
  if (model && !ids.includes(model)) ids.unshift(model);
  const select = $('#model-select');
  // "" follows the main model (what a new task uses until one is chosen for it).
  const main = state.mainModel ? `Main model (${state.mainModel})` : 'Choose a model…';
  select.replaceChildren(
    h('option', { value: '', text: main }),
    ...ids.map((id) => h('option', { value: id, text: id })));
  select.value = model ?? '';
}

function onKey(event) {
  const committing = state.committing;
  state.committing = false;
  // A key an IME takes is its own: WebKit may report the Enter that confirms a composition with
  // isComposing false (keyCode 229), right after compositionend.
  const ime = state.composing || event.isComposing || (event.keyCode === 229 && committing);
  // The open file picker comes first: its Escape closes it (the run goes on), its Enter picks.
  if (!ime && mentionsHandleKey(event)) return;
  if (event.key === 'Escape') {
    if (ime) return; // it cancels the composition, not the run
    if (state.running && !document.querySelector('dialog[open]')) {
      event.preventDefault();
      stop();
    }
    return;
  }
  if (event.key !== 'Enter' || event.shiftKey || ime) return;
  event.preventDefault();
  send();
}

/**
 * Sends what is typed and the attached images (images alone are a message too); `{ resume: true }`
 * continues the task with what it holds.
 */
async function send({ resume = false } = {}) {
  const input = $('#composer-input');
  const typed = input.value;
  const text = resume ? null : typed.trim();
  if ((!resume && !text && !hasAttachments()) || state.sending) return;
  state.sending = true;
  $('#composer-send').disabled = true;
  showError(null);
  let attachments = [];
  // What was sent is cleared from the composer; what was typed or attached meanwhile stays.
  const clear = () => {
    if (resume) return;
    if (input.value === typed) input.value = '';
    clearAttachments(attachments);
  };
  try {
    if (!resume) attachments = await pendingAttachments(); // images still being read go too
    if (!resume && !text && !attachments.length) return;
    const { steered, action } = await call('send_message', { taskId: state.taskId, text, attachments });
    if (action) {
      // A command of the window: the typed command goes, the attached images stay.
      if (input.value === typed) input.value = '';
      // An argument it cannot use: the command is given back to fix.
      if (!(await act(action)) && input.value === '') input.value = typed;
      return;
    }
    clear();
    if (steered) state.onSteered(text, attachments.length);
  } catch (e) {
    // Stored in the task despite the error: it is in the conversation, not lost.
    if (e?.saved) clear();
    showError(e);
  } finally {
    state.sending = false;
    $('#composer-send').disabled = false;
  }
}

/**
 * Performs a slash command's action: /model and /mode here, the others in the window. False when
 * its argument cannot be used (the error says why).
 */
async function act({ action, arguments: args }) {
  if (action === 'model') {
    if (!args) {
      $('#model-select').focus();
      return true;
    }
    const known = state.models.some((m) => m.id === args) || args === state.options.model;
    if (!known) {
      showError(`There is no model ${args}. Choose one in the Model list, or add it in Settings → Models.`);
      return false;
    }
    $('#model-select').value = args;
    await saveOptions({ ...state.options, model: args });
    return true;
  }
  if (action === 'mode') {
    if (!args) {
      $('#mode-select').focus();
      return true;
    }
    const mode = ['normal', 'accept-edits', 'plan', 'yolo'].find((m) => m === args.toLowerCase());
    if (!mode) {
      showError(`There is no mode ${args}: use normal, accept-edits, plan or yolo.`);
      return false;
    }
    $('#mode-select').value = mode;
    await changeMode();
    return true;
  }
  return state.onAction(action, args);
}

async function stop() {
  try {
    await call('stop_task', { taskId: state.taskId });
  } catch (e) {
    showError(e);
  }
}

async function changeMode() {
  const mode = $('#mode-select').value;
  if (mode === 'yolo' && state.options.mode !== 'yolo' && !(await confirmYolo())) {
    $('#mode-select').value = state.options.mode;
    return;
  }
  saveOptions({ ...state.options, mode });
}

function confirmYolo() {
  return ask($('#yolo-dialog'), {
    title: 'Yolo mode',
    body: h('p', { class: 'dialog-message', text: 'Yolo runs every edit and command without asking (deny rules still hold; commands are sandboxed when possible). Use it for this task?' }),
    confirm: { label: 'Use Yolo', danger: true },
  });
}

async function saveOptions({ model, mode }) {
  showError(null);
  try {
    setOptions(await call('set_task_options', { taskId: state.taskId, model, mode }));
  } catch (e) {
    setOptions(state.options); // the pickers show what is in force
    showError(e);
  }
}

/** Shows what attaching refused (a string, shown as is); null hides an earlier one. */
function showAttachError(message) {
  if (message) showError(message);
  else if (state.attachError) showError(null);
  state.attachError = Boolean(message);
}

/** Shows an error under the composer with its hint (a string: as is); null hides it. */
/** Shows `error` (a message, or an error from a command) under the message box. */
export function showError(error) {
  state.attachError = false;
  const box = $('#composer-error');
  box.hidden = !error;
  if (!error) return;
  if (typeof error === 'string') {
    box.replaceChildren(h('span', { text: error }));
    return;
  }
  const hint = hintFor(error.kind, providerOf(state.options.model ?? state.mainModel));
  const saved = error.saved
    ? h('span', { class: 'error-hint' }, [
        'Your message is saved in this task. ',
        h('button', { type: 'button', class: 'small', id: 'composer-continue', text: 'Continue', onclick: () => send({ resume: true }) }),
      ])
    : null;
  // (replaceChildren would show a null as "null")
  box.replaceChildren(...[h('span', { text: messageOf(error) }), hint ? h('span', { class: 'error-hint', text: hint }) : null, saved].filter(Boolean));
}

/** The hint for an error kind, for the current model's provider. */
export const currentHint = (kind) => hintFor(kind, providerOf(state.options.model ?? state.mainModel));
