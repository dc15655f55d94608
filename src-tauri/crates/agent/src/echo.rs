//! A small model writing out the tests it was shown. After its fix, Qwen2.5-Coder-1.5B often
//! writes out the test file "to verify" it: word-count's 17 tests, 1,170 tokens — 80 s of a
//! 300-s run on two cores; raindrops' under `# raindrops_test.py` in the fix's own block, 55 s
//! of a 69-s run. Such a file is the measure of the task and never written from words
//! ([`crate::written::measures`]), so once the answer has written a file of its own and starts
//! on one of these, the rest is waste: the answer is stopped there (`run/model_call.rs`).

use crate::written::{comment_path, fence_of, read, work};
use std::path::Path;

/// How many lines, blank ones aside, past those it shares with the other files the user named,
/// an answer must have written of a kept file's start before it counts as that file written out.
const ECHO_LINES: usize = 3;

/// What a small model's answer is watched for as it streams: the files the task keeps, and
/// what tells whether the answer wrote a file of its own before them.
pub struct Watch {
    root: std::path::PathBuf,
    commands: Vec<String>,
    named: Vec<String>,
    keep: Vec<String>,
    kept: Vec<Kept>,
}

/// A file the task keeps as [`Watch`] knows it: its path, and the lines that begin it (blank
/// ones aside, trimmed) — as many as it shares at its start with any other file the user
/// named (a licence header, the same imports), and [`ECHO_LINES`] more.
struct Kept {
    path: String,
    start: Vec<String>,
}

/// A line of an answer that is not blank: where it starts, and its text trimmed.
type Line<'a> = (usize, &'a str);

/// Where an answer is to be cut: it writes out a kept file from `at` on.
#[derive(Debug, PartialEq, Eq)]
pub struct Stop {
    /// The byte offset where the kept file starts: the line opening its block, or within the
    /// block of the fix the first line of it (or the line naming it, or a fence opened there).
    pub at: usize,
    /// The kept file's path.
    pub path: String,
    /// When it starts within a block: the fence that closes what comes before it.
    pub close: Option<String>,
}

impl Stop {
    /// `text` up to the kept file, its block closed.
    pub fn before(&self, text: &str) -> String {
        let kept = text[..self.at].trim_end();
        match &self.close {
            Some(fence) => format!("{kept}\n{fence}"),
            None => kept.to_string(),
        }
    }
}

impl Watch {
    /// The watch for an answer of a run in `root` whose user named `named` and the check
    /// `commands`, of which `keep` are kept ([`crate::written::measures`]); `None` when there
    /// is nothing to watch for.
    pub fn new(
        root: &Path,
        commands: &[String],
        named: &[String],
        keep: &[String],
    ) -> Option<Self> {
        if keep.is_empty() {
            return None;
        }
        let starts = |text: &str| -> Vec<String> {
            text.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(String::from)
                .collect()
        };
        let others: Vec<Vec<String>> = named
            .iter()
            .filter(|n| !keep.contains(n))
            .filter_map(|n| Some(starts(&read(root, n)?)))
            .collect();
        let kept: Vec<Kept> = keep
            .iter()
            .filter_map(|path| {
                // (A line naming the file is passed over in an answer: so it is here.)
                let lines: Vec<String> = starts(&read(root, path)?)
                    .into_iter()
                    .skip_while(|l| names(l, path) || fence_of(l).is_some())
                    .collect();
                let shared = others
                    .iter()
                    .map(|o| o.iter().zip(&lines).take_while(|(a, b)| a == b).count())
                    .max()
                    .unwrap_or(0);
                let start: Vec<String> = lines.into_iter().take(shared + ECHO_LINES).collect();
                (start.len() == shared + ECHO_LINES).then(|| Kept {
                    path: path.clone(),
                    start,
                })
            })
            .collect();
        (!kept.is_empty()).then(|| Watch {
            root: root.to_path_buf(),
            commands: commands.to_vec(),
            named: named.to_vec(),
            keep: keep.to_vec(),
            kept,
        })
    }

    /// Where `text`, an answer perhaps still streaming, starts writing out a kept file after
    /// writing (a whole changed version of) a file of its own. `seen` counts the places of
    /// `text` already looked at and found with no such file before them (a kept file written
    /// out before the fix is let be): they are passed over, and counted.
    pub fn stop(&self, text: &str, seen: &mut usize) -> Option<Stop> {
        for stop in self.echoes(text).into_iter().skip(*seen) {
            let before = stop.before(text);
            let written = work(&before, &self.root, &self.commands, &self.named, &self.keep);
            if !written.files.is_empty() {
                return Some(stop);
            }
            *seen += 1;
        }
        None
    }

    /// Every place `text` starts writing out a kept file as it is, in order: in a block of its
    /// own once the block's first lines that are not blank are the file's start (a line
    /// naming the file, or a fence opened inside, may come before them; a line naming it just
    /// above the block is cut with it) — unless the block says it is another file —, or
    /// further down a block, below other lines, under a line naming it.
    fn echoes(&self, text: &str) -> Vec<Stop> {
        let mut found = Vec::new();
        let mut at = 0;
        // The last line outside a block that is not blank: where it starts, and its text.
        let mut said_before: Option<(usize, &str)> = None;
        // The block open: where its fence line starts, the fence, its info, its lines so far
        // that are not blank (where each starts, and its text trimmed).
        let mut open: Option<(usize, &str, &str, Vec<Line>)> = None;
        for line in text.split_inclusive('\n') {
            let start = at;
            at += line.len();
            let whole = line.ends_with('\n');
            let line = line.trim_end_matches(['\n', '\r']);
            match open.as_mut() {
                None => {
                    let bare = line.trim_start_matches([' ', '\t']);
                    if let Some(fence) = fence_of(bare) {
                        let info = bare[fence.len()..].trim();
                        open = Some((start, fence, info, Vec::new()));
                    } else if !line.trim().is_empty() {
                        said_before = Some((start, line.trim()));
                    }
                }
                Some((_, fence, ..)) if line.trim() == *fence => {
                    open = None;
                    said_before = None;
                }
                Some((opened, fence, info, body)) if whole && !line.trim().is_empty() => {
                    body.push((start, line.trim()));
                    for kept in &self.kept {
                        // A block that says it is another file (in its fence, on the line above
                        // it, or on its first line) is that file's, whatever it starts with.
                        let other = |l: &str| {
                            let named = comment_path(l).unwrap_or(l);
                            let named = named.trim_matches(['`', '*', ':', '"', '\'', '{', '}']);
                            named != kept.path && is_path(named)
                        };
                        // (The kept file's own first line may look like a path: `#!/usr/bin/…`.)
                        let first_own = kept.start.iter().any(|l| l == body[0].1);
                        let another = info.split([' ', ':', '=']).any(other)
                            || said_before.is_some_and(|(_, l)| other(l))
                            || (!first_own && other(body[0].1));
                        let n = kept.start.len();
                        let said = |lines: &[Line]| {
                            lines
                                .iter()
                                .map(|(_, l)| *l)
                                .eq(kept.start.iter().map(String::as_str))
                        };
                        let heading = |l: &str| names(l, &kept.path) || fence_of(l).is_some();
                        let from = body
                            .iter()
                            .position(|(_, l)| !heading(l))
                            .unwrap_or(body.len());
                        if body.len() == from + n && said(&body[from..]) && !another {
                            let at = match said_before {
                                Some((at, l)) if names(l, &kept.path) => at,
                                _ => *opened,
                            };
                            found.push(Stop {
                                at,
                                path: kept.path.clone(),
                                close: None,
                            });
                        } else if body.len() > from + n && said(&body[body.len() - n..]) {
                            let mut first = body.len() - n;
                            let mut named = false;
                            while first > from && heading(body[first - 1].1) {
                                // (A fence opened there starts another block in all but name.)
                                named |= names(body[first - 1].1, &kept.path)
                                    || fence_of(body[first - 1].1).is_some();
                                first -= 1;
                            }
                            if first > from && named {
                                found.push(Stop {
                                    at: body[first].0,
                                    path: kept.path.clone(),
                                    close: Some(fence.to_string()),
                                });
                            }
                        }
                    }
                }
                Some(_) => {}
            }
        }
        found
    }
}

/// Whether `line` names the file `path`: alone (in backticks or bold), or as a comment's last
/// word (`# leap_test.py`, `# File: leap_test.py`).
fn names(line: &str, path: &str) -> bool {
    let word = |w: &str| w.trim_matches(['`', '*', ':', '(', ')']) == path;
    let comment = ["#", "//", "--", ";"]
        .iter()
        .find_map(|c| line.trim().strip_prefix(c));
    word(line.trim())
        || comment
            .and_then(|c| c.split_whitespace().last())
            .is_some_and(word)
}

/// Whether `word` reads as a file's path (`x.py`, `src/x.rs`): no spaces, a dot or a slash
/// between other characters.
fn is_path(word: &str) -> bool {
    let word = word.trim_start_matches("./");
    !word.is_empty()
        && !word.contains(char::is_whitespace)
        && word.trim_matches(['.', '/']).contains(['.', '/'])
}

#[cfg(test)]
mod tests {
    use super::*;

    const STUB: &str = "def leap_year(year):\n    pass\n";
    const SOLVED: &str =
        "def leap_year(year):\n    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)\n";
    const TESTS: &str =
        "# These tests are auto-generated\n\nimport unittest\n\nfrom leap import (\n    leap_year,\n)\n";

    fn watch(dir: &Path) -> Watch {
        std::fs::write(dir.join("leap.py"), STUB).unwrap();
        std::fs::write(dir.join("leap_test.py"), TESTS).unwrap();
        let named = ["leap.py".to_string(), "leap_test.py".to_string()];
        Watch::new(dir, &[], &named, &named[1..]).expect("a kept file")
    }

    fn stop(watch: &Watch, text: &str) -> Option<(usize, String, Option<String>)> {
        watch.stop(text, &mut 0).map(|s| (s.at, s.path, s.close))
    }

    #[test]
    fn the_tests_written_out_after_the_fix_are_found_as_they_stream() {
        let dir = tempfile::tempdir().unwrap();
        let watch = watch(dir.path());
        let at = |n: usize| Some((n, "leap_test.py".to_string(), None));
        // Recorded on word-count: the fix, then the tests "to verify" it, whole.
        let fix =
            format!("Here is the fix:\n\nleap.py\n```python\n{SOLVED}```\n\nAnd the tests:\n\n");
        let echo = "```python\n# These tests are auto-generated\n\nimport unittest\n\nfrom leap import (\n";
        assert_eq!(
            stop(&watch, &format!("{fix}{echo}    leap_year,\n")),
            at(fix.len())
        );
        // Found as soon as its third line is whole, not before; closed, it is found all the same.
        let two = format!(
            "{fix}```python\n# These tests are auto-generated\n\nimport unittest\n\nfrom leap imp"
        );
        assert_eq!(stop(&watch, &two), None);
        assert_eq!(
            stop(&watch, &format!("{two}ort (\n```\nDone.")),
            at(fix.len())
        );
        // Headed inside by its path, and with a fence of its own inside.
        let inner = format!("{fix}```\nleap_test.py\n```python\n# These tests are auto-generated\nimport unittest\nfrom leap import (\n");
        assert_eq!(stop(&watch, &inner), at(fix.len()));
    }

    #[test]
    fn the_tests_written_out_in_the_fixs_own_block_are_cut_from_it() {
        let dir = tempfile::tempdir().unwrap();
        let watch = watch(dir.path());
        // Recorded on raindrops: under a comment naming them; the fence closing the fix is said.
        let own = format!("```python\n# leap.py\n{SOLVED}\n");
        let tests = "# These tests are auto-generated\n\nimport unittest\nfrom leap import (\n    leap_year,\n";
        let cut = Some((
            own.len(),
            "leap_test.py".to_string(),
            Some("```".to_string()),
        ));
        let named = format!("{own}# leap_test.py\n{tests}");
        assert_eq!(stop(&watch, &named), cut);
        let found = watch.stop(&named, &mut 0).unwrap();
        assert_eq!(found.before(&named), format!("{}\n```", own.trim_end()));
        // Not named there, they may be the file's own code: let be.
        assert_eq!(stop(&watch, &format!("{own}{tests}")), None);
        // A fence opened there too (the block never closed): cut above it, not after it; and
        // with no name but the fence.
        let fenced = format!("{own}# leap_test.py\n```python\n{tests}");
        assert_eq!(stop(&watch, &fenced), cut);
        assert_eq!(stop(&watch, &format!("{own}```python\n{tests}")), cut);
        // Named in a comment of more words.
        assert_eq!(
            stop(&watch, &format!("{own}# File: leap_test.py\n{tests}")),
            cut
        );
    }

    #[test]
    fn no_work_is_cut_for_tests_written_before_it_or_lines_other_files_share() {
        let dir = tempfile::tempdir().unwrap();
        let watch = watch(dir.path());
        let tests = format!("```python\n{TESTS}```\n");
        let fix = format!("leap.py\n```python\n{SOLVED}```\n");
        // The tests before the fix: passed over (and counted), the fix after them kept whole.
        let mut seen = 0;
        assert_eq!(watch.stop(&format!("{tests}{fix}"), &mut seen), None);
        assert_eq!(seen, 1);
        // ... and tests written out again after it found past what was seen.
        let twice = format!("{tests}{fix}{tests}");
        assert_eq!(
            watch.stop(&twice, &mut seen).map(|s| s.at),
            Some(tests.len() + fix.len())
        );
        // The stub written out as it is, then the tests: no fix before them, nothing cut.
        let stub = format!("leap.py\n```python\n{STUB}```\n");
        assert_eq!(stop(&watch, &format!("{stub}{tests}")), None);
        // The tests changed from their first lines on, another file, a quote in words: none.
        let changed = format!("{fix}```python\nimport unittest\nfrom leap import leap_year\nclass T(unittest.TestCase):\n");
        assert_eq!(stop(&watch, &changed), None);
        assert_eq!(stop(&watch, &format!("{fix}{fix}")), None);
        let quoted = format!("{fix}The file starts:\n# These tests are auto-generated\nimport unittest\nfrom leap import (\n");
        assert_eq!(stop(&watch, &quoted), None);

        // A source file that starts as the tests do (a licence, the same import): only more of
        // the tests than that is them.
        let header = "# Copyright 2026 Someone\n# Licensed under MIT\nimport unittest\n";
        std::fs::write(
            dir.path().join("a.py"),
            format!("{header}\ndef a():\n    return 1\n"),
        )
        .unwrap();
        std::fs::write(
            dir.path().join("a_test.py"),
            format!("{header}\nfrom a import a\n\nclass T(unittest.TestCase):\n    pass\n"),
        )
        .unwrap();
        let named = ["a.py".to_string(), "a_test.py".to_string()];
        let watch = Watch::new(dir.path(), &[], &named, &named[1..]).unwrap();
        let a = format!("a.py\n```python\n{header}\ndef a():\n    return 2\n```\n");
        let b = format!("a.py\n```python\n{header}\ndef a():\n    return 3\n");
        assert_eq!(stop(&watch, &format!("{a}{b}")), None);
        let echo = format!(
            "{a}```python\n{header}\nfrom a import a\n\nclass T(unittest.TestCase):\n    pass\n"
        );
        assert_eq!(stop(&watch, &echo).map(|s| s.0), Some(a.len()));
        // Nothing kept, nothing watched.
        assert!(Watch::new(dir.path(), &[], &named, &[]).is_none());

        // Only the tests named, every file starting with the licence: a block that says it is
        // another file is that file's, and not cut.
        std::fs::write(
            dir.path().join("b.py"),
            format!("{header}\ndef b():\n    return 1\n"),
        )
        .unwrap();
        let watch = Watch::new(dir.path(), &[], &named[1..], &named[1..]).unwrap();
        let short = "# Copyright 2026 Someone\n# Licensed under MIT\nimport unittest\n";
        for another in [
            format!("b.py\n```python\n{short}"),
            format!("```python b.py\n{short}"),
            format!("```python\n# b.py\n{short}"),
        ] {
            assert_eq!(stop(&watch, &format!("{a}{another}")), None, "{another}");
        }
        assert_eq!(
            stop(&watch, &format!("{a}```python\n{short}")).map(|s| s.0),
            Some(a.len())
        );
    }

    #[test]
    fn a_line_naming_the_tests_goes_with_them() {
        let dir = tempfile::tempdir().unwrap();
        let watch = watch(dir.path());
        let fix = format!("leap.py\n```python\n{SOLVED}```\n\n");
        let echo = format!("**leap_test.py**\n\n```python\n{TESTS}");
        let found = watch.stop(&format!("{fix}{echo}"), &mut 0).unwrap();
        assert_eq!(found.at, fix.len());
        assert_eq!(found.before(&format!("{fix}{echo}")), fix.trim_end());
        // A test file that starts by naming itself is found all the same.
        std::fs::write(
            dir.path().join("leap_test.py"),
            format!("# leap_test.py\n{TESTS}"),
        )
        .unwrap();
        let named = ["leap.py".to_string(), "leap_test.py".to_string()];
        let watch = Watch::new(dir.path(), &[], &named, &named[1..]).unwrap();
        let echo = format!("```python\n# leap_test.py\n{TESTS}");
        assert_eq!(
            watch.stop(&format!("{fix}{echo}"), &mut 0).map(|s| s.at),
            Some(fix.len())
        );
    }
}
