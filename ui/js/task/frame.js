// Work done at most once per frame: streamed text and tool output arrive many times a frame, but
// the screen only needs the latest state before each paint. A window in the background (another
// window has the focus) catches up four times a second instead: ten task windows streaming at once
// would otherwise spend both cores repainting what nobody is reading. It catches up at once when
// it comes to the front.

const BACKGROUND_MS = 250;
const queued = new Set();
let scheduled = false;

/** Runs `fn` before the next paint (in a background window, within a quarter of a second); asking
 *  again for the same `fn` before then changes nothing. */
export function nextFrame(fn) {
  queued.add(fn);
  if (scheduled) return;
  scheduled = true;
  if (document.hasFocus()) requestAnimationFrame(flush);
  else setTimeout(() => requestAnimationFrame(flush), BACKGROUND_MS);
}

window.addEventListener('focus', () => {
  if (scheduled) requestAnimationFrame(flush);
});

function flush() {
  if (!scheduled) return; // already caught up (the window came to the front meanwhile)
  scheduled = false;
  const fns = [...queued];
  queued.clear();
  for (const fn of fns) {
    // One broken part must not stop the others from rendering.
    try {
      fn();
    } catch (e) {
      console.error(e);
    }
  }
}
