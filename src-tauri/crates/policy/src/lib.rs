//! Whether a tool call may run, ask, or is refused — decided before anything runs, from the
//! call alone: the permission [`Policy`] (rules by tool and pattern, the task's mode, defaults
//! by category), shell commands split into the simple commands they run ([`command`]), and paths
//! resolved against the project's root ([`paths`]).

pub mod command;
pub mod paths;
mod policy;

pub use command::{parse_command, SimpleCommand, Unchecked};
pub use policy::{check_rule, Policy, Subject, Verdict};
