//! Reading a local server's real context window from the endpoints each kind of server has,
//! against a loopback server that answers like each of them (404 for what it does not have).

use codewright_llm::probe::{describe_local_model, LocalModel, OLLAMA_DEFAULT_WINDOW};
use codewright_llm::{Protocol, Provider};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A server answering `routes` (`"GET /props"` → JSON), 404 for every other request.
async fn server(routes: Vec<(&'static str, serde_json::Value)>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            let routes = routes.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 16384];
                let n = sock.read(&mut buf).await.unwrap_or(0);
                let head = String::from_utf8_lossy(&buf[..n]).to_string();
                let line: Vec<&str> = head.lines().next().unwrap_or("").split(' ').collect();
                let asked = format!("{} {}", line[0], line.get(1).unwrap_or(&""));
                let reply = match routes.iter().find(|(route, _)| *route == asked) {
                    Some((_, body)) => {
                        let body = body.to_string();
                        format!("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}", body.len())
                    }
                    None => {
                        "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                            .to_string()
                    }
                };
                let _ = sock.write_all(reply.as_bytes()).await;
            });
        }
    });
    base
}

async fn describe(routes: Vec<(&'static str, serde_json::Value)>, model: &str) -> LocalModel {
    let base = server(routes).await;
    let provider = Provider::new("local", Protocol::OpenAiChat, &base, None);
    describe_local_model(&provider, None, model, Duration::from_secs(5)).await
}

async fn window(routes: Vec<(&'static str, serde_json::Value)>, model: &str) -> Option<u64> {
    describe(routes, model).await.context_window
}

#[tokio::test]
async fn each_kind_of_local_server_tells_its_window_its_own_way() {
    use serde_json::json;
    // llama.cpp's server.
    let props = json!({"default_generation_settings": {"n_ctx": 4096}, "total_slots": 1});
    assert_eq!(window(vec![("GET /props", props)], "m").await, Some(4096));
    // Ollama, the model loaded: what it runs with, not what the model could take.
    let ps = json!({"models": [{"name": "qwen3:latest", "model": "qwen3:latest", "context_length": 8192}]});
    let show = json!({"modelfile": "FROM x", "parameters": "stop \"<|im_end|>\"", "model_info": {"qwen3.context_length": 40960}});
    assert_eq!(
        window(
            vec![("GET /api/ps", ps), ("POST /api/show", show.clone())],
            "qwen3"
        )
        .await,
        Some(8192)
    );
    // Ollama, not loaded: a num_ctx set for the model, else Ollama's default.
    let empty = json!({"models": []});
    let set = json!({"modelfile": "FROM x", "parameters": "num_ctx 16384\nstop x"});
    assert_eq!(
        window(
            vec![("GET /api/ps", empty.clone()), ("POST /api/show", set)],
            "qwen3"
        )
        .await,
        Some(16384)
    );
    assert_eq!(
        window(
            vec![("GET /api/ps", empty), ("POST /api/show", show)],
            "qwen3"
        )
        .await,
        Some(OLLAMA_DEFAULT_WINDOW)
    );
    // LM Studio: a loaded model's context.
    let loaded = json!({"id": "qwen2.5-7b", "state": "loaded", "max_context_length": 32768, "loaded_context_length": 8000});
    assert_eq!(
        window(
            vec![("GET /api/v0/models/qwen2.5-7b", loaded)],
            "qwen2.5-7b"
        )
        .await,
        Some(8000)
    );
    // vLLM.
    let models =
        json!({"data": [{"id": "other", "max_model_len": 1}, {"id": "m", "max_model_len": 32768}]});
    assert_eq!(
        window(vec![("GET /v1/models", models)], "m").await,
        Some(32768)
    );
    // llama-cpp-python says nothing about it.
    let models = json!({"object": "list", "data": [{"id": "smollm2", "owned_by": "me"}]});
    assert_eq!(
        describe(vec![("GET /v1/models", models)], "smollm2").await,
        LocalModel::default()
    );
}

#[tokio::test]
async fn ollama_says_which_models_take_tools() {
    use serde_json::json;
    let base = json!({"modelfile": "FROM x", "capabilities": ["completion"]});
    assert_eq!(
        describe(vec![("POST /api/show", base)], "gemma")
            .await
            .tools,
        Some(false)
    );
    let tools = json!({"modelfile": "FROM x", "capabilities": ["completion", "tools"]});
    assert_eq!(
        describe(vec![("POST /api/show", tools)], "qwen3")
            .await
            .tools,
        Some(true)
    );
}

#[tokio::test]
async fn a_server_says_whether_its_template_takes_two_user_turns_in_a_row() {
    use serde_json::json;
    let turns = |routes| async move { describe(routes, "m").await.user_turns_in_a_row };
    // llama.cpp: Qwen2.5's template renders each message as it comes.
    let qwen = json!({"n_ctx": 16384, "chat_template": "{%- for message in messages %}{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}{%- endfor %}"});
    assert_eq!(turns(vec![("GET /props", qwen)]).await, Some(true));
    // Mistral's raises on a user turn after a user turn.
    let mistral = json!({"n_ctx": 32768, "chat_template": "{%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{- raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{%- endif %}"});
    assert_eq!(turns(vec![("GET /props", mistral)]).await, Some(false));
    // Ollama's Go templates refuse nothing.
    let show = json!({"modelfile": "FROM x", "parameters": ""});
    assert_eq!(
        turns(vec![
            ("POST /api/show", show),
            ("GET /api/ps", json!({"models": []}))
        ])
        .await,
        Some(true)
    );
    // llama.cpp without a template said (an older server): not known.
    let props = json!({"default_generation_settings": {"n_ctx": 4096}});
    assert_eq!(turns(vec![("GET /props", props)]).await, None);
}
