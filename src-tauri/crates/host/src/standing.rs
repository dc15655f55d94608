//! Where each worktree task's branch stands — files changed, ahead of and behind its base, files
//! not committed, files that would conflict — read on request, and kept current for a window
//! that follows a project: read again when a task's run may have changed its files
//! ([`StandingWatch::touched`]), when a branch of the repository moves (a watch on its branches
//! and packed refs: a commit or a merge, by anyone), and when the window asks again
//! ([`StandingWatch::refresh`]: it came back to the front, and files may have been edited by
//! hand meanwhile; tasks whose run is going are left to their run's touches). Nothing is polled,
//! so an idle window costs nothing.

use crate::worktrees::{as_git, ensure_there};
use crate::{Host, HostError};
use codewright_git::Repo;
use codewright_protocol::{ProjectId, Task, TaskId, TaskStatus, WorktreeState};
use notify_debouncer_mini::notify::{self, EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use codewright_git::Standing;

/// A change is read once things settle (a run writes a file, then stores the call's result)…
const SETTLE: Duration = Duration::from_millis(300);
/// …but never later than this after the first change, however busy the run.
const AT_MOST: Duration = Duration::from_secs(2);
/// A refresh asked for sooner than this after the last one reads nothing again.
const REFRESH_EVERY: Duration = Duration::from_secs(5);

impl Host {
    /// Where the task's branch stands now. An error for a task without an active worktree, or
    /// one whose folder was removed.
    pub fn task_standing(&self, task: TaskId) -> Result<Standing, HostError> {
        let (_, tree, repo) = self.worktree_of(task, WorktreeState::Active)?;
        let git = as_git(&tree);
        ensure_there(&git)?;
        Ok(repo.standing(&git)?)
    }

    /// Follows the worktree tasks of `project`: `tell` gets each one's standing soon (on the
    /// watch's own thread) and again whenever it changes — `None` once it cannot be read (its
    /// folder removed by hand, its worktree discarded) — until the watch is dropped.
    pub fn follow_standings(
        &self,
        project: ProjectId,
        tell: impl Fn(TaskId, Option<Standing>) + Send + 'static,
    ) -> Result<StandingWatch, HostError> {
        let root = PathBuf::from(self.project(project)?.root_path);
        let (asks, heard) = channel();
        // A folder outside git has no worktree tasks; nothing to watch.
        let refs = Repo::discover(&root)
            .ok()
            .and_then(|repo| watch_refs(&repo, asks.clone()));
        let host = self.clone();
        let reads = Arc::new(AtomicU64::new(0));
        let counted = reads.clone();
        std::thread::Builder::new()
            .name("codewright-standing".into())
            .spawn(move || follow(&host, project, &heard, &tell, &counted))
            .map_err(|e| {
                HostError::new(
                    codewright_protocol::ErrorKind::Setup,
                    format!("cannot follow the tasks' branches: {e}"),
                )
            })?;
        Ok(StandingWatch {
            asks,
            reads,
            _refs: refs,
        })
    }
}

/// What the watch's thread is asked to read again.
enum Ask {
    /// One task (its run may have changed its files).
    Task(TaskId),
    /// Every task of the project (a branch moved).
    All,
    /// Every task, unless that was done a moment ago (the window came back to the front).
    Refresh,
}

/// A project's worktree tasks followed; dropping it stops the following.
pub struct StandingWatch {
    asks: Sender<Ask>,
    reads: Arc<AtomicU64>,
    _refs: Option<RecommendedWatcher>,
}

impl StandingWatch {
    /// The task's files may have changed (its run wrote or ran something, or ended).
    pub fn touched(&self, task: TaskId) {
        let _ = self.asks.send(Ask::Task(task));
    }

    /// Reads every task again (at most once every few seconds): files may have been edited by
    /// hand.
    pub fn refresh(&self) {
        let _ = self.asks.send(Ask::Refresh);
    }

    /// How many standings were read so far: what following costs (nothing while nothing
    /// changes).
    pub fn reads(&self) -> u64 {
        self.reads.load(Ordering::Relaxed)
    }
}

/// Watches the repository's branches and packed refs: any branch moving says so (the thread
/// waits for things to settle). Only writes count: git reading a ref (as every standing read
/// does) opens it, and counting that would read again forever.
fn watch_refs(repo: &Repo, asks: Sender<Ask>) -> Option<RecommendedWatcher> {
    let [heads, git] = repo.ref_folders();
    let under = heads.clone();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        let moved = event.map_or(true, |e| {
            e.need_rescan()
                || !matches!(e.kind, EventKind::Access(_))
                    && e.paths.iter().any(|path| {
                        path.starts_with(&under)
                            || path.file_name().is_some_and(|n| n == "packed-refs")
                    })
        });
        if moved {
            let _ = asks.send(Ask::All);
        }
    })
    .ok()?;
    watcher.watch(&heads, RecursiveMode::Recursive).ok()?;
    let _ = watcher.watch(&git, RecursiveMode::NonRecursive);
    Some(watcher)
}

/// The project's tasks that work in a worktree of their own now (`idle`: only those whose run is
/// not going).
fn worktree_tasks(host: &Host, project: ProjectId, idle: bool) -> BTreeSet<TaskId> {
    host.tasks(project)
        .unwrap_or_default()
        .into_iter()
        .filter(working_in_worktree)
        .filter(|t| !idle || t.status != TaskStatus::Running)
        .map(|t| t.id)
        .collect()
}

fn working_in_worktree(task: &Task) -> bool {
    task.worktree
        .as_ref()
        .is_some_and(|w| w.state == WorktreeState::Active)
}

/// The watch's thread: reads what it is asked to once things settle, and tells what changed.
fn follow(
    host: &Host,
    project: ProjectId,
    heard: &Receiver<Ask>,
    tell: &dyn Fn(TaskId, Option<Standing>),
    reads: &AtomicU64,
) {
    let mut told: HashMap<TaskId, Option<Standing>> = HashMap::new();
    let mut pending = worktree_tasks(host, project, false);
    let mut first = Some(Instant::now());
    let mut due = Some(Instant::now());
    let mut refreshed = Instant::now();
    loop {
        let wait = due.map_or(Duration::from_secs(3600), |d| {
            d.saturating_duration_since(Instant::now())
        });
        let ask = match heard.recv_timeout(wait) {
            Ok(ask) => ask,
            Err(RecvTimeoutError::Disconnected) => return,
            Err(RecvTimeoutError::Timeout) if due.is_none() => continue,
            Err(RecvTimeoutError::Timeout) => {
                for task in std::mem::take(&mut pending) {
                    let Ok(t) = host.task(task) else {
                        told.remove(&task);
                        continue;
                    };
                    if t.project_id != project {
                        continue;
                    }
                    // A worktree discarded, its folder removed by hand, a repository that moved:
                    // the row shows the branch alone, and the task says what happened when opened.
                    let standing = working_in_worktree(&t)
                        .then(|| {
                            reads.fetch_add(1, Ordering::Relaxed);
                            host.task_standing(task).ok()
                        })
                        .flatten();
                    if standing.is_none() && !told.contains_key(&task) {
                        continue;
                    }
                    if told.get(&task) != Some(&standing) {
                        tell(task, standing.clone());
                        told.insert(task, standing);
                    }
                }
                (first, due) = (None, None);
                continue;
            }
        };
        match ask {
            Ask::Task(task) => {
                pending.insert(task);
            }
            Ask::All => {
                pending.extend(worktree_tasks(host, project, false));
                pending.extend(told.keys());
            }
            Ask::Refresh if refreshed.elapsed() < REFRESH_EVERY => continue,
            Ask::Refresh => {
                refreshed = Instant::now();
                pending.extend(worktree_tasks(host, project, true));
            }
        }
        let now = Instant::now();
        let start = *first.get_or_insert(now);
        due = Some((now + SETTLE).min(start + AT_MOST));
    }
}
