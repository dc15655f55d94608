//! A stdio server as an rmcp transport: the child process, its stdout read with each message
//! bounded, and the MCP shutdown sequence (stdin closed, then `SIGTERM`, then `SIGKILL`).
//!
//! rmcp drops a line longer than its limit without a word, so the call waiting for that answer
//! hangs until its timeout (two minutes). Here a message longer than [`MAX_MESSAGE`] is cut off
//! before it reaches rmcp (which ignores the cut line as unparsable) and replaced by an error
//! answer to the request it answered, its id read from the message's first bytes: the call fails
//! at once and says why, memory stays bounded, and the connection goes on.

use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::Transport;
use rmcp::RoleClient;
use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, ReadBuf};
use tokio::process::{Child, ChildStdin, ChildStdout};

/// The longest message accepted from a stdio server (rmcp's own default, and its limit for one
/// event over HTTP).
pub const MAX_MESSAGE: usize = rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;
/// How long the server is given to exit after its stdin closes, and again after `SIGTERM`.
const EXIT_WAIT: Duration = Duration::from_secs(2);
/// Bytes of each message kept to find its id.
const HEAD: usize = 256;

/// A started stdio server and its connection.
pub struct StdioTransport {
    /// `None` once it has exited or been killed (it is killed when dropped).
    child: Option<Child>,
    rw: AsyncRwTransport<RoleClient, BoundedLines<ChildStdout>, ChildStdin>,
}

impl StdioTransport {
    /// Takes `child`'s stdin and stdout (both must be piped).
    pub fn new(mut child: Child) -> io::Result<StdioTransport> {
        let taken = || io::Error::other("the server's stdin or stdout is not a pipe");
        let stdin = child.stdin.take().ok_or_else(taken)?;
        let stdout = child.stdout.take().ok_or_else(taken)?;
        // rmcp's own limit is never reached: the cut-off line and the error answer are shorter.
        let rw = AsyncRwTransport::new_client(BoundedLines::new(stdout, MAX_MESSAGE), stdin)
            .with_max_line_length(MAX_MESSAGE + 64 * 1024);
        Ok(StdioTransport {
            child: Some(child),
            rw,
        })
    }

    async fn shut_down(&mut self) -> io::Result<()> {
        let Some(child) = self.child.as_mut() else {
            return Ok(());
        };
        self.rw.close().await?;
        async fn exited(child: &mut Child) -> bool {
            tokio::time::timeout(EXIT_WAIT, child.wait()).await.is_ok()
        }
        if !exited(child).await {
            if let Some(pid) = child.id().and_then(|p| i32::try_from(p).ok()) {
                // SAFETY: kill(2) with a pid this process started and has not reaped.
                unsafe { libc::kill(pid, libc::SIGTERM) };
            }
            if !exited(child).await {
                child.kill().await?;
            }
        }
        self.child = None;
        Ok(())
    }
}

impl Transport<RoleClient> for StdioTransport {
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.rw.send(item)
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.rw.receive()
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.shut_down()
    }
}

/// A stream of lines with each line limited to `limit` bytes; see the module docs.
pub(crate) struct BoundedLines<R> {
    inner: R,
    limit: usize,
    read: Box<[u8]>,
    /// Bytes ready for the reader.
    out: VecDeque<u8>,
    /// Length of the current line so far, and its first [`HEAD`] bytes.
    line: usize,
    head: Vec<u8>,
    /// The current line passed the limit: the rest of it is dropped.
    cut: bool,
}

impl<R> BoundedLines<R> {
    pub(crate) fn new(inner: R, limit: usize) -> Self {
        BoundedLines {
            inner,
            limit,
            read: vec![0; 64 * 1024].into_boxed_slice(),
            out: VecDeque::new(),
            line: 0,
            head: Vec::new(),
            cut: false,
        }
    }

    fn feed(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let end = bytes.iter().position(|&b| b == b'\n');
            let part = &bytes[..end.unwrap_or(bytes.len())];
            let room = HEAD.saturating_sub(self.head.len()).min(part.len());
            self.head.extend_from_slice(&part[..room]);
            if !self.cut {
                if self.line + part.len() > self.limit {
                    // What passed is ended here: an unfinished JSON line, which rmcp ignores.
                    self.cut = true;
                    self.out.push_back(b'\n');
                } else {
                    self.out.extend(part);
                }
            }
            self.line += part.len();
            let Some(end) = end else { break };
            if self.cut {
                self.out.extend(refusal(&self.head, self.line, self.limit));
            } else {
                self.out.push_back(b'\n');
            }
            (self.line, self.cut) = (0, false);
            self.head.clear();
            bytes = &bytes[end + 1..];
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for BoundedLines<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        while this.out.is_empty() {
            let mut read = ReadBuf::new(&mut this.read);
            ready!(Pin::new(&mut this.inner).poll_read(cx, &mut read))?;
            let n = read.filled().len();
            if n == 0 {
                return Poll::Ready(Ok(())); // end of stream
            }
            let read = std::mem::take(&mut this.read);
            this.feed(&read[..n]);
            this.read = read;
        }
        let (a, b) = this.out.as_slices();
        let chunk = if a.is_empty() { b } else { a };
        let n = chunk.len().min(buf.remaining());
        buf.put_slice(&chunk[..n]);
        this.out.drain(..n);
        Poll::Ready(Ok(()))
    }
}

/// The error answer that replaces a message of `size` bytes beginning with `head`, as one line;
/// nothing when `head` holds no request id (a notification, or an id after the content).
fn refusal(head: &[u8], size: usize, limit: usize) -> Vec<u8> {
    let Some(id) = request_id(head) else {
        return Vec::new();
    };
    let mb = |n: usize| format!("{:.0} MB", n as f64 / (1024.0 * 1024.0));
    let answer = serde_json::json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {
            "code": -32603,
            "message": format!(
                "its answer was {}, more than the {} accepted in one message; ask for less (a narrower query, a page of the results)",
                mb(size),
                mb(limit)
            ),
        },
    });
    let mut line = answer.to_string().into_bytes();
    line.push(b'\n');
    line
}

/// The value of the first `"id"` key in the first bytes of a JSON-RPC message: a number or a
/// string.
fn request_id(head: &[u8]) -> Option<serde_json::Value> {
    let at = head.windows(4).position(|w| w == b"\"id\"")? + 4;
    let rest = &head[at..];
    let rest = rest
        .trim_ascii_start()
        .strip_prefix(b":")?
        .trim_ascii_start();
    let len = match rest.first()? {
        b'"' => rest[1..].iter().position(|&b| b == b'"')? + 2,
        _ => rest
            .iter()
            .position(|b| !(b.is_ascii_digit() || *b == b'-'))
            .unwrap_or(rest.len()),
    };
    let id: serde_json::Value = serde_json::from_slice(&rest[..len]).ok()?;
    (id.is_string() || id.is_i64() || id.is_u64()).then_some(id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    async fn through(input: &[u8], limit: usize, chunk: usize) -> String {
        let (mut tx, rx) = tokio::io::duplex(1024);
        let input = input.to_vec();
        let writer = tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            for piece in input.chunks(chunk) {
                tx.write_all(piece).await.unwrap();
            }
        });
        let mut out = String::new();
        BoundedLines::new(rx, limit)
            .read_to_string(&mut out)
            .await
            .unwrap();
        writer.await.unwrap();
        out
    }

    #[tokio::test]
    async fn short_lines_pass_unchanged_however_they_are_cut() {
        let input = b"{\"id\":1}\n\n{\"a\":\"\xe4\xbd\xa0\"}\nno newline at the end";
        for chunk in [1, 3, 1000] {
            assert_eq!(
                through(input, 64, chunk).await.as_bytes(),
                input,
                "chunk {chunk}"
            );
        }
    }

    #[tokio::test]
    async fn a_long_answer_becomes_an_error_answer_to_its_request() {
        let long = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":\"{}\"}}\n{{\"id\":8}}\n",
            "x".repeat(3 * 1024 * 1024)
        );
        for chunk in [7, 4096] {
            let out = through(long.as_bytes(), 1024 * 1024, chunk).await;
            let lines: Vec<&str> = out.lines().collect();
            assert_eq!(lines.len(), 3, "cut line, answer, next message");
            assert!(lines[0].len() <= 1024 * 1024);
            let answer: serde_json::Value = serde_json::from_str(lines[1]).unwrap();
            assert_eq!(answer["id"], 7);
            assert!(
                answer["error"]["message"]
                    .as_str()
                    .unwrap()
                    .contains("its answer was 3 MB, more than the 1 MB accepted"),
                "{answer}"
            );
            assert_eq!(lines[2], "{\"id\":8}");
        }
    }

    #[test]
    fn ids_are_read_from_the_head_of_a_message() {
        assert_eq!(
            request_id(br#"{"jsonrpc":"2.0","id" : "a-1","result""#),
            Some(serde_json::json!("a-1"))
        );
        assert_eq!(
            request_id(br#"{"jsonrpc":"2.0","id":42,"#),
            Some(serde_json::json!(42))
        );
        assert_eq!(request_id(br#"{"jsonrpc":"2.0","method":"x""#), None);
        assert_eq!(request_id(br#"{"id":{"nested":1}}"#), None);
        assert!(refusal(b"{\"method\":\"notifications/message\"", 10, 5).is_empty());
    }
}
