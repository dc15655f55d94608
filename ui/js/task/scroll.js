// Keeps the conversation where the reader wants it: on the newest line while they follow the
// stream, and on the line they are reading once they scroll up — also when older messages are
// added above it or something above it grows — in the conversation, or the window's header
// above the conversation (a plan appearing, a title wrapping). The browser's own scroll anchoring is off
// (`overflow-anchor: none`), so this moves the view, and only one other thing does: a long
// answer's chunks made again above the view move it at once by what they grew (markdown.js),
// which the chunk this class keeps at the top of the view agrees with.

const NEAR_BOTTOM = 40;
const NEAR_TOP = 300;

export class Scroller {
  /**
   * `scroller` scrolls; `content` is watched for size changes; `items` holds the elements a
   * reading position is kept on; `onNearTop` is called when the reader nears the top.
   */
  constructor({ scroller, content, items, jump, onNearTop }) {
    Object.assign(this, { scroller, items, jump, onNearTop });
    this.following = true;
    // { el, at, shown }: the element at the top of the view (or one to keep shown), and where
    // it was on screen.
    this.anchor = null;
    this.lastTop = 0;
    scroller.addEventListener('scroll', () => this.onScroll(), { passive: true });
    const resized = new ResizeObserver(() => this.onResize());
    resized.observe(content);
    resized.observe(scroller); // the window or the composer changed size
    jump.addEventListener('click', () => this.toBottom());
    // Opening or closing a disclosure (a summary, thinking, a tool's details) keeps it under the
    // reader's pointer: the view stops following. Caught before it toggles, so the first resize
    // already keeps it in place.
    items.addEventListener('click', (event) => {
      const summary = event.target.closest('summary');
      if (summary) this.hold(summary);
    }, true);
  }

  /** Keeps `el` where it is on screen as the content changes, until the reader scrolls down. */
  hold(el) {
    this.following = false;
    this.anchor = { el, at: el.getBoundingClientRect().top, shown: true };
  }

  distanceFromBottom() {
    const s = this.scroller;
    return s.scrollHeight - s.scrollTop - s.clientHeight;
  }

  onScroll() {
    const top = this.scroller.scrollTop;
    // A scroll to where this class last put the view is its own (it may arrive after the content
    // changed again, when the element at the top is no longer what the reader saw).
    if (top === this.lastTop) return;
    // Only a move up stops following: content growing below never does.
    if (this.distanceFromBottom() <= NEAR_BOTTOM) this.following = true;
    else if (top < this.lastTop) this.following = false;
    this.lastTop = top;
    this.anchor = this.following ? null : this.findAnchor();
    this.showJump();
    this.checkTop();
  }

  onResize() {
    if (this.following) this.scroller.scrollTop = this.scroller.scrollHeight;
    else this.restoreAnchor();
    this.lastTop = this.scroller.scrollTop;
    this.showJump();
    this.checkTop(); // the content may not fill the view yet
  }

  /** Shows `el` near the top of the view and keeps it there until the reader scrolls. */
  reveal(el) {
    const space = this.scroller.clientHeight;
    this.following = false;
    this.anchor = { el, at: this.scroller.getBoundingClientRect().top + Math.min(48, space / 4), shown: true };
    this.restoreAnchor();
    this.lastTop = this.scroller.scrollTop;
    this.showJump();
  }

  toBottom() {
    this.following = true;
    this.anchor = null;
    this.scroller.scrollTop = this.scroller.scrollHeight;
    this.lastTop = this.scroller.scrollTop;
    this.showJump();
  }

  /** Asks for older messages if the reader is near the top (or everything fits on screen). */
  checkTop() {
    if (this.scroller.scrollTop < NEAR_TOP) this.onNearTop();
  }

  showJump() {
    this.jump.hidden = this.following || this.distanceFromBottom() <= NEAR_BOTTOM;
  }

  /**
   * The element at the top of the view: a message, or within a long answer the chunk of blocks
   * there (chunks above it may change height when they are made again, see markdown.js).
   */
  findAnchor() {
    const top = this.scroller.getBoundingClientRect().top;
    const first = (els) => {
      for (const el of els) {
        if (el.hidden) continue;
        const rect = el.getBoundingClientRect();
        if (rect.bottom > top) return { el, at: rect.top };
      }
      return null;
    };
    const message = first(this.items.children);
    return (message && first(message.el.querySelectorAll('.md-chunk'))) ?? message;
  }

  /**
   * Puts the anchor back where it was on screen (not in the view: when the header above the view
   * grows, the view's top moves down, and what the reader sees must not move with it) — but an
   * element to keep shown (one just opened, or revealed) never above the view's top.
   */
  restoreAnchor() {
    const { anchor } = this;
    if (!anchor || !anchor.el.isConnected) return;
    const at = anchor.shown ? Math.max(anchor.at, this.scroller.getBoundingClientRect().top) : anchor.at;
    const shift = anchor.el.getBoundingClientRect().top - at;
    if (shift !== 0) this.scroller.scrollTop += shift;
  }
}
