//! Asking a provider whether it works before a task depends on it: a real, minimal request with
//! the user's key and model ([`test_connection`]), and the models a server has
//! ([`list_models`], for local servers that say which they have loaded).

use crate::error::ErrorKind;
use crate::request::{build_body, ChatRequest};
use crate::{Client, Provider, RetryPolicy};
use codewright_protocol::Message;
use serde::Serialize;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How long a test may wait for the first byte and between chunks. A local server loading a
/// model for the first time can take longer; the message then says so.
const TEST_TIMEOUT: Duration = Duration::from_secs(30);

/// What a connection test found, in words for the screen that ran it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "result", rename_all = "camelCase")]
pub enum TestOutcome {
    /// The model answered.
    #[serde(rename_all = "camelCase")]
    Ok { model: String, reply: String },
    /// The provider refused the key (HTTP 401 or 403).
    BadKey { message: String },
    /// Nothing answered at the URL (refused, unknown host, timed out), or it is not the
    /// provider's API (404 for the endpoint, a web page).
    Unreachable { url: String, message: String },
    /// The provider answered, but does not know the model.
    #[serde(rename_all = "camelCase")]
    ModelNotFound { model: String, message: String },
    /// Any other answer (no quota, a refused request, an overloaded server).
    Failed { message: String },
}

/// Sends `provider` one short request for `model` (its name without `@provider`) with `key`,
/// asking for a one-word answer, and says what happened. Not retried: a test reports the first
/// answer as it is.
pub async fn test_connection(provider: &Provider, key: Option<&str>, model: &str) -> TestOutcome {
    let provider = provider
        .clone()
        .with_timeouts(Some(TEST_TIMEOUT), Some(TEST_TIMEOUT));
    let request = ChatRequest {
        model: model.to_string(),
        system: None,
        messages: vec![Message::user("Reply with the single word OK.")],
        tools: Vec::new(),
        max_output_tokens: 16,
        thinking_budget: None,
        sampling: Default::default(),
        answer_schema: None,
    };
    let body = build_body(&provider, &request);
    let client = Client::new(RetryPolicy {
        max_retries: 0,
        max_timeout_retries: 0,
        ..RetryPolicy::default()
    });
    let url = provider.stream_url(model);
    let answer = client
        .stream(
            &provider,
            key,
            model,
            &body,
            &CancellationToken::new(),
            &mut |_, _| {},
        )
        .await;
    let error = match answer {
        Ok(message) => {
            return TestOutcome::Ok {
                model: model.to_string(),
                reply: message.text().chars().take(80).collect(),
            }
        }
        Err(failure) => failure.error,
    };
    let message = error.message;
    let names_model = message.to_lowercase().contains("model");
    match error.kind {
        ErrorKind::Auth => TestOutcome::BadKey { message },
        ErrorKind::NotFound if names_model && !message.contains("<html") => {
            TestOutcome::ModelNotFound {
                model: model.to_string(),
                message,
            }
        }
        ErrorKind::InvalidRequest | ErrorKind::Provider if mentions_unknown_model(&message) => {
            TestOutcome::ModelNotFound {
                model: model.to_string(),
                message,
            }
        }
        ErrorKind::Network | ErrorKind::Timeout | ErrorKind::NotFound | ErrorKind::BadResponse => {
            TestOutcome::Unreachable { url, message }
        }
        _ => TestOutcome::Failed { message },
    }
}

/// Providers word an unknown model in a 400 as well as in a 404.
fn mentions_unknown_model(message: &str) -> bool {
    let m = message.to_lowercase();
    m.contains("model")
        && [
            "not found",
            "not exist",
            "does not exist",
            "unknown",
            "invalid model",
            "no such",
        ]
        .iter()
        .any(|w| m.contains(w))
}

/// The models an OpenAI-compatible server (Ollama, LM Studio, llama.cpp, vLLM…) says it has, from
/// its `/models` list, within `timeout`. `None` when nothing answered there in time or the answer
/// is not such a list.
pub async fn list_models(
    provider: &Provider,
    key: Option<&str>,
    timeout: Duration,
) -> Option<Vec<String>> {
    let http = reqwest::Client::builder().timeout(timeout).build().ok()?;
    let mut request = http.get(format!("{}/models", provider.base_url));
    for (name, value) in provider.auth_headers(key) {
        request = request.header(name, value);
    }
    let response = request.send().await.ok()?;
    if !response.status().is_success() {
        return None;
    }
    let list: serde_json::Value = response.json().await.ok()?;
    let ids = list["data"]
        .as_array()?
        .iter()
        .filter_map(|m| m["id"].as_str().map(str::to_owned))
        .collect();
    Some(ids)
}

/// Ollama's context window when nothing says otherwise (its default below 24 GiB of VRAM; it
/// cuts longer prompts silently, so assuming more would lose context unseen).
pub const OLLAMA_DEFAULT_WINDOW: u64 = 4_096;

/// What a local server says about one of its models. `None`: it did not say.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LocalModel {
    /// The context window it runs the model with.
    pub context_window: Option<u64>,
    /// Whether the model takes tools (`false`: it is given them as text instead).
    pub tools: Option<bool>,
    /// Whether its chat template takes two user messages in a row.
    pub user_turns_in_a_row: Option<bool>,
}

/// What a local server says about `model`, each endpoint asked at once within `timeout`. The
/// window: llama.cpp's `/props` (`n_ctx`), Ollama's `/api/ps` (a loaded model's
/// `context_length`) or `/api/show` (a `num_ctx` set for the model, else
/// [`OLLAMA_DEFAULT_WINDOW`]), LM Studio's `/api/v0/models/{model}` (a loaded model's
/// `loaded_context_length`), vLLM's `max_model_len` in `/models`. Tools: Ollama's
/// `capabilities`. Two user turns in a row: refused by a llama.cpp model whose `chat_template`
/// (in `/props`) raises an error when the roles do not alternate, taken by any other it names,
/// and by Ollama's (Go templates join and refuse nothing). llama-cpp-python says none of these.
pub async fn describe_local_model(
    provider: &Provider,
    key: Option<&str>,
    model: &str,
    timeout: Duration,
) -> LocalModel {
    let Ok(http) = reqwest::Client::builder().timeout(timeout).build() else {
        return LocalModel::default();
    };
    let base = provider.base_url.trim_end_matches('/');
    let origin = base.strip_suffix("/v1").unwrap_or(base);
    let get = |url: String| {
        let mut request = http.get(url);
        for (name, value) in provider.auth_headers(key) {
            request = request.header(name, value);
        }
        json_of(request)
    };
    let show = json_of(
        http.post(format!("{origin}/api/show"))
            .json(&serde_json::json!({ "model": model })),
    );
    let (props, ps, show, lmstudio, models) = tokio::join!(
        get(format!("{origin}/props")),
        get(format!("{origin}/api/ps")),
        show,
        get(format!("{origin}/api/v0/models/{model}")),
        get(format!("{base}/models")),
    );
    let number = |v: &serde_json::Value| v.as_u64().filter(|n| *n > 0);
    let llamacpp = props.as_ref().and_then(|p| {
        number(&p["default_generation_settings"]["n_ctx"]).or_else(|| number(&p["n_ctx"]))
    });
    let ollama_loaded = ps.as_ref().and_then(|ps| {
        ps["models"].as_array()?.iter().find_map(|m| {
            let name = m["name"].as_str().or(m["model"].as_str())?;
            (name == model || name == format!("{model}:latest"))
                .then(|| number(&m["context_length"]))
                .flatten()
        })
    });
    let ollama_set = show.as_ref().and_then(|s| {
        s["parameters"].as_str()?.lines().find_map(|line| {
            let mut words = line.split_whitespace();
            (words.next() == Some("num_ctx"))
                .then(|| words.next()?.parse().ok())
                .flatten()
        })
    });
    let is_ollama = show.as_ref().is_some_and(|s| s.get("modelfile").is_some())
        || ps.as_ref().is_some_and(|ps| ps["models"].is_array());
    let lmstudio = lmstudio
        .as_ref()
        .filter(|m| m["state"] == "loaded")
        .and_then(|m| number(&m["loaded_context_length"]));
    let vllm = models.as_ref().and_then(|list| {
        list["data"]
            .as_array()?
            .iter()
            .find(|m| m["id"] == model)
            .and_then(|m| number(&m["max_model_len"]))
    });
    let tools = show.as_ref().and_then(|s| {
        let capabilities = s["capabilities"].as_array()?;
        Some(capabilities.iter().any(|c| c == "tools"))
    });
    let user_turns_in_a_row = match props.as_ref().and_then(|p| p["chat_template"].as_str()) {
        Some(template) => Some(
            !(template.contains("raise_exception")
                && template.to_ascii_lowercase().contains("alternat")),
        ),
        None => is_ollama.then_some(true),
    };
    LocalModel {
        context_window: llamacpp
            .or(ollama_loaded)
            .or(ollama_set)
            .or(lmstudio)
            .or(vllm)
            .or(is_ollama.then_some(OLLAMA_DEFAULT_WINDOW)),
        tools,
        user_turns_in_a_row,
    }
}

/// The JSON a request answers with, if it succeeds with JSON.
async fn json_of(request: reqwest::RequestBuilder) -> Option<serde_json::Value> {
    let response = request.send().await.ok()?;
    if !response.status().is_success() {
        return None;
    }
    response.json().await.ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_model_is_recognised_in_each_providers_words() {
        for said in [
            "openai refused the request (HTTP 400): The model `gpt-9` does not exist",
            "ollama answered HTTP 400: model 'llama9' not found, try pulling it first",
            "groq refused the request (HTTP 400): Invalid model: nosuch",
        ] {
            assert!(mentions_unknown_model(said), "{said}");
        }
        assert!(!mentions_unknown_model(
            "openai refused the request (HTTP 400): max_tokens is too large"
        ));
    }
}
