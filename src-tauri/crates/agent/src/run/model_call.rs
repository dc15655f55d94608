//! The model call: one request of a run, streamed and stored as it arrives, retried and reported
//! as the provider fails; calls a model writes as text, and work it writes in words, taken as calls.

use super::*;

impl Run {
    /// One streamed request. With `store`, the answer is saved as it streams and finished with
    /// its usage (a summary request is not part of the conversation: only its usage is kept).
    pub(super) async fn ask_model(
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
                    if model.sends_tools() { &tools } else { &[] },
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
            tools: if model.sends_tools() {
                tools.clone()
            } else {
                Vec::new()
            },
            max_output_tokens: max_output as u32,
            thinking_budget: None,
            sampling: match self.fresh_sample.take() {
                Some(nth) => crate::focus::fresh_sampling(model.info.sampling, nth),
                None => model.info.sampling,
            },
            answer_schema: (model.info.sampling.constrained && !tools.is_empty())
                .then(|| text_calls::answer_schema(&tools)),
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
        // A small model that, its work written, starts writing out the tests the task keeps is
        // stopped there too: nothing of them is ever written (see [`crate::echo`]).
        let watch = self
            .words
            .as_ref()
            .filter(|w| w.small)
            .and_then(|w| crate::echo::Watch::new(&w.root, &w.commands, &w.files, &w.keep));
        // (The places in the answer where it wrote out a kept file before any of its own.)
        let mut echoes_seen = 0;
        let echoed = std::sync::atomic::AtomicBool::new(false);
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
                    if let Some(watch) = watch.as_ref().filter(|_| text.contains('\n')) {
                        if !echoed.load(std::sync::atomic::Ordering::Relaxed)
                            && watch.stop(&said, &mut echoes_seen).is_some()
                        {
                            echoed.store(true, std::sync::atomic::Ordering::Relaxed);
                            request_cancel.cancel();
                        }
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
        // (An answer that ended by itself before the stop reached it is kept whole.)
        let echoed = echoed.load(std::sync::atomic::Ordering::Relaxed) && result.is_err();
        let mut result = match result {
            Err(failure) if (looped || echoed) && !self.cancel.is_cancelled() => Ok(failure
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
        // An answer stopped where it wrote out a kept file is kept up to that file, and ends
        // there as if the model had ended it.
        if let (true, Ok(message), Some(watch)) = (echoed && !looped, result.as_mut(), &watch) {
            let text = message.parts.iter_mut().rev().find_map(|p| match p {
                Part::Text { text } => Some(text),
                _ => None,
            });
            if let Some((text, stop)) =
                text.and_then(|t| watch.stop(t, &mut 0).map(|stop| (t, stop)))
            {
                *text = stop.before(text);
                message.stop_reason = Some(StopReason::EndTurn);
                self.notice(format!(
                    "{} wrote its change, then began writing out {}, which the task keeps as it is (a file never written from an answer); its answer was stopped there.",
                    model.info.id, stop.path
                ));
            }
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
                    with_text_calls(message, &tools, model.info.native_tools())
                } else {
                    message
                };
                // Constrained to JSON, a final answer is `{"answer": …}`: its words are kept.
                if model.info.sampling.constrained {
                    text_calls::unwrap_answer(&mut message);
                }
                // A small or text-protocol model may also write a whole file, or ask for the
                // user's check command, in words; or write a call that cannot be read, which
                // gets one corrective turn (as a call answered with the format, so the
                // conversation keeps its turns).
                let no_calls =
                    |m: &Message| !m.parts.iter().any(|p| matches!(p, Part::ToolCall { .. }));
                let words = crate::prompt::is_small(model) || !model.info.native_tools();
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
                self.error(failure.error.kind.into(), message);
                Err(Failure::Ended(RunOutcome::Failed))
            }
        }
    }
}

/// How a request failed.
pub(super) enum Failure {
    /// The conversation does not fit the context window (nothing arrived): compact and retry.
    Overflow(String),
    /// The run ends this way (the error, if any, was reported).
    Ended(RunOutcome),
}

impl Run {
    /// Adds to `message` the calls its words mean (see [`crate::written`]): a whole file
    /// headed by its path, a check command the user named (run after every such file too).
    pub(super) fn with_written_work(
        &mut self,
        message: &mut Message,
        tools: &[codewright_protocol::ToolSpec],
    ) {
        let made = self.changes();
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
        words.as_it_was = match written.files.is_empty() {
            true => written.unchanged.first().cloned(),
            false => None,
        };
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
            commands.retain(|c| words.ran.get(c).map(|r| r.changes) != Some(made));
        }
        // A small model's answer that ends its work has the checks it has not seen run since
        // its last change run now: they, not its word, say whether the task is done.
        let ended = words.small && ended && calls.is_empty() && commands.is_empty();
        if ended {
            commands = words
                .commands
                .iter()
                .filter(|c| words.ran.get(*c).map(|r| r.changes) != Some(made))
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
pub(super) fn shown_reads(messages: &[Message]) -> std::collections::HashSet<String> {
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

/// `messages` as `model` reads them: as they are for one sent the tools' schemas; else with
/// calls in the answers' words and results as messages of their own
/// ([`text_calls::as_text_protocol`]) — and for a small model, the files read for a message shown
/// whole in it ([`crate::attach::shown_in_message`]).
pub(super) fn history_for(model: &Model, messages: &[Message]) -> Vec<Message> {
    if model.sends_tools() {
        return messages.to_vec();
    }
    match crate::prompt::is_small(model) {
        true => text_calls::as_text_protocol(&crate::attach::shown_in_message(messages)),
        false => text_calls::as_text_protocol(messages),
    }
}

/// `messages` with user messages that follow one another made one (their parts in order): a
/// reminder sent after the user's message or after results read as text, or the focus after the
/// task, would otherwise be two user turns in a row, which strict chat templates refuse. (Where
/// the model's template takes them, the focus's last words are added after, apart: a small
/// model heeds a short last request far more so — [`crate::focus::CAUSE_FIRST`].)
pub(super) fn one_user_message_at_a_time(messages: Vec<Message>) -> Vec<Message> {
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

/// An answer with the calls it wrote as text (and its `<think>` block) turned into parts. The
/// text stays as the model wrote it. For a model with native tools (`native`), text calls count
/// only when they name offered tools and are most of the answer: a JSON call inside a long
/// explanation is an example, not a call.
pub(super) fn with_text_calls(
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
pub(super) fn quiet_notice(model: &Model, waited: std::time::Duration) -> String {
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

/// Replaces the images the user attached in `messages` with a line naming them (for a model
/// that does not take images: sent, they would make every request of the task fail). Whether
/// there were any.
pub(super) fn without_images(messages: &mut [Message]) -> bool {
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
