//! The host is the only door into the engine's data: the app shell and the CLI do not depend on
//! the store (their tests may, to seed and read data), so a direct use of it in their code does
//! not build. Nor does the host hand its store out: nothing in its public API returns one.

use std::path::Path;

/// The crates of the `[dependencies]` table of the manifest at `path` (not dev or build ones).
fn dependencies(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut inside = false;
    let mut names = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            inside = line == "[dependencies]";
            continue;
        }
        if inside && !line.is_empty() && !line.starts_with('#') {
            if let Some((name, _)) = line.split_once('=') {
                names.push(name.trim().trim_end_matches(".workspace").to_string());
            }
        }
    }
    names
}

#[test]
fn front_ends_reach_the_data_only_through_the_host() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../..");
    for manifest in ["Cargo.toml", "src-tauri/crates/cli/Cargo.toml"] {
        let deps = dependencies(&root.join(manifest));
        assert!(
            deps.iter().any(|d| d == "codewright-host"),
            "{manifest} does not depend on the host: {deps:?}"
        );
        assert!(
            !deps.iter().any(|d| d == "codewright-store"),
            "{manifest} depends on the store: call the host instead"
        );
    }
}

#[test]
fn the_host_does_not_hand_out_its_store() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut checked = 0;
    for entry in std::fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        // Each public function's signature, over as many lines as rustfmt gave it.
        for (at, _) in text
            .match_indices("pub fn ")
            .chain(text.match_indices("pub async fn "))
        {
            let signature = &text[at..at + text[at..].find('{').unwrap_or(text.len() - at)];
            checked += 1;
            let Some((_, returns)) = signature.split_once("->") else {
                continue;
            };
            let gives_store = returns
                .split(|c: char| !c.is_alphanumeric() && c != '_')
                .any(|word| word == "Store" || word == "Checkpoints" || word == "Session");
            assert!(
                !gives_store,
                "{}: a public function gives out the store: {signature}",
                path.display()
            );
        }
    }
    assert!(checked > 50, "only {checked} public functions were read");
}
