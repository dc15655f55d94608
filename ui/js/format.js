// Formatting of dates and numbers for display.

const relative = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' });
const absolute = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });

/** "just now", "5 minutes ago", "yesterday", or a date for anything older than a week. */
export function ago(ms, now = Date.now()) {
  const seconds = Math.round((ms - now) / 1000);
  const abs = Math.abs(seconds);
  if (abs < 45) return 'just now';
  if (abs < 3600) return relative.format(Math.round(seconds / 60), 'minute');
  if (abs < 86400) return relative.format(Math.round(seconds / 3600), 'hour');
  if (abs < 7 * 86400) return relative.format(Math.round(seconds / 86400), 'day');
  return absolute.format(new Date(ms));
}

/** Full date and time, for tooltips. */
export const when = (ms) => absolute.format(new Date(ms));

/** Human name of a task status. */
export function statusLabel(status) {
  return {
    idle: 'Idle',
    running: 'Running',
    awaiting_approval: 'Needs approval',
    paused: 'Paused',
    completed: 'Done',
    failed: 'Failed',
  }[status] ?? status;
}
