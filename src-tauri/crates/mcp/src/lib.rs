//! Codewright's MCP client. Servers users already run with Claude Desktop, Cursor or Claude Code
//! work unchanged: configured in the store ([`codewright_store::McpServerRow`]), imported from
//! their `mcpServers` JSON ([`import`]), connected over stdio, streamable HTTP or legacy SSE
//! ([`client`]; legacy SSE is our own transport, `sse`, and so is stdio, `stdio`, to bound what a server sends), and their tools merged into the registry as `server__tool` ([`names`]),
//! kept current when a server says its tools changed ([`servers`]).

pub mod client;
pub mod import;
pub mod names;
pub mod servers;
mod sse;
mod stdio;

pub use client::{
    CallOutcome, Connection, Endpoint, McpFailure, Notice, OnProgress, ProgressUpdate,
    PromptArgument, PromptInfo, RemoteTool,
};
pub use servers::{endpoint, McpServers, Redactor, ServerState};
