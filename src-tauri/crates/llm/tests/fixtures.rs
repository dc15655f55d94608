//! Every recorded provider stream (tests/fixtures/sse, from the workplace fixtures), served by a real local HTTP server,
//! decodes to what VALIDATION.txt says — whole, and cut into random chunks down to single bytes.

mod common;

use codewright_llm::{Client, Delta, ErrorKind, LlmError, Protocol, Provider, RetryPolicy};
use codewright_protocol::{Message, Part, StopReason};
use common::{fixtures, serve, Reply};
use std::collections::HashMap;
use tokio_util::sync::CancellationToken;

/// One VALIDATION.txt entry: the file and its key=value facts.
struct Expect {
    file: String,
    facts: HashMap<String, String>,
}

fn validation() -> Vec<Expect> {
    let text = std::fs::read_to_string(fixtures().join("VALIDATION.txt")).unwrap();
    let mut out: Vec<Expect> = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("    ") {
            let last = out.last_mut().expect("facts before a file line");
            last.facts.extend(key_values(rest));
        } else if let Some((file, _)) = line.split_once(".sse:") {
            out.push(Expect {
                file: format!("{file}.sse"),
                facts: HashMap::new(),
            });
        }
    }
    out
}

/// `a=1 b=[(x, 'y z')] c={0: 'q'}` → pairs, honouring brackets and quotes.
fn key_values(s: &str) -> Vec<(String, String)> {
    let chars: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        while i < chars.len() && chars[i] == ' ' {
            i += 1;
        }
        let key_start = i;
        while i < chars.len() && chars[i] != '=' {
            i += 1;
        }
        let key: String = chars[key_start..i].iter().collect();
        i += 1;
        let value_start = i;
        let (mut depth, mut quote) = (0i32, None::<char>);
        while i < chars.len() {
            let c = chars[i];
            match quote {
                Some(q) if c == q && chars[i - 1] != '\\' => quote = None,
                Some(_) => {}
                None if c == '\'' || c == '"' => quote = Some(c),
                None if "[({".contains(c) => depth += 1,
                None if "])}".contains(c) => depth -= 1,
                None if c == ' ' && depth == 0 => break,
                None => {}
            }
            i += 1;
        }
        out.push((
            key.trim().to_string(),
            chars[value_start..i].iter().collect(),
        ));
    }
    out
}

/// The top-level tuples of a Python list literal, each as its comma-separated fields.
fn tuples(list: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut depth = 0;
    let mut current = String::new();
    for c in list
        .trim()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .chars()
    {
        match c {
            '(' => {
                depth += 1;
                if depth > 1 {
                    current.push(c);
                }
            }
            ')' => {
                depth -= 1;
                if depth == 0 {
                    out.push(split_fields(&current));
                    current.clear();
                } else {
                    current.push(c);
                }
            }
            _ if depth > 0 => current.push(c),
            _ => {}
        }
    }
    out
}

fn split_fields(s: &str) -> Vec<String> {
    let mut fields = Vec::new();
    let (mut depth, mut cur) = (0, String::new());
    for c in s.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                fields.push(cur.trim().trim_matches('\'').to_string());
                cur.clear();
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    fields.push(cur.trim().trim_matches('\'').to_string());
    fields
}

/// `{0: 92, 1: 'x'}` → value for key 0.
fn key0(map: &str) -> Option<String> {
    map.trim_matches(|c| c == '{' || c == '}')
        .split(", ")
        .find_map(|kv| {
            kv.strip_prefix("0: ")
                .map(|v| v.trim_matches('\'').to_string())
        })
}

fn protocol_of(file: &str) -> Protocol {
    match file.split('/').next().unwrap() {
        "anthropic" => Protocol::Anthropic,
        "openai-responses" => Protocol::OpenAiResponses,
        _ => Protocol::OpenAiChat,
    }
}

/// Serves `body` and decodes it; returns the message (or error) and the text deltas seen.
async fn decode(
    protocol: Protocol,
    body: Vec<u8>,
    split: Option<(u64, usize)>,
) -> (Result<Message, LlmError>, String) {
    let server = serve(vec![Reply {
        split,
        ..Reply::sse(body)
    }])
    .await;
    let provider = Provider::new("fixture", protocol, &format!("{}/v1", server.base), None);
    let client = Client::new(RetryPolicy {
        max_retries: 0,
        ..Default::default()
    });
    let mut streamed = String::new();
    let result = client
        .stream(
            &provider,
            None,
            "m",
            &serde_json::json!({}),
            &CancellationToken::new(),
            &mut |d, _| {
                if let Delta::Text(t) = d {
                    streamed.push_str(t);
                }
            },
        )
        .await
        .map_err(|f| f.error);
    (result, streamed)
}

fn chars(s: &str) -> usize {
    s.chars().count()
}

fn check(expect: &Expect, result: &Result<Message, LlmError>) {
    let f = &expect.facts;
    let file = &expect.file;
    let stop_expected = |reason: &str| match reason {
        "tool_calls" | "tool_use" => StopReason::ToolUse,
        "length" | "max_tokens" => StopReason::MaxTokens,
        _ => StopReason::EndTurn,
    };
    if let Some(blocks) = f.get("blocks") {
        // Anthropic.
        if f["message_stop"] == "False" && f["stop"] == "None" {
            let err = result.as_ref().expect_err(file);
            assert_eq!(err.kind, ErrorKind::StreamEndedEarly, "{file}");
            return;
        }
        let m = result.as_ref().unwrap_or_else(|e| panic!("{file}: {e}"));
        let wanted: Vec<Vec<String>> = tuples(blocks)
            .into_iter()
            .filter(|b| {
                matches!(b[1].as_str(), "thinking" | "redacted_thinking" | "tool_use")
                    || (b[1] == "text" && b[3] != "0")
            })
            .collect();
        assert_eq!(m.parts.len(), wanted.len(), "{file}: {:?}", m.parts);
        for (part, want) in m.parts.iter().zip(&wanted) {
            match (want[1].as_str(), part) {
                ("text", Part::Text { text }) => {
                    assert_eq!(chars(text).to_string(), want[3], "{file}")
                }
                (
                    "thinking",
                    Part::Thinking {
                        text, signature, ..
                    },
                ) => {
                    assert_eq!(chars(text).to_string(), want[3], "{file}");
                    assert_eq!(signature.is_some(), want[4] == "1", "{file} signature");
                }
                ("redacted_thinking", Part::Thinking { redacted, .. }) => {
                    assert!(redacted.is_some(), "{file}")
                }
                (
                    "tool_use",
                    Part::ToolCall {
                        name,
                        arguments,
                        truncated,
                        ..
                    },
                ) => {
                    assert_eq!(name, &want[2], "{file}");
                    let len = if want[5] == "0" {
                        "{}".len()
                    } else {
                        want[5].parse().unwrap()
                    };
                    assert_eq!(arguments.len(), len, "{file}");
                    assert_eq!(
                        *truncated,
                        f["input_json_ok"] == "False",
                        "{file} truncated"
                    );
                }
                (kind, part) => panic!("{file}: expected a {kind} block, got {part:?}"),
            }
        }
        assert_eq!(m.stop_reason, Some(stop_expected(&f["stop"])), "{file}");
        let usage = m.usage.expect("usage");
        assert_eq!(usage.output.to_string(), f["out_tokens"], "{file}");
        assert_eq!(usage.input.to_string(), f["in_tokens"], "{file}");
    } else if let Some(calls) = f.get("calls") {
        // OpenAI Chat and compatible servers.
        if f["errors"] != "[]" {
            let err = result.as_ref().expect_err(file);
            assert_ne!(err.kind, ErrorKind::StreamEndedEarly, "{file}");
            assert!(
                err.message.contains("Tool call validation failed"),
                "{file}: {}",
                err.message
            );
            return;
        }
        let m = result.as_ref().unwrap_or_else(|e| panic!("{file}: {e}"));
        let wanted: Vec<Vec<String>> = tuples(calls)
            .into_iter()
            .filter(|c| c[0].trim_start_matches('(').starts_with("0,"))
            .collect();
        let got: Vec<_> = m.tool_calls().collect();
        assert_eq!(got.len(), wanted.len(), "{file}: {:?}", m.parts);
        for (call, want) in got.iter().zip(&wanted) {
            assert_eq!(call.name, want[1], "{file}");
            assert_eq!(call.arguments.len().to_string(), want[2], "{file}");
            assert!(
                serde_json::from_str::<serde_json::Value>(call.arguments).is_ok(),
                "{file}"
            );
        }
        assert_eq!(
            chars(&m.text()).to_string(),
            key0(&f["text_len"]).unwrap_or("0".into()),
            "{file}"
        );
        let thinking = m.parts.iter().any(|p| matches!(p, Part::Thinking { .. }));
        assert_eq!(thinking, f["reasoning_chunks"] != "0", "{file}");
        assert_eq!(
            m.stop_reason,
            Some(stop_expected(&key0(&f["finish"]).unwrap())),
            "{file}"
        );
        match f["usage_total"].as_str() {
            "None" => assert!(m.usage.is_none(), "{file}"),
            total => {
                let u = m.usage.unwrap();
                assert_eq!(
                    (u.input + u.cache_read + u.output).to_string(),
                    total,
                    "{file}"
                );
            }
        }
    } else {
        // OpenAI Responses.
        if f["last"] == "response.failed" {
            let err = result.as_ref().expect_err(file);
            assert!(err.message.contains("quota"), "{file}: {}", err.message);
            return;
        }
        let m = result.as_ref().unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(m.tool_calls().count().to_string(), f["fc_items"], "{file}");
        assert_eq!(chars(&m.text()).to_string(), f["text_chars"], "{file}");
        for call in m.tool_calls() {
            assert!(
                serde_json::from_str::<serde_json::Value>(call.arguments).is_ok(),
                "{file}"
            );
        }
        let expected_stop = if f["last"] == "response.incomplete" {
            StopReason::MaxTokens
        } else if f["fc_items"] != "0" {
            StopReason::ToolUse
        } else {
            StopReason::EndTurn
        };
        assert_eq!(m.stop_reason, Some(expected_stop), "{file}");
        if f["usage_total"] != "None" && f["usage_total"] != "0" {
            let u = m.usage.unwrap();
            assert_eq!(
                (u.input + u.cache_read + u.output).to_string(),
                f["usage_total"],
                "{file}"
            );
        }
    }
}

#[tokio::test]
async fn every_recorded_stream_decodes_as_validation_describes() {
    let all = validation();
    assert!(
        all.len() >= 37,
        "VALIDATION.txt lists {} streams",
        all.len()
    );
    for expect in &all {
        let body = std::fs::read(fixtures().join(&expect.file)).unwrap();
        let (result, streamed) = decode(protocol_of(&expect.file), body, None).await;
        check(expect, &result);
        if let Ok(m) = &result {
            assert_eq!(
                streamed,
                m.parts
                    .iter()
                    .filter_map(|p| match p {
                        Part::Text { text } => Some(text.as_str()),
                        _ => None,
                    })
                    .collect::<String>(),
                "{}: the deltas add up to the message",
                expect.file
            );
        }
    }
}

#[tokio::test]
async fn random_chunk_splits_decode_identically() {
    for expect in validation() {
        let body = std::fs::read(fixtures().join(&expect.file)).unwrap();
        let protocol = protocol_of(&expect.file);
        let (whole, _) = decode(protocol, body.clone(), None).await;
        // Every stream up to 16 KB (most of them) down to single bytes; the few large ones in
        // pieces of up to 64 and 700 bytes, which keeps a debug-build run short.
        let cuts: &[(u64, usize)] = if body.len() <= 16 * 1024 {
            &[
                (0x9E37_79B9_7F4A_7C15, 1),
                (42, 7),
                (7, 64),
                (1_234_567, 700),
            ]
        } else {
            &[(7, 64), (1_234_567, 700)]
        };
        for &(seed, max) in cuts {
            let (split, _) = decode(protocol, body.clone(), Some((seed, max))).await;
            match (&whole, &split) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "{} split by up to {max} bytes", expect.file),
                (Err(a), Err(b)) => {
                    assert_eq!(a.kind, b.kind, "{} split by up to {max} bytes", expect.file)
                }
                _ => panic!("{}: whole {whole:?} vs split {split:?}", expect.file),
            }
        }
    }
}

#[tokio::test]
async fn crlf_framing_decodes_like_lf() {
    let body =
        std::fs::read_to_string(fixtures().join("anthropic/text_then_tool_use.sse")).unwrap();
    let (lf, _) = decode(Protocol::Anthropic, body.clone().into_bytes(), None).await;
    let (crlf, _) = decode(
        Protocol::Anthropic,
        body.replace('\n', "\r\n").into_bytes(),
        Some((3, 5)),
    )
    .await;
    assert_eq!(lf.unwrap(), crlf.unwrap());
}

#[tokio::test]
async fn a_real_local_servers_streams_decode_without_usage_and_with_a_forced_call() {
    // llama-cpp-python 0.3.36: no usage chunk although it was asked for; the usage is missing,
    // not zero (the agent estimates it).
    let dir = fixtures().join("local-servers");
    let body = std::fs::read(dir.join("llamacpp_python_smollm2_text_no_usage.sse")).unwrap();
    let (result, streamed) = decode(Protocol::OpenAiChat, body, None).await;
    let message = result.unwrap();
    assert_eq!(message.usage, None);
    assert_eq!(message.stop_reason, Some(StopReason::EndTurn));
    assert!(streamed.starts_with("Je ne sais pas"), "{streamed}");
    // A call streamed with `content: null` and `function_call: null` beside it.
    let body = std::fs::read(dir.join("llamacpp_python_forced_tool_call.sse")).unwrap();
    let (result, _) = decode(Protocol::OpenAiChat, body, Some((7, 64))).await;
    let message = result.unwrap();
    let calls: Vec<_> = message.tool_calls().collect();
    assert_eq!(calls.len(), 1, "{message:?}");
    assert_eq!(calls[0].name, "read_file");
    assert!(
        serde_json::from_str::<serde_json::Value>(calls[0].arguments)
            .unwrap()
            .get("path")
            .is_some()
    );
}
