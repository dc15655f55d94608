//! Typed ids. They are SQLite rowids (never reused: the tables use AUTOINCREMENT), so they are
//! short enough to type on the command line and safe to keep in window labels.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident, $what:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub i64);

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }

        impl FromStr for $name {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                s.trim()
                    .parse::<i64>()
                    .ok()
                    .filter(|n| *n > 0)
                    .map($name)
                    .ok_or_else(|| format!("'{s}' is not a {} id (expected a positive number)", $what))
            }
        }
    };
}

id_type!(
    /// Identifies a project (an opened folder).
    ProjectId,
    "project"
);
id_type!(
    /// Identifies a task (one conversation with the agent inside a project).
    TaskId,
    "task"
);

id_type!(
    /// Identifies a stored message.
    MessageId,
    "message"
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_parse_and_reject_clearly() {
        assert_eq!("42".parse::<TaskId>(), Ok(TaskId(42)));
        let err = "abc".parse::<ProjectId>().unwrap_err();
        assert!(err.contains("'abc' is not a project id"), "{err}");
        assert!("0".parse::<TaskId>().is_err());
        assert_eq!(serde_json::to_string(&TaskId(7)).unwrap(), "7");
    }
}
