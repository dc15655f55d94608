//! `mcp` commands and `exec` with an MCP server's tool, against the real everything server the
//! test command installs.

#[path = "../../agent/tests/common/mod.rs"]
mod common;

use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::sync::Arc;

fn servers() -> PathBuf {
    let dir = std::env::var_os("CODEWRIGHT_MCP_SERVERS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/codewright/mcp-servers")
        });
    assert!(
        dir.join("node_modules/.bin/mcp-server-everything").exists(),
        "run ./scripts/setup --test first"
    );
    dir
}

fn run(home: &std::path::Path, cwd: &std::path::Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_codewright-cli"))
        .arg("--home")
        .arg(home)
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn import_list_call_and_use_from_exec() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let ok = |args: &[&str]| {
        let out = run(home.path(), project.path(), args);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let config = json!({"mcpServers": {
        "everything": {"command": "node", "args": [servers().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js").display().to_string(), "stdio"]},
        "missing": {"command": "codewright-no-such-server"},
        "nothing": {"args": ["x"]}
    }});
    let file = project.path().join(".mcp.json");
    std::fs::write(&file, config.to_string()).unwrap();
    let report = ok(&["mcp", "import", file.to_str().unwrap()]);
    assert!(report.starts_with("Imported 2 server(s)"), "{report}");
    assert!(
        report.contains("Skipped nothing: neither a command nor a url"),
        "{report}"
    );

    let list = ok(&["mcp", "list"]);
    assert!(
        list.contains("connected:") && list.contains("mcp-servers/everything"),
        "{list}"
    );
    assert!(
        list.contains("missing")
            && list.contains("failed: cannot start `codewright-no-such-server`"),
        "{list}"
    );

    let tools = ok(&["mcp", "tools", "everything"]);
    assert!(
        tools.contains("echo") && tools.contains("get-sum"),
        "{tools}"
    );
    let prompts = ok(&["mcp", "prompts", "everything"]);
    assert!(
        prompts.contains("/everything:simple-prompt")
            && prompts.contains("/everything:args-prompt <city> [state]"),
        "{prompts}"
    );
    let sum = ok(&[
        "mcp",
        "call",
        "everything",
        "get-sum",
        r#"{"a": 20, "b": 22}"#,
    ]);
    assert!(sum.contains("42"), "{sum}");
    ok(&["mcp", "disable", "missing"]);

    // exec: the model calls the MCP tool and gets its result.
    let server = common::serve(Arc::new(|_, body: &Value| {
        if common::tool_results(body).is_empty() {
            common::calls(&[("everything__echo", json!({"message": "through MCP"}))])
        } else {
            common::text("The server echoed it.")
        }
    }))
    .await;
    ok(&[
        "providers",
        "add",
        "scripted",
        "--protocol",
        "openai",
        "--base-url",
        &server.url,
    ]);
    let out = ok(&["exec", "--model", "test-model@scripted", "Echo something"]);
    assert!(out.contains("[everything__echo]"), "{out}");
    server.assert_clean();
    let requests = server.requests();
    assert!(requests[0]["tools"]
        .to_string()
        .contains("everything__echo"));
    let results = common::tool_results(&requests[1]);
    assert!(results[0].1.contains("through MCP"), "{results:?}");

    // A prompt of the server as a slash command, its words filling its arguments in order.
    let before = server.requests().len();
    ok(&[
        "exec",
        "--model",
        "test-model@scripted",
        "/everything:args-prompt \"New York\" NY",
    ]);
    let asked = server.requests()[before]["messages"].to_string();
    assert!(asked.contains("What's weather in New York, NY?"), "{asked}");
    let fails = |args: &[&str]| {
        let out = run(home.path(), project.path(), args);
        assert!(!out.status.success(), "{args:?}");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let error = fails(&[
        "exec",
        "--model",
        "test-model@scripted",
        "/everything:args-prompt",
    ]);
    assert!(
        error.contains(
            "/everything:args-prompt needs city: type /everything:args-prompt <city> [state]"
        ),
        "{error}"
    );
    let error = fails(&["exec", "--model", "test-model@scripted", "/everything:nope"]);
    assert!(
        error.contains("MCP server everything has no prompt nope; its prompts are /everything:"),
        "{error}"
    );

    ok(&["mcp", "rm", "everything"]);
    assert!(!ok(&["mcp", "list"]).contains("everything"));
}
