// Tiny DOM helpers. Text is always set through text nodes, never parsed as HTML, so whatever a
// user, a model or a tool wrote is shown exactly and can never inject markup.

/**
 * Creates an element. `props`: `class`, `text`, `on<event>` handlers, `dataset`, or attributes.
 * Children may be nodes, strings (added as text) or null (skipped).
 */
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value == null || value === false) continue;
    if (key === 'class') el.className = value;
    else if (key === 'text') el.textContent = value;
    else if (key === 'dataset') Object.assign(el.dataset, value);
    else if (key.startsWith('on')) el.addEventListener(key.slice(2), value);
    else el.setAttribute(key, value === true ? '' : String(value));
  }
  for (const child of children.flat()) {
    if (child == null) continue;
    el.append(typeof child === 'string' ? document.createTextNode(child) : child);
  }
  return el;
}

export const $ = (selector, root = document) => root.querySelector(selector);

/**
 * Makes `old` show what `fresh` shows, keeping every element that is still there: an element is
 * kept when its tag and its `data-key` are the same (text and attributes are brought over), so
 * a pointer pressed on a button is still on it when released, and focus stays where it is.
 * Listeners are not brought over: a kept element keeps its own, so give elements whose
 * listener differs a distinct `data-key`. Returns the node now in the page.
 */
export function morph(old, fresh) {
  const same = old.nodeName === fresh.nodeName
    && (old.nodeType !== Node.ELEMENT_NODE || old.dataset.key === fresh.dataset.key);
  if (!same) {
    old.replaceWith(fresh);
    return fresh;
  }
  if (old.nodeType !== Node.ELEMENT_NODE) {
    if (old.nodeValue !== fresh.nodeValue) old.nodeValue = fresh.nodeValue;
    return old;
  }
  for (const { name } of [...old.attributes]) if (!fresh.hasAttribute(name)) old.removeAttribute(name);
  for (const { name, value } of fresh.attributes) if (old.getAttribute(name) !== value) old.setAttribute(name, value);
  const kept = [...old.childNodes];
  const wanted = [...fresh.childNodes];
  wanted.forEach((child, i) => (i < kept.length ? morph(kept[i], child) : old.append(child)));
  for (const extra of kept.slice(wanted.length)) extra.remove();
  return old;
}

/**
 * Holds what `el` shows still while the pointer moves over it: a list redrawn as things change
 * elsewhere would slide its rows — and a row's buttons — under the pointer between aim and
 * click. Returns `held()`, asked before each such redraw: true while the pointer has moved over
 * `el` in the last `ms`; `redraw` is then called once it rests that long (looked at again then)
 * or leaves. A redraw the user asked for is never held.
 */
export function holdUnderPointer(el, redraw, ms = 2000) {
  let moved = -Infinity;
  let timer = 0;
  let waiting = false;
  const held = () => {
    clearTimeout(timer);
    const rested = performance.now() - moved;
    waiting = el.matches(':hover') && rested < ms;
    if (waiting) timer = setTimeout(() => held() || redraw(), ms - rested);
    return waiting;
  };
  el.addEventListener('pointermove', () => { moved = performance.now(); }, { passive: true });
  el.addEventListener('pointerleave', () => {
    moved = -Infinity;
    if (waiting) {
      clearTimeout(timer);
      waiting = false;
      redraw();
    }
  });
  return held;
}

/** Shows a short-lived notice in the corner (errors stay until clicked). */
export function toast(message, { error = false } = {}) {
  const box = $('#toasts');
  if (!box) return;
  const item = h('div', { class: error ? 'toast error' : 'toast', text: message, onclick: () => item.remove() });
  box.append(item);
  if (!error) setTimeout(() => item.remove(), 4000);
}

/** Replaces the page with the error screen. */
export function showFatal(message, dataDir, title) {
  $('#app').hidden = true;
  if (title) $('#fatal-title').textContent = title;
  $('#fatal-message').textContent = message;
  $('#fatal-path').textContent = dataDir || 'unknown';
  $('#fatal').hidden = false;
}

/**
 * A text field keeps its focus only while its window is in front, and gets it back when the
 * window is. (WebKitGTK keeps blinking the caret of a window in the background: three task
 * windows with focused composers cost ~20 % of a core doing nothing.)
 */
export function restFocusInBackground() {
  let held = null;
  window.addEventListener('blur', () => {
    const el = document.activeElement;
    if (el?.matches('textarea, input:not([type]), input[type="text"], input[type="search"]')) {
      held = el;
      el.blur();
    }
  });
  window.addEventListener('focus', () => {
    if (held?.isConnected && document.activeElement === document.body) held.focus();
    held = null;
  });
}
