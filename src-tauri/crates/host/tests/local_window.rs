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
    let home = tempfile::tempdir().unwrap();
    let (base, asked) = llamacpp(4096).await;
    let mut small = model("smollm2@local", &base);
    assert_eq!(
        small.info.context_window, 128_000,
        "the default before asking"
    );
    codewright_host::models::fit_local_model(&mut small, home.path()).await;
    assert_eq!(small.info.context_window, 4096);
    assert_eq!(small.info.max_output, 1024, "a quarter of the window");
    // Kept in the data folder: the next run (another `exec`) does not ask again.
    let after_first = asked.load(std::sync::atomic::Ordering::SeqCst);
    assert!(after_first > 0);
    let mut again = model("smollm2@local", &base);
    codewright_host::models::fit_local_model(&mut again, home.path()).await;
    assert_eq!(again.info.context_window, 4096);
    assert_eq!(asked.load(std::sync::atomic::Ordering::SeqCst), after_first);
    // A model the user described keeps what they said.
    let mut described = model("smollm2@local", &base);
    described.info.known = true;
    described.info.context_window = 32_000;
    codewright_host::models::fit_local_model(&mut described, home.path()).await;
    assert_eq!(described.info.context_window, 32_000);
}

/// An answer older than a minute is used at once, and the server is asked again meanwhile, so
/// the run after sees it as it is now.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_old_answer_is_used_at_once_and_asked_again_in_the_background() {
    let home = tempfile::tempdir().unwrap();
    let (base, asked) = llamacpp(8192).await;
    let file = home.path().join(codewright_host::models::LOCAL_MODELS_FILE);
    // What a run an hour ago was told (the server has been restarted with 8192 since).
    let key = format!("{base} smollm2");
    let hour_ago = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        - 3600;
    let old =
        serde_json::json!({ key.clone(): {"at": hour_ago, "context_window": 4096, "tools": null} });
    std::fs::write(&file, old.to_string()).unwrap();
    let mut m = model("smollm2@local", &base);
    codewright_host::models::fit_local_model(&mut m, home.path()).await;
    assert_eq!(
        m.info.context_window, 4096,
        "the kept answer, without waiting"
    );
    // The background question lands in the file.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let kept: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        if kept[&key]["context_window"] == 8192 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never asked again: {kept}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(asked.load(std::sync::atomic::Ordering::SeqCst) > 0);
    let mut next = model("smollm2@local", &base);
    codewright_host::models::fit_local_model(&mut next, home.path()).await;
    assert_eq!(next.info.context_window, 8192);
}

/// A local server's model added without its window (`models add qwen@llama`) is not taken to
/// have 128k: its server is asked, as for a model nobody described, and its other figures stay
/// the user's. One given its window keeps it.
#[tokio::test]
async fn a_local_model_described_without_its_window_is_asked_of_its_server() {
    use codewright_host::settings::{save_model, save_provider, ModelForm, ProviderForm};
    let home = tempfile::tempdir().unwrap();
    let store = codewright_store::Store::open(&home.path().join("codewright.db")).unwrap();
    let (base, _) = llamacpp(16_384).await;
    save_provider(
        &store,
        &ProviderForm {
            name: "llama".into(),
            protocol: "openai".into(),
            base_url: base.clone(),
            ..Default::default()
        },
    )
    .unwrap();
    let form = |id: &str, context_window| ModelForm {
        id: id.into(),
        context_window,
        temperature: Some(0.2),
        ..Default::default()
    };
    let saved = save_model(&store, &form("qwen@llama", None)).unwrap();
    assert!(!saved.known, "{saved:?}");
    let custom = codewright_host::models::custom_models(&store).unwrap();
    let mut model = Model {
        info: codewright_llm::resolve_model("qwen@llama", &custom),
        provider: codewright_host::models::provider(&store, "llama").unwrap(),
        key: None,
    };
    codewright_host::models::fit_local_model(&mut model, home.path()).await;
    assert_eq!(model.info.context_window, 16_384);
    assert_eq!(model.info.sampling.temperature, Some(0.2));
    let told = save_model(&store, &form("coder@llama", Some(8_192))).unwrap();
    assert!(told.known && told.context_window == 8_192, "{told:?}");
    // Constrained answers only where the server takes the grammar: a local OpenAI-chat server.
    let constrained = |id: &str| ModelForm {
        constrained: true,
        ..form(id, Some(8_192))
    };
    assert!(save_model(&store, &constrained("coder@llama")).is_ok());
    let err = save_model(&store, &constrained("gpt-4o@openai")).unwrap_err();
    assert_eq!(err.field, "constrained", "{err:?}");
    assert!(err.message.contains("local server"), "{err:?}");
}
