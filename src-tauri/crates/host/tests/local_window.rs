//! A model of a local server that Codewright does not know runs with the window the server says
//! it has, not an assumed 128k.

use codewright_agent::Model;
use codewright_llm::{catalog::ModelInfo, Protocol, Provider};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A llama.cpp-like server whose `/props` says `n_ctx`; 404 for anything else. Counts the
/// requests it gets.
async fn llamacpp(n_ctx: u64) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    let asked = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = asked.clone();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let mut buf = vec![0u8; 8192];
            let n = sock.read(&mut buf).await.unwrap_or(0);
            let reply = if buf[..n].starts_with(b"GET /props ") {
                let body = format!(r#"{{"default_generation_settings":{{"n_ctx":{n_ctx}}}}}"#);
                format!("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}", body.len())
            } else {
                "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".into()
            };
            let _ = sock.write_all(reply.as_bytes()).await;
        }
    });
    (base, asked)
}

fn model(id: &str, base: &str) -> Model {
    Model {
        info: ModelInfo::unknown(id),
        provider: Provider::new("local", Protocol::OpenAiChat, base, None),
        key: None,
    }
}

#[tokio::test]
async fn an_unknown_local_model_gets_the_window_its_server_runs_with() {
    let (base, asked) = llamacpp(4096).await;
    let mut small = model("smollm2@local", &base);
    assert_eq!(
        small.info.context_window, 128_000,
        "the default before asking"
    );
    codewright_host::models::fit_local_model(&mut small).await;
    assert_eq!(small.info.context_window, 4096);
    assert_eq!(small.info.max_output, 1024, "a quarter of the window");
    // Asked once a minute at most: a second run does not ask again.
    let after_first = asked.load(std::sync::atomic::Ordering::SeqCst);
    let mut again = model("smollm2@local", &base);
    codewright_host::models::fit_local_model(&mut again).await;
    assert_eq!(again.info.context_window, 4096);
    assert_eq!(asked.load(std::sync::atomic::Ordering::SeqCst), after_first);
    // A model the user described keeps what they said.
    let mut described = model("smollm2@local", &base);
    described.info.known = true;
    described.info.context_window = 32_000;
    codewright_host::models::fit_local_model(&mut described).await;
    assert_eq!(described.info.context_window, 32_000);
}
