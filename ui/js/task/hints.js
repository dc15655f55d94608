// What to do about an error, by its kind: a few words under the message.

/** A hint for an error kind, or '' when there is nothing useful to add. */
export function hintFor(kind, provider) {
  switch (kind) {
    case 'auth':
    case 'missingKey':
      return `Paste the key of ${provider || 'the provider'} in Settings → Model (Ctrl+, in the main window), where it is kept in the system keyring, or set its environment variable before starting Codewright.`;
    case 'unknownModel':
      return 'Choose another model in the picker below.';
    case 'rateLimit':
      return 'Wait a moment, then send again.';
    case 'noModel':
      return 'Choose a model in the picker below.';
    case 'busy':
      return 'Another window or process is running this task.';
    case 'network':
      return "Check your connection or the provider's URL.";
    case 'timeout':
      return 'Send again to retry; a slow local model may need a longer timeout for its provider.';
    // badResponse: its message says what to check (a web page: the base URL; a garbled
    // stream: what is in between).
    default:
      return '';
  }
}

/** The provider of a model id (`name@provider`), if it names one. */
export function providerOf(model) {
  const at = model ? model.lastIndexOf('@') : -1;
  return at > 0 ? model.slice(at + 1) : '';
}
