// The only door to the backend: commands in, store and agent events out. Every error a command
// returns is `{kind, message, fatal}`; `message` is written for people and shown as is.

import { COMMANDS, EVENTS } from './protocol.js';

const tauri = window.__TAURI__;

/** Invokes a backend command. Rejects with `{kind, message, fatal}`. */
export function call(command, args = {}) {
  if (!tauri) {
    return Promise.reject({ kind: 'noBackend', message: 'This page must be opened by the Codewright app.', fatal: true });
  }
  if (!COMMANDS.includes(command)) {
    return Promise.reject({ kind: 'notFound', message: `This window asked for “${command}”, which this version of Codewright does not have.`, fatal: false });
  }
  return tauri.core.invoke(command, args);
}

// Listens as this window (not as "any"), so it hears only what is sent to it: a task window gets
// its own task's events, not every window's.
function listen(name, handler) {
  if (!EVENTS.includes(name)) throw new Error(`no event ${name}`);
  if (!tauri) return Promise.resolve(() => {});
  return tauri.webviewWindow.getCurrentWebviewWindow().listen(name, (e) => handler(e.payload));
}

/** Calls `handler(event)` for every change to projects and tasks, from any window or process. */
export function onStoreEvent(handler) {
  return listen('store', handler);
}

/** Calls `handler({taskId, at})` when this spare task window is given the task to show. */
export function onAdopt(handler) {
  return listen('adopt', handler);
}

/** Calls `handler(event)` for every AgentEvent of the runs in this app, as they happen. */
export function onAgentEvent(handler) {
  return listen('agent', handler);
}

/** Calls `handler({at, changes})` when the main window asks this task window to show a message (by seq) or its Changes view. */
export function onReveal(handler) {
  return listen('reveal', handler);
}

/** Calls `handler({projectId, folders})` when folders open in the main window's tree change. */
export function onTreeChange(handler) {
  return listen('tree', handler);
}

/** Calls `handler({taskId, standing})` when a followed worktree task's branch stands somewhere new. */
export function onStanding(handler) {
  return listen('standing', handler);
}

/** Calls `handler(path)` when the main window's tree puts a project file into this task's message. */
export function onAttach(handler) {
  return listen('attach', handler);
}

/** A person-readable message for anything a command or the runtime threw. */
export function messageOf(error) {
  let text = String(error);
  if (typeof error === 'string') text = error;
  else if (error && typeof error.message === 'string') text = error.message;
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** Closes this window (as its title bar's close button does). */
export function closeWindow() {
  return call('close_window');
}
