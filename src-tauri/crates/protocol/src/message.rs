//! The one conversation type. A [`Message`] is a role plus ordered [`Part`]s; everything else —
//! the tool calls of a message, its text — is computed from the parts, never stored twice.
//! Provider adapters translate to and from this shape; the store keeps it as JSON.

use serde::{Deserialize, Serialize};

/// Who a message is from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    System,
    User,
    Assistant,
    /// Results of tool calls, sent back to the model.
    Tool,
}

impl Role {
    /// The name stored in the database.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }

    /// Parses a stored name.
    pub fn parse(s: &str) -> Option<Role> {
        [Role::System, Role::User, Role::Assistant, Role::Tool]
            .into_iter()
            .find(|r| r.as_str() == s)
    }
}

/// One piece of a message, in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Part {
    Text {
        text: String,
    },
    /// The model's reasoning. `signature` (Anthropic) and `redacted` (an encrypted block the
    /// provider withheld) are opaque and must be sent back unchanged.
    Thinking {
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        redacted: Option<String>,
    },
    /// A call the model made. `arguments` is the JSON text exactly as the model wrote it.
    /// `truncated` marks a call cut off by the output limit: it is never executed. `signature`
    /// is an opaque provider token tied to the call (Gemini's thought signature), sent back as is.
    ToolCall {
        id: String,
        name: String,
        arguments: String,
        #[serde(default, skip_serializing_if = "is_false")]
        truncated: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    /// The answer to the tool call `call_id`: `content` goes to the model; `detail` is what the
    /// tool panel shows (never sent to a provider).
    ToolResult {
        call_id: String,
        content: Vec<ToolContent>,
        #[serde(default, skip_serializing_if = "is_false")]
        is_error: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        detail: Option<Box<crate::ToolDetail>>,
    },
    /// Something the user attached.
    Attachment(Attachment),
}

/// The most a tool call's arguments may hold (1 MiB, more than any model writes in one answer).
/// Past it the arguments are not kept — not in memory, the store or later requests — and the call
/// is not run: its arguments become [`omitted_arguments`] and it is marked `truncated`.
pub const MAX_CALL_ARGUMENTS: usize = 1024 * 1024;

/// The arguments a call over [`MAX_CALL_ARGUMENTS`] is kept with: valid JSON saying how many bytes
/// were left out.
pub fn omitted_arguments(bytes: u64) -> String {
    format!("{{\"codewrightOmittedBytes\":{bytes}}}")
}

/// How many bytes of arguments a call kept with [`omitted_arguments`] had; `None` for any other.
pub fn omitted_bytes(arguments: &str) -> Option<u64> {
    arguments
        .strip_prefix("{\"codewrightOmittedBytes\":")?
        .strip_suffix('}')?
        .parse()
        .ok()
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// Content of a tool result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolContent {
    Text {
        text: String,
    },
    /// An image, base64-encoded.
    Image {
        mime: String,
        data: String,
    },
}

impl ToolContent {
    /// The text, or `[image]` for an image (for logs, previews and text-only models).
    pub fn as_text(&self) -> &str {
        match self {
            ToolContent::Text { text } => text,
            ToolContent::Image { .. } => "[image]",
        }
    }

    /// The text parts of a tool result joined by newlines; images are left out.
    pub fn joined_text(content: &[ToolContent]) -> String {
        content
            .iter()
            .filter_map(|c| match c {
                ToolContent::Text { text } => Some(text.as_str()),
                ToolContent::Image { .. } => None,
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// What kind of thing is attached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttachmentKind {
    Image,
    File,
    Snippet,
}

/// A file, image or code snippet the user attached: by path, or inline (base64).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Attachment {
    pub kind: AttachmentKind,
    pub name: String,
    pub mime: String,
    pub size: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Base64 of the bytes, when attached inline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<String>,
}

/// Tokens an assistant message cost, by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Usage {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    pub reasoning: u64,
    /// The provider did not report usage (some local servers never do): Codewright estimated
    /// it from the text, about 4 characters a token.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub estimated: bool,
}

impl Usage {
    /// Adds another usage report to this one.
    pub fn add(&mut self, other: &Usage) {
        self.input += other.input;
        self.output += other.output;
        self.cache_read += other.cache_read;
        self.cache_write += other.cache_write;
        self.reasoning += other.reasoning;
        self.estimated |= other.estimated;
    }
}

/// Why the model stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    EndTurn,
    ToolUse,
    MaxTokens,
    ContentFilter,
    Error,
    Aborted,
}

/// A borrowed view of one tool call in a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolCallRef<'a> {
    pub id: &'a str,
    pub name: &'a str,
    pub arguments: &'a str,
    pub truncated: bool,
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    pub role: Role,
    pub parts: Vec<Part>,
    /// For assistant messages: what it cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// For assistant messages: the model that wrote it (`model@provider`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<StopReason>,
    /// For an answer cut off by an error: what the user was told.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Message {
    /// A message with the given parts and nothing else.
    pub fn new(role: Role, parts: Vec<Part>) -> Message {
        Message {
            role,
            parts,
            usage: None,
            model: None,
            stop_reason: None,
            error: None,
        }
    }

    /// A user message of plain text.
    pub fn user(text: impl Into<String>) -> Message {
        Message::new(Role::User, vec![Part::Text { text: text.into() }])
    }

    /// The user's message: its text (left out when empty) and what they attached.
    pub fn user_with(text: impl Into<String>, attachments: Vec<Attachment>) -> Message {
        let text = text.into();
        let parts = (!text.is_empty())
            .then_some(Part::Text { text })
            .into_iter()
            .chain(attachments.into_iter().map(Part::Attachment))
            .collect();
        Message::new(Role::User, parts)
    }

    /// A user's message that says nothing: no text but white space, nothing attached.
    pub fn is_empty_prompt(&self) -> bool {
        self.parts.iter().all(|part| match part {
            Part::Text { text } => text.trim().is_empty(),
            _ => false,
        })
    }

    /// The tool calls in this message, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = ToolCallRef<'_>> {
        self.parts.iter().filter_map(|part| match part {
            Part::ToolCall {
                id,
                name,
                arguments,
                truncated,
                ..
            } => Some(ToolCallRef {
                id,
                name,
                arguments,
                truncated: *truncated,
            }),
            _ => None,
        })
    }

    /// The visible text (text parts joined by blank lines).
    pub fn text(&self) -> String {
        let texts: Vec<&str> = self
            .parts
            .iter()
            .filter_map(|part| match part {
                Part::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        texts.join("\n\n")
    }
}

/// A user's message of plain text.
impl From<&str> for Message {
    fn from(text: &str) -> Message {
        Message::user(text)
    }
}

/// A user's message of plain text.
impl From<String> for Message {
    fn from(text: String) -> Message {
        Message::user(text)
    }
}
