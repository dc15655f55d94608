//! Running commands for the agent and its tools: processes in their own group whose output is
//! kept bounded and that die with Codewright however it ends ([`reaper`]), the background ones of
//! a task ([`ProcessTable`]), the Landlock [`sandbox`], and the environment they get — the login
//! shell's, without Codewright's secrets ([`shell`]).

pub mod output;
pub mod process;
pub mod reaper;
pub mod sandbox;
pub mod shell;

pub use process::ProcessTable;
