//! Providers that go silent (before the first byte, or mid-stream) are cut off by their timeouts,
//! with a timeout error, a bounded and visible retry, and the partial answer kept; answers that are
//! not event streams (a web page, a JSON document) or carry a malformed event fail at once.
//!
//! Timeouts under test are a few hundred milliseconds; "it did not hang" is checked against 10 s,
//! so a loaded machine cannot make these flaky.

mod common;

use codewright_llm::{
    decode_recording, Client, Delta, ErrorKind, LlmError, Protocol, Provider, RetryPolicy,
    StreamFailure,
};
use codewright_protocol::{Message, StopReason};
use common::{read_request, serve, Reply};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;
use tokio_util::sync::CancellationToken;

/// A response head promising a long body, so the client waits for more.
const HEAD: &str =
    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: 1000000\r\n\r\n";
const PARTIAL: &str =
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"partial answer\"}}]}\n\n";
const FINISH: &str =
    "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n";
const DONE: &str = "data: [DONE]\n\n";
/// Well past any timeout under test: a call still running then has hung.
const HANG: Duration = Duration::from_secs(10);

/// A server that answers every request by writing `steps` (each after its delay), then holds the
/// connection open in silence. Counts the requests it read.
async fn scripted(steps: Vec<(Duration, String)>) -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let requests = Arc::new(AtomicUsize::new(0));
    let counted = requests.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            let steps = steps.clone();
            let counted = counted.clone();
            tokio::spawn(async move {
                if read_request(&mut sock).await.is_none() {
                    return;
                }
                counted.fetch_add(1, Ordering::SeqCst);
                for (delay, text) in steps {
                    tokio::time::sleep(delay).await;
                    if sock.write_all(text.as_bytes()).await.is_err() {
                        return;
                    }
                    let _ = sock.flush().await;
                }
                tokio::time::sleep(Duration::from_secs(60)).await;
            });
        }
    });
    (base, requests)
}

fn now(text: &str) -> (Duration, String) {
    (Duration::ZERO, text.to_string())
}

fn client(timeout_retries: u32) -> Client {
    Client::new(RetryPolicy {
        max_retries: 4,
        max_timeout_retries: timeout_retries,
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_secs(2),
    })
}

fn provider(base: &str, first_byte_ms: u64, idle_ms: u64) -> Provider {
    Provider::new("slowpoke", Protocol::OpenAiChat, base, None).with_timeouts(
        Some(Duration::from_millis(first_byte_ms)),
        Some(Duration::from_millis(idle_ms)),
    )
}

/// What a call gave: its result, the retries it reported, how long it took.
struct Outcome {
    result: Result<Message, StreamFailure>,
    retries: Vec<LlmError>,
    took: Duration,
}

async fn call(client: &Client, provider: &Provider) -> Outcome {
    let start = Instant::now();
    let mut retries = Vec::new();
    let result = tokio::time::timeout(
        HANG,
        client.stream(
            provider,
            None,
            "m",
            &serde_json::json!({}),
            &CancellationToken::new(),
            &mut |d, _| {
                if let Delta::Retry { error, .. } = d {
                    retries.push(error.clone());
                }
            },
        ),
    )
    .await
    .expect("the call hung instead of timing out");
    Outcome {
        result,
        retries,
        took: start.elapsed(),
    }
}

#[tokio::test]
async fn headers_then_nothing_is_a_first_byte_timeout_retried_once_and_visibly() {
    let (base, requests) = scripted(vec![now(HEAD)]).await;
    let provider = provider(&base, 300, 300);
    let outcome = call(&client(1), &provider).await;
    let failure = outcome.result.unwrap_err();
    assert_eq!(
        failure.error.kind,
        ErrorKind::Timeout,
        "{}",
        failure.error.message
    );
    assert!(
        failure.error.message.contains("sent nothing for 0.3 s")
            && failure.error.message.contains("first-byte timeout")
            && failure.error.message.contains("/v1/chat/completions"),
        "{}",
        failure.error.message
    );
    assert!(failure.partial.is_none());
    assert_eq!(
        requests.load(Ordering::SeqCst),
        2,
        "one try and one retry after a timeout, not the whole retry budget"
    );
    assert_eq!(outcome.retries.len(), 1, "the retry is reported");
    assert_eq!(outcome.retries[0].kind, ErrorKind::Timeout);
    assert!(
        outcome.took >= Duration::from_millis(550),
        "two waits of 300 ms took {:?}",
        outcome.took
    );
}

#[tokio::test]
async fn a_server_that_never_answers_times_out_the_same_way() {
    // Not even a response head.
    let (base, requests) = scripted(vec![]).await;
    let outcome = call(&client(0), &provider(&base, 300, 300)).await;
    let failure = outcome.result.unwrap_err();
    assert_eq!(failure.error.kind, ErrorKind::Timeout);
    assert!(
        failure.error.message.contains("first-byte timeout"),
        "{}",
        failure.error.message
    );
    assert_eq!(requests.load(Ordering::SeqCst), 1);
    assert!(outcome.retries.is_empty());
}

#[tokio::test]
async fn a_stall_mid_stream_is_an_idle_timeout_that_keeps_the_partial_answer() {
    let (base, requests) = scripted(vec![now(&format!("{HEAD}{PARTIAL}"))]).await;
    // Longer than the 250 ms idle tick, so the tick's polling must not restart the timer.
    let outcome = call(&client(3), &provider(&base, 5_000, 400)).await;
    let failure = outcome.result.unwrap_err();
    assert_eq!(
        failure.error.kind,
        ErrorKind::Timeout,
        "{}",
        failure.error.message
    );
    assert!(
        failure.error.message.contains("sent nothing for 0.4 s")
            && failure.error.message.contains("idle timeout"),
        "{}",
        failure.error.message
    );
    let partial = failure.partial.expect("what arrived is kept");
    assert_eq!(partial.text(), "partial answer");
    assert_eq!(partial.stop_reason, Some(StopReason::Error));
    assert_eq!(
        requests.load(Ordering::SeqCst),
        1,
        "content had streamed: no silent re-send"
    );
    assert!(outcome.retries.is_empty());
}

#[tokio::test]
async fn keep_alive_comments_keep_a_slow_stream_alive() {
    // 1.6 s of nothing but comments, one every 200 ms, against a 1 s idle timeout.
    let mut steps = vec![now(&format!("{HEAD}: keep-alive\n\n"))];
    for _ in 0..8 {
        steps.push((Duration::from_millis(200), ": keep-alive\n\n".to_string()));
    }
    steps.push(now(&format!("{PARTIAL}{FINISH}{DONE}")));
    let (base, _) = scripted(steps).await;
    let outcome = call(&client(0), &provider(&base, 5_000, 1_000)).await;
    let message = outcome.result.unwrap_or_else(|f| panic!("{}", f.error));
    assert_eq!(message.text(), "partial answer");
}

#[tokio::test]
async fn keep_alives_that_never_end_are_a_timeout_keeping_what_arrived() {
    // Part of the answer, then a keep-alive comment and a ping event every 100 ms for 6 s (each
    // in time for the 500 ms idle timeout), against a 1 s limit on keep-alives alone.
    let mut steps = vec![now(&format!("{HEAD}{PARTIAL}"))];
    for _ in 0..60 {
        steps.push((
            Duration::from_millis(100),
            ": OPENROUTER PROCESSING\n\nevent: ping\ndata: {}\n\n".to_string(),
        ));
    }
    let (base, requests) = scripted(steps).await;
    let client = client(3).with_max_keep_alive_only(Duration::from_secs(1));
    let outcome = call(&client, &provider(&base, 500, 500)).await;
    let took = outcome.took;
    let failure = outcome.result.unwrap_err();
    assert_eq!(failure.error.kind, ErrorKind::Timeout);
    assert!(
        failure.error.message.contains(
            "slowpoke kept the connection open for 1 s without sending any more of the answer, only keep-alive messages"
        ),
        "{}",
        failure.error.message
    );
    assert!(
        took < Duration::from_secs(6),
        "cut off while the keep-alives went on: {took:?}"
    );
    assert_eq!(failure.partial.expect("kept").text(), "partial answer");
    assert_eq!(requests.load(Ordering::SeqCst), 1, "not re-sent");

    // Never shorter than the provider's own timeouts: with a first-byte timeout of 3 s, the same
    // stream is cut off after 3 s.
    let (base, _) = scripted(
        std::iter::once(now(&format!("{HEAD}{PARTIAL}")))
            .chain((0..60).map(|_| (Duration::from_millis(100), ": keep-alive\n\n".to_string())))
            .collect(),
    )
    .await;
    let outcome = call(&client, &provider(&base, 3_000, 500)).await;
    let message = outcome.result.unwrap_err().error.message;
    assert!(message.contains("for 3 s without sending"), "{message}");
}

#[tokio::test]
async fn an_answer_that_never_ends_is_cut_off_at_the_size_limit_keeping_what_arrived() {
    // Content, then comments trickling on (each in time for the idle timeout), past the limit
    // (and short of the 1,000,000 bytes HEAD announces).
    let mut steps = vec![now(&format!("{HEAD}{PARTIAL}"))];
    let keep_alive = format!(": {}\n\n", "z".repeat(8 * 1024));
    for _ in 0..400 {
        steps.push((Duration::from_millis(2), keep_alive.clone()));
    }
    let (base, requests) = scripted(steps).await;
    let client = client(3).with_max_answer_bytes(512 * 1024);
    let outcome = call(&client, &provider(&base, 5_000, 1_000)).await;
    let failure = outcome.result.unwrap_err();
    assert_eq!(failure.error.kind, ErrorKind::BadResponse);
    assert!(
        failure
            .error
            .message
            .contains("sent more than 512 KB for one answer without finishing it"),
        "{}",
        failure.error.message
    );
    assert_eq!(failure.partial.expect("kept").text(), "partial answer");
    assert_eq!(requests.load(Ordering::SeqCst), 1, "not re-sent");
}

#[tokio::test]
async fn a_whole_answer_is_kept_when_the_server_then_holds_the_connection_open() {
    // After the terminal event: the connection is not waited on (the idle timeout is far longer).
    let (base, _) = scripted(vec![now(&format!("{HEAD}{PARTIAL}{FINISH}{DONE}"))]).await;
    let outcome = call(&client(0), &provider(&base, 5_000, 60_000)).await;
    let message = outcome.result.unwrap_or_else(|f| panic!("{}", f.error));
    assert_eq!(message.text(), "partial answer");
    assert_eq!(message.stop_reason, Some(StopReason::EndTurn));

    // A stop reason but no terminal event, then silence: whole too.
    let (base, _) = scripted(vec![now(&format!("{HEAD}{PARTIAL}{FINISH}"))]).await;
    let outcome = call(&client(0), &provider(&base, 5_000, 300)).await;
    let message = outcome.result.unwrap_or_else(|f| panic!("{}", f.error));
    assert_eq!(message.text(), "partial answer");
}

#[tokio::test]
async fn a_malformed_event_fails_the_answer_and_keeps_what_came_before() {
    let body = format!(
        "{PARTIAL}data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\" and mo\n\n{FINISH}{DONE}"
    );
    let server = serve(vec![Reply::sse(body.into_bytes())]).await;
    let provider = Provider::new("p", Protocol::OpenAiChat, &server.base, None);
    let outcome = call(&client(3), &provider).await;
    let failure = outcome
        .result
        .expect_err("a stream with a hole is not a whole answer");
    assert_eq!(failure.error.kind, ErrorKind::BadResponse);
    assert!(
        failure.error.message.contains("malformed event")
            && failure.error.message.contains(r#"{"choices":[{"index":0"#),
        "{}",
        failure.error.message
    );
    let partial = failure.partial.expect("what arrived is kept");
    assert_eq!(partial.text(), "partial answer");
    assert_eq!(partial.stop_reason, Some(StopReason::Error));
    assert_eq!(server.requests.lock().unwrap().len(), 1);

    // Every protocol's decoder.
    for (protocol, good, bad) in [
        (
            Protocol::Anthropic,
            r#"{"type":"message_start","message":{"usage":{"input_tokens":1}}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_del"#,
        ),
        (
            Protocol::OpenAiResponses,
            r#"{"type":"response.output_text.delta","output_index":0,"delta":"Hi"}"#,
            r#"{"type":"response.output_text.delta","#,
        ),
        (
            Protocol::Gemini,
            r#"{"candidates":[{"content":{"parts":[{"text":"Hi"}]}}]}"#,
            r#"{"candidates":[{"content""#,
        ),
    ] {
        let body = format!("data: {good}\n\ndata: {bad}\n\n");
        let err = decode_recording(protocol, body.as_bytes())
            .await
            .unwrap_err();
        assert_eq!(
            err.kind,
            ErrorKind::BadResponse,
            "{protocol:?}: {}",
            err.message
        );
        assert!(err.message.contains(bad), "{protocol:?}: {}", err.message);
    }
}

#[tokio::test]
async fn a_web_page_with_status_200_fails_at_once_without_retries() {
    let page = "<!DOCTYPE html>\n<html><head><title>Hotel Wi-Fi: sign in</title></head><body>…</body></html>";
    for content_type in ["text/html; charset=utf-8", "text/plain"] {
        let server = serve(vec![Reply {
            status: 200,
            headers: vec![("content-type".into(), content_type.into())],
            body: page.as_bytes().to_vec(),
            split: None,
        }])
        .await;
        let provider = Provider::new("portal", Protocol::OpenAiChat, &server.base, None);
        let outcome = call(&client(4), &provider).await;
        let failure = outcome.result.unwrap_err();
        let message = &failure.error.message;
        assert_eq!(failure.error.kind, ErrorKind::BadResponse, "{message}");
        assert!(
            message.contains("web page")
                && message.contains("not an event stream")
                && message.contains("check the base URL")
                && message.contains(&format!("{}/v1/chat/completions", server.base)),
            "{message}"
        );
        if content_type == "text/plain" {
            // Found by its first byte; the title it read is shown.
            assert!(message.contains("Hotel Wi-Fi: sign in"), "{message}");
        }
        assert_eq!(
            server.requests.lock().unwrap().len(),
            1,
            "{content_type}: attempted exactly once"
        );
        assert!(outcome.retries.is_empty());
        assert!(failure.partial.is_none());
    }
}

#[tokio::test]
async fn a_json_document_with_status_200_is_the_providers_error_or_a_bad_response() {
    for (body, kind, needle) in [
        (
            r#"{"error":{"message":"The model `m` does not exist","type":"invalid_request_error","code":"model_not_found"}}"#,
            ErrorKind::Provider,
            "does not exist",
        ),
        (
            r#"{"id":"x","choices":[{"index":0,"message":{"content":"hi"}}]}"#,
            ErrorKind::BadResponse,
            "not an event stream",
        ),
    ] {
        let server = serve(vec![Reply {
            status: 200,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.as_bytes().to_vec(),
            split: None,
        }])
        .await;
        let provider = Provider::new("p", Protocol::OpenAiChat, &server.base, None);
        let failure = call(&client(4), &provider).await.result.unwrap_err();
        assert_eq!(failure.error.kind, kind, "{}", failure.error.message);
        assert!(
            failure.error.message.contains(needle),
            "{}",
            failure.error.message
        );
        assert_eq!(server.requests.lock().unwrap().len(), 1);
    }
}
