// Code blocks of finished Markdown blocks: highlighted once (never while they stream) and given
// a Copy button; and the lines of a diff, coloured by their file's language.
//
// The highlighter (129 KB) is loaded only once the window has painted its first screen: in a new
// window, evaluating it delayed that screen by 30-40 ms. Blocks decorated before it is loaded are
// highlighted when it arrives (only their colours change, not their size).

import { h } from '../dom.js';

/** The most text of a diff's side coloured, and the longest line (characters). */
const COLOUR_MAX = 100_000;
const LINE_MAX = 2_000;

/** The highlighter, once loaded; the code elements waiting for it, with their languages. */
let hljs = null;
let waiting = [];
let loading = null;

/** Highlights every code block in `block` whose language is known, and adds its Copy button. */
export function decorateCode(block) {
  for (const code of block.querySelectorAll('pre > code')) {
    const language = languageOf(code);
    // An unknown or missing language is left plain: guessing is slow and often wrong.
    if (language) highlight(code, language);
    framed(code.parentElement, code, language);
  }
}

/** Loads the highlighter (once; call it after the first paint) and highlights the blocks
 * decorated until then. */
export function loadHighlighter() {
  loading ??= import('../../vendor/highlight/highlight.min.js').then((module) => {
    hljs = module.default;
    for (const [code, language] of waiting) if (code.isConnected) highlight(code, language);
    waiting = [];
  });
  return loading;
}

/**
 * The lines of one side of a diff (`texts`, in order) coloured as `path`'s language: the HTML
 * the highlighter wrote for each line (its text escaped, only its `<span class>` tags added), or
 * null when the language is not known or the text is too long to colour in one step.
 * Highlighted as one text, so a comment or string over several lines is coloured as one; its
 * tags are closed at each line's end and opened again on the next.
 */
export async function colourLines(texts, path) {
  await loadHighlighter();
  const language = languageOfPath(path);
  // Too long to colour in one step without holding the window (a minified line, a huge file):
  // left plain.
  if (!language || texts.reduce((n, t) => n + t.length, 0) > COLOUR_MAX || texts.some((t) => t.length > LINE_MAX)) return null;
  const start = performance.now();
  const lines = splitLines(hljs.highlight(texts.join('\n'), { language, ignoreIllegals: true }).value);
  performance.measure('colour-lines', { start }); // for scripts/bench-changes.py
  return lines;
}

/** The highlighter's language for a file's name: by its extension (`py`), or by its whole name
 * when it has none (`Makefile`). */
function languageOfPath(path) {
  const name = path.slice(path.lastIndexOf('/') + 1).toLowerCase();
  const wanted = name.includes('.') ? name.slice(name.lastIndexOf('.') + 1) : name;
  return wanted && hljs.getLanguage(wanted) ? wanted : null;
}

/** Cuts highlighted HTML at its line breaks, closing the open `<span>`s at each and opening them
 * again after. */
function splitLines(html) {
  const lines = [];
  const open = []; // the opening tags in force
  let line = '';
  for (const part of html.split(/(<span[^>]*>|<\/span>|\n)/)) {
    if (part === '\n') {
      lines.push(line + '</span>'.repeat(open.length));
      line = open.join('');
    } else if (part.startsWith('<span')) {
      open.push(part);
      line += part;
    } else if (part === '</span>') {
      open.pop();
      line += part;
    } else {
      line += part;
    }
  }
  lines.push(line);
  return lines;
}

function highlight(code, language) {
  if (!hljs) waiting.push([code, language]);
  else if (hljs.getLanguage(language)) hljs.highlightElement(code);
}

function languageOf(code) {
  const named = [...code.classList].find((c) => c.startsWith('language-'));
  return named ? named.slice('language-'.length) : '';
}

function framed(pre, code, language) {
  const copy = h('button', { type: 'button', class: 'copy-code', 'aria-label': 'Copy code', text: 'Copy' });
  copy.addEventListener('click', () => copyText(copy, code.textContent));
  const frame = h('div', { class: 'code-block' });
  pre.replaceWith(frame);
  frame.append(h('div', { class: 'code-head' }, h('span', { class: 'code-lang', text: language }), copy), pre);
}

async function copyText(button, text) {
  try {
    await navigator.clipboard.writeText(text);
    button.textContent = 'Copied';
  } catch {
    button.textContent = 'Copy failed';
  }
  setTimeout(() => { button.textContent = 'Copy'; }, 1500);
}
