//! Events pushed to every front end. The store's change feed is their single source: whichever
//! process wrote (this app, another window, the CLI), the same event reaches every open window.

use crate::{MessageRecord, Project, ProjectId, Task, TaskId};
use serde::{Deserialize, Serialize};

/// A change to the stored projects, tasks or messages.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, strum::VariantNames)]
#[serde(tag = "type", rename_all = "camelCase")]
#[strum(serialize_all = "camelCase")]
pub enum StoreEvent {
    /// A project was added or changed; carries its current state.
    ProjectUpserted { project: Project },
    /// A project was removed (its tasks are removed with it, each with its own event).
    #[serde(rename_all = "camelCase")]
    ProjectDeleted { project_id: ProjectId },
    /// A task was added or changed; carries its current state.
    TaskUpserted { task: Task },
    /// A task was removed.
    #[serde(rename_all = "camelCase")]
    TaskDeleted {
        task_id: TaskId,
        project_id: ProjectId,
    },
    /// A message was added to a task or changed (streamed updates, the final write, marked
    /// compacted); carries its current state.
    MessageUpserted { message: MessageRecord },
    /// Changes were missed (the feed was pruned past this reader): reload everything.
    Resync,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_have_a_stable_tagged_shape() {
        let event = StoreEvent::TaskDeleted {
            task_id: TaskId(3),
            project_id: ProjectId(1),
        };
        assert_eq!(
            serde_json::to_value(&event).unwrap(),
            serde_json::json!({"type": "taskDeleted", "taskId": 3, "projectId": 1})
        );
        assert_eq!(
            serde_json::to_value(StoreEvent::Resync).unwrap(),
            serde_json::json!({"type": "resync"})
        );
    }
}
