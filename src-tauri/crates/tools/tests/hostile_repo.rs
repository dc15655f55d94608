//! The hostile-repository drill: a project with a symlink loop, a 2 GB file, file names with new
//! lines and shell metacharacters, a name that is not UTF-8 and a `.gitignore` of 100,000 lines.
//! Every reading tool (and the `@` picker's file list) finishes, says something sensible, and
//! never panics or hangs.

mod common;

use codewright_protocol::PermissionMode;
use common::Harness;
use serde_json::json;
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Longer than any of these takes on a loaded machine, short of a hang.
const DEADLINE: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reading_tools_survive_a_hostile_repository() {
    let h = Harness::new(PermissionMode::Normal);
    let root = h.root();
    std::os::unix::fs::symlink("b", root.join("a")).unwrap();
    std::os::unix::fs::symlink("a", root.join("b")).unwrap();
    std::fs::create_dir(root.join("loop")).unwrap();
    std::os::unix::fs::symlink("..", root.join("loop/up")).unwrap();
    // Sparse: 2 GB long, nothing on disk.
    std::fs::File::create(root.join("big.bin"))
        .unwrap()
        .set_len(2 << 30)
        .unwrap();
    // 1 GB of one line: text at its start (so it is not taken for binary), the rest a hole.
    let long = std::fs::File::create(root.join("one-line.txt")).unwrap();
    std::io::Write::write_all(&mut &long, "long line ".repeat(1000).as_bytes()).unwrap();
    long.set_len(1 << 30).unwrap();
    let weird = "we\nird $(touch pwned) `touch pwned`; |&.txt";
    h.write(weird, "needle in a weird file\n");
    let not_utf8 = std::ffi::OsStr::from_bytes(b"bad\xff name.txt");
    std::fs::write(root.join(not_utf8), "needle in a bad name\n").unwrap();
    let ignore: String = (0..100_000).map(|i| format!("generated-{i}/\n")).collect();
    h.write(".gitignore", ignore + "ignored.txt\n");
    h.write("ignored.txt", "needle that is ignored\n");
    h.write("src/main.rs", "fn main() { /* needle */ }\n");

    let calls = [
        ("list_dir", json!({})),
        ("list_dir", json!({"path": "loop/up/loop/up"})),
        ("glob", json!({"pattern": "**/*"})),
        ("grep", json!({"pattern": "needle"})),
        (
            "read_file",
            json!({"path": "big.bin", "offset": 1, "limit": 5}),
        ),
        ("read_file", json!({"path": "a"})),
        (
            "read_file",
            json!({"path": "one-line.txt", "offset": 1, "limit": 5}),
        ),
        ("read_file", json!({"path": weird})),
    ];
    let mut outputs = Vec::new();
    for (tool, input) in calls {
        let started = Instant::now();
        let out = tokio::time::timeout(DEADLINE, h.call(tool, input.clone()))
            .await
            .unwrap_or_else(|_| panic!("{tool} {input} did not finish"));
        assert!(started.elapsed() < DEADLINE);
        outputs.push((tool, input, out));
    }
    let text = |i: usize| outputs[i].2.text_content();

    // Listing and searching show the odd names, skip what is ignored, and do not loop.
    assert!(
        text(0).contains("big.bin") && text(0).contains("src"),
        "{}",
        text(0)
    );
    assert!(!outputs[2].2.is_error, "{}", text(2));
    assert!(text(2).contains("src/main.rs"), "{}", text(2));
    assert!(!text(2).contains("ignored.txt"), "{}", text(2));
    let grep = text(3);
    assert!(grep.contains("src/main.rs"), "{grep}");
    assert!(grep.contains("needle in a weird file"), "{grep}");
    assert!(grep.contains("needle in a bad name"), "{grep}");
    assert!(!grep.contains("needle that is ignored"), "{grep}");
    // A 2 GB file of zeros (one "line") is refused as binary, not read; a symlink loop is an
    // error.
    assert!(outputs[4].2.is_error, "{}", text(4));
    assert!(text(4).contains("binary"), "{}", text(4));
    assert!(outputs[5].2.is_error, "{}", text(5));
    // A range of a file of one 1 GB line shows that line's start, cut, and holds no more of it in
    // memory than that (it used to hold the whole line).
    assert!(!outputs[6].2.is_error, "{}", text(6));
    assert!(
        text(6).starts_with("     1\tlong line long line")
            && text(6).contains("… [line cut at 2000 characters]"),
        "{}",
        &text(6)[..text(6).len().min(300)]
    );
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let peak_kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    assert!(
        peak_kb < 256 * 1024,
        "the test's memory peaked at {peak_kb} kB"
    );
    // A name with a new line and shell syntax is a name, never a command.
    assert!(text(7).contains("needle in a weird file"), "{}", text(7));
    assert!(!root.join("pwned").exists());

    // The composer's file list: bounded time, no loop, the odd names listed.
    let started = Instant::now();
    let files = codewright_tools::files::project_files(&root);
    assert!(started.elapsed() < DEADLINE);
    assert!(files.iter().any(|f| f == "src/main.rs"), "{files:?}");
    assert!(files.iter().any(|f| f == weird), "{files:?}");
    assert!(!files.iter().any(|f| f == "ignored.txt"), "{files:?}");
    assert!(
        files.iter().all(|f| !f.starts_with("loop/up/")),
        "{files:?}"
    );
    let found = codewright_tools::files::find_files(&files, "weird", 5);
    assert_eq!(found[0].path, weird);
}

/// A command (or another program) swaps a folder of the project with a link to a folder outside
/// it, over and over (`renameat2(RENAME_EXCHANGE)`), while the agent writes into that folder in
/// yolo mode. Before: 3 of 19 writes landed outside. Now every write lands inside or fails
/// saying the folder became a link; nothing is ever written outside.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_folder_swapped_for_a_link_never_takes_a_read_or_a_write_outside() {
    let h = Harness::new(PermissionMode::Yolo);
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(h.path("d")).unwrap();
    std::fs::write(h.path("d/secret.txt"), "the project's own\n").unwrap();
    std::fs::write(outside.path().join("secret.txt"), "OUTSIDE\n").unwrap();
    std::os::unix::fs::symlink(outside.path(), h.path("swap")).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let stop = stop.clone();
        let d = std::ffi::CString::new(h.path("d").to_str().unwrap()).unwrap();
        let swap = std::ffi::CString::new(h.path("swap").to_str().unwrap()).unwrap();
        std::thread::spawn(move || {
            let mut swaps = 0u64;
            while !stop.load(Ordering::Relaxed) {
                // SAFETY: valid C strings; exchanging two names in one folder.
                let r = unsafe {
                    libc::renameat2(
                        libc::AT_FDCWD,
                        d.as_ptr(),
                        libc::AT_FDCWD,
                        swap.as_ptr(),
                        libc::RENAME_EXCHANGE,
                    )
                };
                assert_eq!(r, 0, "{}", std::io::Error::last_os_error());
                swaps += 1;
            }
            swaps
        })
    };
    let (mut written, mut refused) = (0, 0);
    for i in 0..200 {
        let out = h
            .call(
                "write_file",
                json!({"path": format!("d/f{i}.txt"), "content": "x"}),
            )
            .await;
        if out.is_error {
            refused += 1;
        } else {
            written += 1;
        }
    }
    // Reads race the same way: what the model gets is the project's file or an error, never
    // the one outside.
    for _ in 0..200 {
        let out = h.call("read_file", json!({"path": "d/secret.txt"})).await;
        assert!(
            !out.text_content().contains("OUTSIDE"),
            "{}",
            out.text_content()
        );
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    let escaped: Vec<_> = std::fs::read_dir(outside.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .filter(|n| n != "secret.txt")
        .collect();
    assert!(
        escaped.is_empty(),
        "written outside the project: {escaped:?}"
    );
    // (A write whose check saw the link was asked, as outside the project, and rejected.)
    eprintln!("{written} written, {refused} refused, {swaps} swaps");
    assert!(swaps > 0);
    // With the folder left alone (swapped back if the swapper stopped half way), writing into it
    // works.
    if std::fs::symlink_metadata(h.path("d"))
        .unwrap()
        .file_type()
        .is_symlink()
    {
        let parked = h.path("parked");
        std::fs::rename(h.path("d"), &parked).unwrap();
        std::fs::rename(h.path("swap"), h.path("d")).unwrap();
        std::fs::rename(&parked, h.path("swap")).unwrap();
    }
    let out = h
        .call("write_file", json!({"path": "d/after.txt", "content": "x"}))
        .await;
    assert!(!out.is_error, "{}", out.text_content());
}

/// A checkpoint restore after a folder of the project became a link to a folder outside it:
/// the restore refuses to write through it (the sandbox had refused the same write directly).
#[tokio::test]
async fn a_restore_never_writes_through_a_link_swapped_in_afterwards() {
    let h = Harness::new(PermissionMode::Yolo);
    let outside = tempfile::tempdir().unwrap();
    h.write("d/notes.txt", "old\n");
    h.session.set_turn(1);
    h.call("read_file", json!({"path": "d/notes.txt"})).await;
    let out = h
        .call(
            "write_file",
            json!({"path": "d/notes.txt", "content": "new\n"}),
        )
        .await;
    assert!(!out.is_error, "{}", out.text_content());
    std::fs::rename(h.path("d"), h.path("d.moved")).unwrap();
    std::os::unix::fs::symlink(outside.path(), h.path("d")).unwrap();
    let checkpoints = codewright_tools::Checkpoints::new(h.home.path(), h.store.clone());
    let err = checkpoints.restore_turn(h.session.task, 1).unwrap_err();
    assert!(err.to_string().contains("is a link now"), "{err}");
    assert_eq!(err.kind(), codewright_protocol::ErrorKind::Checkpoint);
    assert!(!outside.path().join("notes.txt").exists());
}

/// A review's revert removes a file (a renamed file's new name) the same way: never through a
/// folder swapped for a link, never outside the task's folder.
#[tokio::test]
async fn a_reverts_removal_never_goes_through_a_link_or_out_of_the_folder() {
    let h = Harness::new(PermissionMode::Yolo);
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("id_rsa"), "secret\n").unwrap();
    h.write("d/id_rsa", "mine\n");
    let checkpoints = codewright_tools::Checkpoints::new(h.home.path(), h.store.clone());
    let root = h.root().canonicalize().unwrap();
    std::fs::rename(h.path("d"), h.path("d.moved")).unwrap();
    std::os::unix::fs::symlink(outside.path(), h.path("d")).unwrap();
    let err = checkpoints
        .remove(&root, &root.join("d/id_rsa"))
        .unwrap_err();
    assert!(err.to_string().contains("is a link now"), "{err}");
    let away = outside.path().canonicalize().unwrap().join("id_rsa");
    assert!(checkpoints.remove(&root, &away).is_err());
    assert!(away.exists());
    std::fs::remove_file(h.path("d")).unwrap();
    std::fs::rename(h.path("d.moved"), h.path("d")).unwrap();
    assert!(checkpoints.remove(&root, &root.join("d/id_rsa")).unwrap());
    assert!(!checkpoints.remove(&root, &root.join("d/id_rsa")).unwrap());
    // A file something made huge (a sparse terabyte: a command's `truncate -s 1T`) is never
    // read into memory (a hunk's revert reads the file whole): refused, in words.
    let big = root.join("big.bin");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(1 << 40)
        .unwrap();
    let err = checkpoints.read(&root, &big).unwrap_err();
    assert!(err.to_string().contains("too large to read whole"), "{err}");
    // Nor copied into the checkpoints (a copy is read back whole to restore it): a whole
    // file's revert of it is refused, in words, before anything changes.
    let err = checkpoints.copies(&root, &[big.as_path()]).unwrap_err();
    assert!(
        err.to_string().contains("too large to keep a copy of"),
        "{err}"
    );
}

/// A named pipe in the project, read by the model: refused at once, never waited on.
#[tokio::test]
async fn read_file_never_waits_on_a_named_pipe() {
    let h = Harness::new(PermissionMode::Normal);
    let fifo = std::ffi::CString::new(h.path("notes.md").to_str().unwrap()).unwrap();
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
    let out = tokio::time::timeout(
        Duration::from_secs(20),
        h.call("read_file", json!({"path": "notes.md"})),
    )
    .await
    .expect("read_file waited on a pipe");
    assert!(
        out.is_error && out.text_content().contains("not a regular file"),
        "{}",
        out.text_content()
    );
}

/// Ignore files a repository made hostile: a folder whose `.gitignore` links to `/dev/zero`
/// (git stores links) and one whose `.ignore` is a named pipe. Before, the `ignore` crate read the
/// first forever (memory growing without end) and waited on the second forever, in every search,
/// the `@` list and the snapshot before each command. Now such folders are left out and the rest
/// is searched.
#[tokio::test]
async fn hostile_ignore_files_neither_hang_nor_fill_memory() {
    let h = Harness::new(PermissionMode::Normal);
    let root = h.root();
    h.write("zero/secret.txt", "needle under a link to /dev/zero\n");
    std::os::unix::fs::symlink("/dev/zero", root.join("zero/.gitignore")).unwrap();
    h.write("pipe/secret.txt", "needle under a pipe\n");
    let fifo = std::ffi::CString::new(root.join("pipe/.ignore").to_str().unwrap()).unwrap();
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
    h.write("src/main.rs", "fn main() { /* needle */ }\n");
    for (tool, input) in [
        ("grep", json!({"pattern": "needle"})),
        ("glob", json!({"pattern": "**/*.rs"})),
    ] {
        let out = tokio::time::timeout(Duration::from_secs(30), h.call(tool, input))
            .await
            .unwrap_or_else(|_| panic!("{tool} hung on a hostile ignore file"));
        assert!(
            out.text_content().contains("main.rs"),
            "{tool}: {}",
            out.text_content()
        );
    }
    let files = codewright_tools::files::project_files(&root);
    assert!(files.contains(&"src/main.rs".to_string()), "{files:?}");
    // A hostile one at the top: ignore files are not read at all, nothing hangs.
    std::os::unix::fs::symlink("/dev/zero", root.join(".gitignore")).unwrap();
    let files = tokio::time::timeout(
        Duration::from_secs(30),
        tokio::task::spawn_blocking(move || codewright_tools::files::project_files(&root)),
    )
    .await
    .expect("the file list hung")
    .unwrap();
    assert!(files.contains(&"src/main.rs".to_string()), "{files:?}");
}
