// What a finished tool call shows, by the kind of its detail. Everything a tool produced is
// inserted as text; images only as data URLs of raster types.

import { h } from '../dom.js';
import { bytes, duration, visible } from '../format.js';
import { hunkLines, hunkRange, hunkTable } from './diff.js';
import { todoItems } from './todos.js';

const FOLD_LINES = 30;
const IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);
const BASE64 = /^[A-Za-z0-9+/=\s]*$/;

/**
 * The body of a finished tool panel. `result`: `{ isError, text, images, detail }` — `images` are
 * `{mime, data}` from the stored result.
 */
export function resultView({ isError, text, images = [], detail }) {
  const render = detail && RENDERERS[detail.kind];
  // A failed command's text is its output, already shown; other errors explain themselves.
  const explain = !render || (isError && detail.kind !== 'command');
  return h('div', { class: 'tool-result' },
    render ? render(detail, text) : null,
    explain ? textBlock(text, isError) : null,
    images.length ? h('div', { class: 'tool-images' }, images.map(imageView)) : null);
}

/** Folds `box` behind a "Show all N lines" toggle when it is longer than a screenful. */
function foldable(box, lines) {
  if (lines <= FOLD_LINES) return box;
  box.classList.add('folded');
  const toggle = h('button', { type: 'button', class: 'fold-toggle', 'aria-expanded': 'false', text: `Show all ${lines} lines` });
  toggle.addEventListener('click', () => {
    const open = box.classList.toggle('folded') === false;
    toggle.setAttribute('aria-expanded', String(open));
    toggle.textContent = open ? 'Show less' : `Show all ${lines} lines`;
  });
  return h('div', { class: 'foldable' }, box, toggle);
}

const lineCount = (text) => (text ? text.split('\n').length : 0);

function textBlock(text, isError) {
  if (!text) return null;
  const pre = h('pre', { class: isError ? 'tool-text tool-error' : 'tool-text', text });
  return foldable(pre, lineCount(text));
}

function imageView({ mime, data }) {
  if (!IMAGE_TYPES.has(mime) || typeof data !== 'string' || !BASE64.test(data)) {
    return h('p', { class: 'muted', text: `An image of type ${mime} is not shown.` });
  }
  return h('img', { class: 'tool-image', alt: 'Image from the tool', src: `data:${mime};base64,${data.replace(/\s/g, '')}` });
}

const tag = (text, extra = '') => h('span', { class: `tag ${extra}`.trim(), text });
const note = (text) => h('p', { class: 'tool-note', text });

// The raw text, for kinds whose detail only describes it (a file read, a fetched page).
function rawText(text) {
  if (!text) return null;
  return h('details', { class: 'tool-raw' }, h('summary', { text: 'Show text' }), foldable(h('pre', { class: 'tool-text', text }), lineCount(text)));
}

function diff(d) {
  const applied = new Set(d.applied);
  const hunks = d.hunks.map((hunk) => h('div', { class: 'diff-hunk', dataset: { index: hunk.index } },
    h('div', { class: 'diff-range' },
      h('span', { text: hunkRange(hunk) }),
      applied.has(hunk.index) ? null : tag('not applied', 'tag-warn')),
    hunkTable(hunk, d.path)));
  return h('div', { class: 'diff' },
    h('div', { class: 'diff-file' }, h('span', { class: 'file-path', text: visible(d.path) }), d.created ? tag('new file') : null),
    foldable(h('div', { class: 'diff-hunks' }, hunks), hunkLines(d.hunks)));
}

function command(d) {
  const ok = d.exitCode === 0;
  return h('div', { class: 'command-result' },
    h('pre', { class: 'command-line', text: visible(d.command) }),
    h('div', { class: 'tool-meta' },
      d.exitCode == null ? null : tag(`exit ${d.exitCode}`, ok ? 'exit-code exit-ok' : 'exit-code exit-fail'),
      h('span', { class: 'muted', text: duration(d.durationMs) }),
      d.timedOut ? tag('timed out', 'tag-warn') : null,
      d.sandboxed ? tag('sandboxed') : null),
    d.output ? foldable(h('pre', { class: 'terminal', text: d.output }), lineCount(d.output)) : note('No output.'),
    d.omittedBytes ? note(`${bytes(d.omittedBytes)} of output cut from the middle.`) : null);
}

function matches(d) {
  const total = d.files.reduce((sum, f) => sum + f.lines.length + 1, 0);
  const files = d.files.map((file) => h('div', { class: 'match-file' },
    h('div', { class: 'file-path', text: visible(file.path) }),
    h('div', { class: 'diff-scroll' }, h('table', { class: 'match-table' }, h('tbody', {},
      file.lines.map((line) => h('tr', { class: line.context ? 'match-context' : 'match-line' },
        h('td', { class: 'diff-ln', text: String(line.line) }),
        h('td', { class: 'diff-text', text: line.text }))))))));
  return h('div', { class: 'matches' },
    d.files.length ? foldable(h('div', {}, files), total) : note('No matches.'),
    d.truncated ? note('More matches were left out.') : null);
}

function paths(d) {
  return h('div', {},
    d.paths.length
      ? foldable(h('ul', { class: 'path-list' }, d.paths.map((p) => h('li', { class: 'file-path', text: visible(p) }))), d.paths.length)
      : note('No files found.'),
    d.truncated ? note('More paths were left out.') : null);
}

function listing(d) {
  const entries = d.entries.map((e) => h('li', { class: e.dir ? 'entry entry-dir' : 'entry entry-file', dataset: { kind: e.dir ? 'dir' : 'file' } },
    h('span', { class: 'entry-name', text: visible(e.dir ? `${e.name}/` : e.name) }),
    e.dir ? null : h('span', { class: 'entry-size', text: bytes(e.size) })));
  return h('div', {},
    h('div', { class: 'file-path', text: visible(d.path) }),
    entries.length ? foldable(h('ul', { class: 'listing' }, entries), entries.length) : note('The folder is empty.'),
    d.truncated ? note('More entries were left out.') : null);
}

function file(d, text) {
  const what = d.totalLines === 0
    ? `Read ${visible(d.path)} (empty)`
    : `Read ${visible(d.path)} lines ${d.firstLine}–${d.lastLine} of ${d.totalLines}`;
  return h('div', {}, h('p', { class: 'file-read', text: what }), rawText(text));
}

function todos(d) {
  return h('ul', { class: 'todo-list' }, todoItems(d.todos));
}

function answer(d) {
  return h('dl', { class: 'answer' },
    h('dt', { text: 'Question' }), h('dd', { text: d.question }),
    h('dt', { text: 'Answer' }), h('dd', { text: d.answer }));
}

function fetched(d, text) {
  return h('div', {},
    h('p', { class: 'file-path', text: visible(d.url) }),
    h('div', { class: 'tool-meta' },
      tag(`HTTP ${d.status}`, d.status < 400 ? 'exit-code exit-ok' : 'exit-code exit-fail'),
      h('span', { class: 'muted', text: d.contentType }),
      h('span', { class: 'muted', text: bytes(d.bytes) }),
      d.truncated ? tag('cut short', 'tag-warn') : null),
    rawText(text));
}

function processes(d) {
  if (!d.processes.length) return note('No background processes.');
  return h('ul', { class: 'process-list' }, d.processes.map((p) => h('li', {},
    h('span', { class: 'muted', text: `#${p.id}` }),
    h('code', { text: visible(p.command) }),
    p.running ? tag('running') : tag(p.exitCode == null ? 'ended' : `exit ${p.exitCode}`))));
}

const RENDERERS = { diff, command, matches, paths, listing, file, todos, answer, fetch: fetched, processes };
