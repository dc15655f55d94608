//! Messages of a task: appended whole, or streamed (the row exists from the first delta and is
//! rewritten at a bounded interval, so a crash loses at most one interval), paged newest first,
//! and searched with FTS5. Token and cost totals on the task move in the same transaction.

use crate::{now_ms, Result, Store, StoreError};
use codewright_protocol::{
    Compaction, Message, MessageId, MessageRecord, Part, ProjectId, Role, SearchHit, SnippetPart,
    StopReason, TaskId, Usage,
};
use rusqlite::{params, OptionalExtension, Row, TransactionBehavior};
use std::time::{Duration, Instant};

/// A streaming message is written at least this often…
pub const FLUSH_INTERVAL: Duration = Duration::from_millis(250);
/// …or as soon as this much new content has arrived.
pub const FLUSH_BYTES: usize = 4096;

/// One provider response's cost, recorded with the message that carries it.
#[derive(Debug, Clone, PartialEq)]
pub struct UsageEvent {
    pub model: String,
    pub provider: String,
    pub usage: Usage,
    /// US dollars.
    pub cost: f64,
}

const COLUMNS: &str =
    "id, task_id, seq, role, parts, usage, model, stop_reason, complete, created_at, \
                       updated_at, compacted, error";

fn compaction_from_row(r: &Row) -> rusqlite::Result<Compaction> {
    Ok(Compaction {
        summary: r.get(0)?,
        first_kept_seq: r.get(1)?,
        tokens_before: r.get::<_, i64>(2)? as u64,
        tokens_after: r.get::<_, i64>(3)? as u64,
        created_at: r.get(4)?,
    })
}

fn from_row(row: &Row) -> rusqlite::Result<MessageRecord> {
    let role: String = row.get(3)?;
    let parts: String = row.get(4)?;
    let usage: Option<String> = row.get(5)?;
    let stop: Option<String> = row.get(7)?;
    let bad = |col: usize, e: serde_json::Error| {
        rusqlite::Error::FromSqlConversionFailure(col, rusqlite::types::Type::Text, Box::new(e))
    };
    Ok(MessageRecord {
        id: MessageId(row.get(0)?),
        task_id: TaskId(row.get(1)?),
        seq: row.get(2)?,
        message: Message {
            role: Role::parse(&role).unwrap_or(Role::User),
            parts: serde_json::from_str(&parts).map_err(|e| bad(4, e))?,
            usage: usage
                .map(|u| serde_json::from_str(&u))
                .transpose()
                .map_err(|e| bad(5, e))?,
            model: row.get(6)?,
            stop_reason: stop
                .map(|s| serde_json::from_value(serde_json::Value::String(s)))
                .transpose()
                .map_err(|e| bad(7, e))?,
            error: row.get(12)?,
        },
        complete: row.get(8)?,
        created_at: row.get(9)?,
        updated_at: row.get(10)?,
        compacted: row.get(11)?,
    })
}

fn stop_name(stop: Option<StopReason>) -> Option<String> {
    stop.and_then(|s| serde_json::to_value(s).ok())
        .and_then(|v| v.as_str().map(str::to_owned))
}

fn json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).expect("message types always serialize")
}

fn parse_queued(text: &str) -> Result<Message> {
    serde_json::from_str(text)
        .map_err(|e| StoreError::Invalid(format!("a queued message cannot be read: {e}")))
}

impl Store {
    /// Appends a complete message to a task.
    pub fn append_message(&self, task: TaskId, message: &Message) -> Result<MessageRecord> {
        self.insert_message(task, message, true)
    }

    /// Keeps a message the user sent to a running task until the run delivers it (see
    /// [`Store::deliver_queued`]): once this returns, a crash does not lose it.
    pub fn queue_message(&self, task: TaskId, message: &Message) -> Result<i64> {
        self.conn.execute(
            "INSERT INTO queued_messages (task_id, message, created_at) VALUES (?1, ?2, ?3)",
            params![task.0, json(message), now_ms()],
        )?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Moves a queued message into its task's conversation, in one transaction; `None` if it was
    /// delivered already.
    pub fn deliver_queued(&self, id: i64) -> Result<Option<MessageRecord>> {
        let tx = rusqlite::Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate)?;
        let queued: Option<(i64, String)> = tx
            .query_row(
                "SELECT task_id, message FROM queued_messages WHERE id = ?1",
                [id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        let Some((task, message)) = queued else {
            return Ok(None);
        };
        let record = self.insert_message(TaskId(task), &parse_queued(&message)?, true)?;
        tx.execute("DELETE FROM queued_messages WHERE id = ?1", [id])?;
        tx.commit()?;
        Ok(Some(record))
    }

    /// The messages queued for `task` and not delivered yet, oldest first, with their ids.
    pub fn queued_messages(&self, task: TaskId) -> Result<Vec<(i64, Message)>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT id, message FROM queued_messages WHERE task_id = ?1 ORDER BY id",
        )?;
        let rows = stmt.query_map([task.0], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (id, message) = row?;
            out.push((id, parse_queued(&message)?));
        }
        Ok(out)
    }

    fn insert_message(
        &self,
        task: TaskId,
        message: &Message,
        complete: bool,
    ) -> Result<MessageRecord> {
        let now = now_ms();
        // One statement: the next seq is computed and taken atomically, whoever else writes.
        let inserted = self.conn.execute(
            "INSERT INTO messages (task_id, seq, role, parts, usage, model, stop_reason, complete, created_at, updated_at, error)
             SELECT ?1, coalesce((SELECT max(seq) FROM messages WHERE task_id = ?1), 0) + 1,
                    ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8, ?9
             WHERE EXISTS (SELECT 1 FROM tasks WHERE id = ?1)",
            params![
                task.0,
                message.role.as_str(),
                json(&message.parts),
                message.usage.as_ref().map(json),
                message.model,
                stop_name(message.stop_reason),
                complete,
                now,
                message.error
            ],
        )?;
        if inserted == 0 {
            return Err(StoreError::NotFound {
                what: "task",
                id: task.0,
            });
        }
        self.message(MessageId(self.conn.last_insert_rowid()))
    }

    /// One message.
    pub fn message(&self, id: MessageId) -> Result<MessageRecord> {
        self.find_message(id)?.ok_or(StoreError::NotFound {
            what: "message",
            id: id.0,
        })
    }

    pub(crate) fn find_message(&self, id: MessageId) -> Result<Option<MessageRecord>> {
        let mut stmt = self
            .conn
            .prepare_cached(&format!("SELECT {COLUMNS} FROM messages WHERE id = ?1"))?;
        Ok(stmt.query_row([id.0], from_row).optional()?)
    }

    /// Up to `limit` messages of a task, newest first, older than `before_seq` if given. Page
    /// backwards by passing the smallest `seq` of the previous page.
    pub fn messages(
        &self,
        task: TaskId,
        before_seq: Option<i64>,
        limit: usize,
    ) -> Result<Vec<MessageRecord>> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {COLUMNS} FROM messages WHERE task_id = ?1 AND seq < ?2 ORDER BY seq DESC LIMIT ?3"
        ))?;
        let rows = stmt.query_map(
            params![task.0, before_seq.unwrap_or(i64::MAX), limit as i64],
            from_row,
        )?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Every message of a task, oldest first.
    pub fn history(&self, task: TaskId) -> Result<Vec<MessageRecord>> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {COLUMNS} FROM messages WHERE task_id = ?1 ORDER BY seq"
        ))?;
        let rows = stmt.query_map([task.0], from_row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Records the usage of a request that produced no message of the task (a compaction's
    /// summary request), so the task's totals include it.
    pub fn record_usage(&self, task: TaskId, usage: &UsageEvent) -> Result<()> {
        insert_usage(&self.conn, Some(task), None, usage)
    }

    /// Records a compaction: the summary, and the messages before `first_kept_seq` marked as
    /// compacted (they stay, for the user), in one transaction.
    pub fn record_compaction(&self, task: TaskId, c: &Compaction) -> Result<()> {
        let tx = rusqlite::Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate)?;
        tx.execute(
            "INSERT INTO compactions (task_id, summary, first_kept_seq, tokens_before, tokens_after, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![task.0, c.summary, c.first_kept_seq, c.tokens_before as i64, c.tokens_after as i64, now_ms()],
        )?;
        tx.execute(
            "UPDATE messages SET compacted = 1 WHERE task_id = ?1 AND seq < ?2 AND compacted = 0",
            params![task.0, c.first_kept_seq],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// Every compaction of the task, oldest first (a window shows each where it starts).
    pub fn compactions(&self, task: TaskId) -> Result<Vec<Compaction>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT summary, first_kept_seq, tokens_before, tokens_after, created_at FROM compactions
             WHERE task_id = ?1 ORDER BY id",
        )?;
        let rows = stmt.query_map([task.0], compaction_from_row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// The task's latest compaction, if any.
    pub fn latest_compaction(&self, task: TaskId) -> Result<Option<Compaction>> {
        Ok(self
            .conn
            .query_row(
                "SELECT summary, first_kept_seq, tokens_before, tokens_after, created_at FROM compactions
                 WHERE task_id = ?1 ORDER BY id DESC LIMIT 1",
                [task.0],
                compaction_from_row,
            )
            .optional()?)
    }

    /// Closes messages a crash left streaming: they keep what was written and are marked
    /// complete, stopped (`aborted`). Returns how many there were.
    pub fn close_interrupted(&self, task: TaskId) -> Result<usize> {
        Ok(self.conn.execute(
            "UPDATE messages SET complete = 1, stop_reason = 'aborted', updated_at = ?2
             WHERE task_id = ?1 AND complete = 0",
            params![task.0, now_ms()],
        )?)
    }

    /// Indexes for search, whole, the messages a crash left streaming, which stay as they are
    /// until the task is continued ([`Store::close_interrupted`]): a long answer is not indexed
    /// again as it streams (migration 0018), so it would be found only by its start meanwhile.
    pub fn index_interrupted(&self, task: TaskId) -> Result<()> {
        let tx = self.conn.unchecked_transaction()?;
        tx.execute(
            "DELETE FROM messages_fts
             WHERE rowid IN (SELECT id FROM messages WHERE task_id = ?1 AND complete = 0)",
            [task.0],
        )?;
        tx.execute(
            "INSERT INTO messages_fts (rowid, text)
             SELECT m.id, (SELECT coalesce(group_concat(json_extract(p.value, '$.text'), char(10)), '')
                           FROM json_each(m.parts) AS p
                           WHERE json_extract(p.value, '$.type') IN ('text', 'thinking'))
             FROM messages AS m WHERE m.task_id = ?1 AND m.complete = 0",
            [task.0],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// Starts an assistant message that will be streamed into. Its row exists right away.
    pub fn start_streaming(&self, task: TaskId, model: &str) -> Result<StreamingMessage> {
        let mut message = Message::new(Role::Assistant, Vec::new());
        message.model = Some(model.to_string());
        let record = self.insert_message(task, &message, false)?;
        Ok(StreamingMessage {
            id: record.id,
            last_flush: Instant::now(),
            pending_bytes: 0,
        })
    }

    fn write_parts(&self, id: MessageId, parts: &[Part]) -> Result<()> {
        self.conn.execute(
            "UPDATE messages SET parts = ?1, updated_at = ?2 WHERE id = ?3",
            params![json(&parts), now_ms(), id.0],
        )?;
        Ok(())
    }

    /// Full-text search over the text of every message of every task, best first. The query is
    /// taken as plain words, all of which must match (`word*` for a prefix); FTS syntax is not
    /// interpreted.
    /// When more than [`RANK_LIMIT`] messages match (a very common word), ranking them all would
    /// take seconds, so the newest matches are returned instead.
    pub fn search_messages(&self, query: &str, limit: usize) -> Result<Vec<SearchHit>> {
        let Some(fts) = fts_query(query) else {
            return Ok(Vec::new());
        };
        let matches: i64 = self.conn.query_row(
            "SELECT count(*) FROM (SELECT 1 FROM messages_fts WHERE messages_fts MATCH ?1 LIMIT ?2)",
            params![fts, RANK_LIMIT + 1],
            |r| r.get(0),
        )?;
        // Rank (or take the newest) inside the FTS table first, then join only the chosen rows.
        let (inner, outer) = if matches > RANK_LIMIT {
            ("rowid DESC", "hits.rowid DESC")
        } else {
            ("bm25(messages_fts)", "hits.rank")
        };
        let mut stmt = self.conn.prepare_cached(&format!(
            "WITH hits AS (
                 SELECT rowid, snippet(messages_fts, 0, char(2), char(3), '…', 12) AS snip, bm25(messages_fts) AS rank
                 FROM messages_fts WHERE messages_fts MATCH ?1 ORDER BY {inner} LIMIT ?2)
             SELECT m.id, t.id, t.title, p.id, p.name, hits.snip, hits.rank, m.seq, m.role, m.created_at
             FROM hits
             JOIN messages m ON m.id = hits.rowid
             JOIN tasks t ON t.id = m.task_id AND t.parent_id IS NULL
             JOIN projects p ON p.id = t.project_id
             ORDER BY {outer}"
        ))?;
        let rows = stmt.query_map(params![fts, limit as i64], |r| {
            Ok(SearchHit {
                message_id: MessageId(r.get(0)?),
                task_id: TaskId(r.get(1)?),
                task_title: r.get(2)?,
                project_id: ProjectId(r.get(3)?),
                project_name: r.get(4)?,
                snippet: snippet_parts(&r.get::<_, String>(5)?),
                rank: r.get(6)?,
                seq: r.get(7)?,
                role: Role::parse(&r.get::<_, String>(8)?).unwrap_or(Role::User),
                created_at: r.get(9)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}

/// FTS5's snippet with the matched words between STX and ETX (control characters no message
/// text holds in practice), cut into pieces.
fn snippet_parts(marked: &str) -> Vec<SnippetPart> {
    let mut parts = Vec::new();
    for (i, piece) in marked.split('\u{2}').enumerate() {
        let (hit, rest) = match piece.split_once('\u{3}') {
            Some((hit, rest)) if i > 0 => (hit, rest),
            _ => ("", piece),
        };
        for (text, hit) in [(hit, true), (rest, false)] {
            if !text.is_empty() {
                parts.push(SnippetPart {
                    text: text.to_string(),
                    hit,
                });
            }
        }
    }
    parts
}

/// Up to this many matches are ranked by relevance; beyond it, by recency.
pub const RANK_LIMIT: i64 = 20_000;

fn insert_usage(
    conn: &rusqlite::Connection,
    task: Option<TaskId>,
    message: Option<MessageId>,
    e: &UsageEvent,
) -> Result<()> {
    conn.execute(
        "INSERT INTO usage_events (task_id, message_id, model, provider, input_tokens, output_tokens,
             cache_read_tokens, cache_write_tokens, reasoning_tokens, cost, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        params![
            task.map(|t| t.0),
            message.map(|m| m.0),
            e.model,
            e.provider,
            e.usage.input as i64,
            e.usage.output as i64,
            e.usage.cache_read as i64,
            e.usage.cache_write as i64,
            e.usage.reasoning as i64,
            e.cost,
            now_ms()
        ],
    )?;
    Ok(())
}

/// Turns what a user typed into an FTS5 query: each word quoted (so `-`, `:`, `"` and `NOT` are
/// just text), all required. A word ending in `*` matches as a prefix (`tokeniz*`); prefixes are
/// not implied, because a short common prefix must merge thousands of index entries.
/// `None` if there are no words.
fn fts_query(input: &str) -> Option<String> {
    let words: Vec<String> = input
        .split_whitespace()
        .filter_map(|w| {
            let (word, prefix) = match w.strip_suffix('*') {
                Some(stem) => (stem.trim_end_matches('*'), true),
                None => (w, false),
            };
            (!word.is_empty()).then(|| {
                format!(
                    "\"{}\"{}",
                    word.replace('"', "\"\""),
                    if prefix { "*" } else { "" }
                )
            })
        })
        .collect();
    (!words.is_empty()).then(|| words.join(" "))
}

/// An assistant message being streamed. Call [`StreamingMessage::update`] with the parts so far
/// after every delta; it writes them when [`FLUSH_INTERVAL`] has passed or [`FLUSH_BYTES`] have
/// arrived since the last write. [`StreamingMessage::finish`] writes the final message.
#[derive(Debug)]
pub struct StreamingMessage {
    id: MessageId,
    last_flush: Instant,
    pending_bytes: usize,
}

impl StreamingMessage {
    /// The message's id.
    pub fn id(&self) -> MessageId {
        self.id
    }

    /// Notes `new_bytes` more content and writes `parts` if there is unwritten content and the
    /// interval or size bound is reached. Call it with `new_bytes = 0` when the stream is idle, so
    /// content that arrived just before a stall is written within one interval. Returns whether
    /// it wrote.
    pub fn update(&mut self, store: &Store, parts: &[Part], new_bytes: usize) -> Result<bool> {
        self.pending_bytes += new_bytes;
        let due = self.pending_bytes >= FLUSH_BYTES || self.last_flush.elapsed() >= FLUSH_INTERVAL;
        if self.pending_bytes == 0 || !due {
            return Ok(false);
        }
        store.write_parts(self.id, parts)?;
        self.pending_bytes = 0;
        self.last_flush = Instant::now();
        Ok(true)
    }

    /// Writes the final message (marked complete) and its usage, in one transaction.
    pub fn finish(
        self,
        store: &Store,
        message: &Message,
        usage: Option<&UsageEvent>,
    ) -> Result<MessageRecord> {
        let tx = rusqlite::Transaction::new_unchecked(&store.conn, TransactionBehavior::Immediate)?;
        tx.execute(
            "UPDATE messages SET parts = ?1, usage = ?2, model = ?3, stop_reason = ?4, complete = 1,
                 updated_at = ?5, error = ?7 WHERE id = ?6",
            params![
                json(&message.parts),
                message.usage.as_ref().map(json),
                message.model,
                stop_name(message.stop_reason),
                now_ms(),
                self.id.0,
                message.error
            ],
        )?;
        if let Some(usage) = usage {
            let task: i64 = tx.query_row(
                "SELECT task_id FROM messages WHERE id = ?1",
                [self.id.0],
                |r| r.get(0),
            )?;
            insert_usage(&tx, Some(TaskId(task)), Some(self.id), usage)?;
        }
        tx.commit()?;
        store.message(self.id)
    }
}

#[cfg(test)]
mod tests {
    use super::fts_query;

    #[test]
    fn user_queries_never_reach_fts_syntax() {
        assert_eq!(fts_query("  "), None);
        assert_eq!(fts_query("login bug").unwrap(), "\"login\" \"bug\"");
        assert_eq!(fts_query("tokeniz* **").unwrap(), "\"tokeniz\"*");
        assert_eq!(
            fts_query("a\"b -x NOT").unwrap(),
            "\"a\"\"b\" \"-x\" \"NOT\""
        );
    }
}
