//! Typed, actionable provider errors. Every message says what happened and what to do; none ever
//! contains an API key.

use std::time::Duration;

/// A provider or model setting that cannot be used (typed in Settings, on the command line, or
/// read from the store), each message saying what to write instead.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SettingError {
    #[error("unknown protocol '{0}': use openai, openai-responses, anthropic or gemini")]
    Protocol(String),
    #[error("unknown model role '{0}': use main, small or compaction")]
    Role(String),
    #[error(
        "'{0}' is not a model id: write MODEL@PROVIDER, for example claude-sonnet-4-5@anthropic"
    )]
    ModelId(String),
    #[error("'{0}' is not a web address: it must start with http:// or https://, e.g. http://localhost:8000/v1")]
    BaseUrl(String),
    #[error("'{0}' is not a number of seconds")]
    NotSeconds(String),
    #[error("a timeout must be more than 0 and at most 86400 seconds, not {0}")]
    Timeout(f64),
}

impl SettingError {
    /// A protocol, role or model id that names nothing is an unknown model; a malformed address
    /// or timeout is bad input.
    pub fn kind(&self) -> codewright_protocol::ErrorKind {
        use codewright_protocol::ErrorKind as Kind;
        match self {
            SettingError::Protocol(_) | SettingError::Role(_) | SettingError::ModelId(_) => {
                Kind::UnknownModel
            }
            SettingError::BaseUrl(_) | SettingError::NotSeconds(_) | SettingError::Timeout(_) => {
                Kind::BadInput
            }
        }
    }
}

/// What kind of failure a provider call met.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The key was rejected (401/403).
    Auth,
    /// Too many requests (429); `retry_after` says when to come back if the provider said.
    RateLimit,
    /// The provider is overloaded or failing (5xx, Anthropic 529 `overloaded_error`).
    Overloaded,
    /// The conversation does not fit the model's context window (any provider's wording).
    ContextOverflow,
    /// The provider refused the request as malformed; its message says why.
    InvalidRequest,
    /// The URL does not exist (404): usually a wrong base URL.
    NotFound,
    /// Could not connect, or the connection dropped.
    Network,
    /// The provider sent nothing for longer than the provider's timeout: before the first byte of
    /// the response, or between two chunks of it (see [`Timeouts`](crate::Timeouts)); or nothing
    /// but keep-alives for longer than [`MAX_KEEP_ALIVE_ONLY`](crate::MAX_KEEP_ALIVE_ONLY).
    Timeout,
    /// The answer is not what the protocol says: a web page instead of an event stream (a wrong
    /// base URL, a Wi-Fi login page, a proxy), a JSON document where events were expected, or an
    /// event that is not valid JSON. Trying again the same way does not help.
    BadResponse,
    /// The stream stopped before the response was complete.
    StreamEndedEarly,
    /// A success status and then a body with no event at all. Servers do this on purpose (a
    /// local server given a prompt longer than its window), so the same request is not retried.
    EmptyStream,
    /// Any other error the provider reported (billing, moderation, …).
    Provider,
    /// Stopped by the user.
    Cancelled,
}

/// The kind a front end sees for a provider's error: the engine's one vocabulary.
impl From<ErrorKind> for codewright_protocol::ErrorKind {
    fn from(kind: ErrorKind) -> codewright_protocol::ErrorKind {
        use codewright_protocol::ErrorKind as Seen;
        match kind {
            ErrorKind::Auth => Seen::Auth,
            ErrorKind::RateLimit => Seen::RateLimit,
            ErrorKind::Overloaded => Seen::Overloaded,
            ErrorKind::ContextOverflow => Seen::ContextOverflow,
            ErrorKind::InvalidRequest => Seen::InvalidRequest,
            ErrorKind::NotFound => Seen::NotFound,
            ErrorKind::Network => Seen::Network,
            ErrorKind::Timeout => Seen::Timeout,
            ErrorKind::BadResponse => Seen::BadResponse,
            ErrorKind::StreamEndedEarly | ErrorKind::EmptyStream => Seen::StreamEndedEarly,
            ErrorKind::Provider => Seen::Provider,
            // A stop is not an error; a front end never shows it as one.
            ErrorKind::Cancelled => Seen::Setup,
        }
    }
}

/// A failed provider call.
#[derive(Debug, Clone, PartialEq)]
pub struct LlmError {
    pub kind: ErrorKind,
    /// Shown to the user as is.
    pub message: String,
    /// HTTP status, when there was one.
    pub status: Option<u16>,
    /// How long the provider asked us to wait.
    pub retry_after: Option<Duration>,
}

impl std::fmt::Display for LlmError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for LlmError {}

impl LlmError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> LlmError {
        LlmError {
            kind,
            message: message.into(),
            status: None,
            retry_after: None,
        }
    }

    /// Whether trying again (before anything was streamed) may succeed. A [`ErrorKind::Timeout`]
    /// may, but each costs a whole timeout: [`RetryPolicy::max_timeout_retries`](crate::RetryPolicy)
    /// bounds those separately.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self.kind,
            ErrorKind::RateLimit | ErrorKind::Overloaded | ErrorKind::Network | ErrorKind::Timeout
        )
    }

    /// The provider sent nothing for `waited`: before the first byte of the response
    /// (`first_byte`), or between two chunks of it.
    pub fn timeout(provider: &str, url: &str, first_byte: bool, waited: Duration) -> LlmError {
        let secs = seconds(waited);
        let message = if first_byte {
            format!(
                "{provider} sent nothing for {secs} after the request was sent (first-byte timeout; {url}). \
                 The server may be stuck or overloaded: try again. If the model is only slow to start \
                 (a large local model loading, a long prompt being read), raise the first-byte timeout \
                 of {provider}."
            )
        } else {
            format!(
                "{provider} sent nothing for {secs} in the middle of the response (idle timeout; {url}). \
                 The connection or the server is stuck: try again. If the model pauses for longer \
                 (long silent reasoning), raise the idle timeout of {provider}."
            )
        };
        LlmError::new(ErrorKind::Timeout, message)
    }

    /// A stream that sent only keep-alives (comments, pings) for `waited`: bytes, but none of the
    /// answer. A timeout: what the server sent kept the idle timeout from running out.
    pub fn keep_alive_only(provider: &str, url: &str, waited: Duration) -> LlmError {
        LlmError::new(
            ErrorKind::Timeout,
            format!(
                "{provider} kept the connection open for {} without sending any more of the answer, \
                 only keep-alive messages ({url}). The server, or the model behind it, is stuck: try again.",
                seconds(waited)
            ),
        )
    }

    /// A response that is a web page, not an event stream; `title` is the page's, if seen.
    pub fn web_page(provider: &str, url: &str, title: Option<&str>) -> LlmError {
        let title = title
            .map(|t| format!(" (\"{}\")", shorten(t, 80)))
            .unwrap_or_default();
        LlmError::new(
            ErrorKind::BadResponse,
            format!(
                "the server answered with a web page{title}, not an event stream — check the base URL \
                 of {provider} ({url}). If the URL is right, something else answered for it: a Wi-Fi \
                 login page or a proxy; open the URL in a browser to see the page."
            ),
        )
    }

    /// A success status and then an empty body: no event, no error.
    pub fn empty_stream(provider: &str, url: &str) -> LlmError {
        LlmError::new(
            ErrorKind::EmptyStream,
            format!(
                "{provider} ended its response without sending anything ({url}: HTTP 200, an empty \
                 stream), so there is no answer. Local servers do this when the request is longer \
                 than the model's context window: compact the conversation or start a new task, or \
                 load the model with a larger context."
            ),
        )
    }

    /// A response that is one JSON document, not an event stream, and not an error the provider
    /// reported (those are classified by [`LlmError::from_stream_event`]).
    pub fn not_a_stream(provider: &str, url: &str, body: &str) -> LlmError {
        LlmError::new(
            ErrorKind::BadResponse,
            format!(
                "{provider} answered with a JSON document, not an event stream ({url}): {}. Check the \
                 base URL of {provider}, and that the server supports streaming.",
                shorten(body.trim(), 200)
            ),
        )
    }

    /// An event whose data is not the JSON the protocol promises (a cut or corrupted stream).
    pub fn malformed_event(provider: &str, data: &str) -> LlmError {
        LlmError::new(
            ErrorKind::BadResponse,
            format!(
                "{provider} sent a malformed event: {}. The answer is incomplete; try again (if it \
                 keeps happening, the server or a proxy in between is corrupting the stream).",
                shorten(data.trim(), 200)
            ),
        )
    }

    /// The error for an HTTP response that was not a success.
    pub fn from_http(
        provider: &str,
        url: &str,
        status: u16,
        retry_after: Option<&str>,
        body: &str,
    ) -> LlmError {
        let detail = provider_message(body);
        let code = error_code(body);
        let (kind, message) = match status {
            401 | 403 => (
                ErrorKind::Auth,
                format!(
                    "{provider} rejected the API key (HTTP {status}: {detail}). Check the key for {provider} \
                     (in the system keyring, or its environment variable)."
                ),
            ),
            404 => (
                ErrorKind::NotFound,
                format!("{url} answered 404 Not Found ({detail}). Check the base URL of {provider}, or the model name."),
            ),
            429 if code.as_deref().is_some_and(|c| c.contains("insufficient_quota")) => (
                ErrorKind::Provider,
                format!("{provider} says the account has no quota left: {detail}"),
            ),
            429 => (ErrorKind::RateLimit, format!("{provider} is rate-limiting requests (HTTP 429): {detail}")),
            // A server that refuses the request's shape with a 500 (llama-cpp-python's pydantic
            // "N validation errors") would refuse it again: not worth a retry.
            500 if is_validation_error(&detail) => (
                ErrorKind::InvalidRequest,
                format!(
                    "{provider} refused the request as malformed (HTTP 500: {}). Trying again would \
                     not help: this server reads the request differently from Codewright. Try another \
                     model or server, and please report it with the server's name and version.",
                    first_lines(&detail, 2, 240)
                ),
            ),
            500 | 502 | 503 | 504 | 529 => (
                ErrorKind::Overloaded,
                format!("{provider} is overloaded or failing (HTTP {status}): {detail}"),
            ),
            _ if is_context_overflow(&detail) || code.as_deref().is_some_and(is_context_overflow) => (
                ErrorKind::ContextOverflow,
                format!("the conversation is too long for the model's context window ({provider}: {detail})"),
            ),
            400..=499 => (ErrorKind::InvalidRequest, format!("{provider} refused the request (HTTP {status}): {detail}")),
            _ => (ErrorKind::Provider, format!("{provider} answered HTTP {status}: {detail}")),
        };
        LlmError {
            kind,
            message,
            status: Some(status),
            retry_after: retry_after.and_then(parse_retry_after),
        }
    }

    /// The error for an error event inside a stream (Groq `event: error`, Responses `error` /
    /// `response.failed`, Anthropic `error`). `body` is the event's JSON.
    pub fn from_stream_event(provider: &str, body: &str) -> LlmError {
        let detail = provider_message(body);
        let code = error_code(body).unwrap_or_default();
        let (kind, what) = if is_context_overflow(&detail) || is_context_overflow(&code) {
            (
                ErrorKind::ContextOverflow,
                "the conversation is too long for the model's context window",
            )
        } else if code.contains("overloaded")
            || code.contains("server_error")
            || code.contains("api_error")
            || code.contains("unavailable")
            || ["500", "502", "503", "504", "529"]
                .iter()
                .any(|c| code.split(' ').any(|w| w == *c))
        {
            (ErrorKind::Overloaded, "the provider is overloaded")
        } else if code.contains("rate_limit")
            || code.contains("resource_exhausted")
            || code.split(' ').any(|w| w == "429")
        {
            (
                ErrorKind::RateLimit,
                "the provider is rate-limiting requests",
            )
        } else if code.contains("authentication")
            || code.contains("permission")
            || code.contains("unauthenticated")
        {
            (ErrorKind::Auth, "the API key was rejected")
        } else {
            (
                ErrorKind::Provider,
                "the provider reported an error mid-response",
            )
        };
        LlmError::new(kind, format!("{what} ({provider}: {detail})"))
    }
}

/// `d` as people read it: `60 s`, `0.3 s`.
fn seconds(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

/// `text`'s first `max` characters, with `…` when there were more.
fn shorten(text: &str, max: usize) -> String {
    let mut short: String = text.chars().take(max).collect();
    if short.len() < text.len() {
        short.push('…');
    }
    short
}

/// Whether an error message reports that the request failed validation (pydantic's wording,
/// which Python servers pass on).
fn is_validation_error(text: &str) -> bool {
    text.to_ascii_lowercase().contains("validation error")
}

/// The first `lines` non-empty lines of `text`, trimmed and joined, at most `max` characters.
fn first_lines(text: &str, lines: usize, max: usize) -> String {
    let joined = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .take(lines)
        .collect::<Vec<_>>()
        .join(" ");
    shorten(&joined, max)
}

/// Phrases providers use when the input is longer than the context window.
fn is_context_overflow(text: &str) -> bool {
    let t = text.to_ascii_lowercase();
    [
        "context_length_exceeded",
        "context length",
        "context window",
        "prompt is too long",
        "too many tokens",
        "maximum number of tokens",
        "input is too long",
        "request_too_large",
        "reduce the length",
        "exceeds the context",
    ]
    .iter()
    .any(|p| t.contains(p))
}

/// The most useful human message in an error body (several providers' shapes), shortened.
fn provider_message(body: &str) -> String {
    let text = match serde_json::from_str::<serde_json::Value>(body) {
        Ok(v) => {
            let error = v
                .get("error")
                .or_else(|| v.get("response").and_then(|r| r.get("error")))
                .unwrap_or(&v);
            let main = error
                .get("message")
                .and_then(|m| m.as_str())
                .or_else(|| error.as_str())
                .or_else(|| v.get("message").and_then(|m| m.as_str()))
                .unwrap_or("no message")
                .to_string();
            match error.pointer("/metadata/raw").and_then(|r| r.as_str()) {
                Some(raw) => format!("{main}: {raw}"),
                None => main,
            }
        }
        Err(_) if body.trim().is_empty() => "no message".to_string(),
        Err(_) => body.trim().to_string(),
    };
    shorten(&text, 400)
}

/// The machine-readable code or type of an error body, if any.
/// The machine-readable codes of an error body (`code`, `type`, `status`; numbers as text),
/// lowercased and joined, so one `contains` test covers every provider's field.
fn error_code(body: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(body).ok()?;
    let error = v
        .get("error")
        .or_else(|| v.get("response").and_then(|r| r.get("error")))
        .unwrap_or(&v);
    let codes: Vec<String> = ["code", "type", "status", "status_code"]
        .iter()
        .filter_map(|key| match error.get(*key)? {
            serde_json::Value::String(s) => Some(s.to_lowercase()),
            serde_json::Value::Number(n) => Some(n.to_string()),
            _ => None,
        })
        .collect();
    (!codes.is_empty()).then(|| codes.join(" "))
}

/// `Retry-After` in seconds (HTTP dates are rare from these APIs and fall back to backoff).
fn parse_retry_after(value: &str) -> Option<Duration> {
    value
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|s| *s >= 0.0)
        .map(Duration::from_secs_f64)
}
