//! Sends a request and streams the answer: retries with exponential backoff and jitter while
//! nothing has been received (never after), honours `retry-after`, and stops at once when
//! cancelled, keeping what had arrived.

use crate::assemble::{ended_early, Assembly, Delta};
use crate::decode::decoder;
use crate::error::{ErrorKind, LlmError};
use crate::provider::Provider;
use crate::stream::pump;
use codewright_protocol::{Message, Part, StopReason};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How a call is retried.
#[derive(Debug, Clone)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// First backoff; doubles each retry (±10% jitter).
    pub base_delay: Duration,
    /// No single wait is longer than this, `retry-after` included.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 4,
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

/// An HTTP client for providers. Cheap to clone; reuse it for connection pooling.
#[derive(Debug, Clone)]
pub struct Client {
    http: reqwest::Client,
    retry: RetryPolicy,
}

impl Client {
    pub fn new(retry: RetryPolicy) -> Client {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(15))
            // No overall timeout (answers can stream for minutes); a stalled stream is caught by
            // the read timeout.
            .read_timeout(Duration::from_secs(300))
            .build()
            .expect("the HTTP client builds");
        Client { http, retry }
    }

    /// Streams `body` to `provider` for `model`, calling `on_delta` with every increment and the
    /// parts received so far (to show, and to persist while streaming).
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
        loop {
            let mut out = Assembly::default();
            let result = tokio::select! {
                biased;
                _ = cancel.cancelled() => Err(LlmError::new(ErrorKind::Cancelled, "stopped")),
                r = self.attempt(provider, key, model, body, &mut out, on_delta) => r,
            };
            let error = match result {
                Ok(()) if out.is_whole() => {
                    return out.finish(model).map_err(|error| StreamFailure {
                        error,
                        partial: None,
                    });
                }
                Ok(()) => ended_early(),
                Err(e) => e,
            };
            let received = out.has_content();
            // A wait longer than the policy allows is not worth blocking the user for.
            let too_long = error.retry_after.is_some_and(|w| w > self.retry.max_delay);
            if error.kind == ErrorKind::Cancelled
                || received
                || too_long
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
        let url = provider.stream_url(model);
        let mut request = self
            .http
            .post(&url)
            .json(body)
            .header("accept", "text/event-stream");
        for (name, value) in provider.auth_headers(key) {
            request = request.header(name, value);
        }
        let response = request
            .send()
            .await
            .map_err(|e| network_error(&provider.name, &display_url(&url), &e))?;
        let status = response.status().as_u16();
        if !(200..300).contains(&status) {
            let retry_after = response
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            // Some servers echo the key back in their error; it never reaches a message.
            let text = redact(&response.text().await.unwrap_or_default(), key);
            return Err(LlmError::from_http(
                &provider.name,
                &display_url(&url),
                status,
                retry_after.as_deref(),
                &text,
            ));
        }
        let mut decoder = decoder(provider.protocol, &provider.name);
        pump(response.bytes_stream(), decoder.as_mut(), out, on_delta).await
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
    let mut source = String::new();
    let mut cause: Option<&dyn std::error::Error> = std::error::Error::source(e);
    while let Some(c) = cause {
        source = c.to_string();
        cause = c.source();
    }
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
