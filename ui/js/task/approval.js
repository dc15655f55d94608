// Approvals and questions. The agent waits on them, so each is a modal dialog, one at a time, in
// the order they came. Either may be answered elsewhere (another window, a stop): its dialog then
// closes, and the next one is shown.

import { call, messageOf } from '../api.js';
import { $, h } from '../dom.js';
import { hunkRange, hunkTable } from './diff.js';
import { HIDDEN_WARNING, hasHidden, visible } from '../format.js';

let context = { taskId: 0, notice: () => {} };
const queue = []; // { type: 'approval' | 'question', item }
let current = null; // the entry on screen, with its `close()`

/** `notice(text)` shows a muted line in the conversation. */
export function initPrompts(taskId, notice) {
  context = { taskId, notice };
}

export const addApproval = (request) => enqueue('approval', request);
export const addQuestion = (question) => enqueue('question', question);

/** The request `id` of `type` no longer waits: drop it, closing its dialog if it is shown. */
export function resolvePrompt(type, id) {
  const at = queue.findIndex((e) => e.type === type && e.item.id === id);
  if (at >= 0) queue.splice(at, 1);
  if (current?.type === type && current.item.id === id) finish(current);
}

function enqueue(type, item) {
  const same = (e) => e?.type === type && e.item.id === item.id;
  if (same(current) || queue.some(same)) return;
  queue.push({ type, item });
  if (!current) showNext();
}

function showNext() {
  current = queue.shift() ?? null;
  if (!current) return;
  const show = current.type === 'approval' ? showApproval : showQuestion;
  current.close = show(current);
}

function finish(entry) {
  if (entry !== current) return; // already closed: resolved while its answer was being sent
  entry.close();
  showNext();
}

/** Shows `form` in `dialog`; Esc calls `onEscape`. Returns the function that closes it. */
function open(dialog, form, onEscape) {
  const onCancel = (event) => {
    event.preventDefault();
    onEscape();
  };
  dialog.addEventListener('cancel', onCancel);
  dialog.replaceChildren(form);
  dialog.showModal();
  return () => {
    dialog.removeEventListener('cancel', onCancel);
    dialog.close();
    dialog.replaceChildren();
  };
}

// Sends an answer; on failure the dialog stays open with the error, except when it was answered
// elsewhere meanwhile.
async function answer(entry, command, args, ui) {
  if (ui.sending) return; // Esc pressed while an answer is on its way
  ui.sending = true;
  ui.busy(true);
  try {
    await call(command, { taskId: context.taskId, id: entry.item.id, ...args });
    finish(entry);
  } catch (e) {
    if (e?.kind === 'alreadyAnswered') {
      finish(entry);
      context.notice(`This ${entry.type} was already answered.`);
      return;
    }
    ui.error.textContent = messageOf(e);
    ui.error.hidden = false;
    ui.busy(false);
  } finally {
    ui.sending = false;
  }
}

// ---- approvals ----------------------------------------------------------------------------

function showApproval(entry) {
  const request = entry.item;
  const allowed = new Set(request.decisions);
  const action = actionView(request.action, allowed);
  const error = h('p', { id: 'approval-error', class: 'form-error', role: 'alert', hidden: true });
  const feedback = h('textarea', { id: 'approval-feedback', rows: '2' });
  const editor = allowed.has('approveEdited') ? contentEditor(request.action) : null;
  const buttons = approvalButtons(request, allowed, Boolean(editor));
  const form = h('form', { method: 'dialog', class: 'dialog-form approval' },
    h('h2', { id: 'approval-title', text: visible(request.summary) }),
    request.reason ? h('p', { class: 'approval-reason', text: `Why asked: ${visible(request.reason)}` }) : null,
    hiddenIn(request) ? h('p', { id: 'approval-hidden', class: 'form-error approval-hidden', role: 'alert', text: HIDDEN_WARNING }) : null,
    action.node,
    editor?.node,
    h('label', { class: 'field' },
      h('span', { class: 'field-label', text: 'Note to the agent (optional)' }),
      feedback),
    error,
    h('div', { class: 'dialog-actions' }, buttons.reject, buttons.edit, buttons.always, editor?.submit, buttons.approve));

  const all = () => [...form.querySelectorAll('button, .hunk-toggle, textarea')];
  const ui = {
    error,
    busy: (on) => {
      for (const el of all()) el.disabled = on;
      if (!on) updateApprove();
    },
  };
  const decide = (decision) => answer(entry, 'decide_approval', { decision }, ui);
  const reject = () => {
    const note = feedback.value.trim();
    decide(note ? { decision: 'reject', feedback: note } : { decision: 'reject' });
  };
  const approve = () => {
    const checked = action.toggles.filter((t) => t.checked).map((t) => Number(t.dataset.index));
    if (action.toggles.length > 0 && checked.length < action.toggles.length) decide({ decision: 'approveHunks', hunks: checked });
    else decide({ decision: 'approve' });
  };
  function updateApprove() {
    buttons.approve.disabled = action.toggles.length > 0 && !action.toggles.some((t) => t.checked);
  }

  buttons.approve.addEventListener('click', approve);
  buttons.reject.addEventListener('click', reject);
  buttons.always?.addEventListener('click', () => decide({ decision: 'approveAlways', rules: request.always }));
  buttons.edit?.addEventListener('click', () => editor.show());
  editor?.submit.addEventListener('click', () => decide({ decision: 'approveEdited', content: editor.textarea.value }));
  for (const toggle of action.toggles) toggle.addEventListener('change', updateApprove);
  form.addEventListener('submit', (event) => event.preventDefault());
  form.addEventListener('keydown', (event) => onApprovalKey(event, action.toggles, buttons.approve, approve));
  // The window may just have come to the front for this dialog: a key meant for what the user
  // was typing elsewhere must not answer it.
  const shownAt = performance.now();
  form.addEventListener('keydown', (event) => {
    const answers = (event.key === 'Enter' || event.key === ' ') && !event.target.closest('textarea');
    if (answers && performance.now() - shownAt < ARMING_MS) {
      event.preventDefault();
      event.stopImmediatePropagation();
    }
  }, true);

  const dialog = $('#approval-dialog');
  dialog.setAttribute('aria-labelledby', 'approval-title');
  const close = open(dialog, form, reject);
  buttons.approve.focus();
  return close;
}

/** Whether anything the request shows holds a character `visible` escapes. */
function hiddenIn(request) {
  const a = request.action;
  const texts = [request.summary, request.reason, a.command, a.cwd, a.path, a.url,
    ...(a.hunks ?? []).flatMap((hunk) => hunk.lines.map((line) => line.text)),
    ...request.always.map((rule) => rule.pattern)];
  return texts.some(hasHidden) || (a.kind === 'call' && hasHidden(JSON.stringify(a.input ?? null)));
}

/** How long a new approval dialog ignores Enter and Space. */
const ARMING_MS = 600;

function onApprovalKey(event, toggles, approveButton, approve) {
  const target = event.target;
  if (event.key === 'Enter' && !event.isComposing) {
    // Buttons, text boxes and disclosure summaries keep their own meaning of Enter.
    if (target.closest('textarea, button, summary, a')) return;
    event.preventDefault();
    if (!approveButton.disabled) approve();
    return;
  }
  const at = toggles.indexOf(target);
  if (at < 0 || (event.key !== 'ArrowUp' && event.key !== 'ArrowDown')) return;
  event.preventDefault();
  const next = toggles[at + (event.key === 'ArrowDown' ? 1 : -1)];
  next?.focus();
}

function approvalButtons(request, allowed, canEdit) {
  const button = (id, text, cls = 'button') => h('button', { type: 'button', id, class: cls, text });
  const canAlways = allowed.has('approveAlways') && request.always.length > 0;
  return {
    approve: button('approval-approve', 'Approve', 'button primary'),
    reject: button('approval-reject', 'Reject', 'button danger-outline'),
    edit: canEdit ? button('approval-edit', 'Edit…') : null,
    always: canAlways ? button('approval-always', `Always allow: ${request.always.map(ruleText).join(', ')}`, 'button always-allow') : null,
  };
}

/** A rule as the user reads it: `bash "cargo test"`, or `web_fetch (every call)`. */
function ruleText(rule) {
  return rule.pattern ? `${rule.tool} "${visible(rule.pattern)}"` : `${rule.tool} (every call)`;
}

// What the call will do. Returns the node and the hunk checkboxes (empty unless hunks may be
// chosen one by one).
function actionView(action, allowed) {
  switch (action.kind) {
    case 'edit':
      return editView(action, allowed.has('approveHunks'));
    case 'command':
      return {
        node: h('div', { class: 'approval-action' },
          h('pre', { class: 'command-line', text: visible(action.command) }),
          h('p', { class: 'approval-cwd' }, 'Working folder: ', h('span', { class: 'file-path', text: visible(action.cwd) })),
          h('p', { class: 'tags' },
            action.sandboxed ? h('span', { class: 'tag', text: 'sandboxed' }) : null,
            action.background ? h('span', { class: 'tag', text: 'in background' }) : null)),
        toggles: [],
      };
    case 'externalPath':
      return {
        node: h('p', { class: 'approval-action' },
          'Outside the project: ', h('span', { class: 'file-path', text: visible(action.path) }), ` (${action.write ? 'write' : 'read'})`),
        toggles: [],
      };
    case 'fetch':
      return { node: h('p', { class: 'approval-action file-path', text: visible(action.url) }), toggles: [] };
    default:
      return { node: h('pre', { class: 'approval-action approval-input', text: visible(JSON.stringify(action.input ?? null, null, 2)) }), toggles: [] };
  }
}

function editView(action, choosable) {
  const toggles = [];
  const hunks = action.hunks.map((hunk, i) => {
    const label = `Hunk ${i + 1} of ${action.hunks.length} · ${hunkRange(hunk)}`;
    let head = h('span', { class: 'diff-range', text: label });
    if (choosable) {
      const toggle = h('input', { type: 'checkbox', class: 'hunk-toggle', checked: true, dataset: { index: hunk.index } });
      toggles.push(toggle);
      head = h('label', { class: 'diff-range hunk-choice' }, toggle, h('span', { text: label }));
    }
    return h('div', { class: 'diff-hunk' }, head, hunkTable(hunk, action.path));
  });
  return {
    node: h('div', { class: 'approval-action diff' },
      h('div', { class: 'diff-file' }, h('span', { class: 'file-path', text: visible(action.path) }), action.created ? h('span', { class: 'tag', text: 'new file' }) : null),
      h('div', { class: 'approval-hunks' }, hunks)),
    toggles,
  };
}

// "Edit…": the proposed content of the whole file in a text box, written instead of the
// proposal. The engine sends it (and allows the answer) only for a text file small enough to show.
function contentEditor(action) {
  if (action.kind !== 'edit' || action.content == null) return null;
  const textarea = h('textarea', { id: 'approval-edited', rows: '12', spellcheck: 'false', wrap: 'off' });
  textarea.value = action.content;
  const submit = h('button', { type: 'button', id: 'approval-approve-edited', class: 'button primary', text: 'Approve edited', hidden: true });
  const node = h('label', { class: 'field approval-editor', hidden: true },
    h('span', { class: 'field-label', text: `Content to write to ${visible(action.path)}` }), textarea);
  return {
    node,
    textarea,
    submit,
    show: () => {
      node.hidden = false;
      submit.hidden = false;
      textarea.focus();
    },
  };
}

// ---- questions ----------------------------------------------------------------------------

function showQuestion(entry) {
  const question = entry.item;
  const error = h('p', { id: 'question-error', class: 'form-error', role: 'alert', hidden: true });
  const input = h('input', { id: 'question-answer', type: 'text', autocomplete: 'off' });
  const submit = h('button', { type: 'submit', id: 'question-submit', class: 'button primary', text: 'Answer', disabled: true });
  const skip = h('button', { type: 'button', id: 'question-skip', class: 'button', text: 'Don’t answer' });
  const choices = question.choices.map((choice) => h('button', { type: 'button', class: 'button question-choice', text: visible(choice) }));
  const form = h('form', { method: 'dialog', class: 'dialog-form question' },
    h('h2', { id: 'question-title', text: 'The agent asks' }),
    h('p', { class: 'question-text', text: visible(question.question) }),
    choices.length ? h('div', { class: 'question-choices' }, choices) : null,
    h('label', { class: 'field' }, h('span', { class: 'field-label', text: 'Your answer' }), h('span', { class: 'field-row' }, input)),
    error,
    h('div', { class: 'dialog-actions' }, skip, submit));

  const ui = {
    error,
    busy: (on) => {
      for (const el of form.querySelectorAll('button, input')) el.disabled = on;
      if (!on) submit.disabled = !input.value.trim();
    },
  };
  const reply = (text) => answer(entry, 'answer_question', { answer: text }, ui);
  choices.forEach((button, i) => button.addEventListener('click', () => reply(question.choices[i])));
  skip.addEventListener('click', () => reply(null));
  input.addEventListener('input', () => { submit.disabled = !input.value.trim(); });
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    if (input.value.trim()) reply(input.value.trim());
  });

  const dialog = $('#question-dialog');
  dialog.setAttribute('aria-labelledby', 'question-title');
  const close = open(dialog, form, () => reply(null));
  (choices[0] ?? input).focus();
  return close;
}
