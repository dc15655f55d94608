// The composer's pickers: `@` files and `/` commands. Typing `@` at the start or after white space
// lists the task's files (matched by the backend's `find_files`); typing `/` as the message's
// first character lists the slash commands (`task_commands`, matched here by their names) with
// what each does. The list sits just above the message box; typing filters, the arrows move,
// Enter or Tab picks, Escape closes. Picking writes `@path ` or `/name ` in place of what was
// typed; Enter on a command typed in full that takes nothing after its name runs it at once. The focus stays
// in the textarea (`aria-activedescendant` names the active row), and nothing opens or reacts
// while an IME composition is open.

import { call, messageOf } from '../api.js';
import { h } from '../dom.js';

const DEBOUNCE_MS = 60;
const PAD = 4; // the list's padding (task.css)

const picker = {
  input: null,
  list: null,
  taskId: 0,
  onCommand: () => {},
  kind: 'file', // what is being picked: 'file' (after @) or 'command' (after a leading /)
  commands: null, // the task's commands, read when the command list first opens
  open: false, // a mention is being typed (its first results may still be on their way)
  start: -1, // where its `@` is in the text
  query: '',
  items: [], // the files the list shows: [{ path, indices }]
  active: -1,
  request: 0, // only the newest request's answer is shown
  shown: 0, // the request the list shows the answer of
  timer: 0,
  composing: false,
  holding: false, // the mouse is down on the list's scroll bar
};

/**
 * Watches `textarea` for mentions and commands; its `aria-controls` names the list. `onCommand()`
 * sends the message (a command picked with Enter that needs nothing more). Call once.
 */
export function attachMentions(textarea, { taskId, onCommand }) {
  const list = document.getElementById(textarea.getAttribute('aria-controls'));
  Object.assign(picker, { input: textarea, list, taskId, onCommand });
  textarea.addEventListener('compositionstart', () => { picker.composing = true; });
  textarea.addEventListener('compositionend', () => {
    picker.composing = false;
    sync(true);
  });
  textarea.addEventListener('input', (event) => {
    if (!picker.composing && !event.isComposing) sync(true);
  });
  // The caret moved (keys, mouse): close once it leaves the mention.
  const follow = () => {
    if (picker.open && !picker.composing && document.activeElement === textarea) sync(false);
  };
  document.addEventListener('selectionchange', follow);
  textarea.addEventListener('click', follow);
  textarea.addEventListener('keyup', follow);
  textarea.addEventListener('blur', () => { if (!picker.holding) close(); });
  window.addEventListener('resize', fit);

  list.addEventListener('mousedown', (event) => {
    // The list itself is its padding or scroll bar: let that work, and give the focus back after.
    if (event.target === list) {
      picker.holding = true;
      return;
    }
    event.preventDefault(); // the textarea keeps the focus
    const row = event.target.closest('.mention-option');
    if (row && event.button === 0) pick(Number(row.dataset.index), false);
  });
  document.addEventListener('mouseup', () => {
    if (!picker.holding) return;
    picker.holding = false;
    textarea.focus();
  });
  list.addEventListener('mousemove', (event) => {
    const row = event.target.closest('.mention-option');
    if (row && Number(row.dataset.index) !== picker.active) setActive(Number(row.dataset.index), false);
  });
}

/** Handles a key for the open picker; true when it took the key. Not called during an IME composition. */
export function mentionsHandleKey(event) {
  if (!picker.open || picker.composing || event.isComposing) return false;
  const plain = !(event.shiftKey || event.ctrlKey || event.altKey || event.metaKey);
  const count = picker.items.length;
  switch (event.key) {
    case 'Escape':
      close();
      break;
    case 'ArrowDown':
    case 'ArrowUp':
      if (!count || !plain) return false;
      setActive((picker.active + (event.key === 'ArrowDown' ? 1 : count - 1)) % count, true);
      break;
    case 'Enter':
    case 'Tab':
      if (plain && picker.request !== picker.shown) {
        // The list is for an earlier query (its answer is on the way). A command typed in full
        // is sent as typed (the backend resolves it); a file mention picks nothing, sends nothing.
        if (picker.kind === 'command' && event.key === 'Enter') {
          close();
          return false;
        }
        break;
      }
      if (!count || !plain) {
        close(); // nothing to pick: the key does what it does without the picker
        return false;
      }
      pick(picker.active, event.key === 'Enter');
      break;
    default:
      return false;
  }
  event.preventDefault();
  return true;
}

/**
 * What the caret is at the end of: a command (`/` as the message's first character, then no
 * white space), or a mention (`@` at the start or after white space, then no white space).
 */
function mentionAt(input) {
  const caret = input.selectionStart;
  if (caret !== input.selectionEnd) return null;
  const before = input.value.slice(0, caret);
  const command = /^\/([^\s/]*)$/.exec(before);
  if (command) return { kind: 'command', start: 0, query: command[1] };
  const match = /(?:^|\s)@(\S*)$/.exec(before);
  return match ? { kind: 'file', start: caret - match[1].length - 1, query: match[1] } : null;
}

/** Follows the text and the caret; `typed` is true when the text changed (only typing opens). */
function sync(typed) {
  if (picker.composing) return;
  const mention = mentionAt(picker.input);
  if (!mention || (!picker.open && !typed)) {
    close();
    return;
  }
  if (picker.open && mention.start === picker.start && mention.query === picker.query) return;
  if (!picker.open || mention.start !== picker.start || mention.kind !== picker.kind) {
    close();
    Object.assign(picker, { open: true, start: mention.start, kind: mention.kind });
    picker.list.setAttribute('aria-label', mention.kind === 'command' ? 'Commands' : 'Files');
  }
  picker.query = mention.query;
  clearTimeout(picker.timer);
  const id = ++picker.request;
  picker.timer = setTimeout(() => load(id, mention.query), DEBOUNCE_MS);
}

async function load(id, query) {
  let files = [];
  let error = null;
  try {
    if (picker.kind === 'command') {
      // Read once per opening of the list: a command file added meanwhile shows the next time.
      if (!picker.commands) picker.commands = (await call('task_commands', { taskId: picker.taskId })).commands;
      files = matchCommands(picker.commands, query);
    } else {
      files = await call('find_files', { taskId: picker.taskId, query });
    }
  } catch (e) {
    error = e;
  }
  if (id === picker.request) {
    picker.shown = id;
    render(files, error);
  }
}

/**
 * The commands whose names hold `query`'s characters in order, best first: names that start with
 * it, then those that hold it, then the rest by how close together the characters are.
 */
function matchCommands(commands, query) {
  const q = query.toLowerCase();
  const scored = [];
  for (const command of commands) {
    const name = command.name.toLowerCase();
    const indices = [];
    let from = 0;
    for (const c of q) {
      const at = name.indexOf(c, from);
      if (at < 0) break;
      indices.push(at);
      from = at + 1;
    }
    if (indices.length < q.length) continue;
    const at = name.indexOf(q);
    const score = name.startsWith(q) ? 0 : at >= 0 ? 1 : 2 + (indices.at(-1) - indices[0]);
    scored.push({ command, indices: at >= 0 ? [...q].map((_, i) => at + i) : indices, score });
  }
  scored.sort((a, b) => a.score - b.score || a.command.name.localeCompare(b.command.name));
  return scored.map(({ command, indices }) => ({ ...command, indices }));
}

function render(files, error) {
  picker.items = error ? [] : files;
  const rows = picker.items.map(picker.kind === 'command' ? commandOption : option);
  if (!rows.length) {
    const what = picker.kind === 'command' ? 'commands' : 'files';
    const text = error ? messageOf(error) : picker.query ? `No ${what} match “${picker.query}”` : `No ${what}`;
    rows.push(h('li', { class: 'mention-empty', role: 'option', 'aria-disabled': 'true', text }));
  }
  picker.list.replaceChildren(...rows);
  picker.list.hidden = false;
  picker.input.setAttribute('aria-expanded', 'true');
  fit();
  picker.list.scrollTop = 0;
  setActive(picker.items.length ? 0 : -1, false);
}

/** A row: the path, its folder dimmed, the matched characters marked. */
function option(file, index) {
  const chars = Array.from(file.path); // indices count characters, not UTF-16 units
  const marked = new Set(file.indices ?? []);
  const cut = chars.lastIndexOf('/') + 1;
  return h('li', { id: `mention-option-${index}`, class: 'mention-option', role: 'option', 'aria-selected': 'false', dataset: { index } },
    cut ? h('span', { class: 'mention-dir' }, h('span', { dir: 'ltr' }, highlighted(chars, 0, cut, marked))) : null,
    h('span', { class: 'mention-name' }, highlighted(chars, cut, chars.length, marked)));
}

/** A command's row: `/name`, what to type after it, and what it does. */
function commandOption(command, index) {
  const chars = Array.from(command.name);
  const marked = new Set(command.indices);
  return h('li', { id: `mention-option-${index}`, class: 'mention-option command-option', role: 'option', 'aria-selected': 'false', dataset: { index } },
    h('span', { class: 'command-name' }, '/', highlighted(chars, 0, chars.length, marked)),
    command.argumentHint ? h('span', { class: 'command-hint', text: command.argumentHint }) : null,
    h('span', { class: 'command-description', text: command.origin === 'built-in' ? command.description : `${command.description} · ${command.origin}` }));
}

/** `chars[from..to]` as text, with runs of marked characters in `<mark>`. */
function highlighted(chars, from, to, marked) {
  const parts = [];
  for (let i = from; i < to; ) {
    const isMarked = marked.has(i);
    let text = '';
    for (; i < to && marked.has(i) === isMarked; i++) text += chars[i];
    parts.push(isMarked ? h('mark', { text }) : text);
  }
  return parts;
}

function setActive(index, scroll) {
  picker.active = index;
  const rows = picker.list.querySelectorAll('.mention-option');
  rows.forEach((row, i) => row.setAttribute('aria-selected', String(i === index)));
  const row = rows[index];
  if (!row) {
    picker.input.removeAttribute('aria-activedescendant');
    return;
  }
  picker.input.setAttribute('aria-activedescendant', row.id);
  if (!scroll) return;
  // Scrolls the list only (scrollIntoView could move the page, whose overflow is hidden).
  const { list } = picker;
  const top = row.offsetTop - PAD;
  const bottom = row.offsetTop + row.offsetHeight + PAD;
  if (top < list.scrollTop) list.scrollTop = top;
  else if (bottom > list.scrollTop + list.clientHeight) list.scrollTop = bottom - list.clientHeight;
}

/**
 * Replaces the typed `@query` with `@path ` (or `/query` with `/name `) and puts the caret after
 * it. `run`: a command that takes nothing after its name is sent at once.
 */
function pick(index, run) {
  const item = picker.items[index];
  if (!item) return;
  const { input, start, kind, query } = picker;
  const end = start + 1 + query.length;
  close();
  if (kind === 'command') {
    input.setRangeText(`/${item.name} `, start, end, 'end');
    input.focus();
    // Run only what was typed in full: Enter on a partial name completes it (`/co` is not
    // taken for /compact).
    if (run && query === item.name && !item.argumentHint && input.value.trim() === `/${item.name}`) picker.onCommand();
    return;
  }
  input.setRangeText(`@${item.path} `, start, end, 'end');
  input.focus();
}

/** Puts `@path ` into the message at the caret (a file the main window's tree attached). */
export function insertMention(input, path) {
  const at = input.selectionStart ?? input.value.length;
  const before = at > 0 && !/\s/.test(input.value[at - 1]) ? ' ' : '';
  input.setRangeText(`${before}@${path} `, at, input.selectionEnd ?? at, 'end');
  input.dispatchEvent(new Event('input', { bubbles: true })); // the box grows to fit
  input.focus();
}

/** The list fits in the room above the textarea. */
function fit() {
  if (picker.list.hidden) return;
  const room = Math.max(picker.input.getBoundingClientRect().top - 8, 48);
  picker.list.style.maxHeight = `min(40vh, 14rem, ${room}px)`;
}

function close() {
  clearTimeout(picker.timer);
  picker.request++;
  if (picker.kind === 'command') picker.commands = null; // read again at the next opening
  Object.assign(picker, { open: false, start: -1, query: '', items: [], active: -1 });
  if (!picker.list || picker.list.hidden) return;
  picker.list.hidden = true;
  picker.list.replaceChildren();
  picker.input.setAttribute('aria-expanded', 'false');
  picker.input.removeAttribute('aria-activedescendant');
}
