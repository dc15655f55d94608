//! The text (non-native) tool-call parser: `codewright_agent::text_calls::parse` on the input as
//! a model's answer (lossy UTF-8), then `text_calls::coerce` of every call it found, against a
//! `read_file`-like schema and against none, as the agent loop does (`run.rs`, `with_text_calls`).
//!
//! Checks that nothing panics and that a call coerced against a schema has object arguments.
#![no_main]

use codewright_agent::text_calls::{coerce, parse};
use codewright_protocol::ToolSpec;
use serde_json::json;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let answer = String::from_utf8_lossy(data);
    let parsed = parse(&answer);
    let spec = ToolSpec {
        name: "read_file".into(),
        description: String::new(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "offset": {"type": ["integer", "null"]},
                "limit": {"type": ["integer", "null"]}
            },
            "required": ["path"]
        }),
    };
    for call in &parsed.calls {
        assert!(coerce(call, Some(&spec)).is_object(), "{call:?}");
        let _ = coerce(call, None);
    }
});
