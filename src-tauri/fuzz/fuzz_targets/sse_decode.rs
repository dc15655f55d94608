//! SSE framing and each provider's stream decoder and assembler, through
//! `codewright_llm::decode_recording` (`sse_events`' framing, the protocol's decoder, then
//! `Assembly::finish`). First byte: bits 0-1 pick the protocol (OpenAI chat, OpenAI Responses,
//! Anthropic, Gemini), bits 2-7 a chunk size of 1-64 bytes; the rest is the response body.
//!
//! Checks that nothing panics; that a finished message keeps `Assembly::finish`'s promises (no
//! empty text part, the arguments of every call not marked truncated are JSON); and that the SSE
//! framing (`sse_events`: whole lines handed to `eventsource-stream`), fed as `pump` feeds it (the
//! body, then "\n\n"), gives the same events whether the body comes whole or cut into chunks.
#![no_main]

use codewright_llm::{decode_recording, sse_events, Protocol};
use codewright_protocol::Part;
use futures::stream::{self, StreamExt};
use std::convert::Infallible;
use std::sync::OnceLock;
use tokio::runtime::Runtime;

const PROTOCOLS: [Protocol; 4] = [
    Protocol::OpenAiChat,
    Protocol::OpenAiResponses,
    Protocol::Anthropic,
    Protocol::Gemini,
];

/// `pump` times its reads with `tokio::time`: it needs a runtime with timers.
fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("a runtime")
    })
}

/// The events (name, data) framed from `chunks` up to the first error, and whether there was one.
async fn frame<'a>(chunks: impl Iterator<Item = &'a [u8]>) -> (Vec<(String, String)>, bool) {
    let body = stream::iter(
        chunks
            .chain([&b"\n\n"[..]])
            .map(|c| Ok::<_, Infallible>(bytes::Bytes::copy_from_slice(c))),
    );
    let mut events = std::pin::pin!(sse_events(body));
    let mut out = Vec::new();
    while let Some(event) = events.next().await {
        match event {
            Ok(event) => out.push((event.event, event.data)),
            Err(_) => return (out, true),
        }
    }
    (out, false)
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some((&head, body)) = data.split_first() else {
        return;
    };
    let protocol = PROTOCOLS[usize::from(head & 3)];
    let size = usize::from(head >> 2) + 1;
    let runtime = runtime();

    if let Ok(message) = runtime.block_on(decode_recording(protocol, body)) {
        for part in &message.parts {
            match part {
                Part::Text { text } => assert!(!text.is_empty(), "an empty text part was kept"),
                Part::ToolCall {
                    arguments,
                    truncated: false,
                    ..
                } => assert!(
                    serde_json::from_str::<serde_json::Value>(arguments).is_ok(),
                    "a call with arguments that are not JSON is not marked truncated: {arguments:?}"
                ),
                _ => {}
            }
        }
    }

    let whole = runtime.block_on(frame(std::iter::once(body)));
    let chunked = runtime.block_on(frame(body.chunks(size)));
    assert_eq!(whole, chunked, "the events depend on where the body is cut ({size}-byte chunks)");
});
