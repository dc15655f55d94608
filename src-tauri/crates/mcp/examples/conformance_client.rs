//! The client side of the official MCP conformance suite
//! (`conformance client --command "conformance_client" --scenario NAME`): runs the scenario the
//! suite names in `MCP_CONFORMANCE_SCENARIO` against the server URL it passes last, through
//! `codewright_mcp::Connection`, the code `exec` uses. The suite checks what reached its server.

use codewright_mcp::{Connection, Endpoint};
use serde_json::{json, Value};
use std::process::ExitCode;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

fn main() -> ExitCode {
    let Some(url) = std::env::args().skip(1).last() else {
        eprintln!("usage: conformance_client SERVER_URL (with MCP_CONFORMANCE_SCENARIO set)");
        return ExitCode::from(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok())
        .unwrap_or(Value::Null);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    match runtime.block_on(run(&url, &scenario, &context)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("conformance_client: {scenario}: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(url: &str, scenario: &str, context: &Value) -> Result<(), String> {
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let endpoint = Endpoint::Http {
        url: url.to_string(),
        headers: Default::default(),
    };
    let c = Connection::connect(&endpoint, vec![], tx, Duration::from_secs(20))
        .await
        .map_err(|e| e.to_string())?;
    let never = CancellationToken::new();
    let call = |name: String, arguments: Value| {
        let (c, never) = (&c, &never);
        async move {
            c.call(&name, arguments, Duration::from_secs(20), never, None)
                .await
                .map_err(|e| e.to_string())
        }
    };
    let result = match scenario {
        "initialize" => c.tools().await.map(|_| ()).map_err(|e| e.to_string()),
        "tools_call" => {
            c.tools().await.map_err(|e| e.to_string())?;
            let calls: Vec<(String, Value)> = match context["tool_calls"].as_array() {
                Some(list) if !list.is_empty() => list
                    .iter()
                    .map(|t| {
                        (
                            t["name"].as_str().unwrap_or("").to_string(),
                            t["arguments"].clone(),
                        )
                    })
                    .collect(),
                _ => vec![("add_numbers".into(), json!({"a": 5, "b": 3}))],
            };
            for (name, arguments) in calls {
                call(name, arguments).await?;
            }
            Ok(())
        }
        "sse-retry" => call("test_reconnection".into(), json!({}))
            .await
            .map(|_| ()),
        other => Err(format!(
            "scenario {other:?} is not supported by this client"
        )),
    };
    c.close().await;
    result
}
