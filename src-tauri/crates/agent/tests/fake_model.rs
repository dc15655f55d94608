//! A run driven step by step by a model in process (`codewright_llm::fake`): no server, no
//! sockets — the test reads each request the run makes and writes its answer piece by piece,
//! and what the run does with it goes through the same decoding and loop as a provider's.

use codewright_agent::{Agent, AgentConfig, Model, RunRequest, TaskHandle};
use codewright_llm::fake::FakeModel;
use codewright_llm::{Protocol, Provider};
use codewright_protocol::{AgentEvent, PermissionMode, Role, RunOutcome, StopReason, TaskId};
use codewright_store::Store;
use serde_json::json;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

struct World {
    project: tempfile::TempDir,
    _home: tempfile::TempDir,
    store: Arc<Mutex<Store>>,
    agent: Agent,
    task: TaskId,
    fake: FakeModel,
}

fn world() -> World {
    let project = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let store = Store::open_in(home.path()).unwrap();
    let p = store.add_project(project.path(), None).unwrap();
    let task = store.add_task(p.id, "driven").unwrap().id;
    let store = Arc::new(Mutex::new(store));
    let fake = FakeModel::new();
    let config = AgentConfig {
        user_home: Some(home.path().join("user")),
        fake_model: Some(fake.clone()),
        ..AgentConfig::default()
    };
    let agent = Agent::new(store.clone(), home.path().to_path_buf(), config);
    World {
        project,
        _home: home,
        store,
        agent,
        task,
        fake,
    }
}

impl World {
    fn start(&self, prompt: &str) -> (TaskHandle, mpsc::UnboundedReceiver<AgentEvent>) {
        let mut info = codewright_llm::resolve_model("fake@inprocess", &[]);
        info.known = true;
        let model = Model {
            info,
            // Never reached: the fake answers in process.
            provider: Provider::new(
                "inprocess",
                Protocol::OpenAiChat,
                "http://fake.invalid/v1",
                None,
            ),
            key: None,
        };
        let (events, rx) = mpsc::unbounded_channel();
        let handle = self.agent.start(
            RunRequest {
                task: self.task,
                prompt: Some(prompt.into()),
                model,
                mode: PermissionMode::Normal,
                sandbox: false,
                compaction: None,
                this_run: Default::default(),
            },
            events,
        );
        (handle, rx)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_is_driven_step_by_step_by_a_model_in_process() {
    let w = world();
    std::fs::write(
        w.project.path().join("notes.txt"),
        "the key is under the mat\n",
    )
    .unwrap();
    let (handle, _events) = w.start("Where is the key? It is in notes.txt.");

    let first = w.fake.next_request().await;
    assert!(
        first.last_text().contains("Where is the key?"),
        "{}",
        first.body
    );
    assert!(first.body["tools"]
        .as_array()
        .is_some_and(|t| !t.is_empty()));
    first.tool_call(0, "call_1", "read_file", &json!({"path": "notes.txt"}));
    first.finish("tool_calls");

    let second = w.fake.next_request().await;
    assert!(
        second.body.to_string().contains("the key is under the mat"),
        "the file's text did not reach the model: {}",
        second.body
    );
    second.text("Under the ");
    second.text("mat.");
    second.finish("stop");

    assert_eq!(handle.wait().await, RunOutcome::Done);
    assert_eq!(w.fake.requests(), 2);
    let history = w.store.lock().unwrap().history(w.task).unwrap();
    let last = &history.last().unwrap().message;
    assert_eq!(last.role, Role::Assistant);
    assert_eq!(last.text(), "Under the mat.");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_in_the_middle_of_an_answer_keeps_what_arrived() {
    let w = world();
    let (handle, mut events) = w.start("Tell me a long story.");
    let request = w.fake.next_request().await;
    request.text("Once upon a ");
    // The piece has reached the run (and the window) before the stop.
    loop {
        match events
            .recv()
            .await
            .expect("the run ended before its text arrived")
        {
            AgentEvent::TextDelta { text, .. } if text.contains("upon") => break,
            _ => {}
        }
    }
    handle.stop();
    assert_eq!(handle.wait().await, RunOutcome::Stopped);
    let history = w.store.lock().unwrap().history(w.task).unwrap();
    let last = &history.last().unwrap().message;
    assert_eq!(last.text(), "Once upon a ");
    assert_eq!(last.stop_reason, Some(StopReason::Aborted));
    drop(request);
}
