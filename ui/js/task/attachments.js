// Images attached to the next message: picked with the paperclip button (it opens a visually
// hidden file input), pasted into the message box, or dropped on the composer. Each is read whole
// into `{ kind: 'image', name, mime, size, data }` (`data`: the bytes in base64), shown above the
// message box as a thumbnail with a remove button, and goes with the next message (composer.js).
// PNG, JPEG, GIF and WebP only; at most 3.75 MB each (5 MB as base64, the providers' limit) and 10 per message. Files dropped anywhere else
// in the window are refused, so a drop never opens the file in place of the task.

import { h } from '../dom.js';

export const IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'];
const MAX_SIZE = 3.75 * 1024 * 1024;
const MAX_COUNT = 10;
const ONLY_IMAGES = 'Only images can be attached here (PNG, JPEG, GIF or WebP)';
const TOO_MANY = `At most ${MAX_COUNT} images per message`;
const HIGHLIGHT_MS = 150; // dragover repeats while a drag is held over the composer
const SVG = 'http://www.w3.org/2000/svg';

const tray = {
  items: [], // the attachments, in order
  thumbs: new WeakMap(), // attachment → its thumbnail
  reading: 0, // files accepted and still being read
  reads: Promise.resolve(),
  row: null,
  input: null,
  onError: () => {},
  dragTimer: 0,
};

/**
 * Wires the composer's attaching: `composer` is the drop area, `textarea` takes pastes, `button`
 * opens `fileInput`, `row` shows the thumbnails. `onError(message)` reports what was refused,
 * `onError(null)` that a later batch was all fine.
 */
export function initAttachments({ composer, textarea, button, fileInput, row, onError }) {
  Object.assign(tray, { row, input: textarea, onError });
  button.append(paperclip());
  button.addEventListener('click', () => fileInput.click());
  fileInput.addEventListener('change', () => {
    add([...fileInput.files]);
    fileInput.value = ''; // picking the same file again is a change too
    textarea.focus(); // Enter sends, as before the chooser opened
  });
  textarea.addEventListener('paste', (event) => {
    const images = filesOf(event.clipboardData).filter((file) => file.type.startsWith('image/'));
    if (!images.length) return; // text (or anything else) is pasted as usual
    add(images);
    // A spreadsheet or a document puts its text next to a picture of it: the text is pasted too.
    if (!event.clipboardData.types.includes('text/plain')) event.preventDefault();
  });
  // Files dragged over the window are taken on the composer and refused elsewhere; nothing dropped
  // is opened in place of the page. Text dragged into a text field is dropped there as usual.
  document.addEventListener('dragover', (event) => {
    const files = hasFiles(event);
    const over = files && composer.contains(event.target);
    highlight(composer, over);
    if (!files && isTextField(event.target)) return;
    event.preventDefault();
    if (event.dataTransfer) event.dataTransfer.dropEffect = over ? 'copy' : 'none';
  });
  document.addEventListener('drop', (event) => {
    const files = hasFiles(event);
    if (!files && isTextField(event.target)) return;
    event.preventDefault();
    highlight(composer, false);
    if (files && composer.contains(event.target)) add([...event.dataTransfer.files]);
  });
}

/** What goes with the next message, once every file is read. */
export async function pendingAttachments() {
  await tray.reads;
  return tray.items.slice();
}

/** Whether anything is attached or being read. */
export const hasAttachments = () => tray.items.length + tray.reading > 0;

/** Takes away these (sent) attachments; ones added meanwhile stay. */
export function clearAttachments(sent) {
  tray.items = tray.items.filter((item) => !sent.includes(item));
  render();
}

/** Checks and reads `files`, then shows them; what is refused is reported, the rest attached. */
function add(files) {
  const errors = new Set();
  const accepted = [];
  for (const file of files) {
    if (!IMAGE_TYPES.includes(file.type)) errors.add(ONLY_IMAGES);
    else if (file.size > MAX_SIZE) errors.add(`${nameOf(file)} is larger than 3.75 MB; attach a smaller image`);
    else if (tray.items.length + tray.reading + accepted.length >= MAX_COUNT) errors.add(TOO_MANY);
    else accepted.push(file);
  }
  tray.reading += accepted.length;
  const batch = Promise.allSettled(accepted.map(read)).then((results) => {
    tray.reading -= accepted.length;
    results.forEach((result, i) => {
      if (result.status === 'fulfilled') tray.items.push(result.value);
      else errors.add(`${nameOf(accepted[i])} could not be read`);
    });
    render();
    tray.onError(errors.size ? [...errors].join(' · ') : null);
  });
  tray.reads = Promise.all([tray.reads, batch]);
}

function read(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => {
      const url = String(reader.result);
      resolve({ kind: 'image', name: nameOf(file), mime: file.type, size: file.size, data: url.slice(url.indexOf(',') + 1) });
    };
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(file);
  });
}

/** A pasted image may have no name: it gets one by its type. */
function nameOf(file) {
  return file.name || `pasted-image.${file.type.split('/')[1] || 'png'}`;
}

function filesOf(data) {
  if (!data) return [];
  const items = [...(data.items ?? [])].filter((item) => item.kind === 'file').map((item) => item.getAsFile());
  return items.length ? items.filter(Boolean) : [...(data.files ?? [])];
}

const hasFiles = (event) => Array.from(event.dataTransfer?.types ?? []).includes('Files');
const isTextField = (el) => Boolean(el.closest?.('textarea, input, [contenteditable]'));

/** Marks the composer while files are held over it (cleared once the dragovers stop). */
function highlight(composer, on) {
  clearTimeout(tray.dragTimer);
  composer.classList.toggle('drop-target', on);
  if (on) tray.dragTimer = setTimeout(() => composer.classList.remove('drop-target'), HIGHLIGHT_MS);
}

function render() {
  tray.row.hidden = tray.items.length === 0;
  tray.row.replaceChildren(...tray.items.map(thumbOf));
}

function thumbOf(item) {
  let thumb = tray.thumbs.get(item);
  if (!thumb) {
    thumb = h('div', { class: 'attachment-thumb', title: `${item.name} (${sizeText(item.size)})` },
      h('img', { src: `data:${item.mime};base64,${item.data}`, alt: item.name }),
      h('button', { type: 'button', class: 'attachment-remove', 'aria-label': `Remove ${item.name}`, title: 'Remove', text: '×', onclick: () => remove(item) }));
    tray.thumbs.set(item, thumb);
  }
  return thumb;
}

/** Removes one; the focus goes to the next remove button, or back to the message box. */
function remove(item) {
  const index = tray.items.indexOf(item);
  if (index < 0) return;
  const focused = tray.row.contains(document.activeElement);
  tray.items.splice(index, 1);
  render();
  if (!focused) return;
  const next = tray.items[Math.min(index, tray.items.length - 1)];
  (next ? tray.thumbs.get(next).querySelector('.attachment-remove') : tray.input).focus();
}

function sizeText(bytes) {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${Math.round(bytes / 1024)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

/** The button's icon: a paperclip, drawn in the text colour. */
function paperclip() {
  const svg = document.createElementNS(SVG, 'svg');
  const path = document.createElementNS(SVG, 'path');
  for (const [key, value] of Object.entries({ viewBox: '0 0 24 24', width: 18, height: 18, 'aria-hidden': 'true', focusable: 'false' })) {
    svg.setAttribute(key, value);
  }
  for (const [key, value] of Object.entries({
    d: 'M16 8v8a4 4 0 0 1-8 0V6a3 3 0 0 1 6 0v9a1 1 0 0 1-2 0V8',
    transform: 'rotate(45 12 12)', fill: 'none', stroke: 'currentColor',
    'stroke-width': '1.8', 'stroke-linecap': 'round', 'stroke-linejoin': 'round',
  })) {
    path.setAttribute(key, value);
  }
  svg.append(path);
  return svg;
}
