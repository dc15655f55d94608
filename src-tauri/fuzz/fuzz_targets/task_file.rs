//! Task files (`.codewright/tasks/*.md`, ayder's `.ayder/tasks/`): how one is read (front matter
//! or `- **ID:**` / `- **Status:**` lines) and how its status is written back when its task is
//! done. The input, as lossy UTF-8, is the file's text; it lives at `TASK-042-fuzz.md`.
//!
//! Checks that nothing panics, and that a status written into a file that reads reads back as
//! that status with the same id and title — or is refused, leaving the file as it was.
#![no_main]

use codewright_extensions::task_files::{parse, with_status};
use std::path::Path;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let path = Path::new(".codewright/tasks/TASK-042-fuzz.md");
    let Ok(before) = parse(&text, path) else {
        return;
    };
    for status in ["done", "in progress"] {
        if let Ok(written) = with_status(&text, path, status) {
            let after = parse(&written, path).expect("a written task file reads");
            assert_eq!(after.status, status);
            assert_eq!((after.id, after.title), (before.id.clone(), before.title.clone()));
        }
    }
});
