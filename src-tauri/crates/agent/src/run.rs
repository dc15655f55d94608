//! The loop itself, and the handle a front end holds on a running task.

use crate::approvals::{EventApprover, Pending, Refusal};
use crate::compaction::{self, View};
use crate::dispatch::{run_calls, Call};
use crate::state::Step;
use crate::status::Tracker;
use crate::text_calls;
use crate::Events;
use codewright_llm::request::build_body;
use codewright_llm::{
    ChatRequest, Client, Delta, ErrorKind as LlmErrorKind, ModelInfo, Provider, RetryPolicy,
};
use codewright_protocol::{
    answer_every_call, AgentEvent, AgentState, ApprovalRequest, AttachmentKind, Compaction,
    ErrorKind, Message, Part, PermissionMode, ProjectId, Question, Role, RunOutcome, StopReason,
    TaskId, TaskStatus, ToolCategory,
};
use codewright_store::{CallState, Checkpointer, Store, UsageEvent};
use codewright_tools::{ProcessTable, Registry, Session, SessionConfig};
use futures_util::future::{BoxFuture, FutureExt};
use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
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
        }
    }
}

/// The task setting that lists the skills switched off for the task (names).
pub const SKILLS_OFF: &str = "skillsOff";
/// The task setting that ranks skills for the task (name → priority, higher first; 0 unset).
pub const SKILL_PRIORITY: &str = "skillPriority";
/// The task setting that names the task's agent (see [`codewright_extensions::agents`]).
pub const AGENT: &str = "agent";

/// Finds the model an agent file names (MODEL@PROVIDER, or a role), with its key: the front
/// end knows the user's providers and roles ([`Agent::set_model_resolver`]).
pub type ModelResolver = Arc<dyn Fn(&str) -> Result<Model, String> + Send + Sync>;

/// The model a run uses. Its `Debug` never shows the key (it may end up in a log or a panic).
#[derive(Clone)]
pub struct Model {
    pub info: ModelInfo,
    pub provider: Provider,
    pub key: Option<String>,
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model")
            .field("info", &self.info)
            .field("provider", &self.provider)
            .field("key", &self.key.as_ref().map(|_| "[hidden]"))
            .finish()
    }
}

/// What to run.
#[derive(Debug, Clone)]
pub struct RunRequest {
    pub task: TaskId,
    /// The user's new message; `None` continues the task as it is (after a pause or a crash).
    pub prompt: Option<String>,
    pub model: Model,
    pub mode: PermissionMode,
    /// Run commands under the Landlock sandbox (also when the project's settings say so; always
    /// in yolo mode).
    pub sandbox: bool,
    /// The model that writes compaction summaries (the compaction role); `None`: `model`.
    pub compaction: Option<Model>,
    /// What this run does differently from the task's own settings.
    pub this_run: ThisRun,
}

/// What one run does differently from its task's own settings: a slash command that names the
/// agent to run it, or the only tools it may use.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ThisRun {
    /// The agent that runs instead of the task's.
    pub agent: Option<String>,
    /// The only tools the run may use (and only those its agent may).
    pub tools: Option<Vec<String>>,
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
    /// Each project's tools: the built-in ones plus its own (its MCP servers'); replaced whole
    /// by [`Agent::set_tools`]. One project's tools are never offered to another's tasks.
    registries: RwLock<HashMap<ProjectId, Arc<Registry>>>,
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

/// A task held for one run (or a restore): an advisory lock on `<home>/locks/task-<id>.lock`,
/// released when dropped or when the process dies, so two runs never write one conversation at
/// once, in any window or process.
pub struct TaskLock {
    task: TaskId,
    _file: std::fs::File,
}

/// Marks interrupted the tasks whose stored status says a run is going but whose lock nobody
/// holds: Codewright quit or crashed while they ran. What their answers got to is indexed for
/// search. `home` is the data folder.
pub fn mark_interrupted(store: &Store, home: &std::path::Path) {
    for task in store.unfinished_tasks().unwrap_or_default() {
        if let Ok(_lock) = hold_task(home, task) {
            let _ = store.set_task_status(task, TaskStatus::Interrupted);
            let _ = store.index_interrupted(task);
        }
    }
}

pub(crate) fn hold_task(
    home: &std::path::Path,
    task: TaskId,
) -> Result<TaskLock, (ErrorKind, String)> {
    let setup = |m: String| (ErrorKind::Setup, m);
    let dir = home.join("locks");
    std::fs::create_dir_all(&dir).map_err(|e| {
        setup(format!(
            "cannot create the lock folder {}: {e}",
            dir.display()
        ))
    })?;
    let path = dir.join(format!("task-{}.lock", task.0));
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| setup(format!("cannot open the task lock {}: {e}", path.display())))?;
    match file.try_lock() {
        Ok(()) => Ok(TaskLock { task, _file: file }),
        Err(std::fs::TryLockError::WouldBlock) => Err((
            ErrorKind::Busy,
            format!(
                "task {} is already running (in another window or process); stop that run or wait for it to finish, then send the message again",
                task.0
            ),
        )),
        Err(std::fs::TryLockError::Error(e)) => Err(setup(format!(
            "cannot lock the task ({}): {e}",
            path.display()
        ))),
    }
}

impl Inner {
    /// A project's tools as they are now.
    fn registry(&self, project: ProjectId) -> Arc<Registry> {
        self.registries
            .read()
            .expect("registry lock")
            .get(&project)
            .unwrap_or(&self.builtin)
            .clone()
    }
}

/// A running task: stop it, steer it, answer its approvals, wait for it.
pub struct TaskHandle {
    task: TaskId,
    pub(crate) cancel: CancellationToken,
    steer: Arc<Mutex<Steer>>,
    store: Arc<Mutex<Store>>,
    pending: Arc<Pending>,
    /// Weak: the tracker holds the run's event sender, which must close when the run ends.
    tracker: std::sync::Weak<Tracker>,
    join: tokio::task::JoinHandle<RunOutcome>,
}

impl TaskHandle {
    pub fn task(&self) -> TaskId {
        self.task
    }

    /// Stops the run: streaming ends (what arrived is kept), running tools are killed, waiting
    /// approvals are resolved as rejected, and every unanswered call gets a result.
    pub fn stop(&self) {
        self.cancel.cancel();
    }

    /// Queues the user's message (text, or [`Message::user`] with attachments) for the model;
    /// it is delivered at the next turn boundary (before the next request). `Err` gives it back
    /// when the run has already ended: start a new run with it. A queued message is kept in the
    /// store before this returns: one still queued when a run stops or fails is put in the task,
    /// and one queued when the process died is delivered by the task's next run, so none is ever
    /// lost.
    pub fn steer(&self, message: impl Into<Message>) -> Result<(), Box<Message>> {
        let mut steer = self.steer.lock().expect("steer lock");
        let message = message.into();
        if steer.closed {
            return Err(Box::new(message));
        }
        // (Should the store refuse, the message is still delivered from memory.)
        let id = self
            .store
            .lock()
            .expect("store lock")
            .queue_message(self.task, &message)
            .ok();
        steer.queue.push_back(Queued { id, message });
        Ok(())
    }

    /// Answers an approval request: refused if it no longer waits (answered elsewhere, the run
    /// ended) or if the decision is not one it offered; then nothing changes.
    pub fn decide(&self, id: u64, decision: codewright_protocol::Decision) -> Result<(), Refusal> {
        self.pending.decide(id, decision)
    }

    /// Answers a question: refused if it no longer waits.
    pub fn answer(&self, id: u64, answer: Option<String>) -> Result<(), Refusal> {
        self.pending.answer(id, answer)
    }

    /// The approval requests and questions waiting for the user now, oldest first.
    pub fn waiting(&self) -> (Vec<ApprovalRequest>, Vec<Question>) {
        self.pending.waiting()
    }

    /// Where the run is now.
    pub fn state(&self) -> AgentState {
        self.tracker
            .upgrade()
            .map_or(AgentState::Idle, |tracker| tracker.get())
    }

    /// Whether the run has ended.
    pub fn is_finished(&self) -> bool {
        self.join.is_finished()
    }

    /// Waits for the run to end.
    pub async fn wait(self) -> RunOutcome {
        self.join.await.unwrap_or(RunOutcome::Failed)
    }
}

/// Messages sent while a task runs, waiting for the next turn boundary; closed when the run
/// ends, so a late one is handed back instead of lost.
#[derive(Default)]
struct Steer {
    queue: VecDeque<Queued>,
    closed: bool,
}

/// A message waiting for a turn boundary, and its row in the store's queue (see
/// [`Store::queue_message`]).
struct Queued {
    id: Option<i64>,
    message: Message,
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
/// in a long one. The task's tool panel keeps the whole output.
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
                client: Client::new(config.retry.clone()),
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

    /// Sets a project's extra tools (its MCP servers' tools, or a new set after they changed).
    /// The project's running tasks see the new set from their next request on; calls already
    /// made finish with the tools they started with. Tools the registry refuses (a name taken,
    /// a schema that does not compile) are left out; the result says which and why.
    pub fn set_tools(
        &self,
        project: ProjectId,
        tools: Vec<Arc<dyn codewright_tools::Tool>>,
    ) -> Vec<String> {
        let mut registry = Registry::builtin();
        let mut refused = Vec::new();
        for tool in tools {
            let name = tool.name().to_string();
            if let Err(e) = registry.register(tool) {
                refused.push(format!("the tool {name} was left out: {e}"));
            }
        }
        self.inner
            .registries
            .write()
            .expect("registry lock")
            .insert(project, Arc::new(registry));
        refused
    }

    /// Compacts a task now (the user asked, `/compact`): summarizes all but the recent messages.
    /// `Ok(false)` when there is too little to compact. Reports through `events` like a run.
    pub async fn compact(
        &self,
        task: TaskId,
        model: Model,
        events: Events,
    ) -> Result<bool, String> {
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
            corrected: false,
        };
        // Not while a run writes the conversation.
        let _held = hold_task(&self.inner.home, task).map_err(|(_, message)| message)?;
        let (mut view, status) = {
            let store = self.inner.store.lock().expect("store lock");
            let status = store.task(task).map_err(|e| e.to_string())?.status;
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
            "the conversation was not compacted (the error above says why)".to_string()
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
    pub fn take_message(&self, held: &TaskLock, message: &Message) -> Result<(), String> {
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
    pub fn hold(&self, task: TaskId) -> Result<TaskLock, (ErrorKind, String)> {
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

    /// Starts a sub-agent's run (see [`crate::subagent`]): it takes no running slot (its
    /// parent holds one), asks through `approver` (its parent's window), and cannot hand work on.
    pub(crate) fn start_child(
        &self,
        lock: TaskLock,
        request: RunRequest,
        events: Events,
        approver: Arc<dyn codewright_tools::Approver>,
    ) -> TaskHandle {
        self.start_run(Some(lock), request, events, Some(approver), None)
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
            corrected: false,
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
    /// The run's one corrective turn for a call that could not be read was given.
    corrected: bool,
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
    /// The check commands that failed when they last ran, with `edits` changes made (that is,
    /// since the last change).
    fn failing(&self, edits: u32) -> Vec<String> {
        self.commands
            .iter()
            .filter(|c| {
                self.ran.get(*c)
                    == Some(&Ran {
                        edits,
                        passed: false,
                    })
            })
            .cloned()
            .collect()
    }
}

/// When a check command last ran: the run's count of edits then, and whether it passed.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Ran {
    edits: u32,
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
}

/// The reads a small model's run made (keyed by their arguments) with the run's count of
/// changes when each was made, and those whose results its last request held.
#[derive(Default)]
struct Reads {
    made: HashMap<String, u32>,
    shown: std::collections::HashSet<String>,
}

impl Run {
    /// The project's tools as they are now, those the task's agent may use.
    fn registry(&self, project: ProjectId) -> Arc<Registry> {
        let all = self.inner.registry(project);
        if self.allowed.is_none() && self.subagents.is_none() {
            return all;
        }
        let mut registry = match &self.allowed {
            Some(allowed) => all.only(|name| allowed.iter().any(|a| a == name)),
            None => (*all).clone(),
        };
        if let Some(tool) = &self.subagents {
            registry
                .register(tool.clone())
                .expect("no other tool is named agent (MCP tools are server__tool)");
        }
        Arc::new(registry)
    }

    fn emit(&self, event: AgentEvent) {
        let _ = self.events.send(event);
    }

    fn notice(&self, message: impl Into<String>) {
        self.emit(AgentEvent::Notice {
            task_id: self.task,
            message: message.into(),
        });
    }

    fn error(&self, kind: ErrorKind, message: impl Into<String>) {
        self.emit(AgentEvent::Error {
            task_id: self.task,
            kind,
            message: message.into(),
        });
    }

    fn step(&mut self, step: Step) {
        self.tracker.step(step);
    }

    /// How many files the run has changed and commands it has run: a read made before the
    /// last of them may no longer say what the file holds.
    fn changes(&self) -> u32 {
        let work = self.work.lock().expect("work lock");
        work.edits + work.commands
    }

    fn store(&self) -> std::sync::MutexGuard<'_, Store> {
        self.inner.store.lock().expect("store lock")
    }

    async fn run(mut self, request: RunRequest, lock: Option<TaskLock>) -> RunOutcome {
        // One run per task at a time, whichever window or process starts it.
        let held = match lock.map_or_else(|| hold_task(&self.inner.home, self.task), Ok) {
            Ok(lock) => lock,
            Err((kind, message)) => {
                self.steer.lock().expect("steer lock").closed = true;
                self.error(kind, message);
                self.emit(AgentEvent::RunFinished {
                    task_id: self.task,
                    outcome: RunOutcome::Failed,
                    work: Default::default(),
                });
                return RunOutcome::Failed;
            }
        };
        let outcome = match self.run_inner(request).await {
            Ok(outcome) => outcome,
            Err(message) => {
                self.error(ErrorKind::Setup, message);
                RunOutcome::Failed
            }
        };
        // Messages steered in but never delivered (a stop, a failure) stay in the task.
        let left: Vec<Queued> = {
            let mut steer = self.steer.lock().expect("steer lock");
            steer.closed = true;
            steer.queue.drain(..).collect()
        };
        for queued in left {
            if let Err(e) = self.deliver(&queued) {
                self.error(ErrorKind::Store, e.to_string());
            }
        }
        let status = match outcome {
            RunOutcome::Done => TaskStatus::Done,
            RunOutcome::Paused => TaskStatus::Paused,
            RunOutcome::Failed => TaskStatus::Failed,
            RunOutcome::Stopped => TaskStatus::Idle,
        };
        let _ = self.store().set_task_status(self.task, status);
        // Released before the front end hears the run finished, so it can start the next one.
        drop(held);
        self.step(Step::End);
        let work = *self.work.lock().expect("work lock");
        self.emit(AgentEvent::RunFinished {
            task_id: self.task,
            outcome,
            work,
        });
        outcome
    }

    async fn run_inner(&mut self, request: RunRequest) -> Result<RunOutcome, String> {
        let task = self.task;
        // What this run's sub-agents run with (their own task and job).
        let subagent_request = RunRequest {
            prompt: None,
            ..request.clone()
        };
        // The user's message is stored first: whatever happens next (a queue, a stop), it is kept.
        let Loaded {
            project,
            mut view,
            turn,
            interrupted,
            may_have_run,
            resume,
            requeue: _,
        } = self.load(request.prompt.map(Message::user).as_ref())?;
        // Wait for a slot (visibly); a sub-agent's parent holds one for it.
        let slots = self.inner.slots.clone();
        let permit = if self.parent_approver.is_some() {
            None
        } else {
            match slots.clone().try_acquire_owned() {
                Ok(p) => Some(p),
                Err(_) => {
                    self.tracker.queued();
                    tokio::select! {
                        p = slots.acquire_owned() => Some(p.map_err(|e| e.to_string())?),
                        _ = self.cancel.cancelled() => return Ok(RunOutcome::Stopped),
                    }
                }
            }
        };
        let _permit = permit;
        let servers = self.servers.get_mut().expect("servers lock").take();
        if let Some(mut servers) = servers {
            if (&mut servers).now_or_never().is_none() {
                self.step(Step::AwaitServers);
                tokio::select! {
                    () = servers => {}
                    _ = self.cancel.cancelled() => return Ok(RunOutcome::Stopped),
                }
            }
        }
        if interrupted {
            let mut notice = "The previous run of this task was interrupted (Codewright stopped while it ran). What was saved is kept.".to_string();
            if !may_have_run.is_empty() {
                notice.push_str(&format!(
                    " These calls may or may not have taken effect: {}.",
                    may_have_run.join("; ")
                ));
            }
            if !resume.is_empty() {
                notice.push_str(" Calls that had not run yet run now (approvals are asked again).");
            }
            self.notice(notice);
        }
        // A task's own run asks through its events; a sub-agent's through its parent's.
        let own_approver = self.parent_approver.is_none().then(|| {
            Arc::new(EventApprover {
                events: self.events.clone(),
                pending: self.pending.clone(),
                tracker: self.tracker.clone(),
                store: self.inner.store.clone(),
            })
        });
        let approver: Arc<dyn codewright_tools::Approver> =
            match (&self.parent_approver, &own_approver) {
                (Some(parent), _) => parent.clone(),
                (None, Some(own)) => own.clone(),
                (None, None) => unreachable!("made above when there is no parent"),
            };
        let settings = self
            .store()
            .project_settings(project.id)
            .map_err(|e| e.to_string())?;
        let processes = self
            .inner
            .processes
            .lock()
            .expect("processes lock")
            .entry(task)
            .or_default()
            .clone();
        let session = Session::with_processes(
            SessionConfig {
                task,
                project: project.id,
                root: PathBuf::from(&project.root_path),
                home: self.inner.home.clone(),
                mode: request.mode,
                sandbox: request.sandbox || settings.sandbox,
                allow_private_network: settings.allow_private_network,
                rules: vec![],
            },
            self.inner.store.clone(),
            approver.clone(),
            processes,
        )?;
        session.set_turn(turn);
        self.store()
            .set_task_status(task, TaskStatus::Running)
            .map_err(|e| e.to_string())?;
        self.emit(AgentEvent::RunStarted {
            task_id: task,
            turn,
        });
        // Skills and instructions are read again by every run: edits apply from the next message.
        let project_trusted = self
            .store()
            .project_settings(session.project)
            .map(|s| s.trusted)
            .unwrap_or(false);
        let places = codewright_extensions::Places {
            project: session.root.clone(),
            project_trusted,
            home: self.inner.config.user_home.clone(),
            cache: Some(
                self.inner
                    .home
                    .join(codewright_extensions::skills::CACHE_FOLDER),
            ),
        };
        let (agent, agents) = self.agent(&places, request.this_run.agent.as_deref())?;
        self.allowed = match (agent.tools.clone(), request.this_run.tools) {
            (Some(theirs), Some(only)) => {
                Some(theirs.into_iter().filter(|t| only.contains(t)).collect())
            }
            (theirs, only) => theirs.or(only),
        };
        let may_hand_on = self
            .allowed
            .as_ref()
            .is_none_or(|a| a.iter().any(|t| t == crate::subagent::NAME));
        if let Some(own_approver) = own_approver.filter(|_| may_hand_on) {
            self.subagents = Some(Arc::new(crate::subagent::SubAgents::new(
                Agent {
                    inner: self.inner.clone(),
                },
                task,
                subagent_request.clone(),
                self.events.clone(),
                own_approver,
                self.allowed.clone(),
                agents,
            )));
        }
        let installed = Arc::new(codewright_extensions::Installed {
            skills: self.skills(&places),
            agent: Some(agent),
            places: Some(places),
        });
        session.set_extensions(installed.clone());
        let crate::SystemPrompt {
            text: system,
            files,
            refused,
        } = crate::system_prompt(
            &session.root,
            &project.context,
            &project.rules,
            &installed,
            &today(),
            crate::prompt::is_small(&request.model),
        );
        self.emit(AgentEvent::PromptRead {
            task_id: task,
            files,
        });
        for why in refused {
            self.emit(AgentEvent::Notice {
                task_id: task,
                message: format!("Not read into the prompt: {why}."),
            });
        }
        if !resume.is_empty() {
            if let Err(outcome) = self.resume(project.id, &session, resume, &mut view).await {
                return Ok(outcome);
            }
        }
        // What a small or text-protocol model's words may ask for (see [`crate::written`]):
        // the files and check commands of the user's last message — never a sub-agent's, whose
        // message another model wrote.
        let small = crate::prompt::is_small(&request.model);
        if small || !request.model.info.tools {
            let asked = view
                .messages
                .iter()
                .rev()
                .find(|m| m.role == Role::User)
                .map(Message::text)
                .unwrap_or_default();
            let own = self.parent_approver.is_none();
            let named = crate::attach::named_files(&session.root, &asked);
            self.words = Some(Words {
                commands: if own {
                    crate::written::named_commands(&asked, &session.root)
                } else {
                    Vec::new()
                },
                keep: crate::written::measures(&named, &asked),
                files: named,
                root: session.root.clone(),
                small,
                ran: Default::default(),
                reads: Default::default(),
            });
        }
        // A message not answered yet (stored by this run, or by the host before it started):
        // a small model is shown the files it names (a hosted model is sent only what it asks
        // for: a file the user merely mentions stays on the machine).
        let unanswered = view
            .messages
            .last()
            .filter(|m| small && m.role == Role::User)
            .map(Message::text);
        if let Some(message) = unanswered {
            if let Err(outcome) = self.attach(project.id, &session, &message, &mut view).await {
                return Ok(outcome);
            }
        }
        let outcome = self
            .iterate(&request.model, project.id, &session, &system, &mut view)
            .await;
        Ok(outcome)
    }

    /// The run's agent — `for_run` (a slash command's), else the task's (its setting
    /// [`AGENT`]), else the coder — and every agent of the project. One whose file is gone or
    /// broken is an error saying what to do: the run never falls back to an agent with more
    /// tools than the one chosen.
    fn agent(
        &self,
        places: &codewright_extensions::Places,
        for_run: Option<&str>,
    ) -> Result<
        (
            codewright_extensions::agents::AgentDef,
            Vec<codewright_extensions::agents::AgentDef>,
        ),
        String,
    > {
        use codewright_extensions::agents;
        let chosen: Option<String> = for_run.map(String::from).or_else(|| {
            self.store().task(self.task).ok().and_then(|t| {
                t.settings
                    .get(AGENT)
                    .and_then(|v| v.as_str())
                    .map(String::from)
            })
        });
        let found = agents::discover(places);
        let name = chosen.as_deref().unwrap_or(agents::DEFAULT);
        match found.find(name) {
            Ok(agent) => Ok((agent.clone(), found.agents.clone())),
            Err(why) => {
                let broken = found
                    .broken
                    .iter()
                    .find(|b| b.path.file_stem().is_some_and(|s| s == name))
                    .map(|b| format!(" ({}: {})", b.path.display(), b.reason))
                    .unwrap_or_default();
                Err(match for_run {
                    Some(_) => format!(
                        "The command's agent cannot be used: {why}{broken}. Fix the command's `agent:` (or the agent's file), then run it again."
                    ),
                    None => format!(
                        "This task's agent cannot be used: {why}{broken}. Choose another with /agent (or fix its file), then send a message to go on."
                    ),
                })
            }
        }
    }

    /// The skills found for the project, less those switched off for the task (its setting
    /// [`SKILLS_OFF`]), those it ranks higher first ([`SKILL_PRIORITY`]).
    fn skills(
        &self,
        places: &codewright_extensions::Places,
    ) -> codewright_extensions::skills::Catalog {
        let task = self.store().task(self.task).ok();
        let setting = |name: &str| task.as_ref().and_then(|t| t.settings.get(name).cloned());
        let off: Vec<String> = setting(SKILLS_OFF)
            .and_then(|v| serde_json::from_value(v).ok())
            .unwrap_or_default();
        let priority: HashMap<String, i64> = setting(SKILL_PRIORITY)
            .and_then(|v| serde_json::from_value(v).ok())
            .unwrap_or_default();
        codewright_extensions::skills::discover(places)
            .without(&off)
            .ranked(&priority)
    }

    /// Runs `calls` for this run (see [`run_calls`]): one result each, in order.
    async fn run_calls(
        &self,
        registry: &Registry,
        session: &Arc<Session>,
        mut calls: Vec<Call>,
    ) -> Vec<Part> {
        // A small model's write of a part of a Python file (one function of two) is merged
        // into the file by its definitions; one that would drop what the file defines
        // otherwise is refused, not run.
        if let Some(words) = self.words.as_ref().filter(|w| w.small) {
            // (Two parts of one file in one answer: the second is merged into the first's.)
            let mut written: HashMap<String, String> = HashMap::new();
            for call in calls
                .iter_mut()
                .filter(|c| c.name == crate::written::WRITE_FILE)
            {
                let Ok(mut arguments) = serde_json::from_str::<serde_json::Value>(&call.arguments)
                else {
                    continue;
                };
                let (Some(path), Some(content)) =
                    (arguments["path"].as_str(), arguments["content"].as_str())
                else {
                    continue;
                };
                let (path, content) = (path.to_string(), content.to_string());
                let base = written.get(&path).map(String::as_str);
                let whole = crate::written::part_of(&words.root, &path, &content, base);
                if let Some(whole) = &whole {
                    self.notice(format!("The model wrote part of {path} as if it were the whole file; what it wrote replaces the definitions of the same names, and the rest of the file is kept."));
                    arguments["content"] = serde_json::Value::String(whole.clone());
                    call.arguments = arguments.to_string();
                }
                written.insert(path, whole.unwrap_or(content));
            }
        }
        let mut refused: std::collections::HashMap<String, Part> = self
            .words
            .as_ref()
            .filter(|w| w.small)
            .map(|words| {
                calls
                    .iter()
                    .filter(|c| c.name == crate::written::WRITE_FILE)
                    .filter_map(|c| {
                        let arguments: serde_json::Value =
                            serde_json::from_str(&c.arguments).ok()?;
                        let path = arguments["path"].as_str()?;
                        let content = arguments["content"].as_str()?;
                        crate::written::refusal(&words.root, path, content).map(|why| {
                            self.emit(AgentEvent::ToolFinished {
                                task_id: self.task,
                                call_id: c.id.clone(),
                                name: c.name.clone(),
                                is_error: true,
                                preview: why.clone(),
                                detail: None,
                            });
                            (
                                c.id.clone(),
                                codewright_protocol::conversation::interrupted_result(&c.id, &why),
                            )
                        })
                    })
                    .collect()
            })
            .unwrap_or_default();
        // A small model's read of a file it read already and still sees in its request, with
        // nothing changed or run since, is answered with where it is (seen: the same two files
        // read 22 times, on acronym). Not in an answer that also changes or runs something.
        let only_reads = calls.iter().all(|c| c.name == crate::attach::READ_FILE);
        let mut reading: Vec<(String, String)> = Vec::new();
        if let Some(words) = self.words.as_ref().filter(|w| w.small) {
            let changes = self.changes();
            let reads = words.reads.lock().expect("reads lock");
            for call in calls.iter().filter(|c| c.name == crate::attach::READ_FILE) {
                let Ok(arguments) = serde_json::from_str::<serde_json::Value>(&call.arguments)
                else {
                    continue;
                };
                let key = arguments.to_string();
                if only_reads
                    && reads.made.get(&key) == Some(&changes)
                    && reads.shown.contains(&key)
                {
                    let path = arguments["path"].as_str().unwrap_or("the file");
                    let why = format!("Not read again: you read {path} above already, and no file has changed since. Do not read it again; write the change: the file's path on a line by itself, then its whole new content in one fenced code block.");
                    self.emit(AgentEvent::ToolFinished {
                        task_id: self.task,
                        call_id: call.id.clone(),
                        name: call.name.clone(),
                        is_error: true,
                        preview: why.clone(),
                        detail: None,
                    });
                    refused.insert(
                        call.id.clone(),
                        codewright_protocol::conversation::interrupted_result(&call.id, &why),
                    );
                } else {
                    reading.push((call.id.clone(), key));
                }
            }
        }
        let order: Vec<String> = calls.iter().map(|c| c.id.clone()).collect();
        let calls: Vec<Call> = calls
            .into_iter()
            .filter(|c| !refused.contains_key(&c.id))
            .collect();
        let categories: Vec<Option<ToolCategory>> = calls
            .iter()
            .map(|c| registry.get(&c.name).map(|t| t.category()))
            .collect();
        let results = run_calls(
            registry,
            session,
            &self.inner.store,
            calls,
            &self.cancel,
            &self.events,
        )
        .await;
        let mut results = results;
        if self.words.as_ref().is_some_and(|w| w.small) {
            for (category, result) in categories.iter().zip(results.iter_mut()) {
                if let (Some(ToolCategory::Execute), Part::ToolResult { content, .. }) =
                    (category, result)
                {
                    for part in content.iter_mut() {
                        if let codewright_protocol::ToolContent::Text { text } = part {
                            if let Some(short) = condensed(text) {
                                *text = short;
                            }
                        }
                    }
                }
            }
        }
        if let Some(words) = self.words.as_ref().filter(|w| w.small) {
            let changes = self.changes();
            let mut reads = words.reads.lock().expect("reads lock");
            for result in &results {
                if let Part::ToolResult {
                    call_id,
                    is_error: false,
                    ..
                } = result
                {
                    if let Some((_, key)) = reading.iter().find(|(id, _)| id == call_id) {
                        reads.made.insert(key.clone(), changes);
                    }
                }
            }
        }
        let mut work = self.work.lock().expect("work lock");
        for (category, result) in categories.iter().zip(&results) {
            if matches!(result, Part::ToolResult { is_error: true, .. }) {
                continue;
            }
            match category {
                Some(ToolCategory::Read | ToolCategory::Network) => work.reads += 1,
                Some(ToolCategory::Write) => work.edits += 1,
                Some(ToolCategory::Execute) => work.commands += 1,
                None => work.other += 1,
            }
        }
        if refused.is_empty() {
            return results;
        }
        let mut ran = results.into_iter();
        order
            .iter()
            .filter_map(|id| refused.remove(id).or_else(|| ran.next()))
            .collect()
    }

    /// Runs the calls an interrupted run left unanswered that had not run (or only waited for
    /// the user), and stores the answer's results, the settled ones included, in call order.
    async fn resume(
        &mut self,
        project: ProjectId,
        session: &Arc<Session>,
        resume: Vec<Unanswered>,
        view: &mut View,
    ) -> Result<(), RunOutcome> {
        self.step(Step::Start);
        self.step(Step::ToolCalls);
        let registry = self.registry(project);
        let calls: Vec<Call> = resume
            .iter()
            .filter_map(|p| match p {
                Unanswered::Run(call) => Some(call.clone()),
                Unanswered::Settled(_) => None,
            })
            .collect();
        let mut ran = self.run_calls(&registry, session, calls).await.into_iter();
        let results = resume
            .into_iter()
            .map(|p| match p {
                Unanswered::Settled(part) => part,
                Unanswered::Run(_) => ran.next().expect("one result per call"),
            })
            .collect();
        self.push(view, Message::new(Role::Tool, results))?;
        if self.cancel.is_cancelled() {
            return Err(RunOutcome::Stopped);
        }
        Ok(())
    }

    /// Reads the files the user's new message names for the model (see [`crate::attach`]), as
    /// `read_file` calls of the run, before its first request.
    async fn attach(
        &mut self,
        project: ProjectId,
        session: &Arc<Session>,
        message: &str,
        view: &mut View,
    ) -> Result<(), RunOutcome> {
        let files = crate::attach::named_files(&session.root, message);
        let registry = self.registry(project);
        let offered = offered_tools(registry.specs(), session);
        if files.is_empty() || !offered.iter().any(|s| s.name == crate::attach::READ_FILE) {
            return Ok(());
        }
        let calls: Vec<Call> = files
            .iter()
            .map(|path| Call {
                id: call_id(),
                name: crate::attach::READ_FILE.to_string(),
                arguments: serde_json::json!({ "path": path }).to_string(),
                truncated: false,
            })
            .collect();
        let asked = calls
            .iter()
            .map(|c| Part::ToolCall {
                id: c.id.clone(),
                name: c.name.clone(),
                arguments: c.arguments.clone(),
                truncated: false,
                signature: None,
            })
            .collect();
        self.push(view, Message::new(Role::Assistant, asked))?;
        self.step(Step::Start);
        self.step(Step::ToolCalls);
        let results = self.run_calls(&registry, session, calls).await;
        self.push(view, Message::new(Role::Tool, results))?;
        if self.cancel.is_cancelled() {
            return Err(RunOutcome::Stopped);
        }
        Ok(())
    }

    fn load(&self, prompt: Option<&Message>) -> Result<Loaded, String> {
        // Held while loading: a message steered in meanwhile is this run's own, not one that a
        // process which died left in the store's queue.
        let mut steer = self.steer.lock().expect("steer lock");
        let own: Vec<i64> = steer.queue.iter().filter_map(|q| q.id).collect();
        let mut loaded = load(&self.inner, self.task, prompt, &own)?;
        for queued in std::mem::take(&mut loaded.requeue).into_iter().rev() {
            steer.queue.push_front(queued);
        }
        Ok(loaded)
    }

    /// Stores and appends a message the run produced.
    fn push(&self, view: &mut View, message: Message) -> Result<(), RunOutcome> {
        let store = self.store();
        let stored = store.append_message(self.task, &message).and_then(|_| {
            // The answer's results are in the conversation now.
            match message.role {
                Role::Tool => store.clear_calls(self.task),
                _ => Ok(()),
            }
        });
        drop(store);
        if let Err(e) = stored {
            self.error(ErrorKind::Store, e.to_string());
            return Err(RunOutcome::Failed);
        }
        view.messages.push(message);
        Ok(())
    }

    /// Delivers steered messages (stored as user messages, in order).
    fn deliver_steer(&self, view: &mut View) -> Result<(), RunOutcome> {
        let queued: Vec<Queued> = self
            .steer
            .lock()
            .expect("steer lock")
            .queue
            .drain(..)
            .collect();
        for queued in queued {
            match self.deliver(&queued) {
                Ok(true) => view.messages.push(queued.message),
                Ok(false) => {}
                Err(e) => {
                    self.error(ErrorKind::Store, e.to_string());
                    return Err(RunOutcome::Failed);
                }
            }
        }
        Ok(())
    }

    /// Puts a queued message in the conversation: moved from the store's queue, or appended when
    /// it never got there. False if it was delivered already.
    fn deliver(&self, queued: &Queued) -> codewright_store::Result<bool> {
        let store = self.store();
        match queued.id {
            Some(id) => Ok(store.deliver_queued(id)?.is_some()),
            None => store
                .append_message(self.task, &queued.message)
                .map(|_| true),
        }
    }

    async fn iterate(
        &mut self,
        model: &Model,
        project: ProjectId,
        session: &Arc<Session>,
        system: &str,
        view: &mut View,
    ) -> RunOutcome {
        match self
            .iterate_inner(model, project, session, system, view)
            .await
        {
            Ok(outcome) | Err(outcome) => outcome,
        }
    }

    async fn iterate_inner(
        &mut self,
        model: &Model,
        project: ProjectId,
        session: &Arc<Session>,
        system: &str,
        view: &mut View,
    ) -> Result<RunOutcome, RunOutcome> {
        // Models without native tool calling get the tools in the prompt and write calls as text.
        let text_mode = !model.info.tools;
        let base_system = system;
        let mut empty_retry = false;
        let mut last_exchange: Option<Vec<String>> = None;
        // One reminder per run for a small model that ends without a change (sent, not stored).
        let (mut nudged, mut nudge_now) = (false, None::<String>);
        // The checks failing when a small model was last sent back to fix them.
        let mut sent_back = None::<Vec<String>>;
        // (Counted since the model's last change: one that keeps changing the code is let go on
        // within the iteration limit, one that keeps only talking is not.)
        let (mut reminded, mut reminded_at) = (0u32, 0u32);
        let mut repeated = 0u32;
        let mut told_images = false;
        let mut overflow_retried = false;
        let mut iteration = 0u32;
        loop {
            // The tools as they are now (an MCP server's may have changed since the last turn).
            let registry = self.registry(project);
            let mut offered = offered_tools(registry.specs(), session);
            if crate::prompt::is_small(model) {
                offered.retain(|s| {
                    crate::prompt::SMALL_MODEL_TOOLS.contains(&s.name.as_str())
                        || s.name.contains("__") // an MCP server's (server__tool)
                });
            }
            let specs = &compaction::tool_specs(&offered, &model.info)[..];
            let system = if text_mode {
                format!("{base_system}{}", text_calls::describe_tools(specs))
            } else {
                base_system.to_string()
            };
            self.deliver_steer(view)?;
            if self.cancel.is_cancelled() {
                return Ok(RunOutcome::Stopped);
            }
            iteration += 1;
            if iteration > self.inner.config.max_iterations {
                return Ok(self.pause(model, &system, specs, view).await);
            }
            // The system prompt and the tools go with every request: they count.
            let overhead = compaction::overhead(&system, if text_mode { &[] } else { specs });
            let window = model.info.context_window;
            if window > 0 && overhead + compaction::answer_reserve(&model.info) > window {
                // Compacting the conversation cannot make room: none of it is the problem.
                self.error(
                    ErrorKind::ContextOverflow,
                    format!(
                        "The system prompt (with the project's AGENTS.md or CLAUDE.md) and the tools' descriptions are about {overhead} tokens (estimated), which leaves no room for an answer in the context window of {} ({window} tokens). Choose a model with a larger window, or shorten the project's instructions.",
                        model.info.id
                    ),
                );
                return Ok(RunOutcome::Failed);
            }
            if view.tokens(overhead) > compaction::threshold(&model.info) {
                self.compact(model, view, overhead).await?;
            }
            let state = self.tracker.get();
            if state != AgentState::Streaming {
                self.step(if state == AgentState::RunningTools {
                    Step::ToolsDone
                } else {
                    Step::Start
                });
            }
            self.emit(AgentEvent::Request {
                task_id: self.task,
                iteration,
                model: model.info.id.clone(),
            });
            // While the user's check fails, a small model is sent the task, the file now and
            // the failure, not its earlier attempts (see [`crate::focus`]).
            let failing = self
                .words
                .as_ref()
                .filter(|w| w.small)
                .map(|w| {
                    (
                        w.failing(self.work.lock().expect("work lock").edits),
                        &w.root,
                    )
                })
                .filter(|(failing, _)| !failing.is_empty());
            let focused = failing.and_then(|(failing, root)| {
                crate::focus::request(&view.messages, root, &failing, sent_back.is_some())
            });
            let sent = focused.as_deref().unwrap_or(&view.messages);
            if let Some(words) = self.words.as_ref().filter(|w| w.small) {
                words.reads.lock().expect("reads lock").shown = shown_reads(sent);
            }
            let mut request_messages = if text_mode {
                text_calls::as_text_protocol(sent)
            } else {
                sent.to_vec()
            };
            if empty_retry {
                request_messages.push(Message::user(NUDGE));
            }
            if let Some(failing) = sent_back.take().filter(|_| focused.is_none()) {
                request_messages.push(Message::user(checks_fail(&failing)));
            }
            if let Some(reminder) = nudge_now.take() {
                request_messages.push(Message::user(reminder));
            }
            let mut request_messages = one_user_message_at_a_time(request_messages);
            if !model.info.images && without_images(&mut request_messages) && !told_images {
                told_images = true;
                self.notice(format!("{} does not take images (as far as Codewright knows), so the images in this task are named to it, not shown. Choose a model that takes images to have them seen.", model.info.id));
            }
            // A request that cannot fit is not sent (a local server may answer it with nothing,
            // or cut it silently): it is handled like the provider's own "too long".
            let needed = view.tokens(overhead);
            let result = if window > 0 && needed > window {
                Err(Failure::Overflow(format!(
                    "The next request would be about {needed} tokens (estimated), more than the context window of {} ({window} tokens); the system prompt and the tools' descriptions alone are about {overhead}.",
                    model.info.id
                )))
            } else {
                self.ask_model(model, Some(&system), request_messages, specs.to_vec(), true)
                    .await
            };
            let answer = match result {
                Ok(answer) => answer,
                Err(Failure::Overflow(message)) if !overflow_retried => {
                    overflow_retried = true;
                    self.notice(format!(
                        "{message} Compacting the conversation and trying again."
                    ));
                    if !self.compact(model, view, overhead).await? {
                        self.error(ErrorKind::ContextOverflow, format!("{message} There is too little history to compact: shorten the last message or start a new task, or choose a model with a larger context window."));
                        return Ok(RunOutcome::Failed);
                    }
                    continue;
                }
                Err(Failure::Overflow(message)) => {
                    self.error(
                        ErrorKind::ContextOverflow,
                        format!("{message} It still does not fit after compacting: start a new task, or compact the conversation again."),
                    );
                    return Ok(RunOutcome::Failed);
                }
                Err(Failure::Ended(outcome)) => return Ok(outcome),
            };
            let counted = answer
                .usage
                .map(|u| u.input + u.cache_read + u.cache_write + u.output);
            let calls: Vec<Call> = answer
                .parts
                .iter()
                .filter_map(|p| match p {
                    Part::ToolCall {
                        id,
                        name,
                        arguments,
                        truncated,
                        ..
                    } => Some(Call {
                        id: id.clone(),
                        name: name.clone(),
                        arguments: arguments.clone(),
                        truncated: *truncated,
                    }),
                    _ => None,
                })
                .collect();
            if calls.is_empty() {
                let said_something = answer.parts.iter().any(|p| match p {
                    Part::Text { text } => !text.trim().is_empty(),
                    _ => false,
                });
                if !said_something {
                    if !empty_retry {
                        empty_retry = true;
                        self.notice("The model sent an empty answer; asking it once more.");
                        continue;
                    }
                    self.notice("The model sent an empty answer again, so the run stops here. Send a message to continue, or try another model.");
                    return Ok(RunOutcome::Done);
                }
                view.push_answer(answer, counted);
                // A small model asked to change named files that ends having changed nothing
                // ("the function has been implemented") is told so once, with how to.
                let asked_for_change = self.words.as_ref().is_some_and(|w| !w.files.is_empty());
                let edits = self.work.lock().expect("work lock").edits;
                // One that ends while the user's checks fail (they ran after its last change,
                // or when it ended) is sent back, a few times, with what failed.
                let failing = self
                    .words
                    .as_ref()
                    .filter(|w| w.small)
                    .map(|w| w.failing(edits))
                    .unwrap_or_default();
                if !failing.is_empty() {
                    if edits != reminded_at {
                        (reminded, reminded_at) = (0, edits);
                    }
                    if reminded < MAX_CHECK_REMINDERS {
                        reminded += 1;
                        self.notice(format!(
                            "The model ended while {} still fails; it is sent back to fix it ({reminded} of {MAX_CHECK_REMINDERS}).",
                            failing.join(" and ")
                        ));
                        sent_back = Some(failing);
                        continue;
                    }
                    self.notice(format!(
                        "The model ended while {} still fails, after being sent back {MAX_CHECK_REMINDERS} times without changing anything: the task is not done.",
                        failing.join(" and ")
                    ));
                } else if asked_for_change && edits == 0 && !std::mem::replace(&mut nudged, true) {
                    self.notice("The model ended without changing any file; it is told once how to write one.");
                    nudge_now = Some(NOTHING_CHANGED.to_string());
                    continue;
                }
                // Done, unless a message arrived meanwhile; from here on, new ones are refused.
                let mut steer = self.steer.lock().expect("steer lock");
                if !steer.queue.is_empty() {
                    continue;
                }
                steer.closed = true;
                return Ok(RunOutcome::Done);
            }
            empty_retry = false;
            view.push_answer(answer, counted);
            self.step(Step::ToolCalls);
            let mut results = match &calls[..] {
                // The call Codewright could not read is answered with the exact format.
                [call] if call.name == UNREADABLE => {
                    self.notice("The model wrote what looks like a tool call, but not one Codewright can read (not valid JSON, or no tool of that name); it is shown the exact format once.");
                    vec![codewright_protocol::conversation::interrupted_result(
                        &call.id,
                        &text_calls::correction(specs),
                    )]
                }
                _ => self.run_calls(&registry, session, calls).await,
            };
            let passed = !results
                .iter()
                .any(|r| matches!(r, Part::ToolResult { is_error: true, .. }));
            // The same calls failing the same way, again and again: a model going round in
            // circles (seen: one write refused as "would not change" twenty times). Reads in
            // between change nothing, and are left out (seen: a refused write and its check,
            // with one read or two before them, until the time ran out).
            let asked: std::collections::HashMap<&str, String> = view
                .messages
                .last()
                .map(|m| {
                    m.tool_calls()
                        .filter(|c| {
                            registry.get(c.name).map(|t| t.category()) != Some(ToolCategory::Read)
                        })
                        .map(|c| (c.id, format!("{}{}", c.name, c.arguments)))
                        .collect()
                })
                .unwrap_or_default();
            let exchange: Vec<String> = results
                .iter()
                .filter_map(|r| match r {
                    Part::ToolResult {
                        call_id,
                        content,
                        is_error,
                        ..
                    } => asked.get(call_id.as_str()).map(|call| {
                        // (The result's digits aside: a test run says how long it took.)
                        let result = serde_json::to_string(content).unwrap_or_default();
                        format!(
                            "{call}{is_error}{}",
                            result.replace(|c: char| c.is_ascii_digit(), "#")
                        )
                    }),
                    _ => None,
                })
                .collect();
            repeated = if !passed && last_exchange.as_ref() == Some(&exchange) {
                repeated + 1
            } else {
                0
            };
            last_exchange = Some(exchange);
            // A check that fails again with nothing changed since it last failed (the model's
            // write was refused, or changed nothing) is not shown to the model twice.
            if let (Some(words), Some(checked)) = (&self.words, &self.checked_in_words) {
                let edits = self.work.lock().expect("work lock").edits;
                for (command, id) in &checked.calls {
                    if words.ran.get(command)
                        != Some(&Ran {
                            edits,
                            passed: false,
                        })
                    {
                        continue;
                    }
                    for result in results.iter_mut() {
                        if let Part::ToolResult {
                            call_id,
                            content,
                            is_error: true,
                            ..
                        } = result
                        {
                            if call_id == id {
                                *content = vec![codewright_protocol::ToolContent::Text {
                                    text: crate::focus::fails_as_before(command),
                                }];
                            }
                        }
                    }
                }
            }
            let succeeded: std::collections::HashSet<String> = results
                .iter()
                .filter_map(|r| match r {
                    Part::ToolResult {
                        call_id,
                        is_error: false,
                        ..
                    } => Some(call_id.clone()),
                    _ => None,
                })
                .collect();
            self.push(view, Message::new(Role::Tool, results))?;
            if repeated >= 2 {
                self.notice("The model made the same calls three times in a row and they failed the same way each time, so the run stops here rather than go round in circles. Send a message to continue.");
                return Ok(RunOutcome::Done);
            }
            if self.cancel.is_cancelled() {
                return Ok(RunOutcome::Stopped);
            }
            // The checks ran as of the edits made now.
            let checked = self.checked_in_words.take();
            let mut checks_passed = false;
            if let (Some(words), Some(checked)) = (self.words.as_mut(), &checked) {
                let edits = self.work.lock().expect("work lock").edits;
                checks_passed = true;
                for (command, id) in &checked.calls {
                    let passed = succeeded.contains(id);
                    checks_passed &= passed;
                    words.ran.insert(command.clone(), Ran { edits, passed });
                }
            }
            // A change that passes the user's own checks, or work the model ended that does,
            // is the end of the task: asking the model again only has it say so (at a few
            // tokens a second).
            if let Some(checks) = checked
                .filter(|c| passed && checks_passed && (c.wrote || c.ended))
                .map(|c| {
                    c.calls
                        .into_iter()
                        .map(|(command, _)| command)
                        .collect::<Vec<_>>()
                })
            {
                let mut steer = self.steer.lock().expect("steer lock");
                if steer.queue.is_empty() {
                    steer.closed = true;
                    drop(steer);
                    self.notice(format!(
                        "The change passes the checks you named ({}), so the run ends here.",
                        checks.join(", ")
                    ));
                    return Ok(RunOutcome::Done);
                }
            }
        }
    }

    /// One streamed request. With `store`, the answer is saved as it streams and finished with
    /// its usage (a summary request is not part of the conversation: only its usage is kept).
    async fn ask_model(
        &mut self,
        model: &Model,
        system: Option<&str>,
        messages: Vec<Message>,
        tools: Vec<codewright_protocol::ToolSpec>,
        store_answer: bool,
    ) -> Result<Message, Failure> {
        let task = self.task;
        // An answer may take what the window leaves after the request (at least its reserve):
        // some servers (vLLM) refuse a request whose prompt and answer limit exceed the window.
        let mut max_output = model.info.max_output.min(32_000);
        // A local model nobody described (its longest answer unknown) gets a short leash: a small
        // model that starts repeating itself would otherwise write 8,192 tokens at a few a second.
        if model.provider.is_local() && !model.info.known {
            max_output = max_output.min(LOCAL_UNKNOWN_MAX_OUTPUT);
        }
        if model.info.context_window > 0 {
            let sent = compaction::estimate(&messages)
                + compaction::overhead(
                    system.unwrap_or(""),
                    if model.info.tools { &tools } else { &[] },
                );
            let room = model
                .info
                .context_window
                .saturating_sub(sent + compaction::margin(&model.info));
            max_output = max_output.min(room.max(compaction::answer_reserve(&model.info)));
        }
        let request = ChatRequest {
            model: model.info.name().to_string(),
            system: system.map(String::from),
            messages,
            tools: if model.info.tools {
                tools.clone()
            } else {
                Vec::new()
            },
            max_output_tokens: max_output as u32,
            thinking_budget: None,
            sampling: model.info.sampling,
        };
        let body = build_body(&model.provider, &request);
        let mut streaming = if store_answer {
            match self.store().start_streaming(task, &model.info.id) {
                Ok(s) => {
                    self.emit(AgentEvent::AnswerStarted {
                        task_id: task,
                        message_id: s.id(),
                    });
                    Some(s)
                }
                Err(e) => {
                    self.error(ErrorKind::Store, e.to_string());
                    return Err(Failure::Ended(RunOutcome::Failed));
                }
            }
        } else {
            None
        };
        let store = self.inner.store.clone();
        let events = self.events.clone();
        let mut write_error = None;
        let heard = std::sync::atomic::AtomicBool::new(false);
        // This request alone is stopped when the answer loops (see [`crate::repetition`]).
        let request_cancel = self.cancel.child_token();
        let looped = std::sync::atomic::AtomicBool::new(false);
        let guard_loops = model.provider.is_local();
        let mut said = String::new();
        let mut on_delta = |delta: &Delta, parts: &[Part]| {
            if !matches!(delta, Delta::Idle) {
                heard.store(true, std::sync::atomic::Ordering::Relaxed);
            }
            // A retry is heard even when nothing is stored (a summary request).
            if let Delta::Retry {
                attempt,
                max_retries,
                wait,
                error,
            } = delta
            {
                said.clear();
                let _ = events.send(AgentEvent::Notice {
                    task_id: task,
                    message: format!(
                        "{} Trying again in {:.1} s (retry {attempt} of at most {max_retries}).",
                        error.message,
                        wait.as_secs_f64()
                    ),
                });
                return;
            }
            let Some(streaming) = streaming.as_mut() else {
                return;
            };
            let bytes = match delta {
                Delta::Text(text) => {
                    let _ = events.send(AgentEvent::TextDelta {
                        task_id: task,
                        text: text.clone(),
                    });
                    said.push_str(text);
                    if guard_loops && crate::repetition::looping(&said).is_some() {
                        looped.store(true, std::sync::atomic::Ordering::Relaxed);
                        request_cancel.cancel();
                    }
                    text.len()
                }
                Delta::Thinking(text) => {
                    let _ = events.send(AgentEvent::ThinkingDelta {
                        task_id: task,
                        text: text.clone(),
                    });
                    text.len()
                }
                Delta::ToolCallStarted { id, name } => {
                    let _ = events.send(AgentEvent::ToolCallStarted {
                        task_id: task,
                        call_id: id.clone(),
                        name: name.clone(),
                    });
                    name.len()
                }
                Delta::ToolCallArguments { id, arguments } => {
                    let _ = events.send(AgentEvent::ToolCallArguments {
                        task_id: task,
                        call_id: id.clone(),
                        delta: arguments.clone(),
                    });
                    arguments.len()
                }
                Delta::Usage(_) | Delta::Idle | Delta::Retry { .. } => 0,
            };
            if let Err(e) = streaming.update(&store.lock().expect("store lock"), parts, bytes) {
                write_error.get_or_insert(e.to_string());
            }
        };
        let result = {
            let stream = self.inner.client.stream(
                &model.provider,
                model.key.as_deref(),
                model.info.name(),
                &body,
                &request_cancel,
                &mut on_delta,
            );
            tokio::pin!(stream);
            let quiet = tokio::time::sleep(self.inner.config.quiet_notice_after);
            tokio::pin!(quiet);
            let mut told = false;
            loop {
                tokio::select! {
                    result = &mut stream => break result,
                    () = &mut quiet, if !told => {
                        told = true;
                        if !heard.load(std::sync::atomic::Ordering::Relaxed) {
                            self.notice(quiet_notice(model, self.inner.config.quiet_notice_after));
                        }
                    }
                }
            }
        };
        if let Some(e) = write_error {
            self.notice(format!(
                "Saving the answer while it streamed failed ({e}); it is saved when it ends."
            ));
        }
        // A looping answer is kept up to its loop's first copy, and taken as the answer (it may
        // have ended by itself before the stop reached it).
        let looped = looped.load(std::sync::atomic::Ordering::Relaxed);
        let mut result = match result {
            Err(failure) if looped && !self.cancel.is_cancelled() => Ok(failure
                .partial
                .unwrap_or_else(|| Message::new(Role::Assistant, Vec::new()))),
            other => other,
        };
        if let (true, Ok(message)) = (looped, result.as_mut()) {
            if let Some(Part::Text { text }) = message
                .parts
                .iter_mut()
                .rev()
                .find(|p| matches!(p, Part::Text { .. }))
            {
                if let Some(end) = crate::repetition::looping(text) {
                    text.truncate(end);
                }
            }
            message.stop_reason = Some(StopReason::MaxTokens);
            self.notice(format!(
                "{} began repeating itself, so its answer was stopped there and kept up to the first repeat.",
                model.info.id
            ));
        }
        match result {
            Ok(message) => {
                // A model without native tools writes its calls as text; so do small local
                // models that have them (a fenced JSON object as the whole answer). Both are
                // taken as calls of the tools offered, never as the final answer.
                let native_calls = message
                    .parts
                    .iter()
                    .any(|p| matches!(p, Part::ToolCall { .. }));
                let mut message = if !tools.is_empty() && !native_calls {
                    with_text_calls(message, &tools, model.info.tools)
                } else {
                    message
                };
                // A small or text-protocol model may also write a whole file, or ask for the
                // user's check command, in words; or write a call that cannot be read, which
                // gets one corrective turn (as a call answered with the format, so the
                // conversation keeps its turns).
                let no_calls =
                    |m: &Message| !m.parts.iter().any(|p| matches!(p, Part::ToolCall { .. }));
                let words = crate::prompt::is_small(model) || !model.info.tools;
                if words && !tools.is_empty() {
                    self.with_written_work(&mut message, &tools);
                    if no_calls(&message)
                        && !self.corrected
                        && text_calls::attempted_call(&message.text())
                    {
                        self.corrected = true;
                        message.parts.push(Part::ToolCall {
                            id: call_id(),
                            name: UNREADABLE.to_string(),
                            arguments: "{}".to_string(),
                            truncated: false,
                            signature: None,
                        });
                    }
                }
                // A server that reports no usage (some local ones) gets an estimate, marked as
                // one, rather than zeros.
                // Stored under the id it was asked for (the provider's echo of a bare name
                // would lose the provider).
                message.model = Some(model.info.id.clone());
                if message.usage.is_none() {
                    message.usage = Some(compaction::estimate_usage(&request, &message));
                }
                let usage = message.usage.unwrap_or_default();
                let event = UsageEvent {
                    model: model.info.id.clone(),
                    provider: model.provider.name.clone(),
                    usage,
                    cost: model.info.pricing.cost(&usage),
                };
                let saved = match streaming {
                    Some(streaming) => streaming
                        .finish(&self.store(), &message, Some(&event))
                        .map(|_| ()),
                    None => self.store().record_usage(task, &event),
                };
                if let Err(e) = saved {
                    self.error(ErrorKind::Store, e.to_string());
                    return Err(Failure::Ended(RunOutcome::Failed));
                }
                let context_tokens =
                    usage.input + usage.cache_read + usage.cache_write + usage.output;
                if store_answer && context_tokens > 0 && model.info.context_window > 0 {
                    let share = context_tokens as f64 / model.info.context_window as f64;
                    let _ = self.store().set_context_usage(task, share);
                }
                self.emit(AgentEvent::Usage {
                    task_id: task,
                    usage,
                    context_tokens,
                    context_window: model.info.context_window,
                });
                Ok(message)
            }
            Err(failure) => {
                let stopped = failure.error.kind == LlmErrorKind::Cancelled;
                let kept = failure.partial.is_some() && streaming.is_some();
                // What the user is told, which the stored answer keeps.
                let mut message = failure.error.message.clone();
                let mut overflow = failure.error.kind == LlmErrorKind::ContextOverflow
                    && failure.partial.is_none();
                if failure.error.kind == LlmErrorKind::EmptyStream {
                    // Most likely a request too long for the server's window: say how long.
                    let needed = compaction::estimate(&request.messages)
                        + compaction::overhead(
                            request.system.as_deref().unwrap_or(""),
                            &request.tools,
                        );
                    let window = model.info.context_window;
                    message.push_str(&format!(
                        " This request was about {needed} tokens (estimated) for a context window of {window}."
                    ));
                    overflow = window > 0 && needed * 4 >= window * 3;
                }
                if kept {
                    message.push_str(" The part of the answer that had arrived is kept.");
                }
                if let Some(streaming) = streaming {
                    let mut partial = failure
                        .partial
                        .clone()
                        .unwrap_or_else(|| Message::new(Role::Assistant, Vec::new()));
                    partial.model = Some(model.info.id.clone());
                    if stopped {
                        partial.stop_reason = Some(StopReason::Aborted);
                    } else {
                        partial.stop_reason = Some(StopReason::Error);
                        partial.error = Some(message.clone());
                    }
                    let _ = streaming.finish(&self.store(), &partial, None);
                    // Calls in what arrived never run: answer them now.
                    let ids: Vec<String> = partial.tool_calls().map(|c| c.id.to_string()).collect();
                    if !ids.is_empty() {
                        let results = ids
                            .iter()
                            .map(|id| {
                                codewright_protocol::conversation::interrupted_result(id, STOPPED)
                            })
                            .collect();
                        let _ = self
                            .store()
                            .append_message(task, &Message::new(Role::Tool, results));
                    }
                }
                if stopped {
                    return Err(Failure::Ended(RunOutcome::Stopped));
                }
                if overflow {
                    return Err(Failure::Overflow(message));
                }
                self.error(kind_of(failure.error.kind), message);
                Err(Failure::Ended(RunOutcome::Failed))
            }
        }
    }

    /// Summarizes the older messages; false when there was too little to compact.
    async fn compact(
        &mut self,
        model: &Model,
        view: &mut View,
        overhead: u64,
    ) -> Result<bool, RunOutcome> {
        let plan = compaction::plan(&self.store(), self.task, &model.info, overhead);
        let plan = match plan {
            Ok(Some(plan)) => plan,
            Ok(None) => return Ok(false),
            Err(e) => {
                self.error(ErrorKind::Store, e);
                return Err(RunOutcome::Failed);
            }
        };
        self.step(Step::Compact);
        // What to keep is judged by the run's model's window; the summary request must fit the
        // summarizer's.
        let summarizer = self.compaction.clone().unwrap_or_else(|| model.clone());
        // What the summarizer's window holds besides its answer and the instructions, at 3
        // characters a token (the transcript is mostly code and paths).
        let instructions = (compaction::INSTRUCTIONS.len() / 4) as u64;
        let budget_chars =
            compaction::threshold(&summarizer.info).saturating_sub(instructions) as usize * 3;
        let prompt = compaction::transcript(
            plan.previous.as_ref().map(|c| c.summary.as_str()),
            &plan.to_summarize,
            budget_chars,
        );
        let summary = match self
            .ask_model(
                &summarizer,
                Some(compaction::INSTRUCTIONS),
                vec![Message::user(prompt)],
                Vec::new(),
                false,
            )
            .await
        {
            Ok(answer) if !answer.text().trim().is_empty() => answer.text(),
            Ok(_) => {
                self.error(ErrorKind::Compaction, "The model wrote an empty summary, so the conversation was not compacted. Start a new task to go on.");
                return Err(RunOutcome::Failed);
            }
            Err(Failure::Ended(outcome)) => return Err(outcome),
            Err(Failure::Overflow(message)) => {
                self.error(
                    ErrorKind::ContextOverflow,
                    format!("{message} Even the summary request does not fit: start a new task."),
                );
                return Err(RunOutcome::Failed);
            }
        };
        let kept_tokens = {
            let store = self.store();
            let kept: Vec<Message> =
                compaction::visible(store.history(self.task).unwrap_or_default())
                    .into_iter()
                    .filter(|r| r.seq >= plan.first_kept_seq)
                    .map(|r| r.message)
                    .collect();
            compaction::estimate(&kept)
        };
        let tokens_after = kept_tokens + compaction::estimate(&[Message::user(summary.clone())]);
        let record = Compaction {
            summary: summary.clone(),
            first_kept_seq: plan.first_kept_seq,
            tokens_before: plan.tokens_before,
            tokens_after,
            created_at: 0,
        };
        let reloaded = {
            let store = self.store();
            store
                .record_compaction(self.task, &record)
                .map_err(|e| e.to_string())
                .and_then(|()| compaction::view(&store, self.task))
        };
        match reloaded {
            Ok(new_view) => *view = new_view,
            Err(e) => {
                self.error(ErrorKind::Store, e);
                return Err(RunOutcome::Failed);
            }
        }
        self.emit(AgentEvent::Compaction {
            task_id: self.task,
            tokens_before: plan.tokens_before,
            tokens_after,
            summary,
            first_kept_seq: plan.first_kept_seq,
        });
        self.step(Step::Compacted);
        Ok(true)
    }

    /// The iteration limit: ask for a checkpoint summary (stored as an answer), then pause.
    async fn pause(
        &mut self,
        model: &Model,
        system: &str,
        specs: &[codewright_protocol::ToolSpec],
        view: &mut View,
    ) -> RunOutcome {
        // The history as the model reads it, with the tools it was offered (providers refuse a
        // history of tool calls without them); the request itself asks for no more calls.
        let mut request = if model.info.tools {
            view.messages.clone()
        } else {
            text_calls::as_text_protocol(&view.messages)
        };
        request.push(Message::user(SUMMARY_REQUEST));
        if self.tracker.get() == AgentState::RunningTools {
            self.step(Step::ToolsDone);
        }
        let summarized = match self
            .ask_model(model, Some(system), request, specs.to_vec(), true)
            .await
        {
            Ok(answer) => {
                // Calls made anyway are answered, not run, so the history stays whole.
                let results: Vec<Part> = answer
                    .tool_calls()
                    .map(|c| codewright_protocol::conversation::interrupted_result(c.id, PAUSED))
                    .collect();
                if !results.is_empty() {
                    let _ = self.push(view, Message::new(Role::Tool, results));
                }
                !answer.text().trim().is_empty()
            }
            Err(_) => false,
        };
        self.notice(format!(
            "Paused after {} requests (the iteration limit){}. Send a message to continue.",
            self.inner.config.max_iterations,
            if summarized {
                "; a summary of the progress was written"
            } else {
                ""
            }
        ));
        RunOutcome::Paused
    }
}

/// The longest answer asked of a local model whose own limit is unknown (Settings → Models
/// sets it per model).
pub const LOCAL_UNKNOWN_MAX_OUTPUT: u64 = 2_048;

/// How a request failed.
enum Failure {
    /// The conversation does not fit the context window (nothing arrived): compact and retry.
    Overflow(String),
    /// The run ends this way (the error, if any, was reported).
    Ended(RunOutcome),
}

impl Run {
    /// Adds to `message` the calls its words mean (see [`crate::written`]): a whole file
    /// headed by its path, a check command the user named (run after every such file too).
    fn with_written_work(
        &mut self,
        message: &mut Message,
        tools: &[codewright_protocol::ToolSpec],
    ) {
        let edits = self.work.lock().expect("work lock").edits;
        let Some(words) = self.words.as_mut() else {
            return;
        };
        let offers = |name: &str| tools.iter().any(|t| t.name == name);
        // An answer with calls of its own is read for nothing more, but a change it makes is
        // checked all the same (unless it runs a command itself).
        let called = |names: &[&str]| {
            message
                .parts
                .iter()
                .any(|p| matches!(p, Part::ToolCall { name, .. } if names.contains(&name.as_str())))
        };
        let model_wrote = called(&[crate::written::WRITE_FILE, crate::written::EDIT_FILE]);
        let changes = model_wrote && !called(&[crate::written::BASH]);
        let ended = message.tool_calls().next().is_none();
        let written = if !ended {
            crate::written::Written::default()
        } else {
            crate::written::work(
                &message.text(),
                &words.root,
                &words.commands,
                &words.files,
                &words.keep,
            )
        };
        let kept = written.kept;
        let mut calls = Vec::new();
        if offers(crate::written::WRITE_FILE) {
            for (path, content) in written.files {
                calls.push((
                    crate::written::WRITE_FILE,
                    serde_json::json!({ "path": path, "content": content }),
                ));
            }
        }
        // After a change written in words, the user's check commands run as well: the model
        // sees what they say, as aider's small models do. Named without a change since they
        // last ran, they do not run again.
        let wrote = !calls.is_empty() || changes;
        let mut commands = written.commands;
        if wrote {
            for command in &words.commands {
                if !commands.contains(command) {
                    commands.push(command.clone());
                }
            }
        } else {
            commands.retain(|c| words.ran.get(c).map(|r| r.edits) != Some(edits));
        }
        // A small model's answer that ends its work has the checks it has not seen run since
        // its last change run now: they, not its word, say whether the task is done.
        let ended = words.small && ended && calls.is_empty() && commands.is_empty();
        if ended {
            commands = words
                .commands
                .iter()
                .filter(|c| words.ran.get(*c).map(|r| r.edits) != Some(edits))
                .cloned()
                .collect();
        }
        if !offers(crate::written::BASH) {
            commands.clear();
        }
        for (name, arguments) in calls {
            message.parts.push(Part::ToolCall {
                id: call_id(),
                name: name.to_string(),
                arguments: arguments.to_string(),
                truncated: false,
                signature: None,
            });
        }
        // (After the writes: the checks see them.) The model's own run of a check command
        // is one too.
        let mut checks: Vec<(String, String)> = message
            .tool_calls()
            .filter(|c| c.name == crate::written::BASH)
            .filter_map(|c| {
                let arguments: serde_json::Value = serde_json::from_str(c.arguments).ok()?;
                let command = arguments["command"].as_str()?.trim();
                words
                    .commands
                    .iter()
                    .find(|known| known.as_str() == command)
                    .map(|known| (known.clone(), c.id.to_string()))
            })
            .collect();
        for command in commands {
            let id = call_id();
            message.parts.push(Part::ToolCall {
                id: id.clone(),
                name: crate::written::BASH.to_string(),
                arguments: serde_json::json!({ "command": command }).to_string(),
                truncated: false,
                signature: None,
            });
            checks.push((command, id));
        }
        for path in &kept {
            self.notice(format!("The model wrote out {path} in its answer; it is not written over the file, since the tests you named are what the task is measured by. Ask for a change to the tests to have one made."));
        }
        let ended = ended && !checks.is_empty();
        if ended {
            let names: Vec<String> = checks.iter().map(|(c, _)| format!("`{c}`")).collect();
            self.notice(format!(
                "The model ended its work; {} runs to see whether the task is done.",
                names.join(" and ")
            ));
        }
        self.checked_in_words = (!checks.is_empty()).then_some(Checked {
            calls: checks,
            wrote: wrote || model_wrote,
            ended,
        });
    }
}

/// The `read_file` calls (their arguments, as keys) whose results `messages` hold, not failed.
fn shown_reads(messages: &[Message]) -> std::collections::HashSet<String> {
    let succeeded: std::collections::HashSet<&str> = messages
        .iter()
        .flat_map(|m| &m.parts)
        .filter_map(|p| match p {
            Part::ToolResult {
                call_id,
                is_error: false,
                ..
            } => Some(call_id.as_str()),
            _ => None,
        })
        .collect();
    messages
        .iter()
        .flat_map(|m| m.tool_calls())
        .filter(|c| c.name == crate::attach::READ_FILE && succeeded.contains(c.id))
        .filter_map(|c| serde_json::from_str::<serde_json::Value>(c.arguments).ok())
        .map(|a| a.to_string())
        .collect()
}

/// `messages` with user messages that follow one another made one (their parts in order): a
/// reminder sent after the user's message or after results read as text, or the focus after the
/// task, would otherwise be two user turns in a row, which strict chat templates refuse.
fn one_user_message_at_a_time(messages: Vec<Message>) -> Vec<Message> {
    let mut out: Vec<Message> = Vec::with_capacity(messages.len());
    for message in messages {
        match out.last_mut() {
            Some(last) if last.role == Role::User && message.role == Role::User => {
                last.parts.extend(message.parts)
            }
            _ => out.push(message),
        }
    }
    out
}

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

/// An answer with the calls it wrote as text (and its `<think>` block) turned into parts. The
/// text stays as the model wrote it. For a model with native tools (`native`), text calls count
/// only when they name offered tools and are most of the answer: a JSON call inside a long
/// explanation is an example, not a call.
fn with_text_calls(
    mut message: Message,
    specs: &[codewright_protocol::ToolSpec],
    native: bool,
) -> Message {
    let mut parsed = text_calls::parse(&message.text());
    if native {
        // (A model taught the text format is told when it names a tool that is not there; one
        // with native tools only has its text read when it is plainly a call of an offered one.)
        parsed
            .calls
            .retain(|c| specs.iter().any(|s| s.name == c.name));
        if parsed.calls.is_empty()
            || !text_calls::mostly_calls(&text_calls::without_made_up_results(&parsed.text))
        {
            return message;
        }
    }
    if parsed.calls.is_empty() && parsed.thinking.is_none() {
        return message;
    }
    let mut parts = Vec::new();
    if let Some(thinking) = parsed.thinking {
        parts.push(Part::Thinking {
            text: thinking,
            signature: None,
            redacted: None,
        });
    }
    if !parsed.text.trim().is_empty() {
        parts.push(Part::Text { text: parsed.text });
    }
    for call in parsed.calls {
        let call = text_calls::repaired(call, specs);
        let spec = specs.iter().find(|s| s.name == call.name);
        parts.push(Part::ToolCall {
            id: call_id(),
            name: call.name.clone(),
            arguments: text_calls::coerce(&call, spec).to_string(),
            truncated: false,
            signature: None,
        });
    }
    message.parts = parts;
    message
}

/// What a request that has brought nothing for `waited` is told as.
fn quiet_notice(model: &Model, waited: std::time::Duration) -> String {
    let limit = model.provider.timeouts().first_byte.as_secs();
    let why = if model.provider.is_local() {
        "A local model reads the whole prompt before it writes its first word; a long prompt on a small machine takes a while."
    } else {
        "The provider may be busy, or the model thinking before it writes."
    };
    format!(
        "{} has sent nothing yet after {} s. {why} It is given up to {limit} s before this counts as a timeout.",
        model.info.id,
        waited.as_secs()
    )
}

/// The kind a front end sees for a provider's error.
fn kind_of(kind: LlmErrorKind) -> ErrorKind {
    match kind {
        LlmErrorKind::Auth => ErrorKind::Auth,
        LlmErrorKind::RateLimit => ErrorKind::RateLimit,
        LlmErrorKind::Overloaded => ErrorKind::Overloaded,
        LlmErrorKind::ContextOverflow => ErrorKind::ContextOverflow,
        LlmErrorKind::InvalidRequest => ErrorKind::InvalidRequest,
        LlmErrorKind::NotFound => ErrorKind::NotFound,
        LlmErrorKind::Network => ErrorKind::Network,
        LlmErrorKind::Timeout => ErrorKind::Timeout,
        LlmErrorKind::BadResponse => ErrorKind::BadResponse,
        LlmErrorKind::StreamEndedEarly | LlmErrorKind::EmptyStream => ErrorKind::StreamEndedEarly,
        LlmErrorKind::Provider => ErrorKind::Provider,
        // A stop is not an error; it never reaches here.
        LlmErrorKind::Cancelled => ErrorKind::Setup,
    }
}

/// Reads the task, closes what a crash left open, settles the calls an interrupted run left
/// without results, delivers the messages a run that died had queued (all but `own`, this
/// run's), appends the prompt, and returns what the run starts from. The caller holds the task's
/// lock.
fn load(
    inner: &Inner,
    task_id: TaskId,
    prompt: Option<&Message>,
    own: &[i64],
) -> Result<Loaded, String> {
    let store = inner.store.lock().expect("store lock");
    let task = store.task(task_id).map_err(|e| e.to_string())?;
    let project = store.project(task.project_id).map_err(|e| e.to_string())?;
    let closed = store
        .close_interrupted(task_id)
        .map_err(|e| e.to_string())?;
    let interrupted = closed > 0
        || matches!(
            task.status,
            TaskStatus::Running
                | TaskStatus::Queued
                | TaskStatus::AwaitingApproval
                | TaskStatus::Interrupted
        );
    let messages = compaction::view(&store, task_id)?.messages;
    let (_, repairs) = answer_every_call(&messages, CRASHED);
    let last: Vec<_> = messages
        .last()
        .filter(|m| m.role == Role::Assistant)
        .into_iter()
        .flat_map(|m| m.tool_calls())
        .filter(|c| repairs.answered.iter().any(|id| id == c.id))
        .collect();
    let states = store.call_states(task_id).map_err(|e| e.to_string())?;
    let registry = inner.registry(project.id);
    // The answer was whole (not cut off while streaming), so its calls may have been run. A
    // call with no record ran before records were kept, or its record was not written: it may
    // have run too, unless others of the answer have records (then it had not started).
    let complete = closed == 0;
    let recorded = last.iter().any(|c| states.contains_key(c.id));
    // Continuing without a new message runs what had not run, in order, until a call that may
    // have run (what comes after it may depend on it: the model decides again). A new message
    // comes first, so what had not run is answered as not run.
    let mut rerun = prompt.is_none() && complete;
    let mut settled = Vec::new();
    let mut may_have_run = Vec::new();
    for call in last {
        let repeatable = registry.get(call.name).is_some_and(|t| t.concurrent());
        let state = states.get(call.id);
        let uncertain = complete
            && !repeatable
            && match state {
                Some(CallState::Running) => true,
                None => !recorded,
                _ => false,
            };
        let result = |reason| {
            Unanswered::Settled(codewright_protocol::conversation::interrupted_result(
                call.id, reason,
            ))
        };
        settled.push(match state {
            Some(CallState::Finished(part)) => Unanswered::Settled(part.clone()),
            _ if uncertain => {
                rerun = false;
                may_have_run.push(describe_call(call.name, call.arguments));
                result(CRASHED)
            }
            _ if rerun => Unanswered::Run(Call {
                id: call.id.to_string(),
                name: call.name.to_string(),
                arguments: call.arguments.to_string(),
                truncated: call.truncated,
            }),
            _ => result(NOT_RUN),
        });
    }
    // Those `take_message` settled, for the run that follows it to say.
    let may_have_run = {
        let mut earlier = inner
            .may_have_run
            .lock()
            .expect("may_have_run lock")
            .remove(&task_id)
            .unwrap_or_default();
        earlier.append(&mut may_have_run);
        earlier
    };
    let resume = if settled.iter().any(|p| matches!(p, Unanswered::Run(_))) {
        settled
    } else {
        if !settled.is_empty() {
            let results = settled
                .into_iter()
                .map(|p| match p {
                    Unanswered::Settled(part) => part,
                    Unanswered::Run(_) => unreachable!("checked above"),
                })
                .collect();
            store
                .append_message(task_id, &Message::new(Role::Tool, results))
                .map_err(|e| e.to_string())?;
        }
        store.clear_calls(task_id).map_err(|e| e.to_string())?;
        Vec::new()
    };
    // Messages a run that died had taken for later: before the new prompt (they came first), or
    // at the first turn boundary of a run that first finishes the interrupted calls.
    let left: Vec<Queued> = store
        .queued_messages(task_id)
        .map_err(|e| e.to_string())?
        .into_iter()
        .filter(|(id, _)| !own.contains(id))
        .map(|(id, message)| Queued {
            id: Some(id),
            message,
        })
        .collect();
    let mut requeue = Vec::new();
    let mut delivered = false;
    if resume.is_empty() {
        for queued in &left {
            if let Some(id) = queued.id {
                delivered |= store
                    .deliver_queued(id)
                    .map_err(|e| e.to_string())?
                    .is_some();
            }
        }
    } else {
        requeue = left;
    }
    let spoke_last = !delivered
        && messages
            .last()
            .is_some_and(|m| m.role == Role::Assistant && m.tool_calls().next().is_none());
    let message = match prompt {
        Some(message) if message.is_empty_prompt() => {
            return Err("the message is empty; say what the agent should do".into())
        }
        Some(message) => Some(message.clone()),
        None if messages.is_empty() && !delivered => {
            return Err("this task has no messages to continue; send a message first".into())
        }
        // The model spoke last (a pause's summary, a stopped answer): ask it to go on.
        None if spoke_last => Some(Message::user(CONTINUE)),
        None => None,
    };
    if let Some(message) = message {
        store
            .append_message(task_id, &message)
            .map_err(|e| e.to_string())?;
    }
    let turn = store
        .history(task_id)
        .map_err(|e| e.to_string())?
        .iter()
        .filter(|r| r.message.role == Role::User)
        .count() as i64;
    let view = compaction::view(&store, task_id)?;
    Ok(Loaded {
        project,
        view,
        turn,
        interrupted,
        may_have_run,
        resume,
        requeue,
    })
}

/// What a run starts from (see [`load`]).
struct Loaded {
    project: codewright_protocol::Project,
    view: View,
    turn: i64,
    /// The previous run ended without finishing (a crash, a quit).
    interrupted: bool,
    /// Calls of the interrupted run that may have taken effect, described for the user.
    may_have_run: Vec<String>,
    /// The interrupted answer's calls, when some are to run now; empty otherwise.
    resume: Vec<Unanswered>,
    /// Messages a run that died had queued, for this run's first turn boundary (when it first
    /// finishes the interrupted calls).
    requeue: Vec<Queued>,
}

/// A call of an interrupted answer: settled (its result known or decided), or to run now.
enum Unanswered {
    Settled(Part),
    Run(Call),
}

/// Replaces the images the user attached in `messages` with a line naming them (for a model
/// that does not take images: sent, they would make every request of the task fail). Whether
/// there were any.
fn without_images(messages: &mut [Message]) -> bool {
    let mut found = false;
    for message in messages.iter_mut().filter(|m| m.role == Role::User) {
        for part in &mut message.parts {
            if let Part::Attachment(a) = part {
                if a.kind == AttachmentKind::Image {
                    found = true;
                    *part = Part::Text {
                        text: format!(
                            "[The user attached an image, {}, which this model cannot see.]",
                            a.name
                        ),
                    };
                }
            }
        }
    }
    found
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

#[cfg(test)]
mod tests {
    use super::*;
    use codewright_llm::Protocol;

    #[test]
    fn a_models_debug_never_shows_its_key() {
        let model = Model {
            info: codewright_llm::resolve_model("m@p", &[]),
            provider: Provider::new("p", Protocol::OpenAiChat, "http://127.0.0.1:9/v1", None),
            key: Some("sk-never-shown".into()),
        };
        let request = format!("{model:?}");
        assert!(!request.contains("sk-never-shown"), "{request}");
        assert!(request.contains("[hidden]"), "{request}");
    }
}
