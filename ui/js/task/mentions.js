// The composer's `@` file picker. Typing `@` at the start or after white space lists the task's
// files (matched by the backend's `find_files`) in a listbox just above the message box; typing
// filters, the arrows move, Enter or Tab picks, Escape closes. Picking writes `@path ` in place of
// what was typed. The focus stays in the textarea (`aria-activedescendant` names the active row),
// and nothing opens or reacts while an IME composition is open.

import { call, messageOf } from '../api.js';
import { h } from '../dom.js';

const DEBOUNCE_MS = 60;
const PAD = 4; // the list's padding (task.css)

const picker = {
  input: null,
  list: null,
  taskId: 0,
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

/** Watches `textarea` for mentions; its `aria-controls` names the list. Call once. */
export function attachMentions(textarea, { taskId }) {
  const list = document.getElementById(textarea.getAttribute('aria-controls'));
  Object.assign(picker, { input: textarea, list, taskId });
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
    if (row && event.button === 0) pick(Number(row.dataset.index));
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
      // The list is for an earlier query (its answer is on the way): pick nothing, send nothing.
      if (plain && picker.request !== picker.shown) break;
      if (!count || !plain) {
        close(); // nothing to pick: the key does what it does without the picker
        return false;
      }
      pick(picker.active);
      break;
    default:
      return false;
  }
  event.preventDefault();
  return true;
}

/** The mention the caret is at the end of: `@` at the start or after white space, then no white space. */
function mentionAt(input) {
  const caret = input.selectionStart;
  if (caret !== input.selectionEnd) return null;
  const match = /(?:^|\s)@(\S*)$/.exec(input.value.slice(0, caret));
  return match ? { start: caret - match[1].length - 1, query: match[1] } : null;
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
  if (!picker.open || mention.start !== picker.start) {
    close();
    Object.assign(picker, { open: true, start: mention.start });
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
    files = await call('find_files', { taskId: picker.taskId, query });
  } catch (e) {
    error = e;
  }
  if (id === picker.request) {
    picker.shown = id;
    render(files, error);
  }
}

function render(files, error) {
  picker.items = error ? [] : files;
  const rows = picker.items.map(option);
  if (!rows.length) {
    const text = error ? messageOf(error) : picker.query ? `No files match “${picker.query}”` : 'No files';
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

/** Replaces the typed `@query` with `@path ` and puts the caret after it. */
function pick(index) {
  const file = picker.items[index];
  if (!file) return;
  const { input, start } = picker;
  const end = start + 1 + picker.query.length;
  close();
  input.setRangeText(`@${file.path} `, start, end, 'end');
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
  Object.assign(picker, { open: false, start: -1, query: '', items: [], active: -1 });
  if (!picker.list || picker.list.hidden) return;
  picker.list.hidden = true;
  picker.list.replaceChildren();
  picker.input.setAttribute('aria-expanded', 'false');
  picker.input.removeAttribute('aria-activedescendant');
}
