//! Recorded error responses map to the right kind; retries happen only before anything streamed;
//! cancellation keeps what arrived; keys never appear in errors.

mod common;

use codewright_llm::{Client, Delta, ErrorKind, Protocol, Provider, RetryPolicy};
use codewright_protocol::StopReason;
use common::{fixtures, serve, Reply};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

fn fast_retries(n: u32) -> Client {
    Client::new(RetryPolicy {
        max_retries: n,
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_secs(2),
        ..RetryPolicy::default()
    })
}

async fn call(
    client: &Client,
    provider: &Provider,
    key: Option<&str>,
) -> Result<codewright_protocol::Message, codewright_llm::StreamFailure> {
    client
        .stream(
            provider,
            key,
            "m",
            &serde_json::json!({"x": 1}),
            &CancellationToken::new(),
            &mut |_, _| {},
        )
        .await
}

const KEY: &str = "sk-test-SECRET-0123456789";

/// A server that sends the response head and `first`, stays silent for `pause`, then sends `rest`
/// (the body length covers both, so the client waits through the silence).
async fn pausing_server(first: &'static str, pause: Duration, rest: &'static str) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let (mut sock, _) = listener.accept().await.unwrap();
        let mut buf = vec![0u8; 65536];
        let _ = sock.read(&mut buf).await;
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n{first}",
            first.len() + rest.len()
        );
        sock.write_all(head.as_bytes()).await.unwrap();
        tokio::time::sleep(pause).await;
        let _ = sock.write_all(rest.as_bytes()).await;
    });
    base
}

#[tokio::test]
async fn every_recorded_error_maps_to_its_kind_and_never_shows_the_key() {
    let cases = [
        (
            "anthropic_400_invalid_request.http",
            Protocol::Anthropic,
            ErrorKind::InvalidRequest,
            "Input does not match",
        ),
        (
            "anthropic_401_authentication_error.http",
            Protocol::Anthropic,
            ErrorKind::Auth,
            "check the key",
        ),
        (
            "groq_400_tool_use_failed.http",
            Protocol::OpenAiChat,
            ErrorKind::InvalidRequest,
            "Tool call validation failed",
        ),
        (
            "openai_400_unsupported_value.http",
            Protocol::OpenAiChat,
            ErrorKind::InvalidRequest,
            "Unsupported value",
        ),
        (
            "openai_401_invalid_api_key.http",
            Protocol::OpenAiChat,
            ErrorKind::Auth,
            "rejected the API key",
        ),
        (
            "openai_responses_400.http",
            Protocol::OpenAiResponses,
            ErrorKind::InvalidRequest,
            "temperature",
        ),
        (
            "openai_responses_401.http",
            Protocol::OpenAiResponses,
            ErrorKind::Auth,
            "Check the key for rec",
        ),
        (
            "llamacpp_python_500_assistant_content_null.http",
            Protocol::OpenAiChat,
            ErrorKind::InvalidRequest,
            "refused the request as malformed (HTTP 500: 7 validation errors:",
        ),
        (
            "openrouter_429_upstream_rate_limited.http",
            Protocol::OpenAiChat,
            ErrorKind::RateLimit,
            "rate-limited upstream",
        ),
    ];
    let dir = fixtures().join("errors");
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        cases.len(),
        "a recorded error has no case here"
    );
    for (file, protocol, kind, needle) in cases {
        let raw = std::fs::read_to_string(dir.join(file)).unwrap();
        let server = serve(vec![Reply::recorded(&raw)]).await;
        let provider = Provider::new("rec", protocol, &format!("{}/v1", server.base), None);
        let failure = call(&fast_retries(0), &provider, Some(KEY))
            .await
            .unwrap_err();
        assert_eq!(
            failure.error.kind, kind,
            "{file}: {}",
            failure.error.message
        );
        assert!(
            failure
                .error
                .message
                .to_lowercase()
                .contains(&needle.to_lowercase()),
            "{file}: {}",
            failure.error.message
        );
        assert!(!failure.error.message.contains(KEY), "{file} leaks the key");
        assert!(
            !failure.error.message.contains('\n') && failure.error.message.len() < 700,
            "{file}: one short paragraph, not a dump: {}",
            failure.error.message
        );
        assert!(failure.partial.is_none());
    }
}

#[tokio::test]
async fn context_overflow_is_one_kind_whatever_the_provider_says() {
    for body in [
        r#"{"error":{"message":"This model's maximum context length is 128000 tokens.","code":"context_length_exceeded"}}"#,
        r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#,
        r#"{"error":{"code":400,"message":"The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}"#,
    ] {
        let reply = Reply {
            status: 400,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.into(),
            split: None,
        };
        let server = serve(vec![reply]).await;
        let provider = Provider::new("p", Protocol::OpenAiChat, &server.base, None);
        let failure = call(&fast_retries(3), &provider, None).await.unwrap_err();
        assert_eq!(failure.error.kind, ErrorKind::ContextOverflow, "{body}");
        assert_eq!(
            server.requests.lock().unwrap().len(),
            1,
            "overflow is not retried"
        );
    }
}

#[tokio::test]
async fn rate_limits_are_retried_honouring_retry_after_then_succeed() {
    let limited = Reply {
        status: 429,
        headers: vec![("retry-after".into(), "0.3".into())],
        body: br#"{"error":{"message":"slow down"}}"#.to_vec(),
        split: None,
    };
    let ok = Reply::sse(
        std::fs::read(fixtures().join("openai-chat/text_then_usage_chunk.sse")).unwrap(),
    );
    let server = serve(vec![limited.clone(), limited, ok]).await;
    let provider = Provider::new("p", Protocol::OpenAiChat, &server.base, None);
    let start = Instant::now();
    let message = call(&fast_retries(4), &provider, None).await.unwrap();
    assert!(
        start.elapsed() >= Duration::from_millis(600),
        "retry-after was not honoured"
    );
    assert_eq!(server.requests.lock().unwrap().len(), 3);
    assert_eq!(message.stop_reason, Some(StopReason::EndTurn));
}

#[tokio::test]
async fn overload_gives_up_after_the_retry_budget_and_auth_is_never_retried() {
    let overloaded = Reply {
        status: 529,
        headers: vec![],
        body: br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
            .to_vec(),
        split: None,
    };
    let server = serve(vec![overloaded]).await;
    let provider = Provider::new("p", Protocol::Anthropic, &server.base, None);
    let failure = call(&fast_retries(2), &provider, None).await.unwrap_err();
    assert_eq!(failure.error.kind, ErrorKind::Overloaded);
    assert_eq!(
        server.requests.lock().unwrap().len(),
        3,
        "1 try + 2 retries"
    );

    let auth = Reply::recorded(
        &std::fs::read_to_string(fixtures().join("errors/anthropic_401_authentication_error.http"))
            .unwrap(),
    );
    let server = serve(vec![auth]).await;
    let provider = Provider::new("p", Protocol::Anthropic, &server.base, None);
    call(&fast_retries(5), &provider, None).await.unwrap_err();
    assert_eq!(server.requests.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn a_stream_cut_after_content_is_not_retried_and_keeps_what_arrived() {
    let full =
        std::fs::read_to_string(fixtures().join("anthropic/thinking_signature_text.sse")).unwrap();
    let cut = full[..full.len() / 2]
        .rsplit_once("\n\n")
        .unwrap()
        .0
        .to_string()
        + "\n\n";
    let server = serve(vec![Reply::sse(cut.into_bytes())]).await;
    let provider = Provider::new("p", Protocol::Anthropic, &server.base, None);
    let failure = call(&fast_retries(3), &provider, None).await.unwrap_err();
    assert_eq!(failure.error.kind, ErrorKind::StreamEndedEarly);
    assert_eq!(
        server.requests.lock().unwrap().len(),
        1,
        "content had streamed: no silent re-send"
    );
    let partial = failure.partial.expect("what arrived is kept");
    assert_eq!(partial.stop_reason, Some(StopReason::Error));
    assert!(!partial.parts.is_empty());
}

#[tokio::test]
async fn nothing_listening_is_a_network_error_naming_the_url() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let provider = Provider::new(
        "local",
        Protocol::OpenAiChat,
        &format!("http://127.0.0.1:{port}"),
        None,
    );
    let failure = call(&fast_retries(1), &provider, Some(KEY))
        .await
        .unwrap_err();
    assert_eq!(failure.error.kind, ErrorKind::Network);
    assert!(
        failure
            .error
            .message
            .contains(&format!("http://127.0.0.1:{port}/v1/chat/completions")),
        "{}",
        failure.error.message
    );
    assert!(!failure.error.message.contains(KEY));
}

#[tokio::test]
async fn a_wrong_base_url_404_names_the_url_tried() {
    let server = serve(vec![Reply {
        status: 404,
        headers: vec![],
        body: b"Not Found".to_vec(),
        split: None,
    }])
    .await;
    let provider = Provider::new(
        "custom",
        Protocol::OpenAiChat,
        &format!("{}/wrong", server.base),
        None,
    );
    let failure = call(&fast_retries(0), &provider, None).await.unwrap_err();
    assert_eq!(failure.error.kind, ErrorKind::NotFound);
    assert!(
        failure.error.message.contains("/wrong/v1/chat/completions"),
        "{}",
        failure.error.message
    );
}

#[tokio::test]
async fn cancelling_mid_stream_stops_at_once_and_keeps_the_partial_text() {
    // A stream that sends some text, then stalls for a long time.
    let event =
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"partial answer\"}}]}\n\n";
    let base = pausing_server(event, Duration::from_secs(30), "data: [DONE]\n\n").await;
    let provider = Provider::new("p", Protocol::OpenAiChat, &base, None);
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let client = fast_retries(3);
    let start = Instant::now();
    let mut seen = String::new();
    let failure = client
        .stream(
            &provider,
            None,
            "m",
            &serde_json::json!({}),
            &cancel,
            &mut |d, _| {
                if let Delta::Text(t) = d {
                    seen.push_str(t);
                    trigger.cancel();
                }
            },
        )
        .await
        .unwrap_err();
    assert!(start.elapsed() < Duration::from_secs(5));
    assert_eq!(failure.error.kind, ErrorKind::Cancelled);
    let partial = failure.partial.expect("the partial answer is kept");
    assert_eq!(partial.text(), "partial answer");
    assert_eq!(partial.stop_reason, Some(StopReason::Aborted));
    assert_eq!(seen, "partial answer");
}

#[tokio::test]
async fn a_silent_stream_reports_idle_so_what_arrived_can_be_saved() {
    let first = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"before\"}}]}\n\n";
    let last = "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
    // The model thinks for 700 ms between the two.
    let base = pausing_server(first, Duration::from_millis(700), last).await;
    let provider = Provider::new("p", Protocol::OpenAiChat, &base, None);
    let mut idle_with_text = 0;
    let message = fast_retries(0)
        .stream(&provider, None, "m", &serde_json::json!({}), &CancellationToken::new(), &mut |d, parts| {
            if *d == Delta::Idle && parts.iter().any(|p| matches!(p, codewright_protocol::Part::Text { text } if text == "before")) {
                idle_with_text += 1;
            }
        })
        .await
        .unwrap();
    assert!(
        idle_with_text >= 2,
        "idle reported {idle_with_text} times during a 700 ms silence"
    );
    assert_eq!(message.text(), "before");
}

#[tokio::test]
async fn a_request_the_server_cannot_read_and_an_empty_stream_are_not_retried() {
    // llama-cpp-python's 500 for a request it cannot validate: the same request fails again.
    let raw = std::fs::read_to_string(
        fixtures().join("errors/llamacpp_python_500_assistant_content_null.http"),
    )
    .unwrap();
    let server = serve(vec![Reply::recorded(&raw)]).await;
    let provider = Provider::new("local", Protocol::OpenAiChat, &server.base, None);
    let failure = call(&fast_retries(3), &provider, None).await.unwrap_err();
    assert_eq!(failure.error.kind, ErrorKind::InvalidRequest);
    assert_eq!(server.requests.lock().unwrap().len(), 1, "not retried");

    // What the same server sends for a prompt longer than its window: 200, then nothing.
    let server = serve(vec![Reply::sse(Vec::new())]).await;
    let provider = Provider::new("local", Protocol::OpenAiChat, &server.base, None);
    let failure = call(&fast_retries(3), &provider, None).await.unwrap_err();
    assert_eq!(failure.error.kind, ErrorKind::EmptyStream);
    assert!(
        failure.error.message.contains("without sending anything")
            && failure.error.message.contains("context window"),
        "{}",
        failure.error.message
    );
    assert_eq!(server.requests.lock().unwrap().len(), 1, "not retried");
    assert!(failure.partial.is_none());
}

/// A server that answers every request on a connection with one short answer and keeps the
/// connection open; it counts the connections it accepts.
async fn keep_alive_server() -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let accepted = std::sync::Arc::new(AtomicUsize::new(0));
    let counted = accepted.clone();
    tokio::spawn(async move {
        loop {
            let (mut sock, _) = listener.accept().await.unwrap();
            counted.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                use tokio::io::{AsyncReadExt, AsyncWriteExt};
                let body = "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
                let mut buf = vec![0u8; 65536];
                // (Each request's head and body arrive in one read here: they are small.)
                while sock.read(&mut buf).await.is_ok_and(|n| n > 0) {
                    let head = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n{body}",
                        body.len()
                    );
                    if sock.write_all(head.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (base, accepted)
}

/// A local server's idle connection is not kept past [`codewright_llm::LOCAL_IDLE`]: llama.cpp's
/// closes one idle for 5 s, and a request sent on it as it closes was lost.
#[tokio::test]
async fn a_local_servers_idle_connection_is_let_go_soon() {
    let (base, accepted) = keep_alive_server().await;
    let client = fast_retries(0);
    let provider = Provider::new("llama", Protocol::OpenAiChat, &base, None);
    assert!(provider.is_local());
    call(&client, &provider, None).await.unwrap();
    let before = accepted.load(std::sync::atomic::Ordering::SeqCst);
    // Idle for longer than a local connection is kept: a new one. (Without the limit the pool
    // keeps it for 90 s, and this request went on the same connection.)
    tokio::time::sleep(codewright_llm::LOCAL_IDLE + Duration::from_millis(500)).await;
    call(&client, &provider, None).await.unwrap();
    assert_eq!(
        accepted.load(std::sync::atomic::Ordering::SeqCst),
        before + 1
    );
}
