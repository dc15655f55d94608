// One Markdown text part, rendered as it streams. The backend splits the text into finished
// top-level blocks and an unfinished tail: finished blocks are inserted once and never touched
// again, so a long reply costs only its tail per frame. Finished blocks are grouped in chunks of
// `CHUNK`: a change at the end makes the browser walk the chunks, not every block of the reply
// (a long reply's frame rate fell with its length before). Every part due in a frame is rendered by
// one call (opening a task renders its whole first screen at once); a part is in at most one call
// at a time, and text that arrives meanwhile is rendered when it returns. New text is shown as
// typed the moment it arrives (one text node grows; the browser paints it with its next frame),
// so a word never waits a frame for the render call to be sent.

import { call } from '../api.js';
import { h } from '../dom.js';
import { decorateCode } from './code.js';
import { nextFrame } from './frame.js';

const CHUNK = 32; // finished blocks per chunk
/** How far from the view a full chunk keeps its blocks (see `initParking`). */
const PARK_MARGIN = '3000px 0px';
const unsettled = new Set(); // parts whose screen lags their text
let waiters = [];
const due = new Set(); // parts to render in the next frame

async function renderDue() {
  const views = [...due].filter((view) => !view.busy); // a busy one asks again when it returns
  due.clear();
  if (views.length === 0) return;
  const jobs = views.map((view) => view.begin());
  let outs = null;
  try {
    outs = await call('render_markdown', { parts: jobs.map(({ text, done }) => ({ text, done })) });
  } catch (e) {
    console.error('render_markdown failed', e);
  }
  views.forEach((view, i) => {
    // One part that cannot be shown must not stop the others.
    try {
      view.end(jobs[i], outs?.[i]);
    } catch (e) {
      console.error(e);
    }
  });
}

/**
 * Renders every part due now, without waiting for a frame, and resolves once every part shows
 * all of its text: a window opening renders its first screen before its first layout and paint.
 */
export async function renderNow() {
  await renderDue();
  await settled();
}

/** Resolves once every part shows all of its text. */
function settled() {
  if (unsettled.size === 0) return Promise.resolve();
  return new Promise((resolve) => waiters.push(resolve));
}

function markSettled(part) {
  unsettled.delete(part);
  if (unsettled.size > 0) return;
  const done = waiters;
  waiters = [];
  for (const resolve of done) resolve();
}

// ---- parking ------------------------------------------------------------------------------
// A chunk far from the view is parked: its blocks are let go — the sanitized HTML they were made
// from is kept — and the chunk keeps its height; they are made again as it nears the view. So a
// window holding a very long reply holds in its page only what is near the view (its elements
// and their layout were ~2 KB each, ~55 MiB for a reply of 220,000 characters). Only full chunks
// that another follows are parked, never one holding the selection or the focus; a selection
// that reaches a parked chunk brings its blocks back first, so what is selected is copied whole.
// What is parked is out of reach of Tab and of a screen reader until the view nears it: only
// replies longer than a chunk are parked, and only 3,000 px and more away.

const htmlOf = new WeakMap(); // chunk → the HTML of its blocks, in order
const parked = new Map(); // chunk without its blocks → the height it keeps
const held = new Set(); // chunks kept whole for the selection or the focus while far from the view
let parker = null;
let scroller = null;

/** Parks full chunks far from the view of `root` (the element the conversation scrolls in). */
export function initParking(root) {
  scroller = root;
  parker = new IntersectionObserver(onParking, { root, rootMargin: PARK_MARGIN });
  document.addEventListener('selectionchange', onSelection);
  // A chunk kept for the focus (a Copy button, a link) may be parked once the focus leaves it.
  root.addEventListener('focusout', () => setTimeout(recheckHeld));
}

/** Lets go of the chunks no longer in the page (their text was set anew, their message removed). */
export function forgetDetached() {
  for (const chunk of [...parked.keys(), ...held]) if (!chunk.isConnected) forget(chunk);
}

function forget(chunk) {
  parker.unobserve(chunk);
  parked.delete(chunk);
  held.delete(chunk);
}

// Every chunk of a batch is changed before any is measured again (the observer's own measure is
// the height kept): the page is laid out once or twice per batch, not once per chunk (a window
// catching up parks dozens at once).
function onParking(entries) {
  const selected = selectedRange();
  const back = [];
  for (const { target: chunk, isIntersecting, boundingClientRect } of entries) {
    if (!chunk.isConnected) {
      forget(chunk);
    } else if (isIntersecting) {
      held.delete(chunk);
      if (parked.has(chunk)) back.push(chunk);
    } else if (!parked.has(chunk)) {
      if (selected?.intersectsNode(chunk) || chunk.contains(document.activeElement)) held.add(chunk);
      else if (boundingClientRect.height > 0) park(chunk, boundingClientRect.height); // (0: not shown)
    }
  }
  unpark(back);
}

function park(chunk, height) {
  chunk.style.height = `${height}px`;
  chunk.replaceChildren();
  chunk.classList.add('md-parked');
  parked.set(chunk, height);
}

/**
 * Makes parked chunks' blocks again. Those wholly above the view (the reader scrolls up to them)
 * whose height is not what they kept (the window's width changed meanwhile) must not move what
 * the reader sees: the view moves by what they grew, at once (scroll.js keeps the chunk at the top
 * of the view in place too, but only when the page is next drawn). Which are above the view is
 * read before anything changes.
 */
function unpark(chunks) {
  if (chunks.length === 0) return;
  const top = scroller.getBoundingClientRect().top;
  const above = chunks.filter((chunk) => chunk.getBoundingClientRect().bottom <= top);
  for (const chunk of chunks) {
    chunk.replaceChildren(...htmlOf.get(chunk).map(blockOf));
    chunk.style.height = '';
    chunk.classList.remove('md-parked');
  }
  let grew = 0;
  for (const chunk of above) grew += chunk.getBoundingClientRect().height - parked.get(chunk);
  for (const chunk of chunks) parked.delete(chunk);
  if (grew !== 0) scroller.scrollTop += grew;
}

/** The selection's range, unless nothing is selected. */
function selectedRange() {
  const selection = document.getSelection();
  return selection.rangeCount > 0 && !selection.isCollapsed ? selection.getRangeAt(0) : null;
}

// A selection reaching parked chunks brings them back (a select-all, a drag past the view); once
// it is gone, those far from the view are parked again.
function onSelection() {
  const selected = selectedRange();
  if (selected) {
    const reached = [...parked.keys()].filter((chunk) => selected.intersectsNode(chunk));
    unpark(reached);
    for (const chunk of reached) held.add(chunk);
  }
  recheckHeld();
}

/** Chunks kept whole for the selection or the focus are observed anew once neither holds them
 * (observing reports where they are, so those far from the view are parked). */
function recheckHeld() {
  const selected = selectedRange();
  for (const chunk of held) {
    if (selected?.intersectsNode(chunk) || chunk.contains(document.activeElement)) continue;
    held.delete(chunk);
    parker.unobserve(chunk);
    parker.observe(chunk);
  }
}

function blockOf(html) {
  const block = h('div', { class: 'md-block' });
  block.innerHTML = html; // sanitized by the backend (ammonia)
  decorateCode(block);
  return block;
}

export class MarkdownView {
  constructor() {
    this.tail = h('div', { class: 'md-tail' });
    // Text that arrived after the last render, shown as typed until its rendering returns (a
    // render is a round trip to the backend; a new word should not wait for it).
    this.rawText = document.createTextNode('');
    this.raw = h('span', { class: 'md-raw' }, this.rawText);
    this.el = h('div', { class: 'markdown' }, this.tail, this.raw);
    this.text = '';
    this.done = false; // no more text will come: render every block as finished
    this.consumed = 0; // UTF-16 length of `text` covered by the finished blocks on screen
    this.shownLength = 0; // length of `text` the screen shows
    this.shownDone = false;
    this.busy = false; // in a render call
    this.generation = 0; // bumped when the text is replaced: older replies are dropped
    this.ending = null; // the element that ends the text on screen (see `markEnd`)
    this.chunk = null; // the chunk that takes the next finished blocks
  }

  append(delta) {
    this.text += delta;
    this.rawText.appendData(delta);
    this.markEnd();
    this.schedule();
  }

  /** Shows `text`: as appended text when it extends what is there, else from scratch. */
  set(text) {
    if (text.startsWith(this.text)) {
      if (text.length > this.text.length) this.append(text.slice(this.text.length));
      return;
    }
    this.generation += 1;
    this.text = text;
    this.consumed = 0;
    this.shownLength = 0;
    this.shownDone = false;
    this.tail.replaceChildren();
    this.rawText.data = text;
    this.el.replaceChildren(this.tail, this.raw);
    forgetDetached();
    this.ending = null;
    this.chunk = null;
    this.markEnd();
    this.schedule();
  }

  finish() {
    if (this.done) return;
    this.done = true;
    this.schedule();
  }

  stale() {
    return this.shownLength !== this.text.length || this.shownDone !== this.done;
  }

  schedule() {
    if (!this.stale()) return;
    unsettled.add(this);
    due.add(this);
    nextFrame(renderDue);
  }

  /** Starts rendering what is new: the text after the finished blocks on screen. */
  begin() {
    this.busy = true;
    return { generation: this.generation, length: this.text.length, done: this.done, text: this.text.slice(this.consumed) };
  }

  /** Shows what `begin` asked for (`out` is missing if the renderer failed). */
  end(job, out) {
    this.busy = false;
    if (job.generation === this.generation) {
      // Without the renderer the text is still shown, as typed.
      if (out) this.show(out);
      else this.showPlain(job.text);
      this.shownLength = job.length;
      this.shownDone = job.done;
      this.rawText.data = this.text.slice(job.length);
      this.markEnd();
    }
    if (this.stale()) this.schedule();
    else markSettled(this);
  }

  show({ blocks, consumed, tail }) {
    for (const html of blocks) {
      if (this.chunk === null || htmlOf.get(this.chunk).length === CHUNK) {
        // The full chunk may be parked from now on: another follows it.
        if (this.chunk) parker?.observe(this.chunk);
        this.chunk = h('div', { class: 'md-chunk' });
        htmlOf.set(this.chunk, []);
        this.tail.before(this.chunk);
      }
      htmlOf.get(this.chunk).push(html);
      this.chunk.append(blockOf(html));
    }
    this.consumed += consumed;
    this.tail.classList.remove('md-plain');
    this.tail.innerHTML = tail; // sanitized by the backend (ammonia)
  }

  /**
   * Marks what ends the text on screen, whose last element loses its bottom margin: the tail,
   * else the last finished block — nothing while typed text follows. One class moved per change
   * (a `:has()` rule doing this made the browser re-check every block of a long reply at each
   * frame).
   */
  markEnd() {
    const end = this.rawText.length ? null : this.tail.firstChild ? this.tail : this.chunk?.lastElementChild ?? null;
    if (end === this.ending) return;
    this.ending?.classList.remove('md-end');
    end?.classList.add('md-end');
    this.ending = end;
  }

  showPlain(rest) {
    this.tail.classList.add('md-plain');
    this.tail.textContent = rest;
  }
}
