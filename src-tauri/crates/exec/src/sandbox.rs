//! The `bash` sandbox on Linux: Landlock lets a command read and run anything but write only
//! inside the project and the temp folders. Support is probed once; when the kernel cannot
//! enforce it, callers say so and ask instead — never run unconfined silently.

use landlock::{
    path_beneath_rules, AccessFs, RestrictionStatus, Ruleset, RulesetAttr, RulesetCreated,
    RulesetCreatedAttr, RulesetError, RulesetStatus, ABI,
};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Linux 6.2's Landlock: file writes, creation and removal, renames across folders, truncation.
const TARGET: ABI = ABI::V3;

/// What this system's kernel can do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SandboxSupport {
    /// Every write outside the allowed folders is refused.
    Full,
    /// Enforced, but an older kernel leaves some writes (truncation, cross-folder renames) open.
    Partial,
    /// Not available; the reason says why.
    Unavailable(String),
}

/// Probes (once) whether Landlock works here, on a throwaway thread.
pub fn sandbox_support() -> &'static SandboxSupport {
    static SUPPORT: OnceLock<SandboxSupport> = OnceLock::new();
    SUPPORT.get_or_init(|| {
        let probe = std::thread::spawn(|| -> Result<RestrictionStatus, RulesetError> {
            ruleset(&[std::env::temp_dir()])?.restrict_self()
        });
        match probe.join() {
            Ok(Ok(status)) => match status.ruleset {
                RulesetStatus::FullyEnforced => SandboxSupport::Full,
                RulesetStatus::PartiallyEnforced => SandboxSupport::Partial,
                RulesetStatus::NotEnforced => SandboxSupport::Unavailable(
                    "this Linux kernel does not enable Landlock (it needs 5.13 or newer with Landlock turned on)".into(),
                ),
            },
            Ok(Err(e)) => SandboxSupport::Unavailable(format!("Landlock failed: {e}")),
            Err(_) => SandboxSupport::Unavailable("the Landlock probe crashed".into()),
        }
    })
}

/// The folders a sandboxed command may write to.
pub fn writable_paths(root: &Path) -> Vec<PathBuf> {
    let mut paths = vec![
        root.to_path_buf(),
        std::env::temp_dir(),
        PathBuf::from("/tmp"),
        PathBuf::from("/var/tmp"),
        PathBuf::from("/dev/null"),
        PathBuf::from("/dev/tty"),
        PathBuf::from("/dev/pts"),
    ];
    paths.dedup();
    paths
}

/// A ruleset ready to apply (prepared in the parent: applying it after fork only makes syscalls).
pub fn ruleset(writable: &[PathBuf]) -> Result<RulesetCreated, RulesetError> {
    let write = AccessFs::from_write(TARGET);
    Ruleset::default()
        .handle_access(write)
        .and_then(|r| r.create())
        .and_then(|r| r.add_rules(path_beneath_rules(writable, write)))
}

/// Makes `command` restrict itself with `ruleset` right before it starts the program.
pub fn confine(command: &mut std::process::Command, ruleset: RulesetCreated) {
    use std::os::unix::process::CommandExt;
    let mut ruleset = Some(ruleset);
    // SAFETY: runs in the child between fork and exec; restrict_self only makes syscalls
    // (prctl, landlock_restrict_self, close) and allocates nothing on success.
    unsafe {
        command.pre_exec(move || {
            if let Some(ruleset) = ruleset.take() {
                ruleset
                    .restrict_self()
                    .map_err(|_| std::io::Error::from_raw_os_error(libc::EPERM))?;
            }
            Ok(())
        });
    }
}
