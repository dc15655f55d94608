//! How WebKitGTK paints the windows. It composites pages with OpenGL; on a machine without a GPU
//! (a virtual machine, a remote desktop, a container, Xvfb) that OpenGL runs in software and costs
//! far more than it saves. Measured on such a machine (BENCHMARKS.md, one run each way): with
//! compositing a streaming reply was drawn at 14–18 frames a second with a 0.8 s stall and each
//! task window took 176 MiB; painting without it drew 64–97 frames a second, no gap over 46 ms,
//! 91 MiB a window. So where no GPU can be used, Codewright asks WebKit not to composite. A
//! `WEBKIT_DISABLE_COMPOSITING_MODE` the user set is left alone (`0` keeps compositing on).

use std::path::Path;

const VAR: &str = "WEBKIT_DISABLE_COMPOSITING_MODE";

/// Chooses how WebKit paints, before any window exists (WebKit reads it when it starts).
pub(crate) fn choose() {
    let software_forced = std::env::var("LIBGL_ALWAYS_SOFTWARE")
        .is_ok_and(|v| !v.is_empty() && v != "0" && !v.eq_ignore_ascii_case("false"));
    if without_compositing(
        std::env::var_os(VAR).is_some(),
        software_forced,
        usable_render_node(Path::new("/dev/dri")),
    ) {
        // Set once, first thing, before any other thread exists.
        std::env::set_var(VAR, "1");
    }
}

/// Whether WebKit should paint without compositing: the user did not choose, and OpenGL would
/// run in software (forced, or no GPU render node this process can open).
fn without_compositing(user_chose: bool, software_forced: bool, render_node: bool) -> bool {
    !user_chose && (software_forced || !render_node)
}

/// Whether `dri` holds a GPU render node (`renderD*`) this process can open for reading and
/// writing, as OpenGL would.
fn usable_render_node(dri: &Path) -> bool {
    std::fs::read_dir(dri).is_ok_and(|entries| {
        entries.flatten().any(|entry| {
            entry.file_name().to_string_lossy().starts_with("renderD")
                && std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .open(entry.path())
                    .is_ok()
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compositing_is_left_on_only_with_a_usable_gpu_and_no_choice_made() {
        assert!(without_compositing(false, false, false), "no GPU");
        assert!(without_compositing(false, true, true), "software forced");
        assert!(!without_compositing(false, false, true), "a GPU");
        assert!(!without_compositing(true, true, false), "the user chose");
    }

    #[test]
    fn a_render_node_counts_only_if_it_can_be_opened() {
        let dri = tempfile::tempdir().unwrap();
        assert!(!usable_render_node(dri.path()), "empty");
        assert!(
            !usable_render_node(&dri.path().join("missing")),
            "no folder"
        );
        std::fs::write(dri.path().join("card0"), "").unwrap();
        assert!(
            !usable_render_node(dri.path()),
            "a card node is not a render node"
        );
        std::fs::write(dri.path().join("renderD128"), "").unwrap();
        assert!(usable_render_node(dri.path()));
    }
}
