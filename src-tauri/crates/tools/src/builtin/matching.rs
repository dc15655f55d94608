//! Finding the text an edit replaces. Exact first; when that fails, a careful fallback chain —
//! line endings, trailing whitespace, indentation — that still requires exactly one match. When
//! nothing matches, the closest lines are shown so the model can re-read and retry.

/// Where `old` was found in a text, and what to put there instead.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Found {
    /// Byte ranges to replace (several only with `replace_all`).
    pub ranges: Vec<std::ops::Range<usize>>,
    /// The replacement, adjusted to the match (line endings, indentation).
    pub replacement: String,
    /// How it matched, when not exactly.
    pub how: Option<&'static str>,
}

/// Why no replacement could be made.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Miss {
    /// Found at several places (1-based line numbers).
    Ambiguous { lines: Vec<usize> },
    /// Not found; the closest lines (first line number, text) if any are similar.
    NotFound { closest: Option<(usize, String)> },
}

/// Finds `old` in `text`.
pub(crate) fn find(text: &str, old: &str, new: &str, replace_all: bool) -> Result<Found, Miss> {
    // 1. Exact.
    match exact(text, old, replace_all) {
        Ok(ranges) => {
            return Ok(Found {
                ranges,
                replacement: new.to_string(),
                how: None,
            })
        }
        Err(Some(miss)) => return Err(miss),
        Err(None) => {}
    }
    // 2. The file uses CRLF and the model wrote LF.
    if text.contains("\r\n") && !old.contains("\r\n") {
        let crlf = |s: &str| s.replace("\r\n", "\n").replace('\n', "\r\n");
        match exact(text, &crlf(old), replace_all) {
            Ok(ranges) => {
                return Ok(Found {
                    ranges,
                    replacement: crlf(new),
                    how: Some("with CRLF line endings"),
                })
            }
            Err(Some(miss)) => return Err(miss),
            Err(None) => {}
        }
    }
    // 3. Line by line, ignoring trailing whitespace; 4. ignoring indentation too.
    for flexible_indent in [false, true] {
        if let Some(found) = by_lines(text, old, new, flexible_indent)? {
            return Ok(found);
        }
    }
    Err(Miss::NotFound {
        closest: closest(text, old),
    })
}

fn line_of(text: &str, byte: usize) -> usize {
    text[..byte].bytes().filter(|b| *b == b'\n').count() + 1
}

/// `Err(None)`: no match; `Err(Some)`: ambiguous.
fn exact(
    text: &str,
    old: &str,
    replace_all: bool,
) -> Result<Vec<std::ops::Range<usize>>, Option<Miss>> {
    if old.is_empty() {
        return Err(None);
    }
    let ranges: Vec<_> = text
        .match_indices(old)
        .map(|(at, m)| at..at + m.len())
        .collect();
    match ranges.len() {
        0 => Err(None),
        1 => Ok(ranges),
        _ if replace_all => Ok(ranges),
        _ => Err(Some(Miss::Ambiguous {
            lines: ranges.iter().map(|r| line_of(text, r.start)).collect(),
        })),
    }
}

/// Lines of `text` with their byte ranges (line ending excluded).
fn lines_with_ranges(text: &str) -> Vec<(std::ops::Range<usize>, &str)> {
    let mut out = Vec::new();
    let mut start = 0;
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches('\n').trim_end_matches('\r');
        out.push((start..start + body.len(), body));
        start += line.len();
    }
    out
}

fn indent_of(line: &str) -> &str {
    &line[..line.len() - line.trim_start().len()]
}

/// Matches `old` line by line. With `flexible_indent`, leading whitespace may differ by a common
/// amount, and the replacement is re-indented by the same amount.
fn by_lines(
    text: &str,
    old: &str,
    new: &str,
    flexible_indent: bool,
) -> Result<Option<Found>, Miss> {
    let old_lines: Vec<&str> = old.trim_end_matches('\n').lines().collect();
    if old_lines.iter().all(|l| l.trim().is_empty()) {
        return Ok(None);
    }
    let lines = lines_with_ranges(text);
    if old_lines.len() > lines.len() {
        return Ok(None);
    }
    let same = |a: &str, b: &str| {
        if flexible_indent {
            a.trim() == b.trim()
        } else {
            a.trim_end() == b.trim_end()
        }
    };
    let starts: Vec<usize> = (0..=lines.len() - old_lines.len())
        .filter(|&i| {
            old_lines
                .iter()
                .enumerate()
                .all(|(j, o)| same(lines[i + j].1, o))
        })
        .collect();
    let start = match starts.as_slice() {
        [] => return Ok(None),
        [one] => *one,
        many => {
            return Err(Miss::Ambiguous {
                lines: many.iter().map(|i| i + 1).collect(),
            })
        }
    };
    let end = start + old_lines.len() - 1;
    let range = lines[start].0.start..lines[end].0.end;
    let eol = if text[lines[start].0.end..].starts_with("\r\n") {
        "\r\n"
    } else {
        "\n"
    };
    let mut new_lines: Vec<String> = new
        .trim_end_matches('\n')
        .lines()
        .map(String::from)
        .collect();
    if flexible_indent {
        let first = old_lines
            .iter()
            .position(|l| !l.trim().is_empty())
            .unwrap_or(0);
        let have = indent_of(lines[start + first].1);
        let wrote = indent_of(old_lines[first]);
        new_lines = new_lines
            .into_iter()
            .map(|l| {
                if l.trim().is_empty() {
                    l
                } else if let Some(rest) = l.strip_prefix(wrote) {
                    format!("{have}{rest}")
                } else {
                    format!("{have}{}", l.trim_start())
                }
            })
            .collect();
    }
    Ok(Some(Found {
        ranges: vec![range],
        replacement: new_lines.join(eol),
        how: Some(if flexible_indent {
            "ignoring indentation"
        } else {
            "ignoring trailing whitespace"
        }),
    }))
}

/// The lines of `text` most like `old` (by the first non-blank line of `old`), if any are close.
fn closest(text: &str, old: &str) -> Option<(usize, String)> {
    let want = old.lines().find(|l| !l.trim().is_empty())?.trim();
    let span = old.lines().count().clamp(1, 12);
    let lines: Vec<&str> = text.lines().collect();
    let mut best: Option<(f32, usize)> = None;
    for (i, line) in lines.iter().enumerate().take(50_000) {
        let line = line.trim();
        if line.is_empty() || line.len() > want.len() * 3 + 20 {
            continue;
        }
        let score = similar::TextDiff::from_chars(want, line).ratio();
        if best.is_none_or(|(s, _)| score > s) {
            best = Some((score, i));
        }
    }
    let (score, i) = best?;
    (score >= 0.6).then(|| (i + 1, lines[i..(i + span).min(lines.len())].join("\n")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apply(text: &str, found: &Found) -> String {
        let mut out = text.to_string();
        for r in found.ranges.iter().rev() {
            out.replace_range(r.clone(), &found.replacement);
        }
        out
    }

    #[test]
    fn exact_unique_ambiguous_and_missing() {
        let text = "fn a() {}\nfn b() {}\nfn a() {}\n";
        let f = find(text, "fn b() {}", "fn bee() {}", false).unwrap();
        assert_eq!(apply(text, &f), "fn a() {}\nfn bee() {}\nfn a() {}\n");
        assert_eq!(
            find(text, "fn a() {}", "x", false),
            Err(Miss::Ambiguous { lines: vec![1, 3] })
        );
        let all = find(text, "fn a() {}", "x", true).unwrap();
        assert_eq!(apply(text, &all), "x\nfn b() {}\nx\n");
        match find(text, "fn c() {}", "x", false) {
            Err(Miss::NotFound {
                closest: Some((1, _)),
            }) => {}
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            find(text, "completely different", "x", false),
            Err(Miss::NotFound { closest: None })
        ));
    }

    #[test]
    fn crlf_files_keep_their_line_endings() {
        let text = "one\r\ntwo\r\nthree\r\n";
        let f = find(text, "two\nthree", "2\n3", false).unwrap();
        assert_eq!(apply(text, &f), "one\r\n2\r\n3\r\n");
        assert_eq!(f.how, Some("with CRLF line endings"));
    }

    #[test]
    fn whitespace_and_indentation_fallbacks_still_need_one_match() {
        let text = "fn main() {\n    if x {  \n        go();\n    }\n}\n";
        let f = find(
            text,
            "if x {\n    go();\n}",
            "if y {\n    stop();\n}",
            false,
        )
        .unwrap();
        assert_eq!(f.how, Some("ignoring indentation"));
        assert_eq!(
            apply(text, &f),
            "fn main() {\n    if y {\n        stop();\n    }\n}\n"
        );
        let twice = "  a\n  b\n    a\n    b\n";
        assert!(matches!(
            find(twice, "a\nb", "c", false),
            Err(Miss::Ambiguous { .. })
        ));
    }
}
