//! Projects: folders the user opened.

use crate::{names, now_ms, Result, Store, StoreError};
use codewright_protocol::{Project, ProjectId, ProjectSettings};
use rusqlite::{params, ErrorCode, OptionalExtension, Row};
use std::path::Path;

const COLUMNS: &str = "id, name, description, root_path, context, rules, created_at, updated_at";

fn from_row(row: &Row) -> rusqlite::Result<Project> {
    Ok(Project {
        id: ProjectId(row.get(0)?),
        name: row.get(1)?,
        description: row.get(2)?,
        root_path: row.get(3)?,
        context: row.get(4)?,
        rules: row.get(5)?,
        created_at: row.get(6)?,
        updated_at: row.get(7)?,
    })
}

impl Store {
    /// Every project, by name (case-insensitive).
    pub fn projects(&self) -> Result<Vec<Project>> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {COLUMNS} FROM projects ORDER BY name COLLATE NOCASE, id"
        ))?;
        let rows = stmt.query_map([], from_row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// One project.
    pub fn project(&self, id: ProjectId) -> Result<Project> {
        self.find_project(id)?.ok_or(StoreError::NotFound {
            what: "project",
            id: id.0,
        })
    }

    pub(crate) fn find_project(&self, id: ProjectId) -> Result<Option<Project>> {
        let mut stmt = self
            .conn
            .prepare_cached(&format!("SELECT {COLUMNS} FROM projects WHERE id = ?1"))?;
        Ok(stmt.query_row([id.0], from_row).optional()?)
    }

    /// Adds the folder at `path` as a project named `name` (default: the folder's name). The path
    /// must be an existing folder not already added; it is stored canonical (symlinks resolved).
    pub fn add_project(&self, path: &Path, name: Option<&str>) -> Result<Project> {
        if path.as_os_str().is_empty() {
            return Err(StoreError::Invalid(
                "the folder path cannot be empty".into(),
            ));
        }
        let meta = std::fs::metadata(path).map_err(|source| match source.kind() {
            std::io::ErrorKind::NotFound => StoreError::PathNotFound {
                path: path.to_path_buf(),
            },
            _ => StoreError::PathUnreadable {
                path: path.to_path_buf(),
                source,
            },
        })?;
        if !meta.is_dir() {
            return Err(StoreError::NotADirectory {
                path: path.to_path_buf(),
            });
        }
        let canonical =
            std::fs::canonicalize(path).map_err(|source| StoreError::PathUnreadable {
                path: path.to_path_buf(),
                source,
            })?;
        let root_path = canonical.to_str().map(str::to_owned).ok_or_else(|| {
            StoreError::Invalid(format!(
                "the folder path {} is not valid UTF-8, which Codewright cannot store",
                canonical.display()
            ))
        })?;
        let name = match name {
            Some(name) => names::clean("project name", name)?,
            None => {
                let base = canonical
                    .file_name()
                    .and_then(|n| n.to_str())
                    .unwrap_or(&root_path);
                names::clean("project name", base)?
            }
        };
        let now = now_ms();
        let inserted = self.conn.execute(
            "INSERT INTO projects (name, root_path, created_at, updated_at) VALUES (?1, ?2, ?3, ?3)",
            params![name, root_path, now],
        );
        match inserted {
            Ok(_) => self.project(ProjectId(self.conn.last_insert_rowid())),
            Err(e) if e.sqlite_error_code() == Some(ErrorCode::ConstraintViolation) => {
                let existing: Option<String> = self
                    .conn
                    .query_row(
                        "SELECT name FROM projects WHERE root_path = ?1",
                        [&root_path],
                        |r| r.get(0),
                    )
                    .optional()?;
                match existing {
                    Some(name) => Err(StoreError::AlreadyAdded {
                        path: root_path,
                        name,
                    }),
                    None => Err(e.into()),
                }
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Renames a project.
    pub fn rename_project(&self, id: ProjectId, name: &str) -> Result<Project> {
        let name = names::clean("project name", name)?;
        let changed = self.conn.execute(
            "UPDATE projects SET name = ?1, updated_at = ?2 WHERE id = ?3",
            params![name, now_ms(), id.0],
        )?;
        if changed == 0 {
            return Err(StoreError::NotFound {
                what: "project",
                id: id.0,
            });
        }
        self.project(id)
    }

    /// Removes a project and its tasks from Codewright. The folder on disk is not touched.
    pub fn remove_project(&self, id: ProjectId) -> Result<()> {
        let changed = self
            .conn
            .execute("DELETE FROM projects WHERE id = ?1", [id.0])?;
        if changed == 0 {
            return Err(StoreError::NotFound {
                what: "project",
                id: id.0,
            });
        }
        Ok(())
    }

    /// Sets what the user tells the agent about a project (its context and rules; both go into
    /// the system prompt).
    pub fn set_project_instructions(
        &self,
        id: ProjectId,
        context: &str,
        rules: &str,
    ) -> Result<Project> {
        let changed = self.conn.execute(
            "UPDATE projects SET context = ?2, rules = ?3, updated_at = ?4 WHERE id = ?1",
            params![id.0, context, rules, now_ms()],
        )?;
        if changed == 0 {
            return Err(StoreError::NotFound {
                what: "project",
                id: id.0,
            });
        }
        self.project(id)
    }

    /// A project's settings.
    pub fn project_settings(&self, id: ProjectId) -> Result<ProjectSettings> {
        let raw: Option<String> = self
            .conn
            .prepare_cached("SELECT settings FROM projects WHERE id = ?1")?
            .query_row([id.0], |r| r.get(0))
            .optional()?;
        let raw = raw.ok_or(StoreError::NotFound {
            what: "project",
            id: id.0,
        })?;
        Ok(serde_json::from_str(&raw).unwrap_or_default())
    }

    /// Saves a project's settings. Keys this build does not know are kept as they are.
    pub fn set_project_settings(&self, id: ProjectId, settings: &ProjectSettings) -> Result<()> {
        let tx = rusqlite::Transaction::new_unchecked(
            &self.conn,
            rusqlite::TransactionBehavior::Immediate,
        )?;
        let raw: Option<String> = tx
            .query_row("SELECT settings FROM projects WHERE id = ?1", [id.0], |r| {
                r.get(0)
            })
            .optional()?;
        let raw = raw.ok_or(StoreError::NotFound {
            what: "project",
            id: id.0,
        })?;
        let mut all: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(&raw).unwrap_or_default();
        if let serde_json::Value::Object(known) =
            serde_json::to_value(settings).expect("settings serialize")
        {
            all.extend(known);
        }
        tx.execute(
            "UPDATE projects SET settings = ?2, updated_at = ?3 WHERE id = ?1",
            params![id.0, serde_json::Value::Object(all).to_string(), now_ms()],
        )?;
        tx.commit()?;
        Ok(())
    }
}
