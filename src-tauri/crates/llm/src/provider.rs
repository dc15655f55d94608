//! Providers: who to call, with which wire protocol, at which URL. Built-in entries cover the
//! providers users pick most; custom ones speak the OpenAI-compatible or Anthropic protocol.

use crate::error::SettingError;
use serde::{Deserialize, Serialize};
use std::time::Duration;

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
    pub fn parse(s: &str) -> Result<Protocol, SettingError> {
        [
            Protocol::OpenAiChat,
            Protocol::OpenAiResponses,
            Protocol::Anthropic,
            Protocol::Gemini,
        ]
        .into_iter()
        .find(|p| p.as_str() == s)
        .ok_or_else(|| SettingError::Protocol(s.to_string()))
    }
}

/// How long a provider may send nothing before a call fails with
/// [`ErrorKind::Timeout`](crate::ErrorKind::Timeout). Silence is measured in bytes on the
/// connection, so SSE comments and pings a server sends to keep a stream alive count as activity.
///
/// The defaults ([`Timeouts::HOSTED`], [`Timeouts::LOCAL`]) are chosen by the provider's base URL
/// ([`Provider::is_local`]); a provider's `first_byte_timeout` / `idle_timeout` override them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// From sending the request to the first byte of the response body, the response head
    /// included: how long the model may take to start.
    pub first_byte: Duration,
    /// Between two chunks of the body once it has started.
    pub idle: Duration,
}

impl Timeouts {
    /// A hosted API: 120 s to start, 120 s between chunks. Hosted APIs answer in seconds, but a
    /// reasoning model that thinks silently (OpenAI's Responses and Chat APIs, Gemini without
    /// thought summaries) can send nothing for a minute or more mid-answer; two minutes catches a
    /// stuck connection without cutting those off.
    pub const HOSTED: Timeouts = Timeouts {
        first_byte: Duration::from_secs(120),
        idle: Duration::from_secs(120),
    };
    /// A server on this machine or the local network (Ollama, LM Studio, llama.cpp, vLLM): 300 s
    /// to start, because loading a model and reading a long prompt on a CPU takes minutes; then
    /// 120 s between chunks.
    pub const LOCAL: Timeouts = Timeouts {
        first_byte: Duration::from_secs(300),
        idle: Duration::from_secs(120),
    };
}

/// A provider a user can send requests to.
///
/// Stored and sent as JSON in camelCase; the timeouts are optional numbers of seconds
/// (`"firstByteTimeoutSecs": 600`), left out when the default applies, so configurations written
/// before they existed still load.
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
    /// Overrides the default first-byte timeout (see [`Timeouts`]).
    #[serde(
        default,
        rename = "firstByteTimeoutSecs",
        skip_serializing_if = "Option::is_none",
        with = "opt_secs"
    )]
    pub first_byte_timeout: Option<Duration>,
    /// Overrides the default idle timeout between chunks (see [`Timeouts`]).
    #[serde(
        default,
        rename = "idleTimeoutSecs",
        skip_serializing_if = "Option::is_none",
        with = "opt_secs"
    )]
    pub idle_timeout: Option<Duration>,
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
            first_byte_timeout: None,
            idle_timeout: None,
        }
    }

    /// The provider with its timeouts overridden; `None` keeps the default (see [`Timeouts`]).
    pub fn with_timeouts(
        mut self,
        first_byte: Option<Duration>,
        idle: Option<Duration>,
    ) -> Provider {
        self.first_byte_timeout = first_byte;
        self.idle_timeout = idle;
        self
    }

    /// The timeouts calls to this provider use: its own, or the default for where it is.
    pub fn timeouts(&self) -> Timeouts {
        let default = if self.is_local() {
            Timeouts::LOCAL
        } else {
            Timeouts::HOSTED
        };
        Timeouts {
            first_byte: self.first_byte_timeout.unwrap_or(default.first_byte),
            idle: self.idle_timeout.unwrap_or(default.idle),
        }
    }

    /// Whether the base URL points at this machine or the local network (`localhost`, a loopback,
    /// private or link-local address, a `.local` / `.lan` / `.internal` name, or a name without a
    /// dot), where a model server is usually someone's own and may be slow to start.
    pub fn is_local(&self) -> bool {
        is_local_host(host_of(&self.base_url))
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

/// Parses a timeout given in seconds (`90`, `0.5`), as settings and the command line give it.
pub fn parse_timeout(secs: &str) -> Result<Duration, SettingError> {
    let value: f64 = secs
        .trim()
        .parse()
        .map_err(|_| SettingError::NotSeconds(secs.to_string()))?;
    timeout_from_secs(value)
}

/// A timeout of `secs` seconds: more than 0, at most a day.
fn timeout_from_secs(secs: f64) -> Result<Duration, SettingError> {
    if !(secs.is_finite() && secs > 0.0 && secs <= 86_400.0) {
        return Err(SettingError::Timeout(secs));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// `Option<Duration>` as an optional number of seconds.
mod opt_secs {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(value: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match value {
            Some(d) => s.serialize_some(&d.as_secs_f64()),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        Option::<f64>::deserialize(d)?
            .map(|secs| super::timeout_from_secs(secs).map_err(serde::de::Error::custom))
            .transpose()
    }
}

/// The host of a URL: no scheme, credentials, port or path; IPv6 without its brackets.
fn host_of(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    if let Some(v6) = host_port.strip_prefix('[') {
        return v6.split(']').next().unwrap_or(v6);
    }
    host_port.split(':').next().unwrap_or(host_port)
}

fn is_local_host(host: &str) -> bool {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    if let Ok(ip) = host.parse::<std::net::IpAddr>() {
        return match ip {
            std::net::IpAddr::V4(v4) => {
                let [a, b, ..] = v4.octets();
                v4.is_loopback()
                    || v4.is_private()
                    || v4.is_link_local()
                    || v4.is_unspecified()
                    // Carrier-grade NAT space, where Tailscale puts the machines of a tailnet.
                    || (a == 100 && (64..128).contains(&b))
            }
            std::net::IpAddr::V6(v6) => {
                let first = v6.segments()[0];
                v6.is_loopback()
                    || v6.is_unspecified()
                    || (first & 0xfe00) == 0xfc00 // unique local
                    || (first & 0xffc0) == 0xfe80 // link-local
                    || v6.to_ipv4_mapped().is_some_and(|v4| is_local_host(&v4.to_string()))
            }
        };
    }
    !host.is_empty()
        && (host == "localhost"
            || !host.contains('.')
            || [".localhost", ".local", ".lan", ".home.arpa", ".internal"]
                .iter()
                .any(|suffix| host.ends_with(suffix)))
}

/// The built-in providers. Ollama's address follows its own `OLLAMA_HOST`, as its CLI does.
pub fn builtin_providers() -> Vec<Provider> {
    use Protocol::*;
    let ollama = ollama_base_url(std::env::var("OLLAMA_HOST").ok().as_deref());
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
        ("ollama", OpenAiChat, ollama.as_str(), None),
        ("lmstudio", OpenAiChat, "http://localhost:1234/v1", None),
    ]
    .into_iter()
    .map(|(name, protocol, url, env)| Provider::new(name, protocol, url, env))
    .collect()
}

/// The base URL of Ollama's OpenAI-compatible API, given what `OLLAMA_HOST` says as Ollama reads
/// it: `host`, `host:port`, `[v6]:port`, or any of these after `http://` or `https://` (whose
/// default ports are 80 and 443; without a scheme it is 11434), quoted or not; a port that is
/// no number is the default one. An address it listens on everywhere (`0.0.0.0`, `::`) is
/// reached at localhost. Unset, empty or unreadable: localhost's port 11434. (A path after the
/// address — Ollama behind a proxy — is not followed: add it as a custom provider.)
fn ollama_base_url(host: Option<&str>) -> String {
    const DEFAULT: &str = "http://localhost:11434/v1";
    let Some(given) = host
        .map(|h| h.trim().trim_matches(|c| c == '"' || c == '\''))
        .filter(|h| !h.is_empty())
    else {
        return DEFAULT.into();
    };
    let (scheme, rest, default_port) = match given.split_once("://") {
        None => ("http", given, 11434),
        Some(("http", rest)) => ("http", rest, 80),
        Some(("https", rest)) => ("https", rest, 443),
        Some(_) => return DEFAULT.into(),
    };
    let address = rest.split('/').next().unwrap_or_default();
    let (host, port) = match address.strip_prefix('[') {
        Some(bracketed) => match bracketed.split_once(']') {
            Some((host, after)) => (host, after.strip_prefix(':')),
            None => return DEFAULT.into(),
        },
        None if address.matches(':').count() == 1 => {
            let (host, port) = address.split_once(':').unwrap_or_default();
            (host, Some(port))
        }
        None => (address, None),
    };
    let port = port
        .and_then(|p| p.parse::<u16>().ok())
        .unwrap_or(default_port);
    let host = match host {
        "" | "0.0.0.0" | "::" => "localhost".to_string(),
        v6 if v6.contains(':') => format!("[{v6}]"),
        host => host.to_string(),
    };
    match (scheme, port) {
        ("http", 80) | ("https", 443) => format!("{scheme}://{host}/v1"),
        _ => format!("{scheme}://{host}:{port}/v1"),
    }
}

/// `Ok` when `url` can be a provider's base URL: an http:// or https:// address with a host.
/// The error says what is wrong with it, for the field it was typed in.
pub fn check_base_url(url: &str) -> Result<(), SettingError> {
    let url = url.trim();
    match url.parse::<reqwest::Url>() {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host_str().is_some() => Ok(()),
        _ => Err(SettingError::BaseUrl(url.to_string())),
    }
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
    fn ollama_is_found_where_its_own_ollama_host_says() {
        for (given, base) in [
            (None, "http://localhost:11434/v1"),
            (Some(""), "http://localhost:11434/v1"),
            (Some("  "), "http://localhost:11434/v1"),
            (Some("127.0.0.1:11500"), "http://127.0.0.1:11500/v1"),
            (Some("studio.local"), "http://studio.local:11434/v1"),
            (Some("0.0.0.0"), "http://localhost:11434/v1"),
            (Some("0.0.0.0:8080"), "http://localhost:8080/v1"),
            (Some("[::]:8080"), "http://localhost:8080/v1"),
            (Some("[::1]:9000"), "http://[::1]:9000/v1"),
            (Some("::1"), "http://[::1]:11434/v1"),
            (Some("http://10.0.0.5"), "http://10.0.0.5/v1"),
            (
                Some("https://ollama.example.lan/"),
                "https://ollama.example.lan/v1",
            ),
            (Some("http://box:1234/"), "http://box:1234/v1"),
            (Some("box:"), "http://box:11434/v1"),
            (Some("box:port"), "http://box:11434/v1"),
            (Some("\"127.0.0.1:11500\""), "http://127.0.0.1:11500/v1"),
            (Some("ftp://box"), "http://localhost:11434/v1"),
            (Some("[::1"), "http://localhost:11434/v1"),
        ] {
            assert_eq!(ollama_base_url(given), base, "OLLAMA_HOST={given:?}");
        }
    }

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
    fn local_servers_get_the_long_first_byte_timeout_and_hosted_apis_the_short_one() {
        for p in builtin_providers() {
            let local = matches!(p.name.as_str(), "ollama" | "lmstudio");
            assert_eq!(p.is_local(), local, "{}", p.name);
            let expected = if local {
                Timeouts::LOCAL
            } else {
                Timeouts::HOSTED
            };
            assert_eq!(p.timeouts(), expected, "{}", p.name);
        }
        for (url, local) in [
            ("http://127.0.0.1:8080", true),
            ("http://user:pw@localhost:8080/v1", true),
            ("http://192.168.1.20:11434", true),
            ("http://10.0.0.5/v1", true),
            ("http://172.20.1.1:8000", true),
            ("http://100.101.102.103:1234", true),
            ("http://[::1]:1234/v1", true),
            ("http://[fd12::5]:8000", true),
            ("http://gpu-box:8000/v1", true),
            ("http://llm.lan:8000", true),
            ("http://studio.local:1234", true),
            ("https://api.deepseek.com", false),
            ("https://172.217.0.1/v1", false),
            ("https://my-proxy.example.com:8443/openai", false),
        ] {
            let p = Provider::new("x", Protocol::OpenAiChat, url, None);
            assert_eq!(p.is_local(), local, "{url}");
        }
        let tuned = Provider::new("x", Protocol::OpenAiChat, "http://localhost:8080", None)
            .with_timeouts(None, Some(Duration::from_secs(30)));
        assert_eq!(
            tuned.timeouts(),
            Timeouts {
                first_byte: Timeouts::LOCAL.first_byte,
                idle: Duration::from_secs(30)
            }
        );
    }

    #[test]
    fn stored_providers_load_with_or_without_timeouts() {
        // Written before timeouts existed.
        let old: Provider = serde_json::from_str(
            r#"{"name":"box","protocol":"openai","baseUrl":"http://gpu-box:8000/v1","apiKeyEnv":null}"#,
        )
        .unwrap();
        assert_eq!(old.first_byte_timeout, None);
        assert_eq!(old.timeouts(), Timeouts::LOCAL);
        let json = serde_json::to_value(&old).unwrap();
        assert!(json.get("firstByteTimeoutSecs").is_none(), "{json}");

        let tuned: Provider = serde_json::from_str(
            r#"{"name":"box","protocol":"openai","baseUrl":"http://gpu-box:8000/v1","apiKeyEnv":null,
                "firstByteTimeoutSecs":600,"idleTimeoutSecs":0.5}"#,
        )
        .unwrap();
        assert_eq!(tuned.first_byte_timeout, Some(Duration::from_secs(600)));
        assert_eq!(tuned.timeouts().idle, Duration::from_millis(500));
        let back: Provider = serde_json::from_value(serde_json::to_value(&tuned).unwrap()).unwrap();
        assert_eq!(back, tuned);

        for bad in ["0", "-5", "1e9", "\"ten\""] {
            let text = format!(
                r#"{{"name":"b","protocol":"openai","baseUrl":"http://x/v1","apiKeyEnv":null,"idleTimeoutSecs":{bad}}}"#
            );
            assert!(serde_json::from_str::<Provider>(&text).is_err(), "{bad}");
        }
        assert_eq!(parse_timeout(" 90 "), Ok(Duration::from_secs(90)));
        assert!(parse_timeout("0").is_err() && parse_timeout("soon").is_err());
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
