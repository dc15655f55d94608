//! The change feed: rows written by triggers on every insert/update/delete (see the first
//! migration), read back as [`StoreEvent`]s. Any process can follow it with a cursor.

use crate::{Result, Store};
use codewright_protocol::{MessageId, ProjectId, StoreEvent, TaskId};
use rusqlite::Connection;
use std::collections::HashMap;

/// How many changes are kept; readers further behind than this get a `Resync`.
const KEEP: i64 = 10_000;
/// Most changes turned into events per call.
const BATCH: i64 = 1_000;

pub(crate) fn head(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row("SELECT coalesce(max(seq), 0) FROM changes", [], |r| {
        r.get(0)
    })
}

pub(crate) fn prune(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute(
        "DELETE FROM changes WHERE seq <= (SELECT max(seq) FROM changes) - ?1",
        [KEEP],
    )?;
    Ok(())
}

struct Change {
    seq: i64,
    entity: String,
    id: i64,
    parent: Option<i64>,
    deleted: bool,
}

pub(crate) fn events_since(store: &Store, cursor: &mut i64) -> Result<Vec<StoreEvent>> {
    let conn = &store.conn;
    let oldest: Option<i64> = conn.query_row("SELECT min(seq) FROM changes", [], |r| r.get(0))?;
    if let Some(oldest) = oldest {
        if *cursor + 1 < oldest {
            *cursor = head(conn)?;
            return Ok(vec![StoreEvent::Resync]);
        }
    }
    let mut stmt = conn.prepare_cached(
        "SELECT seq, entity, entity_id, parent_id, deleted FROM changes
         WHERE seq > ?1 ORDER BY seq LIMIT ?2",
    )?;
    let changes: Vec<Change> = stmt
        .query_map([*cursor, BATCH], |r| {
            Ok(Change {
                seq: r.get(0)?,
                entity: r.get(1)?,
                id: r.get(2)?,
                parent: r.get(3)?,
                deleted: r.get(4)?,
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    let Some(last) = changes.last() else {
        return Ok(Vec::new());
    };
    *cursor = last.seq;

    // One event per record: its last change in this batch wins, in the order of those last changes.
    let mut events = Vec::new();
    let last_of: HashMap<(&str, i64), usize> = changes
        .iter()
        .enumerate()
        .map(|(i, c)| ((c.entity.as_str(), c.id), i))
        .collect();
    for (i, change) in changes.iter().enumerate() {
        if last_of[&(change.entity.as_str(), change.id)] != i {
            continue;
        }
        let event = match (change.entity.as_str(), change.deleted) {
            ("project", true) => Some(StoreEvent::ProjectDeleted {
                project_id: ProjectId(change.id),
            }),
            ("project", false) => store
                .find_project(ProjectId(change.id))?
                .map(|project| StoreEvent::ProjectUpserted { project }),
            ("task", true) => Some(StoreEvent::TaskDeleted {
                task_id: TaskId(change.id),
                project_id: ProjectId(change.parent.unwrap_or_default()),
            }),
            ("task", false) => store
                .find_task(TaskId(change.id))?
                .map(|task| StoreEvent::TaskUpserted { task }),
            // A deleted message goes with its task (whose deletion is its own event).
            ("message", false) => store
                .find_message(MessageId(change.id))?
                .map(|message| StoreEvent::MessageUpserted { message }),
            _ => None,
        };
        events.extend(event);
    }
    Ok(events)
}
