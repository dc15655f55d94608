// What to do about an error, by its kind: a few words under the message.

/** A hint for an error kind, or '' when there is nothing useful to add. */
export function hintFor(kind, provider) {
  switch (kind) {
    case 'auth':
    case 'missingKey':
      // Keys cannot be entered in the app yet: say where they come from.
      return `Set the key of ${provider || 'the provider'} in its environment variable before starting Codewright, or keep it in the system keyring with: codewright-cli auth set ${provider || 'PROVIDER'}`;
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
    case 'badResponse':
      return "Check the provider's base URL.";
    default:
      return '';
  }
}

/** The provider of a model id (`name@provider`), if it names one. */
export function providerOf(model) {
  const at = model ? model.lastIndexOf('@') : -1;
  return at > 0 ? model.slice(at + 1) : '';
}
