//! `ui/js/protocol.js` holds the names the backend and the UI share — the commands, the events,
//! a task's statuses, the agent's states, how a run ends, the kinds of error — generated from
//! the Rust that defines them, so the UI cannot drift from it. This test fails when the file is
//! stale (`CODEWRIGHT_WRITE_PROTOCOL_JS=1 cargo test --test protocol_js` writes it again), when
//! the commands the app registers and those its ACL allows differ, or when the UI calls a
//! command or names a status that does not exist.

use codewright_protocol::{AgentEvent, AgentState, ErrorKind, RunOutcome, StoreEvent, TaskStatus};
use serde::Serialize;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use strum::{IntoEnumIterator, VariantNames};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The quoted words between `start` and the next `end` of `text`.
fn quoted_between(text: &str, start: &str, end: &str) -> Vec<String> {
    let from = text.find(start).unwrap_or_else(|| panic!("no {start:?}")) + start.len();
    let block = &text[from..from + text[from..].find(end).expect("end")];
    block
        .split('"')
        .skip(1)
        .step_by(2)
        .map(String::from)
        .collect()
}

/// The commands the app registers (`generate_handler!` in lib.rs), by name.
fn registered() -> Vec<String> {
    let lib = read(&root().join("src-tauri/src/lib.rs"));
    let from = lib.find("generate_handler![").expect("generate_handler!") + 18;
    let block = &lib[from..from + lib[from..].find(']').unwrap()];
    block
        .split(',')
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(|c| c.rsplit("::").next().unwrap().to_string())
        .collect()
}

/// The serde names of every value of a unit enum.
fn names<T: IntoEnumIterator + Serialize>() -> Vec<String> {
    T::iter()
        .map(|v| {
            serde_json::to_value(v)
                .unwrap()
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

fn list(name: &str, doc: &str, items: &[String]) -> String {
    let mut out = format!("/** {doc} */\nexport const {name} = Object.freeze([\n");
    for item in items {
        out.push_str(&format!("  '{item}',\n"));
    }
    out.push_str("]);\n");
    out
}

fn generated() -> String {
    let mut commands = registered();
    commands.sort();
    let events: Vec<String> = codewright_app::EVENTS
        .iter()
        .map(|e| e.to_string())
        .collect();
    let strs = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    [
        "// The names the backend and this UI share, generated from the Rust that defines them by\n\
         // tests/protocol_js.rs: `CODEWRIGHT_WRITE_PROTOCOL_JS=1 cargo test --test protocol_js`\n\
         // writes it again. Do not edit it by hand.\n"
            .to_string(),
        list("COMMANDS", "Every command a window may call (its capability grants some of them).", &commands),
        list("EVENTS", "Every event the backend sends to windows.", &events),
        list("TASK_STATUSES", "Where a task stands: stored, sent and shown in these words.", &names::<TaskStatus>()),
        list(
            "LIVE_STATUSES",
            "The statuses of a task whose run is going in some window or process.",
            &TaskStatus::iter().filter(|s| s.is_live()).map(|s| s.as_str().to_string()).collect::<Vec<_>>(),
        ),
        list("AGENT_STATES", "Where a running agent is (`agent` events' `state`).", &names::<AgentState>()),
        list("RUN_OUTCOMES", "How a run ended.", &names::<RunOutcome>()),
        list("ERROR_KINDS", "The `kind` of every error a command or a run reports.", &names::<ErrorKind>()),
        list("AGENT_EVENT_TYPES", "The `type` of an `agent` event.", &strs(AgentEvent::VARIANTS)),
        list("STORE_EVENT_TYPES", "The `type` of a `store` event.", &strs(StoreEvent::VARIANTS)),
    ]
    .join("\n")
}

#[test]
fn protocol_js_is_generated_from_the_rust_protocol() {
    let path = root().join("ui/js/protocol.js");
    let want = generated();
    if std::env::var_os("CODEWRIGHT_WRITE_PROTOCOL_JS").is_some() {
        std::fs::write(&path, &want).unwrap();
    }
    assert!(
        read(&path) == want,
        "ui/js/protocol.js is stale: write it again with `CODEWRIGHT_WRITE_PROTOCOL_JS=1 cargo test --test protocol_js`"
    );
}

#[test]
fn the_app_registers_exactly_the_commands_its_acl_allows() {
    let registered: BTreeSet<String> = registered().into_iter().collect();
    let allowed: BTreeSet<String> = quoted_between(
        &read(&root().join("src-tauri/build.rs")),
        "let commands = &[",
        "];",
    )
    .into_iter()
    .collect();
    assert_eq!(
        registered, allowed,
        "lib.rs's generate_handler! and build.rs's ACL list differ"
    );
}

/// Every `call('name'` in the UI's modules.
fn ui_calls() -> Vec<(PathBuf, String)> {
    let mut found = Vec::new();
    let mut folders = vec![root().join("ui/js")];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|e| e == "js") {
                let text = read(&path);
                for piece in text.split("call('").skip(1) {
                    let name: String = piece.chars().take_while(|c| *c != '\'').collect();
                    found.push((path.clone(), name));
                }
            }
        }
    }
    found
}

#[test]
fn the_ui_calls_only_commands_that_exist() {
    let registered: BTreeSet<String> = registered().into_iter().collect();
    let calls = ui_calls();
    assert!(calls.len() > 50, "only {} calls found", calls.len());
    for (path, name) in calls {
        assert!(
            registered.contains(&name),
            "{} calls `{name}`, which the app does not register",
            path.display()
        );
    }
}

/// The keys of the object literal `const NAME = { … };` in `text`.
fn keys_of(text: &str, name: &str) -> BTreeSet<String> {
    let start = format!("const {name} = {{");
    let from = text.find(&start).unwrap_or_else(|| panic!("no {start}")) + start.len();
    let block = &text[from..from + text[from..].find("};").unwrap()];
    block
        .lines()
        .filter_map(|line| line.trim().split_once(':'))
        .map(|(key, _)| key.trim().to_string())
        .collect()
}

#[test]
fn every_status_and_state_has_its_words() {
    let format = read(&root().join("ui/js/format.js"));
    let statuses: BTreeSet<String> = names::<TaskStatus>().into_iter().collect();
    assert_eq!(keys_of(&format, "STATUS_WORDS"), statuses);
    let states: BTreeSet<String> = names::<AgentState>().into_iter().collect();
    assert_eq!(keys_of(&format, "STATE_WORDS"), states);
}

#[test]
fn the_ui_listens_only_to_events_the_backend_sends() {
    let api = read(&root().join("ui/js/api.js"));
    let heard: Vec<String> = api
        .split("listen('")
        .skip(1)
        .map(|piece| piece.chars().take_while(|c| *c != '\'').collect())
        .collect();
    assert!(heard.len() >= 6, "{heard:?}");
    for name in heard {
        assert!(
            codewright_app::EVENTS.contains(&name.as_str()),
            "api.js listens to `{name}`, which the backend never sends"
        );
    }
}
