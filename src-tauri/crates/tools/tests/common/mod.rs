//! A project in a temp folder, a real store, a session, and an approver that answers from a
//! script and records every request.
#![allow(dead_code)]

use async_trait::async_trait;
use codewright_protocol::{ApprovalRequest, Decision, PermissionMode, Question};
use codewright_store::Store;
use codewright_tools::{Approver, CallContext, Registry, Session, SessionConfig, ToolOutput};
use serde_json::Value;
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Answers approvals with the scripted decisions, in order (reject when the script runs out).
#[derive(Default)]
pub struct Scripted {
    pub requests: Mutex<Vec<ApprovalRequest>>,
    pub decisions: Mutex<VecDeque<Decision>>,
    pub answers: Mutex<VecDeque<Option<String>>>,
    pub questions: Mutex<Vec<Question>>,
}

#[async_trait]
impl Approver for Scripted {
    async fn decide(&self, request: ApprovalRequest) -> Decision {
        self.requests.lock().unwrap().push(request);
        self.decisions
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or(Decision::Reject { feedback: None })
    }
    async fn answer(&self, question: Question) -> Option<String> {
        self.questions.lock().unwrap().push(question);
        self.answers.lock().unwrap().pop_front().flatten()
    }
}

pub struct Harness {
    pub project: tempfile::TempDir,
    pub home: tempfile::TempDir,
    pub store: Arc<Mutex<Store>>,
    pub session: Arc<Session>,
    pub approver: Arc<Scripted>,
    pub registry: Registry,
}

impl Harness {
    pub fn new(mode: PermissionMode) -> Harness {
        Harness::with(mode, false)
    }

    pub fn with(mode: PermissionMode, sandbox: bool) -> Harness {
        let project = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        let store = Store::open_in(home.path()).unwrap();
        let p = store.add_project(project.path(), None).unwrap();
        let task = store.add_task(p.id, "tools").unwrap();
        let store = Arc::new(Mutex::new(store));
        let approver = Arc::new(Scripted::default());
        let session = Session::new(
            SessionConfig {
                task: task.id,
                project: p.id,
                root: project.path().to_path_buf(),
                home: home.path().to_path_buf(),
                mode,
                sandbox,
                allow_private_network: false,
                rules: vec![],
            },
            store.clone(),
            approver.clone(),
        )
        .unwrap();
        Harness {
            project,
            home,
            store,
            session,
            approver,
            registry: Registry::builtin(),
        }
    }

    /// Opens the task's session again, as its next run (or another process) does.
    pub fn next_run(&mut self) {
        let mode = self.session.mode();
        self.session = Session::new(
            SessionConfig {
                task: self.session.task,
                project: self.session.project,
                root: self.project.path().to_path_buf(),
                home: self.home.path().to_path_buf(),
                mode,
                sandbox: false,
                allow_private_network: false,
                rules: vec![],
            },
            self.store.clone(),
            self.approver.clone(),
        )
        .unwrap();
    }

    /// The same task opened again in `mode`, with `web_fetch` allowed to reach local and private
    /// addresses (the project's setting).
    pub fn allowing_private_network(self, mode: PermissionMode) -> Harness {
        let session = Session::new(
            SessionConfig {
                task: self.session.task,
                project: self.session.project,
                root: self.root(),
                home: self.home.path().to_path_buf(),
                mode,
                sandbox: false,
                allow_private_network: true,
                rules: vec![],
            },
            self.store.clone(),
            self.approver.clone(),
        )
        .unwrap();
        Harness { session, ..self }
    }

    pub fn root(&self) -> PathBuf {
        self.project.path().canonicalize().unwrap()
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root().join(rel)
    }

    pub fn write(&self, rel: &str, content: impl AsRef<[u8]>) {
        let path = self.path(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).unwrap()
    }

    pub fn decide(&self, decisions: impl IntoIterator<Item = Decision>) {
        self.approver.decisions.lock().unwrap().extend(decisions);
    }

    pub fn requests(&self) -> Vec<ApprovalRequest> {
        self.approver.requests.lock().unwrap().clone()
    }

    pub async fn call(&self, tool: &str, input: Value) -> ToolOutput {
        self.call_raw(tool, &input.to_string()).await
    }

    pub async fn call_raw(&self, tool: &str, arguments: &str) -> ToolOutput {
        let cx = CallContext::new(self.session.clone(), tool);
        self.registry.call(tool, arguments, &cx).await
    }
}

/// Whether a process exists (and is not a zombie).
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

pub fn exists(path: &Path) -> bool {
    path.exists()
}
