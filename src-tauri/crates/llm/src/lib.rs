//! Model providers: building each protocol's request from the canonical conversation, streaming
//! the answer back into a canonical [`Message`](codewright_protocol::Message), and typed errors.
//!
//! - [`provider`]: built-in and custom providers, base-URL normalisation.
//! - [`request`]: the JSON body each protocol expects.
//! - [`Client`]: HTTP + SSE, retries before the first token, cancellation.
//! - [`Assembly`]/[`Delta`]: the streamed answer as it grows.
//! - [`catalog`]: models, their limits and prices; [`credentials`]: keys from the keyring or env.

mod assemble;
pub mod catalog;
mod client;
pub mod credentials;
mod decode;
mod error;
pub mod provider;
pub mod request;
mod stream;

pub use assemble::{Assembly, Delta, IDLE_TICK};
pub use catalog::{builtin_models, parse_model_id, resolve_model, ModelInfo, ModelRole, Pricing};
pub use client::{Client, RetryPolicy, StreamFailure};
pub use codewright_protocol::ToolSpec;
pub use error::{ErrorKind, LlmError};
pub use provider::{builtin_providers, normalize_base_url, Protocol, Provider};
pub use request::ChatRequest;
pub use stream::decode_recording;
