//! A scripted model provider for the end-to-end tests: a local HTTP server speaking OpenAI Chat
//! Completions (streamed), answering each request as the test's script says and keeping every
//! request body, so a test can check what reached the model.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One answer.
pub enum Reply {
    /// Text, streamed a few words at a time.
    Text(String),
    /// Tool calls: (tool name, arguments).
    Calls(Vec<(&'static str, Value)>),
    /// Text, then tool calls.
    TextThenCalls(String, Vec<(&'static str, Value)>),
    /// Text streamed slowly (one word every `ms`).
    Paced(String, u64),
    /// Some text, then nothing more until the client goes away (for stop mid-stream).
    Hang(String),
    /// Some text, then silence, not even a keep-alive, until the client goes away (its idle
    /// timeout).
    Stall(String),
    /// Some text, then a chunk that is not JSON, and the end of the stream.
    Malformed(String),
    /// This whole HTTP answer instead of a stream: status line, headers, body.
    Raw(String),
}

pub type Script = Box<dyn Fn(usize, &Value) -> Reply + Send + Sync>;

pub struct Provider {
    pub port: u16,
    requests: Arc<Mutex<Vec<Value>>>,
    /// The only key accepted, once set; any other gets a 401 as OpenAI words it.
    key: Arc<Mutex<Option<String>>>,
}

impl Provider {
    pub fn start(script: Script) -> Provider {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let key = Arc::new(Mutex::new(None));
        let script = Arc::new(script);
        let (seen, accepted) = (requests.clone(), key.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (seen, script, accepted) = (seen.clone(), script.clone(), accepted.clone());
                std::thread::spawn(move || {
                    let _ = serve(stream, &seen, &script, &accepted);
                });
            }
        });
        Provider {
            port,
            requests,
            key,
        }
    }

    /// From now on, accepts only `key` (as `Authorization: Bearer KEY`).
    pub fn require_key(&self, key: &str) {
        *self.key.lock().unwrap() = Some(key.to_string());
    }

    /// Every request body so far, in order.
    pub fn requests(&self) -> Vec<Value> {
        self.requests.lock().unwrap().clone()
    }

    /// The OpenAI-compatible base URL.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }
}

fn serve(
    stream: TcpStream,
    seen: &Mutex<Vec<Value>>,
    script: &Script,
    accepted: &Mutex<Option<String>>,
) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut length = 0usize;
    let mut authorization = String::new();
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    // Only chat completions are scripted: what else the app asks (a local server's window:
    // `/props`, `/api/ps`…) is not found here, as on a plain OpenAI-compatible server.
    let chat = request_line.starts_with("POST ") && request_line.contains("/chat/completions ");
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let lower = line.to_ascii_lowercase();
        if let Some(v) = lower.strip_prefix("content-length:") {
            length = v.trim().parse().unwrap_or(0);
        }
        if lower.starts_with("authorization:") {
            authorization = line["authorization:".len()..].trim().to_string();
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    if !chat {
        let mut out = stream;
        out.write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")?;
        return out.flush();
    }
    let refused = accepted
        .lock()
        .unwrap()
        .as_ref()
        .is_some_and(|key| authorization != format!("Bearer {key}"));
    if refused {
        let error = json!({"error": {"message": "Incorrect API key provided.", "type": "invalid_request_error", "code": "invalid_api_key"}}).to_string();
        let mut out = stream;
        out.write_all(format!("HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{error}", error.len()).as_bytes())?;
        return out.flush();
    }
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let index = {
        let mut all = seen.lock().unwrap();
        all.push(body.clone());
        all.len() - 1
    };
    let reply = script(index, &body);
    let mut out = stream;
    if let Reply::Raw(answer) = &reply {
        out.write_all(answer.as_bytes())?;
        return out.flush();
    }
    out.write_all(
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n",
    )?;
    let send = |out: &mut TcpStream, delta: Value, finish: Option<&str>| {
        let chunk = json!({"id": "chatcmpl-e2e", "object": "chat.completion.chunk", "model": "e2e",
                           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        out.write_all(format!("data: {chunk}\n\n").as_bytes())
            .and_then(|()| out.flush())
    };
    send(&mut out, json!({"role": "assistant", "content": ""}), None)?;
    let finish = match reply {
        Reply::Text(text) => {
            for piece in text.split_inclusive(' ') {
                send(&mut out, json!({"content": piece}), None)?;
            }
            "stop"
        }
        Reply::Paced(text, ms) => {
            for piece in text.split_inclusive(' ') {
                std::thread::sleep(Duration::from_millis(ms));
                send(&mut out, json!({"content": piece}), None)?;
            }
            "stop"
        }
        Reply::Hang(text) => {
            send(&mut out, json!({"content": text}), None)?;
            // Until the client hangs up (a write fails) or a minute passes.
            for _ in 0..600 {
                std::thread::sleep(Duration::from_millis(100));
                if out.write_all(b": keep-alive\n\n").is_err() {
                    return Ok(());
                }
            }
            return Ok(());
        }
        Reply::Stall(text) => {
            send(&mut out, json!({"content": text}), None)?;
            // The client hanging up ends a read with 0 bytes (or an error).
            out.set_read_timeout(Some(Duration::from_millis(100)))?;
            for _ in 0..600 {
                match out.peek(&mut [0]) {
                    Ok(0) => return Ok(()),
                    Err(e)
                        if e.kind() != std::io::ErrorKind::WouldBlock
                            && e.kind() != std::io::ErrorKind::TimedOut =>
                    {
                        return Ok(())
                    }
                    _ => {}
                }
            }
            return Ok(());
        }
        Reply::Malformed(text) => {
            send(&mut out, json!({"content": text}), None)?;
            out.write_all(
                b"data: {\"choices\": [{\"delta\": {\"content\": \"cut\n\ndata: [DONE]\n\n",
            )?;
            return out.flush();
        }
        Reply::Raw(_) => unreachable!("answered above"),
        Reply::Calls(calls) => send_calls(&mut out, index, &calls, send)?,
        Reply::TextThenCalls(text, calls) => {
            for piece in text.split_inclusive(' ') {
                send(&mut out, json!({"content": piece}), None)?;
            }
            send_calls(&mut out, index, &calls, send)?
        }
    };
    send(&mut out, json!({}), Some(finish))?;
    let usage = json!({"id": "chatcmpl-e2e", "object": "chat.completion.chunk", "choices": [],
                       "usage": {"prompt_tokens": 1200, "completion_tokens": 30}});
    out.write_all(format!("data: {usage}\n\ndata: [DONE]\n\n").as_bytes())?;
    out.flush()
}

/// Streams `calls` as the answer to request `index`; the finish reason to end it with.
fn send_calls(
    out: &mut TcpStream,
    index: usize,
    calls: &[(&'static str, Value)],
    send: impl Fn(&mut TcpStream, Value, Option<&str>) -> std::io::Result<()>,
) -> std::io::Result<&'static str> {
    for (n, (name, args)) in calls.iter().enumerate() {
        let id = format!("call_{index}_{n}");
        send(
            out,
            json!({"tool_calls": [{"index": n, "id": id, "type": "function",
                                   "function": {"name": name, "arguments": args.to_string()}}]}),
            None,
        )?;
    }
    Ok("tool_calls")
}
