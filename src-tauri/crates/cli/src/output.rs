//! Printing: JSON for scripts, aligned columns for people.

use serde::Serialize;

/// Pretty JSON with a trailing newline.
pub fn to_json(value: &impl Serialize) -> String {
    let mut s = serde_json::to_string_pretty(value).expect("records always serialize");
    s.push('\n');
    s
}

/// One line per extension file that could not be used, with why.
pub fn not_loaded(broken: &[codewright_extensions::Broken]) -> String {
    broken
        .iter()
        .map(|b| format!("Not loaded: {} — {}\n", b.path.display(), b.reason))
        .collect()
}

/// Left-aligned columns; the last column is not padded.
pub fn table(headers: &[&str], rows: impl Iterator<Item = Vec<String>>) -> String {
    let rows: Vec<Vec<String>> = rows.collect();
    let width = |col: usize| {
        rows.iter()
            .map(|r| r[col].chars().count())
            .chain([headers[col].len()])
            .max()
            .unwrap_or(0)
    };
    let widths: Vec<usize> = (0..headers.len()).map(width).collect();
    let mut out = String::new();
    let header_row: Vec<String> = headers.iter().map(|h| h.to_string()).collect();
    for row in std::iter::once(&header_row).chain(rows.iter()) {
        for (col, cell) in row.iter().enumerate() {
            if col + 1 == row.len() {
                out.push_str(cell);
            } else {
                out.push_str(cell);
                out.extend(std::iter::repeat_n(
                    ' ',
                    widths[col] - cell.chars().count() + 2,
                ));
            }
        }
        out.push('\n');
    }
    out
}
