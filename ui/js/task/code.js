// Code blocks of finished Markdown blocks: highlighted once (never while they stream) and given
// a Copy button.
//
// The highlighter (129 KB) is loaded only once the window has painted its first screen: in a new
// window, evaluating it delayed that screen by 30-40 ms. Blocks decorated before it is loaded are
// highlighted when it arrives (only their colours change, not their size).

import { h } from '../dom.js';

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
