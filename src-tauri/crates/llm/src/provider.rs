//! Providers: who to call, with which wire protocol, at which URL. Built-in entries cover the
//! providers users pick most; custom ones speak the OpenAI-compatible or Anthropic protocol.

use serde::{Deserialize, Serialize};

/// A wire protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Protocol {
    /// OpenAI Chat Completions, and every OpenAI-compatible server.
    #[serde(rename = "openai")]
    OpenAiChat,
    /// OpenAI Responses API.
    #[serde(rename = "openai-responses")]
    OpenAiResponses,
    /// Anthropic Messages, and Anthropic-compatible servers.
    Anthropic,
    /// Google Gemini `generateContent`.
    Gemini,
}

impl Protocol {
    /// The name used on the command line and in settings.
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::OpenAiChat => "openai",
            Protocol::OpenAiResponses => "openai-responses",
            Protocol::Anthropic => "anthropic",
            Protocol::Gemini => "gemini",
        }
    }

    /// Parses a protocol name, with a message listing the valid ones.
    pub fn parse(s: &str) -> Result<Protocol, String> {
        [
            Protocol::OpenAiChat,
            Protocol::OpenAiResponses,
            Protocol::Anthropic,
            Protocol::Gemini,
        ]
        .into_iter()
        .find(|p| p.as_str() == s)
        .ok_or_else(|| {
            format!("unknown protocol '{s}': use openai, openai-responses, anthropic or gemini")
        })
    }
}

/// A provider a user can send requests to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Provider {
    /// Short lowercase name, used in `model@provider` ids.
    pub name: String,
    pub protocol: Protocol,
    /// Normalised base URL (see [`normalize_base_url`]).
    pub base_url: String,
    /// The environment variable holding the key when the keyring has none; `None` for local
    /// servers that need no key.
    pub api_key_env: Option<String>,
}

impl Provider {
    /// A provider with its base URL normalised.
    pub fn new(
        name: &str,
        protocol: Protocol,
        base_url: &str,
        api_key_env: Option<&str>,
    ) -> Provider {
        Provider {
            name: name.to_string(),
            protocol,
            base_url: normalize_base_url(protocol, base_url),
            api_key_env: api_key_env.map(str::to_owned),
        }
    }

    /// The URL a streaming request for `model` goes to.
    pub fn stream_url(&self, model: &str) -> String {
        match self.protocol {
            Protocol::OpenAiChat => format!("{}/chat/completions", self.base_url),
            Protocol::OpenAiResponses => format!("{}/responses", self.base_url),
            Protocol::Anthropic => format!("{}/messages", self.base_url),
            Protocol::Gemini => format!(
                "{}/models/{model}:streamGenerateContent?alt=sse",
                self.base_url
            ),
        }
    }

    /// The HTTP headers that carry `key` for this protocol.
    pub fn auth_headers(&self, key: Option<&str>) -> Vec<(&'static str, String)> {
        let Some(key) = key else { return Vec::new() };
        match self.protocol {
            Protocol::Anthropic => vec![
                ("x-api-key", key.to_string()),
                ("anthropic-version", "2023-06-01".into()),
            ],
            Protocol::Gemini => vec![("x-goog-api-key", key.to_string())],
            _ => vec![("authorization", format!("Bearer {key}"))],
        }
    }
}

/// The built-in providers.
pub fn builtin_providers() -> Vec<Provider> {
    use Protocol::*;
    [
        (
            "openai",
            OpenAiResponses,
            "https://api.openai.com/v1",
            Some("OPENAI_API_KEY"),
        ),
        (
            "anthropic",
            Anthropic,
            "https://api.anthropic.com/v1",
            Some("ANTHROPIC_API_KEY"),
        ),
        (
            "google",
            Gemini,
            "https://generativelanguage.googleapis.com/v1beta",
            Some("GEMINI_API_KEY"),
        ),
        (
            "openrouter",
            OpenAiChat,
            "https://openrouter.ai/api/v1",
            Some("OPENROUTER_API_KEY"),
        ),
        (
            "deepseek",
            OpenAiChat,
            "https://api.deepseek.com/v1",
            Some("DEEPSEEK_API_KEY"),
        ),
        (
            "moonshot",
            OpenAiChat,
            "https://api.moonshot.ai/v1",
            Some("MOONSHOT_API_KEY"),
        ),
        (
            "zhipu",
            OpenAiChat,
            "https://open.bigmodel.cn/api/paas/v4",
            Some("ZHIPU_API_KEY"),
        ),
        (
            "minimax",
            OpenAiChat,
            "https://api.minimax.io/v1",
            Some("MINIMAX_API_KEY"),
        ),
        (
            "groq",
            OpenAiChat,
            "https://api.groq.com/openai/v1",
            Some("GROQ_API_KEY"),
        ),
        ("ollama", OpenAiChat, "http://localhost:11434/v1", None),
        ("lmstudio", OpenAiChat, "http://localhost:1234/v1", None),
    ]
    .into_iter()
    .map(|(name, protocol, url, env)| Provider::new(name, protocol, url, env))
    .collect()
}

/// Normalises a base URL as users paste it: surrounding spaces and trailing slashes go, a pasted
/// endpoint (`…/chat/completions`, `…/messages`, `…/responses`) is cut back to its base, and an
/// OpenAI- or Anthropic-style base without a version segment gets `/v1`.
pub fn normalize_base_url(protocol: Protocol, url: &str) -> String {
    let mut base = url.trim().trim_end_matches('/').to_string();
    for endpoint in [
        "/chat/completions",
        "/completions",
        "/messages",
        "/responses",
    ] {
        if let Some(stripped) = base.strip_suffix(endpoint) {
            base = stripped.trim_end_matches('/').to_string();
        }
    }
    let has_version = base.rsplit('/').take(3).any(|seg| {
        seg.len() >= 2
            && seg.starts_with('v')
            && seg[1..].chars().next().is_some_and(|c| c.is_ascii_digit())
    });
    if !has_version && protocol != Protocol::Gemini {
        base.push_str("/v1");
    }
    base
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls_are_normalised_as_users_paste_them() {
        let p = Protocol::OpenAiChat;
        for (input, expected) in [
            ("https://api.deepseek.com", "https://api.deepseek.com/v1"),
            ("https://api.deepseek.com/", "https://api.deepseek.com/v1"),
            (
                "https://api.deepseek.com/v1/",
                "https://api.deepseek.com/v1",
            ),
            (
                "  http://localhost:11434/v1/chat/completions ",
                "http://localhost:11434/v1",
            ),
            (
                "https://open.bigmodel.cn/api/paas/v4",
                "https://open.bigmodel.cn/api/paas/v4",
            ),
            (
                "https://openrouter.ai/api/v1//",
                "https://openrouter.ai/api/v1",
            ),
            ("http://127.0.0.1:8080", "http://127.0.0.1:8080/v1"),
        ] {
            assert_eq!(normalize_base_url(p, input), expected, "{input}");
        }
        assert_eq!(
            normalize_base_url(Protocol::Anthropic, "https://api.anthropic.com/v1/messages"),
            "https://api.anthropic.com/v1"
        );
        assert_eq!(
            Provider::new("x", Protocol::Gemini, "https://generativelanguage.googleapis.com/v1beta/", None).stream_url("gemini-2.5-flash"),
            "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
        );
    }

    #[test]
    fn every_builtin_has_a_unique_name_and_a_normalised_url() {
        let all = builtin_providers();
        let mut names: Vec<_> = all.iter().map(|p| p.name.as_str()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), all.len());
        for p in &all {
            assert_eq!(normalize_base_url(p.protocol, &p.base_url), p.base_url);
        }
    }
}
