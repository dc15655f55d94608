// The settings page's project part: for the chosen project, what the agent is told about it
// (context, rules), the mode of a task without one of its own, the sandbox for commands and web
// access to local addresses; then its approval rules — what the agent may do without asking
// (allow), must ask for (ask) or may never do (deny), by tool and pattern ("Always allow" in an
// approval saves one). The backend checks each change whole and names the wrong field.

import { call, messageOf } from './api.js';
import { $, h, toast } from './dom.js';
import { ago, when } from './format.js';

const ACTIONS = { allow: 'Allow', ask: 'Ask', deny: 'Deny' };
const page = { projects: [], project: null, asked: 0 };

/** Reads the projects and the chosen one's settings and rules again. */
export async function refreshProject() {
  page.projects = await call('list_projects');
  const select = $('#project-select');
  const chosen = page.project ?? Number(select.value);
  select.replaceChildren(...page.projects.map((p) => h('option', { value: String(p.id), text: p.name })));
  page.project = page.projects.some((p) => p.id === chosen) ? chosen : (page.projects[0]?.id ?? null);
  if (page.project != null) select.value = String(page.project);
  $('#project-body').hidden = page.project == null;
  $('#project-none').hidden = page.project != null;
  await load();
}

async function load() {
  if (page.project == null) return;
  const asked = ++page.asked;
  const [settings, { rules, tools }] = await Promise.all([
    call('project_settings', { projectId: page.project }),
    call('project_rules', { projectId: page.project }),
  ]);
  if (asked !== page.asked) return; // another project was chosen meanwhile
  showSettings(settings);
  $('#rule-tools').replaceChildren(h('option', { value: '*' }), ...tools.map((t) => h('option', { value: t })));
  $('#rules-empty').hidden = rules.length > 0;
  $('#rules-list').replaceChildren(...rules.map((r) =>
    h('li', { class: 'rule', dataset: { id: r.id } },
      h('span', { class: `badge rule-${r.rule.action}`, text: ACTIONS[r.rule.action] ?? r.rule.action }),
      h('code', { class: 'rule-tool', text: r.rule.tool }),
      h('code', { class: 'rule-pattern', title: r.rule.pattern, text: r.rule.pattern || 'anything' }),
      h('span', { class: 'rule-time muted', title: when(r.createdAt), text: ago(r.createdAt) }),
      h('button', {
        type: 'button', class: 'button small danger-outline', text: 'Remove',
        'aria-label': `Remove the rule ${ACTIONS[r.rule.action]} ${r.rule.tool} ${r.rule.pattern}`.trim(),
        onclick: () => remove(r.id),
      }))));
}

async function remove(id) {
  try {
    await call('remove_rule', { id });
  } catch (e) {
    toast(messageOf(e), { error: true });
  }
  await load();
}

function showSettings(settings) {
  $('#project-context').value = settings.context;
  $('#project-rules').value = settings.rules;
  $('#project-mode').value = settings.defaultMode;
  $('#project-sandbox').checked = settings.sandbox;
  $('#project-network').checked = settings.allowPrivateNetwork;
  $('#project-trusted').checked = settings.trusted;
  $('#project-worktrees').checked = settings.worktrees;
  $('#project-set-up').value = settings.worktreeSetUp;
  $('#project-saved').hidden = true;
}

async function saveSettings(event) {
  event.preventDefault();
  const button = $('#project-save');
  if (button.disabled || page.project == null) return;
  clearErrors();
  button.disabled = true;
  try {
    await call('save_project_settings', {
      projectId: page.project,
      form: {
        context: $('#project-context').value,
        rules: $('#project-rules').value,
        defaultMode: $('#project-mode').value,
        sandbox: $('#project-sandbox').checked,
        allowPrivateNetwork: $('#project-network').checked,
        trusted: $('#project-trusted').checked,
        worktrees: $('#project-worktrees').checked,
        worktreeSetUp: $('#project-set-up').value,
      },
    });
    $('#project-saved').hidden = false;
  } catch (e) {
    showError('#project-form', e);
  } finally {
    button.disabled = false;
  }
}

/** Shows an error next to the field it names (`data-error-in` of the form), else as a notice. */
function showError(form, e) {
  const error = $(`${form} [data-error-in="${e?.field}"]`);
  if (!error) return toast(messageOf(e), { error: true });
  error.textContent = messageOf(e);
  error.hidden = false;
  const input = $(`${form} [name="${e.field}"]`);
  input?.setAttribute('aria-invalid', 'true');
  input?.focus();
}

function clearErrors() {
  for (const el of document.querySelectorAll('#project-body [data-error-in]')) el.hidden = true;
  for (const el of document.querySelectorAll('#project-body [aria-invalid]')) el.removeAttribute('aria-invalid');
}

async function add(event) {
  event.preventDefault();
  const button = $('#rule-add');
  if (button.disabled || page.project == null) return;
  clearErrors();
  button.disabled = true;
  try {
    await call('add_rule', {
      projectId: page.project,
      rule: { tool: $('#rule-tool').value, pattern: $('#rule-pattern').value, action: $('#rule-action').value },
    });
    $('#rule-form').reset();
    await load();
  } catch (e) {
    showError('#rule-form', e);
  } finally {
    button.disabled = false;
  }
}

/** Wires the section's controls, once. */
export function initProject() {
  $('#project-select').addEventListener('change', (e) => {
    page.project = Number(e.target.value);
    clearErrors();
    load().catch((err) => toast(messageOf(err), { error: true }));
  });
  $('#rule-form').addEventListener('submit', add);
  $('#project-form').addEventListener('submit', saveSettings);
  $('#project-form').addEventListener('input', () => { $('#project-saved').hidden = true; });
}
