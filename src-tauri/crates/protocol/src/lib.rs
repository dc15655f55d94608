//! The types that cross Codewright's boundaries — between the engine crates, the desktop shell,
//! the CLI and the UI. Everything here is plain data with a stable serde shape (camelCase JSON);
//! no behaviour lives in this crate.

mod events;
mod ids;
mod records;

pub use events::StoreEvent;
pub use ids::{ProjectId, TaskId};
pub use records::{Project, Task, TaskSettings, TaskStatus};
