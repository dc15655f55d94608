// Work done at most once per frame: streamed text and tool output arrive many times a frame, but
// the screen only needs the latest state before each paint.

const queued = new Set();
let scheduled = false;

/** Runs `fn` before the next paint; asking again for the same `fn` before then changes nothing. */
export function nextFrame(fn) {
  queued.add(fn);
  if (scheduled) return;
  scheduled = true;
  requestAnimationFrame(flush);
}

function flush() {
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
