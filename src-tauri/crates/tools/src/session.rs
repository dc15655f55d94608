//! One task's tool state, and the approval gate every tool call with side effects goes through.

use crate::checkpoint::{CheckpointError, Checkpoints};
use crate::ToolOutput;
use async_trait::async_trait;
use codewright_exec::ProcessTable;
use codewright_policy::{Policy, Subject, Verdict};
use codewright_protocol::{
    Action, ApprovalRequest, Decision, DecisionKind, PermissionMode, PermissionRule, ProjectId,
    Question, RuleAction, TaskId, ToolCategory,
};
use codewright_store::Store;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

/// The person (or policy) that answers approval requests and questions. The desktop shell shows
/// them in the task's window; the CLI asks on the terminal.
#[async_trait]
pub trait Approver: Send + Sync {
    /// Decides an approval request. Dropped (not answered) when the task is stopped.
    async fn decide(&self, request: ApprovalRequest) -> Decision;
    /// Answers a question; `None` when the user declined to answer.
    async fn answer(&self, question: Question) -> Option<String>;
}

/// The approver of runs nobody watches: everything that needs asking is rejected, with a message
/// that tells the model why.
pub struct NonInteractive;

#[async_trait]
impl Approver for NonInteractive {
    async fn decide(&self, request: ApprovalRequest) -> Decision {
        Decision::Reject {
            feedback: Some(format!(
                "This run is non-interactive, so nothing that needs approval can run ({}). Do without it, or finish and tell the user what to run or allow.",
                request.reason
            )),
        }
    }

    async fn answer(&self, _question: Question) -> Option<String> {
        None
    }
}

/// What an approval allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Grant {
    /// Everything proposed.
    All,
    /// Only these hunks of an edit.
    Hunks(Vec<usize>),
    /// This content instead of the proposed one.
    Edited(String),
}

/// What a session is for.
#[derive(Debug, Clone)]
pub struct SessionConfig {
    pub task: TaskId,
    pub project: ProjectId,
    /// The project folder.
    pub root: PathBuf,
    /// The data folder (checkpoint blobs live under it).
    pub home: PathBuf,
    pub mode: PermissionMode,
    /// Run `bash` commands under Landlock (writes only inside the project and temp folders).
    /// Always on in yolo mode.
    pub sandbox: bool,
    /// Let `web_fetch` reach loopback and private addresses.
    pub allow_private_network: bool,
    /// Rules from the user's settings, checked after the project's saved rules.
    pub rules: Vec<PermissionRule>,
}

/// A file as the agent last saw it (read or wrote it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Seen {
    pub hash: blake3::Hash,
}

/// One task's tool state.
pub struct Session {
    pub task: TaskId,
    pub project: ProjectId,
    /// The project folder, canonical.
    pub root: PathBuf,
    pub(crate) store: Arc<Mutex<Store>>,
    pub(crate) approver: Arc<dyn Approver>,
    policy: Mutex<Policy>,
    pub(crate) sandbox: bool,
    pub(crate) allow_private_network: bool,
    turn: AtomicI64,
    pub(crate) seen: Mutex<HashMap<PathBuf, Seen>>,
    pub(crate) processes: Arc<ProcessTable>,
    pub(crate) checkpoints: Checkpoints,
    /// What this run found of the user's extensions (the `skill` and `memory_*` tools use it).
    extensions: Mutex<Arc<codewright_extensions::Installed>>,
    /// Calls the user approved before they were made (by id).
    in_advance: Mutex<std::collections::HashSet<String>>,
}

static NEXT_REQUEST: AtomicU64 = AtomicU64::new(1);

/// A unique id for an approval request or question.
pub(crate) fn next_request_id() -> u64 {
    NEXT_REQUEST.fetch_add(1, Ordering::Relaxed)
}

/// Why a [`Session`] could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The task's folder is gone or cannot be read.
    #[error("cannot open the project folder {}: {source}", path.display())]
    Folder {
        /// The folder, as the session was given it.
        path: PathBuf,
        /// Why it could not be opened (gone, not a folder, not readable).
        source: std::io::Error,
    },
    /// The project's rules or what the task has seen could not be read.
    #[error(transparent)]
    Store(#[from] codewright_store::StoreError),
}

impl SessionError {
    /// Its kind in the engine's one vocabulary.
    pub fn kind(&self) -> codewright_protocol::ErrorKind {
        match self {
            SessionError::Folder { .. } => codewright_protocol::ErrorKind::Setup,
            SessionError::Store(e) => e.kind(),
        }
    }
}

impl Session {
    /// Opens a session: the project's saved rules come from the store. Its background processes
    /// end with it.
    pub fn new(
        config: SessionConfig,
        store: Arc<Mutex<Store>>,
        approver: Arc<dyn Approver>,
    ) -> Result<Arc<Session>, SessionError> {
        Session::with_processes(config, store, approver, Arc::default())
    }

    /// [`Session::new`], with the task's background processes kept in `processes`, which may
    /// outlive the session (they end when the last holder drops it).
    pub fn with_processes(
        config: SessionConfig,
        store: Arc<Mutex<Store>>,
        approver: Arc<dyn Approver>,
        processes: Arc<ProcessTable>,
    ) -> Result<Arc<Session>, SessionError> {
        let root = config
            .root
            .canonicalize()
            .map_err(|source| SessionError::Folder {
                path: config.root.clone(),
                source,
            })?;
        let saved = store.lock().expect("store lock").rules(config.project)?;
        // What the agent saw in earlier runs of this task still counts.
        let seen: HashMap<PathBuf, Seen> = store
            .lock()
            .expect("store lock")
            .files_seen(config.task)?
            .into_iter()
            .map(|(path, hash)| {
                (
                    PathBuf::from(path),
                    Seen {
                        hash: blake3::Hash::from_bytes(hash),
                    },
                )
            })
            .collect();
        let mut rules: Vec<PermissionRule> = saved.into_iter().map(|s| s.rule).collect();
        rules.extend(config.rules);
        let sandbox = config.sandbox || config.mode == PermissionMode::Yolo;
        Ok(Arc::new(Session {
            task: config.task,
            project: config.project,
            checkpoints: Checkpoints::new(&config.home, store.clone()),
            root,
            store,
            approver,
            policy: Mutex::new(Policy::new(config.mode, rules)),
            sandbox,
            allow_private_network: config.allow_private_network,
            turn: AtomicI64::new(1),
            extensions: Mutex::default(),
            seen: Mutex::new(seen),
            processes,
            in_advance: Mutex::default(),
        }))
    }

    /// The call `call_id` needs no approval: the user wrote it themselves (a project's set-up
    /// command, in its settings). A deny rule still refuses it.
    pub fn approve_in_advance(&self, call_id: &str) {
        self.in_advance
            .lock()
            .expect("approvals lock")
            .insert(call_id.to_string());
    }

    /// Sets what this run found of the user's extensions: the skills its system prompt lists,
    /// and where the memory files are.
    pub fn set_extensions(&self, installed: Arc<codewright_extensions::Installed>) {
        *self.extensions.lock().expect("extensions lock") = installed;
    }

    /// What this run found of the user's extensions.
    pub fn extensions(&self) -> Arc<codewright_extensions::Installed> {
        self.extensions.lock().expect("extensions lock").clone()
    }

    /// Starts a new turn: the next change to each file is checkpointed under it.
    pub fn set_turn(&self, turn: i64) {
        self.turn.store(turn, Ordering::SeqCst);
    }

    /// The current turn.
    pub fn turn(&self) -> i64 {
        self.turn.load(Ordering::SeqCst)
    }

    /// Changes the permission mode (takes effect for the next call).
    pub fn set_mode(&self, mode: PermissionMode) {
        self.policy.lock().expect("policy lock").mode = mode;
    }

    /// The permission mode.
    pub fn mode(&self) -> PermissionMode {
        self.policy.lock().expect("policy lock").mode
    }

    /// The task's checkpoints (restore a turn, undo a restore).
    pub fn checkpoints(&self) -> &Checkpoints {
        &self.checkpoints
    }

    /// Puts each of `files` (a path relative to the task's folder, and its content) back on the
    /// agent's own account (a small model's best version, after a worse change of its) — all of
    /// them or, when one cannot be, none: a version put back in part would mix two attempts. A
    /// change of this turn like any other: its checkpoint keeps each file as it was before the
    /// turn, so undoing the turn undoes this too. It asks nobody (the content is the model's
    /// own, written earlier in the run) and goes around the policy, so it is refused unless
    /// every file is what the agent last wrote or read there — a user's edit since is never
    /// overwritten — and each is written without following a link, never outside the folder.
    /// The agent's tools then know the files as written, so the model may edit them at once.
    /// `Ok`: the paths written (not those that already held their content).
    pub fn put_back(&self, files: &[(&str, &[u8])]) -> Result<Vec<String>, CheckpointError> {
        let mut due = Vec::new();
        for &(path, content) in files {
            let resolved =
                crate::paths::resolve(&self.root, path).map_err(CheckpointError::Refused)?;
            if !resolved.inside {
                return Err(CheckpointError::Refused(format!(
                    "{path} is not in the task's folder"
                )));
            }
            let now = codewright_nofollow::read(&resolved.real)
                .map_err(|e| CheckpointError::File(format!("cannot read {path}: {e}")))?;
            if now.as_ref().is_some_and(|(bytes, _)| bytes == content) {
                continue;
            }
            let Some((bytes, _)) = &now else {
                return Err(CheckpointError::Refused(format!(
                    "{path} is gone since the agent last wrote it"
                )));
            };
            if self.last_seen(&resolved.real).map(|s| s.hash) != Some(blake3::hash(bytes)) {
                return Err(CheckpointError::Refused(format!(
                    "{path} changed since the agent last wrote it (by hand, or by a command)"
                )));
            }
            due.push((path, resolved.real, content));
        }
        for (path, real, content) in &due {
            self.checkpoints
                .before_change(self.task, self.turn(), real)?;
            codewright_nofollow::write(real, content, None, &self.root)
                .map_err(|e| CheckpointError::File(format!("cannot write {path}: {e}")))?;
            self.remember(real, content);
        }
        Ok(due.into_iter().map(|(path, ..)| path.to_string()).collect())
    }

    /// Kills the background processes this task started.
    pub fn shutdown(&self) {
        self.processes.kill_all();
    }

    /// Records what the agent now knows of a file (it read or wrote `content`), for this run and
    /// the task's later ones.
    pub(crate) fn remember(&self, path: &Path, content: &[u8]) {
        self.remember_hash(path, blake3::hash(content));
    }

    /// [`Session::remember`], for content hashed as it was read.
    pub(crate) fn remember_hash(&self, path: &Path, hash: blake3::Hash) {
        self.seen
            .lock()
            .expect("seen lock")
            .insert(path.to_path_buf(), Seen { hash });
        // Kept for later runs too; if the store cannot write it, this run still knows.
        if let Some(p) = path.to_str() {
            let _ =
                self.store
                    .lock()
                    .expect("store lock")
                    .remember_file(self.task, p, hash.as_bytes());
        }
    }

    pub(crate) fn last_seen(&self, path: &Path) -> Option<Seen> {
        self.seen.lock().expect("seen lock").get(path).copied()
    }
}

/// Where a tool reports output as it happens.
pub type Progress = Arc<dyn Fn(&str) + Send + Sync>;

/// What a running tool call can reach: its session, its call id, a cancel token (stop), and where
/// to report progress.
#[derive(Clone)]
pub struct CallContext {
    pub session: Arc<Session>,
    pub call_id: String,
    pub tool: String,
    pub cancel: CancellationToken,
    /// Receives output as it happens (command output), for the tool panel.
    pub progress: Option<Progress>,
}

/// What a call asks permission for.
pub struct Ask<'a> {
    pub category: ToolCategory,
    pub subject: Subject<'a>,
    pub action: Action,
    pub summary: String,
    pub decisions: &'a [DecisionKind],
    /// Ask even when the policy would allow (the reason is shown), e.g. when the sandbox a
    /// command was meant to run in is unavailable.
    pub force_ask: Option<String>,
}

impl CallContext {
    /// A context for running `tool` outside an agent loop (tests, `codewright-cli`).
    pub fn new(session: Arc<Session>, tool: &str) -> CallContext {
        CallContext {
            session,
            call_id: format!("call-{}", next_request_id()),
            tool: tool.to_string(),
            cancel: CancellationToken::new(),
            progress: None,
        }
    }

    pub(crate) fn report(&self, text: &str) {
        if let Some(progress) = &self.progress {
            progress(text);
        }
    }

    /// Asks permission for a call that has no paths, command or host to check (an MCP tool):
    /// rules match its name. `Err` is the result to give the model.
    pub async fn authorize_call(
        &self,
        category: ToolCategory,
        action: Action,
        summary: String,
        decisions: &[DecisionKind],
    ) -> Result<Grant, ToolOutput> {
        self.authorize(Ask {
            category,
            subject: Subject::Plain,
            action,
            summary,
            decisions,
            force_ask: None,
        })
        .await
    }

    /// Checks the policy and, when it says ask, asks the user. `Err` is the result to give the
    /// model (denied, rejected with the user's feedback, or stopped).
    pub(crate) async fn authorize(&self, ask: Ask<'_>) -> Result<Grant, ToolOutput> {
        let session = &self.session;
        let (verdict, always) = {
            let policy = session.policy.lock().expect("policy lock");
            (
                policy.check(&self.tool, ask.category, &ask.subject),
                policy.suggest(&self.tool, &ask.subject),
            )
        };
        // Once: the id is the model's to see afterwards.
        let in_advance = session
            .in_advance
            .lock()
            .expect("approvals lock")
            .remove(&self.call_id);
        let reason = match (verdict, ask.force_ask) {
            (Verdict::Deny(message), _) => return Err(ToolOutput::error(message)),
            // Only what the policy would ask: a reason to ask whatever it says (the sandbox it
            // was meant to run in cannot be had) is still asked.
            (Verdict::Ask(_), None) if in_advance => return Ok(Grant::All),
            (Verdict::Allow, Some(reason)) => reason,
            (Verdict::Allow, None) => return Ok(Grant::All),
            (Verdict::Ask(reason), Some(extra)) => format!("{reason}; {extra}"),
            (Verdict::Ask(reason), None) => reason,
        };
        let mut decisions = ask.decisions.to_vec();
        if always.is_empty() {
            decisions.retain(|d| *d != DecisionKind::ApproveAlways);
        }
        let request = ApprovalRequest {
            id: next_request_id(),
            task_id: session.task,
            call_id: self.call_id.clone(),
            tool: self.tool.clone(),
            summary: ask.summary,
            action: ask.action,
            decisions,
            always,
            reason,
        };
        let decision = tokio::select! {
            d = session.approver.decide(request) => d,
            _ = self.cancel.cancelled() => {
                return Err(ToolOutput::error("The user stopped the task before approving this call; it did not run."));
            }
        };
        match decision {
            Decision::Approve => Ok(Grant::All),
            Decision::ApproveAlways { rules } => {
                self.save_rules(rules)?;
                Ok(Grant::All)
            }
            Decision::Reject { feedback } => Err(ToolOutput::error(rejection(&self.tool, feedback))),
            Decision::ApproveHunks { hunks } if ask.decisions.contains(&DecisionKind::ApproveHunks) => {
                Ok(Grant::Hunks(hunks))
            }
            Decision::ApproveEdited { content } if ask.decisions.contains(&DecisionKind::ApproveEdited) => {
                Ok(Grant::Edited(content))
            }
            other => Err(ToolOutput::error(format!(
                "The approval answer {other:?} does not apply to this {} call; it did not run. Try again.",
                self.tool
            ))),
        }
    }

    /// Saves "always allow" rules for the project and applies them from now on.
    fn save_rules(&self, rules: Vec<PermissionRule>) -> Result<(), ToolOutput> {
        let session = &self.session;
        let store = session.store.lock().expect("store lock");
        for rule in &rules {
            if rule.action != RuleAction::Allow {
                continue;
            }
            store.save_rule(session.project, rule).map_err(|e| {
                ToolOutput::error(format!(
                    "the rule could not be saved ({e}); the call did not run"
                ))
            })?;
        }
        drop(store);
        let mut policy = session.policy.lock().expect("policy lock");
        policy.rules.extend(rules);
        Ok(())
    }
}

/// The result text of a rejected call: the user's feedback, verbatim.
fn rejection(tool: &str, feedback: Option<String>) -> String {
    match feedback.filter(|f| !f.trim().is_empty()) {
        Some(feedback) => format!(
            "The user rejected this {tool} call; it did not run. The user said:\n{feedback}"
        ),
        None => format!(
            "The user rejected this {tool} call; it did not run. Ask what they want instead, or take another approach."
        ),
    }
}
