//! `ask_user`: a question to the user, answered in the task's window or on the CLI's terminal.

use crate::session::next_request_id;
use crate::{parse_input, schema_of, CallContext, Tool, ToolOutput};
use async_trait::async_trait;
use codewright_protocol::{Question, ToolCategory, ToolDetail};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

pub struct AskUser;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Input {
    /// The question, self-contained.
    #[schemars(length(min = 1))]
    question: String,
    /// Suggested answers (the user may also write their own).
    #[serde(default)]
    choices: Vec<String>,
}

#[async_trait]
impl Tool for AskUser {
    fn name(&self) -> &str {
        "ask_user"
    }
    fn description(&self) -> &str {
        "Ask the user a question and wait for the answer. Use it when a decision is theirs (requirements, trade-offs), not for things you can find out yourself. Offer choices when the options are clear."
    }
    fn input_schema(&self) -> Value {
        schema_of::<Input>()
    }
    fn category(&self) -> ToolCategory {
        ToolCategory::Read
    }
    fn concurrent(&self) -> bool {
        false
    }

    async fn run(&self, input: Value, cx: &CallContext) -> ToolOutput {
        let input: Input = match parse_input(input) {
            Ok(i) => i,
            Err(e) => return e,
        };
        let question = Question {
            id: next_request_id(),
            task_id: cx.session.task,
            call_id: cx.call_id.clone(),
            question: input.question.clone(),
            choices: input.choices,
        };
        let answer = tokio::select! {
            a = cx.session.approver.answer(question) => a,
            _ = cx.cancel.cancelled() => {
                return ToolOutput::error("The user stopped the task before answering.");
            }
        };
        match answer {
            Some(answer) => ToolOutput::text(format!("The user answered:\n{answer}")).with_detail(
                ToolDetail::Answer {
                    question: input.question,
                    answer,
                },
            ),
            None => ToolOutput::error(
                "The user did not answer (or nobody can: this run is non-interactive). Decide yourself if you reasonably can and say what you assumed; otherwise stop and ask in your reply.",
            ),
        }
    }
}
