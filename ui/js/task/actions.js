// What a slash command that is an action does in the task window (the backend resolved it; see
// host::commands): lists (/help, /skills, /mcp), the agents (/agent, to choose one) and the
// memory (/memory, editable) in a dialog,
// /cost as a notice, /compact and /undo through
// their own commands, /new and /clear in a new task window. /model and /mode belong to the
// composer, which owns those controls.

import { call, messageOf } from '../api.js';
import { $, h } from '../dom.js';
import { ask } from '../dialogs.js';
import { dollars, tokens } from '../format.js';
import { undoLastTurn } from './checkpoints.js';

const view = { taskId: 0, notice: () => {}, error: () => {} };

/** `notice(text)` says what an action did in the conversation; `error(e)` shows a failure where the command was typed. */
export function initActions(taskId, { notice, error }) {
  Object.assign(view, { taskId, notice, error });
}

/** Performs `action` (`args` are what followed the command's name); false when it failed (the error is shown). */
export async function runAction(action, args = '') {
  try {
    await (ACTIONS[action] ?? (() => view.notice(`/${action} cannot be used in this window.`)))(args);
    return true;
  } catch (e) {
    view.error(e);
    return false;
  }
}

const ACTIONS = {
  agent: chooseAgent,
  help: showHelp,
  skills: showSkills,
  mcp: showServers,
  memory: showMemory,
  cost: showCost,
  compact: async () => {
    view.notice('Compacting the conversation…');
    const compacted = await call('compact_task', { taskId: view.taskId });
    if (!compacted) view.notice('Nothing to compact: the conversation is still short.');
  },
  undo: undoLastTurn,
  new: () => call('new_sibling_task', { taskId: view.taskId }),
  clear: () => call('new_sibling_task', { taskId: view.taskId }),
};

function dialog() {
  return $('#command-dialog');
}

async function showHelp() {
  const { commands, broken } = await call('task_commands', { taskId: view.taskId });
  await ask(dialog(), {
    title: 'Commands',
    body: [
      h('p', { class: 'dialog-message', text: 'Type / in the message box to pick one. Custom commands are Markdown files in .codewright/commands or .claude/commands.' }),
      h('dl', { class: 'command-help' }, commands.flatMap((c) => [
        h('dt', {}, h('code', { text: `/${c.name}${c.argumentHint ? ` ${c.argumentHint}` : ''}` })),
        h('dd', { text: c.origin === 'built-in' ? c.description : `${c.description} (${c.origin})` }),
      ])),
      brokenList(broken),
    ],
  });
}

function brokenList(broken) {
  if (!broken.length) return null;
  return h('div', { class: 'broken-list' },
    h('h3', { text: 'Not loaded' }),
    h('ul', {}, broken.map((b) => h('li', {},
      h('span', { class: 'file-path', text: b.path }),
      h('span', { class: 'muted', text: ` — ${b.reason}` })))));
}

async function showSkills() {
  const listed = await call('task_skills', { taskId: view.taskId });
  const error = h('p', { class: 'form-error', role: 'alert', hidden: true });
  const rows = listed.skills.map((skill) => {
    const box = h('input', { type: 'checkbox', checked: skill.on, id: `skill-${skill.name}` });
    box.addEventListener('change', async () => {
      box.disabled = true;
      error.hidden = true;
      try {
        await call('switch_skill', { taskId: view.taskId, name: skill.name, on: box.checked });
      } catch (e) {
        box.checked = !box.checked;
        error.textContent = messageOf(e);
        error.hidden = false;
      } finally {
        box.disabled = false;
      }
    });
    return h('li', { class: 'skill-row' },
      box,
      h('label', { for: box.id },
        h('span', { class: 'skill-name', text: skill.name }),
        h('span', { class: 'muted', text: ` · ${SOURCES[skill.source] ?? skill.source}` }),
        h('span', { class: 'skill-description', text: skill.description })),
      rankSelect(skill, error));
  });
  await ask(dialog(), {
    title: 'Skills',
    body: [
      h('p', { class: 'dialog-message', text: listed.skills.length
        ? 'The agent sees each skill’s name and description and loads one when the work matches it; when several match, it prefers the higher priority. Switch off the ones this task should not use; it applies from the next message.'
        : 'No skills are installed. A skill is a folder with a SKILL.md in .codewright/skills or .claude/skills, in the project or your home folder.' }),
      rows.length ? h('ul', { class: 'skill-list' }, rows) : null,
      brokenList(listed.broken),
      error,
    ],
  });
}

/** `/agent NAME` makes NAME the task's agent; `/agent` alone lists them to choose from. */
async function chooseAgent(name) {
  if (name) {
    const listed = await call('choose_agent', { taskId: view.taskId, name });
    view.notice(agentNotice(listed));
    return;
  }
  const listed = await call('task_agents', { taskId: view.taskId });
  const error = h('p', { class: 'form-error', role: 'alert', hidden: true });
  const rows = listed.agents.map((agent) => {
    const radio = h('input', { type: 'radio', name: 'agent', value: agent.name, checked: agent.name === listed.current, id: `agent-${agent.name}` });
    radio.addEventListener('change', async () => {
      error.hidden = true;
      try {
        view.notice(agentNotice(await call('choose_agent', { taskId: view.taskId, name: agent.name })));
      } catch (e) {
        error.textContent = messageOf(e);
        error.hidden = false;
      }
    });
    const tools = agent.tools ? `${agent.tools.length} tools` : 'every tool';
    return h('li', { class: 'skill-row' },
      radio,
      h('label', { for: radio.id },
        h('span', { class: 'skill-name', text: agent.name }),
        h('span', { class: 'muted', text: ` · ${agent.source ? SOURCES[agent.source] ?? agent.source : 'built in'} · ${tools}${agent.model ? ` · ${agent.model}` : ''}` }),
        h('span', { class: 'skill-description', text: agent.description })));
  });
  await ask(dialog(), {
    title: 'Agents',
    body: [
      h('p', { class: 'dialog-message', text: 'Who works on this task, from the next message: each agent has its own instructions and the tools it may use. Your own are Markdown files in .codewright/agents or .claude/agents.' }),
      h('ul', { class: 'skill-list', role: 'radiogroup', 'aria-label': 'Agents' }, rows),
      brokenList(listed.broken),
      error,
    ],
  });
}

function agentNotice({ agents, current }) {
  const agent = agents.find((a) => a.name === current);
  return `The ${current} agent works on this task from the next message${agent ? `: ${agent.description}` : ''}.`;
}

/** A skill's priority for the task: higher is listed first and preferred when several fit. */
function rankSelect(skill, error) {
  const ranks = [[1, 'High'], [0, 'Normal'], [-1, 'Low']];
  if (!ranks.some(([n]) => n === skill.priority)) ranks.push([skill.priority, String(skill.priority)]);
  const select = h('select', { class: 'skill-rank', id: `skill-rank-${skill.name}`, 'aria-label': `Priority of ${skill.name}` },
    ranks.map(([n, label]) => h('option', { value: String(n), selected: n === skill.priority, text: label })));
  select.addEventListener('change', async () => {
    select.disabled = true;
    error.hidden = true;
    try {
      await call('rank_skill', { taskId: view.taskId, name: skill.name, priority: Number(select.value) });
      skill.priority = Number(select.value);
    } catch (e) {
      select.value = String(skill.priority);
      error.textContent = messageOf(e);
      error.hidden = false;
    } finally {
      select.disabled = false;
    }
  });
  return select;
}

const SOURCES = {
  project: 'project',
  projectClaude: 'project (.claude)',
  user: 'yours',
  userClaude: 'yours (.claude)',
};

async function showServers() {
  const servers = await call('task_mcp_servers', { taskId: view.taskId });
  await ask(dialog(), {
    title: 'MCP servers',
    body: [
      h('p', { class: 'dialog-message', text: servers.length
        ? 'The servers this task’s runs use. Add, remove or set them up in the main window’s Settings → MCP servers.'
        : 'No MCP servers are set up. Add one in the main window’s Settings → MCP servers.' }),
      servers.length ? h('ul', { class: 'server-list' }, servers.map((s) => h('li', {},
        h('span', { class: 'skill-name', text: s.name }),
        h('span', { class: 'muted', text: ` · ${s.transport} · ${s.enabled ? 'on' : 'off'}` })))) : null,
    ],
  });
}

async function showCost() {
  const task = await call('get_task', { id: view.taskId });
  const cost = task.cost > 0 ? dollars(task.cost) : 'no cost counted (the model has no price set, or none was reported yet)';
  view.notice(`This task so far: ${tokens(task.inputTokens)} tokens in, ${tokens(task.outputTokens)} out, ${cost}.`);
}

const MEMORY_LABELS = { project: 'Project memory', user: 'Your memory (every project)' };

async function showMemory() {
  const files = await call('task_memory', { taskId: view.taskId });
  const boxes = files.map((file) => {
    const id = `memory-${file.scope}`;
    const box = h('textarea', { id, rows: 7, spellcheck: 'false', value: file.text });
    box.value = file.text;
    return { file, box, field: h('label', { class: 'field', for: id },
      h('span', { class: 'field-label', text: MEMORY_LABELS[file.scope] ?? file.scope }),
      box,
      h('span', { class: 'field-hint file-path', text: file.path })) };
  });
  const saved = await ask(dialog(), {
    title: 'Memory',
    body: [
      h('p', { class: 'dialog-message', text: 'Notes the agent reads at the start of every message and may change (it asks first). Edit them here; they apply from the next message.' }),
      ...boxes.map((b) => b.field),
    ],
    confirm: {
      label: 'Save',
      action: async () => {
        for (const { file, box } of boxes) {
          if (box.value !== file.text) await call('save_memory', { taskId: view.taskId, scope: file.scope, text: box.value });
        }
      },
    },
  });
  if (saved) view.notice('Memory saved.');
}
