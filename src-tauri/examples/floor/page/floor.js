// Same startup marker as Codewright's main window: the frame after the first render.
requestAnimationFrame(() => requestAnimationFrame(() => performance.mark('sidebar-painted')));
document.body.dataset.ready = 'true';
