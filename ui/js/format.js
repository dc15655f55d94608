// Formatting of dates and numbers for display.

const relative = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' });
const absolute = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });

/** "just now", "5 minutes ago", "yesterday", or a date for anything older than a week. */
export function ago(ms, now = Date.now()) {
  const seconds = Math.round((ms - now) / 1000);
  const abs = Math.abs(seconds);
  if (abs < 45) return 'just now';
  if (abs < 3600) return relative.format(Math.round(seconds / 60), 'minute');
  if (abs < 86400) return relative.format(Math.round(seconds / 3600), 'hour');
  if (abs < 7 * 86400) return relative.format(Math.round(seconds / 86400), 'day');
  return absolute.format(new Date(ms));
}

/** Full date and time, for tooltips. */
export const when = (ms) => absolute.format(new Date(ms));

/** A task's status in words, the same on every screen (the statuses: `TASK_STATUSES`). */
const STATUS_WORDS = {
  idle: 'Ready',
  queued: 'Queued',
  running: 'Running',
  awaitingApproval: 'Needs approval',
  paused: 'Paused',
  done: 'Done',
  notDone: 'Not done',
  failed: 'Failed',
  interrupted: 'Interrupted',
};

/** Human name of a task status. */
export function statusLabel(status) {
  return STATUS_WORDS[status] ?? status;
}

/** What the agent is doing in words, while it runs in this app (the states: `AGENT_STATES`). */
const STATE_WORDS = {
  queued: 'Queued',
  startingServers: 'Starting MCP servers',
  streaming: 'Streaming',
  awaitingApproval: 'Needs approval',
  runningTools: 'Running tools',
  compacting: 'Compacting',
  idle: 'Ready',
};

/** Human name of where a running agent is. */
export function stateLabel(state) {
  return STATE_WORDS[state] ?? state;
}

const short = (x, digits) => x.toFixed(digits).replace(/\.0$/, '');

/** Token counts in short: 950, 12.3k, 150k, 1.2M. */
export function tokens(n) {
  if (n < 1000) return String(n);
  if (n < 999_500) return `${short(n / 1000, n < 99_950 ? 1 : 0)}k`;
  return `${short(n / 1_000_000, 1)}M`;
}

/** US dollars: four decimals below a dollar, where prices of single requests live. */
export const dollars = (x) => `$${x.toFixed(x < 1 ? 4 : 2)}`;

/** A byte count: 512 B, 3.4 KB, 1.2 MB. */
export function bytes(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

/** A duration: 340 ms, 2.3 s, 4 min 5 s. */
export function duration(ms) {
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const seconds = Math.round(ms / 1000);
  return `${Math.floor(seconds / 60)} min ${seconds % 60} s`;
}

const clockFormat = new Intl.DateTimeFormat(undefined, { timeStyle: 'short' });
const dayFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'short', timeStyle: 'short' });

/** "14:02" for today, a short date and time otherwise. */
export function clock(ms, now = Date.now()) {
  const today = new Date(now).toDateString() === new Date(ms).toDateString();
  return (today ? clockFormat : dayFormat).format(new Date(ms));
}

// Characters that change how the text around them reads, or are invisible — the same set as the
// engine's `codewright_protocol::visible::is_hidden`: C0 controls but new line and tab, DEL, C1
// controls, bidi embeddings, overrides, isolates and marks, zero-width characters, line and
// paragraph separators, the byte-order mark, variation selectors, tag characters and blank fillers.
const HIDDEN = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180e\u3164\uffa0\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufe00-\ufe0f\ufeff\ufff9-\ufffb\u{e0000}-\u{e007f}\u{e0100}-\u{e01ef}]/gu;

/** Whether `text` holds a character `visible` escapes. */
export const hasHidden = (text) => typeof text === 'string' && text.search(HIDDEN) >= 0;

/**
 * `text` from a model, a tool or a repository as a person deciding on it must read it: every
 * control or invisible character written as an escape (`\r`, `\x1b`, `\u{202e}`), so a file name
 * with a bidi override or a command with a carriage return cannot pass for another.
 */
export function visible(text) {
  if (typeof text !== 'string' || !hasHidden(text)) return text;
  return text.replace(HIDDEN, (c) => {
    const code = c.codePointAt(0);
    if (c === '\r') return '\\r';
    if (code === 0) return '\\0';
    if (code < 0x80) return `\\x${code.toString(16).padStart(2, '0')}`;
    return `\\u{${code.toString(16)}}`;
  });
}

/** What an approval says when what it shows held such characters (the engine's words). */
export const HIDDEN_WARNING = 'Careful: this holds control or invisible characters, which can make text read as something else; each is shown as its escape (\\r, \\x1b, \\u{…}).';
