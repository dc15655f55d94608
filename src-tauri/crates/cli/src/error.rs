//! A command's error: what kind it is, in the engine's one vocabulary ([`ErrorKind`]), and what
//! to do, in the CLI's words — the host's own [`HostError`], so nothing is flattened to a string
//! on its way out. Printed as one line on stderr, or with `--json` as one JSON object in the
//! shape the event streams give theirs: `{"type":"error","kind":"notFound","message":"…"}`.

use codewright_host::HostError;
use codewright_protocol::ErrorKind;

/// A command's result (`E` other than [`HostError`] only where clap parses an argument).
pub(crate) type Result<T, E = HostError> = std::result::Result<T, E>;

/// An error in what the user typed.
pub(crate) fn bad_input(message: impl Into<String>) -> HostError {
    HostError::new(ErrorKind::BadInput, message)
}

/// The error as `--json` prints it.
pub(crate) fn json(e: &HostError) -> String {
    serde_json::json!({"type": "error", "kind": e.kind, "message": e.message}).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_prints_as_the_events_print_theirs() {
        let e = HostError::new(ErrorKind::NotFound, "there is no task 9");
        assert_eq!(
            json(&e),
            r#"{"kind":"notFound","message":"there is no task 9","type":"error"}"#
        );
    }
}
