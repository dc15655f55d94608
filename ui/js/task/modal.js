// Small confirmation dialogs on a page's own <dialog> elements. A dialog with an action stays
// open until the action succeeds; its error is shown inside it.

import { messageOf } from '../api.js';
import { h } from '../dom.js';

/**
 * Shows `dialog` and resolves with true when confirmed, false when cancelled. `confirm`:
 * `{ id, label, danger, action }` (without it only a Close button is offered). Focus starts on
 * Cancel, so a stray Enter changes nothing.
 */
export function ask(dialog, { title, body = [], confirm = null }) {
  return new Promise((resolve) => {
    const headingId = `${dialog.id}-title`;
    const error = h('p', { class: 'form-error', role: 'alert', hidden: true });
    const cancel = h('button', { type: 'button', class: 'button', id: `${dialog.id}-cancel`, text: confirm ? 'Cancel' : 'Close' });
    const submit = confirm
      ? h('button', { type: 'submit', id: confirm.id, class: confirm.danger ? 'button danger' : 'button primary', text: confirm.label })
      : null;
    const form = h('form', { method: 'dialog', class: 'dialog-form' },
      h('h2', { id: headingId, text: title }), body, error, h('div', { class: 'dialog-actions' }, cancel, submit));

    let done = false;
    function finish(result) {
      if (done) return;
      done = true;
      dialog.removeEventListener('cancel', onCancel);
      dialog.close();
      dialog.replaceChildren();
      resolve(result);
    }
    function onCancel(event) {
      event.preventDefault();
      finish(false);
    }
    cancel.addEventListener('click', () => finish(false));
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      submit.disabled = true;
      try {
        if (confirm.action) await confirm.action();
        finish(true);
      } catch (e) {
        error.textContent = messageOf(e);
        error.hidden = false;
        submit.disabled = false;
      }
    });
    dialog.addEventListener('cancel', onCancel);
    dialog.setAttribute('aria-labelledby', headingId);
    dialog.replaceChildren(form);
    dialog.showModal();
    cancel.focus();
  });
}
