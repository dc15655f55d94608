//! A run of the agent on a task: the API a front end holds (`Agent`, `TaskHandle`) and the task
//! locks, with the state of a run. The loop is in `turns.rs`, the model call in `model_call.rs`,
//! compaction and the iteration budget in `limits.rs`, picking a task up after a crash in
//! `recovery.rs`.

mod limits;
mod model_call;
mod recovery;
mod turns;

use model_call::*;
use recovery::*;

pub use crate::handle::TaskHandle;
pub(crate) use crate::handle::{Queued, Steer};
pub(crate) use crate::lock::hold_task;
pub use crate::lock::{mark_interrupted, TaskLock};
pub use crate::request::{
    Model, ModelResolver, RunRequest, ThisRun, AGENT, SKILLS_OFF, SKILL_PRIORITY,
};

use crate::approvals::{EventApprover, Pending};
use crate::compaction::{self, View};
use crate::dispatch::{run_calls, Call};
use crate::state::Step;
use crate::status::Tracker;
use crate::text_calls;
use crate::{AgentError, Events};
use codewright_llm::request::build_body;
use codewright_llm::{ChatRequest, Client, Delta, ErrorKind as LlmErrorKind, RetryPolicy};
use codewright_protocol::{
    answer_every_call, AgentEvent, AgentState, AttachmentKind, Compaction, ErrorKind, Message,
    Part, ProjectId, Role, RunOutcome, StopReason, TaskId, TaskStatus, ToolCategory,
};
use codewright_store::{CallState, Checkpointer, Store, UsageEvent};
use codewright_tools::{ProcessTable, Registry, Session, SessionConfig};
use futures_util::future::{BoxFuture, FutureExt};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// How the loop behaves.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    /// Requests per run before the task pauses with a summary (default 100).
    pub max_iterations: u32,
    /// Tasks running at once; more wait, visibly queued (default 3).
    pub max_running: usize,
    /// Retries of a provider call that failed before anything arrived.
    pub retry: RetryPolicy,
    /// A request that brings nothing for this long gets a notice saying so, and why it may be
    /// (a local model reads the whole prompt before it writes), so the wait is not silent.
    pub quiet_notice_after: std::time::Duration,
    /// The user's home folder, where their own skills are (`~/.codewright`, `~/.claude`);
    /// `None` reads only the project's.
    pub user_home: Option<std::path::PathBuf>,
    /// Sub-agents (the `agent` tool) running at once, across tasks; more wait (default 3).
    pub max_subagents: usize,
    /// Every request answered in process by this model instead of its provider's server: for
    /// tests that drive a run step by step (see [`codewright_llm::fake`]). `None` in use.
    pub fake_model: Option<codewright_llm::fake::FakeModel>,
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            max_iterations: 100,
            max_running: 3,
            retry: RetryPolicy::default(),
            quiet_notice_after: std::time::Duration::from_secs(10),
            user_home: codewright_extensions::user_home(),
            max_subagents: 3,
            fake_model: None,
        }
    }
}

/// Runs tasks. Cheap to clone; clones share the running-task limit.
#[derive(Clone)]
pub struct Agent {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) store: Arc<Mutex<Store>>,
    pub(crate) home: PathBuf,
    client: Client,
    /// The built-in tools alone: what a project without extra tools gets.
    builtin: Arc<Registry>,
    /// Each project's tools in each folder its tasks work in (the project's own, a task's
    /// worktree): the built-in ones plus its MCP servers', which were started rooted there;
    /// replaced whole by [`Agent::set_tools`]. One project's tools are never offered to another's
    /// tasks, nor a folder's to a task working in another.
    registries: RwLock<HashMap<(ProjectId, PathBuf), Arc<Registry>>>,
    config: AgentConfig,
    slots: Arc<Semaphore>,
    /// Sub-agents running at once (they take no slot: their parent holds one).
    pub(crate) children: Arc<Semaphore>,
    /// Finds a sub-agent's own model; without it, sub-agents run with their parent's.
    pub(crate) models: RwLock<Option<ModelResolver>>,
    /// Each task's background processes: they outlive a run (a dev server keeps serving after
    /// the answer) and end with [`Agent::close_task`] or the agent.
    processes: Mutex<HashMap<TaskId, Arc<ProcessTable>>>,
    /// WAL checkpoints on a thread of their own, not inside a turn's commits (`None` if it
    /// could not start: then they happen inline, as everywhere else).
    _checkpointer: Option<Checkpointer>,
    /// Calls of an interrupted run that may have taken effect, settled by
    /// [`Agent::take_message`], for the notice of the run that follows.
    may_have_run: Mutex<HashMap<TaskId, Vec<String>>>,
}

impl Inner {
    /// A project's tools in the folder `root` as they are now.
    fn registry(&self, project: ProjectId, root: &Path) -> Arc<Registry> {
        self.registries
            .read()
            .expect("registry lock")
            .get(&place(project, root))
            .unwrap_or(&self.builtin)
            .clone()
    }
}

/// Where a project's tools are kept: the project and the folder, as the file system names it
/// (a run's session holds its folder canonical; the host names it as the task's record does).
fn place(project: ProjectId, root: &Path) -> (ProjectId, PathBuf) {
    (
        project,
        root.canonicalize().unwrap_or_else(|_| root.to_path_buf()),
    )
}

/// A sub-agent's run (see [`crate::subagent`]) takes no running slot (its parent holds one), asks
/// through the approver it is given (its parent's window), and cannot hand work on.
impl crate::subagent::Runner for Agent {
    fn model_named(&self, named: &str) -> Option<Result<Model, AgentError>> {
        let resolve = self.inner.models.read().expect("models lock").clone()?;
        Some(resolve(named))
    }

    fn child_slots(&self) -> Arc<Semaphore> {
        self.inner.children.clone()
    }

    fn store(&self) -> Arc<Mutex<Store>> {
        self.inner.store.clone()
    }

    fn home(&self) -> &std::path::Path {
        &self.inner.home
    }

    fn start_child(
        &self,
        lock: TaskLock,
        request: RunRequest,
        events: Events,
        approver: Arc<dyn codewright_tools::Approver>,
    ) -> TaskHandle {
        self.start_run(Some(lock), request, events, Some(approver), None)
    }

    fn close_task(&self, task: TaskId) {
        Agent::close_task(self, task)
    }
}

/// The tools a request offers: all of the project's, less `skill` when the run has no skills.
fn offered_tools(
    specs: &[codewright_protocol::ToolSpec],
    session: &Session,
) -> Vec<codewright_protocol::ToolSpec> {
    let skills = !session.extensions().skills.skills.is_empty();
    specs
        .iter()
        .filter(|s| skills || s.name != codewright_tools::builtin::SKILL_TOOL)
        .cloned()
        .collect()
}

/// Sent (not stored) when the model answered with nothing.
const NUDGE: &str =
    "Your last answer was empty. Continue with the task: call a tool, or answer the user.";
/// Sent (not stored) when a small model ends without changing the files the user named.
const NOTHING_CHANGED: &str = "No file has been changed yet. To change a file, write its path on a line by itself, then its whole new content in one fenced code block.";
/// What a small model that ends while the user's checks fail is told (sent, not stored), at
/// most [`MAX_CHECK_REMINDERS`] times a run.
fn checks_fail(commands: &[String]) -> String {
    format!(
        "{} still fails (the output is above), so the task is not done yet. Find the cause in that output, then write the whole corrected file: its path on a line by itself, then its whole new content in one fenced code block.",
        commands.iter().map(|c| format!("`{c}`")).collect::<Vec<_>>().join(" and ")
    )
}
/// A command's output as a small model is shown it when it is long: its first and last
/// [`SHOWN_LINES`] lines — where a test run says what failed first, and its summary — and how many
/// were left out between. A CPU reads every line before it writes a word (~30 tokens a second:
/// a failing test run of 900 tokens cost half a minute a turn), and a small model loses its way
/// in a long one. The task's tool panel keeps the whole output. (A pytest run's failures are
/// put in words instead: [`crate::failures`].)
fn condensed(text: &str) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() <= SHOWN_LINES * 5 / 2 {
        return None;
    }
    let (head, tail) = (&lines[..SHOWN_LINES], &lines[lines.len() - SHOWN_LINES..]);
    Some(format!(
        "{}\n[… {} lines not shown …]\n{}\n",
        head.join("\n"),
        lines.len() - 2 * SHOWN_LINES,
        tail.join("\n")
    ))
}
/// See [`condensed`].
const SHOWN_LINES: usize = 20;
/// How many times in a row, with no change in between, a run's small model is sent back to work
/// while the user's checks fail.
const MAX_CHECK_REMINDERS: u32 = 3;
/// How many times a run's small model, sent back [`MAX_CHECK_REMINDERS`] times without changing
/// anything while the checks fail, is asked for the work afresh ([`crate::focus::afresh`]).
const MAX_FRESH_STARTS: u32 = 8;
/// Stored as the user's message when a task is continued without one.
const CONTINUE: &str = "Continue.";
/// What a stop leaves as the result of calls that did not run.
const STOPPED: &str = "interrupted: the user stopped the task before this tool ran";
/// What the pause summary's calls get instead of running.
const PAUSED: &str = "not run: the task paused at the iteration limit; the user can continue it";
/// What a crash leaves as the result of the calls its last answer made: they may have run.
const CRASHED: &str = "interrupted: Codewright stopped (it was closed or crashed) while this call was waiting or running, so it may or may not have taken effect. Check (read the file, look at the state) before doing it again.";
/// What a crash leaves as the result of calls that had not run (or only waited for the user)
/// when the task goes on with a new message.
const NOT_RUN: &str = "not run: Codewright stopped (it was closed or crashed) before this call ran. Do it again if it is still needed.";
const SUMMARY_REQUEST: &str = "Stop here: the iteration limit is reached. Without calling tools, write a short checkpoint of this task for whoever continues it: Goal; Progress (done / in progress); Key decisions; Next steps; Files touched.";

impl Agent {
    /// An agent whose tasks get the built-in tools; [`Agent::set_tools`] adds a project's own.
    pub fn new(store: Arc<Mutex<Store>>, home: PathBuf, config: AgentConfig) -> Agent {
        let checkpointer = store
            .lock()
            .expect("store lock")
            .checkpoint_in_background(std::time::Duration::from_millis(500))
            .ok();
        Agent {
            inner: Arc::new(Inner {
                _checkpointer: checkpointer,
                may_have_run: Mutex::new(HashMap::new()),
                store,
                home,
                client: match &config.fake_model {
                    Some(fake) => Client::new(config.retry.clone()).with_fake(fake.clone()),
                    None => Client::new(config.retry.clone()),
                },
                builtin: Arc::new(Registry::builtin()),
                registries: RwLock::new(HashMap::new()),
                slots: Arc::new(Semaphore::new(config.max_running.max(1))),
                children: Arc::new(Semaphore::new(config.max_subagents.max(1))),
                models: RwLock::new(None),
                processes: Mutex::new(HashMap::new()),
                config,
            }),
        }
    }

    /// Lets sub-agents whose agent names a model run with it (see [`ModelResolver`]).
    pub fn set_model_resolver(&self, resolve: ModelResolver) {
        *self.inner.models.write().expect("models lock") = Some(resolve);
    }

    /// Sets a project's extra tools for its tasks working in `root` (the project's folder or a
    /// task's worktree): its MCP servers' tools, started there, or a new set after they changed.
    /// Those tasks see the new set from their next request on; calls already made finish with
    /// the tools they started with. Tools the registry refuses (a name taken, a schema that does
    /// not compile) are left out; the result says which and why. No tools: the folder's are
    /// forgotten (its tasks get the built-in ones).
    pub fn set_tools(
        &self,
        project: ProjectId,
        root: &Path,
        tools: Vec<Arc<dyn codewright_tools::Tool>>,
    ) -> Vec<String> {
        let mut registry = Registry::builtin();
        let mut refused = Vec::new();
        let tools_given = !tools.is_empty();
        for tool in tools {
            let name = tool.name().to_string();
            if let Err(e) = registry.register(tool) {
                refused.push(format!("the tool {name} was left out: {e}"));
            }
        }
        let key = place(project, root);
        let mut registries = self.inner.registries.write().expect("registry lock");
        match tools_given {
            true => registries.insert(key, Arc::new(registry)),
            false => registries.remove(&key),
        };
        refused
    }

    /// Compacts a task now (the user asked, `/compact`): summarizes all but the recent messages.
    /// `Ok(false)` when there is too little to compact. Reports through `events` like a run.
    pub async fn compact(
        &self,
        task: TaskId,
        model: Model,
        events: Events,
    ) -> Result<bool, AgentError> {
        let tracker = Arc::new(Tracker::new(
            task,
            events.clone(),
            self.inner.store.clone(),
            AgentState::Idle,
        ));
        let mut run = Run {
            inner: self.inner.clone(),
            task,
            events,
            cancel: CancellationToken::new(),
            steer: Arc::new(Mutex::new(Steer::default())),
            pending: Arc::new(Pending::default()),
            tracker,
            compaction: None,
            allowed: None,
            parent_approver: None,
            subagents: None,
            servers: Mutex::new(None),
            work: Mutex::default(),
            words: None,
            checked_in_words: None,
            fresh_sample: None,
            corrected: false,
            put_back: 0,
        };
        // Not while a run writes the conversation.
        let _held = hold_task(&self.inner.home, task)?;
        let (mut view, status) = {
            let store = self.inner.store.lock().expect("store lock");
            let status = store.task(task)?.status;
            (compaction::view(&store, task)?, status)
        };
        // (Its "before" figure counts the conversation only, unless the provider counted it.)
        let compacted = run.compact(&model, &mut view, 0).await;
        run.step(Step::End);
        // Compacting showed the task as running; it is again what it was.
        let _ = self
            .inner
            .store
            .lock()
            .expect("store lock")
            .set_task_status(task, status);
        compacted.map_err(|_| {
            AgentError::new(
                ErrorKind::Compaction,
                "the conversation was not compacted (the error above says why)",
            )
        })
    }

    /// Ends what a task left running: its background processes are killed. Call it when the
    /// task is closed or deleted.
    pub fn close_task(&self, task: TaskId) {
        let table = self
            .inner
            .processes
            .lock()
            .expect("processes lock")
            .remove(&task);
        drop(table);
    }

    /// Stores the user's message in the task before anything else can fail (a model that cannot
    /// be used, MCP servers starting): settles what an interrupted run left open, then appends
    /// it. A run started after it continues the task without a prompt.
    pub fn take_message(&self, held: &TaskLock, message: &Message) -> Result<(), AgentError> {
        // With a message, nothing is left to queue: whatever a dead run had queued goes first.
        let loaded = load(&self.inner, held.task, Some(message), &[])?;
        if !loaded.may_have_run.is_empty() {
            self.inner
                .may_have_run
                .lock()
                .expect("may_have_run lock")
                .insert(held.task, loaded.may_have_run);
        }
        Ok(())
    }

    /// Holds the task (see [`TaskLock`]): `Err` with [`ErrorKind::Busy`] when a run of it goes on
    /// in another window or process.
    pub fn hold(&self, task: TaskId) -> Result<TaskLock, AgentError> {
        hold_task(&self.inner.home, task)
    }

    /// Ends what every task left running (background processes), as the agent's end does.
    pub fn close_all(&self) {
        let tables: Vec<_> = self
            .inner
            .processes
            .lock()
            .expect("processes lock")
            .drain()
            .collect();
        drop(tables);
    }

    /// Starts a run on the current tokio runtime. The run takes the task's lock itself; a run
    /// that cannot (the task runs elsewhere) fails with an error event.
    pub fn start(&self, request: RunRequest, events: Events) -> TaskHandle {
        self.start_held(None, request, events, None)
    }

    /// Starts a run with the task's lock already taken ([`Agent::hold`]), so a front end knows
    /// before it starts that the run can go. `servers`, if given, is the project's MCP servers
    /// starting: the run waits for it before its first request, as
    /// [`AgentState::StartingServers`] (a stop ends the wait), so that a slow server holds up
    /// the run where the user sees it, not the front end that sent the message.
    pub fn start_held(
        &self,
        lock: Option<TaskLock>,
        request: RunRequest,
        events: Events,
        servers: Option<BoxFuture<'static, ()>>,
    ) -> TaskHandle {
        self.start_run(lock, request, events, None, servers)
    }

    fn start_run(
        &self,
        lock: Option<TaskLock>,
        request: RunRequest,
        events: Events,
        parent_approver: Option<Arc<dyn codewright_tools::Approver>>,
        servers: Option<BoxFuture<'static, ()>>,
    ) -> TaskHandle {
        let cancel = CancellationToken::new();
        let steer = Arc::new(Mutex::new(Steer::default()));
        let pending = Arc::new(Pending::default());
        let tracker = Arc::new(Tracker::new(
            request.task,
            events.clone(),
            self.inner.store.clone(),
            AgentState::Idle,
        ));
        let run = Run {
            inner: self.inner.clone(),
            task: request.task,
            events,
            cancel: cancel.clone(),
            steer: steer.clone(),
            pending: pending.clone(),
            tracker: tracker.clone(),
            compaction: request.compaction.clone(),
            allowed: None,
            parent_approver,
            subagents: None,
            servers: Mutex::new(servers),
            work: Mutex::default(),
            words: None,
            checked_in_words: None,
            fresh_sample: None,
            corrected: false,
            put_back: 0,
        };
        TaskHandle {
            task: request.task,
            cancel,
            steer,
            store: self.inner.store.clone(),
            pending,
            tracker: Arc::downgrade(&tracker),
            join: tokio::spawn(run.run(request, lock)),
        }
    }
}

struct Run {
    inner: Arc<Inner>,
    task: TaskId,
    events: Events,
    cancel: CancellationToken,
    steer: Arc<Mutex<Steer>>,
    pending: Arc<Pending>,
    tracker: Arc<Tracker>,
    /// Writes compaction summaries, when not the run's model.
    compaction: Option<Model>,
    /// The tools the task's agent may use; `None`: all of the project's.
    allowed: Option<Vec<String>>,
    /// A sub-agent's run asks through its parent's approver (and takes no running slot).
    parent_approver: Option<Arc<dyn codewright_tools::Approver>>,
    /// The `agent` tool, when this run may hand work to sub-agents.
    subagents: Option<Arc<crate::subagent::SubAgents>>,
    /// The project's MCP servers starting, waited for before the first request (in a mutex only
    /// so that the run can be shared between threads).
    servers: Mutex<Option<BoxFuture<'static, ()>>>,
    /// What the run's tools did, told when it finishes.
    work: Mutex<codewright_protocol::Work>,
    /// What a model's words may ask for (see [`crate::written`]), once the run has its project.
    words: Option<Words>,
    /// The check commands the last answer's words ran, and whether it wrote a file.
    checked_in_words: Option<Checked>,
    /// The next request asks a small model for the work afresh, the how-manieth time: it is
    /// sampled as a new answer ([`crate::focus::fresh_sampling`]).
    fresh_sample: Option<u32>,
    /// The run's one corrective turn for a call that could not be read was given.
    corrected: bool,
    /// How many times the run put a small model's best version back ([`Run::changes`]).
    put_back: u32,
}

/// The check commands run for one answer: each with its call's id.
struct Checked {
    calls: Vec<(String, String)>,
    /// The answer changed a file.
    wrote: bool,
    /// The answer ended the model's work (no calls of its own): the checks say whether it is done.
    ended: bool,
}

impl Words {
    /// The check commands that failed when they last ran, with `changes` made by the run
    /// ([`Run::changes`]: files changed and commands run) — none since.
    fn failing(&self, changes: u32) -> Vec<String> {
        self.commands
            .iter()
            .filter(|c| {
                self.ran.get(*c)
                    == Some(&Ran {
                        changes,
                        passed: false,
                    })
            })
            .cloned()
            .collect()
    }
}

/// When a check command last ran: the run's count of changes then ([`Run::changes`]: a command
/// may change files as a write does), and whether it passed.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Ran {
    changes: u32,
    passed: bool,
}

/// The name of a call Codewright could not read (never a tool's): answered with the format.
const UNREADABLE: &str = "unreadable_call";

/// The project and the commands the user named, for work a model writes in words.
struct Words {
    root: PathBuf,
    /// The model is a small one (else one without native tools).
    small: bool,
    commands: Vec<String>,
    /// The files the user named: a block with no path may be one of them.
    files: Vec<String>,
    /// The tests among them, never written from words (see [`crate::written::measures`]).
    keep: Vec<String>,
    /// Each check command, with when it last ran: named again without a change since, it
    /// does not run again, so an answer that keeps naming it does not loop.
    ran: std::collections::HashMap<String, Ran>,
    /// The `read_file` calls a small model's run made, for not making one again needlessly.
    reads: Mutex<Reads>,
    /// The version of a small model's work that did best against the checks so far.
    best: Option<crate::focus::Best>,
    /// The run's count of changes ([`Run::changes`]) when that version was last put back whole.
    put_back_at: Option<u32>,
    /// A file the model's last answer wrote out as it already is, changing none: sent back the
    /// same way, it writes the same again (seen three times in a row on word-count), so it is
    /// asked afresh at once.
    as_it_was: Option<String>,
}

/// Each of `calls` (a check command and its call's id) with the text of its result in
/// `results` (a tool message).
fn check_outputs(results: &Message, calls: &[(String, String)]) -> Vec<(String, String)> {
    calls
        .iter()
        .filter_map(|(command, id)| {
            results.parts.iter().find_map(|p| match p {
                Part::ToolResult {
                    call_id, content, ..
                } if call_id == id => Some((
                    command.clone(),
                    codewright_protocol::ToolContent::joined_text(content),
                )),
                _ => None,
            })
        })
        .collect()
}

/// The reads a small model's run made (keyed by their arguments) with the run's count of
/// changes when each was made, and those whose results its last request held.
#[derive(Default)]
struct Reads {
    made: HashMap<String, u32>,
    shown: std::collections::HashSet<String>,
}

/// The longest answer asked of a local model whose own limit is unknown (Settings → Models
/// sets it per model).
pub const LOCAL_UNKNOWN_MAX_OUTPUT: u64 = 2_048;

/// A new id for a call Codewright read from a model's text.
fn call_id() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("text_{stamp}_{n}")
}

/// A call as the user would recognise it: its tool and the start of its arguments.
fn describe_call(name: &str, arguments: &str) -> String {
    let arguments: String = arguments.chars().take(120).collect();
    format!("{name} {arguments}")
}

/// Today's date (UTC), for the system prompt.
fn today() -> String {
    let days = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() / 86_400)
        .unwrap_or(0) as i64;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}
