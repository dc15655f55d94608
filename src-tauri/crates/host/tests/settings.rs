//! Settings as a settings screen changes them: MCP servers (a form checked whole with the wrong
//! field named and nothing half-saved, secret values only in the keyring, imports that say what
//! they left out, a check that reports a dying server's words), a project's settings, the app's.

use codewright_host::mcp::{self, ServerCheck, ServerForm};
use codewright_llm::credentials::{KeyError, SecretStore};
use codewright_store::{McpTransport, Store};
use std::collections::BTreeMap;
use std::sync::Mutex;

#[derive(Default)]
struct Keys(Mutex<BTreeMap<String, String>>);

impl SecretStore for Keys {
    fn get(&self, account: &str) -> Result<Option<String>, KeyError> {
        Ok(self.0.lock().unwrap().get(account).cloned())
    }
    fn set(&self, account: &str, key: &str) -> Result<(), KeyError> {
        self.0.lock().unwrap().insert(account.into(), key.into());
        Ok(())
    }
    fn delete(&self, account: &str) -> Result<bool, KeyError> {
        Ok(self.0.lock().unwrap().remove(account).is_some())
    }
}

struct NoKeyring;

impl SecretStore for NoKeyring {
    fn get(&self, _: &str) -> Result<Option<String>, KeyError> {
        Err(KeyError::Unavailable("no Secret Service".into()))
    }
    fn set(&self, _: &str, _: &str) -> Result<(), KeyError> {
        Err(KeyError::Unavailable("no Secret Service".into()))
    }
    fn delete(&self, _: &str) -> Result<bool, KeyError> {
        Err(KeyError::Unavailable("no Secret Service".into()))
    }
}

fn store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in(dir.path()).unwrap();
    (dir, store)
}

fn stdio(name: &str, command: &str) -> ServerForm {
    ServerForm {
        name: name.into(),
        transport: "stdio".into(),
        command: command.into(),
        ..ServerForm::default()
    }
}

#[test]
fn a_wrong_field_is_named_and_nothing_is_saved() {
    let (_dir, store) = store();
    let keys = Keys::default();
    let cases = [
        (stdio("", "sh"), "name", "Give the server a name"),
        (stdio("two words", "sh"), "name", "no spaces"),
        (
            stdio("s", "'unclosed"),
            "command",
            "quote that is not closed",
        ),
        (stdio("s", "   "), "command", "Type the command"),
        (
            stdio("s", "no-such-program-xyz --flag"),
            "command",
            "No program called no-such-program-xyz was found",
        ),
        (
            stdio("s", "/no/such/file"),
            "command",
            "There is no program at /no/such/file",
        ),
        (
            ServerForm {
                env: "GOOD=1\nnot a pair".into(),
                ..stdio("s", "sh")
            },
            "env",
            "Line 2 (“not a pair”) is not NAME=value",
        ),
        (
            ServerForm {
                name: "web".into(),
                transport: "http".into(),
                url: "localhost:3000/mcp".into(),
                ..ServerForm::default()
            },
            "url",
            "is not a web address",
        ),
        (
            ServerForm {
                name: "web".into(),
                transport: "carrier-pigeon".into(),
                ..ServerForm::default()
            },
            "transport",
            "Choose how",
        ),
        (
            ServerForm {
                call_timeout: "0".into(),
                ..stdio("s", "sh")
            },
            "callTimeout",
            "from 1 to 3600, or leave it empty for 120 s",
        ),
        (
            ServerForm {
                call_timeout: "two minutes".into(),
                ..stdio("s", "sh")
            },
            "callTimeout",
            "from 1 to 3600",
        ),
    ];
    for (form, field, words) in cases {
        let err = mcp::add_server(&store, &keys, &form).unwrap_err();
        assert_eq!(err.field, field, "{form:?}: {err:?}");
        assert!(err.message.contains(words), "{form:?}: {}", err.message);
    }
    assert!(store.mcp_servers().unwrap().is_empty());
    assert!(keys.0.lock().unwrap().is_empty());
}

#[test]
fn secret_values_go_to_the_keyring_and_leave_with_the_server() {
    let (_dir, store) = store();
    let keys = Keys::default();
    let view = mcp::add_server(
        &store,
        &keys,
        &ServerForm {
            env: "API_TOKEN=tok-123\nREGION = eu".into(),
            ..stdio("tools-1", "sh -c 'exec cat' \"two words\"")
        },
    )
    .unwrap();
    assert_eq!(view.target, "sh -c 'exec cat' 'two words'");
    assert_eq!(view.secrets, ["API_TOKEN"]);
    assert_eq!(view.env.get("REGION").map(String::as_str), Some("eu"));
    let row = &store.mcp_servers().unwrap()[0];
    assert_eq!(
        row.transport,
        McpTransport::Stdio {
            command: "sh".into(),
            args: vec!["-c".into(), "exec cat".into(), "two words".into()]
        }
    );
    assert!(!format!("{row:?}").contains("tok-123"));
    assert_eq!(
        keys.get("mcp:tools-1:API_TOKEN").unwrap().as_deref(),
        Some("tok-123")
    );
    // The same name again is refused, not a silent replacement.
    let err = mcp::add_server(&store, &keys, &stdio("tools-1", "sh")).unwrap_err();
    assert!(
        err.message.contains("already a server named tools-1"),
        "{err:?}"
    );
    // HTTP headers: `Name: value`; Authorization is a secret.
    let web = mcp::add_server(
        &store,
        &keys,
        &ServerForm {
            name: "web".into(),
            transport: "http".into(),
            url: " https://example.com/mcp ".into(),
            headers: "Authorization: Bearer abc\nX-Team: core".into(),
            ..ServerForm::default()
        },
    )
    .unwrap();
    assert_eq!(web.target, "https://example.com/mcp");
    assert_eq!(web.headers.get("X-Team").map(String::as_str), Some("core"));
    assert_eq!(web.secrets, ["Authorization"]);

    mcp::remove_server(&store, &keys, "tools-1").unwrap();
    assert!(keys.get("mcp:tools-1:API_TOKEN").unwrap().is_none());
    assert_eq!(mcp::server_views(&store).unwrap().len(), 1);
}

#[test]
fn without_a_keyring_a_secret_is_refused_with_the_way_around() {
    let (_dir, store) = store();
    let err = mcp::add_server(
        &store,
        &NoKeyring,
        &ServerForm {
            env: "GITHUB_TOKEN=ghp_x".into(),
            ..stdio("gh", "sh")
        },
    )
    .unwrap_err();
    assert_eq!(err.field, "env");
    assert!(
        err.message.contains("Set GITHUB_TOKEN in the environment"),
        "{err:?}"
    );
    assert!(store.mcp_servers().unwrap().is_empty());
}

#[test]
fn an_import_says_what_it_added_and_what_it_skipped() {
    let (_dir, store) = store();
    let keys = Keys::default();
    for (text, words) in [
        ("not json", "not valid JSON"),
        ("{\"servers\": 3, \"other\": {}}", "no \"mcpServers\""),
    ] {
        let err = mcp::import_servers(&store, &keys, text, None).unwrap_err();
        assert_eq!(err.kind, codewright_protocol::ErrorKind::BadInput);
        assert!(err.message.contains(words), "{err}");
    }
    let report = mcp::import_servers(
        &store,
        &keys,
        r#"{"mcpServers": {
            "files": {"command": "npx", "args": ["-y", "server-filesystem", "/tmp"]},
            "broken": {"args": ["no command"]}
        }}"#,
        None,
    )
    .unwrap();
    assert_eq!(report.added, ["files"]);
    assert_eq!(report.skipped.len(), 1);
    assert_eq!(report.skipped[0].name, "broken");
    assert!(!report.skipped[0].why.is_empty());
}

#[tokio::test]
async fn a_check_connects_and_lists_tools_or_says_why_not() {
    let (_dir, store) = store();
    let keys = Keys::default();
    // A server that writes to stderr and exits: its words reach the check's error.
    mcp::add_server(
        &store,
        &keys,
        &stdio("dies", "sh -c 'echo missing config file >&2; exit 3'"),
    )
    .unwrap();
    let check = mcp::check_server(&store, "dies").unwrap().await;
    match check {
        ServerCheck::Failed { error } => assert!(error.contains("missing config file"), "{error}"),
        other => panic!("{other:?}"),
    }
    assert!(mcp::check_server(&store, "nobody").is_err());
}

#[test]
fn project_settings_are_checked_whole_and_a_task_without_a_mode_takes_the_default() {
    use codewright_host::project::{self, ProjectForm, INSTRUCTIONS_MAX};
    use codewright_protocol::PermissionMode;
    let (dir, store) = store();
    let folder = dir.path().join("p");
    std::fs::create_dir_all(&folder).unwrap();
    let id = store.add_project(&folder, None).unwrap().id;
    let form = project::project_form(&store, id).unwrap();
    assert_eq!(form.default_mode, PermissionMode::Normal);
    let too_long = ProjectForm {
        context: "x".repeat(INSTRUCTIONS_MAX + 1),
        sandbox: true,
        ..form.clone()
    };
    assert_eq!(
        project::save_project(&store, id, &too_long)
            .unwrap_err()
            .field,
        "context"
    );
    let long_set_up = ProjectForm {
        worktree_set_up: "x".repeat(project::SET_UP_MAX + 1),
        ..form.clone()
    };
    assert_eq!(
        project::save_project(&store, id, &long_set_up)
            .unwrap_err()
            .field,
        "worktreeSetUp"
    );
    let yolo = ProjectForm {
        default_mode: PermissionMode::Yolo,
        ..form.clone()
    };
    assert_eq!(
        project::save_project(&store, id, &yolo).unwrap_err().field,
        "defaultMode"
    );
    assert_eq!(
        project::project_form(&store, id).unwrap(),
        form,
        "half-saved"
    );

    let good = ProjectForm {
        context: "  A CLI in Rust.  ".into(),
        rules: "Never touch vendor/.".into(),
        default_mode: PermissionMode::AcceptEdits,
        sandbox: true,
        allow_private_network: true,
        trusted: true,
        worktrees: true,
        worktree_set_up: "  npm ci  ".into(),
    };
    project::save_project(&store, id, &good).unwrap();
    let saved = project::project_form(&store, id).unwrap();
    assert_eq!(saved.context, "A CLI in Rust.");
    assert_eq!(saved.default_mode, PermissionMode::AcceptEdits);
    assert!(saved.sandbox && saved.allow_private_network && saved.trusted && saved.worktrees);
    assert_eq!(saved.worktree_set_up, "npm ci");
    assert!(project::project_trust(&store, id).unwrap().trusted);
    assert_eq!(store.project(id).unwrap().rules, "Never touch vendor/.");
}

#[test]
fn app_settings_default_round_trip_and_refuse_a_bad_count() {
    use codewright_host::settings::{self, AppSettings};
    let (_dir, store) = store();
    assert_eq!(settings::app_settings(&store), AppSettings::default());
    assert!(settings::app_settings(&store).notify_approval);
    let bad = AppSettings {
        max_running: 0,
        ..AppSettings::default()
    };
    assert_eq!(
        settings::save_app_settings(&store, &bad).unwrap_err().field,
        "maxRunning"
    );
    let bad = AppSettings {
        max_subagents: 9,
        ..AppSettings::default()
    };
    assert_eq!(
        settings::save_app_settings(&store, &bad).unwrap_err().field,
        "maxSubagents"
    );
    // Saved before sub-agents existed: the default is filled in.
    store
        .set_setting("app", Some(&serde_json::json!({"maxRunning": 4})))
        .unwrap();
    assert_eq!(settings::app_settings(&store).max_subagents, 3);
    let chosen = AppSettings {
        max_running: 5,
        max_subagents: 2,
        notify_finished: false,
        ..AppSettings::default()
    };
    settings::save_app_settings(&store, &chosen).unwrap();
    assert_eq!(settings::app_settings(&store), chosen);
}

#[test]
fn a_servers_call_timeout_is_set_changed_and_reset() {
    let (_dir, store) = store();
    let keys = Keys::default();
    let view = mcp::add_server(
        &store,
        &keys,
        &ServerForm {
            call_timeout: " 300 s".into(),
            ..stdio("slow", "sh")
        },
    )
    .unwrap();
    assert_eq!(view.call_timeout_secs, Some(300));
    assert_eq!(store.mcp_servers().unwrap()[0].call_timeout_secs, Some(300));
    let err = mcp::set_call_timeout(&store, "slow", "3601").unwrap_err();
    assert_eq!(err.field, "callTimeout");
    assert_eq!(store.mcp_servers().unwrap()[0].call_timeout_secs, Some(300));
    let view = mcp::set_call_timeout(&store, "slow", "45").unwrap();
    assert_eq!(view.call_timeout_secs, Some(45));
    let view = mcp::set_call_timeout(&store, "slow", "").unwrap();
    assert_eq!(view.call_timeout_secs, None);
    assert_eq!(store.mcp_servers().unwrap()[0].call_timeout_secs, None);
    let err = mcp::set_call_timeout(&store, "nobody", "10").unwrap_err();
    assert!(err.message.contains("no MCP server named"), "{err:?}");
}
