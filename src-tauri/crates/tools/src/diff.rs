//! Edit proposals as hunks (`similar`), and applying only the hunks the user approved.

use codewright_protocol::{DiffLine, Hunk, LineKind};
use similar::{ChangeTag, DiffOp, TextDiff};

/// Lines of context around each hunk.
const CONTEXT: usize = 3;

fn grouped<'a>(diff: &TextDiff<'a, 'a, str>) -> Vec<Vec<DiffOp>> {
    diff.grouped_ops(CONTEXT)
        .into_iter()
        .filter(|ops| ops.iter().any(|op| !matches!(op, DiffOp::Equal { .. })))
        .collect()
}

/// The hunks that turn `old` into `new`.
pub fn hunks(old: &str, new: &str) -> Vec<Hunk> {
    let diff = TextDiff::from_lines(old, new);
    grouped(&diff)
        .iter()
        .enumerate()
        .map(|(index, ops)| {
            let first = &ops[0];
            let last = &ops[ops.len() - 1];
            let old_range = first.old_range().start..last.old_range().end;
            let new_range = first.new_range().start..last.new_range().end;
            let lines = ops
                .iter()
                .flat_map(|op| diff.iter_changes(op))
                .map(|change| DiffLine {
                    kind: match change.tag() {
                        ChangeTag::Equal => LineKind::Context,
                        ChangeTag::Delete => LineKind::Removed,
                        ChangeTag::Insert => LineKind::Added,
                    },
                    text: change
                        .value()
                        .trim_end_matches('\n')
                        .trim_end_matches('\r')
                        .to_string(),
                })
                .collect();
            Hunk {
                index,
                old_start: old_range.start + 1,
                old_lines: old_range.len(),
                new_start: new_range.start + 1,
                new_lines: new_range.len(),
                lines,
            }
        })
        .collect()
}

/// `old` with only the hunks in `selected` (by index, as [`hunks`] numbers them) applied.
pub fn apply_hunks(old: &str, new: &str, selected: &[usize]) -> String {
    let diff = TextDiff::from_lines(old, new);
    let mut out = String::with_capacity(new.len().max(old.len()));
    let mut line = 0;
    for (index, ops) in grouped(&diff).iter().enumerate() {
        if !selected.contains(&index) {
            continue;
        }
        let start = ops[0].old_range().start;
        let end = ops[ops.len() - 1].old_range().end;
        for i in line..start {
            out.push_str(diff.old_slice(i).expect("within the old text"));
        }
        for change in ops.iter().flat_map(|op| diff.iter_changes(op)) {
            if change.tag() != ChangeTag::Delete {
                out.push_str(change.value());
            }
        }
        line = end;
    }
    for slice in diff.iter_old_slices().skip(line) {
        out.push_str(slice);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn applying_a_subset_of_hunks() {
        let old: String = (1..=30).map(|i| format!("line {i}\n")).collect();
        let new = old
            .replace("line 2\n", "line two\n")
            .replace("line 15\n", "line fifteen\nextra\n")
            .replace("line 28\n", "");
        let all = hunks(&old, &new);
        assert_eq!(all.len(), 3);
        assert_eq!((all[1].old_start, all[1].old_lines), (12, 7));
        assert_eq!(apply_hunks(&old, &new, &[0, 1, 2]), new);
        assert_eq!(apply_hunks(&old, &new, &[]), old);
        let middle = apply_hunks(&old, &new, &[1]);
        assert!(middle.contains("line fifteen\nextra\n"));
        assert!(middle.contains("line 2\n") && middle.contains("line 28\n"));
    }

    #[test]
    fn keeps_crlf_and_a_missing_final_newline() {
        let old = "a\r\nb\r\nc";
        let new = "a\r\nB\r\nc";
        assert_eq!(apply_hunks(old, new, &[0]), new);
        assert_eq!(hunks(old, new)[0].lines[1].text, "b");
    }
}
