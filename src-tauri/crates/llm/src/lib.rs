//! Model providers: building each protocol's request from the canonical conversation, streaming
//! the answer back into a canonical [`Message`](codewright_protocol::Message), and typed errors.
//!
//! - [`provider`]: built-in and custom providers, base-URL normalisation, [`Timeouts`].
//! - [`request`]: the JSON body each protocol expects.
//! - [`Client`]: HTTP + SSE, retries before the first token (each reported as [`Delta::Retry`]),
//!   cancellation.
//! - [`Assembly`]/[`Delta`]: the streamed answer as it grows.
//! - [`catalog`]: models, their limits and prices; [`credentials`]: keys from the keyring or env.
//! - [`probe`]: a connection test with the user's key and model, and a server's model list.
//!
//! # Timeouts
//!
//! A provider that sends nothing is cut off: no byte of the response within the first-byte
//! timeout of sending the request (the response head included), or no byte for the idle timeout
//! between two chunks, fails the attempt with [`ErrorKind::Timeout`] and a message that says which
//! wait ran out and what to do. Any byte counts, SSE comments and pings included. The defaults
//! depend on where the provider is ([`Provider::is_local`]): hosted 120 s / 120 s, local (Ollama,
//! LM Studio, llama.cpp…) 300 s / 120 s ([`Timeouts::HOSTED`], [`Timeouts::LOCAL`]); a provider's
//! `first_byte_timeout` and `idle_timeout` (`firstByteTimeoutSecs` / `idleTimeoutSecs` in JSON)
//! override them. A timeout before anything arrived is retried at most
//! [`RetryPolicy::max_timeout_retries`] times (default 1), so a stuck provider fails after about
//! twice its timeout; one after content arrived is not retried and keeps the partial answer.
//!
//! A response that is not an event stream (a web page from a wrong base URL or a Wi-Fi login
//! page, a JSON document other than an error) and an event that is not valid JSON fail with
//! [`ErrorKind::BadResponse`], at once and without retries; a JSON error sent with status 200 is
//! classified like an error event.

mod assemble;
pub mod catalog;
mod client;
pub mod credentials;
mod decode;
mod error;
pub mod fake;
pub mod probe;
pub mod provider;
pub mod request;
mod stream;

pub use assemble::{Assembly, Delta, IDLE_TICK};
pub use catalog::{builtin_models, parse_model_id, resolve_model, ModelInfo, ModelRole, Pricing};
pub use client::{
    Client, RetryPolicy, StreamFailure, LOCAL_IDLE, MAX_ANSWER_BYTES, MAX_KEEP_ALIVE_ONLY,
};
pub use codewright_protocol::ToolSpec;
pub use error::{ErrorKind, LlmError, SettingError};
pub use provider::{
    builtin_providers, normalize_base_url, parse_timeout, Protocol, Provider, Timeouts,
};
pub use request::{ChatRequest, Sampling};
pub use stream::{decode_recording, sse_events};
