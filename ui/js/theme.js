// The colour theme of every window: the system's, or light or dark as chosen in Settings (kept in
// this app's localStorage, which its windows share; another window's change arrives as a
// `storage` event). A classic script in <head>, so the first paint already has its colours.
'use strict';
(() => {
  const KEY = 'codewright.theme';
  const system = window.matchMedia('(prefers-color-scheme: dark)');
  function apply() {
    const chosen = localStorage.getItem(KEY);
    const theme = chosen === 'dark' || (chosen !== 'light' && system.matches) ? 'dark' : 'light';
    document.documentElement.dataset.theme = theme;
    // Stylesheets made for one theme (the code highlighter's) are used only in it.
    for (const link of document.querySelectorAll('link[data-theme]')) {
      link.media = link.dataset.theme === theme ? 'all' : 'not all';
    }
  }
  apply();
  system.addEventListener('change', apply);
  window.addEventListener('storage', (e) => {
    if (e.key === KEY || e.key === null) apply();
  });
})();
