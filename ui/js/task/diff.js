// Hunks of a change to a file, as tables of lines with their old and new line numbers, in the
// file's language's colours. Shared by the approval dialog (before the change), the tool panel
// (after it) and the Changes view.

import { h } from '../dom.js';
import { visible } from '../format.js';
import { colourLines } from './code.js';

const LINE = {
  added: { class: 'diff-add', mark: '+', label: 'added' },
  removed: { class: 'diff-del', mark: '−', label: 'removed' },
  context: { class: 'diff-ctx', mark: ' ', label: null },
};

/** The "@@ -12,5 +12,7 @@" line that says where a hunk is. */
export function hunkRange(hunk) {
  return `@@ −${hunk.oldStart},${hunk.oldLines} +${hunk.newStart},${hunk.newLines} @@`;
}

/** A hunk's lines in a table that scrolls sideways inside its own box; with the file's `path`,
 * coloured by its language after the frame that shows them (that frame does not wait for it;
 * left plain if the highlighter fails). */
export function hunkTable(hunk, path = null) {
  let oldNumber = hunk.oldStart;
  let newNumber = hunk.newStart;
  const rows = hunk.lines.map((line) => {
    const kind = LINE[line.kind] ?? LINE.context;
    const old = line.kind === 'added' ? '' : String(oldNumber++);
    const now = line.kind === 'removed' ? '' : String(newNumber++);
    return h('tr', { class: kind.class },
      h('td', { class: 'diff-ln', text: old }),
      h('td', { class: 'diff-ln', text: now }),
      h('td', { class: 'diff-mark', text: kind.mark, 'aria-label': kind.label }),
      h('td', { class: 'diff-text', text: visible(line.text) }));
  });
  const table = h('div', { class: 'diff-scroll' }, h('table', { class: 'diff-table' }, h('tbody', {}, rows)));
  if (path) requestAnimationFrame(() => setTimeout(() => colour(table, path, hunk).catch(() => {}), 0));
  return table;
}

/** Colours a hunk's lines by its file's language: the lines before (context and removed) and
 * after (context and added) are each highlighted as one text. */
async function colour(table, path, hunk) {
  const before = [];
  const after = [];
  hunk.lines.forEach((line, i) => {
    if (line.kind !== 'added') before.push(i);
    if (line.kind !== 'removed') after.push(i);
  });
  const text = (i) => visible(hunk.lines[i].text);
  const [old, now] = await Promise.all([colourLines(before.map(text), path), colourLines(after.map(text), path)]);
  if (!old || !now || !table.isConnected) return;
  const cells = table.querySelectorAll('td.diff-text');
  // (The highlighter's HTML: the line's text escaped, with its <span class> tags.)
  after.forEach((row, k) => { cells[row].innerHTML = now[k]; });
  before.forEach((row, k) => { if (hunk.lines[row].kind === 'removed') cells[row].innerHTML = old[k]; });
  table.dataset.coloured = '';
  performance.mark('diff-coloured'); // for scripts/bench-changes.py
}

/** Number of lines in a set of hunks (to decide whether to fold them). */
export const hunkLines = (hunks) => hunks.reduce((sum, hunk) => sum + hunk.lines.length + 1, 0);
