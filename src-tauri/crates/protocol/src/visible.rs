//! Text from a model, a tool or a repository shown to a person who decides on it: every character
//! that could make it read as something else is shown escaped.
//!
//! A terminal obeys control characters (`\r` returns to the line's start and `ESC [2K` clears it,
//! so `touch ~/pwned # \r\x1b[2K  $ ls -la` reads as `$ ls -la`); a bidi override (U+202E) turns
//! `txt.exe` into `exe.txt`; a zero-width space hides a difference between two names. Each is
//! written as a visible escape (`\r`, `\x1b`, `\u{202e}`) instead, so what a person approves is
//! what runs.

use std::borrow::Cow;

/// Whether `c` changes how the text around it reads, or is invisible: C0 controls but new line
/// and tab, DEL, C1 controls, bidi embeddings, overrides, isolates and marks, zero-width
/// characters, line and paragraph separators, the byte-order mark, variation selectors and tag
/// characters, and the blank fillers (Hangul, Khmer, the grapheme joiner) that pass for nothing
/// in a name.
pub fn is_hidden(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{8}' | '\u{b}'..='\u{1f}' | '\u{7f}'..='\u{9f}'
        | '\u{ad}' | '\u{34f}' | '\u{61c}' | '\u{115f}' | '\u{1160}' | '\u{17b4}' | '\u{17b5}'
        | '\u{180e}' | '\u{3164}' | '\u{ffa0}'
        | '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2060}'..='\u{206f}'
        | '\u{fe00}'..='\u{fe0f}' | '\u{feff}' | '\u{fff9}'..='\u{fffb}'
        | '\u{e0000}'..='\u{e007f}' | '\u{e0100}'..='\u{e01ef}')
}

/// `text` with every [`is_hidden`] character escaped (`\r`, `\x1b`, `\u{202e}`); new lines and
/// tabs stay. Borrowed when there is nothing to escape.
pub fn escaped(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_hidden) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if !is_hidden(c) {
            out.push(c);
            continue;
        }
        match c {
            '\r' => out.push_str("\\r"),
            '\u{0}' => out.push_str("\\0"),
            c if (c as u32) < 0x80 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
        }
    }
    Cow::Owned(out)
}

/// [`escaped`] for a field of one line (a name, a path, a summary): new lines and tabs are
/// escaped too (`\n`, `\t`), so nothing in it can pass for another line of the screen.
pub fn one_line(text: &str) -> Cow<'_, str> {
    if !text.contains(['\n', '\t']) {
        return escaped(text);
    }
    Cow::Owned(escaped(text).replace('\n', "\\n").replace('\t', "\\t"))
}

/// Whether a terminal obeys `c` or it turns the text around it: controls (but new line and tab)
/// and bidi embeddings, overrides and isolates — the narrower set for text a person reads rather
/// than decides on (a model's answer keeps its emoji and its right-to-left marks).
pub fn is_control(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{8}' | '\u{b}'..='\u{1f}' | '\u{7f}'..='\u{9f}'
        | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `text` for a terminal, outside approvals: only [`is_control`] characters escaped.
pub fn terminal_safe(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_control) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(
        text.chars()
            .map(|c| {
                if is_control(c) {
                    escaped(c.encode_utf8(&mut [0; 4])).into_owned()
                } else {
                    c.to_string()
                }
            })
            .collect(),
    )
}

/// Whether `text` holds a character [`escaped`] would escape.
pub fn has_hidden(text: &str) -> bool {
    text.chars().any(is_hidden)
}

/// What an approval says when something it shows held hidden characters.
pub const HIDDEN_WARNING: &str = "Careful: this holds control or invisible characters, which can make text read as something else; each is shown as its escape (\\r, \\x1b, \\u{…}).";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spoofs_found_are_shown_for_what_they_are() {
        let spoof = "touch ~/pwned # \r\x1b[2K  $ ls -la";
        assert_eq!(escaped(spoof), "touch ~/pwned # \\r\\x1b[2K  $ ls -la");
        assert_eq!(escaped("evil\u{202e}txt.exe"), "evil\\u{202e}txt.exe");
        assert_eq!(escaped("a\u{200b}b\u{9b}c"), "a\\u{200b}b\\u{9b}c");
        assert_eq!(
            escaped("two\nlines\tand tabs, 汉字 é"),
            "two\nlines\tand tabs, 汉字 é"
        );
        assert!(matches!(escaped("plain"), Cow::Borrowed(_)));
        assert_eq!(one_line("a\n  $ ls\t\r"), "a\\n  $ ls\\t\\r");
        assert!(has_hidden("\u{feff}x") && !has_hidden("x\n"));
        assert!(has_hidden("\u{3164}") && has_hidden("a\u{115f}b"));
        // A model's answer keeps its emoji and marks; only what a terminal obeys is escaped.
        assert_eq!(
            terminal_safe("⚠\u{fe0f} 👨\u{200d}👩 \x1b]52;c;x\x07"),
            "⚠\u{fe0f} 👨\u{200d}👩 \\x1b]52;c;x\\x07"
        );
    }

    /// Every character: what [`escaped`] gives holds no control character (but new line and
    /// tab) and nothing invisible, and says the same of text with none.
    #[test]
    fn no_hidden_character_survives_escaping() {
        let mut all = String::new();
        for c in (0..=0x10ffffu32).filter_map(char::from_u32) {
            all.push(c);
            all.push('x');
        }
        let out = escaped(&all);
        assert!(!out.chars().any(is_hidden));
        assert!(!out
            .chars()
            .any(|c| c.is_control() && c != '\n' && c != '\t'));
        // Everything Unicode calls a format character that changes direction or hides is escaped.
        for c in [
            '\u{202a}', '\u{202b}', '\u{202c}', '\u{202d}', '\u{2066}', '\u{2067}', '\u{2068}',
            '\u{2069}', '\u{200e}', '\u{200f}',
        ] {
            assert!(is_hidden(c), "{c:?}");
        }
    }

    /// The window's copy of the rule (`visible` in `ui/js/format.js`) escapes exactly the same
    /// characters: its character class is read and compared over every code point.
    #[test]
    fn the_window_escapes_the_same_characters() {
        let js = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../ui/js/format.js"),
        )
        .unwrap();
        let class = js
            .split("const HIDDEN = /[")
            .nth(1)
            .and_then(|rest| rest.split("]/gu;").next())
            .expect("the HIDDEN character class in format.js");
        // `\uXXXX` or `\u{X…}`, alone or as `a-b`.
        let mut chars = Vec::new();
        let mut rest = class;
        while let Some(escape) = rest.strip_prefix("\\u") {
            let (hex, after) = match escape.strip_prefix('{') {
                Some(braced) => braced.split_once('}').unwrap(),
                None => escape.split_at(4),
            };
            chars.push(u32::from_str_radix(hex, 16).unwrap());
            rest = after;
            if let Some(after) = rest.strip_prefix('-') {
                rest = after;
                chars.push(u32::MAX); // a range marker
            }
        }
        assert!(rest.is_empty(), "unread: {rest}");
        let mut ranges = Vec::new();
        let mut i = 0;
        while i < chars.len() {
            if chars.get(i + 1) == Some(&u32::MAX) {
                ranges.push((chars[i], chars[i + 2]));
                i += 3;
            } else {
                ranges.push((chars[i], chars[i]));
                i += 1;
            }
        }
        for c in (0..=0x10ffffu32).filter_map(char::from_u32) {
            let js = ranges.iter().any(|(a, b)| (*a..=*b).contains(&(c as u32)));
            assert_eq!(js, is_hidden(c), "{c:?} (U+{:04X})", c as u32);
        }
    }
}
