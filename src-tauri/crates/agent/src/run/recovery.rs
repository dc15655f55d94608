//! Picking a task up where it was: what a run starts from, with an answer a crash or a stop cut
//! short settled first (its calls run, answered or marked).

use super::*;

/// Reads the task, closes what a crash left open, settles the calls an interrupted run left
/// without results, delivers the messages a run that died had queued (all but `own`, this
/// run's), appends the prompt, and returns what the run starts from. The caller holds the task's
/// lock.
pub(super) fn load(
    inner: &Inner,
    task_id: TaskId,
    prompt: Option<&Message>,
    own: &[i64],
) -> Result<Loaded, AgentError> {
    let store = inner.store.lock().expect("store lock");
    let task = store.task(task_id)?;
    let project = store.project(task.project_id)?;
    let closed = store.close_interrupted(task_id)?;
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
    let states = store.call_states(task_id)?;
    let root = store.task_root(task_id)?;
    let registry = inner.registry(project.id, &root);
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
            store.append_message(task_id, &Message::new(Role::Tool, results))?;
        }
        store.clear_calls(task_id)?;
        Vec::new()
    };
    // Messages a run that died had taken for later: before the new prompt (they came first), or
    // at the first turn boundary of a run that first finishes the interrupted calls.
    let left: Vec<Queued> = store
        .queued_messages(task_id)?
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
                delivered |= store.deliver_queued(id)?.is_some();
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
            return Err(AgentError::new(
                ErrorKind::BadInput,
                "the message is empty; say what the agent should do",
            ))
        }
        Some(message) => Some(message.clone()),
        None if messages.is_empty() && !delivered => {
            return Err(AgentError::new(
                ErrorKind::BadInput,
                "this task has no messages to continue; send a message first",
            ))
        }
        // The model spoke last (a pause's summary, a stopped answer): ask it to go on.
        None if spoke_last => Some(Message::user(CONTINUE)),
        None => None,
    };
    if let Some(message) = message {
        store.append_message(task_id, &message)?;
    }
    let turn = store
        .history(task_id)?
        .iter()
        .filter(|r| r.message.role == Role::User)
        .count() as i64;
    let view = compaction::view(&store, task_id)?;
    Ok(Loaded {
        root,
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
pub(super) struct Loaded {
    pub(super) project: codewright_protocol::Project,
    /// The folder the task works in: its worktree, else the project's folder.
    pub(super) root: std::path::PathBuf,
    pub(super) view: View,
    pub(super) turn: i64,
    /// The previous run ended without finishing (a crash, a quit).
    pub(super) interrupted: bool,
    /// Calls of the interrupted run that may have taken effect, described for the user.
    pub(super) may_have_run: Vec<String>,
    /// The interrupted answer's calls, when some are to run now; empty otherwise.
    pub(super) resume: Vec<Unanswered>,
    /// Messages a run that died had queued, for this run's first turn boundary (when it first
    /// finishes the interrupted calls).
    pub(super) requeue: Vec<Queued>,
}

/// A call of an interrupted answer: settled (its result known or decided), or to run now.
pub(super) enum Unanswered {
    Settled(Part),
    Run(Call),
}
