//! Codewright's MCP client. Servers users already run with Claude Desktop, Cursor or Claude Code
//! work unchanged: configured in the store ([`codewright_store::McpServerRow`]), imported from
//! their `mcpServers` JSON ([`import`]), connected over stdio or streamable HTTP ([`client`]),
//! and their tools merged into the registry as `server__tool` ([`names`]).

pub mod client;
pub mod import;
pub mod names;
pub mod servers;

pub use client::{CallOutcome, Connection, Endpoint, McpFailure, Notice, RemoteTool};
pub use servers::{endpoint, McpServers, ServerState};
