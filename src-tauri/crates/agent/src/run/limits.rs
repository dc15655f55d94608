//! A run that outgrows its limits: the conversation summarized when it no longer fits the model's
//! window (compaction), and the task paused with a summary at the iteration budget.

use super::*;

impl Run {
    /// Summarizes the older messages; false when there was too little to compact.
    pub(super) async fn compact(
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
                .map_err(crate::AgentError::from)
                .and_then(|()| compaction::view(&store, self.task))
        };
        match reloaded {
            Ok(new_view) => *view = new_view,
            Err(e) => {
                self.error(e.kind, e.message);
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
    pub(super) async fn pause(
        &mut self,
        model: &Model,
        system: &str,
        specs: &[codewright_protocol::ToolSpec],
        view: &mut View,
    ) -> RunOutcome {
        // The history as the model reads it, with the tools it was offered (providers refuse a
        // history of tool calls without them); the request itself asks for no more calls.
        let mut request = history_for(model, &view.messages);
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
