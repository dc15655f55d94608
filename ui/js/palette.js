// The command palette (Ctrl+K): the main window's actions, its projects and every project's tasks
// by title, narrowed as you type. ↑/↓ choose, Enter runs, Esc closes (the native <dialog>).

import { call, messageOf } from './api.js';
import { $, h } from './dom.js';

const TASKS_SHOWN = 12;

const state = {
  items: [], // what is listed: { label, detail, run }
  active: 0,
  asked: 0, // bumps on every task lookup; a reply to an older one is dropped
  source: null, // { actions, projects, projectName, openProject, openTask }
};

/**
 * How well `query` matches `text`: 3 starts it, 2 holds it, 1 has its letters in order, 0 not
 * at all (an empty query matches everything).
 */
function score(text, query) {
  if (!query) return 1;
  const t = text.toLowerCase();
  const q = query.toLowerCase();
  if (t.startsWith(q)) return 3;
  if (t.includes(q)) return 2;
  let at = 0;
  for (const ch of q) {
    at = t.indexOf(ch, at);
    if (at < 0) return 0;
    at += ch.length;
  }
  return 1;
}

function ranked(items, query) {
  return items
    .map((item, i) => ({ item, i, s: score(item.label, query) }))
    .filter((x) => x.s > 0)
    .sort((a, b) => b.s - a.s || a.i - b.i)
    .map((x) => x.item);
}

async function update() {
  const query = $('#palette-input').value.trim();
  const { actions, projects, projectName, openProject, openTask } = state.source;
  const asked = ++state.asked;
  const local = [
    ...ranked(actions, query),
    ...ranked(projects.map((p) => ({ label: p.name, detail: 'Project', run: () => openProject(p.id) })), query),
  ];
  show(local, query ? 'Looking for tasks…' : '', false);
  let tasks = [];
  try {
    tasks = await call('find_tasks', { query });
  } catch (e) {
    if (asked === state.asked) show(local, `Tasks could not be searched: ${messageOf(e)}`, true);
    return;
  }
  if (asked !== state.asked) return; // the words changed meanwhile
  const found = tasks.slice(0, TASKS_SHOWN).map((t) => ({
    label: t.title,
    detail: `Task · ${projectName(t.projectId)}`,
    run: () => openTask(t.id),
  }));
  const all = [...local, ...found];
  show(all, all.length ? '' : `Nothing matches “${query}”.`, true);
}

/** Lists `items`; `keep`: the same words, more matches: the choice stays on its entry. */
function show(items, note, keep) {
  const previous = keep ? state.items[state.active] : null;
  state.items = items;
  const kept = previous ? items.findIndex((i) => i.label === previous.label && i.detail === previous.detail) : -1;
  state.active = Math.max(0, kept);
  const list = $('#palette-list');
  list.replaceChildren(...items.map((item, i) =>
    h('li', {
      id: `palette-item-${i}`,
      role: 'option',
      class: 'palette-item',
      'aria-selected': i === state.active ? 'true' : 'false',
      onmousedown: (e) => e.preventDefault(), // the input keeps the focus
      onclick: () => run(i),
    },
    h('span', { class: 'palette-label', text: item.label }),
    h('span', { class: 'palette-detail', text: item.detail }))));
  $('#palette-note').textContent = note;
  $('#palette-note').hidden = !note;
  markActive();
}

function markActive() {
  const input = $('#palette-input');
  for (const [i, el] of [...$('#palette-list').children].entries()) {
    el.setAttribute('aria-selected', i === state.active ? 'true' : 'false');
  }
  const active = $(`#palette-item-${state.active}`);
  if (active) {
    input.setAttribute('aria-activedescendant', active.id);
    active.scrollIntoView({ block: 'nearest' });
  } else {
    input.removeAttribute('aria-activedescendant');
  }
}

function run(i) {
  const item = state.items[i];
  if (!item) return;
  $('#palette').close();
  item.run();
}

/**
 * Opens the palette. `actions`: [{ label, detail, run }]; `projects`: the projects to switch to;
 * `projectName(id)`, `openProject(id)` and `openTask(id)` do the rest.
 */
export function openPalette(source) {
  const dialog = $('#palette');
  if (dialog.open) return;
  state.source = source;
  state.items = [];
  const input = $('#palette-input');
  input.value = '';
  dialog.showModal();
  input.focus();
  update();
}

/** Wires the palette's controls, once. */
export function initPalette() {
  const input = $('#palette-input');
  input.addEventListener('input', update);
  input.addEventListener('keydown', (e) => {
    const moves = { ArrowDown: 1, ArrowUp: -1 };
    if (e.key in moves && state.items.length) {
      e.preventDefault();
      state.active = (state.active + moves[e.key] + state.items.length) % state.items.length;
      markActive();
    } else if (e.key === 'Enter' && !e.isComposing) {
      e.preventDefault();
      run(state.active);
    }
  });
  // A click outside the box (on the backdrop) closes it.
  $('#palette').addEventListener('click', (e) => {
    if (e.target === e.currentTarget) e.currentTarget.close();
  });
}
