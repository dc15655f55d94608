//! The `agent` tool: a task's agent hands a self-contained job to another agent (an explorer to
//! search, a reviewer to review…). The sub-agent works in a task of its own — its own
//! conversation, stored like any (`Store::add_child_task`, listed under no project), its own
//! agent's instructions and tools (never `agent`: a sub-agent hands nothing on; and never a tool
//! its parent's run may not use), the parent run's model and mode — and only its final report
//! comes back as the call's result. What it needs approved is asked in the parent's window,
//! named as the sub-agent's (recorded on its own task); its notices are said in the parent's
//! conversation; a stop of the parent stops it; what it spends counts in the parent's totals as
//! it is spent; its background processes end with it. Several calls in one answer run at once,
//! at most [`AgentConfig::max_subagents`](crate::AgentConfig) at a time.

use crate::approvals::EventApprover;
use crate::handle::TaskHandle;
use crate::lock::{hold_task, TaskLock};
use crate::request::{Model, RunRequest};
use crate::Events;
use async_trait::async_trait;
use codewright_extensions::agents::AgentDef;
use codewright_protocol::{
    AgentEvent, ApprovalRequest, Decision, Message, Question, Role, RunOutcome, TaskId,
    ToolCategory,
};
use codewright_tools::{Approver, CallContext, Tool, ToolOutput};
use serde_json::{json, Value};
use std::sync::Arc;

/// The tool's name.
pub const NAME: &str = "agent";
/// Characters of a sub-agent's tool result shown in its parent's panel while it works.
const PROGRESS_CHARS: usize = 160;

/// What the `agent` tool needs of the agent whose run it serves (the `Agent` of the run).
pub(crate) trait Runner: Send + Sync {
    /// The model an agent file names, when the front end can find models (`None`: it cannot).
    fn model_named(&self, named: &str) -> Option<Result<Model, crate::AgentError>>;
    /// Sub-agents running at once take one of these.
    fn child_slots(&self) -> Arc<tokio::sync::Semaphore>;
    fn store(&self) -> Arc<std::sync::Mutex<codewright_store::Store>>;
    /// The data folder (the task locks are under it).
    fn home(&self) -> &std::path::Path;
    /// Starts a child task's run, held by `lock`, its approvals asked of `approver`.
    fn start_child(
        &self,
        lock: TaskLock,
        request: RunRequest,
        events: Events,
        approver: Arc<dyn Approver>,
    ) -> TaskHandle;
    /// Ends what the task left running (its background processes).
    fn close_task(&self, task: TaskId);
}

/// The `agent` tool of one run.
pub(crate) struct SubAgents {
    pub agent: Arc<dyn Runner>,
    pub parent: TaskId,
    /// What the sub-agents run with: the parent run's model, mode and sandbox.
    pub request: RunRequest,
    pub events: Events,
    /// The parent run's approver: the sub-agents ask in its window.
    pub approver: Arc<EventApprover>,
    /// The tools the parent's run may use (`None`: all): a sub-agent gets no others.
    pub allowed: Option<Vec<String>>,
    /// The agents a job can be handed to.
    pub agents: Vec<AgentDef>,
    pub description: String,
}

impl SubAgents {
    pub fn new(
        agent: Arc<dyn Runner>,
        parent: TaskId,
        request: RunRequest,
        events: Events,
        approver: Arc<EventApprover>,
        allowed: Option<Vec<String>>,
        agents: Vec<AgentDef>,
    ) -> SubAgents {
        let listed: Vec<String> = agents
            .iter()
            .map(|a| format!("- {}: {}", a.name, a.description))
            .collect();
        let description = format!(
            "Hand a self-contained job to another agent. It works in its own context with its own \
             tools and returns only its final report, so use it for work whose details you do \
             not need to see: a broad search, a review, a plan. Give it everything it needs in \
             `prompt` (it sees nothing of this conversation) and say what to report. Several \
             calls in one answer run at the same time. The agents:\n{}",
            listed.join("\n")
        );
        SubAgents {
            agent,
            parent,
            request,
            events,
            approver,
            allowed,
            agents,
            description,
        }
    }
}

#[async_trait]
impl Tool for SubAgents {
    fn name(&self) -> &str {
        NAME
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> Value {
        let names: Vec<&str> = self.agents.iter().map(|a| a.name.as_str()).collect();
        json!({
            "type": "object",
            "properties": {
                "agent": {"type": "string", "enum": names, "description": "Which agent does the job"},
                "prompt": {"type": "string", "description": "The whole job: what to do, what is known, what to report"},
            },
            "required": ["agent", "prompt"],
            "additionalProperties": false,
        })
    }

    fn category(&self) -> ToolCategory {
        // Handing a job on changes nothing; what the sub-agent does is asked on its own.
        ToolCategory::Read
    }

    async fn run(&self, input: Value, cx: &CallContext) -> ToolOutput {
        let name = input["agent"].as_str().unwrap_or_default();
        let prompt = input["prompt"].as_str().unwrap_or_default().trim();
        if prompt.is_empty() {
            return ToolOutput::error("`prompt` is empty: write the whole job for the agent");
        }
        // Its agent's own model, when it names one and the front end can find it; else the
        // parent's.
        let mut request = self.request.clone();
        let named = self
            .agents
            .iter()
            .find(|a| a.name == name)
            .and_then(|a| a.model.clone());
        if let Some(found) = named
            .as_deref()
            .and_then(|named| self.agent.model_named(named))
        {
            let named = named.unwrap_or_default();
            match found {
                Ok(model) => {
                    request.model = model;
                    request.compaction = None;
                }
                Err(e) => {
                    return ToolOutput::error(format!(
                        "the {name} agent's model {named} cannot be used: {e}"
                    ))
                }
            }
        }
        // Bounded: more wait here (the parent's stop ends the wait), before anything is stored.
        let _slot = tokio::select! {
            slot = self.agent.child_slots().acquire_owned() => slot.ok(),
            _ = cx.cancel.cancelled() => return ToolOutput::error(codewright_llm::request::INTERRUPTED),
        };
        let child = {
            let store = self.agent.store();
            let store = store.lock().expect("store lock");
            let mut settings = codewright_protocol::TaskSettings::new();
            settings.insert(crate::request::AGENT.into(), json!(name));
            store.add_child_task(
                self.parent,
                &cx.call_id,
                &format!("{name}: {}", codewright_protocol::Task::title_from(prompt)),
                &Message::user(prompt),
                &settings,
            )
        };
        let child = match child {
            Ok(child) => child.id,
            Err(e) => return ToolOutput::error(format!("the job could not be stored: {e}")),
        };
        let lock = match hold_task(self.agent.home(), child) {
            Ok(lock) => lock,
            Err(e) => return ToolOutput::error(e.message),
        };
        // The sub-agent's events: what it writes, each call it makes and how that ended are the
        // progress of this call's panel, its notices are said in the parent's conversation, its
        // last error is kept for the result; all of them reach the parent's listeners as its own.
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let (parent, events, agent_name) = (self.parent, self.events.clone(), name.to_string());
        let progress = cx.progress.clone();
        let relay = tokio::spawn(async move {
            let mut last_error = None;
            let mut said = Said::default();
            let mut say = |kind: Saying, text: &str| {
                let text = said.next(kind, text);
                if let (Some(progress), false) = (&progress, text.is_empty()) {
                    progress(&text);
                }
            };
            while let Some(event) = rx.recv().await {
                match &event {
                    AgentEvent::TextDelta { text, .. } => say(Saying::Text, text),
                    AgentEvent::ToolCallStarted { name, .. } => {
                        say(Saying::Call, &format!("{name} …\n"))
                    }
                    AgentEvent::ToolFinished {
                        name,
                        is_error,
                        preview,
                        ..
                    } => {
                        let first = preview.lines().next().unwrap_or_default();
                        let first: String = first.chars().take(PROGRESS_CHARS).collect();
                        let mark = if *is_error { "failed" } else { "→" };
                        say(Saying::Call, &format!("{name} {mark} {first}\n"));
                    }
                    AgentEvent::Notice { message, .. } => {
                        let _ = events.send(AgentEvent::Notice {
                            task_id: parent,
                            message: format!("The {agent_name} agent: {message}"),
                        });
                    }
                    AgentEvent::Error { message, .. } => last_error = Some(message.clone()),
                    _ => {}
                }
                let _ = events.send(event);
            }
            last_error
        });
        let handle = self.agent.start_child(
            lock,
            RunRequest {
                task: child,
                prompt: None,
                this_run: crate::request::ThisRun {
                    agent: None,
                    tools: self.allowed.clone(),
                },
                ..request
            },
            tx,
            Arc::new(OnBehalf {
                parent: self.parent,
                child,
                agent: name.to_string(),
                approver: self.approver.clone(),
            }),
        );
        let stop = handle.cancel.clone();
        let wait = handle.wait();
        tokio::pin!(wait);
        let outcome = tokio::select! {
            outcome = &mut wait => outcome,
            _ = cx.cancel.cancelled() => {
                stop.cancel();
                wait.await
            }
        };
        // Its background processes end with it: its report is final.
        self.agent.close_task(child);
        let last_error = relay.await.ok().flatten();
        let store = self.agent.store();
        let store = store.lock().expect("store lock");
        let last = store.history(child).ok().and_then(|h| {
            h.into_iter()
                .rev()
                .find(|m| m.message.role == Role::Assistant)
        });
        let report = last
            .as_ref()
            .map(|m| m.message.text().trim().to_string())
            .unwrap_or_default();
        match outcome {
            RunOutcome::Done => ToolOutput::text(if report.is_empty() {
                format!("The {name} agent finished without a report.")
            } else {
                report
            }),
            RunOutcome::Paused => ToolOutput::text(format!(
                "The {name} agent stopped at its iteration limit; its summary:\n\n{report}"
            )),
            RunOutcome::Stopped => ToolOutput::error(format!(
                "The {name} agent was stopped before it finished.{}",
                if report.is_empty() {
                    String::new()
                } else {
                    format!(" What it had written:\n\n{report}")
                }
            )),
            RunOutcome::Failed => {
                let why = last_error
                    .or_else(|| last.and_then(|m| m.message.error))
                    .unwrap_or_else(|| "its run failed".into());
                ToolOutput::error(format!("The {name} agent failed: {why}"))
            }
        }
    }
}

/// What a line of a sub-agent's progress is: what it writes, or one of its calls.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Saying {
    Text,
    Call,
}

/// A sub-agent's progress as it is said: its text as it streams and its calls a line each, with
/// a blank line where one gives way to the other.
#[derive(Default)]
struct Said {
    last: Option<Saying>,
    /// Whether what was said so far ends a line.
    at_line_start: bool,
}

impl Said {
    /// `text` of `kind`, with what must come before it.
    fn next(&mut self, kind: Saying, text: &str) -> String {
        let mut out = String::new();
        if text.is_empty() {
            return out;
        }
        if self.last.is_some_and(|last| last != kind) {
            out.push_str(if self.at_line_start { "\n" } else { "\n\n" });
        }
        out.push_str(text);
        self.last = Some(kind);
        self.at_line_start = text.ends_with('\n');
        out
    }
}

/// A sub-agent's approvals and questions, asked in its parent's window (the parent task's
/// while they wait, answered through its handle), saying which agent asks; where its call got
/// to is recorded on the sub-agent's own task.
struct OnBehalf {
    parent: TaskId,
    child: TaskId,
    agent: String,
    approver: Arc<EventApprover>,
}

#[async_trait]
impl Approver for OnBehalf {
    async fn decide(&self, mut request: ApprovalRequest) -> Decision {
        request.task_id = self.parent;
        request.summary = format!("{} agent: {}", self.agent, request.summary);
        self.approver.decide_for(request, self.child).await
    }

    async fn answer(&self, mut question: Question) -> Option<String> {
        question.task_id = self.parent;
        question.question = format!("{} agent asks: {}", self.agent, question.question);
        self.approver.answer_for(question, self.child).await
    }
}
