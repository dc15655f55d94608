// Links in rendered Markdown never navigate the window: a click asks first, showing the real
// address, and only web and mail links are handed to the browser.

import { call } from '../api.js';
import { $, h } from '../dom.js';
import { ask } from '../dialogs.js';

const OPENABLE = new Set(['http:', 'https:', 'mailto:']);

/** Intercepts every link click inside `root`. */
export function interceptLinks(root, taskId) {
  root.addEventListener('click', (event) => {
    const link = event.target.closest('a[href]');
    if (!link) return;
    event.preventDefault();
    confirmLink(link, taskId);
  });
  // A middle click would open the link in a new webview.
  root.addEventListener('auxclick', (event) => {
    if (event.target.closest('a[href]')) event.preventDefault();
  });
}

function confirmLink(link, taskId) {
  const href = link.getAttribute('href');
  const url = parse(href);
  const openable = Boolean(url && OPENABLE.has(url.protocol));
  const claimed = openable ? claimedHost(link.textContent) : null;
  const misleading = claimed && url.hostname && bare(claimed) !== bare(url.hostname);
  return ask($('#link-dialog'), {
    title: openable ? 'Open this link in your browser?' : 'This link cannot be opened',
    body: [
      h('p', { id: 'link-url', class: 'link-url', text: href }),
      misleading ? h('p', { class: 'form-error', text: `The link’s text shows ${claimed}, but it leads to ${url.hostname}.` }) : null,
      openable ? null : h('p', { class: 'muted', text: 'Only web (http, https) and mail links can be opened.' }),
    ],
    confirm: openable ? { label: 'Open in browser', action: () => call('open_link', { taskId, url: href }) } : null,
  });
}

function parse(href) {
  try {
    return new URL(href);
  } catch {
    return null; // relative or malformed
  }
}

// The host a link's text shows, when the text is an address ("https://docs.rs/serde",
// "www.example.com"); a file name like "README.md" is not taken for one.
function claimedHost(text) {
  const match = /^\s*(?:https?:\/\/|(?=www\.))([a-z0-9-]+(?:\.[a-z0-9-]+)+)(?:[/:?#]\S*)?\s*$/i.exec(text);
  return match ? match[1].toLowerCase() : null;
}

const bare = (host) => host.replace(/^www\./, '');
