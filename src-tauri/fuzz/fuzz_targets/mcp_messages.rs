//! MCP message framing and decoding as Codewright's client reads a server. First byte: bit 0
//! picks the transport, bits 1-7 a read size of 1-128 bytes; the rest is what the server sent.
//! - stdio (bit 0 clear): rmcp's `AsyncRwTransport`, which `TokioChildProcess` reads a server's
//!   stdout with, over a reader handing out `size` bytes at a time; `Transport::receive` until
//!   the end.
//! - legacy SSE (bit 0 set): what `codewright_mcp`'s own legacy SSE transport (`sse.rs`) does
//!   with the event stream: `codewright_llm::sse_events` over `size`-byte chunks, and the data of each
//!   `message` event as an `RxJsonRpcMessage<RoleClient>`, up to the first framing error.
//!
//! The tools of every `tools/list` result are then named as `McpServers` names them
//! (`codewright_mcp::names::tool_name`); each name must be one providers accept,
//! `[A-Za-z0-9_-]{1,64}`, and never one already taken.
#![no_main]

use codewright_mcp::names::tool_name;
use futures::executor::block_on;
use futures::stream::{self, StreamExt};
use rmcp::model::{JsonRpcMessage, ServerResult};
use rmcp::service::RxJsonRpcMessage;
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::Transport;
use rmcp::RoleClient;
use std::collections::HashSet;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, ReadBuf};

type Message = RxJsonRpcMessage<RoleClient>;

/// A server's output, arriving `step` bytes at a time.
struct Trickle<'a> {
    data: &'a [u8],
    step: usize,
}

impl AsyncRead for Trickle<'_> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let data = self.data;
        let (head, rest) = data.split_at(self.step.min(data.len()).min(buf.remaining()));
        buf.put_slice(head);
        self.data = rest;
        Poll::Ready(Ok(()))
    }
}

fn stdio(data: &[u8], step: usize) -> Vec<Message> {
    let mut transport =
        AsyncRwTransport::<RoleClient, _, _>::new_client(Trickle { data, step }, tokio::io::sink());
    block_on(async {
        let mut out: Vec<Message> = Vec::new();
        while let Some(message) = transport.receive().await {
            out.push(message);
        }
        out
    })
}

fn legacy_sse(data: &[u8], step: usize) -> Vec<Message> {
    let body = stream::iter(
        data.chunks(step)
            .map(|c| Ok::<_, std::convert::Infallible>(bytes::Bytes::copy_from_slice(c))),
    );
    block_on(async {
        // As `codewright-mcp` reads it (a crash on a leading byte-order mark was found here).
        let mut events = std::pin::pin!(codewright_llm::sse_events(body));
        let mut out: Vec<Message> = Vec::new();
        while let Some(Ok(event)) = events.next().await {
            if event.event != "message" && !event.event.is_empty() {
                continue;
            }
            if let Ok(message) = serde_json::from_str(&event.data) {
                out.push(message);
            }
        }
        out
    })
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some((&head, body)) = data.split_first() else {
        return;
    };
    let step = usize::from(head >> 1) + 1;
    let messages = if head & 1 == 0 {
        stdio(body, step)
    } else {
        legacy_sse(body, step)
    };

    let mut taken: HashSet<String> = HashSet::new();
    for message in &messages {
        let JsonRpcMessage::Response(response) = message else {
            continue;
        };
        let ServerResult::ListToolsResult(list) = &response.result else {
            continue;
        };
        for tool in &list.tools {
            let before = taken.len();
            let name = tool_name("server", &tool.name, &mut taken);
            assert!(
                (1..=64).contains(&name.len())
                    && name
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'),
                "{:?} became {name:?}",
                tool.name
            );
            assert_eq!(taken.len(), before + 1, "{name:?} was already taken");
        }
    }
});
