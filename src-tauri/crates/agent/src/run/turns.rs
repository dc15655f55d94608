//! The loop: a run from its start to its end — its prompt, its turns (a request, then the calls
//! the answer made, run and answered), the user's messages delivered between them, and how it ends.

use super::*;
use codewright_protocol::{PermissionMode, TaskWorktree, WorktreeState};

/// How long a worktree's set-up may run (and go without output): installing dependencies takes
/// a while.
const SET_UP_SECS: u64 = 3600;

impl Run {
    /// The project's tools in the task's folder (`session.root`) as they are now, those the
    /// task's agent may use.
    pub(super) fn registry(&self, project: ProjectId, session: &Session) -> Arc<Registry> {
        let all = self.inner.registry(project, &session.root);
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

    pub(super) fn emit(&self, event: AgentEvent) {
        let _ = self.events.send(event);
    }

    pub(super) fn notice(&self, message: impl Into<String>) {
        self.emit(AgentEvent::Notice {
            task_id: self.task,
            message: message.into(),
        });
    }

    pub(super) fn error(&self, kind: ErrorKind, message: impl Into<String>) {
        self.emit(AgentEvent::Error {
            task_id: self.task,
            kind,
            message: message.into(),
        });
    }

    pub(super) fn step(&mut self, step: Step) {
        self.tracker.step(step);
    }

    /// How many files the run has changed, commands it has run and times it put a small
    /// model's best version back: a read made before the last of them may no longer say what
    /// the file holds.
    pub(super) fn changes(&self) -> u32 {
        let work = self.work.lock().expect("work lock");
        work.edits + work.commands + self.put_back
    }

    /// The checks the user named that a small model's work still fails (none for another
    /// model, or when the message named none).
    fn small_failing(&self) -> Vec<String> {
        self.words
            .as_ref()
            .filter(|w| w.small)
            .map(|w| w.failing(self.changes()))
            .unwrap_or_default()
    }

    /// Puts a small model's `best` version back on disk after a change of its made the checks
    /// fail worse, so that the files of that version never end worse than their best — a run
    /// stopped or timed out after a worse attempt keeps them as they were then. Each is a change
    /// of the run's turn (undone with it) made by [`Session::put_back`]; the checks are then as
    /// they were for that version (those that failed then, failing; the others to run again),
    /// and the model is sent that version ([`crate::focus::request`]).
    fn put_back_best(&mut self, session: &Session, best: &crate::focus::Best) {
        let files: Vec<(&str, &[u8])> = best
            .files()
            .iter()
            .map(|(path, content)| (path.as_str(), content.as_bytes()))
            .collect();
        let done = match session.put_back(&files) {
            Ok(done) if done.is_empty() => return,
            Ok(done) => done,
            Err(e) => {
                let paths: Vec<&str> = files.iter().map(|(path, _)| *path).collect();
                self.notice(format!("The model's best version of {} could not be put back ({e}); the files are left as they are now.", paths.join(", ")));
                return;
            }
        };
        self.put_back += 1;
        let changes = self.changes();
        if let Some(words) = self.words.as_mut() {
            // (The whole version is back: its checks fail as they did for it.)
            words.ran.clear();
            words.put_back_at = Some(changes);
            for command in best.failing() {
                words.ran.insert(
                    command.to_string(),
                    Ran {
                        changes,
                        passed: false,
                    },
                );
            }
        }
        self.notice(format!(
            "The model's last change made more of the checks fail than an earlier version of its own, so {} {} put back to that version (a change of this turn: undoing the turn undoes it too).",
            done.join(", "),
            if done.len() == 1 { "is" } else { "are" }
        ));
    }

    pub(super) fn store(&self) -> std::sync::MutexGuard<'_, Store> {
        self.inner.store.lock().expect("store lock")
    }

    pub(super) async fn run(mut self, request: RunRequest, lock: Option<TaskLock>) -> RunOutcome {
        // One run per task at a time, whichever window or process starts it.
        let held = match lock.map_or_else(|| hold_task(&self.inner.home, self.task), Ok) {
            Ok(lock) => lock,
            Err(e) => {
                self.steer.lock().expect("steer lock").closed = true;
                self.error(e.kind, e.message);
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
        let changes = self.changes();
        let mut work = self.work.lock().expect("work lock").clone();
        if let Some(words) = &self.words {
            work.failing = words.failing(changes);
        }
        let status = match outcome {
            // The model ended, but a check the message named still fails: not done, and said so
            // where the task is listed.
            RunOutcome::Done if !work.failing.is_empty() => TaskStatus::NotDone,
            RunOutcome::Done => TaskStatus::Done,
            RunOutcome::Paused => TaskStatus::Paused,
            RunOutcome::Failed => TaskStatus::Failed,
            RunOutcome::Stopped => TaskStatus::Idle,
        };
        let _ = self.store().set_task_status(self.task, status);
        // Released before the front end hears the run finished, so it can start the next one.
        drop(held);
        self.step(Step::End);
        self.emit(AgentEvent::RunFinished {
            task_id: self.task,
            outcome,
            work,
        });
        outcome
    }

    pub(super) async fn run_inner(&mut self, request: RunRequest) -> Result<RunOutcome, String> {
        let task = self.task;
        // What this run's sub-agents run with (their own task and job).
        let subagent_request = RunRequest {
            prompt: None,
            ..request.clone()
        };
        // The user's message is stored first: whatever happens next (a queue, a stop), it is kept.
        let Loaded {
            project,
            root,
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
                root,
                home: self.inner.home.clone(),
                mode: request.mode,
                sandbox: request.sandbox || settings.sandbox,
                allow_private_network: settings.allow_private_network,
                rules: vec![],
            },
            self.inner.store.clone(),
            approver.clone(),
            processes,
        )
        .map_err(|e| e.to_string())?;
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
        // A run that may run commands has the login shell's environment captured meanwhile,
        // so that its first command does not wait for it.
        if self
            .allowed
            .as_ref()
            .is_none_or(|a| a.iter().any(|t| t == crate::written::BASH))
        {
            codewright_tools::warm_environment();
        }
        let may_hand_on = self
            .allowed
            .as_ref()
            .is_none_or(|a| a.iter().any(|t| t == crate::subagent::NAME));
        if let Some(own_approver) = own_approver.filter(|_| may_hand_on) {
            self.subagents = Some(Arc::new(crate::subagent::SubAgents::new(
                Arc::new(Agent {
                    inner: self.inner.clone(),
                }),
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
            text: mut system,
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
        // A worktree's `.git` is a file naming a folder outside it, never followed: its branch
        // is the task's record's.
        let worktree = self
            .store()
            .task(task)
            .ok()
            .and_then(|t| t.worktree)
            .filter(|w| w.state == WorktreeState::Active);
        if let Some(tree) = &worktree {
            system.push_str(&format!(
                "- Git branch: {} (this task's own worktree, made from {})\n",
                tree.branch, tree.base
            ));
        }
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
        if let Err(outcome) = self.set_up(project.id, &session, worktree, &mut view).await {
            return Ok(outcome);
        }
        // What a small or text-protocol model's words may ask for (see [`crate::written`]):
        // the files and check commands of the user's last message — never a sub-agent's, whose
        // message another model wrote.
        let small = crate::prompt::is_small(&request.model);
        if small || !request.model.info.native_tools() {
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
                best: None,
                put_back_at: None,
                as_it_was: None,
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
    pub(super) fn agent(
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
    pub(super) fn skills(
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
    pub(super) async fn run_calls(
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
                let (path, mut content) = (path.to_string(), content.to_string());
                if let Some(left) = crate::written::unindented(&words.root, &path, &content) {
                    self.notice(format!("The model wrote all of {path} indented; it is written from the left edge, as the file was."));
                    arguments["content"] = serde_json::Value::String(left.clone());
                    call.arguments = arguments.to_string();
                    content = left;
                }
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
                            // A test run's failures in words, else its ends.
                            if let Some(short) = crate::failures::in_words(text, &session.root)
                                .or_else(|| condensed(text))
                            {
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
    pub(super) async fn resume(
        &mut self,
        project: ProjectId,
        session: &Arc<Session>,
        resume: Vec<Unanswered>,
        view: &mut View,
    ) -> Result<(), RunOutcome> {
        self.step(Step::Start);
        self.step(Step::ToolCalls);
        let registry = self.registry(project, session);
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
    pub(super) async fn attach(
        &mut self,
        project: ProjectId,
        session: &Arc<Session>,
        message: &str,
        view: &mut View,
    ) -> Result<(), RunOutcome> {
        let files = crate::attach::named_files(&session.root, message);
        let registry = self.registry(project, session);
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
        self.own_calls(&registry, session, calls, view).await?;
        Ok(())
    }

    /// Calls Codewright makes as the run's own (the files read for a small model, a worktree's
    /// set-up): stored and shown like the model's, run through the same policy; their results.
    async fn own_calls(
        &mut self,
        registry: &Registry,
        session: &Arc<Session>,
        calls: Vec<Call>,
        view: &mut View,
    ) -> Result<Vec<Part>, RunOutcome> {
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
        let results = self.run_calls(registry, session, calls).await;
        self.push(view, Message::new(Role::Tool, results.clone()))?;
        if self.cancel.is_cancelled() {
            return Err(RunOutcome::Stopped);
        }
        Ok(results)
    }

    /// A new worktree's set-up (the project's command, `npm ci`), before anything else the run
    /// does there: a `bash` call of the run, approved in advance (the user wrote it in the
    /// project's settings; a deny rule still refuses it), given up to an hour, its output in the
    /// task like any call's. It runs once: cleared from the worktree's record as it starts (a
    /// stop or a crash does not run it again; its output says how far it got). A run that may
    /// not run commands (plan mode, an agent without `bash`) leaves it for one that may. A
    /// failure ends the run, said: the model is not set to work in a folder that is not ready.
    pub(super) async fn set_up(
        &mut self,
        project: ProjectId,
        session: &Arc<Session>,
        worktree: Option<TaskWorktree>,
        view: &mut View,
    ) -> Result<(), RunOutcome> {
        // (`worktree`: the task's, while it is active.)
        let Some(mut worktree) = worktree else {
            return Ok(());
        };
        let Some(command) = worktree.set_up.clone() else {
            return Ok(());
        };
        let may_run = session.mode() != PermissionMode::Plan
            && self
                .allowed
                .as_ref()
                .is_none_or(|tools| tools.iter().any(|t| t == crate::written::BASH));
        if !may_run {
            self.notice(format!("The worktree's set-up (`{command}`) waits for a run that may run commands (not in plan mode, nor for an agent without bash)."));
            return Ok(());
        }
        worktree.set_up = None;
        if let Err(e) = self.store().set_task_worktree(self.task, Some(&worktree)) {
            self.error(ErrorKind::Store, e.to_string());
            return Err(RunOutcome::Failed);
        }
        let call = Call {
            id: call_id(),
            name: crate::written::BASH.to_string(),
            arguments: serde_json::json!({
                "command": command,
                "timeout": SET_UP_SECS,
                "idle_timeout": SET_UP_SECS,
            })
            .to_string(),
            truncated: false,
        };
        session.approve_in_advance(&call.id);
        let registry = self.registry(project, session);
        let results = self.own_calls(&registry, session, vec![call], view).await?;
        let failed = results
            .iter()
            .any(|p| matches!(p, Part::ToolResult { is_error: true, .. }));
        if failed {
            self.error(
                ErrorKind::Setup,
                format!("The worktree's set-up command failed (its output is above), so the agent did not start. Fix what it needs in the worktree (or the command in Settings → Project, for new worktrees), then send again: the set-up does not run again by itself. (`{command}`)"),
            );
            return Err(RunOutcome::Failed);
        }
        Ok(())
    }

    pub(super) fn load(&self, prompt: Option<&Message>) -> Result<Loaded, String> {
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
    pub(super) fn push(&self, view: &mut View, message: Message) -> Result<(), RunOutcome> {
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
    pub(super) fn deliver_steer(&self, view: &mut View) -> Result<(), RunOutcome> {
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
    pub(super) fn deliver(&self, queued: &Queued) -> codewright_store::Result<bool> {
        let store = self.store();
        match queued.id {
            Some(id) => Ok(store.deliver_queued(id)?.is_some()),
            None => store
                .append_message(self.task, &queued.message)
                .map(|_| true),
        }
    }

    pub(super) async fn iterate(
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

    pub(super) async fn iterate_inner(
        &mut self,
        model: &Model,
        project: ProjectId,
        session: &Arc<Session>,
        system: &str,
        view: &mut View,
    ) -> Result<RunOutcome, RunOutcome> {
        // Models without native tool calling get the tools in the prompt and write calls as text.
        // (So do models whose answers are constrained to JSON: they write them as JSON objects.
        // A small local model gets no tools' schemas at all: see `Model::sends_tools`.)
        let text_mode = !model.sends_tools();
        let base_system = system;
        let mut empty_retry = false;
        // The last two exchanges of calls and results (a circle may alternate between two).
        let mut recent: Vec<Vec<String>> = Vec::new();
        // One reminder per run for a small model that ends without a change (sent, not stored).
        let (mut nudged, mut nudge_now) = (false, None::<String>);
        // The checks failing when a small model was last sent back to fix them.
        let mut sent_back = None::<Vec<String>>;
        // (Counted since the model's last change: one that keeps changing the code is let go on
        // within the iteration limit, one that keeps only talking is not.)
        let (mut reminded, mut reminded_at) = (0u32, 0u32);
        let mut repeated = 0u32;
        // A small model going round in circles is started again once before it is stopped.
        let (mut started_again, mut start_again_now) = (false, false);
        // One sent back to no avail is asked for the work afresh a few times (see
        // [`crate::focus::afresh`]).
        let (mut fresh_starts, mut fresh_now) = (0u32, false);
        // One test short, a file written out as it is is sent back as a new sample instead
        // (counted with the fresh starts).
        let mut resample_now = false;
        let mut told_images = false;
        let mut overflow_retried = false;
        let mut iteration = 0u32;
        loop {
            // The tools as they are now (an MCP server's may have changed since the last turn).
            let registry = self.registry(project, session);
            let mut offered = offered_tools(registry.specs(), session);
            if crate::prompt::is_small(model) {
                offered.retain(|s| {
                    crate::prompt::SMALL_MODEL_TOOLS.contains(&s.name.as_str())
                        || s.name.contains("__") // an MCP server's (server__tool)
                });
            }
            let specs = &compaction::tool_specs(&offered, &model.info)[..];
            // (A small model is told no call format: see `prompt::SMALL_INSTRUCTIONS`.)
            let system = match (text_mode, model.info.sampling.constrained) {
                (true, true) => {
                    format!("{base_system}{}", text_calls::describe_tools_as_json(specs))
                }
                (true, false) if !crate::prompt::is_small(model) => {
                    format!("{base_system}{}", text_calls::describe_tools(specs))
                }
                _ => base_system.to_string(),
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
                    let put_back = w.put_back_at == Some(self.changes());
                    (
                        w.failing(self.changes()),
                        &w.root,
                        w.best.as_ref(),
                        put_back,
                    )
                })
                .filter(|(failing, _, _, _)| !failing.is_empty());
            // (Until a model answers it: a request retried whole — too long, or answered with
            // nothing — is started again all the same.)
            let focused = match (start_again_now, fresh_now) {
                (true, _) => self
                    .words
                    .as_ref()
                    .and_then(|w| crate::focus::start_again(&view.messages, &w.root)),
                (false, true) => crate::focus::afresh(&view.messages),
                (false, false) => failing.and_then(|(failing, root, best, put_back)| {
                    crate::focus::request(
                        &view.messages,
                        root,
                        &failing,
                        sent_back.is_some(),
                        best,
                        put_back,
                    )
                }),
            };
            let sent = focused.as_deref().unwrap_or(&view.messages);
            if let Some(words) = self.words.as_ref().filter(|w| w.small) {
                words.reads.lock().expect("reads lock").shown = shown_reads(sent);
            }
            let mut request_messages = history_for(model, sent);
            // The focus's last words (the cause asked for first) stay a turn of their own after
            // any reminder, where the model's template takes two user turns in a row.
            let apart = match request_messages.last() {
                Some(last)
                    if model.info.user_turns_in_a_row
                        && last.role == Role::User
                        && last.text() == crate::focus::CAUSE_FIRST =>
                {
                    request_messages.pop()
                }
                _ => None,
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
            request_messages.extend(apart);
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
                // (Set here, where the request is made: a compaction's summary request first
                // must not take it.)
                self.fresh_sample =
                    ((fresh_now || resample_now) && !start_again_now).then_some(fresh_starts);
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
                (start_again_now, fresh_now, resample_now) = (false, false, false);
                view.push_answer(answer, counted);
                // A small model asked to change named files that ends having changed nothing
                // ("the function has been implemented") is told so once, with how to.
                let asked_for_change = self.words.as_ref().is_some_and(|w| !w.files.is_empty());
                let edits = self.work.lock().expect("work lock").edits;
                // One that ends while the user's checks fail (they ran after its last change,
                // or when it ended) is sent back, a few times, with what failed.
                let failing = self.small_failing();
                if !failing.is_empty() {
                    if edits != reminded_at {
                        (reminded, reminded_at) = (0, edits);
                    }
                    let as_it_was = self.words.as_ref().and_then(|w| w.as_it_was.clone());
                    let fresh_left = fresh_starts < MAX_FRESH_STARTS;
                    let one_short = self
                        .words
                        .as_ref()
                        .and_then(|w| w.best.as_ref())
                        .is_some_and(|b| b.one_short());
                    // One test short, the request for the fix is sampled again rather than
                    // the work asked for afresh: from a file one test short of acronym's, one
                    // answer in four to six to the fix passes, none of twelve fresh starts did
                    // (BENCHMARKS.md, "One test short").
                    if let Some(path) = as_it_was.as_ref().filter(|_| one_short && fresh_left) {
                        fresh_starts += 1;
                        resample_now = true;
                        self.notice(format!(
                            "The model ended while {} still fails, one test short, after writing out {path} as it already is; it is sent back to fix it again, for a new answer ({fresh_starts} of {MAX_FRESH_STARTS}).",
                            failing.join(" and ")
                        ));
                        sent_back = Some(failing);
                        continue;
                    }
                    if reminded < MAX_CHECK_REMINDERS && (as_it_was.is_none() || !fresh_left) {
                        reminded += 1;
                        self.notice(format!(
                            "The model ended while {} still fails; it is sent back to fix it ({reminded} of {MAX_CHECK_REMINDERS}).",
                            failing.join(" and ")
                        ));
                        sent_back = Some(failing);
                        continue;
                    }
                    if fresh_left {
                        fresh_starts += 1;
                        (reminded, fresh_now) = (0, true);
                        let why = match as_it_was {
                            Some(path) => format!("after writing out {path} as it already is"),
                            None => format!("after being sent back {MAX_CHECK_REMINDERS} times without changing anything"),
                        };
                        self.notice(format!(
                            "The model ended while {} still fails, {why}; it is asked for the work afresh, with only the task and its files ({fresh_starts} of {MAX_FRESH_STARTS}).",
                            failing.join(" and ")
                        ));
                        continue;
                    }
                    self.notice(format!(
                        "The model ended while {} still fails, after being sent back {MAX_CHECK_REMINDERS} times without changing anything and asked for the work afresh (or, one test short, for a new answer) {MAX_FRESH_STARTS} times; it is not sent back again.",
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
            (empty_retry, start_again_now, fresh_now, resample_now) = (false, false, false, false);
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
            // circles (seen: one write refused as "would not change" twenty times; `ls` and a
            // read of a path that is not there, in turn, until the time ran out), so an
            // exchange like either of the last two counts. Reads in between change nothing,
            // and are left out (seen: a refused write and its check, with one read or two
            // before them, until the time ran out).
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
            repeated = if !passed && recent.contains(&exchange) {
                repeated + 1
            } else {
                0
            };
            if recent.len() == 2 {
                recent.remove(0);
            }
            recent.push(exchange);
            // A check that fails again with nothing changed since it last failed (the model's
            // write was refused, or changed nothing) is not shown to the model twice.
            let changes = self.changes();
            if let (Some(words), Some(checked)) = (&self.words, &self.checked_in_words) {
                for (command, id) in &checked.calls {
                    if words.ran.get(command)
                        != Some(&Ran {
                            changes,
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
            if self.cancel.is_cancelled() {
                return Ok(RunOutcome::Stopped);
            }
            // The checks ran as of the edits made now.
            let checked = self.checked_in_words.take();
            let mut checks_passed = false;
            let mut put_back = None;
            let changes = self.changes();
            if let (Some(words), Some(checked)) = (self.words.as_mut(), &checked) {
                checks_passed = true;
                for (command, id) in &checked.calls {
                    let passed = succeeded.contains(id);
                    checks_passed &= passed;
                    words.ran.insert(command.clone(), Ran { changes, passed });
                }
                // The best a small model's work did so far, to start again from when it does
                // worse (see [`crate::focus::Best`]).
                if words.small && !checks_passed {
                    // (The failing checks: a passing one has nothing to count.)
                    let failing: Vec<(String, String)> = checked
                        .calls
                        .iter()
                        .filter(|(_, id)| !succeeded.contains(id))
                        .cloned()
                        .collect();
                    let outputs = view
                        .messages
                        .last()
                        .map(|m| check_outputs(m, &failing))
                        .unwrap_or_default();
                    put_back = crate::focus::Best::record(
                        &mut words.best,
                        &view.messages,
                        &words.root,
                        outputs,
                    );
                }
            }
            if let Some(best) = put_back {
                self.put_back_best(session, &best);
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
            // Going round in circles, judged once this exchange's checks are counted (and a
            // worse attempt put back): they say whether the user's check still fails.
            if repeated >= 2 && !started_again && self.words.as_ref().is_some_and(|w| w.small) {
                started_again = true;
                start_again_now = true;
                (repeated, recent) = (0, Vec::new());
                self.notice("The model kept making the same calls (the same ones, or two sets in turn) and they failed the same way each time; it is asked once more with only the task and its files.");
            } else if repeated >= 2 {
                // While a check the user named fails, a new sample of the first answer may still
                // get out of the circle (the same wrong file written again and again, seen on
                // isogram with 100 s left).
                let failing = self.small_failing();
                if failing.is_empty() || fresh_starts >= MAX_FRESH_STARTS {
                    self.notice("The model kept making the same calls (the same ones, or two sets in turn) and they failed the same way each time, so the run stops here rather than go round in circles. Send a message to continue.");
                    return Ok(RunOutcome::Done);
                }
                fresh_starts += 1;
                (reminded, fresh_now) = (0, true);
                (repeated, recent) = (0, Vec::new());
                self.notice(format!(
                    "The model kept making the same calls while {} fails; it is asked for the work afresh, with only the task and its files ({fresh_starts} of {MAX_FRESH_STARTS}).",
                    failing.join(" and ")
                ));
            }
        }
    }
}
