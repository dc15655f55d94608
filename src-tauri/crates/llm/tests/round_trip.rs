//! Round trips: a recorded response decoded into the canonical message, put back into the history,
//! comes out in the next request as the provider sent it (ids, arguments, thinking and its
//! signature intact). And Gemini, which has no recording here, decoded from its documented shape.

mod common;

use codewright_llm::request::build_body;
use codewright_llm::{decode_recording, ChatRequest, Protocol, Provider};
use codewright_protocol::{Message, Part, StopReason};
use common::fixtures;
use serde_json::{json, Value};

fn recorded(path: &str) -> Vec<u8> {
    std::fs::read(fixtures().join(path)).unwrap()
}

/// The `data:` JSON of every event in a recording.
fn events(body: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(body)
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str(d.trim()).ok())
        .collect()
}

fn next_request(protocol: Protocol, answer: Message) -> Value {
    let provider = Provider::new("p", protocol, "https://example.com/v1", None);
    let request = ChatRequest {
        model: "m".into(),
        system: None,
        messages: vec![Message::user("go"), answer],
        tools: vec![],
        max_output_tokens: 1000,
        thinking_budget: None,
        sampling: Default::default(),
        answer_schema: None,
    };
    build_body(&provider, &request)
}

#[tokio::test]
async fn anthropic_thinking_and_tool_use_go_back_as_they_came() {
    let body = recorded("anthropic/thinking_then_tool_use.sse");
    let answer = decode_recording(Protocol::Anthropic, &body).await.unwrap();
    let sent = next_request(Protocol::Anthropic, answer);
    let blocks = sent["messages"][1]["content"].as_array().unwrap().clone();

    // Rebuild the blocks the provider streamed, from its own events.
    let mut thinking = String::new();
    let mut signature = String::new();
    let mut input = String::new();
    let mut tool = Value::Null;
    for e in events(&body) {
        match (e["type"].as_str(), e["delta"]["type"].as_str()) {
            (Some("content_block_start"), _) if e["content_block"]["type"] == "tool_use" => {
                tool = e["content_block"].clone()
            }
            (_, Some("thinking_delta")) => {
                thinking.push_str(e["delta"]["thinking"].as_str().unwrap())
            }
            (_, Some("signature_delta")) => {
                signature.push_str(e["delta"]["signature"].as_str().unwrap())
            }
            (_, Some("input_json_delta")) => {
                input.push_str(e["delta"]["partial_json"].as_str().unwrap())
            }
            _ => {}
        }
    }
    let input: Value = if input.is_empty() {
        json!({})
    } else {
        serde_json::from_str(&input).unwrap()
    };
    assert_eq!(
        blocks[0],
        json!({"type": "thinking", "thinking": thinking, "signature": signature})
    );
    assert_eq!(
        blocks[1],
        json!({"type": "tool_use", "id": tool["id"], "name": tool["name"], "input": input})
    );
    // The call had no result: the next request answers it rather than sending it dangling.
    assert_eq!(sent["messages"][2]["content"][0]["tool_use_id"], tool["id"]);
}

#[tokio::test]
async fn openai_parallel_calls_go_back_with_their_ids_and_arguments() {
    let body = recorded("openai-chat/parallel_tool_calls_args_split.sse");
    let answer = decode_recording(Protocol::OpenAiChat, &body).await.unwrap();
    let sent = next_request(Protocol::OpenAiChat, answer);
    let calls = sent["messages"][1]["tool_calls"].as_array().unwrap();
    let mut streamed: Vec<(String, String, String)> = Vec::new();
    for e in events(&body) {
        for c in e["choices"][0]["delta"]["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let i = c["index"].as_u64().unwrap() as usize;
            if streamed.len() <= i {
                streamed.push((
                    c["id"].as_str().unwrap().into(),
                    c["function"]["name"].as_str().unwrap().into(),
                    String::new(),
                ));
            }
            streamed[i]
                .2
                .push_str(c["function"]["arguments"].as_str().unwrap_or(""));
        }
    }
    assert_eq!(calls.len(), streamed.len());
    for (call, (id, name, args)) in calls.iter().zip(&streamed) {
        assert_eq!(call["id"], id.as_str());
        assert_eq!(call["function"]["name"], name.as_str());
        assert_eq!(call["function"]["arguments"], args.as_str());
    }
}

#[tokio::test]
async fn responses_function_calls_go_back_with_their_call_ids() {
    let body = recorded("openai-responses/function_call_args_delta.sse");
    let answer = decode_recording(Protocol::OpenAiResponses, &body)
        .await
        .unwrap();
    let sent = next_request(Protocol::OpenAiResponses, answer);
    let done = events(&body)
        .into_iter()
        .find(|e| e["type"] == "response.output_item.done" && e["item"]["type"] == "function_call")
        .unwrap();
    let call = sent["input"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["type"] == "function_call")
        .unwrap();
    assert_eq!(call["call_id"], done["item"]["call_id"]);
    assert_eq!(call["name"], done["item"]["name"]);
    assert_eq!(call["arguments"], done["item"]["arguments"]);
}

/// Gemini: no recording is available here, so this stream is built from the documented
/// `GenerateContentResponse` shape (thought parts, a functionCall, usageMetadata, finishReason).
#[tokio::test]
async fn gemini_stream_decodes_thoughts_text_calls_and_usage() {
    let events = [
        json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "Checking the file", "thought": true}]}}]}),
        json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "I will read "}]}}]}),
        json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "it."}, {"functionCall": {"name": "read_file", "args": {"path": "src/main.rs"}}, "thoughtSignature": "c2ln"}]}, "finishReason": "STOP"}],
               "usageMetadata": {"promptTokenCount": 120, "candidatesTokenCount": 30, "thoughtsTokenCount": 12, "cachedContentTokenCount": 20}}),
    ];
    let body: String = events
        .iter()
        .map(|e| format!("data: {e}\r\n\r\n"))
        .collect();
    let m = decode_recording(Protocol::Gemini, body.as_bytes())
        .await
        .unwrap();
    assert!(matches!(&m.parts[0], Part::Thinking { text, .. } if text == "Checking the file"));
    assert_eq!(m.text(), "I will read it.");
    let call = m.tool_calls().next().unwrap();
    assert_eq!(
        (call.name, call.arguments),
        ("read_file", r#"{"path":"src/main.rs"}"#)
    );
    assert_eq!(m.stop_reason, Some(StopReason::ToolUse));
    let u = m.usage.unwrap();
    assert_eq!(
        (u.input, u.cache_read, u.output, u.reasoning),
        (100, 20, 42, 12)
    );
    // And back: the call goes out as a functionCall with its arguments as an object.
    let sent = next_request(Protocol::Gemini, m);
    let parts = sent["contents"][1]["parts"].as_array().unwrap();
    // ...with the thought signature it came with (Gemini 3 rejects calls sent back without it).
    let call = json!({"functionCall": {"name": "read_file", "args": {"path": "src/main.rs"}}, "thoughtSignature": "c2ln"});
    assert!(parts.contains(&call), "{parts:?}");
    assert_eq!(
        sent["contents"][2]["parts"][0]["functionResponse"]["name"],
        "read_file"
    );

    // A stream that stops without a finishReason is incomplete.
    let cut: String = events[..2]
        .iter()
        .map(|e| format!("data: {e}\n\n"))
        .collect();
    let err = decode_recording(Protocol::Gemini, cut.as_bytes())
        .await
        .unwrap_err();
    assert_eq!(err.kind, codewright_llm::ErrorKind::StreamEndedEarly);
}

#[tokio::test]
async fn responses_encrypted_reasoning_goes_back_before_the_call_it_led_to() {
    let body = recorded("openai-responses/reasoning_text_and_function_call.sse");
    let answer = decode_recording(Protocol::OpenAiResponses, &body)
        .await
        .unwrap();
    let reasoning = events(&body)
        .into_iter()
        .find(|e| e["type"] == "response.output_item.done" && e["item"]["type"] == "reasoning")
        .expect("the recording has a reasoning item");
    let mut request = ChatRequest {
        model: "m".into(),
        system: None,
        messages: vec![Message::user("go"), answer],
        tools: vec![],
        max_output_tokens: 1000,
        thinking_budget: Some(8000),
        sampling: Default::default(),
        answer_schema: None,
    };
    let provider = Provider::new(
        "p",
        Protocol::OpenAiResponses,
        "https://api.openai.com/v1",
        None,
    );
    let sent = build_body(&provider, &request);
    let input = sent["input"].as_array().unwrap();
    let at = input
        .iter()
        .position(|i| i["type"] == "reasoning")
        .expect("reasoning is sent back");
    assert_eq!(input[at]["id"], reasoning["item"]["id"]);
    assert_eq!(
        input[at]["encrypted_content"],
        reasoning["item"]["encrypted_content"]
    );
    let call = input
        .iter()
        .position(|i| i["type"] == "function_call")
        .unwrap();
    assert!(at < call, "reasoning precedes its call");
    assert_eq!(sent["include"], json!(["reasoning.encrypted_content"]));
    assert_eq!(sent["reasoning"]["effort"], "medium");
    request.thinking_budget = None;
    let sent = build_body(&provider, &request);
    assert!(sent.get("reasoning").is_none() && sent.get("include").is_none());
}
