// Tool panels: one per tool call, found by its call id wherever it is in the view. A panel is
// filled from live events (arguments, progress, the finish) and from the stored tool_result,
// which is the complete answer and wins over the event's preview.

import { call, messageOf } from '../api.js';
import { h } from '../dom.js';
import { visible } from '../format.js';
import { nextFrame } from './frame.js';
import { resultView } from './results.js';

const MAX_LIVE_OUTPUT = 64 * 1024;

let taskId = 0;
const panels = new Map(); // call id → ToolPanel
const waiting = new Map(); // call id → stored tool_result part whose call is not on screen yet
const running = new Set(); // ids of calls said to run whose call is not on screen yet

/** The task whose panels these are (a sub-agent's work is asked for by its call). */
export function initTools(id) {
  taskId = id;
}

/** The panel of a call, created on first use. */
export function panelFor(callId, name) {
  let panel = panels.get(callId);
  if (panel) return panel;
  panel = new ToolPanel(callId, name);
  panels.set(callId, panel);
  const result = waiting.get(callId);
  if (result) {
    waiting.delete(callId);
    panel.setStored(result);
  }
  if (running.delete(callId)) panel.start();
  return panel;
}

export const findPanel = (callId) => panels.get(callId);

/**
 * A call was handed to its tool (`toolRunning`): its panel says it runs, now or when the call
 * comes on screen — the stored answer and the run's events reach the window by different routes.
 */
export function startCall(callId) {
  const panel = panels.get(callId);
  if (panel) panel.start();
  else running.add(callId);
}

/** Applies a stored tool_result part to its panel, now or when the panel appears. */
export function applyToolResult(part) {
  const panel = panels.get(part.call_id);
  if (panel) panel.setStored(part);
  else waiting.set(part.call_id, part);
}

/** The run ended: calls still marked running wait for their stored results. */
export function settleRunning() {
  running.clear();
  for (const panel of panels.values()) if (panel.state === 'running') panel.setState('pending');
}

/**
 * The run another process had going ended without finishing (it was killed or crashed): calls
 * shown without a result may or may not have taken effect.
 */
export function interruptUnfinished() {
  for (const panel of panels.values()) {
    if (!panel.finishedBy && (panel.state === 'running' || panel.state === 'pending')) panel.interrupt();
  }
}

/**
 * Applies where the latest answer's calls got to (`task_view`'s `calls`) to panels still waiting:
 * a finished call shows its result; a call that ran shows it runs, or — when the task was
 * interrupted (a crash or a quit) — that it may or may not have taken effect.
 */
export function applyCallStates(calls, interrupted) {
  for (const call of calls) {
    const panel = panels.get(call.callId);
    if (!panel || panel.finishedBy) continue;
    if (call.state === 'finished') panel.setStored(call.result);
    else if (call.state === 'running') interrupted ? panel.interrupt() : panel.start();
  }
}

export function resetTools() {
  for (const panel of panels.values()) panel.stopTimer();
  panels.clear();
  waiting.clear();
  running.clear();
}

class ToolPanel {
  constructor(callId, name) {
    this.args = '';
    this.argsStored = false; // set from the stored call (whole), not from streamed deltas
    this.output = ''; // live output shown
    this.incoming = ''; // live output not yet shown
    this.finishedBy = null; // 'event' | 'store'
    this.timer = 0;
    this.nameEl = h('span', { class: 'tool-name', text: name });
    this.summaryEl = h('span', { class: 'tool-summary' });
    this.elapsedEl = h('span', { class: 'tool-elapsed', hidden: true });
    this.stopButton = h('button', { type: 'button', class: 'tool-stop button small', text: 'Stop', title: 'Stop the task', hidden: true });
    this.body = h('div', { class: 'tool-body' });
    this.el = h('section', { class: 'tool-panel', dataset: { callId, tool: name, state: 'pending' }, 'aria-label': `Tool call: ${name}` },
      h('header', { class: 'tool-header' }, this.nameEl, this.summaryEl, this.elapsedEl, this.stopButton),
      this.body);
    this.state = 'pending';
    this.flushOutput = () => this.showOutput();
  }

  setState(state) {
    this.state = state;
    this.el.dataset.state = state;
    this.stopButton.hidden = state !== 'running';
    if (state !== 'running') this.stopTimer();
  }

  /** The call as stored: its name and complete arguments. */
  setCall(name, args) {
    this.nameEl.textContent = name;
    this.el.dataset.tool = name;
    this.args = args;
    this.argsStored = true;
    this.summaryEl.textContent = summarize(name, args);
  }

  appendArgs(delta) {
    // The stored call came first: its arguments are whole already.
    if (this.argsStored) return;
    this.args += delta;
    this.summaryEl.textContent = summarize(this.el.dataset.tool, this.args);
  }

  start() {
    if (this.finishedBy) return;
    this.setState('running');
    const started = Date.now();
    this.elapsedEl.hidden = false;
    this.elapsedEl.textContent = '0 s';
    this.stopTimer();
    this.timer = setInterval(() => {
      this.elapsedEl.textContent = `${Math.round((Date.now() - started) / 1000)} s`;
    }, 1000);
  }

  /** Cut short by a crash or a quit: nothing runs it, and it may have taken effect. */
  interrupt() {
    this.setState('interrupted');
    this.body.replaceChildren(h('p', { class: 'tool-interrupted',
      text: 'Interrupted: Codewright stopped while this ran, so it may or may not have taken effect. Send a message to continue; the agent is told the same.' }));
  }

  stopTimer() {
    clearInterval(this.timer);
    this.timer = 0;
  }

  appendOutput(text) {
    if (this.finishedBy) return;
    // Bounded while no frame comes to show it (a hidden or minimized window).
    this.incoming = (this.incoming + text).slice(-MAX_LIVE_OUTPUT);
    nextFrame(this.flushOutput);
  }

  showOutput() {
    if (this.finishedBy || !this.incoming) return;
    let pre = this.body.querySelector('.tool-output');
    if (!pre) {
      // A sub-agent's progress is what it writes and a line per call; any other, a terminal's.
      const live = this.el.dataset.tool === 'agent' ? 'subagent-live' : 'terminal';
      pre = h('pre', { class: `tool-output ${live}` });
      this.body.replaceChildren(pre);
    }
    const follow = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
    this.output += this.incoming;
    if (this.output.length > MAX_LIVE_OUTPUT) {
      // Cut to half, from a line's start: the whole text is laid out again only once in a while.
      const kept = this.output.slice(-MAX_LIVE_OUTPUT / 2);
      const line = kept.indexOf('\n');
      this.output = line >= 0 && line < kept.length - 1 ? kept.slice(line + 1) : kept;
      pre.textContent = this.output;
    } else {
      pre.append(this.incoming);
    }
    this.incoming = '';
    if (follow) pre.scrollTop = pre.scrollHeight;
  }

  /** The `toolFinished` event: a preview of the result, unless the stored one is already here. */
  finishFromEvent({ isError, preview, detail }) {
    if (this.finishedBy === 'store') return;
    this.finish('event', { isError, text: preview, detail });
  }

  /** The stored tool_result part. */
  setStored(part) {
    const text = part.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n');
    const images = part.content.filter((c) => c.type === 'image');
    this.finish('store', { isError: Boolean(part.is_error), text, images, detail: part.detail });
  }

  finish(source, result) {
    this.finishedBy = source;
    this.incoming = '';
    this.setState(result.isError ? 'error' : 'done');
    this.el.classList.toggle('error', result.isError);
    this.body.replaceChildren(resultView(result));
    if (this.el.dataset.tool === 'agent') this.body.append(subAgentWork(this.el.dataset.callId));
  }
}

/** "What the sub-agent did": its steps, read from its own task when first opened. */
function subAgentWork(callId) {
  const steps = h('div', { class: 'subagent-steps' });
  const details = h('details', { class: 'subagent-work' }, h('summary', { text: 'What the sub-agent did' }), steps);
  details.addEventListener('toggle', async () => {
    if (!details.open) return;
    steps.replaceChildren(h('p', { class: 'muted', text: 'Loading…' }));
    try {
      const work = await call('sub_agent_work', { taskId, callId });
      steps.replaceChildren(...(work ? workSteps(work) : [h('p', { class: 'muted', text: 'This call started no sub-agent.' })]));
    } catch (e) {
      steps.replaceChildren(h('p', { class: 'form-error', role: 'alert', text: messageOf(e) }));
    }
  });
  return details;
}

/** A sub-agent's conversation as steps: its job, what it said, each call with its result's first line. */
function workSteps({ agent, messages }) {
  const results = new Map();
  for (const m of messages) for (const p of m.parts) if (p.type === 'tool_result') results.set(p.call_id, p);
  const out = [];
  for (const m of messages) {
    if (m.role === 'user') {
      const job = m.parts.filter((p) => p.type === 'text').map((p) => p.text).join('\n').trim();
      if (job) out.push(h('p', { class: 'subagent-job' }, h('strong', { text: `The ${agent}’s job: ` }), job));
    } else if (m.role === 'assistant') {
      for (const p of m.parts) {
        if (p.type === 'text' && p.text.trim()) out.push(h('p', { class: 'subagent-text', text: p.text.trim() }));
        if (p.type !== 'tool_call') continue;
        const result = results.get(p.id);
        const first = result ? oneLine(result.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n')) : '';
        out.push(h('p', { class: result?.is_error ? 'subagent-call error' : 'subagent-call' },
          h('span', { class: 'tool-name', text: p.name }), ' ',
          h('span', { class: 'tool-summary', text: summarize(p.name, p.arguments) }),
          first ? h('span', { class: 'muted', text: ` → ${first}` }) : null));
      }
    }
  }
  return out;
}

// Which argument says what a call does, by tool.
const SUMMARY_KEYS = {
  read_file: 'path', edit_file: 'path', write_file: 'path', list_dir: 'path',
  bash: 'command', grep: 'pattern', glob: 'pattern', web_fetch: 'url', ask_user: 'question',
};

/** One line saying what a call does. `args` is JSON, possibly cut short while it streams. */
function summarize(name, args) {
  const parsed = parseObject(args);
  const key = SUMMARY_KEYS[name];
  if (parsed) {
    if (name === 'todo_write' && Array.isArray(parsed.todos)) return `${parsed.todos.length} items`;
    // A job handed to a sub-agent: who does it, and what.
    if (name === 'agent' && typeof parsed.agent === 'string') return `${parsed.agent}: ${oneLine(parsed.prompt)}`;
    if (key) return oneLine(parsed[key]);
    if (typeof parsed.id === 'number') return `process ${parsed.id}`;
    return oneLine(Object.values(parsed).find((v) => typeof v === 'string'));
  }
  return key ? oneLine(partialString(args, key)) : '';
}

function parseObject(text) {
  try {
    const value = JSON.parse(text);
    return value && typeof value === 'object' && !Array.isArray(value) ? value : null;
  } catch {
    return null;
  }
}

// The value of a string field in JSON that is still streaming: `{"path": "src/ma` → `src/ma`.
function partialString(text, key) {
  const match = new RegExp(`"${key}"\\s*:\\s*"((?:[^"\\\\]|\\\\.)*)`).exec(text);
  if (!match) return '';
  const raw = match[1].replace(/\\$/, '');
  try {
    return JSON.parse(`"${raw}"`);
  } catch {
    return raw; // a cut escape (\u00): shown as written
  }
}

// The first line, escaped (`visible`), marked "…" when more follows: a panel's one line never
// passes for the whole of a command or a name.
function oneLine(value) {
  if (typeof value !== 'string') return '';
  const [line, ...more] = visible(value.trim()).split('\n');
  return line.length > 200 ? `${line.slice(0, 200)}…` : more.length ? `${line} …` : line;
}
