//! A reply that repeats itself: small models fall into a loop (one line, thousands of times) and
//! would write until the answer's limit, at a few tokens a second (issue 34). The loop is seen
//! as the answer streams, the request is stopped, and the answer is kept up to its first copy.

/// A unit is repeated at most this long (bytes): a line, or a block of a few dozen (seen: 22
/// lines of `words = words.replace(…)`, ~700 bytes, over and over until the time ran out).
const MAX_PERIOD: usize = 2_000;
/// At least this many bytes of the end are repeats...
const MIN_SPAN: usize = 600;
/// ...and the unit is said again at least this many times after its first copy — a line six
/// times, a block of more than [`SHORT_PERIOD`] bytes twice (a block of code said three times in
/// a row, byte for byte, is a loop, and waiting for seven copies would cost minutes at a few
/// tokens a second).
fn min_repeats(period: usize) -> usize {
    if period <= SHORT_PERIOD {
        6
    } else {
        2
    }
}
/// See [`min_repeats`].
const SHORT_PERIOD: usize = 200;

/// Where `text`'s closing loop begins to repeat, when its end is one unit said over and over:
/// the byte offset just after the unit's first copy (on a character boundary). `None` when the
/// end does not repeat. Cheap enough for every delta: a text that does not repeat differs from
/// itself at most `MAX_PERIOD` bytes back within a few comparisons.
pub fn looping(text: &str) -> Option<usize> {
    let b = text.as_bytes();
    let n = b.len();
    (1..=MAX_PERIOD).find_map(|p| {
        let need = MIN_SPAN.max(p * min_repeats(p));
        if n < need + p || (n - need..n).rev().any(|i| b[i] != b[i - p]) {
            return None;
        }
        // Back to where the repeats begin; the first copy is kept.
        let mut start = n - need;
        while start > p && b[start - 1] == b[start - 1 - p] {
            start -= 1;
        }
        // To the end of that line, if it ends within one unit.
        let mut end = match b[start..(start + p).min(n)]
            .iter()
            .position(|&c| c == b'\n')
        {
            Some(at) if b[start - 1] != b'\n' => start + at + 1,
            _ => start,
        };
        while !text.is_char_boundary(end) {
            end += 1;
        }
        Some(end)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_said_over_and_over_is_a_loop_and_its_first_copy_is_kept() {
        let start = "Here is the plan.\n";
        let line = "    return year % 4 == 0 and year % 100 != 0 or year % 400 == 0\n";
        let text = format!("{start}{}", line.repeat(40));
        let end = looping(&text).expect("a loop");
        assert_eq!(&text[..end], format!("{start}{line}"));
        // A unit of several lines, and of one character.
        let lines = "a = 1\nb = 2\nc = 3\n".repeat(60);
        assert!(looping(&lines).is_some());
        assert_eq!(looping(&format!("x{}", "!".repeat(700))), Some(2));
        assert_eq!(looping(&format!("x{}", "!\n".repeat(700))), Some(3));
        // A block of 22 lines (recorded from Qwen2.5-Coder-1.5B on acronym), said three times.
        let block: String = [
            ";", ",", ".", "!", "?", ":", "+", "=", "<", ">", "~", "|", "\\", "/", "'", "\"", "(",
            ")", "[", "]", "{", "}",
        ]
        .iter()
        .map(|c| format!("    words = words.replace(\"{c}\", \"\")\n"))
        .collect();
        let start = "def abbreviate(words):\n";
        let text = format!("{start}{}", block.repeat(3));
        assert!(block.len() > SHORT_PERIOD, "{}", block.len());
        let end = looping(&text).expect("a loop");
        assert_eq!(&text[..end], format!("{start}{block}"));
        assert_eq!(looping(&format!("{start}{}", block.repeat(2))), None);
        // CJK text cut on a character boundary.
        let cjk = format!("开始{}", "修复错误。".repeat(100));
        let end = looping(&cjk).unwrap();
        assert!(cjk.is_char_boundary(end));
    }

    #[test]
    fn ordinary_answers_and_code_are_not_loops() {
        let code: String = (0..200)
            .map(|i| format!("    assert leap_year({}) is {}\n", 1900 + i, i % 4 == 0))
            .collect();
        assert_eq!(looping(&code), None);
        let table = format!("| a | b |\n|{}|\n| 1 | 2 |\n", "-".repeat(300));
        assert_eq!(looping(&table), None);
        // A few repeats are a list, not a loop.
        assert_eq!(looping(&"- item\n".repeat(5)), None);
        assert_eq!(looping(""), None);
    }
}
