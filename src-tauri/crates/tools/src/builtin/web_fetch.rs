//! `web_fetch`: a web page as Markdown. http and https only; loopback and private addresses are
//! refused unless the session allows them: every hop's host (redirects are followed here) is
//! resolved and checked here, whatever proxy carries the request, and without a proxy only the
//! checked addresses are connected to, so DNS tricks do not get around it.

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
    // Redirects are followed here, one hop at a time, so every hop's host is checked by the
    // same rule as the first (`public_or_refused`), through a proxy too.
    let mut builder = reqwest::Client::builder()
        .timeout(TIMEOUT)
        .user_agent(concat!("Codewright/", env!("CARGO_PKG_VERSION")))
        .redirect(reqwest::redirect::Policy::none());
    if !allow_private {
        // Without a proxy, the addresses connected to are the checked ones (no second lookup
        // for a rebinding name to answer differently). A proxy's own address is not looked up
        // through it (one with a private name is used: `web_proxy.rs`).
        builder = builder.dns_resolver(Arc::new(PublicOnly));
    }
    let client = match builder.build() {
        Ok(c) => c,
        Err(e) => return ToolOutput::error(format!("cannot set up the HTTP client: {e}")),
    };
    let mut url = url;
    let mut hops = 0;
    let response = loop {
        if !allow_private {
            if let Err(why) = public_or_refused(&url).await {
                return refused(&shown, &why);
            }
        }
        let response = match client.get(url.clone()).send().await {
            Ok(r) => r,
            Err(e) => {
                let message = error_chain(&e);
                if message.contains("private or local") {
                    return refused(&shown, &message);
                }
                return ToolOutput::error(format!("cannot fetch {shown}: {message}"));
            }
        };
        let next = response
            .status()
            .is_redirection()
            .then(|| response.headers().get(reqwest::header::LOCATION))
            .flatten()
            .and_then(|l| l.to_str().ok())
            .and_then(|l| url.join(l).ok());
        match next {
            Some(_) if hops >= 5 => {
                return ToolOutput::error(format!("cannot fetch {shown}: too many redirects"))
            }
            Some(next) if matches!(next.scheme(), "http" | "https") => {
                hops += 1;
                url = next;
            }
            Some(next) => {
                return ToolOutput::error(format!(
                    "{shown} redirects to {next}, which is not an http or https address"
                ))
            }
            None => break response,
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

fn refused(url: &str, why: &str) -> ToolOutput {
    ToolOutput::error(format!(
        "{url} points to a private or local network address ({why}), which web_fetch does not reach; tell the user, who can allow it for this project (`codewright-cli projects settings ID --private-network on`)"
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

/// Checks that `url`'s host is public, resolving a name here whatever proxy will carry the
/// request: a proxy resolves names itself, past any resolver of ours, so an intranet name or
/// `169.254.169.254.nip.io` would reach it unchecked. A name that does not resolve here cannot be
/// checked and is refused. `Err` says why.
async fn public_or_refused(url: &reqwest::Url) -> Result<(), String> {
    let host = match url.host() {
        None => return Err("it has no host".into()),
        // (The URL parser has already read decimal, octal and hex forms as the address they are.)
        Some(url::Host::Ipv4(ip)) => {
            return if is_public(IpAddr::V4(ip)) {
                Ok(())
            } else {
                Err(format!("{ip} is not a public address"))
            }
        }
        Some(url::Host::Ipv6(ip)) => {
            return if is_public(IpAddr::V6(ip)) {
                Ok(())
            } else {
                Err(format!("{ip} is not a public address"))
            }
        }
        Some(url::Host::Domain(name)) => name.to_string(),
    };
    if literal_is_private(&host) {
        return Err(format!("{host} is a local name"));
    }
    let lookup = host.clone();
    let resolving = tokio::task::spawn_blocking(move || {
        (lookup.as_str(), 0)
            .to_socket_addrs()
            .map(|a| a.collect::<Vec<_>>())
    });
    let addrs = tokio::time::timeout(TIMEOUT, resolving)
        .await
        .map_err(|_| {
            format!(
                "{host} could not be looked up here within {} s",
                TIMEOUT.as_secs()
            )
        })?
        .map_err(|e| e.to_string())?
        .map_err(|e| format!("{host} could not be looked up here to check it is public: {e}"))?;
    match addrs.iter().find(|a| !is_public(a.ip())) {
        Some(private) => Err(format!("{host} resolves to {}", private.ip())),
        None if addrs.is_empty() => Err(format!("{host} resolves to no address")),
        None => Ok(()),
    }
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
            let s = v6.segments();
            let embedded = |hi: u16, lo: u16| {
                std::net::Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8)
            };
            // IPv4-compatible (`::7f00:1`), NAT64 (64:ff9b::/96) and 6to4 (2002::/16) forms
            // carry an IPv4 address that the network may route to.
            if s[..6] == [0; 6] || s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
                return is_public(IpAddr::V4(embedded(s[6], s[7])));
            }
            if s[0] == 0x2002 {
                return is_public(IpAddr::V4(embedded(s[1], s[2])));
            }
            let first = s[0];
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (first & 0xfe00) == 0xfc00 // unique local
                || (first & 0xffc0) == 0xfe80 // link local
                || (first & 0xffc0) == 0xfec0 // site local (deprecated)
                || (first == 0x2001 && s[1] == 0x0db8)) // documentation
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
            "::7f00:1",
            "::a00:1",
            "64:ff9b::a9fe:a9fe",
            "2002:7f00:1::",
            "fec0::1",
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
