//! `web_fetch`: a web page as Markdown. http and https only; loopback and private addresses are
//! refused (checked on every resolved address and every redirect, so DNS tricks do not get
//! around it) unless the session allows them.

use crate::session::Ask;
use crate::{parse_input, schema_of, CallContext, Subject, Tool, ToolOutput};
use async_trait::async_trait;
use codewright_protocol::{Action, DecisionKind, ToolCategory, ToolDetail};
use futures_util::StreamExt;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

pub struct WebFetch;

/// Bytes downloaded at most.
const MAX_BYTES: usize = 5 * 1024 * 1024;
/// Characters of text given to the model at most.
const MAX_CHARS: usize = 100_000;
const TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Input {
    /// The http or https URL to fetch.
    url: String,
}

#[async_trait]
impl Tool for WebFetch {
    fn name(&self) -> &str {
        "web_fetch"
    }
    fn description(&self) -> &str {
        "Fetch a web page (http/https) and return it as Markdown (HTML converted; text and JSON as they are). Large pages are cut. Private and local network addresses are refused."
    }
    fn input_schema(&self) -> Value {
        schema_of::<Input>()
    }
    fn category(&self) -> ToolCategory {
        ToolCategory::Network
    }

    async fn run(&self, input: Value, cx: &CallContext) -> ToolOutput {
        let input: Input = match parse_input(input) {
            Ok(i) => i,
            Err(e) => return e,
        };
        let url = match reqwest::Url::parse(input.url.trim()) {
            Ok(u) if matches!(u.scheme(), "http" | "https") && u.host_str().is_some() => u,
            Ok(u) => {
                return ToolOutput::error(format!(
                    "only http and https URLs can be fetched, not {}:",
                    u.scheme()
                ))
            }
            Err(e) => return ToolOutput::error(format!("not a valid URL ({e}): {}", input.url)),
        };
        let host = url.host_str().unwrap_or_default().to_string();
        if let Err(e) = cx
            .authorize(Ask {
                category: ToolCategory::Network,
                subject: Subject::Host(&host),
                action: Action::Fetch {
                    url: url.to_string(),
                },
                summary: format!("Fetch {url}"),
                decisions: &[
                    DecisionKind::Approve,
                    DecisionKind::ApproveAlways,
                    DecisionKind::Reject,
                ],
                force_ask: None,
            })
            .await
        {
            return e;
        }
        tokio::select! {
            out = fetch(url, cx.session.allow_private_network) => out,
            _ = cx.cancel.cancelled() => ToolOutput::error("stopped by the user"),
        }
    }
}

async fn fetch(url: reqwest::Url, allow_private: bool) -> ToolOutput {
    let shown = url.to_string();
    let mut builder = reqwest::Client::builder()
        .timeout(TIMEOUT)
        .user_agent(concat!("Codewright/", env!("CARGO_PKG_VERSION")))
        .redirect(reqwest::redirect::Policy::custom(move |attempt| {
            if attempt.previous().len() >= 5 {
                attempt.error("too many redirects")
            } else if !allow_private && attempt.url().host_str().is_some_and(literal_is_private) {
                attempt.error("redirected to a private or local address")
            } else {
                attempt.follow()
            }
        }));
    if !allow_private {
        if url.host_str().is_some_and(literal_is_private) {
            return refused(&shown);
        }
        builder = builder.dns_resolver(Arc::new(PublicOnly));
    }
    let client = match builder.build() {
        Ok(c) => c,
        Err(e) => return ToolOutput::error(format!("cannot set up the HTTP client: {e}")),
    };
    let response = match client.get(url).send().await {
        Ok(r) => r,
        Err(e) => {
            let message = error_chain(&e);
            if message.contains("private or local") {
                return refused(&shown);
            }
            return ToolOutput::error(format!("cannot fetch {shown}: {message}"));
        }
    };
    let status = response.status();
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    let mut body = Vec::new();
    let mut truncated = false;
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        match chunk {
            Ok(chunk) => {
                let room = MAX_BYTES - body.len();
                body.extend_from_slice(&chunk[..chunk.len().min(room)]);
                if chunk.len() >= room {
                    truncated = true;
                    break;
                }
            }
            Err(e) => {
                return ToolOutput::error(format!("reading {shown} failed: {}", error_chain(&e)))
            }
        }
    }
    let textual = content_type.is_empty()
        || content_type.starts_with("text/")
        || content_type.contains("json")
        || content_type.contains("xml")
        || content_type.contains("javascript");
    if !textual || super::looks_binary(&body) {
        return ToolOutput::error(format!(
            "{shown} is {} ({}), not text; it was not shown",
            if content_type.is_empty() {
                "binary"
            } else {
                &content_type
            },
            super::human_bytes(body.len() as u64)
        ));
    }
    let raw = String::from_utf8_lossy(&body);
    let mut text = if content_type.contains("html")
        || raw.trim_start().starts_with('<') && raw.contains("<html")
    {
        to_markdown(&raw)
    } else {
        raw.into_owned()
    };
    if text.chars().count() > MAX_CHARS {
        text = text.chars().take(MAX_CHARS).collect();
        truncated = true;
    }
    if truncated {
        text.push_str("\n\n[… the page was cut here; it is longer …]");
    }
    let bytes = body.len() as u64;
    let header = format!("{shown} — HTTP {}\n\n", status.as_u16());
    let output = ToolOutput::text(format!("{header}{text}")).with_detail(ToolDetail::Fetch {
        url: shown,
        status: status.as_u16(),
        content_type,
        bytes,
        truncated,
    });
    if status.is_success() {
        output
    } else {
        ToolOutput {
            is_error: true,
            ..output
        }
    }
}

fn refused(url: &str) -> ToolOutput {
    ToolOutput::error(format!(
        "{url} points to a private or local network address, which web_fetch does not reach; tell the user, who can allow it for this project (`codewright-cli projects settings ID --private-network on`)"
    ))
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut message = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        message.push_str(": ");
        message.push_str(&s.to_string());
        source = s.source();
    }
    message
}

fn to_markdown(html: &str) -> String {
    let converter = htmd::HtmlToMarkdown::builder()
        .skip_tags(vec![
            "script", "style", "noscript", "template", "head", "svg", "iframe",
        ])
        .build();
    converter.convert(html).unwrap_or_else(|_| html.to_string())
}

/// A host written as an IP address that is not public.
fn literal_is_private(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.eq_ignore_ascii_case("localhost") || host.ends_with(".localhost") {
        return true;
    }
    host.parse::<IpAddr>().is_ok_and(|ip| !is_public(ip))
}

/// Whether an address is on the public internet.
pub(crate) fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            !(v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.is_documentation()
                || a == 0
                || (a == 100 && (64..128).contains(&b)) // carrier-grade NAT
                || (a == 198 && (b == 18 || b == 19)) // benchmarking
                || a >= 240)
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public(IpAddr::V4(v4));
            }
            let first = v6.segments()[0];
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (first & 0xfe00) == 0xfc00 // unique local
                || (first & 0xffc0) == 0xfe80) // link local
        }
    }
}

/// Resolves names, then keeps only public addresses.
struct PublicOnly;

impl reqwest::dns::Resolve for PublicOnly {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().to_string();
        Box::pin(async move {
            let addrs: Vec<SocketAddr> = tokio::task::spawn_blocking(move || {
                (host.as_str(), 0)
                    .to_socket_addrs()
                    .map(|a| a.collect::<Vec<_>>())
            })
            .await
            .map_err(|e| Box::new(e) as Box<dyn std::error::Error + Send + Sync>)??;
            let public: Vec<SocketAddr> = addrs.into_iter().filter(|a| is_public(a.ip())).collect();
            if public.is_empty() {
                return Err("the name resolves only to private or local addresses".into());
            }
            Ok(Box::new(public.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_addresses_are_recognised() {
        for private in [
            "127.0.0.1",
            "10.1.2.3",
            "192.168.0.1",
            "172.16.5.5",
            "169.254.169.254",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "100.64.0.1",
            "0.0.0.0",
        ] {
            assert!(!is_public(private.parse().unwrap()), "{private}");
        }
        for public in ["1.1.1.1", "93.184.216.34", "2606:4700::1111"] {
            assert!(is_public(public.parse().unwrap()), "{public}");
        }
        assert!(literal_is_private("localhost"));
        assert!(literal_is_private("[::1]"));
        assert!(!literal_is_private("example.com"));
    }
}
