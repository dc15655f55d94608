//! What a test run says failed, in words a small model follows. pytest writes each failure as a
//! block — the test's source with `>` at the failing line, `E` lines with the error, frames,
//! separators — about ten lines for one fact. Shown those blocks whole, Qwen2.5-Coder-1.5B wrote
//! the same wrong file again and again (recorded on isogram: `AssertionError: True is not False`
//! under `self.assertIs(is_isogram("Alphabet"), False)`, four times, its code unchanged); the fact
//! it needs is "`is_isogram("Alphabet")` must return False; your code returns True". The tool
//! panel keeps the whole output.

/// `output` with pytest's failure blocks put as one line each — what the test called, what it
/// expects and what the code gave, when the assertion says so, else the failing line and its
/// error — followed by the run's summary line (so the failures can still be counted); `None`
/// when `output` is not pytest's or has no failure block.
pub fn in_words(output: &str) -> Option<String> {
    let lines: Vec<&str> = output.lines().collect();
    let start = lines
        .iter()
        .position(|l| is_banner(l, "FAILURES") || is_banner(l, "ERRORS"))?;
    let mut said: Vec<String> = Vec::new();
    let mut block: Vec<&str> = Vec::new();
    let mut blocks = 0;
    let mut flush = |block: &mut Vec<&str>, said: &mut Vec<String>| {
        if !block.is_empty() {
            blocks += 1;
            if said.len() < MAX_FAILURES {
                if let Some(line) = one_failure(block) {
                    said.push(line);
                }
            }
            block.clear();
        }
    };
    for line in &lines[start + 1..] {
        if is_banner(line, "short test summary info") || is_final_summary(line) {
            break;
        }
        if is_banner(line, "FAILURES") || is_banner(line, "ERRORS") || is_block_header(line) {
            flush(&mut block, &mut said);
            continue;
        }
        block.push(line);
    }
    flush(&mut block, &mut said);
    if said.is_empty() {
        return None;
    }
    let summary = lines.iter().rev().find(|l| is_final_summary(l))?;
    let mut out = String::from("These tests fail:\n");
    for line in &said {
        out.push_str(&format!("- {line}\n"));
    }
    if blocks > said.len() {
        out.push_str(&format!("- and {} more\n", blocks - said.len()));
    }
    out.push_str(summary.trim_matches(|c: char| c == '=' || c.is_whitespace()));
    out.push('\n');
    Some(out)
}

/// At most this many failures are put in words; the rest are counted.
const MAX_FAILURES: usize = 8;

/// `==== NAME ====`.
fn is_banner(line: &str, name: &str) -> bool {
    line.starts_with('=') && line.trim_matches(|c: char| c == '=' || c == ' ') == name
}

/// `____ Test.test_name ____` (one failure's block begins).
fn is_block_header(line: &str) -> bool {
    line.starts_with('_') && line.ends_with('_') && line.trim_matches('_').trim() != ""
}

/// pytest's last line: `4 failed, 10 passed in 0.06s` (`====` around it without `-q`).
fn is_final_summary(line: &str) -> bool {
    let words = line.trim_matches(|c: char| c == '=' || c.is_whitespace());
    let counts = words.split(" in ").next().unwrap_or("");
    (words.contains(" failed") || words.contains(" error"))
        && words.contains(" in ")
        && counts.split(", ").all(|part| {
            part.split_once(' ')
                .is_some_and(|(n, _)| n.parse::<u64>().is_ok())
        })
}

/// One failure's block as one line.
fn one_failure(block: &[&str]) -> Option<String> {
    // The failing statement: its `>` line and, when it goes over several, the lines up to the
    // error's (pytest shows them indented, without the mark).
    let failing = block.iter().position(|l| l.starts_with('>')).map(|at| {
        let first = block[at][1..].trim();
        let rest: Vec<&str> = block[at + 1..]
            .iter()
            .take_while(|l| !l.starts_with("E ") && !l.trim().is_empty())
            .map(|l| l.trim())
            .collect();
        if rest.is_empty() {
            return first.to_string();
        }
        // (Joined as one line, without the breaks' spaces and trailing commas.)
        let mut joined = [first]
            .into_iter()
            .chain(rest)
            .collect::<Vec<_>>()
            .join(" ");
        for (from, to) in [
            ("( ", "("),
            ("{ ", "{"),
            ("[ ", "["),
            (", )", ")"),
            (", }", "}"),
            (", ]", "]"),
            (" )", ")"),
        ] {
            joined = joined.replace(from, to);
        }
        joined
    });
    let failing = failing.as_deref();
    let error = block
        .iter()
        .find_map(|l| l.strip_prefix("E "))
        .map(str::trim)
        .filter(|e| !e.is_empty());
    match (failing, error) {
        (Some(failing), Some(error)) => Some(
            expected_and_got(failing, error, block)
                .unwrap_or_else(|| format!("`{failing}` fails: {error}")),
        ),
        // (No test line: an error collecting the tests — the error's last line, where it is.)
        (None, Some(first)) => {
            let last = block
                .iter()
                .rev()
                .find_map(|l| l.strip_prefix("E "))
                .map(str::trim)
                .unwrap_or(first);
            Some(match last == first {
                true => first.to_string(),
                false => format!("{last} ({first})"),
            })
        }
        (Some(failing), None) => Some(format!("`{failing}` fails")),
        (None, None) => None,
    }
}

/// `self.assertIs(CALL, EXPECTED)` / `assertEqual` that failed with `AssertionError: GOT is
/// not EXPECTED` (or `GOT != EXPECTED`): "`CALL` must return EXPECTED; your code returns GOT".
fn expected_and_got(failing: &str, error: &str, block: &[&str]) -> Option<String> {
    let inner = ["self.assertIs(", "self.assertEqual(", "self.assertEquals("]
        .iter()
        .find_map(|start| failing.strip_prefix(start))?
        .strip_suffix(')')?;
    let args = top_level_args(inner);
    let [call, expected, ..] = args.as_slice() else {
        return None;
    };
    let said = error.strip_prefix("AssertionError: ")?;
    let got = said
        .split_once(" is not ")
        .or_else(|| said.split_once(" != "))
        .map(|(got, _)| got.to_string())?;
    // (unittest shortens long sides — `{'joe': 1, [38 chars]': 1}` —; its diff below has them
    // whole.)
    let got = match got.contains(" chars]") {
        true => diffed_first(block).unwrap_or(got),
        false => got,
    };
    let mut said = format!("`{call}` must return {expected}; your code returns {got}");
    if let Some(difference) = difference(expected, &got) {
        said.push_str(&format!(" — {difference}"));
    }
    Some(said)
}

/// The first side of a failed `assertEqual` whole, read back from the diff unittest writes
/// under its message (`- ` and `  ` lines, after pytest's `E` and its indent).
fn diffed_first(block: &[&str]) -> Option<String> {
    let mut first = String::new();
    let mut any = false;
    for line in block
        .iter()
        .skip_while(|l| !l.starts_with("E       AssertionError"))
        .skip(1)
    {
        let Some(diff) = line.strip_prefix("E       ") else {
            break;
        };
        if let Some(text) = diff.strip_prefix("- ") {
            any = true;
            first.push_str(text);
        } else if let Some(text) = diff.strip_prefix("  ") {
            first.push_str(text);
        }
    }
    any.then_some(first)
}

/// What differs between what a test expected and what came, when both are Python strings or
/// dicts: where two strings part, or a dict's keys missing, not wanted, or with another value.
/// `None` when neither (or a side the test runner shortened), or when nothing differs.
fn difference(expected: &str, got: &str) -> Option<String> {
    if let (Some(e), Some(g)) = (py_string(expected), py_string(got)) {
        let at = e.chars().zip(g.chars()).take_while(|(a, b)| a == b).count();
        let from = |s: &str| s.chars().skip(at).take(12).collect::<String>();
        let (e_more, g_more) = (e.chars().count() > at, g.chars().count() > at);
        return match (e_more, g_more) {
            (true, true) => Some(format!(
                "they part at character {}: {:?} expected there, yours has {:?}",
                at + 1,
                from(&e),
                from(&g)
            )),
            (true, false) => Some(format!("yours ends too soon: {:?} is missing", from(&e))),
            (false, true) => Some(format!("yours has {:?} too many at its end", from(&g))),
            (false, false) => None,
        };
    }
    let (e, g) = (py_dict(expected)?, py_dict(got)?);
    let find = |items: &[DictItem], key: &str| items.iter().find(|i| i.key == key).cloned();
    let listed = |items: Vec<String>| {
        let more = items.len().saturating_sub(5);
        let mut text = items.into_iter().take(5).collect::<Vec<_>>().join(", ");
        if more > 0 {
            text.push_str(&format!(" and {more} more"));
        }
        text
    };
    let missing: Vec<String> = e
        .iter()
        .filter(|i| find(&g, &i.key).is_none())
        .map(|i| format!("{}: {}", i.literal, i.value))
        .collect();
    let unwanted: Vec<String> = g
        .iter()
        .filter(|i| find(&e, &i.key).is_none())
        .map(|i| format!("{}: {}", i.literal, i.value))
        .collect();
    let other: Vec<String> = e
        .iter()
        .filter_map(|i| {
            let mine = find(&g, &i.key)?;
            (mine.value != i.value)
                .then(|| format!("{}: {} ({} expected)", mine.literal, mine.value, i.value))
        })
        .collect();
    let mut parts = Vec::new();
    if !missing.is_empty() {
        parts.push(format!("missing {}", listed(missing)));
    }
    if !unwanted.is_empty() {
        parts.push(format!("not wanted {}", listed(unwanted)));
    }
    if !other.is_empty() {
        parts.push(format!("other values {}", listed(other)));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// One `key: value` of a Python dict literal: the key as written and unquoted, the value as
/// written.
#[derive(Clone)]
struct DictItem {
    literal: String,
    key: String,
    value: String,
}

/// The items of a Python dict literal whose keys are strings; `None` for anything else.
fn py_dict(text: &str) -> Option<Vec<DictItem>> {
    let inner = text.trim().strip_prefix('{')?.strip_suffix('}')?;
    top_level_args(inner)
        .into_iter()
        .map(|item| {
            let (literal, value) = split_key(&item)?;
            Some(DictItem {
                key: py_string(&literal)?,
                literal,
                value,
            })
        })
        .collect()
}

/// `'key': value` split at the colon after the quoted key.
fn split_key(item: &str) -> Option<(String, String)> {
    let item = item.trim();
    let quote = item.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    let mut escaped = false;
    for (at, c) in item.char_indices().skip(1) {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == quote {
            let (literal, rest) = item.split_at(at + 1);
            let value = rest.trim_start().strip_prefix(':')?.trim();
            return Some((literal.to_string(), value.to_string()));
        }
    }
    None
}

/// A Python string literal's text (quoted with ' or ", the usual escapes); `None` for anything
/// else.
fn py_string(text: &str) -> Option<String> {
    let text = text.trim();
    let quote = text.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    let body = text.strip_prefix(quote)?.strip_suffix(quote)?;
    let mut out = String::new();
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.push(match chars.next()? {
                'n' => '\n',
                't' => '\t',
                other => other,
            }),
            c if c == quote => return None, // (two literals, or not one)
            c => out.push(c),
        }
    }
    Some(out)
}

/// A call's arguments split at its top-level commas (not inside brackets or strings).
fn top_level_args(text: &str) -> Vec<String> {
    let mut args = Vec::new();
    let (mut depth, mut quote, mut escaped) = (0i32, None::<char>, false);
    let mut current = String::new();
    for c in text.chars() {
        match quote {
            Some(q) => {
                if escaped {
                    escaped = false;
                } else if c == '\\' {
                    escaped = true;
                } else if c == q {
                    quote = None;
                }
            }
            None => match c {
                '\'' | '"' => quote = Some(c),
                '(' | '[' | '{' => depth += 1,
                ')' | ']' | '}' => depth -= 1,
                ',' if depth == 0 => {
                    args.push(current.trim().to_string());
                    current.clear();
                    continue;
                }
                _ => {}
            },
        }
        current.push(c);
    }
    if !current.trim().is_empty() {
        args.push(current.trim().to_string());
    }
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Recorded: Qwen2.5-Coder-1.5B's isogram against Exercism's tests (pytest 8.3.5, `-q`).
    const ISOGRAM: &str =
        "....F..F..FF..                                                           [100%]
=================================== FAILURES ===================================
_______________ IsogramTest.test_isogram_with_duplicated_hyphen ________________

self = <isogram_test.IsogramTest testMethod=test_isogram_with_duplicated_hyphen>

    def test_isogram_with_duplicated_hyphen(self):
>       self.assertIs(is_isogram(\"six-year-old\"), True)
E       AssertionError: False is not True

isogram_test.py:41: AssertionError
________ IsogramTest.test_word_with_duplicated_character_in_mixed_case _________

self = <isogram_test.IsogramTest testMethod=test_word_with_duplicated_character_in_mixed_case>

    def test_word_with_duplicated_character_in_mixed_case(self):
>       self.assertIs(is_isogram(\"Alphabet\"), False)
E       AssertionError: True is not False

isogram_test.py:29: AssertionError
=========================== short test summary info ============================
FAILED isogram_test.py::IsogramTest::test_isogram_with_duplicated_hyphen - As...
FAILED isogram_test.py::IsogramTest::test_word_with_duplicated_character_in_mixed_case
2 failed, 12 passed in 0.06s
";

    #[test]
    fn a_failed_assertion_says_what_was_expected_and_what_came() {
        let said = in_words(ISOGRAM).unwrap();
        assert_eq!(
            said,
            "These tests fail:\n\
             - `is_isogram(\"six-year-old\")` must return True; your code returns False\n\
             - `is_isogram(\"Alphabet\")` must return False; your code returns True\n\
             2 failed, 12 passed in 0.06s\n"
        );
        // Still counted as the check's own summary would be.
        assert_eq!(crate::focus::score(&said), Some(2));
    }

    /// Recorded (pytest 8.3.5, `-q`): a first try at acronym and word-count, as a small model
    /// writes it.
    const ACRONYM: &str = include_str!("../tests/fixtures/pytest/acronym.out");
    const WORD_COUNT: &str = include_str!("../tests/fixtures/pytest/word_count.out");

    #[test]
    fn where_a_string_or_a_dict_differs_is_said() {
        assert_eq!(
            in_words(ACRONYM).unwrap(),
            "These tests fail:\n\
             - `abbreviate(\"The Road _Not_ Taken\")` must return \"TRNT\"; your code returns 'TR_T' \
             — they part at character 3: \"NT\" expected there, yours has \"_T\"\n\
             1 failed, 8 passed in 0.02s\n"
        );
        let said = in_words(WORD_COUNT).unwrap();
        let lines: Vec<&str> = said.lines().collect();
        assert_eq!(lines.len(), 5, "{said}");
        // A statement over several lines is read whole.
        assert_eq!(
            lines[1],
            "- `count_words(\",\\n,one,\\n ,two \\n 'three'\")` must return {\"one\": 1, \"two\": 1, \"three\": 1}; \
             your code returns {',': 1, ',one,': 1, ',two': 1, 'three': 1} \
             — missing \"one\": 1, \"two\": 1; not wanted ',': 1, ',one,': 1, ',two': 1"
        );
        assert!(
            lines[2].ends_with("— missing \"1\": 1; not wanted 'testing,': 1, '1,': 1; other values 'testing': 1 (2 expected)"),
            "{said}"
        );
        // A side unittest shortened is read whole from its diff.
        assert!(
            lines[3].contains("your code returns {'a.': 1, 'and': 1, 'app,': 1, 'apple': 1, 'between': 1, 'can': 1, 'joe': 1, 't': 1, 'tell': 1}")
                && lines[3].ends_with("— missing \"can't\": 1, \"app\": 1, \"a\": 1; not wanted 'a.': 1, 'app,': 1, 'can': 1, 't': 1"),
            "{said}"
        );
        assert_eq!(lines[4], "10 failed, 7 passed in 0.05s");
        assert_eq!(crate::focus::score(&said), Some(10));
    }

    #[test]
    fn other_failures_keep_their_line_and_error_and_the_rest_are_counted() {
        let mut output = String::from(
            "F\n=================================== FAILURES ===================================\n",
        );
        for i in 0..10 {
            output.push_str(&format!(
                "___ test_{i} ___\n\n    def test_{i}():\n>       assert abbreviate(\"a-b\") == {quoted}\nE       AssertionError: assert 'A' == 'AB'\nE         - AB\n\nacronym_test.py:9: AssertionError\n",
                quoted = "\"AB, C\""
            ));
        }
        output.push_str("___ test_error ___\n\n    def f():\n>       return x[0]\nE       IndexError: list index out of range\n");
        output.push_str(
            "========================= 11 failed, 1 passed in 0.10s =========================\n",
        );
        let said = in_words(&output).unwrap();
        assert!(
            said.starts_with("These tests fail:\n- `assert abbreviate(\"a-b\") == \"AB, C\"` fails: AssertionError: assert 'A' == 'AB'\n"),
            "{said}"
        );
        assert_eq!(said.matches("\n- `assert").count(), 8, "{said}");
        assert!(
            said.ends_with("- and 3 more\n11 failed, 1 passed in 0.10s\n"),
            "{said}"
        );
    }

    #[test]
    fn a_collection_error_and_other_outputs() {
        let collecting = "\n==================================== ERRORS ====================================\n_______________________ ERROR collecting leap_test.py ________________________\nE     File \"leap.py\", line 2\nE       return year %\nE                    ^\nE   SyntaxError: invalid syntax\n=========================== short test summary info ============================\nERROR leap_test.py\n1 error in 0.05s\n";
        assert_eq!(
            in_words(collecting).unwrap(),
            "These tests fail:\n- SyntaxError: invalid syntax (File \"leap.py\", line 2)\n1 error in 0.05s\n"
        );
        assert_eq!(in_words("all good\n3 passed in 0.01s\n"), None);
        assert_eq!(
            in_words("cargo test output\ntest result: FAILED. 1 passed; 2 failed"),
            None
        );
        assert_eq!(
            top_level_args("f(\"a, b\", [1, 2]), 'x,y', msg=None"),
            ["f(\"a, b\", [1, 2])", "'x,y'", "msg=None"]
        );
    }
}
