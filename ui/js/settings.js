// The settings page of the main window, and its first-run form: which provider and model the
// agent uses, the provider's key (it goes into the system keyring and never comes back), a real
// connection test, and the model roles. A view: every rule (what a valid provider is, where a key
// comes from, what a test found) is the backend's; this page shows what it says.

import { call, messageOf } from './api.js';
import { $, h, toast } from './dom.js';
import { initMcp, refreshMcp } from './settings-mcp.js';
import { initApp, refreshApp } from './settings-app.js';
import { initModels, refreshModels } from './settings-models.js';
import { initProject, refreshProject } from './settings-project.js';

const CUSTOM = '';
const PROTOCOLS = [
  ['openai', 'OpenAI Chat Completions (and compatible servers)'],
  ['openai-responses', 'OpenAI Responses'],
  ['anthropic', 'Anthropic Messages'],
  ['gemini', 'Google Gemini'],
];
const ROLES = [
  ['main', 'Main', 'The agent’s model.'],
  ['small', 'Small', 'Titles and quick jobs; falls back to the main model.'],
  ['compaction', 'Compaction', 'Summarizes long conversations; falls back to the small model.'],
];

const page = {
  settings: null, // what settings_overview returned last
  local: null, // local servers that answered; null while they are looked for
  again: false, // whether they are being looked for again (Look again)
  look: 0, // counts the looks, so that an earlier one's answer is dropped
  layout: () => {}, // re-renders the rest of the window, which stays hidden while this page shows
};

/** A key's source, as the page words it. */
function keyText(key) {
  switch (key.source) {
    case 'keyring': return 'Key set in the system keyring';
    case 'env': return `Key from $${key.var}`;
    case 'notNeeded': return 'No key needed';
    default: return key.var ? `No key — paste one, or set $${key.var}` : 'No key';
  }
}

/** `text` with its first letter lower-cased (a variable's name in it stays as it is). */
const lowerFirst = (text) => text.charAt(0).toLowerCase() + text.slice(1);

function providerOf(name) {
  return page.settings?.providers.find((p) => p.name === name);
}

// ---- the model form -------------------------------------------------------------------------

function fieldError(field, message) {
  const el = $(`[data-error-for="${field}"]`);
  if (!el) return toast(message, { error: true });
  el.textContent = message;
  el.hidden = false;
  $(`[name="${field}"]`, $('#model-form'))?.setAttribute('aria-invalid', 'true');
}

function clearErrors() {
  for (const el of document.querySelectorAll('#model-form [data-error-for]')) el.hidden = true;
  for (const el of document.querySelectorAll('#model-form [aria-invalid]')) el.removeAttribute('aria-invalid');
}

/** Shows the chosen provider's fields: its key status, or the custom provider's form. */
function showProvider() {
  const name = $('#provider-select').value;
  const custom = name === CUSTOM;
  $('#custom-provider').hidden = !custom;
  const provider = providerOf(name);
  const key = provider?.key ?? { source: 'missing' };
  $('#key-status').textContent = custom ? 'Paste the key this server expects, if it needs one.' : keyText(key);
  $('#key-field').hidden = !custom && key.source === 'notNeeded';
  $('#provider-key').placeholder = key.source === 'keyring' || key.source === 'env' ? 'Paste a key to replace it' : 'Paste the key';
  const keyringDown = key.source === 'missing' && key.keyring;
  $('#keyring-note').hidden = !keyringDown;
  if (keyringDown) $('#keyring-note').textContent = `The system keyring cannot be used: ${key.keyring}`;
  listModels();
  $('#test-result').hidden = true;
}

/** The models offered for the chosen provider: its local server's, then those described. */
function listModels() {
  const name = $('#provider-select').value;
  const served = (page.local ?? []).find((s) => s.provider === name)?.models ?? [];
  const options = [...served, ...(providerOf(name)?.models ?? [])];
  $('#model-options').replaceChildren(...options.map((id) => h('option', { value: id.replace(/@[^@]*$/, '') })));
}

/** A typed number of seconds: `null` when empty (the default). */
const seconds = (text) => (text.trim() === '' ? null : Math.max(0, Math.round(Number(text)) || 0));

/** Fills the custom provider's fields with a saved one, to change it. */
function editProvider(p) {
  $('#provider-select').value = CUSTOM;
  showProvider();
  const form = $('#model-form');
  form.elements.name.value = p.name;
  form.elements.protocol.value = p.protocol;
  form.elements.baseUrl.value = p.baseUrl;
  form.elements.apiKeyEnv.value = p.apiKeyEnv ?? '';
  form.elements.firstByteTimeoutSecs.value = p.firstByteTimeoutSecs ?? '';
  form.elements.idleTimeoutSecs.value = p.idleTimeoutSecs ?? '';
  $('#custom-url').focus();
}

/** Saves what the form holds (a custom provider, a pasted key) and returns MODEL@PROVIDER. */
async function saveForm() {
  clearErrors();
  const form = $('#model-form');
  let name = $('#provider-select').value;
  if (name === CUSTOM) {
    try {
      name = await call('save_provider', {
        form: {
          name: form.elements.name.value,
          protocol: form.elements.protocol.value,
          baseUrl: form.elements.baseUrl.value,
          apiKeyEnv: form.elements.apiKeyEnv.value || null,
          firstByteTimeoutSecs: seconds(form.elements.firstByteTimeoutSecs.value),
          idleTimeoutSecs: seconds(form.elements.idleTimeoutSecs.value),
        },
      });
    } catch (e) {
      fieldError(e.field ?? 'name', messageOf(e));
      return null;
    }
  }
  const keyInput = $('#provider-key');
  if (keyInput.value) {
    try {
      const saved = await call('set_provider_key', { provider: name, key: keyInput.value });
      keyInput.value = ''; // kept in the keyring now, never shown again
      if (saved.trimmed) toast('Spaces and line breaks around the key were taken off.');
    } catch (e) {
      fieldError('key', messageOf(e));
      return null;
    }
  }
  const model = form.elements.model.value.trim();
  if (!model) {
    fieldError('model', 'Type the model’s name, e.g. gpt-5.1 or llama3.2.');
    return null;
  }
  await refresh(name);
  return model.includes('@') ? model : `${model}@${name}`;
}

/** What a connection test found, as one line that says what to do. */
function outcomeText(o) {
  switch (o.result) {
    case 'ok': return `Connected: ${o.model} answered${o.reply ? ` “${o.reply}”` : ''}.`;
    case 'badKey': return `The key was refused. ${o.message}`;
    case 'unreachable': return `Nothing usable answered at ${o.url}. ${o.message}`;
    case 'modelNotFound': return `The provider does not know the model ${o.model}. ${o.message}`;
    default: return o.message;
  }
}

function showResult(text, ok) {
  const result = $('#test-result');
  result.textContent = text;
  result.className = ok ? 'test-result ok' : 'test-result error';
  result.hidden = false;
}

async function busy(button, work) {
  if (button.disabled) return;
  button.disabled = true;
  try {
    await work();
  } finally {
    button.disabled = false;
  }
}

function testConnection() {
  return busy($('#test-connection'), async () => {
    const model = await saveForm();
    if (!model) return;
    showResult(`Testing ${model}…`, true);
    try {
      const outcome = await call('test_model', { model });
      showResult(outcomeText(outcome), outcome.result === 'ok');
    } catch (e) {
      showResult(messageOf(e), false);
    }
  });
}

function useModel(event) {
  event.preventDefault();
  return busy($('#use-model'), async () => {
    const model = await saveForm();
    if (!model) return;
    try {
      await call('set_model_role', { role: 'main', model });
    } catch (e) {
      fieldError('model', messageOf(e));
      return;
    }
    await refresh();
    const missing = page.settings.readiness.missing;
    if (missing) return showResult(missing, false);
    toast(`Tasks will use ${model}.`);
    if (document.body.dataset.setup) close();
  });
}

// ---- providers and roles ----------------------------------------------------------------------

function renderProviders() {
  $('#providers').replaceChildren(...page.settings.providers.map((p) =>
    h('li', { class: 'provider', dataset: { name: p.name } },
      h('span', { class: 'provider-name', text: p.name }),
      h('span', { class: 'provider-url', title: p.baseUrl, text: p.baseUrl }),
      h('span', { class: `provider-key key-${p.key.source}`, text: keyText(p.key) }),
      h('span', { class: 'provider-actions' },
        p.key.source === 'keyring'
          ? h('button', { type: 'button', class: 'button small', text: 'Remove key', 'aria-label': `Remove the key of ${p.name}`, onclick: () => removeKey(p.name) })
          : null,
        p.custom
          ? h('button', { type: 'button', class: 'button small', text: 'Change', 'aria-label': `Change the provider ${p.name}`, onclick: () => editProvider(p) })
          : null,
        p.custom
          ? h('button', { type: 'button', class: 'button small danger-outline', text: 'Remove', 'aria-label': `Remove the provider ${p.name}`, onclick: () => removeProvider(p.name) })
          : null))));
}

function renderRoles() {
  const own = new Map(page.settings.roles);
  const ids = page.settings.models.map((m) => m.id);
  $('#roles').replaceChildren(...ROLES.map(([role, label, hint]) => {
    const chosen = own.get(role) ?? '';
    const options = chosen && !ids.includes(chosen) ? [chosen, ...ids] : ids;
    return h('div', { class: 'role' },
      h('label', { for: `role-${role}`, text: label }),
      h('select', { id: `role-${role}`, onchange: (e) => setRole(role, e.target.value) },
        h('option', { value: '', text: role === 'main' ? 'Not chosen' : 'Falls back' }),
        ...options.map((id) => h('option', { value: id, text: id, selected: id === chosen }))),
      h('span', { class: 'muted', text: hint }));
  }));
}

async function setRole(role, model) {
  try {
    await call('set_model_role', { role, model: model || null });
    await refresh();
  } catch (e) {
    toast(messageOf(e), { error: true });
  }
}

async function removeKey(name) {
  try {
    await call('remove_provider_key', { provider: name });
    await refresh();
  } catch (e) {
    toast(messageOf(e), { error: true });
  }
}

async function removeProvider(name) {
  try {
    await call('remove_provider', { name });
    await refresh();
  } catch (e) {
    toast(messageOf(e), { error: true });
  }
}

/**
 * What is already there: keys in the environment or keyring, local servers that answer. The
 * servers are looked for as the page opens (up to 800 ms): a line says so meanwhile, and a
 * server that answers takes that line's place — one row for one line — so the form below does
 * not move as the user starts on it.
 */
function renderFound() {
  const local = page.local ?? [];
  const found = [
    ...page.settings.providers.filter((p) => p.key.source === 'env' || p.key.source === 'keyring')
      .map((p) => ({ provider: p.name, text: `${p.name}: ${lowerFirst(keyText(p.key))}` })),
    ...local.map((s) => ({
      provider: s.provider,
      text: `${s.provider} answers at ${s.baseUrl} with ${s.models.length} model${s.models.length === 1 ? '' : 's'}`,
    })),
  ];
  $('#found-status-text').textContent = page.local == null
    ? 'Looking for a model server on this computer (Ollama, LM Studio)…'
    : 'No model server answers on this computer (Ollama, LM Studio).';
  $('#found-status').hidden = local.length > 0;
  // (Kept while it looks again, so that the focus stays on it.)
  $('#found-again').hidden = page.local == null && !page.again;
  $('#found-list').hidden = found.length === 0;
  // A row's button focused stays so as the rows are drawn again.
  const focused = document.activeElement?.closest('#found-list') && document.activeElement.dataset.provider;
  $('#found-list').replaceChildren(...found.map((f) =>
    h('li', {}, h('button', {
      type: 'button', class: 'button small', text: `Use ${f.provider}`, 'data-provider': f.provider,
      'aria-label': `Use ${f.provider}`,
      onclick: () => { $('#provider-select').value = f.provider; showProvider(); $('#model-name').focus(); },
    }), h('span', { text: f.text }))));
  if (focused) $(`#found-list button[data-provider="${CSS.escape(focused)}"]`)?.focus();
}

/** Reads the settings again and re-renders, keeping the form's choice (or choosing `select`). */
async function refresh(select) {
  const picker = $('#provider-select');
  const first = page.settings == null;
  const current = select ?? picker.value;
  page.settings = await call('settings_overview');
  picker.replaceChildren(
    ...page.settings.providers.map((p) => h('option', { value: p.name, text: p.name })),
    h('option', { value: CUSTOM, text: 'Custom (OpenAI-compatible server, proxy…)' }));
  if (first) {
    // A provider whose key is already there, else the first.
    const ready = page.settings.providers.find((p) => p.key.source === 'env' || p.key.source === 'keyring');
    picker.value = (ready ?? page.settings.providers[0])?.name ?? CUSTOM;
  } else {
    picker.value = providerOf(current) ? current : CUSTOM;
  }
  showProvider();
  renderProviders();
  renderRoles();
  renderFound();
}

// ---- the page -------------------------------------------------------------------------------

/** Whether the settings page is showing. */
export function settingsOpen() {
  return !$('#settings-view').hidden;
}

/** Leaves the page, putting the rest of the window back. */
export function closeSettings() {
  if (settingsOpen()) close();
}

function close() {
  delete document.body.dataset.setup;
  $('#settings-view').hidden = true;
  page.layout();
}

/**
 * Shows the settings page. `setup`: the first-run form (no usable model yet). `layout`
 * re-renders the rest of the window, which hides itself while the page shows.
 */
export async function openSettings({ setup = false, layout = () => {} } = {}) {
  page.layout = layout;
  page.local = null; // looked for again below (an earlier look still on its way is dropped)
  page.look++;
  page.again = false;
  if (setup) document.body.dataset.setup = 'true';
  else delete document.body.dataset.setup;
  $('#settings-title').textContent = setup ? 'Set up a model' : 'Settings';
  $('#settings-close').textContent = setup ? 'Set up later' : 'Done';
  $('#settings-intro').textContent = setup
    ? 'Codewright needs a model to work with. Choose a provider, give it a key, test it, and use it.'
    : 'Providers, keys and the models tasks use.';
  $('#settings-view').hidden = false;
  page.layout(); // hides what the page takes the place of
  await refresh();
  $('#provider-select').focus();
  if (!setup) {
    refreshMcp().catch((e) => toast(messageOf(e), { error: true }));
    refreshProject().catch((e) => toast(messageOf(e), { error: true }));
    refreshApp().catch((e) => toast(messageOf(e), { error: true }));
    refreshModels(() => refresh()).catch((e) => toast(messageOf(e), { error: true }));
  }
  await lookForServers();
}

/**
 * Looks for the local servers that answer (up to 800 ms) and lists them. Asked again with "Look
 * again" (a server started after the page opened): focus then goes to the first one found.
 */
async function lookForServers(again = false) {
  if (again && page.local == null) return; // still looking
  const look = ++page.look;
  page.again = again;
  page.local = null;
  renderFound();
  const local = await call('local_servers');
  if (look !== page.look) return; // the page was opened again meanwhile
  page.local = local;
  renderFound();
  listModels();
  // From Look again (still focused: the user has not moved on), to the first server found.
  const from = document.activeElement;
  if (again && local.length > 0 && (from === $('#found-again') || from === document.body)) {
    $(`#found-list button[data-provider="${CSS.escape(local[0].provider)}"]`)?.focus();
  }
}

/** Whether a task can run now; when not, why (for the first-run page). */
export async function readiness() {
  return (await call('settings_overview')).readiness;
}

/** Wires the page's controls, once. */
export function initSettings() {
  const protocols = $('#custom-protocol');
  protocols.replaceChildren(...PROTOCOLS.map(([value, text]) => h('option', { value, text })));
  $('#provider-select').addEventListener('change', showProvider);
  $('#test-connection').addEventListener('click', testConnection);
  $('#model-form').addEventListener('submit', useModel);
  $('#settings-close').addEventListener('click', close);
  $('#found-again').addEventListener('click', () =>
    lookForServers(true).catch((e) => toast(messageOf(e), { error: true })));
  initMcp();
  initProject();
  initApp();
  initModels();
}
