// Hunks of a change to a file, as tables of lines with their old and new line numbers. Shared by
// the approval dialog (before the change) and the tool panel (after it).

import { h } from '../dom.js';
import { visible } from '../format.js';

const LINE = {
  added: { class: 'diff-add', mark: '+', label: 'added' },
  removed: { class: 'diff-del', mark: '−', label: 'removed' },
  context: { class: 'diff-ctx', mark: ' ', label: null },
};

/** The "@@ -12,5 +12,7 @@" line that says where a hunk is. */
export function hunkRange(hunk) {
  return `@@ −${hunk.oldStart},${hunk.oldLines} +${hunk.newStart},${hunk.newLines} @@`;
}

/** A hunk's lines in a table that scrolls sideways inside its own box. */
export function hunkTable(hunk) {
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
  return h('div', { class: 'diff-scroll' }, h('table', { class: 'diff-table' }, h('tbody', {}, rows)));
}

/** Number of lines in a set of hunks (to decide whether to fold them). */
export const hunkLines = (hunks) => hunks.reduce((sum, hunk) => sum + hunk.lines.length + 1, 0);
