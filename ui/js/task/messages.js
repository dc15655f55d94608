// One stored message on screen, by role. Assistant messages keep a view per visible part, so a
// new version of the message (streamed deltas, a stored update) changes only what changed. A user
// message shows its text, then what was attached: inline images as thumbnails, the rest by name.

import { h } from '../dom.js';
import { nextFrame } from './frame.js';
import { forgetDetached, MarkdownView } from './markdown.js';
import { applyToolResult, panelFor } from './tools.js';

/** The view of a message record: `.el` is its element, `update(record)` applies a newer version. */
export function messageView(record) {
  if (record.role === 'assistant') return new AssistantMessage(record);
  if (record.role === 'tool') return new ToolMessage(record);
  return new TextMessage(record);
}

// Image types shown inline (as `data:` URLs, which the CSP allows for images); others are named.
const INLINE_IMAGES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'];

const STOP_NOTES = {
  aborted: 'Stopped',
  error: 'The answer was cut off by an error',
  max_tokens: 'The answer reached the output limit',
  content_filter: 'Stopped by the provider’s content filter',
};

class MessageView {
  constructor(record) {
    this.record = record;
    this.live = false;
    this.toldError = false; // its error was shown in this window as it happened
    this.note = h('p', { class: 'message-note', hidden: true });
    this.el = h('article', { class: `message ${record.role}`, dataset: { id: record.id } });
  }

  update(record) {
    this.record = record;
    this.setSeq(record.seq);
    this.el.classList.toggle('compacted', Boolean(record.compacted));
    this.showNote();
  }

  setSeq(seq) {
    if (seq == null) return;
    this.el.dataset.seq = seq;
    if (this.record.seq !== seq) this.record = { ...this.record, seq };
  }

  get seq() {
    return this.record.seq ?? Infinity; // a message that just started streaming comes last
  }

  showNote() {
    const { stopReason, complete, error } = this.record;
    let text = '';
    if (!this.live) text = STOP_NOTES[stopReason] ?? (complete === false ? 'Incomplete' : '');
    // What the error was, when this window did not show it as it happened (a task read later).
    if (text && stopReason === 'error' && error && !this.toldError) text = `${text}: ${error}`;
    this.note.textContent = text;
    this.note.hidden = !text;
    this.note.classList.toggle('note-error', stopReason === 'error');
  }
}

class TextMessage extends MessageView {
  constructor(record) {
    super(record);
    this.text = h('div', { class: 'message-text' });
    this.attachments = h('div', { class: 'attachments' });
    this.shown = null; // what the attachments row shows (it is rebuilt only when that changes)
    this.el.append(this.text, this.attachments, this.note);
    this.update(record);
  }

  update(record) {
    super.update(record);
    this.text.textContent = textOf(record);
    const files = record.parts.filter((p) => p.type === 'attachment');
    const shown = JSON.stringify(files.map((a) => [a.kind, a.name, a.mime, a.size, a.path, a.data?.length]));
    if (shown === this.shown) return;
    this.shown = shown;
    this.attachments.hidden = files.length === 0;
    this.attachments.replaceChildren(...files.map(attachmentView));
  }
}

/** An attachment of a message: an image it carries as a thumbnail, anything else as its name. */
function attachmentView(a) {
  if (a.kind === 'image' && a.data && INLINE_IMAGES.includes(a.mime)) {
    return h('span', { class: 'message-attachment', title: a.name },
      h('img', { src: `data:${a.mime};base64,${a.data}`, alt: a.name, decoding: 'async' }));
  }
  return h('span', { class: 'message-attachment attachment', title: a.path || a.mime, text: a.name });
}

// Tool results are shown in the panels of their calls, not as messages of their own.
class ToolMessage extends MessageView {
  constructor(record) {
    super(record);
    this.el.hidden = true;
    this.update(record);
  }

  update(record) {
    super.update(record);
    for (const part of record.parts) if (part.type === 'tool_result') applyToolResult(part);
  }
}

class AssistantMessage extends MessageView {
  constructor(record) {
    super(record);
    this.parts = [];
    this.body = h('div', { class: 'message-body' });
    this.el.append(this.body, this.note);
    this.update(record);
  }

  update(record) {
    super.update(record);
    this.reconcile(record.parts.filter(isVisible));
    if (record.complete) this.finish();
    const usage = usageTitle(record);
    if (usage) this.el.title = usage;
  }

  startLive() {
    this.live = true;
    this.el.classList.add('live');
    this.showNote();
  }

  // Its note waits for the stored copy: the run often ends before the final copy arrives.
  endLive() {
    this.live = false;
    this.el.classList.remove('live');
    this.finish();
  }

  appendText(delta) {
    this.current(TextPart).append(delta);
  }

  appendThinking(delta) {
    this.current(ThinkingPart).append(delta);
  }

  /** A tool call started streaming: its panel goes after what was written so far. */
  startToolCall(callId, name) {
    const part = new CallPart(callId, name);
    this.push(part);
    part.panel.start();
  }

  finish() {
    for (const part of this.parts) part.finish?.();
  }

  // The last part if it is of this kind, else a new one (text after a tool call starts anew).
  current(Kind) {
    const last = this.parts.at(-1);
    if (last instanceof Kind) return last;
    const part = new Kind();
    this.push(part);
    return part;
  }

  push(part) {
    this.parts.push(part);
    this.body.append(part.el);
  }

  // Keeps the views of parts that still match, rebuilds from the first that does not.
  reconcile(parts) {
    parts.forEach((part, i) => {
      const view = this.parts[i];
      if (view?.matches(part)) {
        view.update(part);
        return;
      }
      this.truncate(i);
      const fresh = partView(part);
      fresh.update(part);
      this.push(fresh);
    });
    this.truncate(parts.length);
  }

  truncate(length) {
    const removed = this.parts.splice(length);
    for (const view of removed) view.el.remove();
    if (removed.length) forgetDetached();
  }
}

function partView(part) {
  if (part.type === 'text') return new TextPart();
  if (part.type === 'thinking') return new ThinkingPart();
  return new CallPart(part.id, part.name);
}

class TextPart {
  constructor() {
    this.md = new MarkdownView();
    this.el = this.md.el;
  }

  matches(part) {
    return part.type === 'text';
  }

  update(part) {
    this.md.set(part.text);
  }

  append(delta) {
    this.md.append(delta);
  }

  finish() {
    this.md.finish();
  }
}

class ThinkingPart {
  constructor() {
    this.text = ''; // all of it, shown or not
    this.incoming = ''; // not shown yet
    this.body = h('div', { class: 'thinking-text' });
    this.el = h('details', { class: 'thinking' }, h('summary', { text: 'Thinking' }), this.body);
    this.flush = () => {
      this.body.append(this.incoming);
      this.incoming = '';
    };
  }

  matches(part) {
    return part.type === 'thinking';
  }

  update(part) {
    if (part.text.startsWith(this.text)) {
      this.append(part.text.slice(this.text.length));
      return;
    }
    this.text = part.text;
    this.incoming = '';
    this.body.textContent = part.text;
  }

  append(delta) {
    if (!delta) return;
    this.text += delta;
    this.incoming += delta;
    nextFrame(this.flush);
  }
}

class CallPart {
  constructor(callId, name) {
    this.id = callId;
    this.panel = panelFor(callId, name);
    this.el = this.panel.el;
  }

  matches(part) {
    return part.type === 'tool_call' && part.id === this.id;
  }

  update(part) {
    this.panel.setCall(part.name, part.arguments);
  }
}

// Parts with something to show; empty text or thinking (a redacted block) is skipped.
function isVisible(part) {
  if (part.type === 'text' || part.type === 'thinking') return part.text.length > 0;
  return part.type === 'tool_call';
}

/** The text of a message (its text parts, joined by blank lines). */
export function textOf(record) {
  return record.parts.filter((p) => p.type === 'text').map((p) => p.text).join('\n\n');
}

function usageTitle({ usage, model }) {
  if (!usage) return '';
  const n = (x) => x.toLocaleString();
  // `estimated`: the server reported no usage; Codewright counted about 4 characters a token.
  const about = usage.estimated ? 'about ' : '';
  const parts = [`${about}${n(usage.input)} tokens in`, `${about}${n(usage.output)} out`];
  if (usage.cacheRead) parts.push(`${n(usage.cacheRead)} read from cache`);
  if (usage.reasoning) parts.push(`${n(usage.reasoning)} reasoning`);
  if (model) parts.push(model);
  if (usage.estimated) parts.push('estimated: the server did not report usage');
  return parts.join(' · ');
}
