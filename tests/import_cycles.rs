//! No import cycles between the files of a crate: each crate's top-level modules (a file, or a
//! folder of files) form a graph by their `crate::module` paths, and it has no cycle. (Cargo
//! already refuses cycles between crates.) A cycle is where two jobs have grown into one: the
//! fix is a module both can use, not a longer path.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut folders = vec![dir.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                found.push(path);
            }
        }
    }
    found
}

/// The modules each top-level module of the crate in `src` names as `crate::name`.
fn graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut refs: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in sources(src) {
        let rel = file.strip_prefix(src).unwrap();
        let top = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let top = top.trim_end_matches(".rs").to_string();
        if top == "lib" || top == "main" || top == "bin" {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let named = refs.entry(top.clone()).or_default();
        for line in text.lines() {
            // Code, not comments (a doc link is no import).
            let code = line.split("//").next().unwrap_or_default();
            for piece in code.split("crate::").skip(1) {
                let name: String = piece
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
                    .collect();
                if !name.is_empty() && name != top {
                    named.insert(name);
                }
            }
        }
    }
    let modules: BTreeSet<String> = refs.keys().cloned().collect();
    for named in refs.values_mut() {
        named.retain(|n| modules.contains(n));
    }
    refs
}

/// A cycle in `graph`, if it has one.
fn cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut found = path[at..].to_vec();
            found.push(node.to_string());
            return Some(found);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(found) = visit(next, graph, path, done) {
                return Some(found);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|node| visit(node, graph, &mut Vec::new(), &mut done))
}

#[test]
fn no_crate_has_an_import_cycle_between_its_files() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut crates = vec![root.join("src-tauri/src")];
    for entry in std::fs::read_dir(root.join("src-tauri/crates")).unwrap() {
        let src = entry.unwrap().path().join("src");
        if src.is_dir() {
            crates.push(src);
        }
    }
    assert!(crates.len() >= 10, "{crates:?}");
    for src in crates {
        let graph = graph(&src);
        if let Some(found) = cycle(&graph) {
            panic!("{}: {}", src.display(), found.join(" → "));
        }
    }
}

#[test]
fn a_cycle_is_found() {
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("a", vec!["b"]),
        ("b", vec!["c"]),
        ("c", vec!["a"]),
        ("d", vec![]),
    ]
    .into_iter()
    .map(|(n, to)| (n.into(), to.into_iter().map(String::from).collect()))
    .collect();
    assert_eq!(cycle(&graph).unwrap(), ["a", "b", "c", "a"]);
}
