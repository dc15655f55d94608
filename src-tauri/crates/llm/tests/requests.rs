//! The JSON each protocol's body carries for one rich conversation, field by field, and what
//! actually reaches the server (path, auth headers).

mod common;

use codewright_llm::request::{build_body, INTERRUPTED};
use codewright_llm::{ChatRequest, Client, Protocol, Provider, RetryPolicy, ToolSpec};
use codewright_protocol::{Attachment, AttachmentKind, Message, Part, Role, ToolContent};
use common::{fixtures, serve, Reply};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

fn call(id: &str, name: &str, args: &str) -> Part {
    Part::ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: args.into(),
        truncated: false,
        signature: None,
    }
}

/// Text, an inline image, signed thinking, two parallel calls answered (one with an image, one
/// an error), then a call left dangling by a crash.
fn conversation() -> ChatRequest {
    let image = Attachment {
        kind: AttachmentKind::Image,
        name: "shot.png".into(),
        mime: "image/png".into(),
        size: 4,
        path: None,
        data: Some("iVBORw==".into()),
    };
    let messages = vec![
        Message::new(
            Role::User,
            vec![
                Part::Text {
                    text: "Why is this red?".into(),
                },
                Part::Attachment(image),
            ],
        ),
        Message::new(
            Role::Assistant,
            vec![
                Part::Thinking {
                    text: "Look at the CSS.".into(),
                    signature: Some("SIG==".into()),
                    redacted: None,
                },
                Part::Text {
                    text: "Reading two files.".into(),
                },
                call("c1", "read_file", r#"{"path":"a.css"}"#),
                call("c2", "read_file", r#"{"path":"b.css"}"#),
            ],
        ),
        Message::new(
            Role::Tool,
            vec![
                Part::ToolResult {
                    call_id: "c1".into(),
                    content: vec![
                        ToolContent::Text {
                            text: "body{color:red}".into(),
                        },
                        ToolContent::Image {
                            mime: "image/png".into(),
                            data: "QUJD".into(),
                        },
                    ],
                    is_error: false,
                    detail: None,
                },
                Part::ToolResult {
                    call_id: "c2".into(),
                    content: vec![ToolContent::Text {
                        text: "no such file".into(),
                    }],
                    is_error: true,
                    detail: None,
                },
            ],
        ),
        Message::new(
            Role::Assistant,
            vec![call("c3", "bash", r#"{"command":"ls"}"#)],
        ),
        Message::user("Continue"),
    ];
    ChatRequest {
        model: "the-model".into(),
        system: Some("You are careful.".into()),
        messages,
        tools: vec![ToolSpec {
            name: "read_file".into(),
            description: "Read a file".into(),
            input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        }],
        max_output_tokens: 4096,
        thinking_budget: Some(2048),
        sampling: Default::default(),
        answer_schema: None,
    }
}

fn provider(protocol: Protocol, url: &str) -> Provider {
    Provider::new("p", protocol, url, Some("P_KEY"))
}

#[test]
fn openai_chat_body() {
    let b = build_body(
        &provider(Protocol::OpenAiChat, "https://api.example.com/v1"),
        &conversation(),
    );
    assert_eq!(b["model"], "the-model");
    assert_eq!(b["stream"], true);
    assert_eq!(b["stream_options"]["include_usage"], true);
    assert_eq!(b["max_tokens"], 4096);
    let m = b["messages"].as_array().unwrap();
    assert_eq!(
        m[0],
        json!({"role": "system", "content": "You are careful."})
    );
    assert_eq!(
        m[1]["content"][0],
        json!({"type": "text", "text": "Why is this red?"})
    );
    assert_eq!(
        m[1]["content"][1],
        json!({"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw=="}})
    );
    assert_eq!(m[2]["role"], "assistant");
    assert_eq!(m[2]["content"], "Reading two files.");
    assert_eq!(
        m[2]["tool_calls"][1],
        json!({"id": "c2", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"b.css\"}"}})
    );
    assert_eq!(
        m[3],
        json!({"role": "tool", "tool_call_id": "c1", "content": "body{color:red}"})
    );
    assert_eq!(
        m[4],
        json!({"role": "tool", "tool_call_id": "c2", "content": "Error: no such file"})
    );
    assert_eq!(
        m[5]["role"], "user",
        "the tool's image follows as user content"
    );
    assert_eq!(
        m[5]["content"][1]["image_url"]["url"],
        "data:image/png;base64,QUJD"
    );
    assert_eq!(m[6]["tool_calls"][0]["id"], "c3");
    assert_eq!(
        m[6]["content"], "",
        "calls without text carry \"\" (llama-cpp-python refuses null with a 500)"
    );
    assert_eq!(
        m[7],
        json!({"role": "tool", "tool_call_id": "c3", "content": format!("Error: {INTERRUPTED}")}),
        "the dangling call is answered"
    );
    assert_eq!(m[8], json!({"role": "user", "content": "Continue"}));
    assert_eq!(
        b["tools"][0]["function"]["parameters"]["required"][0],
        "path"
    );
    // OpenAI's own endpoint wants the newer limit field.
    let b = build_body(
        &provider(Protocol::OpenAiChat, "https://api.openai.com/v1"),
        &conversation(),
    );
    assert_eq!(b["max_completion_tokens"], 4096);
    assert!(b.get("max_tokens").is_none());
}

#[test]
fn anthropic_body() {
    let b = build_body(
        &provider(Protocol::Anthropic, "https://api.anthropic.com"),
        &conversation(),
    );
    assert_eq!(b["max_tokens"], 4096);
    assert_eq!(
        b["system"],
        json!([{"type": "text", "text": "You are careful."}])
    );
    assert_eq!(
        b["thinking"],
        json!({"type": "enabled", "budget_tokens": 2048})
    );
    let m = b["messages"].as_array().unwrap();
    assert_eq!(
        m[0]["content"][1],
        json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw=="}})
    );
    assert_eq!(
        m[1]["content"][0],
        json!({"type": "thinking", "thinking": "Look at the CSS.", "signature": "SIG=="})
    );
    assert_eq!(
        m[1]["content"][2],
        json!({"type": "tool_use", "id": "c1", "name": "read_file", "input": {"path": "a.css"}})
    );
    assert_eq!(m[2]["role"], "user");
    assert_eq!(m[2]["content"][0]["type"], "tool_result");
    assert_eq!(m[2]["content"][0]["content"][1]["source"]["data"], "QUJD");
    assert_eq!(m[2]["content"][1]["is_error"], true);
    // The synthetic result for c3 and the next user text share one user message.
    assert_eq!(m[4]["role"], "user");
    assert_eq!(m[4]["content"][0]["tool_use_id"], "c3");
    assert_eq!(
        m[4]["content"][1],
        json!({"type": "text", "text": "Continue"})
    );
    assert_eq!(m.len(), 5);
    for pair in m.windows(2) {
        assert_ne!(pair[0]["role"], pair[1]["role"], "roles alternate");
    }
    assert_eq!(b["tools"][0]["input_schema"]["type"], "object");
}

#[test]
fn responses_body() {
    let b = build_body(
        &provider(Protocol::OpenAiResponses, "https://api.openai.com/v1"),
        &conversation(),
    );
    assert_eq!(b["instructions"], "You are careful.");
    assert_eq!(b["store"], false);
    assert_eq!(b["max_output_tokens"], 4096);
    let input = b["input"].as_array().unwrap();
    assert_eq!(
        input[0]["content"][1],
        json!({"type": "input_image", "image_url": "data:image/png;base64,iVBORw=="})
    );
    assert_eq!(
        input[1],
        json!({"role": "assistant", "content": [{"type": "output_text", "text": "Reading two files."}]})
    );
    assert_eq!(
        input[2],
        json!({"type": "function_call", "call_id": "c1", "name": "read_file", "arguments": "{\"path\":\"a.css\"}"})
    );
    assert_eq!(input[4]["type"], "function_call_output");
    assert_eq!(input[4]["call_id"], "c1");
    assert_eq!(input[4]["output"][1]["type"], "input_image");
    let outputs: Vec<&Value> = input
        .iter()
        .filter(|i| i["type"] == "function_call_output")
        .collect();
    assert_eq!(
        outputs.len(),
        3,
        "every call, the dangling one included, has an output"
    );
    assert_eq!(
        b["tools"][0],
        json!({"type": "function", "name": "read_file", "description": "Read a file", "parameters": conversation().tools[0].input_schema})
    );
}

#[test]
fn gemini_body() {
    let b = build_body(
        &provider(
            Protocol::Gemini,
            "https://generativelanguage.googleapis.com/v1beta",
        ),
        &conversation(),
    );
    assert_eq!(
        b["systemInstruction"]["parts"][0]["text"],
        "You are careful."
    );
    assert_eq!(b["generationConfig"]["maxOutputTokens"], 4096);
    assert_eq!(
        b["generationConfig"]["thinkingConfig"]["thinkingBudget"],
        2048
    );
    let c = b["contents"].as_array().unwrap();
    assert_eq!(
        c[0]["parts"][1],
        json!({"inlineData": {"mimeType": "image/png", "data": "iVBORw=="}})
    );
    assert_eq!(c[1]["role"], "model");
    assert_eq!(
        c[1]["parts"][1],
        json!({"functionCall": {"name": "read_file", "args": {"path": "a.css"}}})
    );
    assert_eq!(
        c[2]["parts"][0],
        json!({"functionResponse": {"name": "read_file", "response": {"content": "body{color:red}"}}})
    );
    assert_eq!(
        c[2]["parts"][1]["functionResponse"]["response"]["error"],
        "no such file"
    );
    assert_eq!(
        c[4]["parts"][0]["functionResponse"]["name"], "bash",
        "answers are named after their call"
    );
    assert_eq!(
        b["tools"][0]["functionDeclarations"][0]["name"],
        "read_file"
    );
}

#[tokio::test]
async fn each_protocol_posts_to_its_path_with_its_auth_header() {
    let cases = [
        (
            Protocol::OpenAiChat,
            "openai-chat/text_then_usage_chunk.sse",
            "/v1/chat/completions",
            "authorization",
            "Bearer k-123",
        ),
        (
            Protocol::OpenAiResponses,
            "openai-responses/text_output_text_delta.sse",
            "/v1/responses",
            "authorization",
            "Bearer k-123",
        ),
        (
            Protocol::Anthropic,
            "anthropic/text_basic_ping.sse",
            "/v1/messages",
            "x-api-key",
            "k-123",
        ),
    ];
    for (protocol, fixture, path, header, value) in cases {
        let server = serve(vec![Reply::sse(
            std::fs::read(fixtures().join(fixture)).unwrap(),
        )])
        .await;
        let p = Provider::new("p", protocol, &server.base, None);
        let body = build_body(&p, &conversation());
        Client::new(RetryPolicy::default())
            .stream(
                &p,
                Some("k-123"),
                "the-model",
                &body,
                &CancellationToken::new(),
                &mut |_, _| {},
            )
            .await
            .unwrap();
        let requests = server.requests.lock().unwrap();
        assert_eq!(requests[0].path, path);
        assert!(
            requests[0]
                .headers
                .iter()
                .any(|(k, v)| k == header && v == value),
            "{protocol:?}: {:?}",
            requests[0].headers
        );
        assert_eq!(requests[0].body, body);
    }
}

#[test]
fn a_constrained_answer_goes_to_an_openai_compatible_server_as_its_json_schema() {
    let mut r = conversation();
    let schema = json!({"anyOf": [{"type": "object"}]});
    r.answer_schema = Some(schema.clone());
    let b = build_body(
        &provider(Protocol::OpenAiChat, "http://127.0.0.1:8080/v1"),
        &r,
    );
    assert_eq!(b["response_format"]["type"], "json_schema");
    assert_eq!(b["response_format"]["json_schema"]["schema"], schema);
    let b = build_body(
        &provider(Protocol::OpenAiChat, "http://127.0.0.1:8080/v1"),
        &conversation(),
    );
    assert!(b.get("response_format").is_none());
}

#[test]
fn each_protocol_gets_the_sampling_it_has() {
    let mut r = conversation();
    r.sampling = codewright_llm::Sampling {
        temperature: Some(0.2),
        top_p: Some(0.9),
        seed: Some(7),
        constrained: false,
    };
    let url = "https://api.example.com/v1";
    let b = build_body(&provider(Protocol::OpenAiChat, url), &r);
    assert_eq!(
        (&b["temperature"], &b["top_p"], &b["seed"]),
        (&json!(0.2), &json!(0.9), &json!(7))
    );
    let b = build_body(&provider(Protocol::Gemini, url), &r);
    assert_eq!(
        b["generationConfig"],
        json!({"maxOutputTokens": 4096, "temperature": 0.2, "topP": 0.9, "seed": 7, "thinkingConfig": {"thinkingBudget": 2048, "includeThoughts": true}})
    );
    let b = build_body(&provider(Protocol::OpenAiResponses, url), &r);
    assert_eq!((&b["temperature"], &b["top_p"]), (&json!(0.2), &json!(0.9)));
    assert!(b.get("seed").is_none(), "the Responses API has no seed");
    // Anthropic refuses sampling beside extended thinking: sent only without it.
    let b = build_body(&provider(Protocol::Anthropic, url), &r);
    assert!(b.get("temperature").is_none() && b.get("top_p").is_none());
    r.thinking_budget = None;
    let b = build_body(&provider(Protocol::Anthropic, url), &r);
    assert_eq!((&b["temperature"], &b["top_p"]), (&json!(0.2), &json!(0.9)));
    assert!(b.get("seed").is_none());
    // Nothing set: nothing sent.
    let b = build_body(&provider(Protocol::OpenAiChat, url), &conversation());
    assert!(b.get("temperature").is_none() && b.get("seed").is_none());
}
