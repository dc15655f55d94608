// The settings page's MCP servers: the configured ones with their live state (each is connected
// once when the page opens: its tools and prompts, or why it failed), on/off, retry and remove;
// a form to add one (a command, or a URL), and an import of a Claude Desktop / Cursor / .mcp.json
// file. A view: the form is checked whole by the backend, which names the wrong field; secret
// values go to the keyring and only their names come back.

import { call, messageOf } from './api.js';
import { confirmDialog, formDialog } from './dialogs.js';
import { $, h, morph, toast } from './dom.js';

const page = {
  servers: [],
  projects: new Map(), // id → name
  checks: new Map(), // server name → its last check, or 'checking'
  asked: new Map(), // server name → number of the check running; an older answer is dropped
  opened: new Set(), // `name:what` of each server's line the user has opened (its tools, its failure)
};

/** Reads the servers again and connects to each enabled one. */
export async function refreshMcp() {
  const [servers, projects] = await Promise.all([call('mcp_servers'), call('list_projects')]);
  page.servers = servers;
  page.projects = new Map(projects.map((p) => [p.id, p.name]));
  page.checks = new Map([...page.checks].filter(([name]) => servers.some((s) => s.name === name)));
  page.opened = new Set([...page.opened].filter((line) => servers.some((s) => line.startsWith(`${s.name}:`))));
  renderScopes();
  render();
  for (const server of servers) if (server.enabled) check(server.name);
}

async function check(name) {
  const asked = (page.asked.get(name) ?? 0) + 1;
  page.asked.set(name, asked);
  page.checks.set(name, 'checking');
  showCheck(name);
  let result;
  try {
    result = await call('check_mcp_server', { name });
  } catch (e) {
    result = { state: 'failed', error: messageOf(e) };
  }
  if (page.asked.get(name) !== asked) return;
  page.checks.set(name, result);
  showCheck(name);
}

/**
 * Shows the state of `name`'s check in its row, in place: the row keeps its elements (a click
 * pressed on one of its buttons as the check ends still lands) and its height.
 */
function showCheck(name) {
  const server = page.servers.find((s) => s.name === name);
  const old = [...$('#mcp-list').children].find((li) => li.dataset.name === name);
  if (server && old) morph(old, row(server));
}

function statusOf(server) {
  if (!server.enabled) return { text: 'Off: its tools are not offered to the agent.', kind: 'off' };
  const c = page.checks.get(server.name);
  if (!c || c === 'checking') return { text: 'Connecting…', kind: 'checking' };
  // One line: the whole of it is under the row's “What went wrong”.
  if (c.state === 'failed') return { text: `Failed: ${c.error.trim().split('\n')[0]}`, kind: 'failed' };
  const tools = `${c.tools.length} tool${c.tools.length === 1 ? '' : 's'}`;
  return { text: `Connected · ${tools} · ${c.server} ${c.version}`.trim(), kind: 'connected' };
}

/** Environment and headers as `NAME=value`; a secret's value is never here, only its place. */
function settingsText(server) {
  const pairs = [...Object.entries(server.env), ...Object.entries(server.headers)].map(([k, v]) => `${k}=${v}`);
  const secrets = server.secrets.map((k) => `${k}=•••••• (in the keyring)`);
  const timeout = server.callTimeoutSecs == null ? [] : [`calls wait up to ${server.callTimeoutSecs} s`];
  return [...pairs, ...secrets, ...timeout].join('   ');
}

function render() {
  $('#mcp-empty').hidden = page.servers.length > 0;
  $('#mcp-list').replaceChildren(...page.servers.map(row));
}

/** A server's row: what it is, its state on one line, its tools (or what becomes of them) on the next. */
function row(server) {
  const status = statusOf(server);
  const last = page.checks.get(server.name);
  const scope = server.project == null ? 'Every project' : (page.projects.get(server.project) ?? `Project ${server.project}`);
  const extra = settingsText(server);
  return h('li', { class: 'mcp-server', dataset: { name: server.name, state: status.kind } },
    h('div', { class: 'mcp-head' },
      h('span', { class: 'mcp-name', text: server.name }),
      h('span', { class: 'badge', text: scope }),
      h('label', { class: 'mcp-toggle' },
        h('input', {
          type: 'checkbox',
          checked: server.enabled,
          'aria-label': `Use ${server.name}`,
          onchange: (e) => setEnabled(server.name, e.target.checked),
        }),
        h('span', { text: 'On' }))),
    h('code', { class: 'mcp-target', title: server.target, text: `${server.transport}: ${server.target}` }),
    extra ? h('p', { class: 'mcp-extra muted', text: extra }) : null,
    h('p', { class: `mcp-status ${status.kind}`, role: 'status', title: status.text, text: status.text }),
    server.enabled ? toolsLine(server, status, last) : null,
    h('div', { class: 'mcp-actions' },
      server.enabled
        ? h('button', { type: 'button', class: 'button small', text: status.kind === 'failed' ? 'Retry' : 'Check again', 'aria-label': `Connect to ${server.name} again`, disabled: status.kind === 'checking', onclick: () => check(server.name) })
        : null,
      h('button', { type: 'button', class: 'button small', text: 'Timeout…', 'aria-label': `Call timeout of ${server.name}`, onclick: () => changeTimeout(server) }),
      h('button', { type: 'button', class: 'button small danger-outline', text: 'Remove', 'aria-label': `Remove ${server.name}`, onclick: () => remove(server.name) })));
}

/**
 * The line under an enabled server's state: its tools and prompts once connected, else what
 * becomes of them. Always one line, so a check that ends while the user is further down the
 * page moves nothing under their pointer.
 */
function toolsLine(server, status, last) {
  const opened = (what) => page.opened.has(`${server.name}:${what}`);
  // Kept as the user clicks (a check's result may redraw the row before the toggle event comes).
  const toggled = (what) => (e) => {
    const open = !e.currentTarget.parentElement.open;
    page.opened[open ? 'add' : 'delete'](`${server.name}:${what}`);
  };
  if (status.kind === 'connected' && (last.tools.length || last.prompts.length)) {
    return h('details', { class: 'mcp-tools', dataset: { key: 'tools' }, open: opened('tools') },
      h('summary', { text: `Tools and prompts of ${server.name}`, onclick: toggled('tools') }),
      h('ul', {}, ...last.tools.map((t) =>
        h('li', {}, h('code', { text: t.name }), t.description ? ` — ${t.description}` : '', t.readOnly ? h('span', { class: 'muted', text: ' (reads only)' }) : null))),
      last.prompts.length ? h('p', { class: 'muted', text: `Prompts: ${last.prompts.join(', ')}` }) : null);
  }
  // A failure is said on one line; what the server said, in full, is a click away.
  if (status.kind === 'failed') {
    return h('details', { class: 'mcp-tools', dataset: { key: 'failure' }, open: opened('failure') },
      h('summary', { text: 'What went wrong, in full', onclick: toggled('failure') }),
      h('pre', { class: 'mcp-failure', text: last.error }));
  }
  const text = {
    connected: 'It offers no tools or prompts.',
    checking: 'Its tools are listed once it answers.',
  }[status.kind];
  return h('p', { class: 'mcp-tools-note muted', text });
}

async function setEnabled(name, enabled) {
  try {
    await call('set_mcp_server_enabled', { name, enabled });
  } catch (e) {
    toast(messageOf(e), { error: true });
  }
  await refreshMcp();
}

/** Asks how long a call to `server` may wait for an answer, and saves it. */
function changeTimeout(server) {
  return formDialog({
    title: `Call timeout of ${server.name}`,
    message: 'How long a call to this server may wait for an answer (each progress notice it sends starts the wait again). A slow server — a browser, a build — may need longer. Runs started from now on use it.',
    fields: [{ name: 'seconds', label: 'Seconds (empty: 120)', value: server.callTimeoutSecs == null ? '' : String(server.callTimeoutSecs) }],
    submitLabel: 'Save',
    action: async ({ seconds }) => {
      const saved = await call('set_mcp_call_timeout', { name: server.name, seconds });
      toast(saved.callTimeoutSecs == null
        ? `Calls to ${server.name} wait up to 120 s.`
        : `Calls to ${server.name} wait up to ${saved.callTimeoutSecs} s.`);
      await refreshMcp();
      return saved;
    },
  });
}

async function remove(name) {
  const ok = await confirmDialog({
    title: `Remove the MCP server “${name}”?`,
    message: 'Its tools are no longer offered to the agent, and its secret values leave the keyring.',
    confirmLabel: 'Remove server',
  });
  if (!ok) return;
  try {
    await call('remove_mcp_server', { name });
  } catch (e) {
    toast(messageOf(e), { error: true });
  }
  await refreshMcp();
}

// ---- adding ---------------------------------------------------------------------------------

function renderScopes() {
  const scope = $('#mcp-scope');
  const chosen = scope.value;
  scope.replaceChildren(h('option', { value: '', text: 'Every project' }),
    ...[...page.projects].map(([id, name]) => h('option', { value: String(id), text: `Only ${name}` })));
  scope.value = [...scope.options].some((o) => o.value === chosen) ? chosen : '';
}

function showTransport() {
  const stdio = $('#mcp-transport').value === 'stdio';
  $('#mcp-stdio').hidden = !stdio;
  $('#mcp-url-fields').hidden = stdio;
}

function clearErrors() {
  for (const el of document.querySelectorAll('[data-mcp-error]')) el.hidden = true;
  for (const el of document.querySelectorAll('#mcp-form [aria-invalid]')) el.removeAttribute('aria-invalid');
}

function showForm(open) {
  $('#mcp-form').hidden = !open;
  $('#mcp-add').setAttribute('aria-expanded', String(open));
  if (open) {
    clearErrors();
    showTransport();
    $('#mcp-name').focus();
  }
}

async function add(event) {
  event.preventDefault();
  const save = $('#mcp-save');
  if (save.disabled) return;
  clearErrors();
  const form = new FormData($('#mcp-form'));
  const value = (k) => String(form.get(k) ?? '');
  save.disabled = true;
  save.textContent = 'Adding…';
  try {
    const added = await call('add_mcp_server', {
      form: {
        name: value('name'),
        transport: value('transport'),
        command: value('command'),
        url: value('url'),
        env: value('env'),
        headers: value('headers'),
        project: value('project') ? Number(value('project')) : null,
        callTimeout: value('callTimeout'),
      },
    });
    $('#mcp-form').reset();
    showForm(false);
    toast(`Added ${added.name}. Runs started from now on can use its tools.`);
    await refreshMcp();
  } catch (e) {
    const error = $(`[data-mcp-error="${e?.field}"]`);
    if (!error) return toast(messageOf(e), { error: true });
    error.textContent = messageOf(e);
    error.hidden = false;
    const input = $(`#mcp-form [name="${e.field}"]`);
    input?.setAttribute('aria-invalid', 'true');
    input?.focus();
  } finally {
    save.disabled = false;
    save.textContent = 'Add server';
  }
}

function importFile() {
  return formDialog({
    title: 'Import MCP servers',
    message: 'From a Claude Desktop, Cursor or .mcp.json file: every server in its "mcpServers" is added for every project (one of the same name is replaced).',
    fields: [{ name: 'path', label: 'File', placeholder: '~/.config/Claude/claude_desktop_config.json', browse: 'pick_mcp_config' }],
    submitLabel: 'Import',
    action: async ({ path }) => {
      const report = await call('import_mcp_servers', { path, projectId: null });
      const result = $('#mcp-import-result');
      const added = report.added.length
        ? `Imported ${report.added.length} server${report.added.length === 1 ? '' : 's'}: ${report.added.join(', ')}.`
        : 'No server was imported.';
      const skipped = report.skipped.map((s) => ` Skipped ${s.name}: ${s.why}.`).join('');
      result.textContent = added + skipped;
      result.className = report.skipped.length ? 'test-result error' : 'test-result ok';
      result.hidden = false;
      await refreshMcp();
      return report;
    },
  });
}

/** Wires the section's controls, once. */
export function initMcp() {
  $('#mcp-add').addEventListener('click', () => showForm($('#mcp-form').hidden));
  $('#mcp-cancel').addEventListener('click', () => showForm(false));
  $('#mcp-transport').addEventListener('change', showTransport);
  $('#mcp-form').addEventListener('submit', add);
  $('#mcp-import').addEventListener('click', importFile);
}
