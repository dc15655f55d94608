// Code blocks of finished Markdown blocks: highlighted once (never while they stream) and given
// a Copy button.

import hljs from '../../vendor/highlight/highlight.min.js';
import { h } from '../dom.js';

/** Highlights every code block in `block` whose language is known, and adds its Copy button. */
export function decorateCode(block) {
  for (const code of block.querySelectorAll('pre > code')) {
    const language = languageOf(code);
    // An unknown or missing language is left plain: guessing is slow and often wrong.
    if (language && hljs.getLanguage(language)) hljs.highlightElement(code);
    framed(code.parentElement, code, language);
  }
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
