// Modal dialogs built on <dialog>. A dialog with an action stays open until the action succeeds;
// its error is shown inside it, so nothing the user typed is lost.

import { call, messageOf } from './api.js';
import { $, h } from './dom.js';

/**
 * Shows a form dialog and resolves with the action's result, or `null` if cancelled.
 * fields: [{ name, label, value, placeholder, hint, browse }]; `browse` adds a "Browse…" button
 * that fills the field from a native chooser: the command that shows it (`pick_folder`). `dialog`: the page's `<dialog>` to use
 * (its id prefixes the controls' ids: `dialog-submit`, `restore-dialog-submit`); `body`: nodes
 * shown under the message; `submitLabel: null` offers only a Close button.
 */
export function formDialog({ dialog = $('#dialog'), title, message, body = [], fields = [], submitLabel = 'OK', danger = false, action, focusCancel = false }) {
  const id = dialog.id;
  return new Promise((resolve) => {
    const error = h('p', { id: `${id}-error`, class: 'form-error', role: 'alert', hidden: true });
    const inputs = {};
    const rows = fields.map((field) => {
      const input = h('input', {
        id: `${id}-field-${field.name}`,
        type: 'text',
        value: field.value ?? '',
        placeholder: field.placeholder ?? '',
        autocomplete: 'off',
        spellcheck: 'false',
      });
      inputs[field.name] = input;
      const browse = field.browse
        ? h('button', {
            type: 'button',
            class: 'button',
            id: `${id}-browse-${field.name}`,
            text: 'Browse…',
            onclick: async (event) => {
              const button = event.currentTarget;
              button.disabled = true; // one chooser at a time
              try {
                const picked = await call(field.browse);
                if (picked) input.value = picked;
              } catch (e) {
                showError(messageOf(e));
              } finally {
                button.disabled = false;
              }
            },
          })
        : null;
      return h('label', { class: 'field' },
        h('span', { class: 'field-label', text: field.label }),
        h('span', { class: 'field-row' }, input, browse),
        field.hint ? h('span', { class: 'field-hint', text: field.hint }) : null);
    });
    const submit = submitLabel === null
      ? null
      : h('button', { id: `${id}-submit`, type: 'submit', class: danger ? 'button danger' : 'button primary', text: submitLabel });
    const cancel = h('button', { id: `${id}-cancel`, type: 'button', class: 'button', text: submit ? 'Cancel' : 'Close', onclick: () => finish(null) });
    const form = h('form', { method: 'dialog', class: 'dialog-form' },
      h('h2', { id: `${id}-title`, text: title }),
      message ? h('p', { class: 'dialog-message', text: message }) : null,
      body,
      ...rows,
      error,
      h('div', { class: 'dialog-actions' }, cancel, submit));

    function showError(text) {
      error.textContent = text;
      error.hidden = false;
      error.scrollIntoView({ block: 'nearest' }); // a long dialog shows it, not only its top
    }
    let done = false;
    const onCancel = () => finish(null);
    function finish(result) {
      if (done) return;
      done = true;
      dialog.removeEventListener('cancel', onCancel);
      dialog.close();
      dialog.replaceChildren();
      resolve(result);
    }
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      const values = Object.fromEntries(Object.entries(inputs).map(([k, input]) => [k, input.value]));
      submit.disabled = true;
      try {
        finish(await action(values));
      } catch (e) {
        showError(messageOf(e));
      } finally {
        submit.disabled = false;
      }
    });
    dialog.addEventListener('cancel', onCancel);
    dialog.setAttribute('aria-labelledby', `${id}-title`);
    dialog.replaceChildren(form);
    dialog.showModal();
    const first = Object.values(inputs)[0];
    // Destructive confirmations start on Cancel, so a stray Enter deletes nothing.
    (first ?? (focusCancel || !submit ? cancel : submit)).focus();
    if (first) first.select();
  });
}

/** Asks a yes/no question; resolves true if confirmed. */
export async function confirmDialog({ title, message, confirmLabel, danger = true }) {
  const answer = await formDialog({ title, message, submitLabel: confirmLabel, danger, focusCancel: danger, action: async () => true });
  return answer === true;
}

/**
 * A confirmation on one of the page's own `<dialog>`s, starting on Cancel (a stray Enter
 * changes nothing). `confirm`: `{ label, danger, action }`; without it only Close is offered.
 * Resolves true once the action succeeded (its error is shown in the dialog until then).
 */
export async function ask(dialog, { title, body = [], confirm = null }) {
  const answer = await formDialog({
    dialog,
    title,
    body,
    submitLabel: confirm ? confirm.label : null,
    danger: confirm?.danger,
    focusCancel: true,
    action: async () => {
      await confirm?.action?.();
      return true;
    },
  });
  return answer === true;
}
