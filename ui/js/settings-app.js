// The settings page's app part: the colour theme (system, light or dark: this computer's choice,
// kept where js/theme.js reads it, so every window follows at once), how many tasks and
// sub-agents may run at once, and which desktop notifications to show.

import { call, messageOf } from './api.js';
import { $, toast } from './dom.js';

const THEME = 'codewright.theme';

/** Reads the app's settings again into the form. */
export async function refreshApp() {
  const settings = await call('app_settings');
  $('#app-theme').value = localStorage.getItem(THEME) ?? 'system';
  $('#app-max-running').value = String(settings.maxRunning);
  $('#app-max-subagents').value = String(settings.maxSubagents);
  $('#app-notify-approval').checked = settings.notifyApproval;
  $('#app-notify-finished').checked = settings.notifyFinished;
  $('#app-notify-failed').checked = settings.notifyFailed;
  $('#app-saved').hidden = true;
  for (const error of document.querySelectorAll('#app-form [data-error-in]')) error.hidden = true;
}

function setTheme(theme) {
  if (theme === 'system') localStorage.removeItem(THEME);
  else localStorage.setItem(THEME, theme);
  // Other windows hear of it by themselves; this one is told.
  window.dispatchEvent(new StorageEvent('storage', { key: THEME }));
}

async function save(event) {
  event.preventDefault();
  const button = $('#app-save');
  if (button.disabled) return;
  for (const shown of document.querySelectorAll('#app-form [data-error-in]')) shown.hidden = true;
  button.disabled = true;
  try {
    await call('save_app_settings', {
      settings: {
        maxRunning: Number($('#app-max-running').value),
        maxSubagents: Number($('#app-max-subagents').value),
        notifyApproval: $('#app-notify-approval').checked,
        notifyFinished: $('#app-notify-finished').checked,
        notifyFailed: $('#app-notify-failed').checked,
      },
    });
    $('#app-saved').hidden = false;
  } catch (e) {
    const error = e?.field && $(`#app-form [data-error-in="${e.field}"]`);
    if (!error) return toast(messageOf(e), { error: true });
    error.textContent = messageOf(e);
    error.hidden = false;
    $(`#app-form [name="${e.field}"]`).focus();
  } finally {
    button.disabled = false;
  }
}

/** Wires the section's controls, once. */
export function initApp() {
  $('#app-theme').addEventListener('change', (e) => setTheme(e.target.value));
  $('#app-form').addEventListener('submit', save);
  $('#app-form').addEventListener('input', () => { $('#app-saved').hidden = true; });
}
