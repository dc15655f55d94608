//! Splitting a shell command into the simple commands it runs, so permission rules can be checked
//! on each: `git status && rm -rf x` is two commands, `$(rm x)` runs `rm`, `FOO=1 env rm x` runs
//! `rm`. Anything this parser does not understand is an error, which the policy treats as "ask":
//! it never guesses in the user's disfavour.

/// One command the shell would run, with assignments and wrappers (`env`, `nohup`, `timeout`, …)
/// stripped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimpleCommand {
    pub words: Vec<String>,
    /// It redirects output into a file (`> out.txt`), so it writes even if the program does not.
    pub writes_files: bool,
    /// It runs as another user (`sudo`, `doas`): never allowed without asking.
    pub elevated: bool,
}

/// The simple commands in `command`, in order (nested ones — `$(…)`, backticks, `bash -c` —
/// included). `Err` says which syntax could not be checked.
pub fn parse_command(command: &str) -> Result<Vec<SimpleCommand>, String> {
    let mut out = Vec::new();
    parse_into(command, &mut out, 0)?;
    Ok(out)
}

const MAX_DEPTH: usize = 8;

fn parse_into(src: &str, out: &mut Vec<SimpleCommand>, depth: usize) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err("commands nested too deeply".into());
    }
    let mut lexer = Lexer {
        chars: src.chars().collect(),
        pos: 0,
        nested: Vec::new(),
    };
    let mut words: Vec<String> = Vec::new();
    let mut writes = false;
    let mut expect_target: Option<bool> = None; // Some(is_output) after a redirection operator
    loop {
        let token = lexer.next_token()?;
        match token {
            Token::Word(word) => {
                if let Some(output) = expect_target.take() {
                    if output && !is_harmless_target(&word) {
                        writes = true;
                    }
                } else {
                    words.push(word);
                }
            }
            Token::Redirect { output, has_target } => {
                if has_target {
                    expect_target = Some(output);
                }
            }
            Token::Separator('(') if !words.is_empty() => {
                return Err("function definitions".into());
            }
            Token::Separator(_) | Token::End => {
                if expect_target.is_some() {
                    return Err("a redirection without a target".into());
                }
                finish(std::mem::take(&mut words), writes, out, depth)?;
                writes = false;
                if matches!(token, Token::End) {
                    break;
                }
            }
        }
    }
    for inner in lexer.nested {
        parse_into(&inner, out, depth + 1)?;
    }
    Ok(())
}

/// Output redirected here writes nothing the user cares about.
fn is_harmless_target(word: &str) -> bool {
    word == "/dev/null" || word == "/dev/stdout" || word == "/dev/stderr"
}

const KEYWORDS_TO_DROP: &[&str] = &[
    "then", "else", "elif", "do", "if", "while", "until", "!", "{", "}", "done", "fi", "esac",
];
const UNSUPPORTED_KEYWORDS: &[&str] = &["for", "case", "select", "function", "coproc", "[[", "(("];

/// Normalizes one simple command and appends it (and what it wraps) to `out`.
fn finish(
    mut words: Vec<String>,
    writes_files: bool,
    out: &mut Vec<SimpleCommand>,
    depth: usize,
) -> Result<(), String> {
    let mut elevated = false;
    let start = out.len();
    // What a sudo'd command runs (`sudo sh -c '…'`, `sudo find -exec …`) runs elevated too.
    let elevate = |out: &mut Vec<SimpleCommand>, elevated: bool| {
        if elevated {
            out[start..].iter_mut().for_each(|c| c.elevated = true);
        }
    };
    loop {
        while words
            .first()
            .is_some_and(|w| KEYWORDS_TO_DROP.contains(&w.as_str()))
        {
            words.remove(0);
        }
        if let Some(first) = words.first() {
            if UNSUPPORTED_KEYWORDS.contains(&first.as_str()) || first.ends_with("()") {
                return Err(format!("`{first}` blocks"));
            }
        }
        while words.first().is_some_and(|w| is_assignment(w)) {
            words.remove(0);
        }
        let Some(program) = words.first().map(|w| program_name(w)) else {
            if writes_files {
                out.push(SimpleCommand {
                    words,
                    writes_files,
                    elevated,
                });
            }
            return Ok(());
        };
        match program {
            "env" => {
                words = strip_options(
                    &words[1..],
                    &["-u", "--unset", "-C", "--chdir"],
                    &["-S", "--split-string"],
                )?
            }
            "command" | "builtin" | "exec" | "nohup" => {
                if words.get(1).is_some_and(|w| w == "-v" || w == "-V") {
                    break;
                }
                words = strip_options(&words[1..], &[], &[])?;
            }
            "sudo" | "doas" => {
                elevated = true;
                words = strip_options(
                    &words[1..],
                    &[
                        "-u",
                        "--user",
                        "-g",
                        "--group",
                        "-C",
                        "--close-from",
                        "-D",
                        "--chdir",
                        "-h",
                        "--host",
                        "-p",
                        "--prompt",
                        "-r",
                        "--role",
                        "-t",
                        "--type",
                        "-T",
                        "--command-timeout",
                        "-U",
                        "--other-user",
                        "-R",
                        "--chroot",
                        "-c",
                        "--login-class",
                        "-a",
                    ],
                    &["-s", "--shell", "-i", "--login", "-e", "--edit"],
                )?
            }
            "time" => words = strip_options(&words[1..], &["-f", "-o"], &[])?,
            "nice" => words = strip_options(&words[1..], &["-n", "--adjustment"], &[])?,
            "stdbuf" => words = strip_options(&words[1..], &["-i", "-o", "-e"], &[])?,
            "timeout" => {
                let mut rest =
                    strip_options(&words[1..], &["-s", "--signal", "-k", "--kill-after"], &[])?;
                if !rest.is_empty() {
                    rest.remove(0); // the duration
                }
                words = rest;
            }
            "xargs" => {
                words = strip_options(
                    &words[1..],
                    &[
                        "-I",
                        "-i",
                        "-n",
                        "-P",
                        "-d",
                        "-L",
                        "-s",
                        "-E",
                        "-a",
                        "--max-args",
                        "--max-procs",
                        "--delimiter",
                        "--arg-file",
                    ],
                    &[],
                )?
            }
            "sh" | "bash" | "zsh" | "dash" | "ksh" => {
                let script = words.iter().position(|w| {
                    w == "-c"
                        || (w.starts_with('-')
                            && !w.starts_with("--")
                            && w.ends_with('c')
                            && w.len() > 2)
                });
                match script.and_then(|i| words.get(i + 1)) {
                    Some(inner) => {
                        parse_into(inner, out, depth + 1)?;
                        elevate(out, elevated);
                        return Ok(());
                    }
                    None => break,
                }
            }
            "eval" => {
                parse_into(&words[1..].join(" "), out, depth + 1)?;
                elevate(out, elevated);
                return Ok(());
            }
            "find" => {
                let mut find_words = Vec::new();
                let mut i = 0;
                let mut find_writes = writes_files;
                while i < words.len() {
                    let w = words[i].as_str();
                    if matches!(w, "-exec" | "-execdir" | "-ok" | "-okdir") {
                        let end = words[i + 1..]
                            .iter()
                            .position(|w| w == ";" || w == "+")
                            .map(|p| i + 1 + p)
                            .unwrap_or(words.len());
                        finish(words[i + 1..end].to_vec(), false, out, depth)?;
                        i = end + 1;
                        continue;
                    }
                    if w == "-delete" || w.starts_with("-fprint") || w == "-fls" {
                        find_writes = true;
                    }
                    find_words.push(words[i].clone());
                    i += 1;
                }
                elevate(out, elevated);
                out.push(SimpleCommand {
                    words: find_words,
                    writes_files: find_writes,
                    elevated,
                });
                return Ok(());
            }
            _ => break,
        }
    }
    if !words.is_empty() || writes_files {
        out.push(SimpleCommand {
            words,
            writes_files,
            elevated,
        });
    }
    Ok(())
}

/// `/usr/bin/env` runs `env`.
pub(crate) fn program_name(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            let name = name.strip_suffix('+').unwrap_or(name);
            !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit())
        }
        None => false,
    }
}

/// Drops the leading options of a wrapper (and the values of `with_value` options) and
/// assignments (`env FOO=1`), returning the wrapped command. `unsupported` options make the
/// command uncheckable.
fn strip_options(
    words: &[String],
    with_value: &[&str],
    unsupported: &[&str],
) -> Result<Vec<String>, String> {
    let mut i = 0;
    while i < words.len() {
        let w = words[i].as_str();
        if w == "--" {
            i += 1;
            break;
        }
        if unsupported
            .iter()
            .any(|u| w == *u || w.starts_with(&format!("{u}=")))
        {
            return Err(format!("the `{w}` option"));
        }
        if w.starts_with('-') && w.len() > 1 {
            i += if with_value.contains(&w) { 2 } else { 1 };
        } else if is_assignment(w) {
            i += 1;
        } else {
            break;
        }
    }
    Ok(words.get(i..).unwrap_or_default().to_vec())
}

enum Token {
    Word(String),
    /// A redirection operator; `has_target` when a file name follows (`>&2` has none).
    Redirect {
        output: bool,
        has_target: bool,
    },
    /// `;`, `&&`, `|`, a newline, `(`, … (by its first character).
    Separator(char),
    End,
}

struct Lexer {
    chars: Vec<char>,
    pos: usize,
    /// Sources of `$(…)`, backticks and `<(…)` met so far, parsed after this level.
    nested: Vec<String>,
}

impl Lexer {
    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.pos + ahead).copied()
    }

    fn next_token(&mut self) -> Result<Token, String> {
        // Skip blanks and comments.
        loop {
            match self.peek(0) {
                Some(' ' | '\t') => self.pos += 1,
                Some('\\') if self.peek(1) == Some('\n') => self.pos += 2,
                Some('#') => {
                    while self.peek(0).is_some_and(|c| c != '\n') {
                        self.pos += 1;
                    }
                }
                _ => break,
            }
        }
        let Some(c) = self.peek(0) else {
            return Ok(Token::End);
        };
        match c {
            '\n' | ';' | '&' | '|' | '(' | ')' => {
                if c == '&' && self.peek(1) == Some('>') {
                    self.pos += if self.peek(2) == Some('>') { 3 } else { 2 };
                    return Ok(Token::Redirect {
                        output: true,
                        has_target: true,
                    });
                }
                self.pos += 1;
                // `&&`, `||`, `|&`, `;;`
                if matches!(
                    (c, self.peek(0)),
                    ('&', Some('&')) | ('|', Some('|' | '&')) | (';', Some(';'))
                ) {
                    self.pos += 1;
                }
                return Ok(Token::Separator(c));
            }
            '<' | '>' => return self.redirect(),
            _ => {}
        }
        // A file-descriptor number right before a redirection: `2>`.
        if c.is_ascii_digit() {
            let mut end = self.pos;
            while self.chars.get(end).is_some_and(|c| c.is_ascii_digit()) {
                end += 1;
            }
            if matches!(self.chars.get(end), Some('<' | '>')) {
                self.pos = end;
                return self.redirect();
            }
        }
        self.word().map(Token::Word)
    }

    fn redirect(&mut self) -> Result<Token, String> {
        let c = self.peek(0).expect("called on < or >");
        if self.peek(1) == Some('(') {
            // Process substitution `<(cmd)` / `>(cmd)`: runs a command.
            self.pos += 2;
            let inner = self.until_close_paren()?;
            self.nested.push(inner);
            return Ok(Token::Word("<(…)".into()));
        }
        self.pos += 1;
        if c == '<' {
            match self.peek(0) {
                Some('<') if self.peek(1) == Some('<') => {
                    self.pos += 2; // here-string: its word is input
                }
                Some('<') => return Err("here-documents (<<)".into()),
                Some('>') => {
                    self.pos += 1;
                    return Ok(Token::Redirect {
                        output: true,
                        has_target: true,
                    });
                }
                Some('&') => {
                    self.pos += 1;
                    return Ok(Token::Redirect {
                        output: false,
                        has_target: true,
                    });
                }
                _ => {}
            }
            return Ok(Token::Redirect {
                output: false,
                has_target: true,
            });
        }
        if matches!(self.peek(0), Some('>' | '|')) {
            self.pos += 1;
        }
        if self.peek(0) == Some('&') {
            // `>&2`, `2>&1`, `>&-`: duplicates a descriptor, writes no file.
            self.pos += 1;
            let mut target = String::new();
            while let Some(d) = self.peek(0).filter(|c| c.is_ascii_digit() || *c == '-') {
                target.push(d);
                self.pos += 1;
            }
            return Ok(Token::Redirect {
                output: true,
                has_target: target.is_empty(),
            });
        }
        Ok(Token::Redirect {
            output: true,
            has_target: true,
        })
    }

    /// Reads one word, resolving quotes and escapes; command substitutions inside it are recorded
    /// in `nested` and left in the word as `$(…)`.
    fn word(&mut self) -> Result<String, String> {
        let mut word = String::new();
        while let Some(c) = self.peek(0) {
            match c {
                ' ' | '\t' | '\n' | ';' | '&' | '|' | '(' | ')' | '<' | '>' => break,
                '\'' => {
                    self.pos += 1;
                    loop {
                        match self.peek(0) {
                            None => return Err("an unclosed ' quote".into()),
                            Some('\'') => break,
                            Some(ch) => word.push(ch),
                        }
                        self.pos += 1;
                    }
                    self.pos += 1;
                }
                '"' => {
                    self.pos += 1;
                    loop {
                        match self.peek(0) {
                            None => return Err("an unclosed \" quote".into()),
                            Some('"') => break,
                            Some('\\') => {
                                if let Some(next) = self.peek(1) {
                                    if !matches!(next, '"' | '\\' | '$' | '`' | '\n') {
                                        word.push('\\');
                                    }
                                    if next != '\n' {
                                        word.push(next);
                                    }
                                }
                                self.pos += 1;
                            }
                            Some('$') if self.peek(1) == Some('(') => {
                                self.substitution(&mut word)?;
                                continue;
                            }
                            Some('`') => {
                                self.backtick(&mut word)?;
                                continue;
                            }
                            Some(ch) => word.push(ch),
                        }
                        self.pos += 1;
                    }
                    self.pos += 1;
                }
                '\\' => {
                    if let Some(next) = self.peek(1) {
                        if next != '\n' {
                            word.push(next);
                        }
                    }
                    self.pos += 2;
                }
                '$' if self.peek(1) == Some('(') => self.substitution(&mut word)?,
                '$' if self.peek(1) == Some('\'') => {
                    self.pos += 2;
                    loop {
                        match self.peek(0) {
                            None => return Err("an unclosed $' quote".into()),
                            Some('\'') => break,
                            Some('\\') => {
                                word.push('\\');
                                if let Some(n) = self.peek(1) {
                                    word.push(n);
                                }
                                self.pos += 1;
                            }
                            Some(ch) => word.push(ch),
                        }
                        self.pos += 1;
                    }
                    self.pos += 1;
                }
                '`' => self.backtick(&mut word)?,
                _ => {
                    word.push(c);
                    self.pos += 1;
                }
            }
        }
        Ok(word)
    }

    /// At `$(`: arithmetic `$((…))` stays in the word; a command substitution is recorded.
    fn substitution(&mut self, word: &mut String) -> Result<(), String> {
        self.pos += 2;
        if self.peek(0) == Some('(') {
            self.pos += 1;
            let inner = self.until_close_paren()?;
            if self.peek(0) != Some(')') {
                return Err("an unclosed $(( arithmetic".into());
            }
            self.pos += 1;
            word.push_str(&format!("$(({inner}))"));
            return Ok(());
        }
        let inner = self.until_close_paren()?;
        self.nested.push(inner);
        word.push_str("$(…)");
        Ok(())
    }

    fn backtick(&mut self, word: &mut String) -> Result<(), String> {
        self.pos += 1;
        let mut inner = String::new();
        loop {
            match self.peek(0) {
                None => return Err("an unclosed ` quote".into()),
                Some('`') => break,
                Some('\\') if matches!(self.peek(1), Some('`' | '\\' | '$')) => {
                    inner.push(self.peek(1).expect("checked"));
                    self.pos += 1;
                }
                Some(ch) => inner.push(ch),
            }
            self.pos += 1;
        }
        self.pos += 1;
        self.nested.push(inner);
        word.push_str("$(…)");
        Ok(())
    }

    /// Reads up to the `)` that closes the one just consumed (respecting quotes and nesting) and
    /// returns what is between.
    fn until_close_paren(&mut self) -> Result<String, String> {
        let start = self.pos;
        let mut depth = 1;
        while let Some(c) = self.peek(0) {
            match c {
                '\\' => self.pos += 1,
                '\'' => {
                    self.pos += 1;
                    while self.peek(0).is_some_and(|c| c != '\'') {
                        self.pos += 1;
                    }
                }
                '"' => {
                    self.pos += 1;
                    while let Some(c) = self.peek(0) {
                        if c == '\\' {
                            self.pos += 1;
                        } else if c == '"' {
                            break;
                        }
                        self.pos += 1;
                    }
                }
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        let inner: String = self.chars[start..self.pos].iter().collect();
                        self.pos += 1;
                        return Ok(inner);
                    }
                }
                _ => {}
            }
            self.pos += 1;
        }
        Err("an unclosed $( or (".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(cmd: &str) -> Vec<String> {
        parse_command(cmd)
            .unwrap()
            .into_iter()
            .map(|c| c.words.join(" "))
            .collect()
    }

    #[test]
    fn splits_compound_commands_and_strips_wrappers() {
        let cases: &[(&str, &[&str])] = &[
            ("ls -la", &["ls -la"]),
            ("FOO=1 rm -rf x", &["rm -rf x"]),
            ("FOO=1 BAR='a b' env -u X BAZ=2 rm -rf x", &["rm -rf x"]),
            ("git status && rm -rf x", &["git status", "rm -rf x"]),
            ("a; b || c | d & e", &["a", "b", "c", "d", "e"]),
            ("echo $(rm x)", &["echo $(…)", "rm x"]),
            (
                "echo \"in $(rm -r y) quotes\"",
                &["echo in $(…) quotes", "rm -r y"],
            ),
            ("echo `rm z`", &["echo $(…)", "rm z"]),
            ("diff <(sort a) b", &["diff <(…) b", "sort a"]),
            ("bash -c 'rm -rf /'", &["rm -rf /"]),
            ("bash -lc \"git push\"", &["git push"]),
            ("timeout 5 nohup nice -n 5 cargo test", &["cargo test"]),
            ("/usr/bin/env git log", &["git log"]),
            (
                "find . -name '*.tmp' -exec rm {} ;",
                &["rm {}", "find . -name *.tmp"],
            ),
            ("ls | xargs -n 1 rm", &["ls", "rm"]),
            ("if true; then rm x; fi", &["true", "rm x"]),
            ("(cd sub && make)", &["cd sub", "make"]),
            ("echo $((1 + 2))", &["echo $((1 + 2))"]),
            (
                "cargo test 2>&1 | tail -n 20",
                &["cargo test", "tail -n 20"],
            ),
            ("ls # rm -rf comment", &["ls"]),
            ("eval 'rm q'", &["rm q"]),
        ];
        for (cmd, expected) in cases {
            assert_eq!(&words(cmd), expected, "{cmd}");
        }
    }

    #[test]
    fn output_redirections_to_files_are_writes() {
        let parsed = parse_command("echo hi > out.txt; ls 2>/dev/null; cat a >&2").unwrap();
        assert!(parsed[0].writes_files);
        assert!(!parsed[1].writes_files);
        assert!(!parsed[2].writes_files);
        assert!(parse_command("find . -delete").unwrap()[0].writes_files);
        assert!(parse_command("> truncated.txt").unwrap()[0].writes_files);
    }

    #[test]
    fn what_cannot_be_checked_is_an_error() {
        for cmd in [
            "cat <<EOF\nhi\nEOF",
            "for f in *; do rm $f; done",
            "echo 'unclosed",
            "echo $(unclosed",
            "f() { rm x; }; f",
            "env -S 'rm x'",
        ] {
            assert!(parse_command(cmd).is_err(), "{cmd} should not parse");
        }
    }
}
