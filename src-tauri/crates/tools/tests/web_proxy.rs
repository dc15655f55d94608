//! `web_fetch` through an HTTP proxy (`HTTP_PROXY` set, as on many company machines): the proxy
//! resolves names itself, past Codewright's resolver, so before the fix an intranet name,
//! `169.254.169.254.nip.io` and `[::7f00:1]` were fetched through it and reached the model. Every
//! hop's host is now checked here first; the proxy never sees a request for one of them. (Its
//! own test binary: it sets the proxy variables for the whole process.)

mod common;

use codewright_protocol::{Decision, PermissionMode};
use common::Harness;
use serde_json::json;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A proxy that answers every request with an "intranet page" (or a redirect to the cloud
/// metadata address for `/redirect`), recording the request lines it got.
async fn proxy() -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let log = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let mut buf = vec![0u8; 8192];
            let n = socket.read(&mut buf).await.unwrap_or(0);
            let head = String::from_utf8_lossy(&buf[..n]).into_owned();
            let line = head.lines().next().unwrap_or("").to_string();
            log.lock().unwrap().push(line.clone());
            let response = if line.contains("/redirect") {
                "HTTP/1.1 302 Found\r\nlocation: http://169.254.169.254/latest/meta-data/\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".to_string()
            } else {
                let body = "SECRET INTRANET PAGE";
                format!("HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}", body.len())
            };
            let _ = socket.write_all(response.as_bytes()).await;
        }
    });
    // Named, not numbered: a proxy's own name resolves to a private address (as in most
    // companies), which must not stop the proxy from being used.
    (format!("http://localhost:{}", addr.port()), seen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn private_targets_are_refused_before_any_proxy_sees_them() {
    let (proxy, seen) = proxy().await;
    // SAFETY: the only test of this binary, before any client is built.
    unsafe {
        for var in [
            "HTTP_PROXY",
            "http_proxy",
            "HTTPS_PROXY",
            "https_proxy",
            "ALL_PROXY",
        ] {
            std::env::set_var(var, &proxy);
        }
        std::env::remove_var("NO_PROXY");
        std::env::remove_var("no_proxy");
    }
    let h = Harness::new(PermissionMode::Yolo);
    for url in [
        "http://intranet.corp.internal/wiki",
        "http://169.254.169.254.nip.io/latest/meta-data/",
        "http://[::7f00:1]/",
        "http://[::ffff:10.0.0.1]/",
        "http://[64:ff9b::a9fe:a9fe]/",
        "http://2130706433/",
        "http://0x7f.1/",
        "http://017700000001/",
        "http://localhost./",
        "http://app.localhost/",
    ] {
        let out = h.call("web_fetch", json!({ "url": url })).await;
        let text = out.text_content();
        assert!(
            out.is_error && text.contains("private or local network address"),
            "{url}: {text}"
        );
        assert!(!text.contains("SECRET"), "{url}: {text}");
    }
    assert_eq!(
        *seen.lock().unwrap(),
        Vec::<String>::new(),
        "the proxy was asked"
    );

    // Allowed for the project: the proxy carries the request (the proxy is really in use), and
    // a redirect is followed hop by hop.
    let h = h.allowing_private_network(PermissionMode::Yolo);
    h.decide([Decision::Approve, Decision::Approve]);
    let out = h
        .call(
            "web_fetch",
            json!({"url": "http://intranet.corp.internal/wiki"}),
        )
        .await;
    assert!(
        out.text_content().contains("SECRET INTRANET PAGE"),
        "{}",
        out.text_content()
    );
    assert_eq!(seen.lock().unwrap().len(), 1);
    let out = h
        .call(
            "web_fetch",
            json!({"url": "http://intranet.corp.internal/redirect"}),
        )
        .await;
    assert!(
        out.text_content().contains("SECRET INTRANET PAGE"),
        "{}",
        out.text_content()
    );
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 3, "{seen:?}");
    assert!(
        seen[2].contains("169.254.169.254/latest/meta-data/"),
        "{seen:?}"
    );
}
