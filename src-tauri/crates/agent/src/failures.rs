//! What a test run says failed, in words a small model follows. pytest writes each failure as a
//! block — the test's source with `>` at the failing line, `E` lines with the error, frames,
//! separators — about ten lines for one fact. Shown those blocks whole, Qwen2.5-Coder-1.5B wrote
//! the same wrong file again and again (recorded on isogram: `AssertionError: True is not False`
//! under `self.assertIs(is_isogram("Alphabet"), False)`, four times, its code unchanged); the fact
//! it needs is "`is_isogram("Alphabet")` must return False; your code returns True". unittest's
//! own runner (`python3 -m unittest`) is read the same way. The tool panel keeps the whole output.

use codewright_extensions::contained;
use std::path::Path;

/// `output` with pytest's or unittest's failure blocks put as one line each — what the test
/// called, what it expects and what the code gave, when the assertion says so, else the failing
/// line and its error — followed by the run's summary (so the failures can still be counted);
/// `None` when `output` is neither's or has no failure block. `root`: the folder the tests ran
/// in, where a statement unittest shows only the first line of is read whole from its file.
pub fn in_words(output: &str, root: &Path) -> Option<String> {
    let lines: Vec<&str> = output.lines().collect();
    let Some(start) = lines
        .iter()
        .position(|l| is_banner(l, "FAILURES") || is_banner(l, "ERRORS"))
    else {
        return unittest_in_words(&lines, root);
    };
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
    Some(listed(
        &said,
        blocks,
        summary.trim_matches(|c: char| c == '=' || c.is_whitespace()),
    ))
}

/// The failures said, how many there were in all, and the run's summary, as the model is sent them.
fn listed(said: &[String], blocks: usize, summary: &str) -> String {
    let mut out = String::from("These tests fail:\n");
    for line in said {
        out.push_str(&format!("- {line}\n"));
    }
    if blocks > said.len() {
        out.push_str(&format!("- and {} more\n", blocks - said.len()));
    }
    out.push_str(summary);
    out.push('\n');
    out
}

/// unittest's runner: each failure after a `====` line as `FAIL: test_x (module.Class.test_x)`
/// (or `ERROR:`), a `----` line, the traceback, the error and its diff; at the end a `----` line,
/// `Ran N tests in Ts` and `FAILED (failures=N)`.
fn unittest_in_words(lines: &[&str], root: &Path) -> Option<String> {
    let is_rule = |l: &str, c: char| l.len() >= 20 && l.chars().all(|x| x == c);
    let ran = lines
        .iter()
        .rposition(|l| l.starts_with("Ran ") && l.contains(" test"))?;
    let verdict = lines[ran + 1..]
        .iter()
        .find(|l| l.starts_with("FAILED ("))?;
    let mut said = Vec::new();
    let mut blocks = 0;
    let mut at = 0;
    while at < ran {
        let opens = is_rule(lines[at], '=')
            && lines
                .get(at + 1)
                .is_some_and(|l| l.starts_with("FAIL: ") || l.starts_with("ERROR: "));
        if !opens {
            at += 1;
            continue;
        }
        // Past the `FAIL:` line (and a test's docstring, when it has one) and its `----` rule.
        let body = (at + 2..ran)
            .find(|&i| is_rule(lines[i], '-'))
            .map_or(ran, |rule| rule + 1);
        let end = (body..ran)
            .find(|&i| is_rule(lines[i], '=') || (is_rule(lines[i], '-') && i + 1 == ran))
            .unwrap_or(ran);
        blocks += 1;
        if said.len() < MAX_FAILURES {
            if let Some(line) = one_unittest_failure(lines.get(body..end).unwrap_or(&[]), root) {
                said.push(line);
            }
        }
        at = end;
    }
    if said.is_empty() {
        return None;
    }
    Some(listed(&said, blocks, &format!("{}\n{verdict}", lines[ran])))
}

/// One unittest failure as one line: the test's own statement (the frame of the `test_…`
/// function, else the last one) and the error after the traceback.
fn one_unittest_failure(block: &[&str], root: &Path) -> Option<String> {
    // `  File "PATH", line N, in NAME`, its code on the next line (a syntax error's has no
    // `in`: the line it is on).
    let frames: Vec<(usize, &str, usize, &str)> = block
        .iter()
        .enumerate()
        .filter_map(|(i, l)| {
            let rest = l.strip_prefix("  File \"")?;
            let (path, rest) = rest.split_once("\", line ")?;
            let (number, name) = rest.split_once(", in ").unwrap_or((rest, ""));
            Some((i, path, number.parse().ok()?, name))
        })
        .collect();
    let &(last, last_path, last_number, last_name) = frames.last()?;
    // The error: the first line after the last frame that is not indented (its code and
    // Python's `^^^` marks are).
    let error_at = (last + 1..block.len()).find(|&i| {
        let l = block[i];
        !l.is_empty() && !l.starts_with(' ')
    })?;
    let error = block[error_at].trim();
    // Code that cannot be read: where, as Python says it in its last frame, which names no
    // function (the test's line only imports it).
    if last_name.is_empty()
        && ["SyntaxError", "IndentationError", "TabError"]
            .iter()
            .any(|kind| error.starts_with(kind))
    {
        let path = Path::new(last_path);
        let shown = path.strip_prefix(root).unwrap_or(path).display();
        return Some(format!("{error} (File \"{shown}\", line {last_number})"));
    }
    let (at, path, number, _) = frames
        .iter()
        .rev()
        .find(|(.., name)| name.starts_with("test"))
        .or(frames.last())?;
    let shown = block
        .get(at + 1)
        .filter(|l| l.starts_with("    "))
        .map(|l| l.trim());
    let failing = shown.map(|first| match balanced(first) {
        true => first.to_string(),
        // (Python shows the first line of a statement over several; the file has the rest.)
        false => statement_at(root, path, *number, first).unwrap_or_else(|| first.to_string()),
    });
    // (unittest shortens long sides; the diff under the message has the first whole.)
    let diffed = || diffed_first(block[error_at + 1..].iter().copied());
    Some(match failing {
        Some(failing) => expected_and_got(&failing, error, diffed)
            .unwrap_or_else(|| format!("`{failing}` fails: {error}")),
        None => error.to_string(),
    })
}

/// Whether `code`'s brackets all close (outside strings).
fn balanced(code: &str) -> bool {
    let (mut depth, mut quote, mut escaped) = (0i32, None::<char>, false);
    for c in code.chars() {
        match quote {
            Some(_) if escaped => escaped = false,
            Some(_) if c == '\\' => escaped = true,
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None => match c {
                '\'' | '"' => quote = Some(c),
                '(' | '[' | '{' => depth += 1,
                ')' | ']' | '}' => depth -= 1,
                _ => {}
            },
        }
    }
    depth <= 0
}

/// The statement that starts at line `number` of the file at `path` (as a traceback names it:
/// inside `root`, never outside it) with the line `first`, read until its brackets close — at
/// most 40 lines — and joined as one; `None` when the file has another line there (changed
/// since, or not the file the tests ran: a relative path from another folder).
fn statement_at(root: &Path, path: &str, number: usize, first: &str) -> Option<String> {
    // (A relative path is the folder's: the tests ran there.)
    let text = contained::read_text(root, &root.join(path), 1 << 20)
        .ok()??
        .text;
    let mut lines = text
        .lines()
        .skip(number.checked_sub(1)?)
        .take(40)
        .peekable();
    if lines.peek()?.trim() != first {
        return None;
    }
    let mut statement = Vec::new();
    for line in lines {
        statement.push(line.trim());
        if balanced(&statement.join(" ")) {
            return Some(joined(&statement));
        }
    }
    None
}

/// The lines of one statement as one line, without the breaks' spaces and trailing commas.
fn joined(lines: &[&str]) -> String {
    let mut joined = lines.join(" ");
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
        joined(&[first].into_iter().chain(rest).collect::<Vec<_>>())
    });
    let failing = failing.as_deref();
    let error = block
        .iter()
        .find_map(|l| l.strip_prefix("E "))
        .map(str::trim)
        .filter(|e| !e.is_empty());
    match (failing, error) {
        (Some(failing), Some(error)) => {
            // (The diff under pytest's `E` lines, without their mark and indent.)
            let diffed = || {
                diffed_first(
                    block
                        .iter()
                        .skip_while(|l| !l.starts_with("E       AssertionError"))
                        .skip(1)
                        .map_while(|l| l.strip_prefix("E       ")),
                )
            };
            Some(
                expected_and_got(failing, error, diffed)
                    .unwrap_or_else(|| format!("`{failing}` fails: {error}")),
            )
        }
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
/// `diffed` reads the first side whole from the diff under the message, for a side the runner
/// shortened.
fn expected_and_got(
    failing: &str,
    error: &str,
    diffed: impl FnOnce() -> Option<String>,
) -> Option<String> {
    let inner = ["self.assertIs(", "self.assertEqual(", "self.assertEquals("]
        .iter()
        .find_map(|start| failing.strip_prefix(start))?
        .strip_suffix(')')?;
    let args = top_level_args(inner);
    let [call, expected, ..] = args.as_slice() else {
        return None;
    };
    let said = error.strip_prefix("AssertionError: ")?;
    // (A sequence's message names its kind first: `Lists differ: [1, 2] != [1, 3]`.)
    let said = said
        .split_once(" differ: ")
        .filter(|(kind, _)| !kind.contains(' '))
        .map_or(said, |(_, sides)| sides);
    let got = said
        .split_once(" is not ")
        .or_else(|| said.split_once(" != "))
        .map(|(got, _)| got.to_string())?;
    // (unittest shortens long sides — `{'joe': 1, [38 chars]': 1}` —; its diff below has them
    // whole.)
    let got = match got.contains(" chars]") {
        true => diffed().unwrap_or(got),
        false => got,
    };
    let mut said = format!("`{call}` must return {expected}; your code returns {got}");
    if let Some(difference) = difference(expected, &got) {
        said.push_str(&format!(" — {difference}"));
    }
    Some(said)
}

/// The first side of a failed `assertEqual` whole, read back from the diff unittest writes
/// under its message (its `- ` and `  ` lines), given the lines after the message.
fn diffed_first<'a>(diff: impl Iterator<Item = &'a str>) -> Option<String> {
    let mut first = String::new();
    let mut any = false;
    // (From its first line — a list's "First differing element 2:" and the elements come
    // before it — up to the first line that is not the diff's: a captured output may follow.)
    let marked = |l: &&str| ["- ", "+ ", "? ", "  "].iter().any(|p| l.starts_with(p));
    let diff_line = |l: &&str| l.is_empty() || marked(l);
    for diff in diff.skip_while(|l| !marked(l)).take_while(diff_line) {
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

    /// Read with no folder to read statements from.
    fn words(output: &str) -> Option<String> {
        in_words(output, Path::new("/no/such/folder"))
    }

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
        let said = words(ISOGRAM).unwrap();
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
            words(ACRONYM).unwrap(),
            "These tests fail:\n\
             - `abbreviate(\"The Road _Not_ Taken\")` must return \"TRNT\"; your code returns 'TR_T' \
             — they part at character 3: \"NT\" expected there, yours has \"_T\"\n\
             1 failed, 8 passed in 0.02s\n"
        );
        let said = words(WORD_COUNT).unwrap();
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
        let said = words(&output).unwrap();
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
            words(collecting).unwrap(),
            "These tests fail:\n- SyntaxError: invalid syntax (File \"leap.py\", line 2)\n1 error in 0.05s\n"
        );
        assert_eq!(words("all good\n3 passed in 0.01s\n"), None);
        assert_eq!(
            words("cargo test output\ntest result: FAILED. 1 passed; 2 failed"),
            None
        );
        assert_eq!(
            top_level_args("f(\"a, b\", [1, 2]), 'x,y', msg=None"),
            ["f(\"a, b\", [1, 2])", "'x,y'", "msg=None"]
        );
    }

    /// Recorded (Python 3.11's `python3 -m unittest -q`): a first try at each, as a small model
    /// writes it; `ROOT/` stands for the folder the tests ran in.
    const UNITTEST_ACRONYM: &str = include_str!("../tests/fixtures/unittest/acronym.out");
    const UNITTEST_WORD_COUNT: &str = include_str!("../tests/fixtures/unittest/word_count.out");
    const UNITTEST_LEAP: &str = include_str!("../tests/fixtures/unittest/leap_error.out");

    /// The folder the recorded tests ran in, with the exercise's tests, and the output as it was
    /// there.
    fn ran_in(output: &str, exercise: &str) -> (tempfile::TempDir, String) {
        let dir = tempfile::tempdir().unwrap();
        let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../tests/exercism");
        let module = exercise.replace('-', "_");
        std::fs::copy(
            tests.join(exercise).join(format!("{module}_test.py")),
            dir.path().join(format!("{module}_test.py")),
        )
        .unwrap();
        let root = format!("{}/", dir.path().display());
        let output = output.replace("ROOT/", &root);
        (dir, output)
    }

    #[test]
    fn unittests_failures_are_said_as_pytests_are() {
        let (dir, output) = ran_in(UNITTEST_ACRONYM, "acronym");
        let said = in_words(&output, dir.path()).unwrap();
        assert_eq!(
            said,
            "These tests fail:\n\
             - `abbreviate(\"Something - I made up from thin air\")` must return \"SIMUFTA\"; your code returns 'S-Imufta' \
             — they part at character 2: \"IMUFTA\" expected there, yours has \"-Imufta\"\n\
             - `abbreviate(\"Ruby on Rails\")` must return \"ROR\"; your code returns 'RoR' \
             — they part at character 2: \"OR\" expected there, yours has \"oR\"\n\
             - `abbreviate(\"Complementary metal-oxide semiconductor\")` must return \"CMOS\"; your code returns 'Cms' \
             — they part at character 2: \"MOS\" expected there, yours has \"ms\"\n\
             - `abbreviate(\"The Road _Not_ Taken\")` must return \"TRNT\"; your code returns 'TR_T' \
             — they part at character 3: \"NT\" expected there, yours has \"_T\"\n\
             Ran 9 tests in 0.001s\n\
             FAILED (failures=4)\n"
        );
        assert_eq!(crate::focus::score(&said), Some(4));
        // An error in the code under test: the test's own line, and the error.
        let (dir, output) = ran_in(UNITTEST_LEAP, "leap");
        let said = in_words(&output, dir.path()).unwrap();
        assert!(
            said.starts_with("These tests fail:\n- `self.assertIs(leap_year(1900), False)` fails: AttributeError: 'int' object has no attribute 'is_leap'\n"),
            "{said}"
        );
        assert!(
            said.ends_with("- and 1 more\nRan 9 tests in 0.001s\nFAILED (errors=9)\n"),
            "{said}"
        );
        // (An error counts as worse than any number of failures.)
        assert_eq!(crate::focus::score(&said), Some(9_000));
    }

    #[test]
    fn a_shortened_list_is_read_back_past_unittests_first_differing_element() {
        let block = "  File \"ROOT/x_test.py\", line 5, in test_x
    self.assertEqual(f(\"a\"), [1, 2, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16])
AssertionError: Lists differ: [1, 2, 3, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16] != [1, 2,[38 chars] 16]

First differing element 2:
3
4

- [1, 2, 3, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]
?        ^
+ [1, 2, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]
?        ^

Stdout:
- not the diff";
        let lines: Vec<&str> = block.lines().collect();
        let said = one_unittest_failure(&lines, Path::new("/no/such/folder")).unwrap();
        assert_eq!(
            said,
            "`f(\"a\")` must return [1, 2, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]; your code returns [1, 2, 3, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]"
        );
        // The got side as unittest shortened it is read back from the diff, and no further.
        let shortened: Vec<String> = lines
            .iter()
            .map(|l| l.replace("AssertionError: Lists differ: [1, 2, 3, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16] !=", "AssertionError: Lists differ: [1, 2, 3,[38 chars] 16] !="))
            .collect();
        let shortened: Vec<&str> = shortened.iter().map(String::as_str).collect();
        assert_eq!(
            one_unittest_failure(&shortened, Path::new("/no/such/folder")).unwrap(),
            said
        );
    }

    #[test]
    fn a_unittest_syntax_error_says_where_it_is() {
        let (dir, output) = ran_in(
            include_str!("../tests/fixtures/unittest/leap_syntax.out"),
            "leap",
        );
        assert_eq!(
            in_words(&output, dir.path()).unwrap(),
            "These tests fail:\n- SyntaxError: invalid syntax (File \"leap.py\", line 2)\nRan 1 test in 0.000s\nFAILED (errors=1)\n"
        );
    }

    #[test]
    fn a_unittest_statement_over_several_lines_is_read_from_its_file() {
        let (dir, output) = ran_in(UNITTEST_WORD_COUNT, "word-count");
        let said = in_words(&output, dir.path()).unwrap();
        let lines: Vec<&str> = said.lines().collect();
        // (Python shows `self.assertEqual(` alone; the file has the rest.)
        assert_eq!(
            lines[1],
            "- `count_words(\",\\n,one,\\n ,two \\n 'three'\")` must return {\"one\": 1, \"two\": 1, \"three\": 1}; \
             your code returns {',': 1, ',one,': 1, ',two': 1, \"'three'\": 1} \
             — missing \"one\": 1, \"two\": 1, \"three\": 1; not wanted ',': 1, ',one,': 1, ',two': 1, \"'three'\": 1",
            "{said}"
        );
        assert!(
            said.ends_with("- and 6 more\nRan 17 tests in 0.005s\nFAILED (failures=14)\n"),
            "{said}"
        );
        // A file changed since the run (another line there) is not read for it.
        let test = dir.path().join("word_count_test.py");
        let text = std::fs::read_to_string(&test).unwrap();
        std::fs::write(&test, format!("# a line more\n{text}")).unwrap();
        let said = in_words(&output, dir.path()).unwrap();
        assert!(
            said.lines()
                .nth(1)
                .unwrap()
                .starts_with("- `self.assertEqual(` fails: "),
            "{said}"
        );
        // Without the file (or outside the folder), the first line is what there is.
        let elsewhere = tempfile::tempdir().unwrap();
        let said = in_words(&output, elsewhere.path()).unwrap();
        assert!(
            said.lines()
                .nth(1)
                .unwrap()
                .starts_with("- `self.assertEqual(` fails: AssertionError: "),
            "{said}"
        );
    }
}
