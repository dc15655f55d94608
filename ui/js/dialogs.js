// Modal dialogs built on <dialog>. A dialog with an action stays open until the action succeeds;
// its error is shown inside it, so nothing the user typed is lost.

import { call, messageOf } from './api.js';
import { $, h } from './dom.js';

/**
 * Shows a form dialog and resolves with the action's result, or `null` if cancelled.
 * fields: [{ name, label, value, placeholder, hint, browse }]; `browse` adds a "Browse…" button
 * that fills the field from the native folder chooser.
 */
export function formDialog({ title, message, fields = [], submitLabel = 'OK', danger = false, action, focusCancel = false }) {
  const dialog = $('#dialog');
  return new Promise((resolve) => {
    const error = h('p', { id: 'dialog-error', class: 'form-error', role: 'alert', hidden: true });
    const inputs = {};
    const rows = fields.map((field) => {
      const input = h('input', {
        id: `dialog-field-${field.name}`,
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
            id: `dialog-browse-${field.name}`,
            text: 'Browse…',
            onclick: async (event) => {
              const button = event.currentTarget;
              button.disabled = true; // one chooser at a time
              try {
                const picked = await call('pick_folder');
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
    const submit = h('button', { id: 'dialog-submit', type: 'submit', class: danger ? 'button danger' : 'button primary', text: submitLabel });
    const cancel = h('button', { id: 'dialog-cancel', type: 'button', class: 'button', text: 'Cancel', onclick: () => finish(null) });
    const form = h('form', { method: 'dialog', class: 'dialog-form' },
      h('h2', { text: title }),
      message ? h('p', { class: 'dialog-message', text: message }) : null,
      ...rows,
      error,
      h('div', { class: 'dialog-actions' }, cancel, submit));

    function showError(text) {
      error.textContent = text;
      error.hidden = false;
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
    dialog.replaceChildren(form);
    dialog.showModal();
    const first = Object.values(inputs)[0];
    // Destructive confirmations start on Cancel, so a stray Enter deletes nothing.
    (first ?? (focusCancel ? cancel : submit)).focus();
    if (first) first.select();
  });
}

/** Asks a yes/no question; resolves true if confirmed. */
export async function confirmDialog({ title, message, confirmLabel, danger = true }) {
  const answer = await formDialog({ title, message, submitLabel: confirmLabel, danger, focusCancel: danger, action: async () => true });
  return answer === true;
}
