//! A scripted provider: a local HTTP server speaking OpenAI Chat Completions that answers each
//! request with what the test's script says, and checks every request it receives — each tool
//! call answered exactly once, right after its call; no orphan results; roles in an order the
//! protocol accepts; the tools list present.
#![allow(dead_code)]

use codewright_agent::{Agent, AgentConfig, Model, RunRequest, TaskHandle};
use codewright_llm::{Protocol, Provider, RetryPolicy};
use codewright_protocol::{AgentEvent, PermissionMode, TaskId};
use codewright_store::Store;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

/// What the model answers.
#[derive(Debug, Clone)]
pub enum Reply {
    /// Text, then stop.
    Text(String),
    /// Optional text, then tool calls `(name, arguments)`; ids are `call_<request>_<n>`.
    Calls(String, Vec<(String, Value)>),
    /// Nothing at all.
    Empty,
    /// Some text, then the stream stays open (until the client goes away).
    Hang(String),
    /// An HTTP error with a body.
    Status(u16, String),
    /// Another reply, with a pause before each event (a slow model).
    Paced(Box<Reply>, u64),
    /// Another reply after a silence of this many ms (a model reading a long prompt).
    Late(Box<Reply>, u64),
    /// A recorded response body (`llm/tests/fixtures/sse/<name>`), sent as recorded.
    Recorded(&'static str),
    /// A whole HTTP response as bytes (status line, headers, body), then the connection ends as
    /// `End` says: the faults a server can throw.
    Raw(String, End),
}

/// How a [`Reply::Raw`] connection ends.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum End {
    /// Closed cleanly.
    Close,
    /// Reset (RST), as a crashed server or a broken proxy does.
    Reset,
    /// Held open in silence for a minute.
    Hold,
}

/// A recorded stream from the providers' fixtures.
pub fn recorded(name: &'static str) -> Reply {
    Reply::Recorded(name)
}

pub fn text(t: &str) -> Reply {
    Reply::Text(t.to_string())
}

pub fn calls(list: &[(&str, Value)]) -> Reply {
    Reply::Calls(
        String::new(),
        list.iter()
            .map(|(n, a)| (n.to_string(), a.clone()))
            .collect(),
    )
}

pub type Script = Arc<dyn Fn(usize, &Value) -> Reply + Send + Sync>;

pub struct Server {
    pub url: String,
    /// Every request body received, in order.
    pub requests: Arc<Mutex<Vec<Value>>>,
    /// Problems found in requests (the test asserts it stays empty).
    pub violations: Arc<Mutex<Vec<String>>>,
}

impl Server {
    pub fn requests(&self) -> Vec<Value> {
        self.requests.lock().unwrap().clone()
    }

    pub fn assert_clean(&self) {
        let v = self.violations.lock().unwrap();
        assert!(v.is_empty(), "the provider received bad requests: {v:#?}");
    }
}

pub async fn serve(script: Script) -> Server {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let requests = Arc::new(Mutex::new(Vec::new()));
    let violations = Arc::new(Mutex::new(Vec::new()));
    let (r, v) = (requests.clone(), violations.clone());
    tokio::spawn(async move {
        loop {
            let Ok((socket, _)) = listener.accept().await else {
                break;
            };
            let (r, v, script) = (r.clone(), v.clone(), script.clone());
            tokio::spawn(async move {
                let _ = handle(socket, r, v, script).await;
            });
        }
    });
    Server {
        url,
        requests,
        violations,
    }
}

async fn handle(
    mut socket: tokio::net::TcpStream,
    requests: Arc<Mutex<Vec<Value>>>,
    violations: Arc<Mutex<Vec<String>>>,
    script: Script,
) -> std::io::Result<()> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let header_end = loop {
        let n = socket.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..header_end]).to_lowercase();
    // Only model calls are scripted: what else a client asks (a local server's window: `/props`,
    // `/api/ps`, `/api/show`…) is not found here, as on a plain OpenAI-compatible server.
    let request_line = head.lines().next().unwrap_or_default();
    if !(request_line.starts_with("post ")
        && ["/chat/completions ", "/messages ", "/responses "]
            .iter()
            .any(|path| request_line.contains(path)))
    {
        socket
            .write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
            .await?;
        return Ok(());
    }
    let anthropic = head
        .lines()
        .next()
        .is_some_and(|l| l.contains("/messages "));
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    while buf.len() < header_end + length {
        let n = socket.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let body: Value = serde_json::from_slice(&buf[header_end..]).unwrap_or(Value::Null);
    let index = {
        let mut all = requests.lock().unwrap();
        all.push(body.clone());
        all.len() - 1
    };
    let problems = if anthropic {
        check_anthropic(&body)
    } else {
        check(&body)
    };
    for problem in problems {
        violations
            .lock()
            .unwrap()
            .push(format!("request {index}: {problem}"));
    }
    let mut reply = script(index, &body);
    if let Reply::Late(inner, ms) = reply {
        tokio::time::sleep(Duration::from_millis(ms)).await;
        reply = *inner;
    }
    let mut pace = 0;
    if let Reply::Paced(inner, ms) = reply {
        reply = *inner;
        pace = ms;
    }
    if let Reply::Raw(bytes, end) = &reply {
        socket.write_all(bytes.as_bytes()).await?;
        socket.flush().await?;
        match end {
            End::Close => {}
            End::Reset => socket.set_zero_linger()?,
            End::Hold => tokio::time::sleep(Duration::from_secs(60)).await,
        }
        return Ok(());
    }
    if let Reply::Status(status, text) = &reply {
        let response = format!(
            "HTTP/1.1 {status} Error\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
            text.len()
        );
        socket.write_all(response.as_bytes()).await?;
        return Ok(());
    }
    socket
        .write_all(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n",
        )
        .await?;
    if let Reply::Recorded(name) = reply {
        let path = format!(
            "{}/../llm/tests/fixtures/sse/{name}",
            std::env::var("CARGO_MANIFEST_DIR").expect("run by cargo")
        );
        let body = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        socket.write_all(&body).await?;
        return Ok(());
    }
    // Like a real provider, count the prompt (roughly: 4 bytes a token).
    let prompt_tokens = buf.len().saturating_sub(header_end) / 4;
    for event in events(index, &reply, prompt_tokens) {
        if pace > 0 {
            tokio::time::sleep(Duration::from_millis(pace)).await;
        }
        socket
            .write_all(format!("data: {event}\n\n").as_bytes())
            .await?;
        socket.flush().await?;
    }
    if let Reply::Hang(_) = reply {
        tokio::time::sleep(Duration::from_secs(60)).await;
        return Ok(());
    }
    socket.write_all(b"data: [DONE]\n\n").await?;
    Ok(())
}

fn chunk(delta: Value, finish: Option<&str>) -> String {
    json!({"id": "chatcmpl-test", "object": "chat.completion.chunk", "model": "test-model",
           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    .to_string()
}

fn events(index: usize, reply: &Reply, prompt_tokens: usize) -> Vec<String> {
    let mut out = vec![chunk(json!({"role": "assistant", "content": ""}), None)];
    let finish = match reply {
        Reply::Text(t) | Reply::Hang(t) => {
            // Several deltas, like a real stream.
            for piece in t.split_inclusive(' ') {
                out.push(chunk(json!({"content": piece}), None));
            }
            "stop"
        }
        Reply::Calls(t, list) => {
            if !t.is_empty() {
                out.push(chunk(json!({"content": t}), None));
            }
            for (n, (name, args)) in list.iter().enumerate() {
                let id = format!("call_{index}_{n}");
                out.push(chunk(
                    json!({"tool_calls": [{"index": n, "id": id, "type": "function",
                                           "function": {"name": name, "arguments": ""}}]}),
                    None,
                ));
                let args = args.to_string();
                let (a, b) = args.split_at(args.len() / 2);
                for part in [a, b] {
                    out.push(chunk(
                        json!({"tool_calls": [{"index": n, "function": {"arguments": part}}]}),
                        None,
                    ));
                }
            }
            "tool_calls"
        }
        Reply::Empty => "stop",
        Reply::Status(..)
        | Reply::Paced(..)
        | Reply::Late(..)
        | Reply::Recorded(_)
        | Reply::Raw(..) => {
            unreachable!()
        }
    };
    if !matches!(reply, Reply::Hang(_)) {
        out.push(chunk(json!({}), Some(finish)));
        out.push(
            json!({"id": "chatcmpl-test", "object": "chat.completion.chunk", "choices": [],
                   "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 20}})
            .to_string(),
        );
    }
    out
}

/// The invariants every request must keep.
fn check(body: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    let Some(messages) = body["messages"].as_array() else {
        return vec!["no messages".into()];
    };
    if messages.first().map(|m| m["role"].as_str()) != Some(Some("system")) {
        problems.push("the first message is not the system prompt".into());
    }
    let mut i = 0;
    while i < messages.len() {
        let m = &messages[i];
        let role = m["role"].as_str().unwrap_or("");
        match role {
            "assistant" => {
                if i > 0 && messages[i - 1]["role"] == "assistant" {
                    problems.push(format!("two assistant messages in a row at {i}"));
                }
                let calls: Vec<&str> = m["tool_calls"]
                    .as_array()
                    .map(|c| c.iter().filter_map(|c| c["id"].as_str()).collect())
                    .unwrap_or_default();
                let mut j = i + 1;
                let mut answered = Vec::new();
                while j < messages.len() && messages[j]["role"] == "tool" {
                    answered.push(messages[j]["tool_call_id"].as_str().unwrap_or(""));
                    j += 1;
                }
                if answered != calls {
                    problems.push(format!("calls {calls:?} at {i} answered by {answered:?}"));
                }
                for call in m["tool_calls"].as_array().into_iter().flatten() {
                    let args = call["function"]["arguments"].as_str().unwrap_or("");
                    if serde_json::from_str::<Value>(args).is_err() {
                        problems.push(format!("call arguments are not JSON: {args}"));
                    }
                }
                i = j;
                continue;
            }
            "tool" => problems.push(format!("a tool result at {i} without its call before it")),
            "user" | "system" => {}
            other => problems.push(format!("unknown role {other}")),
        }
        i += 1;
    }
    problems
}

/// The invariants of an Anthropic Messages request: roles alternate, starting with the user;
/// each tool_use is answered by exactly one tool_result in the next user message (and results
/// appear nowhere else); thinking blocks carry their signatures back.
fn check_anthropic(body: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    let Some(messages) = body["messages"].as_array() else {
        return vec!["no messages".into()];
    };
    if body["system"].is_null() {
        problems.push("no system prompt".into());
    }
    if !has_tools(body) {
        problems.push("no tools".into());
    }
    let blocks = |m: &Value| m["content"].as_array().cloned().unwrap_or_default();
    for (i, m) in messages.iter().enumerate() {
        let want = if i % 2 == 0 { "user" } else { "assistant" };
        if m["role"] != want {
            problems.push(format!("message {i} is {} where {want} must be", m["role"]));
        }
        let uses: Vec<String> = blocks(m)
            .iter()
            .filter(|b| b["type"] == "tool_use")
            .filter_map(|b| b["id"].as_str().map(String::from))
            .collect();
        for b in blocks(m) {
            if b["type"] == "thinking" && b["signature"].as_str().is_none_or(str::is_empty) {
                problems.push(format!(
                    "a thinking block in message {i} lost its signature"
                ));
            }
        }
        let next_results: Vec<String> = messages
            .get(i + 1)
            .map(|n| {
                blocks(n)
                    .iter()
                    .filter(|b| b["type"] == "tool_result")
                    .filter_map(|b| b["tool_use_id"].as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default();
        if m["role"] == "assistant" && uses != next_results {
            problems.push(format!(
                "tool_use {uses:?} in message {i} answered by {next_results:?}"
            ));
        }
        let after_assistant = i > 0 && messages[i - 1]["role"] == "assistant";
        if m["role"] == "user"
            && !after_assistant
            && blocks(m).iter().any(|b| b["type"] == "tool_result")
        {
            problems.push(format!(
                "tool_result in message {i} without a tool_use before it"
            ));
        }
    }
    problems
}

/// True when the request offered tools.
pub fn has_tools(body: &Value) -> bool {
    body["tools"].as_array().is_some_and(|t| !t.is_empty())
}

/// The text of the last message of a request.
pub fn last_text(body: &Value) -> String {
    let m = body["messages"].as_array().unwrap().last().unwrap();
    m["content"]
        .as_str()
        .map(String::from)
        .unwrap_or_else(|| m["content"].to_string())
}

/// Tool results in a request, `(call id, text)`: the tool messages, and the results a model
/// that writes its calls in words is sent as text (`<tool_result>…</tool_result>`, no call id).
pub fn tool_results(body: &Value) -> Vec<(String, String)> {
    let mut results = Vec::new();
    for m in body["messages"].as_array().unwrap() {
        let content = m["content"]
            .as_str()
            .map(String::from)
            .unwrap_or_else(|| m["content"].to_string());
        if m["role"] == "tool" {
            results.push((
                m["tool_call_id"].as_str().unwrap_or("").to_string(),
                content,
            ));
        } else if m["role"] == "user" {
            let mut rest = content.as_str();
            while let Some(start) = rest.find("<tool_result") {
                let after = &rest[start..];
                let Some(open) = after.find(">\n") else { break };
                let Some(end) = after.find("\n</tool_result>") else {
                    break;
                };
                results.push((String::new(), after[open + 2..end].to_string()));
                rest = &after[end..];
            }
        }
    }
    results
}

/// A project folder, a store, an agent and a task.
pub struct World {
    pub project: tempfile::TempDir,
    pub home: tempfile::TempDir,
    pub store: Arc<Mutex<Store>>,
    pub agent: Agent,
    pub task: TaskId,
    pub server: Server,
}

impl World {
    pub async fn new(script: Script) -> World {
        World::with_config(script, AgentConfig::default()).await
    }

    pub async fn with_config(script: Script, mut config: AgentConfig) -> World {
        let project = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        let store = Store::open_in(home.path()).unwrap();
        let p = store.add_project(project.path(), None).unwrap();
        let task = store.add_task(p.id, "scripted").unwrap().id;
        let store = Arc::new(Mutex::new(store));
        config.retry = RetryPolicy {
            max_retries: 0,
            ..RetryPolicy::default()
        };
        // The user's own skills are looked for here, never in the machine's real home.
        config.user_home = Some(home.path().join("user"));
        let agent = Agent::new(store.clone(), home.path().to_path_buf(), config);
        World {
            project,
            home,
            store,
            agent,
            task,
            server: serve(script).await,
        }
    }

    /// The scripted model, described (as a hosted model or one added with `models add` is),
    /// with a large window: it gets the full prompt and every tool.
    pub fn model(&self) -> Model {
        let mut model = self.small_model();
        model.info = codewright_llm::resolve_model("test-model@scripted", &[]);
        model.info.known = true;
        model
    }

    /// The scripted model as a small local model nobody described, whose server says it runs
    /// in a 16k window: a small model's prompt and tools.
    pub fn small_model(&self) -> Model {
        let mut info = codewright_llm::resolve_model("test-model@scripted", &[]);
        info.context_window = 16_384;
        Model {
            info,
            provider: Provider::new("scripted", Protocol::OpenAiChat, &self.server.url, None),
            key: Some("sk-test".into()),
        }
    }

    pub fn new_task(&self) -> TaskId {
        let store = self.store.lock().unwrap();
        let project = store.projects().unwrap()[0].id;
        store.add_task(project, "another").unwrap().id
    }

    pub fn start(
        &self,
        task: TaskId,
        prompt: Option<&str>,
        mode: PermissionMode,
    ) -> (TaskHandle, mpsc::UnboundedReceiver<AgentEvent>) {
        self.start_with(task, prompt, mode, self.model())
    }

    /// [`World::start`] with a model of the test's own (a small window, no native tools…).
    pub fn start_with(
        &self,
        task: TaskId,
        prompt: Option<&str>,
        mode: PermissionMode,
        model: Model,
    ) -> (TaskHandle, mpsc::UnboundedReceiver<AgentEvent>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let handle = self.agent.start(
            RunRequest {
                task,
                prompt: prompt.map(String::from),
                model,
                mode,
                sandbox: false,
                compaction: None,
                this_run: Default::default(),
            },
            tx,
        );
        (handle, rx)
    }

    /// [`World::start`] of the world's task, in normal mode, with what this run does
    /// differently (a command's agent or tools).
    pub fn start_this_run(
        &self,
        prompt: &str,
        this_run: codewright_agent::ThisRun,
    ) -> (TaskHandle, mpsc::UnboundedReceiver<AgentEvent>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let handle = self.agent.start(
            RunRequest {
                task: self.task,
                prompt: Some(prompt.into()),
                model: self.model(),
                mode: PermissionMode::Normal,
                sandbox: false,
                compaction: None,
                this_run,
            },
            tx,
        );
        (handle, rx)
    }

    /// The user trusts the project: the agents, commands and skills its folder defines are used.
    pub fn trust_project(&self) {
        let store = self.store.lock().unwrap();
        let project = store.task(self.task).unwrap().project_id;
        let mut settings = store.project_settings(project).unwrap();
        settings.trusted = true;
        store.set_project_settings(project, &settings).unwrap();
    }

    pub fn path(&self, rel: &str) -> std::path::PathBuf {
        self.project.path().join(rel)
    }

    /// Writes `text` at `rel` under the user's home folder (as the agent sees it).
    pub fn user_file(&self, rel: &str, text: &str) {
        let path = self.home.path().join("user").join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    pub fn messages(&self, task: TaskId) -> Vec<codewright_protocol::MessageRecord> {
        self.store.lock().unwrap().history(task).unwrap()
    }
}
