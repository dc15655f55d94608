//! The permission-rule command parser: `codewright_tools::parse_command` on the input as a
//! command line (lossy UTF-8), then `Policy::check` and `Policy::suggest` for `bash` under the
//! deny rule `rm -rf`, in every permission mode.
//!
//! Checks that nothing panics, and that a command with a part running `rm` with a `-rf`
//! argument is denied in every mode (deny rules hold even in yolo mode).
#![no_main]

use codewright_protocol::{PermissionMode, PermissionRule, RuleAction, ToolCategory};
use codewright_tools::{parse_command, Policy, Subject, Verdict};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let command = String::from_utf8_lossy(data);
    let runs_rm_rf = parse_command(&command).is_ok_and(|parts| {
        parts.iter().any(|part| match part.words.split_first() {
            Some((program, args)) => program == "rm" && args.iter().any(|a| a == "-rf"),
            None => false,
        })
    });

    let deny = PermissionRule {
        tool: "bash".into(),
        pattern: "rm -rf".into(),
        action: RuleAction::Deny,
    };
    let subject = Subject::Command(&command);
    for mode in [
        PermissionMode::Normal,
        PermissionMode::AcceptEdits,
        PermissionMode::Plan,
        PermissionMode::Yolo,
    ] {
        let policy = Policy::new(mode, vec![deny.clone()]);
        let verdict = policy.check("bash", ToolCategory::Execute, &subject);
        if runs_rm_rf {
            assert!(
                matches!(verdict, Verdict::Deny(_)),
                "{command:?} in {mode:?} mode: {verdict:?}"
            );
        }
        let _ = policy.suggest("bash", &subject);
    }
});
