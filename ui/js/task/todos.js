// A plan (todo_write) as a checklist: in the header, and in the panel of the call that wrote it.

import { h } from '../dom.js';

const MARKS = { pending: '○', in_progress: '◐', completed: '●' };
const LABELS = { pending: 'to do', in_progress: 'in progress', completed: 'done' };

/** One `<li class="plan-item">` per todo. */
export function todoItems(todos) {
  return todos.map((t) =>
    h('li', { class: `plan-item plan-${t.status}`, dataset: { status: t.status } },
      h('span', { class: 'plan-mark', 'aria-label': LABELS[t.status] || t.status, text: MARKS[t.status] || '○' }),
      h('span', { class: 'plan-text', text: t.content })));
}
