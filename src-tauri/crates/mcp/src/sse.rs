//! The legacy HTTP+SSE transport (protocol 2024-11-05), which `rmcp` no longer ships: the client
//! opens `GET <url>` as an event stream; the server's first `endpoint` event names the URL to
//! `POST` messages to; its answers and notifications come back as `message` events.

use futures_util::StreamExt;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT, CONTENT_TYPE};
use reqwest::Url;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::RoleClient;
use std::collections::BTreeMap;
use std::future::Future;
use tokio::sync::mpsc;

/// An open event stream and the endpoint it named.
pub(crate) struct LegacySse {
    client: reqwest::Client,
    endpoint: Url,
    headers: HeaderMap,
    incoming: mpsc::Receiver<RxJsonRpcMessage<RoleClient>>,
    reader: tokio::task::JoinHandle<()>,
}

/// The headers to send with every request, or what is wrong with one.
pub(crate) fn header_map(headers: &BTreeMap<String, String>) -> Result<HeaderMap, String> {
    let mut map = HeaderMap::new();
    for (k, v) in headers {
        let name = HeaderName::from_bytes(k.as_bytes())
            .map_err(|e| format!("bad header name {k}: {e}"))?;
        let value =
            HeaderValue::from_str(v).map_err(|e| format!("bad value for header {k}: {e}"))?;
        map.insert(name, value);
    }
    Ok(map)
}

impl LegacySse {
    /// Opens the event stream and waits for the server's `endpoint` event.
    pub(crate) async fn connect(
        url: &str,
        headers: &BTreeMap<String, String>,
    ) -> Result<LegacySse, String> {
        let base = Url::parse(url).map_err(|e| format!("{url} is not a valid URL ({e})"))?;
        let headers = header_map(headers)?;
        let client = reqwest::Client::new();
        let response = client
            .get(base.clone())
            .headers(headers.clone())
            .header(ACCEPT, "text/event-stream")
            .send()
            .await
            .map_err(|e| format!("cannot reach {url}: {e}"))?;
        let status = response.status();
        if !status.is_success() {
            return Err(format!(
                "{url} answered {status} to the event-stream request; check the URL (legacy SSE servers usually serve it at /sse)"
            ));
        }
        let mut events = codewright_llm::sse_events(response.bytes_stream());
        let endpoint = loop {
            match events.next().await {
                Some(Ok(event)) if event.event == "endpoint" => {
                    let endpoint = base.join(event.data.trim()).map_err(|e| {
                        format!("{url} named an invalid message endpoint {:?} ({e})", event.data)
                    })?;
                    if endpoint.origin() != base.origin() {
                        return Err(format!(
                            "{url} named a message endpoint on another server ({endpoint}); refusing to send messages there"
                        ));
                    }
                    break endpoint;
                }
                Some(Ok(_)) => continue,
                Some(Err(e)) => return Err(format!("the event stream from {url} broke: {e}")),
                None => {
                    return Err(format!(
                        "{url} closed the event stream before naming its message endpoint; is it a legacy SSE server?"
                    ))
                }
            }
        };
        let (tx, incoming) = mpsc::channel(64);
        let reader = tokio::spawn(async move {
            while let Some(Ok(event)) = events.next().await {
                if event.event != "message" && !event.event.is_empty() {
                    continue;
                }
                // Anything that is not a JSON-RPC message (keep-alives, blank data) is skipped.
                let Ok(message) = serde_json::from_str(&event.data) else {
                    continue;
                };
                if tx.send(message).await.is_err() {
                    break;
                }
            }
        });
        Ok(LegacySse {
            client,
            endpoint,
            headers,
            incoming,
            reader,
        })
    }
}

impl Transport<RoleClient> for LegacySse {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let request = serde_json::to_vec(&item).map(|body| {
            self.client
                .post(self.endpoint.clone())
                .headers(self.headers.clone())
                .header(CONTENT_TYPE, "application/json")
                .body(body)
        });
        let endpoint = self.endpoint.clone();
        async move {
            let response = request
                .map_err(std::io::Error::other)?
                .send()
                .await
                .map_err(std::io::Error::other)?;
            if !response.status().is_success() {
                return Err(std::io::Error::other(format!(
                    "{endpoint} answered {} to a message",
                    response.status()
                )));
            }
            Ok(())
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.incoming.recv()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.reader.abort();
        self.incoming.close();
        Ok(())
    }
}

impl Drop for LegacySse {
    fn drop(&mut self) {
        self.reader.abort();
    }
}
