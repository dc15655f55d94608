//! `todo_write`: the task's plan, stored with the task and shown in its window.

use crate::{parse_input, schema_of, CallContext, Tool, ToolOutput};
use async_trait::async_trait;
use codewright_protocol::{Todo, TodoStatus, ToolCategory, ToolDetail};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

pub struct TodoWrite;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Input {
    /// The whole plan (it replaces the previous one), in order.
    todos: Vec<Item>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Item {
    /// What to do, in a few words.
    #[schemars(length(min = 1))]
    content: String,
    status: Status,
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Status {
    Pending,
    InProgress,
    Completed,
}

#[async_trait]
impl Tool for TodoWrite {
    fn name(&self) -> &str {
        "todo_write"
    }
    fn description(&self) -> &str {
        "Write the task's plan: the full list of steps with their status (pending, in_progress, completed). The user sees it beside the conversation. Use it for work of three steps or more; keep exactly one step in_progress while working."
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
        let todos: Vec<Todo> = input
            .todos
            .into_iter()
            .map(|t| Todo {
                content: t.content.trim().to_string(),
                status: match t.status {
                    Status::Pending => TodoStatus::Pending,
                    Status::InProgress => TodoStatus::InProgress,
                    Status::Completed => TodoStatus::Completed,
                },
            })
            .collect();
        let stored = cx
            .session
            .store
            .lock()
            .expect("store lock")
            .set_todos(cx.session.task, &todos);
        if let Err(e) = stored {
            return ToolOutput::error(format!("the plan could not be saved: {e}"));
        }
        let done = todos
            .iter()
            .filter(|t| t.status == TodoStatus::Completed)
            .count();
        let mut text = format!("Plan saved ({done} of {} done):\n", todos.len());
        for t in &todos {
            let mark = match t.status {
                TodoStatus::Pending => "[ ]",
                TodoStatus::InProgress => "[>]",
                TodoStatus::Completed => "[x]",
            };
            text.push_str(&format!("{mark} {}\n", t.content));
        }
        ToolOutput::text(text).with_detail(ToolDetail::Todos { todos })
    }
}
