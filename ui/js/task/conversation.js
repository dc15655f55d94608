// The conversation: stored messages in order of `seq`, the answer streaming now (the "live"
// message), and lines that are not stored (notices, errors, compaction dividers, queued
// messages). Opens on the newest page; older pages are loaded as the reader scrolls up.

import { call, messageOf } from '../api.js';
import { $, h } from '../dom.js';
import { tokens } from '../format.js';
import { forgetDetached, initParking, MarkdownView } from './markdown.js';
import { messageView, textOf } from './messages.js';
import { Scroller } from './scroll.js';

const PAGE = 50;
const RETRY_MS = 5000;

const seqOf = (el) => (el.dataset.seq ? Number(el.dataset.seq) : Infinity);

export class Conversation {
  constructor(taskId) {
    this.taskId = taskId;
    this.list = $('#messages');
    this.queued = $('#queued');
    this.views = new Map(); // message id → view
    this.live = null; // the view of the answer streaming now
    this.firstSeq = null;
    this.hasOlder = false;
    this.loadingOlder = null; // the promise of the page being loaded
    this.retryAt = 0;
    this.generation = 0; // bumped by show(): a page asked for before it is dropped
    this.scroll = new Scroller({
      scroller: $('#conversation'),
      content: $('#conversation-column'),
      items: this.list,
      jump: $('#jump-latest'),
      onNearTop: () => this.loadOlder(),
    });
    initParking($('#conversation'));
  }

  /** Shows a fresh page of messages (the newest) and the task's summaries, replacing everything. */
  show(records, hasOlder, compactions = []) {
    this.generation += 1;
    $('#older-status').hidden = true;
    this.list.replaceChildren();
    forgetDetached();
    this.queued.replaceChildren();
    this.views.clear();
    this.live = null;
    this.firstSeq = null;
    this.hasOlder = hasOlder;
    for (const record of records) this.insert(messageView(record));
    for (const compaction of compactions) this.compaction(compaction);
    this.scroll.toBottom();
  }

  /** A stored message was added or changed. */
  upsert(record) {
    const view = this.views.get(record.id);
    if (record.role === 'user') this.dequeue(textOf(record));
    if (!view) {
      // One from a page not loaded yet (a compaction marks old messages) comes with its page.
      if (this.hasOlder && record.seq < this.firstSeq) return;
      this.insert(messageView(record));
      return;
    }
    if (view !== this.live) {
      view.update(record);
      return;
    }
    // The deltas are ahead of the stored copy while it streams: only its position is news.
    if (!record.complete) {
      view.setSeq(record.seq);
      return;
    }
    this.endLive();
    view.update(record);
  }

  answerStarted(messageId) {
    this.endLive();
    let view = this.views.get(messageId);
    // Its finished copy came from the store first (the two arrive by different routes): it is
    // shown whole, and the deltas would only repeat it.
    if (view?.record.complete) return;
    if (!view) {
      view = messageView({ id: messageId, taskId: this.taskId, role: 'assistant', parts: [], complete: false });
      this.insert(view);
    }
    // Every delta of the answer follows this event, so whatever was shown is rebuilt from them.
    view.truncate(0);
    view.startLive();
    this.live = view;
  }

  textDelta(text) {
    this.live?.appendText(text);
  }

  thinkingDelta(text) {
    this.live?.appendThinking(text);
  }

  toolCallStarted(callId, name) {
    this.live?.startToolCall(callId, name);
  }

  endLive() {
    this.live?.endLive();
    this.live = null;
  }

  notice(text) {
    this.line(h('p', { class: 'notice', text }));
  }

  error(message, hint) {
    // The failed answer keeps these words to show when the task is read later; here they are
    // shown once, with the hint, so its note stays short.
    const failed = this.live ?? [...this.views.values()].findLast((v) => v.record.error === message);
    if (failed) {
      failed.toldError = true;
      failed.showNote();
    }
    this.line(h('div', { class: 'error-inline', role: 'alert' },
      h('p', { text: message }),
      hint ? h('p', { class: 'error-hint', text: hint }) : null));
  }

  /** A summary of earlier messages: a divider where the messages it left out end, opened to read it. */
  compaction({ summary, firstKeptSeq, tokensBefore, tokensAfter }) {
    const body = h('div', { class: 'compaction-summary' });
    const el = h('details', { class: 'compaction' },
      h('summary', { class: 'compaction-divider' },
        h('span', { text: `Conversation summarized: ~${tokens(tokensBefore)} → ~${tokens(tokensAfter)} tokens` }),
        h('span', { class: 'compaction-toggle', 'aria-hidden': 'true' })),
      h('p', { class: 'muted compaction-note', text: 'The agent now works from this summary instead of the messages above it.' }),
      body);
    // Rendered when first opened: a long task may hold many summaries nobody reads.
    el.addEventListener('toggle', () => {
      if (!el.open || body.firstChild) return;
      const view = new MarkdownView();
      body.append(view.el);
      view.set(summary);
      view.finish();
    });
    el.dataset.seq = String(firstKeptSeq - 0.5); // just before the first message it kept
    this.place(el, firstKeptSeq - 0.5);
    this.showEmpty();
  }

  /**
   * A message sent while the agent works: shown until it arrives as a stored message. `waiting`:
   * no run goes on (it stopped before delivering it), so the next message sent takes it along.
   */
  enqueue(text, images = 0, waiting = false) {
    const note = waiting
      ? 'Kept — the agent gets it with the next message you send'
      : 'Queued — delivered when the agent finishes its current step';
    this.queued.append(h('div', { class: 'queued-message' },
      h('p', { class: 'queued-text', text }),
      images ? h('p', { class: 'queued-note', text: images === 1 ? 'With 1 image' : `With ${images} images` }) : null,
      h('p', { class: 'queued-note', text: note })));
    this.scroll.toBottom();
  }

  dequeue(text) {
    const item = [...this.queued.children].find((el) => el.querySelector('.queued-text').textContent === text.trim());
    item?.remove();
  }

  line(el) {
    this.list.append(el);
    this.showEmpty();
  }

  insert(view) {
    this.views.set(view.record.id, view);
    const seq = view.seq;
    if (Number.isFinite(seq) && (this.firstSeq == null || seq < this.firstSeq)) this.firstSeq = seq;
    this.place(view.el, seq);
    this.showEmpty();
  }

  // In order of `seq` among messages and summaries; other lines keep their place at the end.
  place(node, seq) {
    let before = null;
    for (let el = this.list.lastElementChild; el; el = el.previousElementSibling) {
      if (!el.classList.contains('message') && !el.classList.contains('compaction')) continue;
      if (seqOf(el) <= seq) break;
      before = el;
    }
    this.list.insertBefore(node, before);
  }

  showEmpty() {
    $('#conversation-empty').hidden = this.list.children.length > 0 || this.hasOlder;
  }

  /**
   * Loads earlier pages back to the message at `seq` if needed, then shows it near the top of
   * the view, marked for a moment. False if the task has no such message (it was deleted).
   */
  async reveal(seq) {
    while (this.hasOlder && this.firstSeq != null && seq < this.firstSeq) {
      const before = this.firstSeq;
      await (this.loadingOlder ?? this.loadOlder(Math.min(500, this.firstSeq - seq + PAGE)));
      if (this.firstSeq === before && this.loadingOlder == null) break; // failed: it says so
    }
    const el = this.list.querySelector(`.message[data-seq="${CSS.escape(String(seq))}"]`);
    if (!el) return false;
    this.scroll.reveal(el);
    for (const marked of this.list.querySelectorAll('.message.found')) marked.classList.remove('found');
    void el.offsetWidth; // the mark plays again for a second search of the same message
    el.classList.add('found');
    return true;
  }

  /** Loads the page before the first message shown; the promise is `loadingOlder` meanwhile. */
  loadOlder(limit = PAGE) {
    if (!this.hasOlder || this.loadingOlder || this.firstSeq == null || Date.now() < this.retryAt) return this.loadingOlder;
    this.loadingOlder = this.fetchOlder(limit).finally(() => { this.loadingOlder = null; });
    return this.loadingOlder;
  }

  async fetchOlder(limit) {
    const { generation } = this;
    const status = $('#older-status');
    status.textContent = 'Loading earlier messages…';
    status.hidden = false;
    try {
      const records = await call('older_messages', { taskId: this.taskId, beforeSeq: this.firstSeq, limit });
      if (generation !== this.generation) return;
      this.hasOlder = records.length >= limit;
      for (const record of records) if (!this.views.has(record.id)) this.insert(messageView(record));
      status.hidden = true;
    } catch (e) {
      status.textContent = `Earlier messages could not be loaded: ${messageOf(e)}`;
      this.retryAt = Date.now() + RETRY_MS; // not again on every scroll or resize
    }
  }
}
