//! A part of a Python file a small model wrote as if it were the whole file, merged into the
//! file by its top-level definitions (issue 34). Asked to fix one function of two, a small model
//! writes that function alone (recorded from Qwen2.5-Coder-1.5B on grains: `square` rewritten,
//! `total` left out); written as it is, the file would lose `total`. Merged, each `def` or
//! `class` it wrote replaces the one of the same name, a new one goes before the first it
//! replaces, and an import it needs is added after the file's own — everything else in the file
//! stays as it was. Only a part made of definitions and imports is merged: a statement of any
//! other kind at its top level (or a part the file shares no definition with) is not a part of
//! this file, and is left to the caller's refusal. A standard module such a model uses without
//! importing it is imported ([`with_imports`]).

/// One top-level piece of a Python file: a definition (with its decorators and the comments
/// right above it), an import, or anything else.
#[derive(Debug)]
struct Unit<'a> {
    kind: Kind<'a>,
    lines: Vec<&'a str>,
}

#[derive(Debug, PartialEq, Eq)]
enum Kind<'a> {
    /// `def name` / `async def name` / `class name`.
    Definition(&'a str),
    Import,
    /// Blank lines and comments between pieces.
    Trivia,
    Other,
}

/// `new` merged into `old` (a Python file's text), if `new` is a part of it as the module's doc
/// says: it defines at least one of `old`'s names, leaves out at least one, and holds nothing at
/// its top level but definitions, imports, comments and an import of the module itself
/// (`module`, the file's stem; dropped). `None` when it is not, or when merging changes nothing.
pub fn merged(old: &str, new: &str, module: &str) -> Option<String> {
    let (old_units, new_units) = (units(old), units(new));
    let names = |units: &[Unit<'_>]| -> Vec<String> {
        units
            .iter()
            .filter_map(|u| match u.kind {
                Kind::Definition(name) => Some(name.to_string()),
                _ => None,
            })
            .collect()
    };
    let (old_names, new_names) = (names(&old_units), names(&new_units));
    let shared = new_names.iter().any(|n| old_names.contains(n));
    let partial = old_names.iter().any(|n| !new_names.contains(n));
    let self_import = |u: &Unit<'_>| {
        let line = u.lines[0].trim();
        line.strip_prefix("from ")
            .and_then(|rest| rest.strip_prefix(module))
            .is_some_and(|rest| rest.starts_with(' '))
            || line == format!("import {module}")
    };
    let only_definitions = new_units.iter().all(|u| u.kind != Kind::Other);
    // A name written twice (a first try, then a "corrected" one) is not one clear part; nor is
    // a `from __future__` import, which must open the file.
    let twice = new_names
        .iter()
        .enumerate()
        .any(|(i, n)| new_names[..i].contains(n));
    let future = new_units
        .iter()
        .any(|u| u.kind == Kind::Import && u.lines[0].starts_with("from __future__"));
    if !shared || !partial || !only_definitions || twice || future {
        return None;
    }
    // A class written with some of its methods is an excerpt of it, not its new version.
    let methods_lost = old_units.iter().any(|old| {
        let Kind::Definition(name) = old.kind else {
            return false;
        };
        let Some(new) = new_units.iter().find(|u| u.kind == Kind::Definition(name)) else {
            return false;
        };
        let kept = methods(&new.lines);
        methods(&old.lines).iter().any(|m| !kept.contains(m))
    });
    if methods_lost {
        return None;
    }
    // A definition much shorter than the one it would replace is an excerpt of it (three
    // lines of a test class quoted to explain a failure), not its new version.
    let excerpt = old_units.iter().any(|old| {
        let Kind::Definition(name) = old.kind else {
            return false;
        };
        new_units
            .iter()
            .find(|u| u.kind == Kind::Definition(name))
            .is_some_and(|new| {
                let (old, new) = (old.lines.len(), new.lines.len());
                !((old <= 5 || new * 4 >= old) && (old <= 40 || new * 2 >= old))
            })
    });
    if excerpt {
        return None;
    }
    let old_imports: Vec<&str> = old_units
        .iter()
        .filter(|u| u.kind == Kind::Import)
        .flat_map(|u| u.lines.iter().map(|l| l.trim()))
        .collect();
    let imports: Vec<&Unit<'_>> = new_units
        .iter()
        .filter(|u| u.kind == Kind::Import && !self_import(u))
        .filter(|u| !u.lines.iter().all(|l| old_imports.contains(&l.trim())))
        .collect();
    let replacing = |name: &str| new_units.iter().find(|u| u.kind == Kind::Definition(name));
    let added: Vec<&Unit<'_>> = new_units
        .iter()
        .filter(|u| matches!(u.kind, Kind::Definition(n) if !old_names.iter().any(|o| o == n)))
        .collect();
    let last_import = old_units.iter().rposition(|u| u.kind == Kind::Import);
    // With no imports of its own, the file gets them before its first definition (below a
    // shebang, a licence comment or the module's docstring).
    let first_definition = old_units
        .iter()
        .position(|u| matches!(u.kind, Kind::Definition(_)));
    let mut out: Vec<&str> = Vec::new();
    let mut placed_added = false;
    let import_lines: Vec<&str> = imports.iter().flat_map(|u| u.lines.clone()).collect();
    for (i, unit) in old_units.iter().enumerate() {
        if last_import.is_none() && !imports.is_empty() && Some(i) == first_definition {
            out.extend(&import_lines);
            out.extend(["", ""]);
        }
        match unit.kind {
            Kind::Definition(name) => match replacing(name) {
                Some(new_unit) => {
                    if !placed_added && !added.is_empty() {
                        placed_added = true;
                        for unit in &added {
                            out.extend(&unit.lines);
                            out.extend(["", ""]);
                        }
                    }
                    out.extend(&new_unit.lines);
                }
                None => out.extend(&unit.lines),
            },
            _ => out.extend(&unit.lines),
        }
        if Some(i) == last_import {
            out.extend(&import_lines);
        }
    }
    let newline = if old.contains("\r\n") { "\r\n" } else { "\n" };
    let mut text = out.join(newline);
    text.push_str(newline);
    (text.trim_end() != old.trim_end()).then_some(text)
}

/// Standard modules a small model uses by name without importing them (recorded from
/// Qwen2.5-Coder-1.5B: `re.findall` in word-count's function, `string.ascii_lowercase` in
/// pangram's, each written without its `import`: every test failed on a `NameError`).
const STANDARD_MODULES: &[&str] = &[
    "re",
    "string",
    "math",
    "collections",
    "itertools",
    "functools",
    "random",
    "datetime",
    "json",
    "os",
    "sys",
    "time",
    "statistics",
    "operator",
    "decimal",
    "fractions",
    "heapq",
    "bisect",
    "textwrap",
    "unicodedata",
    "calendar",
    "cmath",
];

/// Python `text` with an `import` added for each standard module it uses only as `module.name`
/// and never names otherwise (no import, assignment or parameter of that name) — the import a
/// small model left out — after the file's last top-level import, or before its first
/// definition. `None` when none is missing.
pub fn with_imports(text: &str) -> Option<String> {
    let code = code_of(text);
    let missing: Vec<&str> = STANDARD_MODULES
        .iter()
        .copied()
        .filter(|module| {
            let mut uses = names(&code, module).peekable();
            uses.peek().is_some() && uses.all(|attribute| attribute)
        })
        .collect();
    if missing.is_empty() {
        return None;
    }
    let units = units(text);
    let lines: Vec<&str> = text.lines().collect();
    // Where each unit starts (a line index).
    let starts: Vec<usize> = units
        .iter()
        .scan(0, |at, u| {
            let start = *at;
            *at += u.lines.len();
            Some(start)
        })
        .collect();
    let docstring = |u: &Unit<'_>| {
        let first = u.lines[0].trim_start_matches(['r', 'R', 'u', 'U', 'b', 'B']);
        u.kind == Kind::Other && first.starts_with(['"', '\''])
    };
    // After the file's last top-level import; else before its first code (a module's docstring
    // aside), but never above a shebang or an encoding line.
    let at = match units.iter().rposition(|u| u.kind == Kind::Import) {
        Some(last) => starts[last] + units[last].lines.len(),
        None => {
            let first = units
                .iter()
                .position(|u| u.kind != Kind::Trivia && !docstring(u))?;
            let header = lines
                .iter()
                .take(2)
                .take_while(|l| l.starts_with("#!") || (l.starts_with('#') && l.contains("coding")))
                .count();
            starts[first].max(header)
        }
    };
    let spacing = if at < lines.len() && units.iter().all(|u| u.kind != Kind::Import) {
        vec!["", ""]
    } else {
        vec![]
    };
    let imports: Vec<String> = missing.iter().map(|m| format!("import {m}")).collect();
    let out: Vec<&str> = lines[..at]
        .iter()
        .copied()
        .chain(imports.iter().map(String::as_str))
        .chain(spacing)
        .chain(lines[at..].iter().copied())
        .collect();
    let newline = if text.contains("\r\n") { "\r\n" } else { "\n" };
    let mut out = out.join(newline);
    out.push_str(newline);
    Some(out)
}

/// Each place `code` names `name` as a whole word: `true` where it is `name.attribute`.
fn names<'a>(code: &'a str, name: &'a str) -> impl Iterator<Item = bool> + 'a {
    let word = |c: char| c.is_alphanumeric() || c == '_';
    code.match_indices(name).filter_map(move |(at, _)| {
        let before = code[..at].chars().next_back();
        let after = &code[at + name.len()..];
        if before.is_some_and(|c| word(c) || c == '.') || after.starts_with(word) {
            return None;
        }
        let rest = after.trim_start_matches([' ', '\t']);
        Some(rest.strip_prefix('.').is_some_and(|r| {
            r.trim_start()
                .starts_with(|c: char| c.is_alphabetic() || c == '_')
        }))
    })
}

/// Python `text` with its comments and the insides of its strings blanked out.
fn code_of(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    // The quote that opened the string we are in, tripled or not.
    let mut quote: Option<(char, bool)> = None;
    while let Some(c) = chars.next() {
        match quote {
            Some((q, triple)) => {
                if c == '\\' {
                    chars.next();
                    out.push(' ');
                } else if c == q {
                    if !triple {
                        quote = None;
                    } else if chars.peek() == Some(&q) {
                        chars.next();
                        if chars.peek() == Some(&q) {
                            chars.next();
                            quote = None;
                        }
                    }
                } else if c == '\n' && !triple {
                    quote = None;
                }
                out.push(if c == '\n' { '\n' } else { ' ' });
            }
            None if c == '#' => {
                while chars.peek().is_some_and(|&c| c != '\n') {
                    chars.next();
                }
                out.push(' ');
            }
            None if c == '"' || c == '\'' => {
                let mut triple = false;
                if chars.peek() == Some(&c) {
                    chars.next();
                    if chars.peek() == Some(&c) {
                        chars.next();
                        triple = true;
                    } else {
                        // An empty string.
                        out.push(' ');
                        continue;
                    }
                }
                quote = Some((c, triple));
                out.push(' ');
            }
            None => out.push(c),
        }
    }
    out
}

/// The names of the methods a class's lines define (its `def`s one level in).
fn methods<'a>(lines: &[&'a str]) -> Vec<&'a str> {
    let indent = lines
        .iter()
        .skip(1)
        .find(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .map(|l| l.len() - l.trim_start().len());
    lines
        .iter()
        .filter(|l| Some(l.len() - l.trim_start().len()) == indent)
        .filter_map(|l| definition(l.trim_start()))
        .collect()
}

/// The top-level pieces of Python `text`, in order; together they hold every line.
fn units(text: &str) -> Vec<Unit<'_>> {
    let mut units: Vec<Unit<'_>> = Vec::new();
    // Decorators and comments that open the definition that follows them.
    let mut lead: Vec<&str> = Vec::new();
    // Which lines start a top-level statement: not indented, not inside a triple-quoted
    // string, not closing a bracket (`None`: a blank line or a comment).
    let lines: Vec<&str> = text.lines().collect();
    let mut in_string = false;
    let mut code_top: Vec<Option<bool>> = Vec::with_capacity(lines.len());
    for line in &lines {
        let blank = line.trim().is_empty();
        let comment = !in_string && line.trim_start().starts_with('#');
        code_top.push(
            (!blank && !comment)
                .then(|| !in_string && !line.starts_with([' ', '\t', ')', ']', '}'])),
        );
        // A line that opens or closes a triple-quoted string (an odd count of them).
        let quotes = line.matches("\"\"\"").count() + line.matches("'''").count();
        if !comment && quotes % 2 == 1 {
            in_string = !in_string;
        }
    }
    for (i, line) in lines.iter().copied().enumerate() {
        // A comment at the left margin is top level only when the code after it is (one put
        // at the margin inside a function stays in it).
        let top = match code_top[i] {
            Some(top) => top,
            None if line.starts_with('#') => code_top[i + 1..]
                .iter()
                .flatten()
                .next()
                .copied()
                .unwrap_or(true),
            None => false,
        };
        if !top {
            if !lead.is_empty() && line.trim().is_empty() {
                // A blank line ends a lead: what it led is not a definition.
                units.push(lead_unit(std::mem::take(&mut lead)));
            }
            if !lead.is_empty() {
                lead.push(line);
            } else if let Some(unit) = units.last_mut() {
                unit.lines.push(line);
            } else {
                units.push(Unit {
                    kind: Kind::Trivia,
                    lines: vec![line],
                });
            }
            continue;
        }
        if line.starts_with('#') || line.starts_with('@') {
            lead.push(line);
            continue;
        }
        let kind = definition(line).map(Kind::Definition).unwrap_or_else(|| {
            if line.starts_with("import ") || line.starts_with("from ") {
                Kind::Import
            } else {
                Kind::Other
            }
        });
        let mut lines = std::mem::take(&mut lead);
        // Comments above anything but a definition stay trivia of their own.
        if !matches!(kind, Kind::Definition(_)) && !lines.is_empty() {
            units.push(lead_unit(std::mem::take(&mut lines)));
        }
        lines.push(line);
        units.push(Unit { kind, lines });
    }
    if !lead.is_empty() {
        units.push(lead_unit(lead));
    }
    // Blank lines at a unit's end belong between units.
    let mut split: Vec<Unit<'_>> = Vec::new();
    for mut unit in units {
        let mut blanks = Vec::new();
        while unit.lines.len() > 1 && unit.lines.last().is_some_and(|l| l.trim().is_empty()) {
            blanks.push(unit.lines.pop().expect("checked"));
        }
        split.push(unit);
        if !blanks.is_empty() {
            split.push(Unit {
                kind: Kind::Trivia,
                lines: blanks,
            });
        }
    }
    split
}

/// Comments (trivia) or decorators (not) that lead no definition.
fn lead_unit(lines: Vec<&str>) -> Unit<'_> {
    let decorated = lines.iter().any(|l| l.starts_with('@'));
    Unit {
        kind: if decorated { Kind::Other } else { Kind::Trivia },
        lines,
    }
}

/// The name a top-level `def`, `async def` or `class` line defines.
fn definition(line: &str) -> Option<&str> {
    let rest = ["def ", "async def ", "class "]
        .iter()
        .find_map(|k| line.strip_prefix(k))?;
    let name = rest
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .next()?;
    (!name.is_empty()).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GRAINS: &str = "def square(number):\n    pass\n\n\ndef total():\n    pass\n";

    #[test]
    fn a_standard_module_used_without_its_import_is_imported() {
        // Recorded from Qwen2.5-Coder-1.5B on word-count: `re` used, never imported.
        let word_count = "def count_words(sentence):\n    words = re.findall(r'\\b\\w+\\b', sentence.lower())\n    return {w: words.count(w) for w in words}\n";
        assert_eq!(
            with_imports(word_count).unwrap(),
            format!("import re\n\n\n{word_count}")
        );
        // After the file's own imports; below a module's docstring; several at once.
        let pangram = "import sys\n\ndef is_pangram(s):\n    return set(string.ascii_lowercase) <= set(s.lower())\n";
        assert_eq!(
            with_imports(pangram).unwrap(),
            "import sys\nimport string\n\ndef is_pangram(s):\n    return set(string.ascii_lowercase) <= set(s.lower())\n"
        );
        let documented =
            "\"\"\"Words.\"\"\"\n\ndef f(s):\n    return math.floor(re.sub('a', '', s))\n";
        assert_eq!(
            with_imports(documented).unwrap(),
            "\"\"\"Words.\"\"\"\n\nimport re\nimport math\n\n\ndef f(s):\n    return math.floor(re.sub('a', '', s))\n"
        );
    }

    #[test]
    fn a_missing_import_goes_above_the_first_code_that_needs_it_and_below_a_shebang() {
        // Found by a review: module-level code before the first definition, a shebang, an
        // encoding line, CRLF.
        assert_eq!(
            with_imports("WORDS = re.compile(r'\\w+')\n\n\ndef f(s):\n    return WORDS.findall(s)\n").unwrap(),
            "import re\n\n\nWORDS = re.compile(r'\\w+')\n\n\ndef f(s):\n    return WORDS.findall(s)\n"
        );
        assert_eq!(
            with_imports("#!/usr/bin/env python3\n# -*- coding: utf-8 -*-\ndef main():\n    sys.exit(0)\n").unwrap(),
            "#!/usr/bin/env python3\n# -*- coding: utf-8 -*-\nimport sys\n\n\ndef main():\n    sys.exit(0)\n"
        );
        assert_eq!(
            with_imports("import os\r\ndef f():\r\n    return sys.argv\r\n").unwrap(),
            "import os\r\nimport sys\r\ndef f():\r\n    return sys.argv\r\n"
        );
    }

    #[test]
    fn a_name_the_file_binds_or_only_mentions_in_words_is_not_imported() {
        for text in [
            // Imported, in any form.
            "import re\ndef f(s):\n    return re.sub('a', '', s)\n",
            "from re import sub\nimport re as re\ndef f(s):\n    return re.sub('a', '', s)\n",
            // A parameter, a variable, a loop's name of the same spelling.
            "def f(string):\n    return string.lower()\n",
            "def f(s):\n    time = s\n    return time.upper()\n",
            "def f(xs):\n    for math in xs:\n        math.go()\n",
            // Only in a comment or a string; a method of that name; a longer name.
            "def f(s):\n    # re.sub would do\n    return 're.sub' + s.re.x + are.y + re_x.z\n",
            "def f(s):\n    return \"\"\"\n    math.floor\n    \"\"\"\n",
            // Nothing used at all.
            "def f(s):\n    return s\n",
        ] {
            assert_eq!(with_imports(text), None, "{text}");
        }
    }

    #[test]
    fn a_function_written_alone_replaces_its_namesake_and_keeps_the_rest() {
        // Recorded from Qwen2.5-Coder-1.5B on grains, sent back with a failing test.
        let fix = "def square(number):\n    if not (1 <= number <= 64):\n        raise ValueError(\"square must be between 1 and 64\")\n    return 2 ** (number - 1)\n";
        assert_eq!(
            merged(GRAINS, fix, "grains").unwrap(),
            format!("{fix}\n\ndef total():\n    pass\n")
        );
    }

    #[test]
    fn imports_and_new_helpers_are_added_and_a_self_import_is_dropped() {
        let old = "import math\n\n\ndef a():\n    pass\n\n\ndef b():\n    pass\n";
        let new = "import re\nfrom grains import a\n\n\n# Helper.\ndef helper(x):\n    return x\n\n\n@cache\ndef a():\n    return helper(re)\n";
        assert_eq!(
            merged(old, new, "grains").unwrap(),
            "import math\nimport re\n\n\n# Helper.\ndef helper(x):\n    return x\n\n\n@cache\ndef a():\n    return helper(re)\n\n\ndef b():\n    pass\n"
        );
        // A file with no imports gets them at its top.
        assert!(merged(
            GRAINS,
            "import os\ndef total():\n    return os.sep\n",
            "grains"
        )
        .unwrap()
        .starts_with("import os\n\n\ndef square"));
    }

    #[test]
    fn what_is_not_a_part_of_the_file_is_not_merged() {
        for new in [
            // The whole file (the caller writes it as it is), nothing the file defines, a
            // statement at the top level, a line of a function, the file as it is.
            "def square(n):\n    return 1\n\n\ndef total():\n    return 2\n",
            "def other():\n    return 1\n",
            "def square(n):\n    return 1\n\nprint(square(2))\n",
            "    return 2 ** (number - 1)\n",
            "def square(number):\n    pass\n",
        ] {
            assert_eq!(merged(GRAINS, new, "grains"), None, "{new}");
        }
        // Three lines of a long test class, quoted to explain a failure, are not the class.
        let tests: String = "import unittest\n\n\nclass GrainsTest(unittest.TestCase):\n"
            .to_string()
            + &(0..10)
                .map(|i| {
                    format!("    def test_{i}(self):\n        self.assertEqual(square({i}), 1)\n\n")
                })
                .collect::<String>()
            + "\n\ndef helper():\n    pass\n";
        let quoted = "class GrainsTest(unittest.TestCase):\n    def test_1(self):\n        self.assertEqual(square(1), 2)\n";
        assert_eq!(merged(&tests, quoted, "grains_test"), None);
    }

    #[test]
    fn a_class_with_some_of_its_methods_a_name_written_twice_or_a_future_import_is_not_merged() {
        let old = "class Stack:\n    def __init__(self):\n        self.items = []\n\n    def push(self, x):\n        self.items.append(x)\n\n    def pop(self):\n        return self.items.pop()\n\n\ndef helper():\n    pass\n";
        let pop_only = "class Stack:\n    def pop(self):\n        return self.items.pop() if self.items else None\n";
        assert_eq!(merged(old, pop_only, "stack"), None);
        let twice = "def square(n):\n    return 1\n\n\ndef square(n):\n    return 2\n";
        assert_eq!(merged(GRAINS, twice, "grains"), None);
        let future = "from __future__ import annotations\n\n\ndef square(n):\n    return 1\n";
        assert_eq!(merged(GRAINS, future, "grains"), None);
    }

    #[test]
    fn a_comment_at_the_margin_inside_a_function_stays_in_it_and_imports_go_below_a_docstring() {
        let old = "\"\"\"Grains.\"\"\"\n\n\ndef square(number):\n    x = 1\n# note\n    return x\n\n\ndef total():\n    pass\n";
        let new =
            "import math\n\n\ndef square(number):\n    y = 2\n# kept\n    return math.pow(2, y)\n";
        assert_eq!(
            merged(old, new, "grains").unwrap(),
            "\"\"\"Grains.\"\"\"\n\n\nimport math\n\n\ndef square(number):\n    y = 2\n# kept\n    return math.pow(2, y)\n\n\ndef total():\n    pass\n"
        );
        // Line ends stay as the file has them.
        let crlf = GRAINS.replace('\n', "\r\n");
        assert!(merged(&crlf, "def total():\n    return 1\n", "grains")
            .unwrap()
            .ends_with("def total():\r\n    return 1\r\n"));
    }

    #[test]
    fn a_string_at_the_left_margin_inside_a_function_stays_in_it() {
        let old = "def a():\n    s = \"\"\"\nnot top level\n\"\"\"\n    return s\n\n\ndef b():\n    pass\n";
        let new = "def b():\n    return 1\n";
        assert_eq!(
            merged(old, new, "m").unwrap(),
            "def a():\n    s = \"\"\"\nnot top level\n\"\"\"\n    return s\n\n\ndef b():\n    return 1\n"
        );
    }
}
