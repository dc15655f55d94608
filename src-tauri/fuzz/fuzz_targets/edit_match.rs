//! The edit matcher behind `edit_file`: how `old_string` is found in a file (exactly, then with
//! CRLF line endings, ignoring trailing whitespace, ignoring indentation), and the replacement
//! applied as `edit_file` applies it (last range first). Calls `codewright_tools::builtin::find_edit`,
//! a `#[doc(hidden)]` wrapper of the private `builtin::matching::find` (see README.md).
//! First byte: bit 0 is `replace_all`; the rest, as lossy UTF-8, is `text\0old\0new`.
//!
//! Checks that nothing panics and that the ranges found lie in the text, on char boundaries, in
//! order and apart.
#![no_main]

use codewright_tools::builtin::find_edit;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let input = String::from_utf8_lossy(rest);
    let mut fields = input.splitn(3, '\0');
    let text = fields.next().unwrap_or_default();
    let old = fields.next().unwrap_or_default();
    let new = fields.next().unwrap_or_default();

    let Some((ranges, replacement)) = find_edit(text, old, new, flags & 1 == 1) else {
        return;
    };
    assert!(!ranges.is_empty(), "a match without a range");
    let mut end = 0;
    for range in &ranges {
        assert!(
            end <= range.start && range.start <= range.end && range.end <= text.len(),
            "ranges {ranges:?} in a text of {} bytes",
            text.len()
        );
        assert!(text.is_char_boundary(range.start) && text.is_char_boundary(range.end));
        end = range.end;
    }
    let mut edited = text.to_string();
    for range in ranges.into_iter().rev() {
        edited.replace_range(range, &replacement);
    }
});
