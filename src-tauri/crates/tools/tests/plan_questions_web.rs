//! `todo_write` (stored with the task), `ask_user` (answered by the approver), `web_fetch`
//! (private addresses refused; HTML to Markdown) against a local server.

mod common;

use codewright_protocol::{Decision, PermissionMode, TodoStatus, ToolDetail};
use common::Harness;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[tokio::test]
async fn the_plan_is_stored_with_the_task() {
    let h = Harness::new(PermissionMode::Plan);
    let out = h
        .call(
            "todo_write",
            json!({"todos": [
                {"content": "Read the code", "status": "completed"},
                {"content": "Fix the bug", "status": "in_progress"},
                {"content": "Add a test", "status": "pending"}
            ]}),
        )
        .await;
    assert!(!out.is_error, "{}", out.text_content());
    assert!(out.text_content().starts_with("Plan saved (1 of 3 done)"));
    let task = h.store.lock().unwrap().task(h.session.task).unwrap();
    assert_eq!(task.todos.len(), 3);
    assert_eq!(task.todos[1].status, TodoStatus::InProgress);
    let out = h
        .call(
            "todo_write",
            json!({"todos": [{"content": "x", "status": "later"}]}),
        )
        .await;
    assert!(out.is_error, "unknown status is a schema error");
}

#[tokio::test]
async fn questions_reach_the_user() {
    let h = Harness::new(PermissionMode::Normal);
    h.approver
        .answers
        .lock()
        .unwrap()
        .push_back(Some("Postgres".into()));
    let out = h
        .call(
            "ask_user",
            json!({"question": "Which database?", "choices": ["SQLite", "Postgres"]}),
        )
        .await;
    assert_eq!(out.text_content(), "The user answered:\nPostgres");
    assert_eq!(
        h.approver.questions.lock().unwrap()[0].choices,
        ["SQLite", "Postgres"]
    );
    let out = h
        .call("ask_user", json!({"question": "Anything else?"}))
        .await;
    assert!(out.is_error && out.text_content().contains("did not answer"));
}

async fn serve_once(body: &'static str, content_type: &'static str) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let mut buf = [0u8; 4096];
            let _ = socket.read(&mut buf).await;
            let response = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = socket.write_all(response.as_bytes()).await;
        }
    });
    format!("http://{addr}/page")
}

#[tokio::test]
async fn web_fetch_refuses_private_addresses_and_converts_html() {
    let url = serve_once(
        "<html><head><title>T</title><script>alert('x')</script></head><body><h1>Hello</h1><p>A <a href=\"https://e.com\">link</a>.</p></body></html>",
        "text/html; charset=utf-8",
    )
    .await;
    let h = Harness::new(PermissionMode::Yolo);
    let out = h.call("web_fetch", json!({"url": url})).await;
    assert!(out.is_error);
    assert!(
        out.text_content()
            .contains("private or local network address"),
        "{}",
        out.text_content()
    );
    let out = h
        .call("web_fetch", json!({"url": "http://localhost:1/"}))
        .await;
    assert!(out.text_content().contains("private or local"));
    let out = h
        .call("web_fetch", json!({"url": "file:///etc/passwd"}))
        .await;
    assert!(out.is_error && out.text_content().contains("only http and https"));

    // Allowed by the session: fetched and converted.
    let h = h.allowing_private_network(PermissionMode::Normal);
    h.decide([Decision::Approve]);
    let out = h.call("web_fetch", json!({"url": url})).await;
    assert!(!out.is_error, "{}", out.text_content());
    let t = out.text_content();
    assert!(
        t.contains("# Hello") && t.contains("[link](https://e.com)"),
        "{t}"
    );
    assert!(!t.contains("alert"));
    assert!(matches!(
        out.detail,
        Some(ToolDetail::Fetch { status: 200, .. })
    ));
    let request = &h.requests()[0];
    assert_eq!(request.always[0].pattern, "127.0.0.1");
}
