// The search page (Ctrl+F): every conversation's messages, searched as you type through the
// store's full-text index. Matches are grouped by project and task, the words found marked;
// choosing one opens its task scrolled to that message.

import { call, messageOf } from './api.js';
import { $, h } from './dom.js';
import { ago, when } from './format.js';

const DELAY_MS = 120; // typing pauses this long before a search runs

const page = {
  layout: () => {}, // re-renders the rest of the window, which stays hidden while this page shows
  asked: 0, // bumps on every search; a reply to an older one is dropped
  timer: 0,
};

/** Whether the search page is showing. */
export function searchOpen() {
  return !$('#search-view').hidden;
}

/** Shows the search page with the cursor in its box (the words typed before are kept). */
export function openSearch({ layout = () => {} } = {}) {
  page.layout = layout;
  $('#search-view').hidden = false;
  page.layout(); // hides what the page takes the place of
  const input = $('#search-input');
  input.focus();
  input.select();
}

/** Leaves the page, putting the rest of the window back. */
export function closeSearch() {
  if (!searchOpen()) return;
  $('#search-view').hidden = true;
  page.layout();
}

function status(text) {
  const el = $('#search-status');
  el.textContent = text;
  el.hidden = !text;
}

async function search() {
  const query = $('#search-input').value.trim();
  const asked = ++page.asked;
  if (!query) {
    $('#search-results').replaceChildren();
    status('Type words from any conversation. All of them must appear; end one with * to match its beginning.');
    return;
  }
  try {
    performance.mark('search-sent'); // for scripts/bench-main-window.py, with 'search-painted'
    const hits = await call('search_conversations', { query });
    if (asked !== page.asked) return; // the words changed meanwhile
    render(hits);
    requestAnimationFrame(() => requestAnimationFrame(() => performance.mark('search-painted')));
    status(hits.length ? '' : `No conversation mentions “${query}”. Try fewer words, or the start of one followed by *.`);
  } catch (e) {
    if (asked === page.asked) status(`The search failed: ${messageOf(e)}`);
  }
}

/** Groups the matches by project, then task, each in the order of its best match. */
function render(hits) {
  const projects = new Map();
  for (const hit of hits) {
    if (!projects.has(hit.projectId)) projects.set(hit.projectId, { name: hit.projectName, tasks: new Map() });
    const tasks = projects.get(hit.projectId).tasks;
    if (!tasks.has(hit.taskId)) tasks.set(hit.taskId, { title: hit.taskTitle, hits: [] });
    tasks.get(hit.taskId).hits.push(hit);
  }
  $('#search-results').replaceChildren(...[...projects.values()].map((project) =>
    h('section', { class: 'search-project' },
      h('h2', { class: 'search-project-name', text: project.name }),
      ...[...project.tasks.entries()].map(([taskId, task]) =>
        h('div', { class: 'search-task' },
          h('h3', { class: 'search-task-title', text: task.title }),
          h('ul', { class: 'search-hits' }, ...task.hits.map((hit) =>
            h('li', {},
              h('button', {
                type: 'button',
                class: 'search-hit',
                dataset: { task: taskId, seq: hit.seq },
                onclick: () => open(taskId, hit.seq),
              },
              h('span', { class: 'search-hit-meta' },
                h('span', { text: hit.role === 'user' ? 'You' : hit.role === 'tool' ? 'Tool result' : 'Agent' }),
                h('span', { title: when(hit.createdAt), text: ago(hit.createdAt) })),
              // Inserted as text; only the marks are elements.
              h('span', { class: 'search-snippet' },
                ...hit.snippet.map((part) => (part.hit ? h('mark', { text: part.text }) : part.text))))))))))));
}

async function open(taskId, seq) {
  try {
    await call('open_task', { id: taskId, at: seq });
  } catch (e) {
    status(`The task could not be opened: ${messageOf(e)}`);
  }
}

/** Wires the page's controls, once. */
export function initSearch() {
  const input = $('#search-input');
  input.addEventListener('input', () => {
    clearTimeout(page.timer);
    page.timer = setTimeout(search, DELAY_MS);
  });
  input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter') {
      e.preventDefault();
      clearTimeout(page.timer);
      search();
    } else if (e.key === 'ArrowDown') {
      e.preventDefault();
      $('.search-hit')?.focus();
    }
  });
  // Up and down move between matches; Esc goes back (from anywhere on the page).
  $('#search-view').addEventListener('keydown', (e) => {
    if (e.key === 'Escape' && !document.querySelector('dialog[open]')) {
      e.preventDefault();
      closeSearch();
      return;
    }
    if (!e.target.classList?.contains('search-hit') || (e.key !== 'ArrowDown' && e.key !== 'ArrowUp')) return;
    e.preventDefault();
    const all = [...document.querySelectorAll('.search-hit')];
    const next = all[all.indexOf(e.target) + (e.key === 'ArrowDown' ? 1 : -1)];
    (next ?? (e.key === 'ArrowUp' ? input : null))?.focus();
  });
  $('#search-close').addEventListener('click', closeSearch);
  search();
}
