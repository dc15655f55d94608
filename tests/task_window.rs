//! End-to-end: a task window runs the agent. The real app under a private Xvfb, driven over
//! WebDriver with real clicks and keys; the model is a scripted provider over HTTP; every step is
//! checked on what the window shows and on disk, and a screenshot of it is kept.

mod support;

use serde_json::{json, Value};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::notifications::NotificationBus;
use support::provider::{Provider, Reply};
use support::webdriver::Session;
use support::{cli, save_screenshot, Desktop, MCP_SECRET};

const WAIT: Duration = Duration::from_secs(15);
/// A 1×1 PNG.
const PNG_1X1: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
    0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0xf8, 0xcf, 0xc0, 0xf0,
    0x1f, 0x00, 0x05, 0x00, 0x01, 0xff, 0x89, 0x99, 0x3d, 0x1d, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45,
    0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];
const ENTER: &str = "\u{E007}";

/// What the user said last in a request (the prompt, or a tool result's text).
fn last_tool_result(body: &Value) -> String {
    body["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "tool"))
        .map(|m| m["content"].to_string())
        .unwrap_or_default()
}

fn user_texts(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].to_string())
        .collect()
}

/// A data folder with a project (a folder with a name that needs quoting) and one task, and the
/// scripted provider as the main model.
fn setup(data: &Path, folder: &Path, provider: &Provider) -> String {
    std::fs::create_dir_all(folder).unwrap();
    cli(data, &["projects", "add", folder.to_str().unwrap()]);
    let projects: Value =
        serde_json::from_str(&cli(data, &["projects", "list", "--json"])).unwrap();
    let project = projects[0]["id"].to_string();
    support::use_scripted_model(data, &provider.base_url());
    let task: Value = serde_json::from_str(&cli(
        data,
        &[
            "tasks",
            "add",
            "--project",
            &project,
            "Fix the notes — 修复",
            "--json",
        ],
    ))
    .unwrap();
    task["id"].to_string()
}

/// Opens the (only) task from the main window and switches to its window.
fn open_task_window(app: &Session) -> String {
    app.wait_until(
        "the task in the main window",
        WAIT,
        "return document.querySelectorAll('.task-open').length",
        |v| v == 1,
    );
    open_from_main(app, ".task-open")
}

/// Clicks the task's open button `selector` in the current (main) window and switches to the
/// task's new window once it has rendered.
fn open_from_main(app: &Session, selector: &str) -> String {
    let before = app.window_handles();
    app.click(selector);
    app.switch_to_new_window(&before, WAIT)
}

/// Closes the task window with Ctrl+W typed into `field`, as a person would, and switches back
/// to the main window.
fn close_task_window(app: &Session, field: &str) {
    app.find(field).send_keys_once("\u{E009}w\u{E000}"); // Ctrl+W
    let start = std::time::Instant::now();
    while app.window_handles().len() > 1 {
        assert!(start.elapsed() < WAIT, "the task window did not close");
        std::thread::sleep(Duration::from_millis(50));
    }
    let main = app.window_handles()[0].clone();
    app.switch_to(&main);
}

fn send(app: &Session, text: &str) {
    let input = app.find("#composer-input");
    input.type_text(text);
    input.type_text(ENTER);
}

fn wait_dialog(app: &Session, what: &str) -> Value {
    app.wait_until(what, WAIT,
        "const d = document.getElementById('approval-dialog'); return d && d.open ? d.textContent : null",
        |v| v.is_string())
}

/// Waits (up to [`WAIT`]) until a process whose command line holds `command` runs, or until none
/// does; else fails saying `what`.
fn wait_process(command: &str, running: bool, what: &str) {
    let start = std::time::Instant::now();
    loop {
        let found = std::process::Command::new("pgrep")
            .args(["-f", command])
            .output()
            .unwrap();
        if found.stdout.is_empty() != running {
            return;
        }
        assert!(start.elapsed() < WAIT, "{what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn wait_idle(app: &Session) {
    app.wait_until(
        "the run to end",
        WAIT,
        "return document.getElementById('composer-stop').hidden",
        |v| v == true,
    );
}

#[test]
fn a_new_users_path_through_a_task_window() {
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join("data");
    let folder = home.path().join("notes app 项目");
    // What the model says next, set by each step.
    type Next = Arc<Mutex<Vec<Reply>>>;
    let next: Next = Arc::new(Mutex::new(Vec::new()));
    let queue = next.clone();
    let provider = Provider::start(Box::new(move |_, _| {
        let mut q = queue.lock().unwrap();
        if q.is_empty() {
            Reply::Text("Nothing more to do.".into())
        } else {
            q.remove(0)
        }
    }));
    let script = |replies: Vec<Reply>| *next.lock().unwrap() = replies;
    let task = setup(&data, &folder, &provider);
    let original: String = (1..=20).map(|i| format!("line {i}\n")).collect();
    std::fs::write(folder.join("notes.txt"), &original).unwrap();
    let bus = NotificationBus::start();
    let env: Vec<(&str, &str)> = bus.env().into_iter().chain(GIT_IDENTITY).collect();
    let desktop = Desktop::start_with(&data, &env);
    let app = desktop.launch();
    let task_window = open_task_window(&app);

    // 1. A prompt; the answer streams in as Markdown with a highlighted, copyable code block.
    script(vec![Reply::Paced(
        "# Plan\n\nI will **fix** the notes.\n\n```rust\nfn main() { println!(\"hi\"); }\n```\n\nDone."
            .into(),
        30,
    )]);
    send(&app, "Hello there");
    app.wait_until(
        "the user's message",
        WAIT,
        "return [...document.querySelectorAll('.message.user')].map(m => m.textContent).join('|')",
        |v| v.as_str().is_some_and(|t| t.contains("Hello there")),
    );
    app.wait_until("the rendered answer", WAIT,
        "const m = document.querySelector('.message.assistant'); return m && m.querySelector('h1') && m.querySelector('pre code.hljs') && m.querySelector('.copy-code') && m.textContent.includes('Done.')",
        |v| v == true);
    assert_eq!(
        app.js(
            "return document.querySelector('.message.assistant strong').textContent",
            json!([])
        ),
        "fix"
    );
    wait_idle(&app);
    // What it cost, at the model's price (1,200 tokens in at $3 a million, 30 out at $15).
    app.wait_until(
        "the task's usage",
        WAIT,
        "return document.getElementById('task-usage').textContent",
        |v| v.as_str().is_some_and(|t| t.ends_with("30 out · $0.0040")),
    );
    save_screenshot("task-1-answer", &app.screenshot());

    // 1b. `@` lists the project's files as the user types; Enter picks one (and sends nothing).
    let input = app.find("#composer-input");
    input.type_text("Look at @nots");
    app.wait_until(
        "the file picker",
        WAIT,
        "const o = document.querySelector('#mention-list:not([hidden]) .mention-option[aria-selected=\"true\"]'); return o && o.textContent",
        |v| v == "notes.txt",
    );
    assert_eq!(
        app.js(
            "return [...document.querySelectorAll('.mention-option mark')].map(m => m.textContent).join('')",
            json!([])
        ),
        "nots",
        "the typed letters are marked"
    );
    save_screenshot("task-1b-mention", &app.screenshot());
    input.type_text(ENTER);
    app.wait_until(
        "the picked file in the composer",
        WAIT,
        "return document.getElementById('composer-input').value",
        |v| v == "Look at @notes.txt ",
    );
    assert!(
        app.js(
            "return document.getElementById('mention-list').hidden",
            json!([])
        ) == true
    );
    assert_eq!(
        app.js(
            "return document.querySelectorAll('.message.user').length",
            json!([])
        ),
        1,
        "Enter picked the file and sent nothing"
    );
    script(vec![Reply::Text("Read it.".into())]);
    input.type_text("please");
    input.type_text(ENTER);
    app.wait_until(
        "the message with its mention",
        WAIT,
        "return [...document.querySelectorAll('.message.user')].map(m => m.textContent).join('|')",
        |v| {
            v.as_str()
                .is_some_and(|t| t.contains("Look at @notes.txt please"))
        },
    );
    // (Its answer first: the stop button may not show yet when the message does.)
    app.wait_until(
        "the answer to it",
        WAIT,
        "return [...document.querySelectorAll('.message.assistant')].some(m => m.textContent.includes('Read it.'))",
        |v| v == true,
    );
    wait_idle(&app);

    // 1c. An image attached with the file chooser shows as a thumbnail, goes to the model with
    // the message, and stays in the conversation.
    let picture = home.path().join("screenshot 图.png");
    std::fs::write(&picture, PNG_1X1).unwrap();
    app.find("#composer-file")
        .type_text(picture.to_str().unwrap());
    app.wait_until(
        "the thumbnail",
        WAIT,
        "const t = document.querySelector('#composer-attachments .attachment-thumb img'); return t && t.alt",
        |v| v == "screenshot 图.png",
    );
    save_screenshot("task-1c-attachment", &app.screenshot());
    script(vec![Reply::Text("A tiny picture.".into())]);
    send(&app, "What is in this picture?");
    app.wait_until(
        "the sent image in the conversation",
        WAIT,
        "return document.querySelectorAll('.message.user .message-attachment img[src^=\"data:image/png\"]').length",
        |v| v == 1,
    );
    // The composer lets go of what it sent once the send returns, which may be after the
    // stored message reached the conversation.
    app.wait_until(
        "the composer to let go of what it sent",
        WAIT,
        "return document.querySelectorAll('#composer-attachments .attachment-thumb').length",
        |v| v == 0,
    );
    // The run answers it (its request made, its answer shown): the stop button may not have
    // shown yet when the message did, so "idle" alone would read the request before this one.
    app.wait_until(
        "the answer about the picture",
        WAIT,
        "return [...document.querySelectorAll('.message.assistant')].map(m => m.textContent).join('|')",
        |v| v.as_str().is_some_and(|t| t.contains("A tiny picture.")),
    );
    wait_idle(&app);
    let asked = provider.requests();
    let user = asked
        .iter()
        .rev()
        .filter_map(|r| {
            r["messages"]
                .as_array()?
                .iter()
                .rev()
                .find(|m| m["role"] == "user")
                .cloned()
        })
        .find(|m| {
            m["content"]
                .to_string()
                .contains("What is in this picture?")
        })
        .expect("the model was asked about the picture");
    assert!(
        user["content"]
            .to_string()
            .contains("data:image/png;base64,"),
        "the image reached the model: {user}"
    );

    // 2. An edit with two hunks asks first; approving only the first writes exactly that hunk.
    let mut changed: Vec<String> = original.lines().map(String::from).collect();
    changed[1] = "line 2 — changed".into();
    changed[17] = "line 18 — changed".into();
    let changed = changed.join("\n") + "\n";
    script(vec![
        Reply::Calls(vec![("read_file", json!({"path": "notes.txt"}))]),
        Reply::Calls(vec![(
            "write_file",
            json!({"path": "notes.txt", "content": changed}),
        )]),
        Reply::Text("Edited.".into()),
    ]);
    send(&app, "Change lines 2 and 18");
    let text = wait_dialog(&app, "the edit's approval");
    assert!(text.as_str().unwrap().contains("notes.txt"), "{text}");
    let toggles = app.js(
        "return document.querySelectorAll('#approval-dialog .hunk-toggle').length",
        json!([]),
    );
    assert_eq!(toggles, 2, "one checkbox per hunk");
    save_screenshot("task-2-approval-hunks", &app.screenshot());
    app.find("#approval-dialog .hunk-toggle[data-index='1']")
        .click();
    app.find("#approval-approve").click();
    app.wait_until("the edit's panel", WAIT,
        "const p = document.querySelector('.tool-panel[data-tool=\"write_file\"]'); return p ? p.dataset.state : null",
        |v| v == "done");
    wait_idle(&app);
    let on_disk = std::fs::read_to_string(folder.join("notes.txt")).unwrap();
    assert!(on_disk.contains("line 2 — changed\n"), "{on_disk}");
    assert!(
        on_disk.contains("line 18\n") && !on_disk.contains("line 18 — changed"),
        "{on_disk}"
    );
    save_screenshot("task-2-edit-applied", &app.screenshot());

    // 3. Rejecting with a note: the note reaches the model; the file is unchanged.
    script(vec![
        Reply::Calls(vec![(
            "edit_file",
            json!({"path": "notes.txt", "old_string": "line 5\n", "new_string": "line five\n"}),
        )]),
        Reply::Text("Understood.".into()),
    ]);
    send(&app, "Spell out line 5");
    wait_dialog(&app, "the second edit's approval");
    app.find("#approval-feedback")
        .type_text("Keep digits, please");
    app.find("#approval-reject").click();
    wait_idle(&app);
    let requests = provider.requests();
    assert!(
        last_tool_result(requests.last().unwrap()).contains("Keep digits, please"),
        "the note did not reach the model: {}",
        last_tool_result(requests.last().unwrap())
    );
    assert!(std::fs::read_to_string(folder.join("notes.txt"))
        .unwrap()
        .contains("line 5\n"));

    // 3b. "Edit…" on a change to an existing file shows the whole proposed file; what the user
    // writes there is what lands on disk.
    let before = std::fs::read_to_string(folder.join("notes.txt")).unwrap();
    let proposed = before.replace("line 7\n", "line seven\n");
    script(vec![
        Reply::Calls(vec![(
            "edit_file",
            json!({"path": "notes.txt", "old_string": "line 7\n", "new_string": "line seven\n"}),
        )]),
        Reply::Text("Kept yours.".into()),
    ]);
    send(&app, "Spell out line 7");
    wait_dialog(&app, "the third edit's approval");
    app.find("#approval-edit").click();
    app.wait_until(
        "the proposed file in the editor",
        WAIT,
        "const t = document.getElementById('approval-edited'); return t && !t.closest('[hidden]') && document.activeElement === t ? t.value : null",
        |v| v.as_str() == Some(proposed.as_str()),
    );
    // Ctrl+End, then the user's own last line.
    let editor = app.find("#approval-edited");
    editor.type_text("\u{E009}\u{E010}\u{E000}");
    editor.type_text("mine");
    editor.type_text(ENTER); // a new line in the editor, not an answer
    save_screenshot("task-2b-approval-edit", &app.screenshot());
    app.find("#approval-approve-edited").click();
    wait_idle(&app);
    assert_eq!(
        std::fs::read_to_string(folder.join("notes.txt")).unwrap(),
        format!("{proposed}mine\n"),
        "what the user wrote in the editor is on disk"
    );
    assert!(
        last_tool_result(provider.requests().last().unwrap()).contains("The user edited"),
        "the model is told the user changed its proposal"
    );

    // 3c. The task works in the project folder: its Changes are each file it changed, as it was
    // before the task against it now; a hunk reverted, the task's files committed on the
    // folder's branch, and a comment on a line reaches the agent. (The folder becomes a git
    // repository now, holding the task's work as it is.)
    git(&folder, &["init", "-q", "-b", "main"]);
    git(&folder, &["add", "-A"]);
    git(&folder, &["commit", "-qm", "Before the review"]);
    app.click("#changes-open");
    app.wait_until(
        "the folder task's changes",
        WAIT,
        "const s = document.getElementById('changes-summary')?.textContent ?? ''; return s.startsWith('In the project folder') ? [...document.querySelectorAll('.change-file')].map(f => f.dataset.path).join(' ') + ' | ' + s : null",
        |v| {
            v.as_str()
                .is_some_and(|t| t.starts_with("notes.txt | ") && t.contains("1 file"))
        },
    );
    assert_eq!(
        app.js(
            "return [...document.querySelectorAll('#changes-dialog button')].filter(b => b.offsetParent !== null).map(b => b.textContent).filter(t => /Commit|Merge|Discard|Pull/.test(t))",
            json!([]),
        ),
        json!(["Commit…"]),
        "a folder task's work is committed, never merged: it is in the folder"
    );
    save_screenshot("task-changes-in-folder", &app.screenshot());
    // Its second hunk (the line the user added in the editor) reverted: gone from the disk.
    app.click(".change-file[data-path='notes.txt'] .change-hunk:nth-child(2) .change-revert");
    app.wait_until(
        "the hunk reverted on disk",
        WAIT,
        "return document.getElementById('changes-summary').textContent",
        |v| {
            v.as_str().is_some_and(|t| t.contains("+2 −2"))
                && !std::fs::read_to_string(folder.join("notes.txt"))
                    .unwrap()
                    .contains("mine")
        },
    );
    assert!(std::fs::read_to_string(folder.join("notes.txt"))
        .unwrap()
        .contains("line seven\n"));
    // Committed with the drafted message: the task's file alone, on main.
    std::fs::write(folder.join("mine.txt"), "not the task's\n").unwrap();
    script(vec![Reply::Text("Take the user's line out".into())]);
    app.click("#changes-commit");
    app.wait_until(
        "the drafted message",
        WAIT,
        "return document.getElementById('commit-message')?.value ?? null",
        |v| v == "Take the user's line out",
    );
    save_screenshot("task-commit-folder", &app.screenshot());
    app.click("#finish-dialog-submit");
    app.wait_until(
        "the commit made",
        WAIT,
        "return document.querySelector('#finish-dialog')?.open ?? false",
        |v| v == false,
    );
    assert_eq!(
        git(&folder, &["log", "-1", "--format=%s"]),
        "Take the user's line out"
    );
    assert_eq!(
        git(&folder, &["show", "--name-only", "--format=", "HEAD"]),
        "notes.txt"
    );
    assert_eq!(git(&folder, &["status", "--porcelain"]), "?? mine.txt");
    app.click(".change-file[data-path='notes.txt'] tr[data-line='2'] .diff-text");
    app.find(".review-comment textarea")
        .type_text("Use a plain hyphen here.");
    script(vec![Reply::Text("Will do.".into())]);
    app.click("#changes-send");
    app.wait_until(
        "the agent's answer to the folder comment",
        WAIT,
        "return document.querySelector('#messages').textContent",
        |v| v.as_str().is_some_and(|t| t.contains("Will do.")),
    );
    let asked = user_texts(provider.requests().last().unwrap()).join("\n");
    assert!(
        asked.contains("notes.txt:2") && asked.contains("Use a plain hyphen here."),
        "{asked}"
    );
    wait_idle(&app);

    // 4. A command with "always allow": the exact rule shown is saved, and the same command
    // then runs without asking. It waits for a file the test creates, so its running state is
    // seen for sure.
    let wait_script = folder.join("wait.sh");
    std::fs::write(
        &wait_script,
        "#!/bin/sh\nwhile [ ! -f go ]; do sleep 0.05; done\nrm go\necho waited\n",
    )
    .unwrap();
    std::fs::set_permissions(
        &wait_script,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    script(vec![
        Reply::Calls(vec![("bash", json!({"command": "./wait.sh"}))]),
        Reply::Text("Ran it.".into()),
    ]);
    send(&app, "Run the script");
    wait_dialog(&app, "the command's approval");
    let always = app.find("#approval-always").text();
    assert!(always.contains("./wait.sh"), "{always}");
    app.find("#approval-always").click();
    app.wait_until("the command running", WAIT,
        "const p = document.querySelector('.tool-panel[data-tool=\"bash\"]'); return p ? p.dataset.state : null",
        |v| v == "running");
    save_screenshot("task-3-command-running", &app.screenshot());
    std::fs::write(folder.join("go"), "").unwrap();
    app.wait_until("the command finished", WAIT,
        "const p = document.querySelector('.tool-panel[data-tool=\"bash\"]'); return p ? p.dataset.state + ' ' + p.textContent : null",
        |v| v.as_str().is_some_and(|t| t.starts_with("done") && t.contains("waited")));
    wait_idle(&app);
    let projects: Value =
        serde_json::from_str(&cli(&data, &["projects", "list", "--json"])).unwrap();
    let rules = cli(
        &data,
        &["rules", "list", "--project", &projects[0]["id"].to_string()],
    );
    assert!(
        rules.contains("./wait.sh"),
        "the rule was not saved: {rules}"
    );

    // 5. A message sent while the agent runs is shown queued, then delivered.
    script(vec![
        Reply::Calls(vec![("bash", json!({"command": "./wait.sh"}))]),
        Reply::Text("Saw your note.".into()),
    ]);
    send(&app, "Run it again");
    app.wait_until("the command running without asking", WAIT,
        "const ps = document.querySelectorAll('.tool-panel[data-tool=\"bash\"]'); const d = document.getElementById('approval-dialog'); return ps.length === 2 && !(d && d.open) ? ps[1].dataset.state : null",
        |v| v == "running");
    send(&app, "Also check the README");
    app.wait_until("the queued message", WAIT,
        "return [...document.querySelectorAll('.queued-message')].map(e => e.textContent).join('|')",
        |v| v.as_str().is_some_and(|t| t.contains("Also check the README")));
    save_screenshot("task-4-queued", &app.screenshot());
    std::fs::write(folder.join("go"), "").unwrap();
    app.wait_until("the queued message delivered", WAIT,
        "return document.querySelectorAll('.queued-message').length === 0 && [...document.querySelectorAll('.message.user')].some(m => m.textContent.includes('Also check the README'))",
        |v| v == true);
    wait_idle(&app);
    let last = provider.requests().last().unwrap().clone();
    assert!(
        user_texts(&last)
            .iter()
            .any(|t| t.contains("Also check the README")),
        "the steered message did not reach the model"
    );

    // 6. Stop mid-stream: the partial answer is kept.
    script(vec![Reply::Hang("Partial answer that".into())]);
    send(&app, "Write a long essay");
    app.wait_until("the partial answer", WAIT,
        "return [...document.querySelectorAll('.message.assistant')].some(m => m.textContent.includes('Partial answer that'))",
        |v| v == true);
    app.find("#composer-stop").click();
    wait_idle(&app);
    let shown: Value =
        serde_json::from_str(&cli(&data, &["tasks", "show", &task, "--json"])).unwrap();
    let texts: Vec<String> = shown["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.to_string())
        .collect();
    assert!(
        texts.iter().any(|t| t.contains("Partial answer that")),
        "the partial answer was lost"
    );

    // 7. IME: Enter while a composition is open sends nothing (the IME takes that Enter).
    let users = app.js(
        "return document.querySelectorAll('.message.user').length",
        json!([]),
    );
    let input = app.find("#composer-input");
    input.type_text("修复");
    app.js(
        "document.getElementById('composer-input').dispatchEvent(new CompositionEvent('compositionstart', {data: ''}))",
        json!([]),
    );
    input.type_text(ENTER);
    std::thread::sleep(Duration::from_millis(300));
    let kept = app.js(
        "return document.getElementById('composer-input').value",
        json!([]),
    );
    assert!(
        kept.as_str().unwrap().starts_with("修复"),
        "Enter during a composition sent the text: {kept}"
    );
    assert_eq!(
        app.js(
            "return document.querySelectorAll('.message.user').length",
            json!([])
        ),
        users
    );
    // (The commit message drafted in step 3c was asked with the task's title, which has it.)
    assert!(provider
        .requests()
        .iter()
        .map(user_texts)
        .filter(|texts| !texts
            .iter()
            .any(|t| t.contains("Write the git commit message")))
        .all(|texts| !texts.iter().any(|t| t.contains("修复"))));
    app.js(
        "document.getElementById('composer-input').dispatchEvent(new CompositionEvent('compositionend', {data: '修复'})); document.getElementById('composer-input').value = ''",
        json!([]),
    );

    // 8. Restore the first edit's turn (the oldest, listed last), then undo the restore.
    let undos = app.js(
        "return document.querySelectorAll('.restore-undo').length",
        json!([]),
    );
    app.find("#checkpoints summary").click();
    app.find("#checkpoint-list li:last-child .checkpoint-restore")
        .click();
    app.wait_until(
        "the restore preview",
        WAIT,
        "const d = document.getElementById('restore-dialog'); return d.open ? d.textContent : null",
        |v| v.as_str().is_some_and(|t| t.contains("notes.txt")),
    );
    save_screenshot("task-5-restore-preview", &app.screenshot());
    app.find("#restore-dialog-submit").click();
    app.wait_until("the file restored", WAIT, "return true", |_| {
        std::fs::read_to_string(folder.join("notes.txt")).unwrap() == original
    });
    app.wait_until(
        "the undo control",
        WAIT,
        "return document.querySelectorAll('.restore-undo').length",
        |v| v.as_u64() == undos.as_u64().map(|n| n + 1),
    );
    // (The newest is listed first.)
    app.find(".restore-undo").click();
    app.find("#restore-dialog-submit").click();
    app.wait_until("the restore undone", WAIT, "return true", |_| {
        std::fs::read_to_string(folder.join("notes.txt"))
            .unwrap()
            .contains("line 2 — changed")
    });

    // A turn that changes a file ends while the pointer moves over the checkpoints (aiming at
    // the newest's button): its row, which comes first, waits until the pointer rests.
    std::fs::write(
        &wait_script,
        "#!/bin/sh\nwhile [ ! -f go ]; do sleep 0.05; done\nrm go\necho more >> notes.txt\necho waited\n",
    )
    .unwrap();
    script(vec![
        Reply::Calls(vec![("bash", json!({"command": "./wait.sh"}))]),
        Reply::Text("Added a line.".into()),
    ]);
    send(&app, "Run it to add a line");
    app.wait_until("the command running", WAIT,
        "const ps = document.querySelectorAll('.tool-panel[data-tool=\"bash\"]'); return ps.length ? ps[ps.length - 1].dataset.state : null",
        |v| v == "running");
    let labels = "return [...document.querySelectorAll('#checkpoint-list .checkpoint-label')].map(l => l.textContent.split(' · ')[0]).join(' | ')";
    app.wait_until(
        "the checkpoints drawn, none waiting",
        WAIT,
        "return document.getElementById('checkpoint-list').dataset.held === undefined",
        |v| v == true,
    );
    let before = app.js(labels, json!([]));
    let newest = app.find("#checkpoint-list li:first-child button");
    let newest_says = newest.text();
    newest.hover();
    std::fs::write(folder.join("go"), "").unwrap();
    newest.aim_until("the turn's checkpoint", WAIT, || {
        let seen = app.js(
            &format!("return [document.getElementById('checkpoint-list').dataset.held === 'true', (() => {{ {labels} }})()]"),
            json!([]),
        );
        assert_eq!(seen[1], before, "the checkpoints moved under the pointer");
        (seen[0] == true).then_some(())
    });
    app.wait_until(
        "the new checkpoint, the pointer at rest",
        WAIT,
        labels,
        |v| {
            v.as_str()
                .is_some_and(|t| t != before && t.starts_with("Turn "))
        },
    );
    // The rows already there are the same elements (a button with the focus keeps it).
    assert_eq!(newest.text(), newest_says);
    save_screenshot("task-checkpoints-new-turn", &app.screenshot());
    wait_idle(&app);

    // 9. An approval survives closing and reopening the window.
    script(vec![
        Reply::Calls(vec![(
            "bash",
            json!({"command": "echo survived; printenv"}),
        )]),
        Reply::Text("Finished.".into()),
    ]);
    send(&app, "Echo something");
    wait_dialog(&app, "an approval to leave waiting");
    close_task_window(&app, "#approval-feedback");
    let reopened = open_task_window(&app);
    assert_ne!(reopened, task_window);
    let text = wait_dialog(&app, "the approval shown again");
    assert!(text.as_str().unwrap().contains("echo survived"), "{text}");
    save_screenshot("task-6-approval-reopened", &app.screenshot());
    app.find("#approval-approve").click();
    wait_idle(&app);
    app.wait_until("the command's output", WAIT,
        "return [...document.querySelectorAll('.tool-panel')].some(p => p.textContent.includes('survived'))",
        |v| v == true);
    save_screenshot("task-7-conversation", &app.screenshot());

    // 10. Quit while an approval waits, and relaunch: the conversation is intact, and the same
    // approval is asked again (the command never ran meanwhile).
    script(vec![
        Reply::Calls(vec![(
            "bash",
            json!({"command": "touch after-relaunch && echo '<ok>'"}),
        )]),
        Reply::Text("Picked it up again.".into()),
    ]);
    send(&app, "One more command");
    wait_dialog(&app, "an approval waiting at quit");
    app.quit();
    assert!(
        !folder.join("after-relaunch").exists(),
        "the unapproved command ran"
    );
    let app = desktop.launch();
    app.wait_until(
        "the task shown as needing approval in the main window",
        WAIT,
        "return [...document.querySelectorAll('.task')].map(t => t.textContent).join('|')",
        |v| v.as_str().is_some_and(|t| t.contains("Needs approval")),
    );
    // Asked again while its window is closed: an OS notification says so, as text.
    let sent = bus.wait_for("touch after-relaunch", WAIT);
    assert!(sent.contains("Approval needed"), "{sent}");
    assert!(
        // Escaped: notification servers may read markup.
        sent.contains(
            "Fix the notes — 修复: Run `touch after-relaunch &amp;&amp; echo '&lt;ok&gt;'`"
        ),
        "{sent}"
    );
    open_task_window(&app);
    app.wait_until(
        "the conversation after a relaunch",
        WAIT,
        "return document.querySelectorAll('.message.user').length",
        |v| v.as_u64() >= Some(8),
    );
    assert!(
        app.js(
            "return document.body.textContent.includes('Edited.')",
            json!([])
        ) == true
    );
    let text = wait_dialog(&app, "the approval asked again after a relaunch");
    assert!(
        text.as_str().unwrap().contains("touch after-relaunch"),
        "{text}"
    );

    save_screenshot("task-8-relaunched", &app.screenshot());
    assert!(
        !folder.join("after-relaunch").exists(),
        "the unapproved command ran"
    );
    app.find("#approval-approve").click();
    app.wait_until(
        "the task going on",
        WAIT,
        "return document.body.textContent.includes('Picked it up again.')",
        |v| v == true,
    );
    assert!(
        folder.join("after-relaunch").exists(),
        "the approved command did not run"
    );
    app.quit();
}

#[test]
fn a_task_run_from_the_cli_streams_into_its_open_window() {
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join("data");
    let folder = home.path().join("project");
    let provider = Provider::start(Box::new(|_, body| {
        if user_texts(body)
            .last()
            .is_some_and(|t| t.contains("slow command"))
            && last_tool_result(body).is_empty()
        {
            return Reply::Calls(vec![("bash", json!({"command": "sleep 30"}))]);
        }
        Reply::Paced(
            "Written by the command line, word by word, slowly enough to watch.".into(),
            250,
        )
    }));
    let task = setup(&data, &folder, &provider);
    // In the dark theme, at the task window's smallest size (its screenshot shows both).
    let desktop = Desktop::start_with(&data, &[("GTK_THEME", "Adwaita:dark")]);
    let app = desktop.launch();
    open_task_window(&app);
    app.set_size(480, 360);
    let mut exec = support::Reaped(
        std::process::Command::new(support::cli_binary())
            .args([
                "--home",
                data.to_str().unwrap(),
                "exec",
                "--task",
                &task,
                "Say hello",
            ])
            .env("CODEWRIGHT_E2E_KEY", support::KEY)
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    // Part of the answer shows while the CLI is still streaming it.
    app.wait_until("the start of the CLI's answer", WAIT,
        "return [...document.querySelectorAll('.message.assistant')].map(m => m.textContent).join('|')",
        |v| v.as_str().is_some_and(|t| t.contains("Written by")));
    assert!(
        exec.try_wait().unwrap().is_none(),
        "the answer appeared only after exec ended"
    );
    app.wait_until(
        "the task running in another process",
        WAIT,
        "return document.getElementById('task-state').textContent",
        |v| v.as_str().is_some_and(|t| t.contains("another")),
    );
    assert!(exec.wait().unwrap().success());
    app.wait_until("the CLI's answer in the window", WAIT,
        "return [...document.querySelectorAll('.message.assistant')].map(m => m.textContent).join('|')",
        |v| v.as_str().is_some_and(|t| t.contains("slowly enough to watch.")));
    assert!(app.js("return [...document.querySelectorAll('.message.user')].some(m => m.textContent.includes('Say hello'))", json!([])) == true);
    let overflow = app.js(
        "const c = document.getElementById('conversation'); return c.scrollWidth - c.clientWidth",
        json!([]),
    );
    assert_eq!(
        overflow, 0,
        "the conversation scrolls sideways at the smallest size"
    );
    save_screenshot("task-cli-run-dark-small", &app.screenshot());

    // The composer's picker and an attached image, dark, at the smallest size: the list fits
    // above the message box, which stays visible, and long CJK names are cut, not spilled.
    let deep = folder.join("文档/一个非常长的文件夹名字用来测试截断");
    std::fs::create_dir_all(&deep).unwrap();
    std::fs::write(deep.join("说明文件-很长的名字.md"), "x").unwrap();
    let picture = home.path().join("一张很长名字的截图.png");
    std::fs::write(&picture, PNG_1X1).unwrap();
    app.find("#composer-file")
        .type_text(picture.to_str().unwrap());
    app.wait_until(
        "the thumbnail",
        WAIT,
        "return document.querySelectorAll('#composer-attachments .attachment-thumb').length",
        |v| v == 1,
    );
    app.find("#composer-input").type_text("@说明");
    app.wait_until(
        "the file picker",
        WAIT,
        "const o = document.querySelector('#mention-list:not([hidden]) .mention-option'); return o && o.textContent",
        |v| v.as_str().is_some_and(|t| t.ends_with("说明文件-很长的名字.md")),
    );
    let fits = app.js(
        "const l = document.getElementById('mention-list').getBoundingClientRect(), i = document.getElementById('composer-input').getBoundingClientRect(); return l.top >= 0 && l.bottom <= i.top + 1",
        json!([]),
    );
    assert_eq!(
        fits, true,
        "the picker covers the message box or leaves the window"
    );
    save_screenshot("task-composer-dark-small", &app.screenshot());

    // The CLI compacts the task (a model with a tiny window, so two messages are enough); the
    // reopened window shows a divider where the summary starts, and the summary on request.
    cli(
        &data,
        &["models", "add", "tiny@scripted", "--context", "40"],
    );
    let compacted = std::process::Command::new(support::cli_binary())
        .args(["--home", data.to_str().unwrap(), "tasks", "compact", &task])
        .args(["--model", "tiny@scripted"])
        .env("CODEWRIGHT_E2E_KEY", support::KEY)
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&compacted.stdout).contains("Compacted task"),
        "{compacted:?}"
    );
    close_task_window(&app, "#composer-input");
    open_task_window(&app);
    app.set_size(480, 360);
    let divider = app.js(
        "const d = document.querySelector('.compaction'); return d && !d.open && d.nextElementSibling?.classList.contains('message') ? d.textContent : null",
        json!([]),
    );
    assert!(
        divider
            .as_str()
            .is_some_and(|t| t.contains("Conversation summarized")),
        "a closed divider just before the first message kept: {divider}"
    );
    assert!(
        app.js(
            "return document.getElementById('task-state').textContent",
            json!([])
        )
        .as_str()
        .is_some_and(|t| !t.contains("Running")),
        "the finished compaction left the task shown as running"
    );
    app.find(".compaction summary").click();
    app.wait_until(
        "the summary, rendered",
        WAIT,
        "const s = document.querySelector('.compaction[open] .compaction-summary .md-block'); return s ? s.textContent : null",
        |v| v.as_str().is_some_and(|t| t.contains("Written by the command line")),
    );
    // What the reader opened stays where they clicked it: the view does not jump to the end.
    let shown = app.js(
        "const c = document.getElementById('conversation').getBoundingClientRect(), d = document.querySelector('.compaction summary').getBoundingClientRect(); return d.top >= c.top && d.bottom <= c.bottom",
        json!([]),
    );
    assert_eq!(shown, true, "the opened summary's divider left the view");
    save_screenshot("task-compaction-dark-small", &app.screenshot());

    // The CLI is killed while its command runs: the open window says the call was cut short
    // (the app notices the dead run within seconds), without being reopened.
    let mut exec = support::Reaped(
        std::process::Command::new(support::cli_binary())
            .args(["--home", data.to_str().unwrap(), "exec", "--mode", "yolo"])
            .args(["--task", &task, "Run the slow command"])
            .env("CODEWRIGHT_E2E_KEY", support::KEY)
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    app.wait_until(
        "the CLI's command in the window",
        WAIT,
        "return document.querySelector('.tool-panel[data-tool=bash]')?.dataset.state ?? null",
        |v| v.is_string(),
    );
    // The command runs (the call is stored before it starts; give it its moment).
    let db = rusqlite::Connection::open(data.join("codewright.db")).unwrap();
    let deadline = std::time::Instant::now() + WAIT;
    while db
        .query_row(
            "SELECT count(*) FROM calls WHERE state = 'running'",
            [],
            |r| r.get::<_, i64>(0),
        )
        .unwrap_or(0)
        == 0
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the command never started"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    exec.kill().unwrap();
    exec.wait().unwrap();
    app.wait_until(
        "the killed run's command shown as interrupted",
        WAIT,
        "return document.querySelector('.tool-panel[data-tool=bash]').dataset.state",
        |v| v == "interrupted",
    );
    app.quit();
}

/// A model that ends while the check its message named still fails leaves the task "Not done",
/// not "Done": in the task window (a notice that names the check, and its header) and in the
/// main window's list.
#[test]
fn a_task_whose_check_still_fails_is_shown_not_done() {
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join("data");
    let folder = home.path().join("project");
    let provider = Provider::start(Box::new(|_, _| Reply::Text("Done.".into())));
    let task = setup(&data, &folder, &provider);
    let check = folder.join("check.sh");
    // A local model with a small window: Codewright runs the checks its message names. Run once
    // from the command line while the check passes: the task is done, and keeps the model.
    std::fs::write(&check, "exit 0\n").unwrap();
    cli(
        &data,
        &["models", "add", "small@scripted", "--context", "16000"],
    );
    let prompt = "Make the check pass; check with `sh check.sh`.";
    let exec = std::process::Command::new(support::cli_binary())
        .args(["--home", data.to_str().unwrap(), "exec", "--task", &task])
        .args(["--model", "small@scripted", "--mode", "yolo", prompt])
        .env("CODEWRIGHT_E2E_KEY", support::KEY)
        .output()
        .unwrap();
    assert!(
        exec.status.success(),
        "{}",
        String::from_utf8_lossy(&exec.stderr)
    );
    std::fs::write(&check, "exit 1\n").unwrap();

    let desktop = Desktop::start_with(&data, &[("GTK_THEME", "Adwaita:dark")]);
    let app = desktop.launch();
    app.set_size(720, 460);
    let badge = "return document.querySelector('.task .badge')?.textContent ?? ''";
    app.wait_until("the task listed as done", WAIT, badge, |v| v == "Done");
    let main = app.current_window();
    open_task_window(&app);
    let header = "return document.getElementById('task-state').textContent";
    app.wait_until("the header saying done", WAIT, header, |v| {
        v.as_str().is_some_and(|t| t.starts_with("Done"))
    });
    // Asked again in the window, with the check failing now: the run's end names the check.
    send(&app, prompt);
    let notice =
        "return [...document.querySelectorAll('.notice')].map(n => n.textContent).join('|')";
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let dialog = app.js(
            "const d = document.getElementById('approval-dialog'); return Boolean(d && d.open)",
            json!([]),
        );
        if dialog == true {
            app.find("#approval-approve").click();
        }
        let said = app.js(notice, json!([]));
        if said
            .as_str()
            .is_some_and(|t| t.contains("The task is not done: sh check.sh still fails."))
        {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the run did not say the task is not done: {said}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    wait_idle(&app);
    app.wait_until("the header saying not done", WAIT, header, |v| {
        v.as_str().is_some_and(|t| t.starts_with("Not done"))
    });
    save_screenshot("task-not-done", &app.screenshot());
    app.switch_to(&main);
    app.wait_until("the task listed as not done", WAIT, badge, |v| {
        v == "Not done"
    });
    save_screenshot("main-task-not-done-dark", &app.screenshot());
    app.quit();
}

#[test]
fn hostile_content_never_runs_or_navigates() {
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join("data");
    let folder = home.path().join("project");
    let evil_name = "<img src=x onerror=window.__pwned=1>.txt";
    let provider = Provider::start(Box::new(move |i, _| match i {
        0 => Reply::Calls(vec![
            (
                "bash",
                json!({"command": "echo '<script>window.__pwned=2</script><img src=x onerror=window.__pwned=3>'"}),
            ),
            ("list_dir", json!({})),
            ("hostile__show", json!({})),
        ]),
        _ => Reply::Text(
            "<script>window.__pwned=4</script>\n\n<img src=x onerror=\"window.__pwned=5\">\n\n\
             [click me](javascript:window.__pwned=6) <svg onload=\"window.__pwned=7\"></svg>\n\n\
             [a link](https://example.com/)\n"
                .into(),
        ),
    }));
    let _task = setup(&data, &folder, &provider);
    std::fs::write(folder.join(evil_name), "x").unwrap();
    // An MCP server that answers with HTML, an SVG carrying a script, and a PNG.
    let servers = std::env::var_os("CODEWRIGHT_MCP_SERVERS")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(&std::env::var("HOME").unwrap()).join(".cache/codewright/mcp-servers")
        });
    let python = servers.join("py/bin/python");
    assert!(python.exists(), "run ./scripts/setup --test first");
    let server =
        std::path::PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("run by cargo"))
            .join("tests/support/hostile_mcp.py");
    cli(
        &data,
        &[
            "mcp",
            "add",
            "hostile",
            "--",
            python.to_str().unwrap(),
            server.to_str().unwrap(),
        ],
    );
    let desktop = Desktop::start(&data);
    let app = desktop.launch();
    open_task_window(&app);
    app.js("const s = document.getElementById('mode-select'); s.value = 'yolo'; s.dispatchEvent(new Event('change'))", json!([]));
    app.find("#yolo-dialog-submit").click();
    send(&app, "Show me");
    app.wait_until("the hostile answer shown as text", WAIT,
        "return [...document.querySelectorAll('.message.assistant')].some(m => m.textContent.includes('<script>window.__pwned=4</script>'))",
        |v| v == true);
    assert!(
        app.js(
            "return document.body.textContent.includes('onerror=window.__pwned=1')",
            json!([])
        ) == true,
        "the file name is shown as text"
    );
    // The MCP result: its HTML as text, the SVG not shown, the PNG shown as an image.
    app.wait_until("the MCP result shown", WAIT,
        "return [...document.querySelectorAll('.tool-panel')].some(p => p.textContent.includes('<img src=x onerror=window.__pwned=9> <b>bold?</b>') && p.textContent.includes('image/svg+xml is not shown') && p.querySelector('img.tool-image[src^=\"data:image/png\"]'))",
        |v| v == true);
    assert_eq!(
        app.js(
            "return document.querySelectorAll('img[src^=\"data:image/svg\"], svg script, b').length",
            json!([])
        ),
        0,
        "no SVG image, script or markup from a result made it into the page"
    );
    // A javascript: link is not a link at all; a real one asks before it opens.
    assert_eq!(
        app.js(
            "return document.querySelectorAll('a[href^=\"javascript\"]').length",
            json!([])
        ),
        0
    );
    let href = app.js("return location.href", json!([]));
    app.find(".message.assistant a[href='https://example.com/']")
        .click();
    app.wait_until("the link dialog", WAIT,
        "const d = document.getElementById('link-dialog'); return d && d.open ? d.textContent : null",
        |v| v.as_str().is_some_and(|t| t.contains("https://example.com/")));
    app.find("#link-dialog-cancel").click();
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        app.js("return window.__pwned === undefined", json!([])),
        true,
        "hostile content ran"
    );
    assert_eq!(
        app.js("return location.href", json!([])),
        href,
        "the window navigated"
    );
    save_screenshot("task-hostile", &app.screenshot());
    app.quit();
}

/// A model's command and file name that would read as something else: a carriage return and an
/// escape sequence that, in a terminal, make `touch ~/pwned` read as `$ ls -la`, and a bidi
/// override (U+202E) that turns `evil…txt.exe` around. The approval dialog shows each escaped with a
/// warning, the user's "no" holds, and the panels show the escapes too.
#[test]
fn an_approval_shows_hidden_characters_escaped_and_warns() {
    const SPOOF: &str = "touch pwned # \r\u{1b}[2K  $ ls -la";
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join("data");
    let folder = home.path().join("project");
    let provider = Provider::start(Box::new(|i, _| match i {
        0 => Reply::Calls(vec![
            ("bash", json!({ "command": SPOOF })),
            (
                "write_file",
                json!({"path": "evil\u{202e}txt.exe", "content": "x\u{1b}[2K\n"}),
            ),
        ]),
        _ => Reply::Text("Nothing was done.".into()),
    }));
    let _task = setup(&data, &folder, &provider);
    let desktop = Desktop::start(&data);
    let app = desktop.launch();
    open_task_window(&app);
    send(&app, "Tidy up");
    let shown = wait_dialog(&app, "the command's approval");
    let shown = shown.as_str().unwrap();
    assert!(
        shown.contains("touch pwned # \\r\\x1b[2K  $ ls -la"),
        "the command is shown escaped: {shown}"
    );
    assert!(shown.contains("control or invisible characters"), "{shown}");
    save_screenshot("approval-hidden-characters", &app.screenshot());
    app.set_size(480, 360);
    save_screenshot("approval-hidden-characters-small", &app.screenshot());
    app.set_size(880, 720);
    app.find("#approval-reject").click();
    let shown = app.wait_until("the file's approval", WAIT,
        "const d = document.getElementById('approval-dialog'); return d && d.open && d.textContent.includes('evil') ? d.textContent : null",
        |v| v.is_string());
    let shown = shown.as_str().unwrap();
    assert!(
        !shown.contains('\u{202e}') && !shown.contains('\u{1b}'),
        "{shown}"
    );
    assert!(
        shown.contains("evil\\u{202e}txt.exe") && shown.contains("x\\x1b[2K"),
        "{shown}"
    );
    app.find("#approval-reject").click();
    app.wait_until("the run's end", WAIT,
        "return [...document.querySelectorAll('.message.assistant')].some(m => m.textContent.includes('Nothing was done.'))",
        |v| v == true);
    let panels = app.js(
        "return [...document.querySelectorAll('.tool-panel')].map(p => p.textContent).join('\\n')",
        json!([]),
    );
    let panels = panels.as_str().unwrap();
    assert!(
        panels.contains("\\r\\x1b[2K") && panels.contains("evil\\u{202e}txt.exe"),
        "{panels}"
    );
    assert!(!panels.contains('\u{202e}') && !panels.contains('\u{1b}') && !panels.contains('\r'));
    assert!(!folder.join("pwned").exists() && !folder.join("evil\u{202e}txt.exe").exists());
    // Both calls were rejected: the run did nothing but answer, and its end says so.
    app.wait_until(
        "the honest outcome",
        WAIT,
        "return [...document.querySelectorAll('.notice')].map(n => n.textContent).join('|')",
        |v| {
            v.as_str().is_some_and(|t| {
                t.contains("The agent answered without reading, changing or running anything.")
            })
        },
    );
    app.quit();
}

/// The app SIGKILLed while an answer streams into its task window: after a relaunch the user's
/// message and the part of the answer that had arrived are there, the task says it was
/// interrupted (not running), and one more message carries on.
#[test]
fn a_crash_of_the_app_mid_answer_loses_nothing() {
    const ANSWER: &str = "The build fails because the linker cannot find the library; here is why, step by step, slowly. ";
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join("data");
    let folder = home.path().join("project");
    let provider = Provider::start(Box::new(|_, body| {
        if user_texts(body).iter().any(|t| t.contains("Carry on")) {
            Reply::Text("Picked up where it stopped.".into())
        } else {
            Reply::Paced(ANSWER.repeat(5), 80)
        }
    }));
    let task = setup(&data, &folder, &provider);
    let desktop = Desktop::start(&data);
    let app = desktop.launch();
    open_task_window(&app);
    send(&app, "Why does the build fail?");
    app.wait_until(
        "part of the answer",
        WAIT,
        "return [...document.querySelectorAll('.message.assistant')].map(m => m.textContent).join('|')",
        |v| v.as_str().is_some_and(|t| t.contains("the linker")),
    );
    assert!(
        app.js(
            "return !document.getElementById('composer-stop').hidden",
            json!([])
        ) == true,
        "still streaming when the app dies"
    );
    desktop.kill_app();
    app.quit(); // the driver's session of the dead app

    let app = desktop.launch();
    app.wait_until(
        "the task shown as interrupted in the main window",
        WAIT,
        "return [...document.querySelectorAll('.task')].map(t => t.textContent).join('|')",
        |v| v.as_str().is_some_and(|t| t.contains("Interrupted")),
    );
    open_task_window(&app);
    let shown = app.js(
        "return [document.getElementById('task-state').textContent, [...document.querySelectorAll('.message.user')].map(m => m.textContent).join('|'), [...document.querySelectorAll('.message.assistant')].map(m => m.textContent).join('|')]",
        json!([]),
    );
    assert!(
        shown[0].as_str().unwrap().contains("Interrupted"),
        "{shown}"
    );
    assert!(
        shown[1]
            .as_str()
            .unwrap()
            .contains("Why does the build fail?"),
        "the user's message survived: {shown}"
    );
    // What had been stored of the answer is kept, marked incomplete: the store writes a
    // streaming answer at least every 250 ms, so a crash loses at most that much of it.
    let kept = shown[2].as_str().unwrap();
    let kept = kept
        .strip_suffix("\nIncomplete")
        .unwrap_or_else(|| panic!("marked incomplete: {shown}"));
    assert!(
        kept.starts_with("The ") && ANSWER.repeat(5).starts_with(kept.trim_end()),
        "the part of the answer that had arrived is kept: {shown}"
    );
    save_screenshot("task-after-crash", &app.screenshot());
    send(&app, "Carry on");
    app.wait_until(
        "the answer after the crash",
        WAIT,
        "return document.body.textContent.includes('Picked up where it stopped.')",
        |v| v == true,
    );
    wait_idle(&app);
    let shown: Value =
        serde_json::from_str(&cli(&data, &["tasks", "show", &task, "--json"])).unwrap();
    assert_eq!(shown["task"]["status"], "done", "{shown}");
    let users: Vec<&str> = shown["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["parts"][0]["text"].as_str())
        .collect();
    assert_eq!(users, ["Why does the build fail?", "Carry on"]);
    app.quit();
}

/// The app SIGKILLed twice more: while an approval waits (after a relaunch it is asked again and
/// nothing ran meanwhile), then while the approved command runs (the command dies with the app,
/// and after a relaunch its panel is not shown running; the model and the panel are told it may
/// have run); one more
/// message then finishes the task, and the store is intact.
#[test]
fn a_crash_of_the_app_while_it_asks_or_runs_a_command_loses_nothing() {
    // A unique duration, so the command's processes can be found by their arguments.
    const COMMAND: &str = "sleep 29.75 && touch slept";
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join("data");
    let folder = home.path().join("project");
    let provider = Provider::start(Box::new(|_, body| {
        if user_texts(body).iter().any(|t| t.contains("Carry on")) {
            Reply::Text("Checked: the slow step did not finish.".into())
        } else {
            Reply::Calls(vec![("bash", json!({ "command": COMMAND }))])
        }
    }));
    let task = setup(&data, &folder, &provider);
    let desktop = Desktop::start(&data);
    let app = desktop.launch();
    open_task_window(&app);
    send(&app, "Run the slow step");
    wait_dialog(&app, "the command's approval");
    desktop.kill_app();
    app.quit();

    let app = desktop.launch();
    app.wait_until(
        "the task shown as needing approval after the crash",
        WAIT,
        "return [...document.querySelectorAll('.task')].map(t => t.textContent).join('|')",
        |v| v.as_str().is_some_and(|t| t.contains("Needs approval")),
    );
    open_task_window(&app);
    let text = wait_dialog(&app, "the approval asked again after a crash");
    assert!(text.as_str().unwrap().contains("sleep 29.75"), "{text}");
    app.find("#approval-approve").click();
    app.wait_until(
        "the command running in its panel",
        WAIT,
        "return [...document.querySelectorAll('.tool-panel')].map(p => p.dataset.state).join('|')",
        |v| v.as_str() == Some("running"),
    );
    wait_process("sleep 29.75", true, "the approved command did not start");
    // A message sent while the command runs waits for the next step, shown as queued; once the
    // composer lets go of it, it is kept, crash or not.
    send(&app, "Also note how long it took");
    app.wait_until(
        "the message queued and the composer cleared",
        WAIT,
        "return !!document.querySelector('.queued-message') && document.getElementById('composer-input').value === ''",
        |v| v == true,
    );
    desktop.kill_app();
    app.quit();
    wait_process("sleep 29.75", false, "the command outlived the app");

    let app = desktop.launch();
    app.wait_until(
        "the task shown as interrupted after the second crash",
        WAIT,
        "return [...document.querySelectorAll('.task')].map(t => t.textContent).join('|')",
        |v| v.as_str().is_some_and(|t| t.contains("Interrupted")),
    );
    open_task_window(&app);
    // Not shown as running — nothing runs it now — but as cut short, at once.
    let panel = app.js(
        "const p = document.querySelector('.tool-panel'); return [p.dataset.state, p.textContent]",
        json!([]),
    );
    assert_eq!(panel[0], "interrupted", "{panel}");
    assert!(
        panel[1]
            .as_str()
            .unwrap()
            .contains("may or may not have taken effect"),
        "{panel}"
    );
    let queued = app.js(
        "return [...document.querySelectorAll('.queued-message .queued-text')].map(q => q.textContent)",
        json!([]),
    );
    assert_eq!(
        queued,
        json!(["Also note how long it took"]),
        "the queued message after the crash"
    );
    save_screenshot("task-after-crash-mid-command", &app.screenshot());
    send(&app, "Carry on");
    app.wait_until(
        "the answer after the crash",
        WAIT,
        "return document.body.textContent.includes('Checked: the slow step did not finish.')",
        |v| v == true,
    );
    // The queued message reached the model before the new one (in one user turn: two in a row
    // are sent as one), and left the queue.
    let said = user_texts(provider.requests().last().unwrap());
    let last = &said[said.len() - 1];
    assert!(
        last.find("Also note how long it took")
            .is_some_and(|at| last.find("Carry on") > Some(at)),
        "{said:?}"
    );
    assert_eq!(
        app.js(
            "return document.querySelectorAll('.queued-message').length",
            json!([])
        ),
        0
    );
    // The model was told the command may have run, and the panel says so too.
    let told = last_tool_result(provider.requests().last().unwrap());
    assert!(told.contains("may or may not have taken effect"), "{told}");
    app.wait_until(
        "the command's panel to say it may have run",
        WAIT,
        "return document.querySelector('.tool-panel').textContent",
        |v| {
            v.as_str()
                .is_some_and(|t| t.contains("may or may not have taken effect"))
        },
    );
    wait_idle(&app);
    app.quit();
    assert!(
        !folder.join("slept").exists(),
        "the command finished after the crash"
    );
    let shown: Value =
        serde_json::from_str(&cli(&data, &["tasks", "show", &task, "--json"])).unwrap();
    assert_eq!(shown["task"]["status"], "done", "{shown}");
    let db = rusqlite::Connection::open(data.join("codewright.db")).unwrap();
    let integrity: String = db
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(integrity, "ok");
}

/// A task window sent to the background by another window lets go of its composer's focus
/// (WebKitGTK keeps the caret of every focused field blinking, in the background too: three
/// idle task windows cost ~20 % of a core), keeps the draft, and gets its caret back, where it
/// was, when the window comes to the front again.
#[test]
fn a_window_in_the_background_keeps_its_draft_and_gets_its_caret_back() {
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join("data");
    let folder = home.path().join("project");
    let provider = Provider::start(Box::new(|_, _| Reply::Text("Finished: **Done.**".into())));
    let first = setup(&data, &folder, &provider);
    let projects: Value =
        serde_json::from_str(&cli(&data, &["projects", "list", "--json"])).unwrap();
    let project = projects[0]["id"].to_string();
    let second: Value = serde_json::from_str(&cli(
        &data,
        &[
            "tasks",
            "add",
            "--project",
            &project,
            "Another task",
            "--json",
        ],
    ))
    .unwrap();
    let second = second["id"].to_string();
    let desktop = Desktop::start(&data);
    let app = desktop.launch();
    let main = app.current_window();
    let open = |task: &str| {
        app.switch_to(&main);
        open_from_main(&app, &format!(".task[data-id=\"{task}\"] .task-open"))
    };

    let first_window = open(&first);
    let draft = "A draft, half written — 草稿";
    app.find("#composer-input").type_text(draft);
    // What holds the focus once this window has gone to the background.
    app.js(
        "window.addEventListener('blur', () => setTimeout(() => { window.focusInBackground = document.activeElement.id || document.activeElement.tagName; }));",
        json!([]),
    );
    open(&second);
    app.switch_to(&first_window);
    app.wait_until(
        "the first window in the background",
        WAIT,
        "return window.focusInBackground ?? null",
        |v| v == "BODY",
    );
    // In the background it still shows what happens in its task, its Markdown rendered (catching
    // up a few times a second instead of every frame): an answer written by the command line.
    let exec = std::process::Command::new(support::cli_binary())
        .args([
            "--home",
            data.to_str().unwrap(),
            "exec",
            "--task",
            &first,
            "Finish it",
        ])
        .env("CODEWRIGHT_E2E_KEY", support::KEY)
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(exec.success());
    app.wait_until("the answer shown in the window in the background", WAIT,
        "return document.hasFocus() ? 'in front' : document.querySelector('.message.assistant strong')?.textContent ?? null",
        |v| v == "Done.");
    // Opening the task again brings its window to the front, as a person would.
    app.switch_to(&main);
    app.find(&format!(".task[data-id=\"{first}\"] .task-open"))
        .click();
    app.switch_to(&first_window);
    let back = app.wait_until("the caret back in the composer", WAIT,
        "const el = document.activeElement; return el.id === 'composer-input' ? [el.value, el.selectionStart] : null",
        |v| !v.is_null());
    assert_eq!(back, json!([draft, draft.encode_utf16().count()]));
}

/// A task the CLI runs in a terminal, seen from the main window: its row goes running → needs
/// approval → done, live; its project's row counts the tasks waiting for the user (also while
/// another project is selected); a result that arrived with its window closed is unread until
/// the task is opened. Dark, at the main window's smallest size, with a long CJK project name.
#[test]
fn the_main_window_follows_a_task_the_cli_runs_and_marks_what_needs_you() {
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join("data");
    let folder = home
        .path()
        .join("客户端重构 — a project whose name is far too long for the sidebar");
    // The first request waits for the test: the task is running for as long as it looks.
    let (open_gate, gate) = std::sync::mpsc::channel::<()>();
    let gate = Mutex::new(gate);
    let provider = Provider::start(Box::new(move |_, body| {
        if last_tool_result(body).contains("checked-from-a-terminal") {
            Reply::Text("Checked.".into())
        } else {
            let _ = gate.lock().unwrap().recv_timeout(WAIT * 2);
            Reply::Calls(vec![(
                "bash",
                json!({"command": "echo checked-from-a-terminal"}),
            )])
        }
    }));
    let task = setup(&data, &folder, &provider);
    let other = home.path().join("Alpha");
    std::fs::create_dir_all(&other).unwrap();
    cli(&data, &["projects", "add", other.to_str().unwrap()]);
    let desktop = Desktop::start_with(&data, &[("GTK_THEME", "Adwaita:dark")]);
    let app = desktop.launch();
    app.set_size(720, 460);
    let project_row = |name: &str| {
        format!("[...document.querySelectorAll('.project')].find(p => p.textContent.includes('{name}'))")
    };
    let task_row = "return document.querySelector('.task')?.textContent ?? ''";
    // Projects by id: the task's is 1, Alpha 2.
    let choose = |id: u32, name: &str| {
        app.find(&format!(".project[data-id='{id}'] .project-button"))
            .click();
        app.wait_until(
            "the project chosen",
            WAIT,
            "return document.getElementById('project-name').textContent",
            |v| v.as_str().is_some_and(|t| t.starts_with(name)),
        );
    };
    choose(2, "Alpha");

    // The CLI runs the task in a terminal (a pty, so it asks there).
    let command = format!(
        "'{}' --home '{}' exec --task {task} 'Check it from a terminal'",
        support::cli_binary().display(),
        data.display()
    );
    let mut terminal = support::Reaped(
        std::process::Command::new("script")
            .args(["-qfec", &command, "/dev/null"])
            .env("CODEWRIGHT_E2E_KEY", support::KEY)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    choose(1, "客户端重构");
    app.wait_until("the task running in the CLI", WAIT, task_row, |v| {
        v.as_str().is_some_and(|t| t.contains("Running"))
    });
    // Back to the other project; the approval is asked while it is selected.
    choose(2, "Alpha");
    open_gate.send(()).unwrap();
    let badge = app.wait_until(
        "the project's count of tasks that need you",
        WAIT,
        &format!(
            "return {}?.querySelector('.project-asking')?.textContent ?? null",
            project_row("客户端重构")
        ),
        |v| v.is_string(),
    );
    assert_eq!(badge, "1");
    let label = app.js(
        &format!(
            "return {}.querySelector('.project-button').textContent",
            project_row("客户端重构")
        ),
        json!([]),
    );
    assert!(
        label.as_str().unwrap().contains("1 task needs you"),
        "{label}"
    );
    assert!(app
        .js(
            &format!(
                "return {}.querySelector('.project-asking')",
                project_row("Alpha")
            ),
            json!([])
        )
        .is_null());
    save_screenshot("main-needs-you-dark-small", &app.screenshot());
    choose(1, "客户端重构");
    app.wait_until("the task needing approval", WAIT, task_row, |v| {
        v.as_str().is_some_and(|t| t.contains("Needs approval"))
    });

    // Approved in the terminal: done, and unread, since its window is closed.
    use std::io::Write;
    terminal.stdin.as_mut().unwrap().write_all(b"y\n").unwrap();
    app.wait_until("the task done and unread", WAIT,
        "const t = document.querySelector('.task'); return t && t.textContent.includes('Done') && t.classList.contains('unread')",
        |v| v == true);
    assert!(terminal.wait().unwrap().success());
    let marks = app.js(
        &format!("const p = {}; return [p.querySelector('.project-asking') === null, p.querySelector('.unread-dot') !== null, p.textContent]", project_row("客户端重构")),
        json!([]),
    );
    assert_eq!(marks[0], true, "{marks}");
    assert_eq!(marks[1], true, "{marks}");
    assert!(
        marks[2]
            .as_str()
            .unwrap()
            .contains("1 finished task not yet seen"),
        "{marks}"
    );
    save_screenshot("main-unread-dark-small", &app.screenshot());
    let overflow = app.js(
        "const s = document.querySelector('.sidebar'); return s.scrollWidth - s.clientWidth",
        json!([]),
    );
    assert_eq!(
        overflow, 0,
        "the long project name spills out of the sidebar"
    );

    // Opened: seen, in its row and its project's.
    let main = app.current_window();
    open_task_window(&app);
    app.wait_until(
        "the answer in the task window",
        WAIT,
        "return document.body.textContent.includes('Checked.')",
        |v| v == true,
    );
    app.switch_to(&main);
    app.wait_until("the task marked seen", WAIT,
        &format!("return document.querySelector('.task.unread') === null && {}.querySelector('.unread-dot') === null", project_row("客户端重构")),
        |v| v == true);
}

/// Ctrl+F searches every conversation: matches grouped by project and task, the words marked;
/// choosing one opens its task scrolled to that message, also one older than the first page;
/// with the window open, another match is shown in it. Esc leaves the page.
#[test]
fn search_finds_a_word_and_opens_the_task_at_that_message() {
    use codewright_protocol::{Message, Part, ProjectId, Role, TaskId};
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join("data");
    let folder = home.path().join("project");
    let provider = Provider::start(Box::new(|_, _| Reply::Text("unused".into())));
    let task: i64 = setup(&data, &folder, &provider).parse().unwrap();
    {
        let store = codewright_store::Store::open_in(&data).unwrap();
        let text = |role, text: String| Message::new(role, vec![Part::Text { text }]);
        for i in 1..=120 {
            let words = match i {
                3 => "the quokka test passed once".to_string(),
                10 => "Where does Zanzibar keep its session tokens?".to_string(),
                _ => format!("filler message number {i}"),
            };
            let role = if i % 2 == 1 {
                Role::User
            } else {
                Role::Assistant
            };
            store
                .append_message(TaskId(task), &text(role, words))
                .unwrap();
        }
        let other = store
            .add_task(ProjectId(1), "会话 with a second mention")
            .unwrap();
        store
            .append_message(other.id, &text(Role::Assistant, "zanzibar, again".into()))
            .unwrap();
    }
    let desktop = Desktop::start(&data);
    let app = desktop.launch();
    app.wait_until(
        "the tasks",
        WAIT,
        "return document.querySelectorAll('.task').length",
        |v| v == 2,
    );
    app.find("#new-task-title")
        .send_keys_once("\u{E009}f\u{E000}"); // Ctrl+F
    app.wait_until(
        "the search box focused",
        WAIT,
        "return !document.getElementById('search-view').hidden && document.activeElement.id",
        |v| v == "search-input",
    );
    app.find("#search-input").type_text("zanzibar");
    let groups = app.wait_until(
        "the matches, by task",
        WAIT,
        "return [...document.querySelectorAll('.search-task-title')].map(t => t.textContent)",
        |v| v.as_array().is_some_and(|a| a.len() == 2),
    );
    let mut titles: Vec<_> = groups
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    titles.sort();
    assert_eq!(
        titles,
        ["Fix the notes — 修复", "会话 with a second mention"]
    );
    let marked = app.js(
        "return [...document.querySelectorAll('.search-snippet mark')].map(m => m.textContent)",
        json!([]),
    );
    let mut marked: Vec<_> = marked
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    marked.sort();
    assert_eq!(marked, ["Zanzibar", "zanzibar"]);
    save_screenshot("search", &app.screenshot());
    assert_eq!(
        app.js(
            "return document.querySelector('.search-project-name').textContent",
            json!([])
        ),
        "project"
    );

    // The match is message 10 of 120: older than the page a task window opens on.
    let hit = format!(".search-hit[data-task='{task}']");
    let before = app.window_handles();
    app.find(&hit).click();
    let main = app.current_window();
    let task_window = app.switch_to_new_window(&before, WAIT);
    let in_view = "const m = document.querySelector('.message.found'); if (!m) return null; \
        const c = document.getElementById('conversation').getBoundingClientRect(); const r = m.getBoundingClientRect(); \
        return r.top >= c.top && r.bottom <= c.bottom ? m.textContent : 'out of view'";
    let found = app.wait_until("the message found, in view", WAIT, in_view, |v| {
        v.as_str().is_some_and(|t| t != "out of view")
    });
    assert!(found.as_str().unwrap().contains("Zanzibar"), "{found}");
    save_screenshot("search-opened", &app.screenshot());

    // Another match in the same task, with its window open: shown there.
    app.switch_to(&main);
    let input = app.find("#search-input");
    input.clear();
    input.type_text("quokka");
    app.wait_until(
        "the second search",
        WAIT,
        "return [...document.querySelectorAll('.search-snippet mark')].map(m => m.textContent).join()",
        |v| v == "quokka",
    );
    app.find(&hit).click();
    app.switch_to(&task_window);
    let found = app.wait_until("the second message found", WAIT, in_view, |v| {
        v.as_str().is_some_and(|t| t.contains("quokka"))
    });
    assert!(found.as_str().unwrap().contains("passed once"), "{found}");

    // Esc leaves the page for the project, the words kept for next time.
    app.switch_to(&main);
    app.find("#search-input").send_keys_once("\u{E00C}");
    app.wait_until(
        "the project again",
        WAIT,
        "return document.getElementById('search-view').hidden && !document.getElementById('project-view').hidden",
        |v| v == true,
    );
    app.find("#open-search").click();
    assert_eq!(app.find("#search-input").value(), "quokka");

    // Ctrl+K: the palette finds a task of any project by the words of its title, and opens it.
    let palette = |from: &str, keys: &str| {
        app.find(from).send_keys_once("\u{E009}k\u{E000}");
        app.wait_until(
            "the palette",
            WAIT,
            "return document.getElementById('palette').open && document.activeElement.id",
            |v| v == "palette-input",
        );
        app.find("#palette-input").type_text(keys);
    };
    palette("#search-input", "会话 second");
    app.wait_until(
        "the task in the palette",
        WAIT,
        "return [...document.querySelectorAll('.palette-item')].map(i => i.textContent).join('|')",
        |v| {
            v.as_str()
                .is_some_and(|t| t.contains("会话 with a second mention"))
        },
    );
    save_screenshot("palette", &app.screenshot());
    let before = app.window_handles();
    app.find("#palette-input").type_text(ENTER);
    app.switch_to_new_window(&before, WAIT);
    app.wait_until(
        "the task the palette opened",
        WAIT,
        "return document.body.textContent.includes('zanzibar, again')",
        |v| v == true,
    );
    // An action, chosen with the arrow keys; Esc closes without doing anything.
    app.switch_to(&main);
    palette("#search-input", "s");
    app.wait_until(
        "the actions starting with s first",
        WAIT,
        "return [...document.querySelectorAll('.palette-label')].slice(0, 2).map(i => i.textContent).join('|')",
        |v| v == "Search conversations|Settings",
    );
    app.find("#palette-input").send_keys_once("\u{E015}"); // ↓
    app.wait_until(
        "Settings chosen",
        WAIT,
        "return document.querySelector('.palette-item[aria-selected=true]').textContent",
        |v| v.as_str().is_some_and(|t| t.starts_with("Settings")),
    );
    app.find("#palette-input").send_keys_once(ENTER);
    app.wait_until(
        "the settings page",
        WAIT,
        "return !document.getElementById('settings-view').hidden && !document.getElementById('palette').open",
        |v| v == true,
    );
    palette("#settings-close", "nothing like this at all");
    app.find("#palette-input").send_keys_once("\u{E00C}");
    app.wait_until(
        "the palette closed",
        WAIT,
        "return document.getElementById('palette').open",
        |v| v == false,
    );
    assert!(
        app.js(
            "return document.getElementById('settings-view').hidden",
            json!([])
        ) == false
    );
}

/// Settings → MCP servers: a command that does not exist is refused next to its field; the
/// reference "everything" server is added (its token to the keyring, never back to the page),
/// connects and lists its tools; the task's next run is offered them; turned off, it says so;
/// an import of a file that is not JSON says why in its dialog, and a good one lists what it
/// added and skipped. A project's approval rules: a rule for a tool that does not exist is
/// refused next to its field; one is added and removed. Dark, at the main window's smallest size.
#[test]
fn settings_add_an_mcp_server_whose_tools_the_next_run_gets_and_edit_the_rules() {
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join("data");
    let folder = home.path().join("project");
    // "Show your environment" gets the server's get-env tool called; anything else a note.
    let provider = Provider::start(Box::new(|_, request: &Value| {
        let last = request["messages"]
            .as_array()
            .and_then(|m| m.last())
            .cloned()
            .unwrap_or_default();
        if last["role"] == "user"
            && last["content"]
                .to_string()
                .contains("Show your environment")
        {
            Reply::Calls(vec![("everything__get-env", json!({}))])
        } else {
            Reply::Text("Noted.".into())
        }
    }));
    setup(&data, &folder, &provider);
    let servers = std::env::var_os("CODEWRIGHT_MCP_SERVERS")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(&std::env::var("HOME").unwrap()).join(".cache/codewright/mcp-servers")
        });
    let everything = servers.join("node_modules/.bin/mcp-server-everything");
    assert!(everything.exists(), "run ./scripts/setup --test first");
    let keyring = support::keyring::SecretService::start();
    let mut env = keyring.env().to_vec();
    env.push(("GTK_THEME", "Adwaita:dark"));
    let desktop = Desktop::start_with(&data, &env);
    let app = desktop.launch();
    let main = app.current_window();

    // A first run, before the server exists: no MCP tools.
    open_task_window(&app);
    send(&app, "First");
    let answers = |n: usize| {
        app.wait_until("the answer", WAIT,
            "return [...document.querySelectorAll('.message.assistant')].filter(m => m.textContent.includes('Noted.')).length",
            move |v| v.as_u64() == Some(n as u64));
    };
    answers(1);
    let tools = |request: &Value| -> String {
        request["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|t| t["function"]["name"].as_str().unwrap_or("").to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    assert!(!tools(provider.requests().last().unwrap()).contains("everything__"));
    app.switch_to(&main);
    app.set_size(720, 460);

    app.find("#new-task-title")
        .send_keys_once("\u{E009},\u{E000}"); // Ctrl+,
    app.wait_until("the MCP section", WAIT,
        "return !document.getElementById('settings-view').hidden && !document.getElementById('mcp-empty').hidden",
        |v| v == true);
    app.wait_until(
        "the local servers looked for",
        WAIT,
        "return document.getElementById('found-status-text').textContent",
        |v| {
            v.as_str()
                .is_some_and(|t| t.starts_with("No model server answers"))
        },
    );
    // The key found in the environment, its variable's name as it is.
    let listed = app.js(
        "return document.getElementById('found-list').textContent",
        json!([]),
    );
    assert_eq!(
        listed,
        json!("Use scriptedscripted: key from $CODEWRIGHT_E2E_KEY")
    );
    save_screenshot("settings-found-dark-small", &app.screenshot());
    app.find("#mcp-add").click();
    app.find("#mcp-name").type_text("everything");
    app.find("#mcp-command")
        .type_text("no-such-mcp-server-xyz --stdio");
    app.find("#mcp-env")
        .type_text(&format!("API_TOKEN={MCP_SECRET}"));
    app.find("#mcp-save").click();
    let error = app.wait_until("the command's error", WAIT,
        "const e = document.querySelector('[data-mcp-error=command]'); return e.hidden ? null : e.textContent",
        |v| v.is_string());
    assert!(
        error
            .as_str()
            .unwrap()
            .contains("No program called no-such-mcp-server-xyz was found"),
        "{error}"
    );
    assert!(
        !cli(&data, &["mcp", "list"]).contains("everything"),
        "half-saved"
    );
    save_screenshot("settings-mcp-error-dark-small", &app.screenshot());
    let command = app.find("#mcp-command");
    command.clear();
    command.type_text(everything.to_str().unwrap());
    app.find("#mcp-save").click();
    let status = app.wait_until("the server connected", WAIT * 2,
        "const s = document.querySelector('.mcp-server[data-name=everything]'); return s && s.dataset.state !== 'checking' ? s.dataset.state + ': ' + s.querySelector('.mcp-status').textContent : null",
        |v| v.is_string());
    assert!(
        status
            .as_str()
            .unwrap()
            .starts_with("connected: Connected · "),
        "{status}"
    );
    app.find(".mcp-server[data-name=everything] summary")
        .click();
    let listed = app.js(
        "return [...document.querySelectorAll('.mcp-server[data-name=everything] .mcp-tools li code')].map(c => c.textContent)",
        json!([]),
    );
    assert!(
        listed.as_array().unwrap().iter().any(|t| t == "echo"),
        "{listed}"
    );
    let count = listed.as_array().unwrap().len();
    assert!(
        status.as_str().unwrap().contains(&format!("{count} tools")),
        "{status}"
    );
    let html = app.js("return document.documentElement.outerHTML", json!([]));
    assert!(
        !html.as_str().unwrap().contains(MCP_SECRET),
        "the secret reached the page"
    );
    assert!(html.as_str().unwrap().contains("API_TOKEN=••••••"));
    app.js(
        "document.querySelector('.mcp-server[data-name=everything]').scrollIntoView()",
        json!([]),
    );
    save_screenshot("settings-mcp-dark-small", &app.screenshot());

    // The task's next run is offered the server's tools.
    let task_window = app
        .window_handles()
        .into_iter()
        .find(|w| *w != main)
        .unwrap();
    app.switch_to(&task_window);
    send(&app, "Second");
    answers(2);
    assert!(tools(provider.requests().last().unwrap()).contains("everything__echo"));

    // A server that prints its environment: the secret it was given comes back taken out, in
    // the window, to the model, and (the desktop's drill, at its end) in no file.
    send(&app, "Show your environment");
    answers(3);
    let shown = app.js(
        "return document.querySelector('.tool-panel[data-tool=\"everything__get-env\"]')?.textContent ?? ''",
        json!([]),
    );
    let shown = shown.as_str().unwrap();
    assert!(
        shown.contains("\"API_TOKEN\": \"[secret API_TOKEN]\""),
        "{shown}"
    );
    assert!(!shown.contains(MCP_SECRET));
    assert!(!provider
        .requests()
        .last()
        .unwrap()
        .to_string()
        .contains(MCP_SECRET));

    // Its prompts are slash commands now that it has started: in the palette, with what to
    // type after them, and sent as the prompt the server fills in.
    let input = app.find("#composer-input");
    input.type_text("/everything:args");
    let listed = app.wait_until(
        "the server's prompt in the palette",
        WAIT,
        "return [...document.querySelectorAll('#mention-list li')].map(e => e.textContent).join(' | ')",
        |v| v.as_str().is_some_and(|t| t.contains("/everything:args-prompt")),
    );
    assert!(
        listed.as_str().unwrap().contains("<city> [state]"),
        "{listed}"
    );
    save_screenshot("task-window-mcp-prompt-dark", &app.screenshot());
    input.type_text("-prompt Paris");
    input.type_text(ENTER);
    answers(4);
    let asked = provider.requests().last().unwrap()["messages"].to_string();
    assert!(asked.contains("What's weather in Paris?"), "{asked}");

    // Off: said so, and stored.
    app.switch_to(&main);
    app.find(".mcp-server[data-name=everything] .mcp-toggle input")
        .click();
    app.wait_until(
        "the server off",
        WAIT,
        "return document.querySelector('.mcp-server[data-name=everything]')?.dataset.state",
        |v| v == "off",
    );
    assert!(cli(&data, &["mcp", "list", "--json"]).contains("\"enabled\": false"));

    // Its call timeout: a wrong value is refused in the dialog, a good one saved and shown.
    app.find(".mcp-server[data-name=everything] [aria-label='Call timeout of everything']")
        .click();
    let seconds = app.find("#dialog-field-seconds");
    seconds.type_text("0");
    app.find("#dialog-submit").click();
    let refused = app.wait_until(
        "the timeout refused",
        WAIT,
        "const e = document.getElementById('dialog-error'); return e && !e.hidden ? e.textContent : null",
        |v| v.is_string(),
    );
    assert!(
        refused.as_str().unwrap().contains("from 1 to 3600"),
        "{refused}"
    );
    let seconds = app.find("#dialog-field-seconds");
    seconds.clear();
    seconds.type_text("300");
    app.find("#dialog-submit").click();
    app.wait_until(
        "the timeout shown on the server",
        WAIT,
        "return document.querySelector('.mcp-server[data-name=everything] .mcp-extra')?.textContent",
        |v| v.as_str().is_some_and(|t| t.contains("calls wait up to 300 s")),
    );
    let stored: Option<u32> = rusqlite::Connection::open(data.join("codewright.db"))
        .unwrap()
        .query_row(
            "SELECT call_timeout_s FROM mcp_servers WHERE name = 'everything'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(stored, Some(300));
    app.js(
        "document.querySelector('.mcp-server[data-name=everything] .mcp-actions').scrollIntoView({block: 'end'})",
        json!([]),
    );
    save_screenshot("settings-mcp-timeout-dark-small", &app.screenshot());

    // Import: a file that is not JSON is refused in the dialog; a good one is reported. Its
    // server answers only once `gate` exists, so the test says when its check ends.
    let gate = home.path().join("gate");
    let gated = home.path().join("gated-server");
    std::fs::write(
        &gated,
        format!(
            "#!/bin/sh\nwhile [ ! -e '{0}' ]; do sleep 0.05; done\nif [ -e '{0}.fail' ]; then printf 'no licence for this seat\\nask your admin for one\\n' >&2; exit 3; fi\nexec '{1}' \"$@\"\n",
            gate.display(),
            everything.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&gated, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let bad = home.path().join("bad.json");
    std::fs::write(&bad, "not json at all").unwrap();
    let good = home.path().join(".mcp.json");
    std::fs::write(
        &good,
        json!({"mcpServers": {
            "files": {"command": gated.to_str().unwrap(), "args": []},
            "nothing": {"args": ["no command"]}
        }})
        .to_string(),
    )
    .unwrap();
    app.find("#mcp-import").click();
    app.find("#dialog-field-path")
        .type_text(bad.to_str().unwrap());
    app.find("#dialog-submit").click();
    let error = app.wait_until("the import's error", WAIT,
        "const e = document.getElementById('dialog-error'); return e && !e.hidden ? e.textContent : null",
        |v| v.is_string());
    assert!(
        error.as_str().unwrap().contains("not valid JSON"),
        "{error}"
    );
    let path = app.find("#dialog-field-path");
    path.clear();
    path.type_text(good.to_str().unwrap());
    app.find("#dialog-submit").click();
    let report = app.wait_until("the import's report", WAIT,
        "const r = document.getElementById('mcp-import-result'); return r.hidden ? null : r.textContent",
        |v| v.is_string());
    let report = report.as_str().unwrap();
    assert!(
        report.contains("Imported 1 server: files.") && report.contains("Skipped nothing:"),
        "{report}"
    );
    // Its check ends while the user is further down the page (at the App section's Save): the
    // row keeps its height, so nothing moves under their pointer — when it connects, and when
    // it is checked again (its button, which once called nothing).
    let state_of_files = |want: &'static str| {
        app.wait_until(
            "the imported server's check",
            WAIT * 2,
            "return document.querySelector('.mcp-server[data-name=files]')?.dataset.state",
            move |v| v == want,
        );
    };
    let save_at = || {
        app.js(
            "return document.getElementById('app-save').getBoundingClientRect().top",
            json!([]),
        )
    };
    state_of_files("checking");
    app.js(
        "document.getElementById('app-save').scrollIntoView({block: 'end'})",
        json!([]),
    );
    let before = save_at();
    std::fs::write(&gate, "").unwrap();
    state_of_files("connected");
    assert_eq!(save_at(), before, "a check that ended moved the page");
    std::fs::remove_file(&gate).unwrap();
    app.js(
        "document.querySelector('.mcp-server[data-name=files]').scrollIntoView()",
        json!([]),
    );
    app.find(".mcp-server[data-name=files] [aria-label='Connect to files again']")
        .click();
    state_of_files("checking");
    let before = save_at(); // the click may have scrolled its button into view
    save_screenshot("settings-mcp-checking-dark-small", &app.screenshot());
    std::fs::write(&gate, "").unwrap();
    state_of_files("connected");
    assert_eq!(save_at(), before, "a check made again moved the page");
    save_screenshot("settings-mcp-checked-dark-small", &app.screenshot());
    // A check that fails, however long what the server said: one line, the whole a click away.
    std::fs::remove_file(&gate).unwrap();
    std::fs::write(home.path().join("gate.fail"), "").unwrap();
    app.find(".mcp-server[data-name=files] [aria-label='Connect to files again']")
        .click();
    state_of_files("checking");
    let before = save_at();
    std::fs::write(&gate, "").unwrap();
    state_of_files("failed");
    assert_eq!(save_at(), before, "a check that failed moved the page");
    app.find(".mcp-server[data-name=files] .mcp-tools summary")
        .click();
    let said = app.js(
        "return document.querySelector('.mcp-server[data-name=files] .mcp-failure').textContent",
        json!([]),
    );
    assert!(
        said.as_str().unwrap().contains("ask your admin for one"),
        "{said}"
    );
    save_screenshot("settings-mcp-failed-dark-small", &app.screenshot());
    // Tried again and failing again, what went wrong stays open as the user left it; connected
    // again, its tools' line is closed.
    let failure_open = "return !!document.querySelector('.mcp-server[data-name=files] details.mcp-tools[open] .mcp-failure')";
    std::fs::remove_file(&gate).unwrap();
    app.find(".mcp-server[data-name=files] [aria-label='Connect to files again']")
        .click();
    state_of_files("checking");
    std::fs::write(&gate, "").unwrap();
    state_of_files("failed");
    assert_eq!(app.js(failure_open, json!([])), true, "the failure closed");
    std::fs::remove_file(home.path().join("gate.fail")).unwrap();
    app.find(".mcp-server[data-name=files] [aria-label='Connect to files again']")
        .click();
    state_of_files("connected");
    assert_eq!(
        app.js(
            "return document.querySelector('.mcp-server[data-name=files] details.mcp-tools').open",
            json!([])
        ),
        false
    );

    // Models: a local one with its real window; a longest answer above it is refused.
    app.find("#models-filter").type_text("e2e-model");
    app.wait_until(
        "the narrowed catalog",
        WAIT,
        "return [...document.querySelectorAll('#models-list tr')].map(r => r.dataset.id).join()",
        |v| v == "e2e-model@scripted",
    );
    app.find("#model-add").click();
    app.find("#model-id").type_text("local-coder@nowhere");
    app.find("#model-save").click();
    let error = app.wait_until("the model's error", WAIT,
        "const e = document.querySelector('#model-add-form [data-error-in=id]'); return e.hidden ? null : e.textContent",
        |v| v.is_string());
    assert!(error.as_str().unwrap().contains("nowhere"), "{error}");
    let id = app.find("#model-id");
    id.clear();
    id.type_text("local-coder@scripted");
    app.find("#model-context").type_text("4096");
    app.find("#model-output").type_text("8192");
    app.find("#model-save").click();
    let error = app.wait_until("the longest answer's error", WAIT,
        "const e = document.querySelector('#model-add-form [data-error-in=maxOutput]'); return e.hidden ? null : e.textContent",
        |v| v.is_string());
    assert!(
        error
            .as_str()
            .unwrap()
            .contains("less than the context window (4096)"),
        "{error}"
    );
    let output = app.find("#model-output");
    output.clear();
    output.type_text("1024");
    // Sampling: out of range is named; then sent with every request to the model.
    app.find("#model-temperature").type_text("2.5");
    app.find("#model-save").click();
    let error = app.wait_until("the temperature's error", WAIT,
        "const e = document.querySelector('#model-add-form [data-error-in=temperature]'); return e.hidden ? null : e.textContent",
        |v| v.is_string());
    assert!(error.as_str().unwrap().contains("from 0"), "{error}");
    save_screenshot("settings-model-form-error-dark-small", &app.screenshot());
    let temperature = app.find("#model-temperature");
    temperature.clear();
    temperature.type_text("0.3");
    app.find("#model-seed").type_text("42");
    app.find("#model-constrained").click();
    save_screenshot("settings-model-constrained-dark-small", &app.screenshot());
    app.find("#model-save").click();
    let models = app.find("#models-filter");
    models.clear();
    models.type_text("local-coder");
    app.wait_until("the new model listed", WAIT,
        "return document.querySelector('#models-list tr[data-id=\"local-coder@scripted\"]')?.textContent ?? null",
        |v| v.as_str().is_some_and(|t| t.contains("4.1k") && t.contains("1k") && t.contains("tools, constrained")));
    app.wait_until("the new model among the roles' choices", WAIT,
        "return [...document.getElementById('role-main').options].some(o => o.value === 'local-coder@scripted')",
        |v| v == true);
    let listed: Value = serde_json::from_str(&cli(&data, &["models", "list", "--json"])).unwrap();
    let saved = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == "local-coder@scripted")
        .unwrap_or_else(|| panic!("{listed}"));
    assert_eq!(
        saved["sampling"],
        json!({"temperature": 0.3, "seed": 42, "constrained": true}),
        "{saved}"
    );
    app.js(
        "document.getElementById('models-heading').scrollIntoView()",
        json!([]),
    );
    save_screenshot("settings-models-dark-small", &app.screenshot());
    // A local server's model added without its window: its server says, and the list says so.
    app.find("#model-add").click();
    app.find("#model-id")
        .type_text("服务器-coder-with-a-long-name@scripted");
    app.find("#model-save").click();
    let models = app.find("#models-filter");
    models.clear();
    models.type_text("coder");
    app.wait_until("the model asked of its server listed", WAIT,
        "return document.querySelector('#models-list tr[data-id=\"服务器-coder-with-a-long-name@scripted\"]')?.textContent ?? null",
        |v| v.as_str().is_some_and(|t| t.contains("from its server")));
    // The page is done with the save once the roles offer it (their refresh lands after the list).
    app.wait_until("the model among the roles' choices", WAIT,
        "return [...document.getElementById('role-main').options].some(o => o.value === '服务器-coder-with-a-long-name@scripted')",
        |v| v == true);
    save_screenshot("settings-model-from-server-dark-small", &app.screenshot());

    // The project's settings: what the agent is told, and the mode of a new task.
    app.wait_until("the project's settings", WAIT,
        "return !document.getElementById('rules-empty').hidden && document.getElementById('project-select').selectedOptions[0]?.textContent",
        |v| v == "project");
    app.find("#project-context")
        .type_text("Notes app; tests run with make check.");
    app.find("#project-mode option[value=plan]").click();
    app.find("#project-sandbox").click();
    app.wait_until("the sandbox box checked by the click", WAIT,
        "return document.getElementById('project-sandbox').checked && document.getElementById('project-mode').value",
        |v| v == "plan");
    app.find("#project-set-up")
        .type_text("npm ci && cp ../.env .");
    app.find("#project-save").click();
    app.wait_until(
        "the settings saved",
        WAIT,
        "return !document.getElementById('project-saved').hidden",
        |v| v == true,
    );
    app.js(
        "document.getElementById('project-mode').scrollIntoView()",
        json!([]),
    );
    save_screenshot("settings-project-dark-small", &app.screenshot());
    let projects = cli(&data, &["projects", "list", "--json"]);
    assert!(
        projects.contains("Notes app; tests run with make check."),
        "{projects}"
    );
    let settings = cli(&data, &["projects", "settings", "1"]);
    assert!(settings.contains("sandbox          on"), "{settings}");
    assert!(
        settings.contains("worktree-set-up  npm ci && cp ../.env ."),
        "{settings}"
    );

    // Approval rules of the project: one that could never match is refused, naming the tool.
    app.record_input();
    app.find("#rule-tool").type_text("bsh");
    app.find("#rule-pattern").type_text("cargo test");
    app.find("#rule-add").click();
    let error = app.wait_until("the rule's error", WAIT,
        "const e = document.querySelector('#rule-form [data-error-in=tool]'); const b = document.getElementById('rule-add').getBoundingClientRect(); \
         return e.hidden ? `form: ${JSON.stringify(Object.fromEntries(new FormData(document.getElementById('rule-form'))))}, button at ${[b.x, b.y, b.width, b.height].map(Math.round)}` : e.textContent",
        |v| v.as_str().is_some_and(|t| !t.starts_with("form: ")));
    assert!(
        error
            .as_str()
            .unwrap()
            .contains("There is no tool named bsh"),
        "{error}"
    );
    let tool = app.find("#rule-tool");
    tool.clear();
    tool.type_text("bash");
    app.find("#rule-action option[value=deny]").click();
    app.find("#rule-add").click();
    app.wait_until(
        "the rule saved",
        WAIT,
        "return [...document.querySelectorAll('.rule')].map(r => r.textContent).join('|')",
        |v| {
            v.as_str()
                .is_some_and(|t| t.starts_with("Denybashcargo test"))
        },
    );
    let saved = cli(&data, &["rules", "list", "--project", "1", "--json"]);
    assert!(
        saved.contains("\"deny\"") && saved.contains("cargo test"),
        "{saved}"
    );
    app.js(
        "document.getElementById('rules-heading').scrollIntoView()",
        json!([]),
    );
    save_screenshot("settings-rules-dark-small", &app.screenshot());
    app.find(".rule .button").click();
    app.wait_until(
        "the rule removed",
        WAIT,
        "return document.querySelectorAll('.rule').length",
        |v| v == 0,
    );
    assert!(cli(&data, &["rules", "list", "--project", "1"]).contains("No saved rules"));

    // The app's limits: a count out of range is refused next to its own field, which gets the
    // focus; a good one is saved.
    let field = app.find("#app-max-subagents");
    field.clear();
    field.type_text("9");
    app.find("#app-save").click();
    let error = app.wait_until(
        "the sub-agents' error",
        WAIT,
        "const e = document.querySelector('#app-form [data-error-in=maxSubagents]'); return e.hidden ? null : e.textContent",
        |v| v.is_string(),
    );
    assert!(
        error
            .as_str()
            .unwrap()
            .contains("Choose from 1 to 8 sub-agents at once."),
        "{error}"
    );
    assert_eq!(
        app.js("return document.activeElement.id", json!([])),
        "app-max-subagents"
    );
    save_screenshot("settings-app-error-dark-small", &app.screenshot());
    let field = app.find("#app-max-subagents");
    field.clear();
    field.type_text("2");
    app.find("#app-save").click();
    app.wait_until(
        "the app's settings saved",
        WAIT,
        "return !document.getElementById('app-saved').hidden && document.querySelector('#app-form [data-error-in=maxSubagents]').hidden",
        |v| v == true,
    );
}

/// A run that finishes while its window is in the background is announced by a desktop
/// notification naming the task (and the theme chosen in Settings reaches every open window).
#[test]
fn a_task_that_finishes_in_the_background_is_announced() {
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join("data");
    let folder = home.path().join("project");
    // The answer waits until the test has put the task's window in the background.
    let (open_gate, gate) = std::sync::mpsc::channel::<()>();
    let gate = Mutex::new(gate);
    let provider = Provider::start(Box::new(move |_, _| {
        let _ = gate.lock().unwrap().recv_timeout(WAIT * 2);
        Reply::Text("Finished while you looked elsewhere.".into())
    }));
    let first = setup(&data, &folder, &provider);
    let projects: Value =
        serde_json::from_str(&cli(&data, &["projects", "list", "--json"])).unwrap();
    let project = projects[0]["id"].to_string();
    let second: Value = serde_json::from_str(&cli(
        &data,
        &[
            "tasks",
            "add",
            "--project",
            &project,
            "Another task",
            "--json",
        ],
    ))
    .unwrap();
    let bus = NotificationBus::start();
    let desktop = Desktop::start_with(&data, &bus.env());
    let app = desktop.launch();
    let main = app.current_window();
    let open = |task: &str| {
        app.switch_to(&main);
        open_from_main(&app, &format!(".task[data-id=\"{task}\"] .task-open"))
    };
    let first_window = open(&first);
    send(&app, "Take your time");
    app.wait_until(
        "the run going",
        WAIT,
        "return !document.getElementById('composer-stop').hidden",
        |v| v == true,
    );
    open(&second["id"].to_string());
    open_gate.send(()).unwrap();
    let sent = bus.wait_for("Task finished", WAIT);
    assert!(sent.contains("Fix the notes — 修复"), "{sent}");

    // Settings → theme: every open window follows at once.
    app.switch_to(&main);
    app.find("#open-settings").click();
    app.wait_until(
        "the app settings",
        WAIT,
        "return document.getElementById('app-theme').value",
        |v| v == "system",
    );
    let dark = app.find("#app-theme option[value=dark]");
    dark.click();
    app.switch_to(&first_window);
    app.wait_until(
        "the task window dark",
        WAIT,
        "return document.documentElement.dataset.theme",
        |v| v == "dark",
    );
    save_screenshot("theme-dark-chosen", &app.screenshot());
    app.switch_to(&main);
    assert_eq!(
        app.js("return document.documentElement.dataset.theme", json!([])),
        "dark"
    );
    app.find("#app-theme option[value=system]").click();
}

/// The Files tab: the project's folders with git marks, .gitignore respected; a folder opens on a
/// click and closes with ←; files created or changed on disk show up with their marks without a
/// reload; "Attach" puts the file into the message of the project's task window. A worktree
/// task's files are chosen above the tree, followed on disk, and attached to that task only.
#[test]
fn the_file_tree_follows_the_disk_and_attaches_a_file_to_the_task() {
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join("data");
    let folder = home.path().join("project");
    let provider = Provider::start(Box::new(|_, _| Reply::Text("ok".into())));
    setup(&data, &folder, &provider);
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .arg("-C")
            .arg(&folder)
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(args)
            .output()
            .expect("git is installed (scripts/setup)")
            .status
            .success();
        assert!(ok, "git {args:?}");
    };
    std::fs::create_dir_all(folder.join("src")).unwrap();
    std::fs::create_dir_all(folder.join("target")).unwrap();
    std::fs::write(folder.join("src/main.rs"), "fn main() {}\n").unwrap();
    std::fs::write(folder.join("README.md"), "# Notes\n").unwrap();
    std::fs::write(folder.join(".gitignore"), "target/\n").unwrap();
    std::fs::write(folder.join("target/big.bin"), "x").unwrap();
    git(&["init", "-q"]);
    git(&["add", "."]);
    git(&["commit", "-qm", "one"]);

    // The system's opener, as the app finds it: one that says what it was asked to open.
    let bin = home.path().join("bin");
    let opened = home.path().join("opened");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::write(
        bin.join("xdg-open"),
        format!(
            "#!/bin/sh\nprintf '%s' \"$1\" > '{0}.part' && mv '{0}.part' '{0}'\n",
            opened.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        bin.join("xdg-open"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let desktop = Desktop::start_with(&data, &[("GTK_THEME", "Adwaita:dark"), ("PATH", &path)]);
    let app = desktop.launch();
    let main = app.current_window();
    let task_window = open_task_window(&app);
    app.switch_to(&main);
    app.find("#tab-files").click();
    let rows = "return [...document.querySelectorAll('#tree .tree-item')].map(r => r.dataset.path + (r.querySelector('.tree-mark')?.textContent ?? '')).join(' ')";
    // A file's Attach, as a person reaches it: the row, then its button.
    let attach = |path: &str| {
        app.find(&format!(".tree-item[data-path='{path}'] .tree-row"))
            .click();
        app.find(&format!(
            ".tree-item[data-path='{path}'] .tree-actions .button"
        ))
        .click();
    };
    app.wait_until("the top of the project", WAIT, rows, |v| {
        v == "src .gitignore README.md"
    });
    app.find(".tree-item[data-path=src] .tree-name").click();
    app.wait_until("src open", WAIT, rows, |v| {
        v == "src src/main.rs .gitignore README.md"
    });

    // Changes on disk: a new file (untracked) in an open folder, a changed one at the top.
    std::fs::write(folder.join("src/new.rs"), "\n").unwrap();
    std::fs::write(folder.join("README.md"), "# Notes, changed\n").unwrap();
    app.wait_until("the changes in the tree", WAIT, rows, |v| {
        v == "src src/main.rs src/new.rsU .gitignore README.mdM"
    });
    let inside = app.js(
        "return !!document.querySelector('.tree-item[data-path=src] .tree-mark.changed-inside')",
        json!([]),
    );
    assert_eq!(
        inside, true,
        "the folder shows that something changed inside"
    );
    save_screenshot("files-tree", &app.screenshot());

    // ← closes the focused folder. (A change on disk may still redraw the tree: its rows are
    // then new elements, though the focus stays on the same row; the key goes to the row shown.)
    let closed = || app.js(rows, json!([])) == "src .gitignore README.mdM";
    for _ in 0..5 {
        if closed() {
            break;
        }
        app.find(".tree-item[data-path=src] .tree-name")
            .send_keys_once("\u{E012}");
        let start = std::time::Instant::now();
        while !closed() && start.elapsed() < Duration::from_secs(2) {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    assert!(closed(), "← did not close src");

    // Open: in the system's app (its button called nothing once: a name of the row hid it).
    app.find(".tree-item[data-path='README.md'] .tree-row")
        .click();
    app.find("[aria-label='Open README.md']").click();
    let start = std::time::Instant::now();
    while !opened.exists() && start.elapsed() < WAIT {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        std::fs::read_to_string(&opened).ok(),
        Some(folder.join("README.md").display().to_string()),
        "README.md was not opened"
    );

    // A file made on disk while the pointer moves over the tree (aiming at README.md's
    // buttons) does not slide the rows under it: it shows once the pointer rests.
    let readme = app.find(".tree-item[data-path='README.md'] .tree-row");
    readme.hover();
    std::fs::write(folder.join("CHANGELOG.md"), "\n").unwrap();
    readme.aim_until("the change on disk", WAIT, || {
        let seen = app.js(
            &format!("return [document.getElementById('tree').dataset.held === 'true', (() => {{ {rows} }})()]"),
            json!([]),
        );
        assert_eq!(
            seen[1], "src .gitignore README.mdM",
            "the tree changed under the pointer"
        );
        (seen[0] == true).then_some(())
    });
    app.wait_until("the new file, the pointer at rest", WAIT, rows, |v| {
        v.as_str().is_some_and(|t| t.contains("CHANGELOG.md"))
    });
    std::fs::remove_file(folder.join("CHANGELOG.md")).unwrap();
    app.find("#tab-files").hover(); // off the tree
    app.wait_until("the file gone", WAIT, rows, |v| {
        v == "src .gitignore README.mdM"
    });

    // Attach: into the task window's message.
    attach("README.md");
    app.switch_to(&task_window);
    app.wait_until(
        "the file in the message",
        WAIT,
        "return document.getElementById('composer-input').value",
        |v| v == "@README.md ",
    );

    // A task in a worktree of its own (made from the command line): the tab offers its files.
    app.switch_to(&main);
    assert_eq!(
        app.js(
            "return document.getElementById('tree-where-row').hidden",
            json!([])
        ),
        true,
        "a project without worktree tasks offers no choice of folder"
    );
    // Made while the pointer moves over the tree: the choice of folder appears above the tree
    // (sliding its rows down) only once the pointer rests.
    // (Made on a thread of its own: the pointer keeps moving while the command runs.)
    let readme = app.find(".tree-item[data-path='README.md'] .tree-row");
    readme.hover();
    let adding = {
        let data = data.clone();
        std::thread::spawn(move || {
            cli(
                &data,
                &[
                    "tasks",
                    "add",
                    "--project",
                    "1",
                    "--worktree",
                    "--json",
                    "整理说明文件 and tidy the long notes of the project",
                ],
            )
        })
    };
    readme.aim_until("the worktree task", WAIT, || {
        let row = app.js(
            "const row = document.getElementById('tree-where-row'); return [row.hidden, row.dataset.held === 'true']",
            json!([]),
        );
        assert_eq!(
            row[0], true,
            "the choice of folder appeared under the moving pointer"
        );
        (row[1] == true).then_some(())
    });
    let made: Value = serde_json::from_str(&adding.join().unwrap()).unwrap();
    let worktree = std::path::PathBuf::from(made["worktree"]["path"].as_str().unwrap());
    std::fs::write(worktree.join("wt.txt"), "only here\n").unwrap();
    app.wait_until(
        "the worktree offered",
        WAIT,
        "return document.getElementById('tree-where-row').hidden ? '' : [...document.querySelectorAll('#tree-where option')].map(o => o.textContent).join(' | ')",
        |v| v.as_str().is_some_and(|t| t.starts_with("Project folder | 整理说明文件") && t.contains("— codewright/")),
    );
    let theme = app.js("const was = document.documentElement.dataset.theme ?? null; document.documentElement.dataset.theme = 'light'; return was", json!([]));
    save_screenshot("files-worktree-choice-light", &app.screenshot());
    app.js("const was = arguments[0]; if (was === null) delete document.documentElement.dataset.theme; else document.documentElement.dataset.theme = was", json!([theme]));
    app.find(&format!("#tree-where option[value='{}']", made["id"]))
        .click();
    // Its files, as committed, with its own new file; not the project folder's changes.
    app.wait_until("the worktree's files", WAIT, rows, |v| {
        v == "src .gitignore README.md wt.txtU"
    });
    // Followed on disk like the project's: a file made in the worktree shows up.
    std::fs::write(worktree.join("more.txt"), "\n").unwrap();
    app.wait_until("a new file of the worktree", WAIT, rows, |v| {
        v == "src .gitignore more.txtU README.md wt.txtU"
    });
    // Attach goes to the worktree's own task: none is open yet, and the window says so.
    attach("wt.txt");
    app.wait_until(
        "why the file was not attached",
        WAIT,
        "return document.querySelector('.toast.error')?.textContent ?? ''",
        |v| {
            v.as_str()
                .is_some_and(|t| t.contains("Open this worktree's task first"))
        },
    );
    app.set_size(720, 460);
    save_screenshot("files-worktree-dark-small", &app.screenshot());
    assert_eq!(
        app.js(
            "const c = document.querySelector('.content'); return c.scrollWidth <= c.clientWidth",
            json!([])
        ),
        true,
        "the long name of the worktree scrolls the window sideways"
    );
    app.click(".toast.error");
    // Its window opened, Attach puts the worktree's file into its message, not the other's.
    app.find("#tab-tasks").click();
    let worktree_window =
        open_from_main(&app, &format!(".task[data-id='{}'] .task-open", made["id"]));
    app.switch_to(&main);
    app.find("#tab-files").click();
    app.wait_until("the worktree's files again", WAIT, rows, |v| {
        v == "src .gitignore more.txtU README.md wt.txtU"
    });
    attach("wt.txt");
    app.switch_to(&worktree_window);
    app.wait_until(
        "the worktree's file in its task's message",
        WAIT,
        "return document.getElementById('composer-input').value",
        |v| v == "@wt.txt ",
    );
    app.switch_to(&task_window);
    assert_eq!(
        app.js(
            "return document.getElementById('composer-input').value",
            json!([])
        ),
        "@README.md ",
        "the project's task got the worktree's file"
    );
    // Back to the project's folder: its own changes again.
    app.switch_to(&main);
    app.find("#tree-where option[value='']").click();
    app.wait_until("the project's files again", WAIT, rows, |v| {
        v == "src .gitignore README.mdM"
    });
}

/// Slash commands in the composer: `/` lists the commands with what each does, typing filters,
/// Enter runs one that needs nothing more and Tab completes one that takes arguments; a custom
/// command from the project's `.claude/commands` runs as its prompt; `/skills` switches a skill
/// off for the task (the next request no longer lists it); an unknown command keeps the text
/// and names the closest; `/mode`, `/help`, `/compact` and `/new` act in the window.
#[test]
fn slash_commands_run_from_the_composer_and_skills_switch_per_task() {
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join("data");
    let folder = home.path().join("project");
    let user = home.path().join("user");
    let provider = Provider::start(Box::new(|_, _| Reply::Text("Done.".into())));
    let task = setup(&data, &folder, &provider);
    let write = |path: &Path, text: &str| {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(
        &folder.join(".claude/commands/fix.md"),
        "---\ndescription: Fix a GitHub issue and add a test\nargument-hint: ISSUE\n---\nFix issue #$1 now.\n",
    );
    write(
        &folder.join(".codewright/skills/deploy/SKILL.md"),
        "---\nname: deploy\ndescription: Deploy the app to staging\n---\nRun make deploy.\n",
    );
    write(
        &user.join(".claude/skills/pdf/SKILL.md"),
        "---\nname: pdf\ndescription: Read and fill PDF forms — 表单\n---\nUse pdftotext.\n",
    );
    write(
        &user.join(".claude/skills/broken/SKILL.md"),
        "---\nname: [\n---\n",
    );
    write(
        &user.join(".claude/agents/docs-writer.md"),
        "---\nname: docs-writer\ndescription: Writes the docs — 写文档\ntools: Read, Write, Glob\n---\nWrite clear docs.\n",
    );
    // Dark, and at first at the window's smallest size (the list's screenshot shows both).
    let desktop = Desktop::start_with(
        &data,
        &[
            ("HOME", user.to_str().unwrap()),
            ("GTK_THEME", "Adwaita:dark"),
        ],
    );
    let app = desktop.launch();
    // The project's folder defines a command and a skill: the main window asks whether to trust
    // it (until then they are not used), naming them; the user trusts it.
    let asked = app.wait_until(
        "the trust dialog",
        WAIT,
        "const d = document.getElementById('trust-dialog'); return d.open ? d.textContent : null",
        |v| v.is_string(),
    );
    let asked = asked.as_str().unwrap();
    assert!(
        asked.contains("Commands: fix")
            && asked.contains("Skills: deploy")
            && !asked.contains("pdf"),
        "{asked}"
    );
    save_screenshot("trust-dialog", &app.screenshot());
    // The main window at its smallest size.
    app.set_size(720, 460);
    save_screenshot("trust-dialog-small", &app.screenshot());
    app.set_size(1120, 740);
    app.find("#trust-dialog-submit").click();
    app.wait_until(
        "the trust dialog closed",
        WAIT,
        "return document.getElementById('trust-dialog').open",
        |v| v == false,
    );
    let window = open_task_window(&app);
    app.set_size(480, 360);
    let input = app.find("#composer-input");

    // `/` opens the command list; "sk" leaves /skills first; Enter runs it.
    input.type_text("/");
    app.wait_until(
        "the command list",
        WAIT,
        "const l = document.getElementById('mention-list'); return !l.hidden && l.getAttribute('aria-label') === 'Commands' ? l.querySelectorAll('.command-option').length : 0",
        |v| v.as_u64().unwrap_or(0) >= 13,
    );
    save_screenshot("command-list-dark-small", &app.screenshot());
    app.set_size(880, 720);
    input.type_text("sk");
    app.wait_until(
        "the list filtered to /skills",
        WAIT,
        "return [...document.querySelectorAll('#mention-list .command-option')].map(o => o.textContent)",
        |v| v[0].as_str().is_some_and(|t| t.starts_with("/skillsList the skills")),
    );
    save_screenshot("command-list", &app.screenshot());
    // Enter on a partial name completes it; Enter on the whole name runs it.
    input.type_text(ENTER);
    assert_eq!(input.value(), "/skills ");
    input.type_text(ENTER);
    let skills = app.wait_until(
        "the skills dialog",
        WAIT,
        "const d = document.getElementById('command-dialog'); return d.open ? d.textContent : null",
        |v| v.is_string(),
    );
    let skills = skills.as_str().unwrap();
    assert!(
        skills.contains("deploy · project") && skills.contains("Deploy the app to staging"),
        "{skills}"
    );
    assert!(
        skills.contains("pdf · yours (.claude)") && skills.contains("表单"),
        "{skills}"
    );
    assert!(
        skills.contains("Not loaded") && skills.contains("not valid YAML"),
        "{skills}"
    );
    assert_eq!(input.value(), "", "the command left the composer");
    save_screenshot("skills-dialog", &app.screenshot());
    app.set_size(480, 360);
    save_screenshot("skills-dialog-dark-small", &app.screenshot());
    app.set_size(880, 720);
    app.find("#skill-pdf").click();
    app.wait_until(
        "pdf switched off for the task",
        WAIT,
        "const b = document.getElementById('skill-pdf'); return !b.disabled && !b.checked",
        |v| v == true,
    );
    let shown: Value =
        serde_json::from_str(&cli(&data, &["tasks", "show", &task, "--json"])).unwrap();
    assert_eq!(shown["task"]["settings"]["skillsOff"], json!(["pdf"]));
    // A priority: the skill is listed first from the next message.
    app.find("#skill-rank-deploy option[value='1']").click();
    app.wait_until(
        "deploy ranked high",
        WAIT,
        "const s = document.getElementById('skill-rank-deploy'); return !s.disabled && s.value",
        |v| v == "1",
    );
    let shown: Value =
        serde_json::from_str(&cli(&data, &["tasks", "show", &task, "--json"])).unwrap();
    assert_eq!(
        shown["task"]["settings"]["skillPriority"],
        json!({"deploy": 1})
    );
    app.find("#command-dialog-cancel").click();

    // Tab completes a custom command that takes an argument; it runs as its prompt.
    input.type_text("/fi");
    app.wait_until(
        "/fix in the list",
        WAIT,
        "const o = document.querySelector('#mention-list .command-option'); return o ? o.textContent : null",
        |v| v.as_str().is_some_and(|t| t.starts_with("/fixISSUEFix a GitHub issue and add a test · project (.claude)")),
    );
    input.type_text("\u{E004}"); // Tab
    assert_eq!(input.value(), "/fix ");
    input.type_text(&format!("42{ENTER}"));
    app.wait_until(
        "the command's prompt and its answer",
        WAIT,
        "return document.getElementById('messages').textContent",
        |v| {
            v.as_str()
                .is_some_and(|t| t.contains("Fix issue #42 now.") && t.contains("Done."))
        },
    );
    wait_idle(&app);
    let request = provider.requests().last().unwrap().clone();
    assert_eq!(user_texts(&request), ["\"Fix issue #42 now.\""]);
    let system = request["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        system.contains("- deploy: Deploy the app to staging") && !system.contains("pdf"),
        "{system}"
    );
    // The header lists the files the run's prompt was made from (the skill the task switched
    // off is not among them), opened with the keyboard as a person would.
    let listed = app.wait_until(
        "the prompt's files in the header",
        WAIT,
        "const d = document.getElementById('prompt-files'); return d.hidden ? null : [...d.querySelectorAll('li')].map(l => l.textContent)",
        |v| v.is_array(),
    );
    assert_eq!(
        listed,
        json!([".codewright/skills/deploy/SKILL.md"]),
        "{listed}"
    );
    app.find("#prompt-files summary").click();
    save_screenshot("prompt-files", &app.screenshot());
    app.find("#prompt-files summary").click();

    // An unknown command: the text stays, the error names the closest.
    send(&app, "/fxi 7");
    app.wait_until(
        "the unknown command's error",
        WAIT,
        "const e = document.getElementById('composer-error'); return e.hidden ? null : e.textContent",
        |v| v.as_str().is_some_and(|t| t.contains("There is no command /fxi. Did you mean /fix?")),
    );
    assert_eq!(input.value(), "/fxi 7");
    input.clear();

    // /mode switches the mode; /help lists the custom command; /compact says there is too little.
    // A mode that does not exist: the command stays to be fixed.
    send(&app, "/mode plam");
    app.wait_until(
        "the unknown mode's error",
        WAIT,
        "const e = document.getElementById('composer-error'); return e.hidden ? null : e.textContent",
        |v| v.as_str().is_some_and(|t| t.contains("There is no mode plam")),
    );
    assert_eq!(input.value(), "/mode plam");
    input.clear();
    send(&app, "/mode plan");
    app.wait_until(
        "plan mode",
        WAIT,
        "return document.getElementById('mode-select').value",
        |v| v == "plan",
    );
    send(&app, "/help");
    let help = app.wait_until(
        "the command help",
        WAIT,
        "const d = document.getElementById('command-dialog'); return d.open ? d.textContent : null",
        |v| v.is_string(),
    );
    assert!(
        help.as_str()
            .unwrap()
            .contains("/fix ISSUEFix a GitHub issue and add a test (project (.claude))"),
        "{help}"
    );
    app.find("#command-dialog-cancel").click();
    // /memory shows both memory files and saves what the user typed.
    send(&app, "/memory");
    app.wait_until(
        "the memory dialog",
        WAIT,
        "const d = document.getElementById('command-dialog'); return d.open ? d.querySelectorAll('textarea').length : 0",
        |v| v == 2,
    );
    app.find("#memory-project")
        .type_text("Build with make — 用 make 构建");
    save_screenshot("memory-dialog", &app.screenshot());
    app.find("#command-dialog-submit").click();
    app.wait_until(
        "the memory saved",
        WAIT,
        "return document.getElementById('command-dialog').open",
        |v| v == false,
    );
    assert_eq!(
        std::fs::read_to_string(folder.join(".codewright/memory.md")).unwrap(),
        "Build with make — 用 make 构建"
    );
    assert!(
        !user.join(".codewright/memory.md").exists(),
        "an unchanged memory is not written"
    );
    send(&app, "/compact");
    app.wait_until(
        "the compact notice",
        WAIT,
        "return document.getElementById('messages').textContent",
        |v| v.as_str().is_some_and(|t| t.contains("Nothing to compact")),
    );

    // /agent lists the agents (the user's own from .claude/agents too) to choose from; the
    // chosen one's role and tools are the next request's. A name that does not exist stays to
    // be fixed, with the closest named.
    send(&app, "/agent");
    let agents = app.wait_until(
        "the agents dialog",
        WAIT,
        "const d = document.getElementById('command-dialog'); return d.open && d.querySelector('#agent-planner') ? d.textContent : null",
        |v| v.is_string(),
    );
    let agents = agents.as_str().unwrap();
    assert!(
        agents.contains("docs-writer · yours (.claude) · 3 tools")
            && agents.contains("Writes the docs — 写文档")
            && agents.contains("coder · built in · every tool"),
        "{agents}"
    );
    assert_eq!(
        app.js(
            "return document.getElementById('agent-coder').checked",
            json!([])
        ),
        true
    );
    save_screenshot("agents-dialog", &app.screenshot());
    app.set_size(480, 360);
    save_screenshot("agents-dialog-dark-small", &app.screenshot());
    app.set_size(880, 720);
    app.find("#agent-planner").click();
    app.wait_until(
        "the planner chosen",
        WAIT,
        "return document.getElementById('messages').textContent",
        |v| {
            v.as_str().is_some_and(|t| {
                t.contains("The planner agent works on this task from the next message")
            })
        },
    );
    app.find("#command-dialog-cancel").click();
    send(&app, "/agent reviewr");
    app.wait_until(
        "the unknown agent's error",
        WAIT,
        "const e = document.getElementById('composer-error'); return e.hidden ? null : e.textContent",
        |v| v.as_str().is_some_and(|t| t.contains("There is no agent named reviewr; did you mean reviewer?")),
    );
    assert_eq!(input.value(), "/agent reviewr");
    input.clear();
    send(&app, "How would you add a login page?");
    app.wait_until(
        "the planner's answer",
        WAIT,
        "return document.getElementById('messages').textContent.split('How would you add a login page?')[1] || ''",
        |v| v.as_str().is_some_and(|t| t.contains("Done.")),
    );
    wait_idle(&app);
    let request = provider.requests().last().unwrap().clone();
    let system = request["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains("# Your role: the planner agent"),
        "{system}"
    );
    let offered: Vec<&str> = request["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(
        offered.contains(&"read_file")
            && !offered.contains(&"edit_file")
            && !offered.contains(&"bash"),
        "{offered:?}"
    );

    // /new opens a new task of the project in its own window.
    let before = app.window_handles();
    send(&app, "/new");
    let new_window = app.switch_to_new_window(&before, WAIT);
    app.wait_until(
        "the new task",
        WAIT,
        "return document.getElementById('task-title').textContent",
        |v| v == "New task",
    );
    assert_ne!(new_window, window);
}

/// The project's task files are listed under its tasks (a broken one with its reason); Run
/// implements one in a new task that opens in its own window, and once that task's run is done
/// the file says so, on disk and in the list.
#[test]
fn task_files_are_listed_and_run_from_the_main_window() {
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join("data");
    let folder = home.path().join("project");
    let provider = Provider::start(Box::new(|_, _| Reply::Text("Implemented.".into())));
    setup(&data, &folder, &provider);
    let tasks = folder.join(".codewright/tasks");
    std::fs::create_dir_all(&tasks).unwrap();
    std::fs::write(
        tasks.join("TASK-001-greeting.md"),
        "---\nid: TASK-001\nstatus: pending\n---\n# Add a greeting\n\nCreate hello.txt.\n",
    )
    .unwrap();
    std::fs::write(
        tasks.join("TASK-002.md"),
        "# 把设置页面拆分成更小的部分，并为每个部分写测试 — a title far too long for one line\n\n- **ID:** TASK-002\n- **Status:** done\n",
    )
    .unwrap();
    std::fs::write(tasks.join("copy.md"), "---\nid: TASK-001\n---\n# A copy\n").unwrap();
    let desktop = Desktop::start_with(&data, &[("GTK_THEME", "Adwaita:dark")]);
    let app = desktop.launch();
    let main = app.current_window();
    app.set_size(720, 460);
    let rows = "return [...document.querySelectorAll('.task-file')].map(r => r.dataset.id + ' ' + r.querySelector('.badge').textContent + ' ' + r.querySelector('button').textContent).join(' | ')";
    app.wait_until("the task files", WAIT, rows, |v| {
        v == "TASK-001 pending Run | TASK-002 done Run again"
    });
    let broken = app.js(
        "return document.getElementById('task-file-broken').textContent",
        json!([]),
    );
    assert!(
        broken
            .as_str()
            .unwrap()
            .contains(".codewright/tasks/copy.md: another task file has the id TASK-001"),
        "{broken}"
    );
    app.js(
        "document.getElementById('task-files').scrollIntoView()",
        json!([]),
    );
    save_screenshot("main-task-files-dark-small", &app.screenshot());
    // (The light theme as Settings would set it; what is shown is all the page's own.)
    app.js(
        "document.documentElement.dataset.theme = 'light'",
        json!([]),
    );
    save_screenshot("main-task-files-light-small", &app.screenshot());

    app.find(".task-file[data-id='TASK-001'] .task-file-run")
        .click();
    app.switch_to_new_window(std::slice::from_ref(&main), WAIT);
    assert_eq!(app.find("#task-title").text(), "TASK-001: Add a greeting");
    app.wait_until(
        "the answer",
        WAIT,
        "return document.querySelector('.message.assistant')?.textContent ?? ''",
        |v| v.as_str().is_some_and(|t| t.contains("Implemented.")),
    );
    let asked = provider.requests()[0]["messages"].to_string();
    assert!(
        asked
            .contains("Implement the task in the task file .codewright/tasks/TASK-001-greeting.md")
            && asked.contains("Create hello.txt."),
        "{asked}"
    );
    app.switch_to(&main);
    app.wait_until("the file marked done", WAIT, rows, |v| {
        v == "TASK-001 done Run again | TASK-002 done Run again"
    });
    let written = std::fs::read_to_string(tasks.join("TASK-001-greeting.md")).unwrap();
    assert!(
        written.starts_with("---\nid: TASK-001\nstatus: done\n---\n# Add a greeting"),
        "{written}"
    );
    app.quit();
}

/// Provider faults reach the window as they reach `exec --json` (RELIABILITY.md): a 429 with
/// `retry-after` is retried, the retry shown, then answered; a 200 with a web page, a malformed
/// chunk and a silence past the provider's idle timeout each end in one inline error that says
/// what happened and what to do. Every message the user sent is kept, and so is the part of an
/// answer that had arrived; the task goes on with the next message.
#[test]
fn provider_faults_end_in_a_shown_retry_or_one_clear_error_in_the_window() {
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join("data");
    let folder = home.path().join("project");
    let limited = std::sync::atomic::AtomicBool::new(false);
    let provider = Provider::start(Box::new(move |_, body| {
        let users = user_texts(body);
        // (The last message sent: one after a turn that failed is sent in the same user turn.)
        let last = users.last().cloned().unwrap_or_default();
        let last = last.rsplit("\\n\\n").next().unwrap_or_default().to_string();
        if last.contains("Busy?") && !limited.swap(true, std::sync::atomic::Ordering::SeqCst) {
            let error = json!({"error": {"message": "Rate limit reached for requests", "type": "requests"}}).to_string();
            Reply::Raw(format!("HTTP/1.1 429 Too Many Requests\r\nretry-after: 1\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{error}", error.len()))
        } else if last.contains("Busy?") {
            Reply::Text("Answered after the wait.".into())
        } else if last.contains("Proxy?") {
            let page = "<!doctype html><html><head><title>Sign in to Corp Proxy</title></head><body><script>location='x'</script>Sign in</body></html>";
            Reply::Raw(format!("HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{page}", page.len()))
        } else if last.contains("Garbled?") {
            Reply::Malformed("The first half of a garbled answer ".into())
        } else if last.contains("Silent?") {
            Reply::Stall("The start of a silent answer ".into())
        } else if last.contains("Cut?") {
            let chunk = json!({"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": "The part before the cut "}, "finish_reason": null}]});
            Reply::Raw(format!("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\ndata: {chunk}\n\n"))
        } else {
            Reply::Text("All good again.".into())
        }
    }));
    let task = setup(&data, &folder, &provider);
    // A short idle timeout, so the silence is noticed in the test's time.
    cli(
        &data,
        &[
            "providers",
            "add",
            "scripted",
            "--protocol",
            "openai",
            "--base-url",
            &provider.base_url(),
            "--api-key-env",
            "CODEWRIGHT_E2E_KEY",
            "--idle-timeout",
            "1.5",
        ],
    );
    let desktop = Desktop::start(&data);
    let app = desktop.launch();
    open_task_window(&app);
    let errors = "return [...document.querySelectorAll('.error-inline')].map(e => e.textContent)";
    let error_count = |n: usize| {
        app.wait_until("the run's error", WAIT, errors, |v| {
            v.as_array().is_some_and(|a| a.len() == n)
        })[n - 1]
            .as_str()
            .unwrap()
            .to_string()
    };

    // A rate limit: the retry is said in the conversation, then the answer comes.
    send(&app, "Busy?");
    app.wait_until(
        "the answer after the retry",
        WAIT,
        "return document.body.textContent.includes('Answered after the wait.')",
        |v| v == true,
    );
    wait_idle(&app);
    let notices = app.js(
        "return [...document.querySelectorAll('.notice')].map(n => n.textContent).join('|')",
        json!([]),
    );
    assert!(
        notices
            .as_str()
            .unwrap()
            .contains("Trying again in 1.0 s (retry 1"),
        "the retry is shown: {notices}"
    );
    assert_eq!(
        app.js(errors, json!([])),
        json!([]),
        "no error for a retry that answered"
    );

    // A web page where the stream should be: named by its title, with what to check.
    send(&app, "Proxy?");
    let error = error_count(1);
    assert!(
        error.contains("web page") && error.contains("Sign in to Corp Proxy"),
        "{error}"
    );
    assert!(error.contains("check the base URL of scripted"), "{error}");
    wait_idle(&app);

    // A malformed chunk: an error, and what had arrived is kept, marked incomplete.
    send(&app, "Garbled?");
    let error = error_count(2);
    assert!(error.contains("malformed"), "{error}");
    wait_idle(&app);

    // Silence past the idle timeout: a timeout, said as one, with the part that had arrived.
    send(&app, "Silent?");
    let error = error_count(3);
    assert!(
        error.contains("idle timeout") && error.contains("Send again to retry"),
        "{error}"
    );
    wait_idle(&app);

    // The connection closed mid-answer: said so, with what had arrived.
    send(&app, "Cut?");
    let error = error_count(4);
    assert!(
        error.contains("scripted's response stream ended early") && error.contains("try again"),
        "{error}"
    );
    wait_idle(&app);
    save_screenshot("task-provider-faults", &app.screenshot());
    let answers = app.js(
        "return [...document.querySelectorAll('.message.assistant')].map(m => m.textContent).join('|')",
        json!([]),
    );
    let answers = answers.as_str().unwrap();
    assert!(
        answers.contains("The first half of a garbled answer")
            && answers.contains("The start of a silent answer")
            && answers.contains("The part before the cut"),
        "the parts that arrived are shown: {answers}"
    );
    assert!(
        !app.js(
            "return document.body.innerHTML.includes('<script>location')",
            json!([])
        )
        .as_bool()
        .unwrap(),
        "the page's own markup is never put in the window"
    );

    // The task goes on.
    send(&app, "Still there?");
    app.wait_until(
        "the next answer",
        WAIT,
        "return document.body.textContent.includes('All good again.')",
        |v| v == true,
    );
    wait_idle(&app);
    let shown: Value =
        serde_json::from_str(&cli(&data, &["tasks", "show", &task, "--json"])).unwrap();
    let users: Vec<&str> = shown["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["parts"][0]["text"].as_str())
        .collect();
    assert_eq!(
        users,
        [
            "Busy?",
            "Proxy?",
            "Garbled?",
            "Silent?",
            "Cut?",
            "Still there?"
        ]
    );

    // A key the provider refuses: the error names the provider and where to set the key.
    provider.require_key("sk-not-the-one-the-app-has");
    send(&app, "Key?");
    let error = error_count(5);
    assert!(
        error.contains("Incorrect API key")
            && error.contains("Paste the key of scripted in Settings → Model"),
        "{error}"
    );
    wait_idle(&app);
    // Each kept as it arrived, marked cut off by its error (the window shows it incomplete).
    let kept: Vec<(&str, &str)> = shown["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "assistant")
        .filter_map(|m| Some((m["parts"][0]["text"].as_str()?, m["stopReason"].as_str()?)))
        .collect();
    assert!(
        kept.contains(&("The first half of a garbled answer ", "error"))
            && kept.contains(&("The start of a silent answer ", "error"))
            && kept.contains(&("The part before the cut ", "error")),
        "stored, marked cut off: {kept:?}"
    );
    app.quit();
}

/// A job handed to a sub-agent, in the window: its panel says who does what; the command it
/// needs is asked in the task's own window, named as the sub-agent's, and approved there; its
/// report is the panel's result and the answer follows. The sub-agent's task is not
/// listed in the main window.
#[test]
fn a_sub_agents_approval_is_answered_in_the_tasks_window() {
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join("data");
    let folder = home.path().join("project");
    let provider = Provider::start(Box::new(|_, body| {
        let system = body["messages"][0]["content"].as_str().unwrap_or_default();
        let answered = body["messages"]
            .as_array()
            .is_some_and(|m| m.iter().any(|m| m["role"] == "tool"));
        match (system.contains("# Your role: the reviewer agent"), answered) {
            (true, false) => Reply::TextThenCalls(
                "I will run the tests first — 先跑测试。".into(),
                vec![("bash", json!({"command": "echo all 12 tests pass"}))],
            ),
            (true, true) => Reply::Text("Reviewed — 审查完毕: all 12 tests pass.".into()),
            (false, false) => Reply::Calls(vec![(
                "agent",
                json!({"agent": "reviewer", "prompt": "Run the tests and report."}),
            )]),
            (false, true) => Reply::Text("The reviewer says the tests pass.".into()),
        }
    }));
    setup(&data, &folder, &provider);
    let desktop = Desktop::start(&data);
    let app = desktop.launch();
    let main = app.current_window();
    open_task_window(&app);
    send(&app, "Check the tests");
    let asked = wait_dialog(&app, "the sub-agent's approval");
    assert!(
        asked.as_str().unwrap().contains("reviewer agent: ")
            && asked.as_str().unwrap().contains("echo all 12 tests pass"),
        "{asked}"
    );
    // The panel shows what the sub-agent writes and does while it works.
    app.wait_until(
        "the sub-agent's words and call in its panel",
        WAIT,
        "const p = [...document.querySelectorAll('.tool-panel')].find(p => p.dataset.tool === 'agent'); return p ? p.querySelector('.subagent-live')?.textContent ?? '' : ''",
        |v| {
            v.as_str() == Some("I will run the tests first — 先跑测试。\n\nbash …\n")
        },
    );
    save_screenshot("sub-agent-approval", &app.screenshot());
    app.find("#approval-approve").click();
    app.wait_until(
        "the answer after the report",
        WAIT,
        "return document.getElementById('messages').textContent",
        |v| {
            v.as_str()
                .is_some_and(|t| t.contains("The reviewer says the tests pass."))
        },
    );
    wait_idle(&app);
    let panel = app.js(
        "const p = [...document.querySelectorAll('.tool-panel')].find(p => p.dataset.tool === 'agent'); return p ? p.textContent : null",
        json!([]),
    );
    let panel = panel.as_str().unwrap_or_default();
    assert!(
        panel.contains("reviewer: Run the tests and report.")
            && panel.contains("Reviewed — 审查完毕: all 12 tests pass."),
        "{panel}"
    );
    // What the sub-agent did, opened under its report: its job, its command and what came back.
    app.find(".tool-panel[data-tool='agent'] .subagent-work summary")
        .click();
    let work = app.wait_until(
        "the sub-agent's work",
        WAIT,
        // (Empty until the disclosure's toggle event, which comes after the click.)
        "const s = document.querySelector('.subagent-steps'); return s && s.textContent && !s.textContent.startsWith('Loading') ? s.textContent : null",
        |v| v.is_string(),
    );
    let work = work.as_str().unwrap();
    assert!(
        work.contains("The reviewer’s job: Run the tests and report.")
            && work.contains("bash echo all 12 tests pass → all 12 tests pass")
            && work.contains("Reviewed — 审查完毕"),
        "{work}"
    );
    save_screenshot("sub-agent-report", &app.screenshot());
    app.set_size(480, 360);
    save_screenshot("sub-agent-report-small", &app.screenshot());
    app.switch_to(&main);
    let listed = app.js(
        "return document.querySelectorAll('.task-open').length",
        json!([]),
    );
    assert_eq!(listed, 1, "the sub-agent's task is not listed");
    app.quit();
}

/// A very long reply keeps in the page only the chunks of blocks near the view: those far from
/// it are let go with their height kept, so nothing moves; scrolling up makes them again with
/// every word, without moving what the reader sees; a selection of the whole reply brings every
/// chunk back, so all of it is copied.
#[test]
fn a_very_long_reply_keeps_only_what_is_near_the_view() {
    use codewright_protocol::{Message, Part, Role, TaskId};
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join("data");
    let folder = home.path().join("project");
    let provider = Provider::start(Box::new(|_, _| Reply::Text("unused".into())));
    let task: i64 = setup(&data, &folder, &provider).parse().unwrap();
    // 600 paragraphs of 1–4 lines: 19 chunks of 32 blocks.
    let reply: Vec<String> = (1..=600)
        .map(|i| {
            let words = "words that wrap across the line, 跨行的文字 ".repeat(i % 4 * 3 + 1);
            format!("Paragraph {i} — 第{i}段: {words}")
        })
        .collect();
    {
        let store = codewright_store::Store::open_in(&data).unwrap();
        let text = |role, text: String| Message::new(role, vec![Part::Text { text }]);
        for (role, words) in [
            (Role::User, "Write it all out".to_string()),
            (Role::Assistant, reply.join("\n\n")),
        ] {
            store
                .append_message(TaskId(task), &text(role, words))
                .unwrap();
        }
    }
    let desktop = Desktop::start(&data);
    let app = desktop.launch();
    open_task_window(&app);
    // Each chunk: whether it is parked, its blocks, and where it is in the view; the column's height.
    let state = "const view = document.getElementById('conversation'); const top = view.getBoundingClientRect().top;
        const chunks = [...document.querySelectorAll('.md-chunk')];
        return { chunks: chunks.map(c => ({ parked: c.classList.contains('md-parked'), blocks: c.childElementCount,
                                             top: c.getBoundingClientRect().top - top })),
                 height: document.getElementById('conversation-column').getBoundingClientRect().height,
                 scrollTop: view.scrollTop };";
    let parked_of = |v: &Value| -> Vec<bool> {
        v["chunks"]
            .as_array()
            .map(|c| c.iter().map(|c| c["parked"] == true).collect())
            .unwrap_or_default()
    };
    // Opened at the end of the reply: the chunks far above it are parked, empty; the last ones
    // are whole (the last, which no other follows, is never parked).
    let opened = app.wait_until("the chunks far from the view parked", WAIT, state, |v| {
        parked_of(v).iter().filter(|p| **p).count() >= 5
    });
    let parked = parked_of(&opened);
    assert_eq!(parked.len(), 19, "600 blocks in chunks of 32");
    assert!(parked[0] && !parked[17] && !parked[18], "{parked:?}");
    for chunk in opened["chunks"].as_array().unwrap() {
        assert_eq!(
            chunk["blocks"].as_u64().unwrap() == 0,
            chunk["parked"] == true,
            "a parked chunk holds no blocks, any other its blocks: {chunk}"
        );
    }
    save_screenshot("task-long-reply-end", &app.screenshot());

    // The reader scrolls up to chunk 9: the chunks near it are made again and those far below
    // are parked, and what the reader sees does not move.
    let at = app.js(
        "const view = document.getElementById('conversation'); const chunk = document.querySelectorAll('.md-chunk')[9];
         chunk.scrollIntoView({ block: 'start' });
         return chunk.getBoundingClientRect().top - view.getBoundingClientRect().top",
        json!([]),
    );
    let at = at.as_f64().unwrap();
    app.wait_until("the chunks near chunk 9 made again", WAIT, state, |v| {
        let parked = parked_of(v);
        parked.len() == 19 && !parked[8] && !parked[9] && !parked[10] && parked[17]
    });
    let text = app.js(
        "return document.querySelectorAll('.md-chunk')[9].textContent",
        json!([]),
    );
    let text = text.as_str().unwrap();
    assert!(
        text.starts_with("Paragraph 289 — 第289段") && text.contains("Paragraph 320 — 第320段"),
        "{}",
        &text[..80]
    );
    // Once parking is done (a frame or two), chunk 9 is where the scroll put it.
    std::thread::sleep(Duration::from_millis(300));
    let settled = app.js(state, json!([]));
    assert!(
        (settled["chunks"][9]["top"].as_f64().unwrap() - at).abs() < 1.0,
        "the view moved: {at} → {}",
        settled["chunks"][9]["top"]
    );
    assert!(
        (settled["height"].as_f64().unwrap() - opened["height"].as_f64().unwrap()).abs() < 1.0,
        "parked chunks keep the height of their blocks: {} → {}",
        opened["height"],
        settled["height"]
    );
    save_screenshot("task-long-reply-middle", &app.screenshot());

    // The whole reply selected (as Ctrl+A in the conversation does): every chunk is back, so a
    // copy has every paragraph, and the height is what it was.
    app.js(
        "document.getSelection().selectAllChildren(document.querySelector('.message.assistant'))",
        json!([]),
    );
    let selected = app.wait_until("every chunk back for the selection", WAIT, state, |v| {
        parked_of(v).iter().all(|p| !p)
    });
    let copied = app.js("return document.getSelection().toString()", json!([]));
    let copied = copied.as_str().unwrap();
    for i in [1, 100, 289, 500, 600] {
        assert!(
            copied.contains(&format!("Paragraph {i} — 第{i}段")),
            "paragraph {i} is not in the selection"
        );
    }
    assert!(
        (selected["height"].as_f64().unwrap() - opened["height"].as_f64().unwrap()).abs() < 1.0,
        "made again, the chunks take the room they kept: {} → {}",
        opened["height"],
        selected["height"]
    );
    // The selection gone, the chunks far from the view are parked again.
    app.js("document.getSelection().removeAllRanges()", json!([]));
    app.wait_until("the far chunks parked again", WAIT, state, |v| {
        let parked = parked_of(v);
        parked.len() == 19 && parked[0] && parked[17] && !parked[9]
    });
    // Narrower, the window's parked chunks keep the heights they had: made again above the view
    // as the reader jumps up, they grow, and what the reader sees must not move for that.
    app.set_size(480, 360);
    let before = app.js(
        "const view = document.getElementById('conversation'); const top = () => view.getBoundingClientRect().top;
         const chunks = [...document.querySelectorAll('.md-chunk')];
         const parked = chunks.map(c => c.classList.contains('md-parked'));
         if (!parked[3] || !parked[4]) return { parked };
         view.scrollTop += chunks[5].getBoundingClientRect().top - top() + 100;
         return { parked, offset: chunks[5].getBoundingClientRect().top - top() }",
        json!([]),
    );
    let offset = before["offset"]
        .as_f64()
        .unwrap_or_else(|| panic!("chunks 3 and 4 are not parked: {before}"));
    app.wait_until("chunk 4 made again above the view", WAIT, state, |v| {
        !parked_of(v)[4]
    });
    std::thread::sleep(Duration::from_millis(300));
    let after = app.js(state, json!([]))["chunks"][5]["top"]
        .as_f64()
        .unwrap();
    assert!(
        (after - offset).abs() < 1.0,
        "the view moved as chunks above it were made again: chunk 5 at {offset} → {after}"
    );
    save_screenshot("task-long-reply-small", &app.screenshot());

    // Renamed from the main window while the reader is up in the reply: the header grows (the
    // long title wraps) and what the reader sees stays where it is on screen.
    let task_window = app.current_window();
    let on_screen =
        "return { chunk: document.querySelectorAll('.md-chunk')[5].getBoundingClientRect().top,
        header: document.querySelector('.task-header').getBoundingClientRect().height }";
    let seen = app.js(on_screen, json!([]));
    let main = app
        .window_handles()
        .into_iter()
        .find(|w| *w != task_window)
        .unwrap();
    app.switch_to(&main);
    app.find("[data-key=rename]").click();
    let title = app.find("#dialog-field-title");
    title.clear();
    title.type_text("整理说明文件 and a title long enough to wrap in the task window's header");
    app.find("#dialog-submit").click();
    app.switch_to(&task_window);
    let grown = app.wait_until("the new title in the header", WAIT, on_screen, |v| {
        v["header"].as_f64() > seen["header"].as_f64()
    });
    let settled = app.wait_until("the reply where it was on screen", WAIT, on_screen, |v| {
        (v["chunk"].as_f64().unwrap() - seen["chunk"].as_f64().unwrap()).abs() < 1.0
    });
    assert!(
        settled["header"].as_f64() > seen["header"].as_f64(),
        "the header did not grow: {seen} → {grown}"
    );
    save_screenshot("task-long-reply-renamed-small", &app.screenshot());
    app.quit();
}

/// The task list holds still under the pointer: a task that changes (here renamed from the
/// command line, as a running task changes all the time) does not move up past the row the
/// pointer moves over — the rows take their order once the pointer rests (or leaves the list).
#[test]
fn the_task_list_holds_still_under_the_pointer() {
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join("data");
    let folder = home.path().join("project");
    let provider = Provider::start(Box::new(|_, _| Reply::Text("ok".into())));
    let first = setup(&data, &folder, &provider);
    let second: Value = serde_json::from_str(&cli(
        &data,
        &[
            "tasks",
            "add",
            "--project",
            "1",
            "第二个任务 Second",
            "--json",
        ],
    ))
    .unwrap();
    let second = second["id"].to_string();
    let desktop = Desktop::start_with(&data, &[("GTK_THEME", "Adwaita:dark")]);
    let app = desktop.launch();
    let order =
        "return [...document.querySelectorAll('#tasks .task')].map(r => r.dataset.id).join()";
    app.wait_until("both tasks listed", WAIT, order, |v| {
        *v == format!("{second},{first}")
    });
    let row = app.find(&format!("#tasks .task[data-id='{second}'] .task-open"));
    row.hover();
    // Renamed from another process while the pointer keeps moving (the command may take a while
    // on a busy machine: the pointer does not rest meanwhile).
    let rename = {
        let (data, first) = (data.clone(), first.clone());
        std::thread::spawn(move || {
            cli(
                &data,
                &[
                    "tasks",
                    "rename",
                    &first,
                    "Renamed while the pointer is here",
                ],
            )
        })
    };
    // A hand aiming is never quite still: the pointer moves a little until the rename shows.
    let renamed = "return [...document.querySelectorAll('#tasks .task')].map(r => r.dataset.id + ':' + r.querySelector('.task-open').textContent).join(' | ')";
    let shown = row.aim_until("the rename", WAIT, || {
        let shown = app.js(renamed, json!([]));
        shown
            .as_str()
            .is_some_and(|t| t.contains("Renamed while the pointer is here"))
            .then_some(shown)
    });
    rename.join().unwrap();
    assert!(
        shown.as_str().unwrap().starts_with(&format!("{second}:")),
        "a row moved under the pointer: {shown}"
    );
    save_screenshot("main-tasks-held-dark", &app.screenshot());
    // The pointer at rest: the renamed task comes first.
    app.wait_until("the list in order", WAIT, order, |v| {
        *v == format!("{first},{second}")
    });
    app.quit();
}

/// A project's MCP server that never answers holds up the run where the user sees it: the
/// message is sent at once (the composer is free again), the header says the servers are
/// starting, and Stop ends the wait and the server — instead of a window that seems stuck for
/// the 30 s the server is given to start.
#[test]
fn a_server_that_never_starts_is_shown_and_stop_ends_the_wait() {
    const MUTE: &str = "96.8125"; // a unique `sleep`, to find its process
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join("data");
    let folder = home.path().join("project");
    let provider = Provider::start(Box::new(|_, _| Reply::Text("Answered.".into())));
    setup(&data, &folder, &provider);
    cli(&data, &["mcp", "add", "mute", "--", "sleep", MUTE]);
    let desktop = Desktop::start_with(&data, &[("GTK_THEME", "Adwaita:dark")]);
    let app = desktop.launch();
    open_task_window(&app);
    app.set_size(480, 360); // the window's smallest size: the longer state still fits
    send(&app, "Hello there");
    app.wait_until(
        "the run waiting for its servers, the composer free",
        WAIT,
        "return [document.getElementById('task-state').textContent, document.getElementById('composer-input').value, !document.getElementById('composer-stop').hidden]",
        |v| *v == json!(["Starting MCP servers", "", true]),
    );
    // Named once it is slow: which server, how long, what ends the wait.
    app.wait_until(
        "the slow server named",
        WAIT,
        "return [...document.querySelectorAll('.notice')].map(n => n.textContent).join('|')",
        |v| {
            v.as_str().is_some_and(|t| {
                t.contains("(mute)") && t.contains("Stopping the task ends the wait")
            })
        },
    );
    save_screenshot("task-starting-servers-dark-small", &app.screenshot());
    let mute = format!("sleep {MUTE}");
    wait_process(&mute, true, "the server did not start");
    app.find("#composer-stop").click();
    wait_idle(&app);
    let shown = app.js(
        "return [...document.querySelectorAll('.message.user')].map(m => m.textContent).join('|')",
        json!([]),
    );
    assert!(
        shown.as_str().unwrap().contains("Hello there"),
        "the message stays: {shown}"
    );
    assert!(provider.requests().is_empty(), "the model was not asked");
    wait_process(&mute, false, "the server was left running");
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .envs(GIT_IDENTITY)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

const GIT_IDENTITY: [(&str, &str); 4] = [
    ("GIT_AUTHOR_NAME", "Test"),
    ("GIT_AUTHOR_EMAIL", "test@example.com"),
    ("GIT_COMMITTER_NAME", "Test"),
    ("GIT_COMMITTER_EMAIL", "test@example.com"),
];

/// Two tasks run at once, each in a git worktree of its own (from the command line); the app
/// reviews each one's change: a hunk reverted (the file on disk follows), a comment on a line sent
/// to the agent, a commit with the message the model drafted, a merge into the base; the other
/// task's merge conflicts and changes nothing; its worktree is discarded and restored as it was.
#[test]
fn worktree_tasks_are_reviewed_committed_merged_discarded_and_restored_in_the_window() {
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join("data");
    let folder = home.path().join("shop");
    let long: String = (1..=30).map(|n| format!("line {n}\n")).collect();
    let edited = long
        .replace("line 2\n", "line two\n")
        .replace("line 25\n", "line twenty-five\n");
    // While this file exists, a commit message's draft waits (to see the dialog before it).
    let hold_draft = home.path().join("hold-draft");
    let provider = {
        let edited = edited.clone();
        let hold_draft = hold_draft.clone();
        Provider::start(Box::new(move |_, body| {
            let messages = body["messages"].as_array().unwrap();
            let first = messages
                .iter()
                .find(|m| m["role"] == "user")
                .map(|m| m["content"].to_string())
                .unwrap_or_default();
            let tools = messages.iter().filter(|m| m["role"] == "tool").count();
            let last_user = user_texts(body).last().cloned().unwrap_or_default();
            if first.contains("Write the git commit message") {
                while hold_draft.exists() {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Reply::Text("Add the alpha notes".into())
            } else if messages.last().unwrap()["role"] == "user"
                && last_user.contains("I reviewed your change")
            {
                Reply::Text("I will say more.".into())
            } else if first.contains("alpha") {
                match tools {
                    0 => Reply::Calls(vec![("read_file", json!({"path": "long.txt"}))]),
                    1 => Reply::Calls(vec![
                        ("write_file", json!({"path": "long.txt", "content": edited})),
                        (
                            "write_file",
                            json!({"path": "notes.md", "content": "alpha\n"}),
                        ),
                    ]),
                    _ => Reply::Text("Done.".into()),
                }
            } else {
                match tools {
                    0 => Reply::Calls(vec![(
                        "write_file",
                        json!({"path": "notes.md", "content": "beta\n"}),
                    )]),
                    _ => Reply::Text("Done.".into()),
                }
            }
        }))
    };
    std::fs::create_dir_all(&folder).unwrap();
    git(&folder, &["init", "-q", "-b", "main"]);
    std::fs::write(folder.join("long.txt"), &long).unwrap();
    git(&folder, &["add", "-A"]);
    git(&folder, &["commit", "-q", "-m", "first"]);
    cli(&data, &["projects", "add", folder.to_str().unwrap()]);
    support::use_scripted_model(&data, &provider.base_url());

    // Both tasks at once, each on its own branch.
    let exec = |prompt: &str| {
        std::process::Command::new(support::cli_binary())
            .args(["--home", data.to_str().unwrap(), "exec", "--project", "1"])
            .args(["--worktree", "--mode", "yolo", prompt])
            .env("CODEWRIGHT_E2E_KEY", support::KEY)
            .envs(GIT_IDENTITY)
            .output()
            .unwrap()
    };
    let (alpha, beta) = std::thread::scope(|s| {
        let alpha = s.spawn(|| exec("Write the alpha notes"));
        let beta = s.spawn(|| exec("Write the beta notes"));
        (alpha.join().unwrap(), beta.join().unwrap())
    });
    for out in [&alpha, &beta] {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert!(
        !folder.join("notes.md").exists(),
        "a task wrote in the project folder"
    );
    let tasks: Value =
        serde_json::from_str(&cli(&data, &["tasks", "list", "--project", "1", "--json"])).unwrap();
    let task_of = |word: &str| {
        tasks
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["title"].as_str().unwrap().contains(word))
            .unwrap()
            .clone()
    };
    let (alpha, beta) = (task_of("alpha"), task_of("beta"));
    let alpha_tree = std::path::PathBuf::from(alpha["worktree"]["path"].as_str().unwrap());
    let beta_tree = std::path::PathBuf::from(beta["worktree"]["path"].as_str().unwrap());
    // A third, named at length in Chinese: its row stays one line at the window's smallest.
    let third: Value = serde_json::from_str(&cli(
        &data,
        &[
            "tasks",
            "add",
            "--project",
            "1",
            "--worktree",
            "--json",
            "为购物车的结算页面添加一个很长的说明以及 a long English tail for the row",
        ],
    ))
    .unwrap();
    let third_branch = third["worktree"]["branch"].as_str().unwrap().to_string();

    // GitHub's command line, a stand-in: signed out until `signed-in` exists; then it opens a
    // pull request and reports its checks (one failed).
    let bin = home.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let signed_in = home.path().join("signed-in");
    let stand_in = format!(
        "#!/bin/sh\ncase \"$1 $2\" in\n'--version '*) echo 'gh version 2.0';;\n'auth status') [ -f '{}' ] || exit 1;;\n'pr create') echo 'https://github.com/o/shop/pull/3';;\n'pr checks') echo '[{{\"name\":\"build\",\"bucket\":\"pass\",\"link\":\"\"}},{{\"name\":\"test\",\"bucket\":\"fail\",\"link\":\"https://ci/2\"}},{{\"name\":\"lint\",\"bucket\":\"pass\",\"link\":\"\"}}]'; exit 1;;\nesac\n",
        signed_in.display()
    );
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::write(bin.join("gh"), stand_in).unwrap();
        std::fs::set_permissions(bin.join("gh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let remote = home.path().join("remote.git");
    git(
        home.path(),
        &["init", "-q", "--bare", remote.to_str().unwrap()],
    );
    git(
        &folder,
        &["remote", "add", "origin", remote.to_str().unwrap()],
    );
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let mut env = GIT_IDENTITY.to_vec();
    env.push(("PATH", &path));
    let desktop = Desktop::start_with(&data, &env);
    let app = desktop.launch();
    let main = app.current_window();
    let mut branches = [
        "Branch codewright/write-the-alpha-notes".to_string(),
        "Branch codewright/write-the-beta-notes".to_string(),
        format!("Branch {third_branch}"),
    ];
    branches.sort();
    app.wait_until(
        "the tasks with their branches",
        WAIT,
        "return [...document.querySelectorAll('.task-branch')].map(b => b.textContent).sort().join(' | ')",
        |v| v == branches.join(" | ").as_str(),
    );
    // Where each branch stands, in its row: read as the window shows the project.
    let standings = "return [...document.querySelectorAll('.task-standing')].map(s => s.title).sort().join(' | ')";
    app.wait_until("where each branch stands", WAIT, standings, |v| {
        v == "1 file changed (+1 −0) since it left main; 1 file not committed | 2 files changed (+3 −2) since it left main; 2 files not committed | nothing changed since it left main"
    });
    save_screenshot("main-worktree-tasks", &app.screenshot());

    // Alpha's change, for review.
    open_from_main(
        &app,
        &format!(".task[data-id='{}'] .task-open", alpha["id"]),
    );
    app.wait_until(
        "the branch in the header",
        WAIT,
        "return document.getElementById('worktree-branch').textContent",
        |v| v == "codewright/write-the-alpha-notes",
    );
    app.click("#changes-open");
    let files = "return [...document.querySelectorAll('#changes-dialog .change-file')].map(f => f.dataset.path + ' ' + f.querySelectorAll('.change-hunk').length).join(' | ')";
    app.wait_until("the changed files", WAIT, files, |v| {
        v == "long.txt 2 | notes.md 1"
    });
    let summary = app.find("#changes-summary").text();
    assert!(
        summary.contains("2 files")
            && summary.contains("+3 −2")
            && summary.contains("2 not committed"),
        "{summary}"
    );
    save_screenshot("task-changes", &app.screenshot());

    // The second hunk of long.txt is reverted: the file on disk follows, the first stays; and
    // notes.md, which the user closed, stays closed through the refresh.
    let notes_open = "return document.querySelector(\".change-file[data-path='notes.md']\").open";
    app.click(".change-file[data-path='notes.md'] > summary");
    app.wait_until("notes.md closed", WAIT, notes_open, |v| v == false);
    app.click(".change-file[data-path='long.txt'] .change-hunk:nth-child(2) .change-hunk-bar button:last-child");
    app.wait_until("one hunk left", WAIT, files, |v| {
        v.as_str()
            .is_some_and(|t| t.starts_with("long.txt 1 | notes.md"))
    });
    assert_eq!(
        app.js(notes_open, json!([])),
        false,
        "the refresh opened what the user closed"
    );
    app.click(".change-file[data-path='notes.md'] > summary");
    app.wait_until("notes.md open again", WAIT, files, |v| {
        v == "long.txt 1 | notes.md 1"
    });
    assert_eq!(
        std::fs::read_to_string(alpha_tree.join("long.txt")).unwrap(),
        long.replace("line 2\n", "line two\n")
    );
    // The worktree's change is not committed: the revert is listed as one to undo.
    app.wait_until(
        "the revert listed as one to undo",
        WAIT,
        "return [...document.querySelectorAll('#checkpoint-list .checkpoint-label')].map(l => l.textContent).join(' | ')",
        |v| v.as_str().is_some_and(|t| t.contains("Undo revert of long.txt")),
    );

    // A comment on a line of notes.md reaches the agent.
    app.wait_until(
        "notes.md's lines drawn",
        WAIT,
        "return document.querySelector(\".change-file[data-path='notes.md'] tr[data-line='1']\") !== null",
        |v| v == true,
    );
    app.click(".change-file[data-path='notes.md'] tr[data-line='1'] .diff-text");
    app.wait_until(
        "the comment box, focused",
        WAIT,
        "return document.activeElement?.closest('.review-comment') ? document.activeElement.tagName : null",
        |v| v == "TEXTAREA",
    );
    let comment = "Say more: who are the notes for?";
    app.find(".review-comment textarea").type_text(comment);
    app.wait_until(
        "the send button",
        WAIT,
        "return document.getElementById('changes-send').textContent",
        |v| v == "Send 1 comment",
    );
    app.click("#changes-send");
    app.wait_until(
        "the agent's answer to the comments",
        WAIT,
        "return document.querySelector('#messages').textContent",
        |v| v.as_str().is_some_and(|t| t.contains("I will say more.")),
    );
    let asked = provider
        .requests()
        .iter()
        .map(|r| r.to_string())
        .find(|r| r.contains("I reviewed your change"))
        .expect("the comments reached the provider");
    assert!(
        asked.contains("notes.md:1")
            && asked.contains("> alpha")
            && asked.contains("who are the notes for?"),
        "{asked}"
    );
    wait_idle(&app);

    // Commit, with the message the model drafted; then merge into main.
    app.click("#changes-open");
    app.wait_until("the changed files", WAIT, files, |v| {
        v == "long.txt 1 | notes.md 1"
    });
    app.click("#changes-commit");
    app.wait_until(
        "the drafted message",
        WAIT,
        "return document.getElementById('commit-message')?.value ?? null",
        |v| v == "Add the alpha notes",
    );
    save_screenshot("task-commit-dialog", &app.screenshot());
    app.click("#finish-dialog-submit");
    app.wait_until(
        "all committed",
        WAIT,
        "return document.getElementById('changes-summary').textContent",
        |v| {
            v.as_str()
                .is_some_and(|t| t.contains("all committed") && t.contains("1 commit"))
        },
    );
    assert_eq!(
        git(&alpha_tree, &["log", "-1", "--format=%s"]),
        "Add the alpha notes"
    );
    assert_eq!(
        app.js("return [...document.querySelectorAll('#changes-dialog .change-file')].map(f => f.dataset.path + ' ' + [...f.querySelectorAll('.tag')].map(t => t.textContent).join(' ')).join(' | ')", json!([])),
        "long.txt committed | notes.md new committed",
        "each file is marked committed on the branch"
    );
    app.click("#changes-merge");
    app.wait_until(
        "the merge said",
        WAIT,
        "return document.querySelector('#messages').textContent",
        |v| {
            v.as_str()
                .is_some_and(|t| t.contains("Merged codewright/write-the-alpha-notes into main"))
        },
    );
    assert_eq!(
        std::fs::read_to_string(folder.join("notes.md")).unwrap(),
        "alpha\n"
    );
    assert_eq!(
        git(&folder, &["log", "-1", "--format=%s"]),
        "Add the alpha notes"
    );
    app.find("#changes-close").click();
    close_task_window(&app, "#composer-input");
    app.switch_to(&main);

    // Beta wrote the same file: its merge conflicts, and nothing changes. Its row's Changes
    // opens its window with the view open.
    open_from_main(
        &app,
        &format!(
            ".task[data-id='{}'] .task-actions button[aria-label^='Changes']",
            beta["id"]
        ),
    );
    app.wait_until("beta's change", WAIT, files, |v| v == "notes.md 1");
    app.set_size(480, 360);
    // (The theme as Settings would set it; what is shown is all the page's own.)
    app.js("document.documentElement.dataset.theme = 'dark'", json!([]));
    save_screenshot("task-changes-dark-small", &app.screenshot());
    app.js(
        "document.documentElement.dataset.theme = 'light'",
        json!([]),
    );
    // The dialog's buttons stay where they are when the draft arrives (at this size the line
    // saying it is being drafted wraps to two lines, the one saying it was drafted to one).
    std::fs::write(&hold_draft, "").unwrap();
    app.click("#changes-commit");
    // [the note, its lines, where the Commit button is]
    let submit_at = "const d = document.getElementById('finish-dialog'); const note = document.getElementById('commit-note'); if (!d.open || !note) return null; const lines = document.createRange(); lines.selectNodeContents(note); return [note.textContent, new Set([...lines.getClientRects()].map(r => Math.round(r.top))).size, document.getElementById('finish-dialog-submit').getBoundingClientRect().top]";
    let drafting = app.wait_until("the commit dialog, drafting", WAIT, submit_at, |v| {
        v[0].as_str().is_some_and(|t| t.contains("is drafting"))
    });
    assert_eq!(
        drafting[1], 2,
        "the line saying it is drafting is two lines here: {drafting}"
    );
    save_screenshot("task-commit-drafting-small", &app.screenshot());
    let said = app.js(
        "return document.getElementById('finish-dialog').textContent",
        json!([]),
    );
    assert!(
        said.as_str()
            .unwrap()
            .contains("not committed yet (1 file) on"),
        "{said}"
    );
    std::fs::remove_file(&hold_draft).unwrap();
    let drafted = app.wait_until("the commit dialog, drafted", WAIT, submit_at, |v| {
        v[0].as_str().is_some_and(|t| t.starts_with("Drafted"))
    });
    assert_eq!(
        drafted[1], 1,
        "the line saying it was drafted is one line here: {drafted}"
    );
    assert!(
        (drafted[2].as_f64().unwrap() - drafting[2].as_f64().unwrap()).abs() < 0.5,
        "the Commit button moved when the draft arrived: {drafting} → {drafted}"
    );
    save_screenshot("task-commit-drafted-small", &app.screenshot());
    app.js("document.documentElement.dataset.theme = 'dark'", json!([]));
    save_screenshot("task-commit-drafted-dark-small", &app.screenshot());
    app.js(
        "document.documentElement.dataset.theme = 'light'",
        json!([]),
    );
    // The user rewrites the drafted message (once it is there: a draft never replaces typing).
    app.wait_until(
        "the commit dialog with its draft",
        WAIT,
        "return document.getElementById('commit-message')?.value ?? null",
        |v| v == "Add the alpha notes",
    );
    app.find("#commit-message").clear();
    app.find("#commit-message").type_text("Beta notes");
    app.click("#finish-dialog-submit");
    app.wait_until(
        "all committed",
        WAIT,
        "return document.getElementById('changes-summary').textContent",
        |v| v.as_str().is_some_and(|t| t.contains("all committed")),
    );
    let head = git(&folder, &["rev-parse", "HEAD"]);
    app.click("#changes-merge");
    app.wait_until(
        "the conflict, said",
        WAIT,
        "const e = document.getElementById('changes-error'); return e.hidden ? null : e.textContent",
        |v| v.as_str().is_some_and(|t| t.contains("conflicts in notes.md; nothing was changed") && t.contains("Ask the agent to resolve")),
    );
    assert_eq!(git(&folder, &["rev-parse", "HEAD"]), head);
    assert_eq!(git(&folder, &["status", "--porcelain"]), "");
    // The main window's row followed: committed, main moved on under it, and a merge would
    // conflict — without a reload.
    let beta_window = app.current_window();
    app.switch_to(&main);
    let beta_row = format!(
        "return document.querySelector(\".task[data-id='{}'] .task-standing\")?.title ?? null",
        beta["id"]
    );
    app.wait_until("beta's row, live", WAIT, &beta_row, |v| {
        v == "1 file changed (+1 −0) since it left main; 1 commit ahead of main, 1 behind; merging it into main now would conflict in notes.md"
    });
    save_screenshot("main-worktree-conflict", &app.screenshot());
    app.set_size(720, 460);
    app.js("document.documentElement.dataset.theme = 'dark'", json!([]));
    save_screenshot("main-worktree-conflict-dark-small", &app.screenshot());
    app.js(
        "document.documentElement.dataset.theme = 'light'",
        json!([]),
    );
    app.switch_to(&beta_window);
    assert_eq!(
        std::fs::read_to_string(folder.join("notes.md")).unwrap(),
        "alpha\n"
    );

    // A pull request with GitHub's command line signed out says what is missing and how to do
    // it by hand.
    app.click("#changes-pr");
    app.wait_until(
        "the drafted title",
        WAIT,
        "return document.getElementById('pr-title')?.value ?? null",
        |v| v == "Add the alpha notes",
    );
    app.click("#finish-dialog-submit");
    app.wait_until(
        "what is missing",
        WAIT,
        "const e = document.getElementById('finish-dialog-error'); return e && !e.hidden ? e.textContent : null",
        |v| v.as_str().is_some_and(|t| t.contains("gh") && t.contains("git push -u origin codewright/write-the-beta-notes")),
    );
    save_screenshot("task-pull-request-missing-gh", &app.screenshot());
    assert_eq!(
        git(&remote, &["branch", "--list"]),
        "",
        "pushed while signed out"
    );
    // Signed in: the branch pushed, the pull request opened, and its checks in the header.
    std::fs::write(&signed_in, "").unwrap();
    app.click("#finish-dialog-submit");
    app.wait_until(
        "the pull request opened",
        WAIT,
        "return document.querySelector('#messages').textContent",
        |v| {
            v.as_str().is_some_and(|t| {
                t.contains("Opened the pull request: https://github.com/o/shop/pull/3")
            })
        },
    );
    assert!(git(&remote, &["branch", "--list"]).contains("codewright/write-the-beta-notes"));
    app.find("#changes-close").click();
    let checks = app.wait_until(
        "its checks",
        WAIT,
        "const b = document.getElementById('worktree-checks'); return b.hidden || !b.dataset.state ? null : [b.textContent, b.dataset.state, b.title]",
        |v| v.is_array(),
    );
    assert_eq!(checks[0], "1 of 3 checks failed", "{checks}");
    assert_eq!(checks[1], "failed");
    assert!(
        checks[2]
            .as_str()
            .unwrap()
            .contains("test failed: https://ci/2"),
        "{checks}"
    );
    save_screenshot("task-pull-request-checks-small", &app.screenshot());
    app.click("#changes-open");
    app.wait_until("beta's change", WAIT, files, |v| v == "notes.md 1");

    // Discarded, then restored as it was.
    std::fs::write(beta_tree.join("draft.txt"), "not committed\n").unwrap();
    app.click("#changes-discard");
    let listed = app.wait_until(
        "what discarding removes",
        WAIT,
        "const d = document.getElementById('finish-dialog'); return d.open ? d.textContent : null",
        |v| v.is_string(),
    );
    assert!(listed.as_str().unwrap().contains("draft.txt"), "{listed}");
    app.click("#finish-dialog-submit");
    app.wait_until(
        "the view closed and the restore button shown",
        WAIT,
        "return !document.getElementById('changes-dialog').open && !document.getElementById('finish-dialog').open && !document.getElementById('worktree-restore').hidden",
        |v| v == true,
    );
    assert!(!beta_tree.exists());
    save_screenshot("task-worktree-discarded-small", &app.screenshot());
    app.click("#worktree-restore");
    app.wait_until(
        "the worktree back",
        WAIT,
        "return !document.getElementById('changes-open').hidden",
        |v| v == true,
    );
    assert_eq!(
        std::fs::read_to_string(beta_tree.join("draft.txt")).unwrap(),
        "not committed\n"
    );
    assert_eq!(git(&beta_tree, &["log", "-1", "--format=%s"]), "Beta notes");
    close_task_window(&app, "#composer-input");

    // A new task from the main window, in a worktree of its own: its window says where it works.
    app.switch_to(&main);
    app.click("#new-task-worktree");
    let title = app.find("#new-task-title");
    title.type_text("Try the gamma idea");
    let before = app.window_handles();
    title.type_text(ENTER);
    app.switch_to_new_window(&before, WAIT);
    app.wait_until(
        "the new task's branch",
        WAIT,
        "return document.getElementById('worktree-branch').textContent",
        |v| v == "codewright/try-the-gamma-idea",
    );
    assert_eq!(
        git(
            &folder,
            &["branch", "--list", "codewright/try-the-gamma-idea"]
        ),
        "+ codewright/try-the-gamma-idea",
        "the branch is checked out in a worktree"
    );
    app.quit();
}

/// A task in the project folder is reviewed in its window too: a file it made is reverted (and
/// listed as a revert to undo, not as a restore of a turn), the rest is committed on the folder's
/// branch with the drafted message, and only the task's files — in the dark theme, at the task
/// window's smallest size.
#[test]
fn a_folder_tasks_change_is_reverted_and_committed_in_the_window() {
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join("data");
    let folder = home.path().join("shop");
    let provider = Provider::start(Box::new(|_, body| {
        let messages = body["messages"].as_array().unwrap();
        let first = messages
            .iter()
            .find(|m| m["role"] == "user")
            .map(|m| m["content"].to_string())
            .unwrap_or_default();
        if first.contains("Write the git commit message") {
            return Reply::Text("Add the to-do list".into());
        }
        match messages.iter().filter(|m| m["role"] == "tool").count() {
            0 => Reply::Calls(vec![
                (
                    "write_file",
                    json!({"path": "todo.py", "content": "def ship():\n    \"\"\"Ship\n    it.\"\"\"\n    return \"it\"  # soon\n"}),
                ),
                (
                    "write_file",
                    json!({"path": "plan.md", "content": "a plan\n"}),
                ),
                ("read_file", json!({"path": "old.py"})),
                (
                    "edit_file",
                    json!({"path": "old.py", "old_string": "old", "new_string": "new"}),
                ),
            ]),
            _ => Reply::Text("Done.".into()),
        }
    }));
    std::fs::create_dir_all(&folder).unwrap();
    git(&folder, &["init", "-q", "-b", "main"]);
    std::fs::write(folder.join("app.py"), "print('hi')\n").unwrap();
    std::fs::write(folder.join("old.py"), "print('old')\n").unwrap();
    git(&folder, &["add", "-A"]);
    git(&folder, &["commit", "-q", "-m", "first"]);
    cli(&data, &["projects", "add", folder.to_str().unwrap()]);
    support::use_scripted_model(&data, &provider.base_url());
    let out = std::process::Command::new(support::cli_binary())
        .args(["--home", data.to_str().unwrap(), "exec", "--project", "1"])
        .args(["--mode", "yolo", "Write the to-do list"])
        .env("CODEWRIGHT_E2E_KEY", support::KEY)
        .envs(GIT_IDENTITY)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The user's own work in the folder, which the task's commit must leave alone.
    std::fs::write(folder.join("app.py"), "print('mine')\n").unwrap();

    let mut env = GIT_IDENTITY.to_vec();
    env.push(("GTK_THEME", "Adwaita:dark"));
    let desktop = Desktop::start_with(&data, &env);
    let app = desktop.launch();
    open_task_window(&app);
    // The edit's tool panel shows its diff in the file's colours too.
    app.wait_until(
        "the edit's diff coloured",
        WAIT,
        "return [...document.querySelectorAll('.tool-panel [data-coloured] .hljs-keyword')].map(s => s.textContent).join(' ')",
        |v| v == "def return",
    );
    app.set_size(480, 360);
    app.click("#changes-open");
    let files = "return [...document.querySelectorAll('#changes-dialog .change-file')].map(f => f.dataset.path).join(' | ')";
    app.wait_until("the task's files", WAIT, files, |v| {
        v == "old.py | plan.md | todo.py"
    });
    // Its lines in their language's colours (a keyword, a string, a comment), the text unchanged.
    app.wait_until(
        "todo.py coloured",
        WAIT,
        "const t = document.querySelector(\".change-file[data-path='todo.py'] [data-coloured]\"); return t ? [...t.querySelectorAll('.diff-text [class^=hljs-]')].map(s => s.className + ':' + s.textContent).join(' ') + '|' + [...t.querySelectorAll('.diff-text')].map(c => c.textContent).join('/') : ''",
        // (A string over two lines is coloured on both: cut at the line's end, opened again.)
        |v| v.as_str().is_some_and(|t| t.starts_with("hljs-keyword:def") && t.contains("hljs-string:\"\"\"Ship hljs-string:    it.\"\"\"") && t.contains("hljs-string:\"it\"") && t.contains("hljs-comment:# soon") && t.ends_with("|def ship():/    \"\"\"Ship/    it.\"\"\"/    return \"it\"  # soon")),
    );
    app.click(".change-file[data-path='plan.md'] .change-file-tools button");
    app.wait_until("plan.md reverted", WAIT, files, |v| v == "old.py | todo.py");
    assert!(!folder.join("plan.md").exists(), "the revert left plan.md");
    app.wait_until(
        "the revert listed as one to undo",
        WAIT,
        "return [...document.querySelectorAll('#checkpoint-list .checkpoint-label')].map(l => l.textContent).join(' | ')",
        |v| v.as_str().is_some_and(|t| t.contains("Undo revert of plan.md")),
    );
    // Closed with Escape, the view shows the revert among the task's checkpoints.
    app.find("#changes-dialog .change-file-tools button")
        .send_keys_once("\u{E00C}");
    app.wait_until(
        "the Changes view closed",
        WAIT,
        "return document.getElementById('changes-dialog').open",
        |v| v == false,
    );
    app.click("#checkpoints summary");
    save_screenshot("task-folder-revert-dark-small", &app.screenshot());
    app.click("#changes-open");
    app.wait_until("the task's files left", WAIT, files, |v| {
        v == "old.py | todo.py"
    });
    app.wait_until(
        "the files not committed yet",
        WAIT,
        "return document.getElementById('changes-summary').textContent",
        |v| v.as_str().is_some_and(|t| t.ends_with("2 not committed")),
    );

    app.click("#changes-commit");
    app.wait_until(
        "the drafted message",
        WAIT,
        "return document.getElementById('commit-message')?.value ?? null",
        |v| v == "Add the to-do list",
    );
    save_screenshot("task-folder-commit-dark-small", &app.screenshot());
    app.click("#finish-dialog-submit");
    let deadline = std::time::Instant::now() + WAIT;
    while git(&folder, &["log", "-1", "--format=%s"]) != "Add the to-do list" {
        assert!(
            std::time::Instant::now() < deadline,
            "nothing was committed"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(
        git(&folder, &["show", "--name-only", "--format=", "HEAD"]),
        "old.py\ntodo.py"
    );
    assert_eq!(
        git(&folder, &["status", "--porcelain"]),
        "M app.py",
        "the user's own change was touched"
    );
    // The view still shows what the task changed, now marked committed, with nothing to commit.
    let marks = "return document.getElementById('changes-summary').textContent + ' | ' + [...document.querySelectorAll('#changes-dialog .change-file .tag')].map(t => t.textContent).join(' ') + ' | ' + document.getElementById('changes-commit').disabled";
    app.wait_until("the file marked committed", WAIT, marks, |v| {
        v.as_str().is_some_and(|t| {
            t.contains("all committed") && t.ends_with("| committed new committed | true")
        })
    });
    app.wait_until(
        "todo.py coloured again",
        WAIT,
        "return !!document.querySelector(\".change-file[data-path='todo.py'] [data-coloured]\")",
        |v| v == true,
    );
    save_screenshot("task-folder-committed-dark-small", &app.screenshot());

    // The user removes a file the task changed and commits the removal: opened again, the view
    // lists it removed, and committed — nothing of it is left to commit.
    git(&folder, &["rm", "-q", "old.py"]);
    git(&folder, &["commit", "-q", "-m", "Drop old.py"]);
    app.find("#changes-close").send_keys_once("\u{E00C}");
    app.wait_until(
        "the Changes view closed",
        WAIT,
        "return document.getElementById('changes-dialog').open",
        |v| v == false,
    );
    app.click("#changes-open");
    let removed = "return document.getElementById('changes-summary').textContent + ' | ' + [...document.querySelectorAll(\"#changes-dialog .change-file[data-path='old.py'] .tag\")].map(t => t.textContent).join(' ') + ' | ' + document.getElementById('changes-commit').disabled";
    app.wait_until("the removal marked committed", WAIT, removed, |v| {
        v.as_str().is_some_and(|t| {
            t.contains("all committed") && t.ends_with("| deleted committed | true")
        })
    });
    save_screenshot(
        "task-folder-removed-committed-dark-small",
        &app.screenshot(),
    );
    app.quit();
}
