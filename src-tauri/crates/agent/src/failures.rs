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
    let failing = block
        .iter()
        .find_map(|l| l.strip_prefix('>'))
        .map(str::trim);
    let error = block
        .iter()
        .find_map(|l| l.strip_prefix("E "))
        .map(str::trim)
        .filter(|e| !e.is_empty());
    match (failing, error) {
        (Some(failing), Some(error)) => Some(
            expected_and_got(failing, error)
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
fn expected_and_got(failing: &str, error: &str) -> Option<String> {
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
        .map(|(got, _)| got)?;
    Some(format!(
        "`{call}` must return {expected}; your code returns {got}"
    ))
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
