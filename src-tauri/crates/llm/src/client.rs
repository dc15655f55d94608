//! Sends a request and streams the answer: retries with exponential backoff and jitter while
//! nothing has been received (never after), honours `retry-after`, reports each retry as a
//! [`Delta::Retry`], and stops at once when cancelled, keeping what had arrived.
//!
//! A silent provider is cut off by the provider's [`Timeouts`](crate::Timeouts): one for the
//! response head and the first byte of its body, one for each gap between chunks. A response that
//! is not an event stream (a web page, a JSON document) fails at once and is not retried.

use crate::assemble::{ended_early, Assembly, Delta};
use crate::decode::decoder;
use crate::error::{ErrorKind, LlmError};
use crate::provider::Provider;
use crate::stream::{pump, Quiet};
use bytes::Bytes;
use codewright_protocol::{Message, Part, StopReason};
use futures_util::{Stream, StreamExt};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How a call is retried.
#[derive(Debug, Clone)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// Of those, at most this many after a timeout: each costs a whole timeout of waiting, so a
    /// stuck provider is given up on after `(1 + max_timeout_retries) × timeout`.
    pub max_timeout_retries: u32,
    /// First backoff; doubles each retry (±10% jitter).
    pub base_delay: Duration,
    /// No single wait is longer than this, `retry-after` included.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 4,
            max_timeout_retries: 1,
            base_delay: Duration::from_millis(200),
            max_delay: Duration::from_secs(60),
        }
    }
}

/// A call that did not end in a whole message: why, and what had arrived (kept for the user,
/// never re-sent as if complete).
#[derive(Debug)]
pub struct StreamFailure {
    pub error: LlmError,
    pub partial: Option<Message>,
}

/// The most one answer's event stream may send. The longest real answers (128 k tokens of output,
/// a few hundred bytes of framing each) stay far below it; a server that sends without ever
/// finishing is stopped here rather than filling memory.
pub const MAX_ANSWER_BYTES: u64 = 256 * 1024 * 1024;

/// The longest an answer may go on without adding anything to itself: only keep-alive comments or
/// events that carry nothing (pings). Proxies send those while the model behind them thinks, for
/// minutes at most; one that sends them for longer is stuck, and without this limit (the bytes
/// keep the idle timeout from running out) the run would wait forever. Never shorter than the
/// provider's own timeouts.
pub const MAX_KEEP_ALIVE_ONLY: Duration = Duration::from_secs(10 * 60);

/// How long a connection to a local server is kept idle for the next request. llama.cpp's
/// server closes one idle for 5 s (`Keep-Alive: timeout=5`); a request sent on it as it closes
/// is lost ("connection closed before message completed", seen between two requests of a small
/// model's run) and sent again. A new connection on this machine costs a fraction of a
/// millisecond; a hosted provider's (TLS) is kept as long as the pool keeps it.
pub const LOCAL_IDLE: Duration = Duration::from_secs(1);

/// An HTTP client for providers. Cheap to clone; reuse it for connection pooling.
#[derive(Debug, Clone)]
pub struct Client {
    http: reqwest::Client,
    /// For a server on this machine or the local network: its idle connections are let go
    /// after [`LOCAL_IDLE`] (see there).
    local_http: reqwest::Client,
    retry: RetryPolicy,
    max_answer_bytes: u64,
    max_keep_alive_only: Duration,
    /// Answers in process instead of a server (tests; see [`crate::fake`]).
    fake: Option<crate::fake::FakeModel>,
}

impl Client {
    pub fn new(retry: RetryPolicy) -> Client {
        // No overall timeout (answers can stream for minutes) and no read timeout: silence is
        // timed per provider in `attempt`, with errors that say which wait ran out.
        let builder = || reqwest::Client::builder().connect_timeout(Duration::from_secs(15));
        let http = builder().build().expect("the HTTP client builds");
        let local_http = builder()
            .pool_idle_timeout(LOCAL_IDLE)
            .build()
            .expect("the HTTP client builds");
        Client {
            http,
            local_http,
            retry,
            max_answer_bytes: MAX_ANSWER_BYTES,
            max_keep_alive_only: MAX_KEEP_ALIVE_ONLY,
            fake: None,
        }
    }

    /// The client with every request answered by `fake`, in process (tests that drive a run
    /// step by step; see [`crate::fake`]).
    pub fn with_fake(mut self, fake: crate::fake::FakeModel) -> Client {
        self.fake = Some(fake);
        self
    }

    /// The client with a different limit on one answer's size (see [`MAX_ANSWER_BYTES`]).
    pub fn with_max_answer_bytes(mut self, bytes: u64) -> Client {
        self.max_answer_bytes = bytes;
        self
    }

    /// The client with a different limit on keep-alives alone (see [`MAX_KEEP_ALIVE_ONLY`]).
    pub fn with_max_keep_alive_only(mut self, limit: Duration) -> Client {
        self.max_keep_alive_only = limit;
        self
    }

    /// Streams `body` to `provider` for `model`, calling `on_delta` with every increment and the
    /// parts received so far (to show, and to persist while streaming), and with a
    /// [`Delta::Retry`] before each retry.
    pub async fn stream(
        &self,
        provider: &Provider,
        key: Option<&str>,
        model: &str,
        body: &serde_json::Value,
        cancel: &CancellationToken,
        on_delta: &mut (dyn FnMut(&Delta, &[Part]) + Send),
    ) -> Result<Message, StreamFailure> {
        let mut attempt = 0;
        let mut timeout_retries = 0;
        loop {
            let mut out = Assembly::default();
            let result = tokio::select! {
                biased;
                _ = cancel.cancelled() => Err(LlmError::new(ErrorKind::Cancelled, "stopped")),
                r = self.attempt(provider, key, model, body, &mut out, on_delta) => r,
            };
            let whole = match &result {
                Ok(()) => out.is_whole(),
                // The stop reason had arrived and the server then kept the connection open
                // without a terminal event: the answer is whole (at most its usage is missing).
                Err(e) => e.kind == ErrorKind::Timeout && out.is_whole(),
            };
            if whole {
                return out.finish(model).map_err(|error| StreamFailure {
                    error,
                    partial: None,
                });
            }
            let error = match result {
                Ok(()) => ended_early(&provider.name),
                Err(e) => e,
            };
            let received = out.has_content();
            // A wait longer than the policy allows is not worth blocking the user for.
            let too_long = error.retry_after.is_some_and(|w| w > self.retry.max_delay);
            let timeouts_spent = error.kind == ErrorKind::Timeout
                && timeout_retries >= self.retry.max_timeout_retries;
            if error.kind == ErrorKind::Cancelled
                || received
                || too_long
                || timeouts_spent
                || !(error.is_retryable() || error.kind == ErrorKind::StreamEndedEarly)
                || attempt >= self.retry.max_retries
            {
                let stop = if error.kind == ErrorKind::Cancelled {
                    StopReason::Aborted
                } else {
                    StopReason::Error
                };
                let partial = received.then(|| out.into_partial(model, stop));
                return Err(StreamFailure { error, partial });
            }
            let wait = self.backoff(attempt, error.retry_after);
            attempt += 1;
            if error.kind == ErrorKind::Timeout {
                timeout_retries += 1;
            }
            on_delta(
                &Delta::Retry {
                    attempt,
                    max_retries: self.retry.max_retries,
                    wait,
                    error,
                },
                &[],
            );
            tokio::select! {
                _ = cancel.cancelled() => {
                    return Err(StreamFailure { error: LlmError::new(ErrorKind::Cancelled, "stopped"), partial: None });
                }
                _ = tokio::time::sleep(wait) => {}
            }
        }
    }

    async fn attempt(
        &self,
        provider: &Provider,
        key: Option<&str>,
        model: &str,
        body: &serde_json::Value,
        out: &mut Assembly,
        on_delta: &mut (dyn FnMut(&Delta, &[Part]) + Send),
    ) -> Result<(), LlmError> {
        if let Some(fake) = &self.fake {
            let answer = futures_util::stream::unfold(fake.ask(model, body), |mut answer| async {
                answer.recv().await.map(|piece| (piece, answer))
            });
            let mut decoder = decoder(provider.protocol, &provider.name);
            return pump(answer, decoder.as_mut(), out, on_delta, None).await;
        }
        let url = provider.stream_url(model);
        let shown = display_url(&url);
        let limits = provider.timeouts();
        // The response head and the first byte of the body must both come within `first_byte`
        // of sending.
        let first_byte_by = tokio::time::Instant::now() + limits.first_byte;
        let first_byte_timeout =
            || LlmError::timeout(&provider.name, &shown, true, limits.first_byte);
        let idle_timeout = || LlmError::timeout(&provider.name, &shown, false, limits.idle);
        let http = match provider.is_local() {
            true => &self.local_http,
            false => &self.http,
        };
        let mut request = http
            .post(&url)
            .json(body)
            .header("accept", "text/event-stream");
        for (name, value) in provider.auth_headers(key) {
            request = request.header(name, value);
        }
        let response = tokio::time::timeout_at(first_byte_by, request.send())
            .await
            .map_err(|_| first_byte_timeout())?
            .map_err(|e| network_error(&provider.name, &shown, &e))?;
        let status = response.status().as_u16();
        if !(200..300).contains(&status) {
            let retry_after = response
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            // An error body that never finishes, or never ends, does not hold the call: its
            // first 64 KB say enough.
            let mut chunks = Box::pin(response.bytes_stream());
            let text = read_rest(Vec::new(), &mut chunks, limits.idle).await;
            // Some servers echo the key back in their error; it never reaches a message.
            let text = redact(&text, key);
            return Err(LlmError::from_http(
                &provider.name,
                &shown,
                status,
                retry_after.as_deref(),
                &text,
            ));
        }
        let content_type = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_ascii_lowercase();
        if content_type.starts_with("text/html") || content_type.starts_with("application/xhtml") {
            let mut chunks = Box::pin(response.bytes_stream());
            let page = read_rest(Vec::new(), &mut chunks, limits.idle).await;
            return Err(LlmError::web_page(
                &provider.name,
                &shown,
                page_title(page.as_bytes()).as_deref(),
            ));
        }

        // The body's first bytes, within the first-byte deadline (then each further chunk within
        // the idle timeout), until one that is not white space says what the body is.
        let mut chunks = Box::pin(response.bytes_stream());
        let mut head = Vec::new();
        let mut ended = false;
        loop {
            let next = if head.is_empty() {
                tokio::time::timeout_at(first_byte_by, chunks.next())
                    .await
                    .map_err(|_| first_byte_timeout())?
            } else {
                tokio::time::timeout(limits.idle, chunks.next())
                    .await
                    .map_err(|_| idle_timeout())?
            };
            match next {
                None => {
                    ended = true;
                    break;
                }
                Some(Err(e)) => return Err(lost_mid_stream(&provider.name, &shown, &e)),
                Some(Ok(chunk)) => {
                    head.extend_from_slice(&chunk);
                    // (Endless white space is left to the event stream, which skips it.)
                    if first_sign(&head).is_some() || head.len() >= 64 * 1024 {
                        break;
                    }
                }
            }
        }
        match first_sign(&head) {
            // A web page: a wrong base URL, a Wi-Fi login page, a proxy.
            Some(b'<') => {
                return Err(LlmError::web_page(
                    &provider.name,
                    &shown,
                    page_title(&head).as_deref(),
                ))
            }
            // One JSON document (SSE lines start with a field name or `:`, never a brace): an
            // error some servers send with status 200, or a server that does not stream.
            Some(b'{' | b'[') => {
                let text = redact(&read_rest(head, &mut chunks, limits.idle).await, key);
                return Err(json_answer(&provider.name, &shown, &text));
            }
            None if ended => return Err(LlmError::empty_stream(&provider.name, &shown)),
            _ => {}
        }
        let provider_name = provider.name.clone();
        let after = self
            .max_keep_alive_only
            .max(limits.first_byte)
            .max(limits.idle);
        let quiet = Quiet {
            after,
            error: LlmError::keep_alive_only(&provider.name, &shown, after),
        };
        let rest = idle_guard(chunks, limits.idle, move |e| match e {
            Some(e) => lost_mid_stream(&provider_name, &shown, &e),
            None => LlmError::timeout(&provider_name, &shown, false, limits.idle),
        });
        let body = futures_util::stream::iter([Ok::<_, LlmError>(Bytes::from(head))]).chain(rest);
        let body = size_guard(body, self.max_answer_bytes, &provider.name);
        let mut decoder = decoder(provider.protocol, &provider.name);
        pump(body, decoder.as_mut(), out, on_delta, Some(quiet)).await
    }

    fn backoff(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        let exp = self
            .retry
            .base_delay
            .saturating_mul(2u32.saturating_pow(attempt));
        let jitter = 0.9 + fastrand::f64() * 0.2; // ±10%
        retry_after
            .unwrap_or(exp.mul_f64(jitter))
            .min(self.retry.max_delay)
    }
}

/// `body` with each gap between chunks limited to `idle`. A chunk that does not come in time, or
/// a failed read, ends the stream with `error(None)` or `error(Some(e))`. The timer lives in the
/// stream, not in whoever polls it, so polling with shorter timeouts (the idle ticks) does not
/// restart it.
fn idle_guard<S>(
    body: std::pin::Pin<Box<S>>,
    idle: Duration,
    error: impl Fn(Option<reqwest::Error>) -> LlmError + Send + Sync + 'static,
) -> impl Stream<Item = Result<Bytes, LlmError>>
where
    S: Stream<Item = reqwest::Result<Bytes>> + ?Sized,
{
    let error = std::sync::Arc::new(error);
    futures_util::stream::unfold(Some(body), move |body| {
        let error = error.clone();
        async move {
            let mut body = body?;
            match tokio::time::timeout(idle, body.next()).await {
                Ok(Some(Ok(chunk))) => Some((Ok(chunk), Some(body))),
                Ok(None) => None,
                Ok(Some(Err(e))) => Some((Err((*error)(Some(e))), None)),
                Err(_silent) => Some((Err((*error)(None)), None)),
            }
        }
    })
}

/// `body`, failing once it has sent more than `limit` bytes (the reader stops at that error).
fn size_guard(
    body: impl Stream<Item = Result<Bytes, LlmError>>,
    limit: u64,
    provider: &str,
) -> impl Stream<Item = Result<Bytes, LlmError>> {
    let provider = provider.to_string();
    let mut sent = 0u64;
    body.map(move |chunk| {
        let chunk = chunk?;
        sent += chunk.len() as u64;
        if sent > limit {
            return Err(LlmError::new(
                ErrorKind::BadResponse,
                format!(
                    "{provider} sent more than {} for one answer without finishing it, so it was stopped; what arrived is kept. The server is likely stuck in a loop: try again.",
                    human_size(limit)
                ),
            ));
        }
        Ok(chunk)
    })
}

/// `256 MB`, `1 MB`, `512 KB`.
fn human_size(bytes: u64) -> String {
    if bytes >= 1024 * 1024 {
        format!("{} MB", bytes / (1024 * 1024))
    } else {
        format!("{} KB", bytes.div_ceil(1024))
    }
}

/// The first byte of `head` that is not white space (or a byte-order mark).
fn first_sign(head: &[u8]) -> Option<u8> {
    let head = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(head);
    head.iter().copied().find(|b| !b.is_ascii_whitespace())
}

/// The `<title>` of a web page's first bytes, if they hold it.
fn page_title(head: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(&head[..head.len().min(16 * 1024)]);
    let lower = text.to_ascii_lowercase();
    let open = lower.find("<title")?;
    let start = open + lower[open..].find('>')? + 1;
    let end = start + lower[start..].find("</title")?;
    let title = text[start..end]
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    (!title.is_empty()).then_some(title)
}

/// The rest of a short body after `head` (at most 64 KB, each chunk within `idle`), as text.
async fn read_rest<S>(
    mut head: Vec<u8>,
    chunks: &mut std::pin::Pin<Box<S>>,
    idle: Duration,
) -> String
where
    S: Stream<Item = reqwest::Result<Bytes>> + ?Sized,
{
    while head.len() < 64 * 1024 {
        match tokio::time::timeout(idle, chunks.next()).await {
            Ok(Some(Ok(chunk))) => head.extend_from_slice(&chunk),
            _ => break,
        }
    }
    String::from_utf8_lossy(&head).into_owned()
}

/// The error for a JSON document where an event stream was expected: the provider's own error
/// when it is one (classified like an error event), else a bad response.
fn json_answer(provider: &str, url: &str, text: &str) -> LlmError {
    let value: Option<serde_json::Value> = serde_json::from_str(text).ok();
    // Gemini sends a list of responses; its error is the first one's.
    let first = match &value {
        Some(serde_json::Value::Array(items)) => items.first(),
        other => other.as_ref(),
    };
    match first {
        Some(v) if v.get("error").is_some_and(|e| !e.is_null()) => {
            LlmError::from_stream_event(provider, &v.to_string())
        }
        _ => LlmError::not_a_stream(provider, url, text),
    }
}

/// `url` without credentials: no `user:password@`, no query string (where some put `key=`).
fn display_url(url: &str) -> String {
    let without_query = url.split('?').next().unwrap_or(url);
    let Some((scheme, rest)) = without_query.split_once("://") else {
        return without_query.to_string();
    };
    let authority = &rest[..rest.find('/').unwrap_or(rest.len())];
    match authority.rfind('@') {
        Some(at) => format!("{scheme}://{}", &rest[at + 1..]),
        None => without_query.to_string(),
    }
}

/// `text` with every occurrence of `key` replaced.
fn redact(text: &str, key: Option<&str>) -> String {
    match key {
        Some(key) if key.len() >= 8 => text.replace(key, "[redacted]"),
        _ => text.to_string(),
    }
}

/// The innermost cause of `e` (reqwest's own text is generic: "error decoding response body").
fn root_cause(e: &reqwest::Error) -> String {
    let mut source = String::new();
    let mut cause: Option<&dyn std::error::Error> = std::error::Error::source(e);
    while let Some(c) = cause {
        source = c.to_string();
        cause = c.source();
    }
    source
}

/// The error for a connection that failed while the body was arriving.
fn lost_mid_stream(provider: &str, url: &str, e: &reqwest::Error) -> LlmError {
    LlmError::new(
        ErrorKind::Network,
        format!(
            "lost the connection to {provider} at {url} while the response was streaming ({}); try again.",
            match root_cause(e) {
                cause if cause.is_empty() => "it closed".to_string(),
                cause => cause,
            }
        ),
    )
}

fn network_error(provider: &str, url: &str, e: &reqwest::Error) -> LlmError {
    let what = if e.is_connect() {
        "could not connect to"
    } else if e.is_timeout() {
        "timed out talking to"
    } else {
        "lost the connection to"
    };
    // reqwest's error text carries the URL but never headers; the URL is shown without
    // credentials or query.
    let source = root_cause(e);
    LlmError::new(
        ErrorKind::Network,
        format!("{what} {provider} at {url} ({source}). Check the network and the base URL of {provider}."),
    )
}

#[cfg(test)]
mod tests {
    use super::{display_url, redact};

    #[test]
    fn urls_and_bodies_in_messages_carry_no_credentials() {
        assert_eq!(
            display_url("https://user:sk-123@host.example/v1/x?key=abc"),
            "https://host.example/v1/x"
        );
        assert_eq!(
            display_url("http://localhost:8080/v1/chat/completions"),
            "http://localhost:8080/v1/chat/completions"
        );
        assert_eq!(
            redact("bad key sk-abcdef123456 given", Some("sk-abcdef123456")),
            "bad key [redacted] given"
        );
    }
}
