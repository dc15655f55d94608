//! A real HTTP/1.1 server on loopback that serves recorded responses, optionally cut into random
//! chunks (chunked transfer encoding, one flush per piece), and records what it was sent.

#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// The recorded provider streams and error bodies (a copy of the workplace's
/// `shared/fixtures/sse`, with their sources in `SOURCES.tsv`), kept in the repository so the
/// tests run from any clone.
pub fn fixtures() -> PathBuf {
    PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("run by cargo"))
        .join("tests/fixtures/sse")
}

/// One response to serve.
#[derive(Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Cut the body into pieces of 1..=max bytes (seeded), each its own chunk.
    pub split: Option<(u64, usize)>,
}

impl Reply {
    pub fn sse(body: Vec<u8>) -> Reply {
        Reply {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            body,
            split: None,
        }
    }

    /// A recorded `.http` file: status line, headers, blank line, body.
    pub fn recorded(raw: &str) -> Reply {
        let raw = raw.replace("\r\n", "\n");
        let (head, body) = raw.split_once("\n\n").unwrap_or((&raw, ""));
        let mut lines = head.lines();
        let status: u16 = lines
            .next()
            .unwrap()
            .split_whitespace()
            .nth(1)
            .unwrap()
            .parse()
            .unwrap();
        let headers = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_lowercase(), v.trim().to_string()))
            .filter(|(k, _)| k != "content-length" && k != "transfer-encoding")
            .collect();
        Reply {
            status,
            headers,
            body: body.as_bytes().to_vec(),
            split: None,
        }
    }
}

/// What a client sent.
#[derive(Debug, Clone)]
pub struct Request {
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: serde_json::Value,
}

pub struct Server {
    pub base: String,
    pub requests: Arc<Mutex<Vec<Request>>>,
}

/// Serves `replies` in order (the last one repeats).
pub async fn serve(replies: Vec<Reply>) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let requests = Arc::new(Mutex::new(Vec::new()));
    let seen = requests.clone();
    tokio::spawn(async move {
        let mut n = 0;
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            sock.set_nodelay(true).unwrap();
            let reply = replies[n.min(replies.len() - 1)].clone();
            n += 1;
            let seen = seen.clone();
            tokio::spawn(async move {
                let Some(request) = read_request(&mut sock).await else {
                    return;
                };
                seen.lock().unwrap().push(request);
                let mut head = format!(
                    "HTTP/1.1 {} X\r\ntransfer-encoding: chunked\r\nconnection: close\r\n",
                    reply.status
                );
                for (k, v) in &reply.headers {
                    head.push_str(&format!("{k}: {v}\r\n"));
                }
                head.push_str("\r\n");
                if sock.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                for piece in pieces(&reply.body, reply.split) {
                    let chunk =
                        [format!("{:x}\r\n", piece.len()).as_bytes(), piece, b"\r\n"].concat();
                    if sock.write_all(&chunk).await.is_err() || sock.flush().await.is_err() {
                        return;
                    }
                    if reply.split.is_some() {
                        tokio::task::yield_now().await;
                    }
                }
                let _ = sock.write_all(b"0\r\n\r\n").await;
                let _ = sock.shutdown().await;
            });
        }
    });
    Server { base, requests }
}

pub async fn read_request(sock: &mut tokio::net::TcpStream) -> Option<Request> {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 8192];
    let header_end = loop {
        let n = sock.read(&mut tmp).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&tmp[..n]);
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..header_end]).to_string();
    let mut lines = head.lines();
    let path = lines.next()?.split_whitespace().nth(1)?.to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_lowercase(), v.trim().to_string()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    while buf.len() < header_end + length {
        let n = sock.read(&mut tmp).await.ok()?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&tmp[..n]);
    }
    let body = serde_json::from_slice(&buf[header_end..]).unwrap_or(serde_json::Value::Null);
    Some(Request {
        path,
        headers,
        body,
    })
}

/// The body cut into seeded random pieces of 1..=max bytes (or whole).
fn pieces(body: &[u8], split: Option<(u64, usize)>) -> Vec<&[u8]> {
    let Some((mut seed, max)) = split else {
        return vec![body];
    };
    let mut out = Vec::new();
    let mut at = 0;
    while at < body.len() {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let len = 1 + (seed as usize % max.max(1));
        let end = (at + len).min(body.len());
        out.push(&body[at..end]);
        at = end;
    }
    out
}
