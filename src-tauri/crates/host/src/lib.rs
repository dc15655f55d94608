//! What both front ends run, once: one [`Agent`], each project's MCP servers and tools (started
//! when a task of the project first runs, stopped with the host), the running tasks, and model
//! and key resolution. The CLI's `exec` and the desktop shell are thin adapters over a [`Host`]:
//! commands in ([`Host::send`], [`Host::stop`], [`Host::decide`], …), events out
//! ([`Host::subscribe`]).

pub mod agents;
pub mod by_hand;
pub mod chat;
pub mod commands;
pub mod feed;
pub mod folder_changes;
pub mod mcp;
pub mod memory;
pub mod models;
pub mod project;
pub mod rules;
pub mod settings;
pub mod skills;
pub mod standing;
pub mod task_files;
pub mod tasks;
pub mod tree;
pub mod worktrees;

pub use codewright_store::{default_data_dir, DB_FILE_NAME};
pub use codewright_tools::{
    env_var, files, protect_own_environment, reaper::remember_starting_limits, taken_secrets,
};

use codewright_agent::{Agent, AgentConfig, Refusal, RunRequest, TaskHandle};
use codewright_mcp::{McpServers, ServerState};
use codewright_protocol::{
    AgentEvent, AgentState, ApprovalRequest, Attachment, AttachmentKind, Compaction, Decision,
    ErrorKind, Message, Part, PermissionMode, ProjectId, Question, TaskId, TaskStatus,
};
use codewright_store::Store;
use serde::Serialize;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};

/// An error a front end shows: a stable `kind` to branch on and a `message` written for the
/// user (no command lines: each front end adds its own hint for the kind).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HostError {
    pub kind: ErrorKind,
    pub message: String,
    /// The message being sent is stored in the task: the front end clears its composer, and
    /// the task can be continued once the cause is fixed.
    pub saved: bool,
}

impl HostError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> HostError {
        HostError {
            kind,
            message: message.into(),
            saved: false,
        }
    }

    /// Marks the message as stored in the task (each front end says how to continue it).
    fn saved(self) -> HostError {
        HostError {
            saved: true,
            ..self
        }
    }
}

impl std::fmt::Display for HostError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for HostError {}

/// For front ends that report errors as one line (the CLI).
impl From<HostError> for String {
    fn from(e: HostError) -> String {
        e.message
    }
}

impl From<codewright_llm::credentials::KeyError> for HostError {
    fn from(e: codewright_llm::credentials::KeyError) -> HostError {
        HostError::new(e.kind(), e.to_string())
    }
}

impl From<codewright_llm::SettingError> for HostError {
    fn from(e: codewright_llm::SettingError) -> HostError {
        HostError::new(e.kind(), e.to_string())
    }
}

impl From<codewright_tools::SessionError> for HostError {
    fn from(e: codewright_tools::SessionError) -> HostError {
        HostError::new(e.kind(), e.to_string())
    }
}

impl From<codewright_extensions::ExtensionError> for HostError {
    fn from(e: codewright_extensions::ExtensionError) -> HostError {
        use codewright_extensions::ExtensionError as E;
        let kind = match &e {
            E::NotFound(_) => ErrorKind::NotFound,
            E::Refused(_) | E::Invalid(_) => ErrorKind::BadInput,
            E::File(_) => ErrorKind::Setup,
        };
        HostError::new(kind, e.to_string())
    }
}

impl From<codewright_tools::CheckpointError> for HostError {
    fn from(e: codewright_tools::CheckpointError) -> HostError {
        HostError::new(e.kind(), e.to_string())
    }
}

impl From<codewright_agent::AgentError> for HostError {
    fn from(e: codewright_agent::AgentError) -> HostError {
        HostError::new(e.kind, e.message)
    }
}

impl From<codewright_store::StoreError> for HostError {
    fn from(e: codewright_store::StoreError) -> HostError {
        HostError::new(e.kind(), e.to_string())
    }
}

/// A store error as the host reports it (its kind kept).
pub(crate) fn store_error(e: codewright_store::StoreError) -> HostError {
    e.into()
}

/// Where a project's extensions (skills, commands, memory) are looked for: its folder and the
/// user's home.
fn places(store: &Store, project: ProjectId) -> Result<codewright_extensions::Places, HostError> {
    let trusted = store
        .project_settings(project)
        .map_err(store_error)?
        .trusted;
    let project = store.project(project).map_err(store_error)?;
    Ok(codewright_extensions::Places {
        project: project.root_path.into(),
        home: codewright_extensions::user_home(),
        cache: None,
        project_trusted: trusted,
    })
}

/// How a run goes, beyond what the task remembers.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// MODEL@PROVIDER; `None`: the task's model, else the main model. The task keeps it for
    /// its next runs unless `model_once`.
    pub model: Option<String>,
    /// `model` is for this run only (a slash command that names its model).
    pub model_once: bool,
    /// `None`: the task's mode, else normal.
    pub mode: Option<PermissionMode>,
    /// Run commands under the Landlock sandbox (also when the project says so; always in yolo).
    pub sandbox: bool,
    /// For this run only: another agent, or only some tools (a slash command's front matter).
    /// Such a message is not handed to a task that is running (it would run without them).
    pub this_run: codewright_agent::ThisRun,
}

/// What [`Host::send`] did with a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Sent {
    /// True: the task was running; the message is queued for its next turn boundary.
    pub steered: bool,
}

/// What a task remembers between runs: its model and mode.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskOptions {
    pub model: Option<String>,
    pub mode: PermissionMode,
}

/// A running task as a window opened now needs it: where it is and what waits for the user.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Running {
    pub state: AgentState,
    pub approvals: Vec<ApprovalRequest>,
    pub questions: Vec<Question>,
}

/// How long a project's MCP servers may take to start before the run names them.
const SLOW_START: std::time::Duration = std::time::Duration::from_secs(2);

/// Runs tasks for one front end. Cheap to clone.
#[derive(Clone)]
pub struct Host {
    inner: Arc<Inner>,
}

/// A project's MCP servers in one folder, started once by the first run there that needs them,
/// with the configuration generation they were started from.
type ProjectServers = (u64, Arc<tokio::sync::OnceCell<Arc<McpServers>>>);

struct Inner {
    store: Arc<Mutex<Store>>,
    home: PathBuf,
    agent: Agent,
    /// Each project's MCP servers in each folder its tasks ran in (its own, a task's worktree:
    /// a server works in the folder it was started in and is offered as its root), once a task
    /// ran there (a failed start is kept too, so it is not retried on every message; its notice
    /// says so). One slow start never holds up another's.
    servers: Mutex<HashMap<(ProjectId, PathBuf), ProjectServers>>,
    /// Bumped when the MCP configuration changes ([`Host::mcp_changed`]).
    mcp_generation: std::sync::atomic::AtomicU64,
    /// The last run of each task (finished ones are ignored).
    runs: Mutex<HashMap<TaskId, Arc<TaskHandle>>>,
    /// Held while a run of the task starts, so a second message sent meanwhile steers that run.
    starting: Mutex<HashMap<TaskId, Arc<tokio::sync::Mutex<()>>>>,
    /// Held while waiting approvals are being asked again ([`Host::resume_asking`]).
    resuming: tokio::sync::Mutex<()>,
    /// Tasks whose waiting approval could not be asked again for a reason that will not pass by
    /// itself (no model, a missing key): not tried again until the front end starts anew.
    not_resumable: Mutex<std::collections::HashSet<TaskId>>,
    /// Every run's events, in the order they happened, to one forwarder (so a run's end is
    /// never heard after the next run's start).
    events: UnboundedSender<AgentEvent>,
    forwarder: Mutex<Option<UnboundedReceiver<AgentEvent>>>,
    /// Who hears which task's events (`None`: every task).
    subscribers: Mutex<Vec<(Option<TaskId>, UnboundedSender<AgentEvent>)>>,
}

impl Inner {
    fn publish(&self, event: &AgentEvent) {
        let task = event.task_id();
        self.subscribers
            .lock()
            .expect("subscribers lock")
            .retain(|(filter, tx)| {
                filter.is_some_and(|f| f != task) || tx.send(event.clone()).is_ok()
            });
    }

    fn notice(&self, task: TaskId, message: String) {
        self.publish(&AgentEvent::Notice {
            task_id: task,
            message,
        });
    }

    fn store(&self) -> std::sync::MutexGuard<'_, Store> {
        self.store
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The running handle of a task, if a run is live.
    fn run(&self, task: TaskId) -> Option<Arc<TaskHandle>> {
        self.runs
            .lock()
            .expect("runs lock")
            .get(&task)
            .filter(|h| !h.is_finished())
            .cloned()
    }
}

impl Host {
    /// A host on the store. Tasks whose stored status says a run is going but that no window or
    /// process holds (Codewright quit or crashed meanwhile) are marked interrupted.
    pub fn new(store: Arc<Mutex<Store>>, home: PathBuf, config: AgentConfig) -> Host {
        let agent = Agent::new(store.clone(), home.clone(), config);
        // A sub-agent whose agent names a model runs with it (found as a run's model is).
        let models = store.clone();
        agent.set_model_resolver(Arc::new(move |named: &str| {
            let store = models.lock().expect("store lock");
            models::named_model_id(&store, named)
                .and_then(|id| models::resolve(&store, Some(&id)))
                .map_err(|e| codewright_agent::AgentError::new(e.kind, e.message))
        }));
        let (events, forwarder) = unbounded_channel();
        let host = Host {
            inner: Arc::new(Inner {
                store,
                home,
                agent,
                servers: Mutex::new(HashMap::new()),
                mcp_generation: Default::default(),
                runs: Mutex::new(HashMap::new()),
                starting: Mutex::new(HashMap::new()),
                resuming: tokio::sync::Mutex::new(()),
                not_resumable: Mutex::new(Default::default()),
                events,
                forwarder: Mutex::new(Some(forwarder)),
                subscribers: Mutex::new(Vec::new()),
            }),
        };
        host.mark_interrupted();
        host
    }

    /// Marks interrupted the tasks whose stored status says a run is going but that no window or
    /// process holds: Codewright quit or crashed while they ran. Done when the host starts; a
    /// front end that stays open calls it now and then (a process that was just quitting may
    /// have held a task a moment ago).
    pub fn mark_interrupted(&self) {
        codewright_agent::mark_interrupted(&self.inner.store(), &self.inner.home);
    }

    /// Publishes the runs' events, from the first run on (needs the runtime).
    fn forward(&self) {
        let Some(mut rx) = self.inner.forwarder.lock().expect("forwarder lock").take() else {
            return;
        };
        let inner = Arc::downgrade(&self.inner);
        tokio::spawn(async move {
            while let Some(event) = rx.recv().await {
                match inner.upgrade() {
                    Some(inner) => inner.publish(&event),
                    None => return,
                }
            }
        });
    }

    /// Opens the data folder `home` (its database, made or migrated as needed) and a host on
    /// it, run by the app's settings; `max_iterations` bounds each run's model requests
    /// (`None`: the default).
    pub fn open(home: &Path, max_iterations: Option<u32>) -> Result<Host, HostError> {
        let store = Store::open_in(home)?;
        let app = settings::app_settings(&store);
        let mut config = AgentConfig {
            max_running: app.max_running,
            max_subagents: app.max_subagents,
            ..AgentConfig::default()
        };
        if let Some(max) = max_iterations {
            config.max_iterations = max;
        }
        Ok(Host::new(
            Arc::new(Mutex::new(store)),
            home.to_path_buf(),
            config,
        ))
    }

    /// The data folder.
    pub fn home(&self) -> &Path {
        &self.inner.home
    }

    /// The events of one task (or of every task), from now on, in order.
    pub fn subscribe(&self, task: Option<TaskId>) -> UnboundedReceiver<AgentEvent> {
        let (tx, rx) = unbounded_channel();
        self.inner
            .subscribers
            .lock()
            .expect("subscribers lock")
            .push((task, tx));
        rx
    }

    /// Sends the user's message (text: `Message::user`; with images: `Message::user_with`):
    /// steers the task's running run (delivered at its next turn boundary), or starts a run with
    /// it. `None` continues the task as it is (after a pause, a stop or a crash). A message that
    /// starts a run is stored before anything else can fail (the model is looked up); an error
    /// after that has `saved` set. Returns once the run has started: the project's MCP servers
    /// start within the run. Must be called on a tokio runtime.
    pub async fn send(
        &self,
        task: TaskId,
        message: Option<Message>,
        options: RunOptions,
    ) -> Result<Sent, HostError> {
        if let Some(message) = &message {
            check_message(message)?;
        }
        let starting = self
            .inner
            .starting
            .lock()
            .expect("starting lock")
            .entry(task)
            .or_default()
            .clone();
        let _starting = starting.lock().await;
        if options.this_run != codewright_agent::ThisRun::default() && self.running(task).is_some()
        {
            return Err(HostError::new(
                ErrorKind::Busy,
                "This command runs with its own agent or tools, so it cannot join the run going on: send it again when the run has ended, or stop the run first.",
            ));
        }
        // A task whose worktree was discarded has no folder to work in until it is restored
        // (refused before anything is stored: the message stays with the user).
        if self.inner.store().task_folder(task)?.is_none() {
            return Err(crate::worktrees::discarded(task));
        }
        let message = match self.steer(task, message).await? {
            Steered::Yes => return Ok(Sent { steered: true }),
            Steered::No(message) => message,
        };
        // Held before anything is stored, so a task running elsewhere is an error here and the
        // message stays with the user.
        let lock = self.hold_soon(task)?;
        let saved = match &message {
            Some(message) => {
                self.inner.agent.take_message(&lock, message)?;
                true
            }
            None => false,
        };
        let if_saved = |e: HostError| if saved { e.saved() } else { e };
        let mut options = options;
        let (project, root, remembered) = {
            let store = self.inner.store();
            let t = store.task(task).map_err(store_error).map_err(if_saved)?;
            let project = store
                .project(t.project_id)
                .map_err(store_error)
                .map_err(if_saved)?;
            // A command's agent and tools hold until the task's next message: continuing the
            // task (after a pause or a crash) runs as the message it continues did.
            if saved {
                store
                    .set_task_setting(task, THIS_RUN, this_run_value(&options.this_run))
                    .map_err(store_error)
                    .map_err(if_saved)?;
            } else if options.this_run == codewright_agent::ThisRun::default() {
                options.this_run = this_run_of(&t);
            }
            (
                project.id,
                store
                    .task_root(task)
                    .map_err(store_error)
                    .map_err(if_saved)?,
                options_of(&store, &t),
            )
        };
        let (mut model, mut compaction) = {
            let store = self.inner.store();
            // Named for this run, else the task's own, else its agent's, else the main role's.
            let agent_model = match options.model.as_ref().or(remembered.model.as_ref()) {
                Some(_) => None,
                None => store.task(task).ok().and_then(|t| {
                    agents::agent_model(&store, &t, options.this_run.agent.as_deref())
                }),
            };
            let model = models::resolve(
                &store,
                options
                    .model
                    .as_deref()
                    .or(remembered.model.as_deref())
                    .or(agent_model.as_deref()),
            )
            .map_err(if_saved)?;
            let compaction = models::compaction_model(&store, &model).map_err(if_saved)?;
            // A model named for this run is the task's from now on (continuing it needs no name).
            if let Some(named) = options.model.as_ref().filter(|_| !options.model_once) {
                store
                    .set_task_setting(task, "model", serde_json::Value::String(named.clone()))
                    .map_err(store_error)
                    .map_err(if_saved)?;
            }
            (model, compaction)
        };
        models::fit_local_model(&mut model, &self.inner.home).await;
        if let Some(compaction) = compaction.as_mut() {
            models::fit_local_model(compaction, &self.inner.home).await;
        }
        // Waited for by the run, where the user sees it and can stop it (a server that never
        // answers holds it for the connect timeout).
        let servers = {
            let host = self.clone();
            Box::pin(async move { host.ensure_servers(task, project, &root).await })
        };
        self.forward();
        let handle = Arc::new(self.inner.agent.start_held(
            Some(lock),
            RunRequest {
                task,
                prompt: None,
                model,
                mode: options.mode.unwrap_or(remembered.mode),
                sandbox: options.sandbox,
                compaction,
                this_run: options.this_run,
            },
            self.inner.events.clone(),
            Some(servers),
        ));
        self.inner
            .runs
            .lock()
            .expect("runs lock")
            .insert(task, handle);
        Ok(Sent { steered: false })
    }

    /// Continues the tasks whose run ended (Codewright quit or crashed) while a call waited for
    /// the user, so the approval or question is asked again. A front end that stays open calls
    /// it at start and after each [`Host::mark_interrupted`]. Returns the tasks continued.
    pub async fn resume_asking(&self) -> Vec<TaskId> {
        // One pass at a time (the last may still be looking up models).
        let Ok(_pass) = self.inner.resuming.try_lock() else {
            return Vec::new();
        };
        let asking = self.inner.store().tasks_asking().unwrap_or_default();
        let mut resumed = Vec::new();
        for task in asking {
            let interrupted = self
                .inner
                .store()
                .task(task)
                .is_ok_and(|t| t.status == TaskStatus::Interrupted);
            let given_up = || {
                self.inner
                    .not_resumable
                    .lock()
                    .expect("not_resumable lock")
                    .contains(&task)
            };
            if !interrupted || given_up() {
                continue;
            }
            match self.send(task, None, RunOptions::default()).await {
                Ok(_) => resumed.push(task),
                // Held elsewhere still (a process quitting): the next pass tries again.
                Err(e) if e.kind == ErrorKind::Busy => {}
                Err(e) => {
                    self.inner
                        .not_resumable
                        .lock()
                        .expect("not_resumable lock")
                        .insert(task);
                    self.inner.notice(
                        task,
                        format!("The approval this task waited for when Codewright stopped cannot be asked again: {} Send a message to go on.", e.message),
                    );
                }
            }
        }
        resumed
    }

    /// Hands `message` to the task's live run, if there is one. A run that has stopped taking
    /// messages (it is ending) is waited for, so the next run can take the task.
    async fn steer(&self, task: TaskId, message: Option<Message>) -> Result<Steered, HostError> {
        let Some(handle) = self.inner.run(task) else {
            return Ok(Steered::No(message));
        };
        let Some(message) = message else {
            return Err(HostError::new(
                ErrorKind::Busy,
                "the task is running; stop it first, or send a message to it",
            ));
        };
        match handle.steer(message) {
            Ok(()) => Ok(Steered::Yes),
            Err(message) => {
                // Ending: only its last writes are left. Should it hang, the next run's lock
                // says the task is busy, and the message stays with the user.
                let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
                while !handle.is_finished() && tokio::time::Instant::now() < deadline {
                    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                }
                Ok(Steered::No(Some(*message)))
            }
        }
    }

    /// Says the MCP configuration changed (a server added, removed, turned on or off): each
    /// project's servers start again from it at its next run that no other run of the project
    /// is using them for.
    pub(crate) fn mcp_changed(&self) {
        self.inner
            .mcp_generation
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }

    /// Starts the project's MCP servers in the task's folder `root` and gives the agent their
    /// tools for it, the first time (and again after the configuration changed, when no other
    /// run in that folder uses them).
    async fn ensure_servers(&self, task: TaskId, project: ProjectId, root: &Path) {
        let place = (project, root.to_path_buf());
        let now = self
            .inner
            .mcp_generation
            .load(std::sync::atomic::Ordering::SeqCst);
        let others_running = || {
            let others: Vec<TaskId> = self
                .inner
                .runs
                .lock()
                .expect("runs lock")
                .iter()
                .filter(|(id, h)| **id != task && !h.is_finished())
                .map(|(id, _)| *id)
                .collect();
            let store = self.inner.store();
            others.into_iter().any(|id| {
                store.task(id).is_ok_and(|t| t.project_id == project)
                    && store.task_root(id).is_ok_and(|r| r == root)
            })
        };
        let stale = self
            .inner
            .servers
            .lock()
            .expect("servers lock")
            .get(&place)
            .is_some_and(|(generation, _)| *generation != now);
        let replace = stale && !others_running();
        let (cell, old) = {
            let mut servers = self.inner.servers.lock().expect("servers lock");
            let old = if replace {
                servers.remove(&place)
            } else {
                None
            };
            let cell = servers
                .entry(place)
                .or_insert_with(|| (now, Default::default()))
                .1
                .clone();
            (cell, old)
        };
        if let Some(started) = old.and_then(|(_, cell)| cell.get().cloned()) {
            started.shutdown().await;
        }
        cell.get_or_init(|| self.start_servers(task, project, root))
            .await;
    }

    async fn start_servers(
        &self,
        task: TaskId,
        project: ProjectId,
        root: &Path,
    ) -> Arc<McpServers> {
        let rows = match mcp::servers_for(&self.inner.store(), project) {
            Ok(rows) => rows,
            Err(e) => {
                self.inner
                    .notice(task, format!("MCP servers are not available: {e}"));
                Vec::new()
            }
        };
        let filter = codewright_tools::EnvFilter::read(&self.inner.store(), Some(project));
        let starting = mcp::start(&rows, root, &filter);
        tokio::pin!(starting);
        // Servers slow to start are named, with how long the run may wait and what ends it.
        let started = match tokio::time::timeout(SLOW_START, &mut starting).await {
            Ok(started) => started,
            Err(_) => {
                let names: Vec<&str> = rows
                    .iter()
                    .filter(|r| r.enabled)
                    .map(|r| r.name.as_str())
                    .collect();
                self.inner.notice(
                    task,
                    format!(
                        "Starting the MCP servers of this project ({}): the first request waits until they answer, each for up to {} s. Stopping the task ends the wait.",
                        names.join(", "),
                        codewright_mcp::client::CONNECT_TIMEOUT.as_secs()
                    ),
                );
                starting.await
            }
        };
        let started = Arc::new(started);
        for (name, state) in started.states() {
            if let ServerState::Failed { error } = state {
                self.inner
                    .notice(task, format!("MCP server {name} is not available: {error}"));
            }
        }
        for why in self.inner.agent.set_tools(project, root, started.tools()) {
            self.inner.notice(task, why);
        }
        // A server whose tools change mid-task (`tools/list_changed`) updates the project's tools.
        let agent = self.inner.agent.clone();
        let inner = Arc::downgrade(&self.inner);
        let root = root.to_path_buf();
        started.watch(move |tools| {
            for why in agent.set_tools(project, &root, tools) {
                if let Some(inner) = inner.upgrade() {
                    inner.notice(task, why);
                }
            }
        });
        started
    }

    /// Shuts down the project's MCP servers started in `root` (a task's worktree that went
    /// away) and forgets their tools; on this runtime, not waited for.
    pub(crate) fn close_servers_in(&self, project: ProjectId, root: &Path) {
        let place = (project, root.to_path_buf());
        let started = self
            .inner
            .servers
            .lock()
            .expect("servers lock")
            .remove(&place);
        self.inner.agent.set_tools(project, root, Vec::new());
        // (Off a runtime they are not told: dropped with their last tool, a stdio server is
        // killed.)
        if let Some(started) = started.and_then(|(_, cell)| cell.get().cloned()) {
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(async move { started.shutdown().await });
            }
        }
    }

    /// The prompts of the project's MCP servers as commands, once its servers have started (at
    /// its first run in this host, in any of its folders — those started from the newest
    /// configuration); none before.
    pub(crate) fn mcp_prompt_commands(&self, project: ProjectId) -> Vec<commands::CommandInfo> {
        let started = self
            .inner
            .servers
            .lock()
            .expect("servers lock")
            .iter()
            .filter(|((of, _), _)| *of == project)
            .filter_map(|(_, (generation, cell))| Some((*generation, cell.get()?.clone())))
            .max_by_key(|(generation, _)| *generation)
            .map(|(_, started)| started);
        started.map_or_else(Vec::new, |servers| {
            commands::mcp_prompt_commands(servers.prompts())
        })
    }

    /// Compacts the task now (`/compact`): its older messages are summarized by the compaction
    /// model (else the task's), or by `model` (MODEL@PROVIDER) when given, reported through the
    /// events like a run. `Ok(false)`: too little to compact. Refused while the task runs.
    pub async fn compact(
        &self,
        task: TaskId,
        model: Option<&str>,
    ) -> Result<Option<Compaction>, HostError> {
        if self.inner.run(task).is_some_and(|h| !h.is_finished()) {
            return Err(HostError::new(
                ErrorKind::Busy,
                "the task is running; compact it once it stops",
            ));
        }
        let mut model = {
            let store = self.inner.store();
            let t = store.task(task).map_err(store_error)?;
            match model {
                Some(named) => models::resolve(&store, Some(named))?,
                None => {
                    let main = models::resolve(&store, options_of(&store, &t).model.as_deref())?;
                    match models::compaction_model(&store, &main)? {
                        Some(compaction) => compaction,
                        None => main,
                    }
                }
            }
        };
        models::fit_local_model(&mut model, &self.inner.home).await;
        self.forward();
        // Its events pass on as they come, except the error: that is what the caller is told,
        // and shows where the user asked for the compaction (once, not also as an event).
        let (tx, mut rx) = unbounded_channel();
        let events = self.inner.events.clone();
        let relay = tokio::spawn(async move {
            let mut why = None;
            while let Some(event) = rx.recv().await {
                match event {
                    AgentEvent::Error { message, .. } => why = Some(message),
                    event => {
                        let _ = events.send(event);
                    }
                }
            }
            why
        });
        let compacted = self.inner.agent.compact(task, model, tx).await;
        // The compaction's sender is gone: the relay has passed on everything.
        let why = relay.await.ok().flatten();
        match compacted {
            Ok(false) => Ok(None),
            Ok(true) => Ok(self.inner.store().compactions(task)?.pop()),
            // (Its error event says why it failed; the agent's error, why it did not start.)
            Err(e) => Err(match why {
                Some(why) => HostError::new(ErrorKind::Compaction, why),
                None => e.into(),
            }),
        }
    }

    /// Stops the task's run: streaming ends (what arrived is kept), tools are killed, waiting
    /// approvals are rejected.
    pub fn stop(&self, task: TaskId) -> Result<(), HostError> {
        match self.inner.run(task) {
            Some(handle) => {
                handle.stop();
                Ok(())
            }
            None => Err(HostError::new(
                ErrorKind::NotRunning,
                "the task is not running here",
            )),
        }
    }

    /// Answers an approval request of the task. Refused, changing nothing, when it no longer
    /// waits or when the decision is not one the request offered.
    pub fn decide(&self, task: TaskId, id: u64, decision: Decision) -> Result<(), HostError> {
        let handle = self.inner.run(task).ok_or_else(already_answered)?;
        handle.decide(id, decision).map_err(refusal)
    }

    /// Answers a question of the task (`None`: no answer).
    pub fn answer(&self, task: TaskId, id: u64, answer: Option<String>) -> Result<(), HostError> {
        let handle = self.inner.run(task).ok_or_else(already_answered)?;
        handle.answer(id, answer).map_err(refusal)
    }

    /// The task's run, if one is live here: its state and what waits for the user.
    pub fn running(&self, task: TaskId) -> Option<Running> {
        let handle = self.inner.run(task)?;
        let (approvals, questions) = handle.waiting();
        Some(Running {
            state: handle.state(),
            approvals,
            questions,
        })
    }

    /// Whether the user trusts a project, and what its folder defines (see [`project::ProjectTrust`]).
    pub fn project_trust(&self, project: ProjectId) -> Result<project::ProjectTrust, HostError> {
        project::project_trust(&self.inner.store(), project)
    }

    /// Trusts a project (its own agents, commands and skills apply from its next run), or not.
    pub fn set_project_trusted(&self, project: ProjectId, trusted: bool) -> Result<(), HostError> {
        project::set_project_trusted(&self.inner.store(), project, trusted)
    }

    /// The task's remembered model and mode.
    pub fn options(&self, task: TaskId) -> Result<TaskOptions, HostError> {
        let store = self.inner.store();
        let task = store.task(task).map_err(store_error)?;
        Ok(options_of(&store, &task))
    }

    /// Remembers the task's model (checked: it must resolve, key included) and mode.
    pub fn set_options(
        &self,
        task: TaskId,
        model: Option<String>,
        mode: PermissionMode,
    ) -> Result<TaskOptions, HostError> {
        let store = self.inner.store();
        if let Some(model) = &model {
            models::resolve(&store, Some(model))?;
        }
        let value = model.map_or(serde_json::Value::Null, serde_json::Value::String);
        store
            .set_task_setting(task, "model", value)
            .map_err(store_error)?;
        let t = store
            .set_task_setting(task, "mode", mode.as_str().into())
            .map_err(store_error)?;
        Ok(options_of(&store, &t))
    }

    /// Call when the front end quits. Stops every run (waiting up to 5 s for them to store what
    /// they have), ends the tasks' background processes, and shuts the MCP servers down. A run
    /// waiting for the user is left to end with the process: its approval or question is asked
    /// again when the task goes on (see [`Host::resume_asking`]).
    pub async fn shutdown(&self) {
        let runs: Vec<Arc<TaskHandle>> = self
            .inner
            .runs
            .lock()
            .expect("runs lock")
            .drain()
            .map(|(_, h)| h)
            .filter(|h| {
                let (approvals, questions) = h.waiting();
                approvals.is_empty() && questions.is_empty()
            })
            .collect();
        for handle in &runs {
            handle.stop();
        }
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
        while runs.iter().any(|h| !h.is_finished()) && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        self.inner.agent.close_all();
        let servers: Vec<_> = self
            .inner
            .servers
            .lock()
            .expect("servers lock")
            .drain()
            .map(|(_, (_, s))| s)
            .collect();
        for servers in servers {
            if let Some(servers) = servers.get() {
                servers.shutdown().await;
            }
        }
    }

    /// Ends what a task left running (background processes); call when it is deleted.
    pub fn close_task(&self, task: TaskId) {
        if let Some(handle) = self.inner.run(task) {
            handle.stop();
        }
        self.inner.agent.close_task(task);
    }
}

/// Whether [`Host::send`] handed the message to the running run.
enum Steered {
    Yes,
    /// No run took it: the message (if any) starts the next one.
    No(Option<Message>),
}

/// Images attached at most to one message.
pub const MAX_IMAGES: usize = 10;
/// The largest image, as base64 (the providers' limit is on the encoded size: 5 MB of base64 is
/// 3.75 MB of image).
pub const MAX_IMAGE_BASE64: usize = 5 * 1024 * 1024;
/// All images of one message, as base64 (requests over ~20 MB are refused by some providers).
pub const MAX_MESSAGE_BASE64: usize = 15 * 1024 * 1024;
/// Images the models take.
const IMAGE_TYPES: &[&str] = &["image/png", "image/jpeg", "image/gif", "image/webp"];

/// The type of an image from its first bytes (a file's name may lie about it, and providers
/// refuse an image whose type does not match).
fn image_type(head: &[u8]) -> Option<&'static str> {
    if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if head.starts_with(&[0xff, 0xd8, 0xff]) {
        Some("image/jpeg")
    } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if head.len() >= 12 && &head[..4] == b"RIFF" && &head[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// MB, for a message.
fn megabytes(bytes: usize) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// A user's message says something, and what it attaches can be sent: images of a type the
/// models take (checked on their bytes), inline, at most [`MAX_IMAGES`], each and all within
/// the providers' limits.
fn check_message(message: &Message) -> Result<(), HostError> {
    let bad = |m: String| Err(HostError::new(ErrorKind::BadInput, m));
    if message.is_empty_prompt() {
        return bad("the message is empty; say what the agent should do".into());
    }
    let attachments: Vec<&Attachment> = message
        .parts
        .iter()
        .filter_map(|p| match p {
            Part::Attachment(a) => Some(a),
            _ => None,
        })
        .collect();
    if attachments.len() > MAX_IMAGES {
        return bad(format!(
            "at most {MAX_IMAGES} images can go with one message"
        ));
    }
    let mut total = 0;
    for a in attachments {
        if a.kind != AttachmentKind::Image || !IMAGE_TYPES.contains(&a.mime.as_str()) {
            return bad(format!(
                "{} cannot be attached: only PNG, JPEG, GIF and WebP images can",
                a.name
            ));
        }
        let Some(data) = &a.data else {
            return bad(format!("{} has no content", a.name));
        };
        // Base64 is 4 characters for 3 bytes.
        if data.len() > MAX_IMAGE_BASE64 {
            return bad(format!(
                "{} is larger than {:.2} MB; attach a smaller image",
                a.name,
                megabytes(MAX_IMAGE_BASE64 / 4 * 3)
            ));
        }
        let valid = data
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='));
        let head = base64::Engine::decode(
            &base64::engine::general_purpose::STANDARD,
            &data.as_bytes()[..data.len().min(64)],
        )
        .unwrap_or_default();
        match image_type(&head) {
            Some(found) if valid && found == a.mime => {}
            Some(found) if valid => {
                return bad(format!(
                    "{} is a {found} file named as {}; save it with the right extension",
                    a.name, a.mime
                ))
            }
            _ => return bad(format!("{} is not a readable image", a.name)),
        }
        total += data.len();
    }
    if total > MAX_MESSAGE_BASE64 {
        return bad(format!(
            "the images are {:.1} MB together; one message can take about {:.0} MB",
            megabytes(total / 4 * 3),
            megabytes(MAX_MESSAGE_BASE64 / 4 * 3)
        ));
    }
    Ok(())
}

/// The task setting that keeps a command's agent and tools (`RunOptions::this_run`) until the
/// task's next message.
const THIS_RUN: &str = "thisRun";

fn this_run_value(this_run: &codewright_agent::ThisRun) -> serde_json::Value {
    if *this_run == codewright_agent::ThisRun::default() {
        return serde_json::Value::Null;
    }
    serde_json::json!({"agent": this_run.agent, "tools": this_run.tools})
}

fn this_run_of(task: &codewright_protocol::Task) -> codewright_agent::ThisRun {
    let Some(kept) = task.settings.get(THIS_RUN).filter(|v| v.is_object()) else {
        return codewright_agent::ThisRun::default();
    };
    codewright_agent::ThisRun {
        agent: kept["agent"].as_str().map(String::from),
        tools: kept["tools"].as_array().map(|tools| {
            tools
                .iter()
                .filter_map(|t| t.as_str().map(String::from))
                .collect()
        }),
    }
}

/// The task's remembered model and mode; a task with no mode of its own has its project's
/// default one.
fn options_of(store: &Store, task: &codewright_protocol::Task) -> TaskOptions {
    let default_mode = || {
        store
            .project_settings(task.project_id)
            .ok()
            .and_then(|s| s.default_mode)
            .unwrap_or_default()
    };
    TaskOptions {
        model: task
            .settings
            .get("model")
            .and_then(|m| m.as_str())
            .map(String::from),
        mode: task
            .settings
            .get("mode")
            .and_then(|m| m.as_str())
            .and_then(PermissionMode::parse)
            .unwrap_or_else(default_mode),
    }
}

fn already_answered() -> HostError {
    refusal(Refusal::AlreadyAnswered)
}

fn refusal(refusal: Refusal) -> HostError {
    match refusal {
        Refusal::AlreadyAnswered => HostError::new(
            ErrorKind::AlreadyAnswered,
            "this was already answered (in another window), or the run it belonged to has ended",
        ),
        Refusal::NotOffered(why) => HostError::new(ErrorKind::NotOffered, why),
    }
}
