//! The permission policy: rules (`allow | ask | deny` by tool and pattern), the task's mode, and
//! the defaults by category. Deny rules always win; plan mode refuses writes and commands; yolo
//! allows the rest; otherwise a call runs without asking only when every part of it is allowed.
//!
//! Commands are matched part by part, as `command` splits them. Allow rules are word-for-word
//! prefixes. Deny and ask rules match by meaning, so a reworded command does not escape them: the
//! program by file name (`rm` names `/usr/bin/rm`), options in any grouping and order, by their
//! synonyms and GNU-style abbreviations (`rm -rf` catches `rm -R -f`, `rm -vfR`,
//! `rm --recursive --force`, `rm --rec -f`; see `SYNONYMS`).
//!
//! What cannot be checked against the deny rules of its tool (and, outside yolo mode, which ignores
//! them, its ask rules) is asked, in every mode: a command that could not be parsed, a part whose
//! program is unknown (its name comes from an expansion or an alias: `$R -rf x`), and a part that
//! runs a rule's program with arguments the shell expands (`rm $FLAGS x` may be `rm -rf x`).
//! Where no such rule exists there is nothing to escape, and the mode decides as usual.

use crate::command::{may_expand, parse_command, program_name, SimpleCommand, Unchecked};
use crate::paths::{protected_folder, protected_reason, ResolvedPath};
use codewright_protocol::{PermissionMode, PermissionRule, RuleAction, ToolCategory};
use std::collections::BTreeSet;

/// What a call touches, as rules see it.
pub enum Subject<'a> {
    /// Files or folders (file tools).
    Paths(Vec<&'a ResolvedPath>),
    /// A shell command line (`bash`).
    Command(&'a str),
    /// A host (`web_fetch`).
    Host(&'a str),
    /// Nothing rules can match beyond the tool name.
    Plain,
}

/// What the policy says about a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Allow,
    /// Ask the user; the reason is shown with the request.
    Ask(String),
    /// Refused; the message goes to the model.
    Deny(String),
}

/// Rules and mode of one task.
#[derive(Debug, Clone)]
pub struct Policy {
    pub mode: PermissionMode,
    /// Checked in order of strength, not position: any deny wins, then ask, then allow.
    pub rules: Vec<PermissionRule>,
}

impl Policy {
    pub fn new(mode: PermissionMode, rules: Vec<PermissionRule>) -> Policy {
        Policy { mode, rules }
    }

    /// Decides a call of `tool`.
    pub fn check(&self, tool: &str, category: ToolCategory, subject: &Subject) -> Verdict {
        let items = Items::of(subject);
        // 1. Deny rules.
        for item in items.list() {
            if let Some(rule) = self.matching(tool, RuleAction::Deny, item) {
                return Verdict::Deny(format!(
                    "A permission rule forbids this: {tool} on `{}` is denied by the rule `{}`. Do not retry it; find another way or ask the user.",
                    item.describe(),
                    describe_rule(rule)
                ));
            }
        }
        // 2. Plan mode.
        if self.mode == PermissionMode::Plan
            && matches!(category, ToolCategory::Write | ToolCategory::Execute)
        {
            return Verdict::Deny(format!(
                "The task is in plan mode: {tool} would change the project or run a program, so it is not available. Investigate with read-only tools and present a plan; the user will switch modes to carry it out."
            ));
        }
        // 3. What the restricting rules cannot be checked against, in every mode.
        if let Some(reason) = self.unsure(tool, &items) {
            return Verdict::Ask(reason);
        }
        if self.mode == PermissionMode::Yolo {
            // Leaving the project (unless a rule allows that path) and running as another user
            // are asked even here, and so refused where nobody can answer.
            let asked: Vec<String> = items
                .list()
                .iter()
                .filter_map(|item| match item {
                    Item::Path(p)
                        if !p.inside && self.matching(tool, RuleAction::Allow, item).is_none() =>
                    {
                        Some(format!("{} is outside the project", p.display))
                    }
                    Item::Command(c) if c.elevated => {
                        Some("the command runs as another user (sudo)".into())
                    }
                    _ => None,
                })
                .collect();
            if !asked.is_empty() {
                return Verdict::Ask(asked.join("; "));
            }
            return Verdict::Allow;
        }
        if let Some(reason) = &items.unchecked {
            return Verdict::Ask(unchecked_reason(reason));
        }
        // 4. Ask rules; then every item must be allowed by a rule or by the defaults.
        let mut reasons = Vec::new();
        for item in items.list() {
            if let Some(rule) = self.matching(tool, RuleAction::Ask, item) {
                return Verdict::Ask(format!("the rule `{}` asks first", describe_rule(rule)));
            }
            if let Item::Command(c) = item {
                if c.elevated {
                    reasons.push("the command runs as another user (sudo)".into());
                    continue;
                }
                // Whatever the rules allow: what changes git's configuration or a protected
                // folder, or runs with a variable that makes it run something else, is asked.
                if let Some(name) = &c.steering_env {
                    reasons.push(format!(
                        "it sets {name} for the command, which can make it load or run other programs"
                    ));
                    continue;
                }
                if let Some(reason) = changes_protected(&c.words) {
                    reasons.push(reason);
                    continue;
                }
            }
            if let (Item::Path(p), ToolCategory::Write) = (item, category) {
                if let Some(folder) = p.protected() {
                    reasons.push(protected_reason(folder));
                    continue;
                }
            }
            let allowed_by_rule =
                self.matching(tool, RuleAction::Allow, item).is_some() && !item.writes_files();
            if allowed_by_rule {
                continue;
            }
            match item {
                Item::Path(p) if !p.inside => {
                    reasons.push(format!("{} is outside the project", p.display))
                }
                Item::Path(_) => match (category, self.mode) {
                    (ToolCategory::Read, _) => {}
                    (ToolCategory::Write, PermissionMode::AcceptEdits) => {}
                    _ => reasons.push(default_reason(category)),
                },
                Item::Command(c) if c.writes_files => {
                    reasons.push("the command redirects output into a file".into())
                }
                _ if category == ToolCategory::Read => {}
                _ => reasons.push(default_reason(category)),
            }
        }
        if items.list().is_empty() && category != ToolCategory::Read {
            reasons.push(default_reason(category));
        }
        reasons.dedup();
        if reasons.is_empty() {
            Verdict::Allow
        } else {
            Verdict::Ask(reasons.join("; "))
        }
    }

    /// The allow rules "always allow" would save for a call (only for the parts not yet allowed).
    pub fn suggest(&self, tool: &str, subject: &Subject) -> Vec<PermissionRule> {
        let items = Items::of(subject);
        let mut rules: Vec<PermissionRule> = Vec::new();
        for item in items.list() {
            // Elevated commands are asked every time; an unknown program has no name to allow.
            let elevated_or_unknown =
                matches!(item, Item::Command(c) if c.elevated || c.unknown_program.is_some());
            if self.matching(tool, RuleAction::Allow, item).is_some()
                || item.writes_files()
                || elevated_or_unknown
            {
                continue;
            }
            let pattern = match item {
                Item::Path(p) => p.display.clone(),
                Item::Command(c) => command_prefix(&c.words),
                Item::Raw(_) => continue,
                Item::Host(h) => h.to_string(),
                Item::Plain => String::new(),
            };
            let rule = PermissionRule {
                tool: tool.to_string(),
                pattern,
                action: RuleAction::Allow,
            };
            if !rules.contains(&rule) {
                rules.push(rule);
            }
        }
        rules
    }

    /// Why `items` cannot be checked against the rules that restrict `tool` — its deny rules and,
    /// outside yolo mode, its ask rules — if there are such rules and it cannot: the command could
    /// not be parsed, a part's program is unknown, or a part may match a rule once the shell
    /// expands its arguments.
    fn unsure(&self, tool: &str, items: &Items) -> Option<String> {
        let restricting: Vec<&PermissionRule> = self
            .rules
            .iter()
            .filter(|r| {
                (r.tool == tool || r.tool == "*")
                    && (r.action == RuleAction::Deny
                        || (r.action == RuleAction::Ask && self.mode != PermissionMode::Yolo))
            })
            .collect();
        if restricting.is_empty() {
            return None;
        }
        if let Some(reason) = &items.unchecked {
            return Some(unchecked_reason(reason));
        }
        let mut reasons = Vec::new();
        for item in items.list() {
            let Item::Command(c) = item else { continue };
            if let Some(reason) = &c.unknown_program {
                reasons.push(format!(
                    "{reason}, so it cannot be checked against your rules"
                ));
            } else if let Some(rule) = restricting.iter().find(|r| item.may_match(&r.pattern)) {
                reasons.push(format!(
                    "`{}` may match the rule `{}` once the shell expands its arguments",
                    item.describe(),
                    describe_rule(rule)
                ));
            }
        }
        reasons.dedup();
        (!reasons.is_empty()).then(|| reasons.join("; "))
    }

    fn matching(&self, tool: &str, action: RuleAction, item: &Item) -> Option<&PermissionRule> {
        self.rules.iter().find(|r| {
            r.action == action
                && (r.tool == tool || r.tool == "*")
                && item.matches(&r.pattern, action != RuleAction::Allow)
        })
    }
}

fn unchecked_reason(reason: &Unchecked) -> String {
    format!("the command uses {reason}, which Codewright cannot check part by part")
}

/// Why a command is asked whatever the rules allow: it sets git configuration (`git config` but
/// a read), or names a path in a protected folder (`cp x .git/hooks/pre-commit`).
fn changes_protected(words: &[String]) -> Option<String> {
    let program = words.first().map(|w| program_name(w));
    if program == Some("git") {
        // Git's own options come before the subcommand; some take the next word.
        let mut rest = words.iter().skip(1);
        let mut sub = None;
        while let Some(w) = rest.next() {
            match w.as_str() {
                // Configuration for this one run, which may name a program to run.
                "-c" | "--config-env" => return Some(
                    "it sets git configuration for the command, which can make git run programs"
                        .into(),
                ),
                w if w.starts_with("--config-env=") => return Some(
                    "it sets git configuration for the command, which can make git run programs"
                        .into(),
                ),
                "-C" | "--git-dir" | "--work-tree" | "--namespace" | "--exec-path" => {
                    rest.next();
                }
                w if w.starts_with('-') => {}
                w => {
                    sub = Some(w);
                    break;
                }
            }
        }
        let reads = [
            "--get",
            "--get-all",
            "--get-regexp",
            "--list",
            "-l",
            "get",
            "list",
        ];
        if sub == Some("config") && !words.iter().any(|w| reads.contains(&w.as_str())) {
            return Some("it changes git's configuration, which can make git run programs".into());
        }
    }
    words.iter().skip(1).find_map(|w| {
        // (`--git-dir=.git`, `of=.claude/x`: the path after the `=`.)
        let path = w.rsplit('=').next().unwrap_or(w);
        protected_folder(path).map(protected_reason)
    })
}

fn default_reason(category: ToolCategory) -> String {
    match category {
        ToolCategory::Read => "it reads files",
        ToolCategory::Write => "it changes files",
        ToolCategory::Execute => "it runs a command",
        ToolCategory::Network => "it reaches the network",
    }
    .to_string()
}

fn describe_rule(rule: &PermissionRule) -> String {
    if rule.pattern.is_empty() {
        format!("{} {}", rule.action.as_str(), rule.tool)
    } else {
        format!("{} {} {}", rule.action.as_str(), rule.tool, rule.pattern)
    }
}

/// Programs whose first argument names what they do (`git push`, `cargo test`).
const SUBCOMMAND_PROGRAMS: &[&str] = &[
    "git", "cargo", "npm", "pnpm", "yarn", "bun", "npx", "go", "docker", "kubectl", "pip", "pip3",
    "uv", "poetry", "make", "just", "dotnet", "mvn", "gradle", "rustup", "brew", "apt", "gh",
];

/// The prefix "always allow" suggests for a command: the program, plus its subcommand for tools
/// that have them.
fn command_prefix(words: &[String]) -> String {
    let Some(program) = words.first() else {
        return String::new();
    };
    match words.get(1) {
        Some(sub)
            if SUBCOMMAND_PROGRAMS.contains(&program.as_str())
                && !sub.starts_with('-')
                && !sub.contains('$') =>
        {
            format!("{program} {sub}")
        }
        _ => program.clone(),
    }
}

/// The parts of a subject rules are matched against.
struct Items<'a> {
    items: Vec<Item<'a>>,
    /// The command could not be parsed: why.
    unchecked: Option<Unchecked>,
}

enum Item<'a> {
    Path(&'a ResolvedPath),
    Command(SimpleCommand),
    Raw(Vec<String>),
    Host(&'a str),
    Plain,
}

impl<'a> Items<'a> {
    fn of(subject: &Subject<'a>) -> Items<'a> {
        let mut unchecked = None;
        let items = match subject {
            Subject::Paths(paths) => paths.iter().map(|p| Item::Path(p)).collect(),
            Subject::Command(command) => match parse_command(command) {
                Ok(parts) => parts.into_iter().map(Item::Command).collect(),
                Err(reason) => {
                    unchecked = Some(reason);
                    // Deny rules still see every run of words of the raw text.
                    let words = command
                        .split(|c: char| c.is_whitespace() || ";&|()`$<>'\"".contains(c))
                        .filter(|w| !w.is_empty())
                        .map(String::from)
                        .collect();
                    vec![Item::Raw(words)]
                }
            },
            Subject::Host(host) => vec![Item::Host(host)],
            Subject::Plain => vec![Item::Plain],
        };
        Items { items, unchecked }
    }

    fn list(&self) -> &[Item<'a>] {
        &self.items
    }
}

impl Item<'_> {
    fn writes_files(&self) -> bool {
        matches!(self, Item::Command(c) if c.writes_files)
    }

    fn describe(&self) -> String {
        match self {
            Item::Path(p) => p.display.clone(),
            Item::Command(c) => c.words.join(" "),
            Item::Raw(words) => words.join(" "),
            Item::Host(h) => h.to_string(),
            Item::Plain => String::new(),
        }
    }

    /// Whether a rule's pattern covers this item. Commands: allow rules match a word-for-word
    /// prefix (`cargo test` allows `cargo test --release`, nothing else); deny and ask rules are
    /// `loose`, so a reworded command is still caught (`rm -rf` catches `/bin/rm -R --force x`).
    fn matches(&self, pattern: &str, loose: bool) -> bool {
        let pattern = pattern.trim();
        if pattern.is_empty() || pattern == "*" {
            return true;
        }
        match self {
            Item::Path(p) => path_matches(pattern, p),
            Item::Command(c) => {
                let want: Vec<&str> = pattern.split_whitespace().collect();
                let (Some(program), Some(have)) = (want.first(), c.words.first()) else {
                    return false;
                };
                if !same_program(program, have, loose) {
                    return false;
                }
                if loose {
                    loosely_covers(program_name(program), &want[1..], &c.words[1..])
                } else {
                    c.words.len() >= want.len()
                        && want[1..]
                            .iter()
                            .zip(&c.words[1..])
                            .all(|(w, have)| w == have)
                }
            }
            // Text that could not be parsed: matched anywhere in it (for deny and ask rules,
            // loosely: from any word naming the program).
            Item::Raw(words) => {
                let want: Vec<&str> = pattern.split_whitespace().collect();
                if loose {
                    return (0..words.len()).any(|i| {
                        same_program(want[0], &words[i], true)
                            && loosely_covers(program_name(want[0]), &want[1..], &words[i + 1..])
                    });
                }
                words
                    .windows(want.len())
                    .any(|run| run.iter().zip(&want).all(|(have, w)| have == w))
            }
            Item::Host(h) => match pattern.strip_prefix("*.") {
                Some(domain) => *h == domain || h.ends_with(&format!(".{domain}")),
                None => h.eq_ignore_ascii_case(pattern),
            },
            Item::Plain => false,
        }
    }

    /// Whether a deny or ask rule's pattern might cover this command once the shell expands its
    /// arguments: it runs the rule's program, and some argument comes from an expansion
    /// (`rm $FLAGS x` may be `rm -rf x`; `git $(echo push)` may be `git push`).
    fn may_match(&self, pattern: &str) -> bool {
        let Item::Command(c) = self else {
            return false;
        };
        let mut pattern = pattern.split_whitespace();
        match (pattern.next(), c.words.split_first()) {
            (Some(program), Some((have, args))) => {
                // A subcommand the pattern names must be the command's, unless that one is
                // expanded too: `git commit -m "$(cat msg)"` never becomes `git push --force`.
                let subcommand_fits = match pattern.find(|w| !w.starts_with('-')) {
                    None => true,
                    Some(sub) => args
                        .iter()
                        .find(|w| !w.starts_with('-'))
                        .is_none_or(|first| first == sub || may_expand(first)),
                };
                same_program(program, have, true)
                    && args.iter().any(|w| may_expand(w))
                    && subcommand_fits
            }
            _ => false,
        }
    }
}

/// Whether a pattern's program names a command's: exactly, or for `loose` (deny and ask) rules
/// also by file name (`rm` names `/bin/rm`). An allow rule names exactly the program it allows
/// (not `./cargo` for `cargo`).
fn same_program(want: &str, have: &str, loose: bool) -> bool {
    want == have || (loose && !want.contains('/') && want == program_name(have))
}

/// Options that mean the same to a program: by program, or by program and the subcommand a
/// pattern names (`git push`). Each group is led by the spelling both sides are compared in.
/// Options not listed are compared as written (`ls -R` is not `ls -r`).
const SYNONYMS: &[(&str, &[&[&str]])] = &[
    (
        "rm",
        &[
            &["-r", "-R", "--recursive"],
            &["-f", "--force"],
            &["-d", "--dir"],
            &["-v", "--verbose"],
        ],
    ),
    (
        "cp",
        &[
            &["-r", "-R", "--recursive"],
            &["-f", "--force"],
            &["-a", "--archive"],
        ],
    ),
    ("mv", &[&["-f", "--force"]]),
    ("chmod", &[&["-R", "--recursive"]]),
    ("chown", &[&["-R", "--recursive"]]),
    ("chgrp", &[&["-R", "--recursive"]]),
    ("rmdir", &[&["-p", "--parents"]]),
    ("git push", &[&["-f", "--force"], &["-d", "--delete"]]),
    ("git clean", &[&["-f", "--force"]]),
    ("git checkout", &[&["-f", "--force"]]),
    ("git branch", &[&["-d", "--delete"], &["-f", "--force"]]),
    ("git commit", &[&["-a", "--all"], &["-n", "--no-verify"]]),
    ("docker rm", &[&["-f", "--force"]]),
    ("docker rmi", &[&["-f", "--force"]]),
];

fn is_long(word: &str) -> bool {
    word.starts_with("--") && word.len() > 2
}

fn is_short(word: &str) -> bool {
    word.starts_with('-') && !word.starts_with("--") && word.len() > 1
}

/// The options among `words`, by meaning: short groups split (`-rf` is `-r` and `-f`), values
/// dropped (`--force=yes` is `--force`), and synonyms spelled as the first of their group, also
/// when abbreviated (`--recursive`, `--rec` and `-R` are all `-r` for `rm`).
fn options<'w>(words: impl Iterator<Item = &'w str>, synonyms: &[&[&str]]) -> BTreeSet<String> {
    let canonical = |option: String| {
        synonyms
            .iter()
            .find(|group| {
                group.iter().any(|s| {
                    *s == option
                        || (is_long(&option) && is_long(s) && s.starts_with(option.as_str()))
                })
            })
            .map_or(option, |group| group[0].to_string())
    };
    let mut out = BTreeSet::new();
    for w in words {
        if is_long(w) {
            let name = w.split_once('=').map_or(w, |(name, _)| name);
            out.insert(canonical(name.to_string()));
        } else if is_short(w) {
            out.extend(w[1..].chars().map(|c| canonical(format!("-{c}"))));
        }
    }
    out
}

/// A deny/ask pattern's arguments against a command's, for `program`: every option the pattern
/// names is given, by meaning (see [`options`]: `-rf` = `-fr` = `-r -f` = `-Rvf` =
/// `--recursive --force` for `rm`) or abbreviated (`--forc` gives `--force`), and the pattern's
/// other words come in the same order among the command's.
fn loosely_covers(program: &str, pattern: &[&str], words: &[String]) -> bool {
    let subcommand = pattern.iter().find(|w| !w.starts_with('-'));
    let synonyms_of = |key: &str| {
        SYNONYMS
            .iter()
            .find(|(name, _)| *name == key)
            .map(|(_, groups)| *groups)
    };
    let synonyms = subcommand
        .and_then(|sub| synonyms_of(&format!("{program} {sub}")))
        .or_else(|| synonyms_of(program))
        .unwrap_or_default();
    let want = options(pattern.iter().copied(), synonyms);
    let mut have = options(words.iter().map(String::as_str), synonyms);
    // `git push origin +main` force-pushes `main`, as `--force` would.
    if program == "git"
        && subcommand == Some(&"push")
        && words.iter().any(|w| w.len() > 1 && w.starts_with('+'))
    {
        have.insert("-f".into());
    }
    let given = |w: &String| {
        have.contains(w) || have.iter().any(|h| is_long(h) && w.starts_with(h.as_str()))
    };
    if !want.iter().all(given) {
        return false;
    }
    let is_option = |w: &str| is_short(w) || is_long(w);
    let mut rest = words.iter().filter(|w| !is_option(w));
    pattern
        .iter()
        .filter(|w| !is_option(w))
        .all(|w| rest.any(|h| h == w))
}

/// What a rule's pattern is matched against, by tool.
fn pattern_kind(tool: &str) -> &'static str {
    match tool {
        "bash" => "command",
        "web_fetch" => "host",
        "read_file" | "write_file" | "edit_file" | "list_dir" | "glob" | "grep" => "path",
        "*" => "any",
        _ => "none",
    }
}

/// Why a rule could never match, naming the part that is wrong: `("tool", why)` for a tool
/// that does not exist (`tools`: the names there are; `server__tool` names an MCP server's),
/// `("pattern", why)` for a pattern its tool cannot match.
pub fn check_rule(rule: &PermissionRule, tools: &[String]) -> Result<(), (&'static str, String)> {
    let tool = rule.tool.trim();
    let pattern = rule.pattern.trim();
    if tool.is_empty() {
        return Err((
            "tool",
            "Choose the tool the rule is for, or * for every tool.".into(),
        ));
    }
    if tool != "*" && !tool.contains("__") && !tools.iter().any(|t| t == tool) {
        return Err((
            "tool",
            format!(
                "There is no tool named {tool}. The tools are {}, or SERVER__tool for an MCP server's.",
                tools.join(", ")
            ),
        ));
    }
    if pattern.is_empty() || pattern == "*" {
        return Ok(());
    }
    match pattern_kind(tool) {
        "path" => globset::GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()
            .map(|_| ())
            .map_err(|e| ("pattern", format!("“{pattern}” is not a path pattern this rule could match: {}.", e.kind()))),
        "host" if pattern.contains(['/', ':']) || pattern.contains(char::is_whitespace) => Err((
            "pattern",
            format!("web_fetch rules match a host, like example.com or *.example.com — not “{pattern}”."),
        )),
        "none" => Err((
            "pattern",
            format!("{tool} has nothing a pattern can match; leave the pattern empty."),
        )),
        _ => Ok(()),
    }
}

/// Path globs: relative patterns match the project-relative path (`src/**`, `*.lock` matches a
/// file name anywhere); absolute patterns match the real path of external files.
fn path_matches(pattern: &str, path: &ResolvedPath) -> bool {
    let glob = match globset::GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
    {
        Ok(g) => g.compile_matcher(),
        Err(_) => return false,
    };
    if pattern.starts_with('/') {
        return glob.is_match(&path.real);
    }
    if !path.inside {
        return false;
    }
    glob.is_match(&path.display)
        || (!pattern.contains('/')
            && std::path::Path::new(&path.display)
                .file_name()
                .is_some_and(|name| glob.is_match(name)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn rule(tool: &str, pattern: &str, action: RuleAction) -> PermissionRule {
        PermissionRule {
            tool: tool.into(),
            pattern: pattern.into(),
            action,
        }
    }

    fn bash(policy: &Policy, command: &str) -> Verdict {
        policy.check("bash", ToolCategory::Execute, &Subject::Command(command))
    }

    fn is_allow(v: &Verdict) -> bool {
        matches!(v, Verdict::Allow)
    }
    fn is_ask(v: &Verdict) -> bool {
        matches!(v, Verdict::Ask(_))
    }
    fn is_deny(v: &Verdict) -> bool {
        matches!(v, Verdict::Deny(_))
    }

    #[test]
    fn a_rule_that_could_never_match_names_its_wrong_part() {
        let tools: Vec<String> = ["bash", "read_file", "web_fetch", "todo_write"]
            .map(String::from)
            .to_vec();
        let check = |tool: &str, pattern: &str| {
            check_rule(&rule(tool, pattern, RuleAction::Allow), &tools).map_err(|(part, why)| {
                assert!(!why.is_empty());
                part
            })
        };
        assert_eq!(check("bsh", "ls"), Err("tool"));
        assert_eq!(check("", ""), Err("tool"));
        assert_eq!(check("read_file", "src/[oops"), Err("pattern"));
        assert_eq!(check("web_fetch", "https://example.com/x"), Err("pattern"));
        assert_eq!(check("todo_write", "anything"), Err("pattern"));
        for (tool, pattern) in [
            ("bash", "cargo test"),
            ("read_file", "src/**"),
            ("web_fetch", "*.example.com"),
            ("todo_write", ""),
            ("*", "*"),
            ("github__create_issue", ""),
        ] {
            assert_eq!(check(tool, pattern), Ok(()), "{tool} {pattern}");
        }
    }

    #[test]
    fn command_rules_are_checked_on_every_part() {
        let policy = Policy::new(
            PermissionMode::Normal,
            vec![
                rule("bash", "git status", RuleAction::Allow),
                rule("bash", "ls", RuleAction::Allow),
                rule("bash", "echo", RuleAction::Allow),
                rule("bash", "rm -rf", RuleAction::Deny),
                rule("bash", "git push", RuleAction::Ask),
            ],
        );
        type Expect = fn(&Verdict) -> bool;
        let table: &[(&str, Expect)] = &[
            ("git status", is_allow),
            ("git status -s", is_allow),
            ("git stash", is_ask),
            ("ls && git status", is_allow),
            ("FOO=1 ls", is_allow),
            ("FOO=1 rm -rf x", is_deny),
            ("env FOO=1 rm -rf x", is_deny),
            ("git status && rm -rf x", is_deny),
            ("git status; rm x", is_ask),
            ("echo $(rm x)", is_ask),
            ("echo $(rm -rf x)", is_deny),
            ("ls | bash -c 'rm -rf /'", is_deny),
            ("echo hi > notes.txt", is_ask),
            ("git push origin main", is_ask),
            ("cat <<EOF\nrm -rf x\nEOF", is_deny),
            ("for f in *; do ls $f; done", is_ask),
            // Reworded, the same command is still caught by deny rules.
            ("/bin/rm -rf x", is_deny),
            ("rm -fr x", is_deny),
            ("rm -r -f x", is_deny),
            ("sudo rm -rf /", is_deny),
            ("sudo -u root /usr/bin/rm -Rf -r --force x", is_deny),
            ("git -C . push", is_ask),
            ("for f in *; do /bin/rm -fr $f; done", is_deny),
            ("sudo -R / rm -rf x", is_deny),
            ("rm -Rf x", is_deny),
            ("rm --recursive --force x", is_deny),
            // The program cannot be known: asked, whatever the rules allow.
            ("R=rm; $R -rf x", is_ask),
            ("alias x=rm; x -rf y", is_ask),
            // Allow rules stay exact prefixes; sudo is always asked, also inside `sh -c`.
            ("/usr/bin/git status", is_ask),
            ("./git status", is_ask),
            ("sudo git status", is_ask),
            ("sudo sh -c 'git status'", is_ask),
            ("sudo find . -exec git status ;", is_ask),
            ("echo -n hi", is_allow),
            ("rm -f x", is_ask),
        ];
        for (command, expect) in table {
            let verdict = bash(&policy, command);
            assert!(expect(&verdict), "{command:?} gave {verdict:?}");
        }
    }

    #[test]
    fn modes_and_defaults() {
        let root = PathBuf::from("/project");
        let inside = ResolvedPath {
            real: root.join("src/a.rs"),
            display: "src/a.rs".into(),
            inside: true,
        };
        let outside = ResolvedPath {
            real: "/etc/passwd".into(),
            display: "/etc/passwd".into(),
            inside: false,
        };
        let read = |p: &Policy, path: &ResolvedPath| {
            p.check("read_file", ToolCategory::Read, &Subject::Paths(vec![path]))
        };
        let edit = |p: &Policy, path: &ResolvedPath| {
            p.check(
                "edit_file",
                ToolCategory::Write,
                &Subject::Paths(vec![path]),
            )
        };
        let normal = Policy::new(PermissionMode::Normal, vec![]);
        assert!(is_allow(&read(&normal, &inside)));
        assert!(is_ask(&read(&normal, &outside)));
        assert!(is_ask(&edit(&normal, &inside)));
        assert!(is_ask(&bash(&normal, "ls")));
        assert!(is_ask(&normal.check(
            "web_fetch",
            ToolCategory::Network,
            &Subject::Host("docs.rs")
        )));

        let accept = Policy::new(PermissionMode::AcceptEdits, vec![]);
        assert!(is_allow(&edit(&accept, &inside)));
        assert!(is_ask(&edit(&accept, &outside)));
        assert!(is_ask(&bash(&accept, "ls")));

        let plan = Policy::new(PermissionMode::Plan, vec![]);
        assert!(is_allow(&read(&plan, &inside)));
        assert!(is_deny(&edit(&plan, &inside)));
        assert!(is_deny(&bash(&plan, "ls")));

        let yolo = Policy::new(
            PermissionMode::Yolo,
            vec![rule("edit_file", "*.lock", RuleAction::Deny)],
        );
        assert!(
            is_ask(&edit(&yolo, &outside)),
            "leaving the project is asked"
        );
        assert!(is_ask(&read(&yolo, &outside)));
        assert!(is_ask(&bash(&yolo, "sudo ls")), "sudo is asked");
        assert!(is_allow(&edit(&yolo, &inside)));
        assert!(is_allow(&bash(&yolo, "rm -rf target")));
        let lock = ResolvedPath {
            real: root.join("sub/Cargo.lock"),
            display: "sub/Cargo.lock".into(),
            inside: true,
        };
        assert!(is_deny(&edit(&yolo, &lock)), "deny rules hold in yolo");

        let rules = Policy::new(
            PermissionMode::Normal,
            vec![
                rule("edit_file", "src/**", RuleAction::Allow),
                rule("read_file", "/etc/**", RuleAction::Allow),
                rule("web_fetch", "*.rust-lang.org", RuleAction::Allow),
            ],
        );
        assert!(is_allow(&edit(&rules, &inside)));
        assert!(is_allow(&read(&rules, &outside)));
        let host = |h| rules.check("web_fetch", ToolCategory::Network, &Subject::Host(h));
        assert!(is_allow(&host("doc.rust-lang.org")));
        assert!(is_ask(&host("rust-lang.org.evil.com")));
    }

    #[test]
    fn writes_into_git_codewright_or_claude_are_asked_in_every_mode_but_yolo() {
        let root = PathBuf::from("/project");
        let at = |rel: &str| ResolvedPath {
            real: root.join(rel),
            display: rel.into(),
            inside: true,
        };
        let allow_all = vec![
            rule("write_file", "", RuleAction::Allow),
            rule("bash", "git", RuleAction::Allow),
            rule("bash", "cp", RuleAction::Allow),
            rule("bash", "cat", RuleAction::Allow),
        ];
        for mode in [PermissionMode::Normal, PermissionMode::AcceptEdits] {
            let policy = Policy::new(mode, allow_all.clone());
            for (rel, folder) in [
                (".git/config", ".git"),
                ("vendor/lib/.git/hooks/pre-commit", ".git"),
                (".codewright/memory.md", ".codewright"),
                (".claude/agents/coder.md", ".claude"),
            ] {
                let path = at(rel);
                let verdict = policy.check(
                    "write_file",
                    ToolCategory::Write,
                    &Subject::Paths(vec![&path]),
                );
                assert!(
                    matches!(&verdict, Verdict::Ask(r) if r.contains(&format!("{folder}/"))),
                    "{mode:?} {rel}: {verdict:?}"
                );
                // Reading one asks nothing.
                assert!(is_allow(&policy.check(
                    "read_file",
                    ToolCategory::Read,
                    &Subject::Paths(vec![&path])
                )));
            }
            assert!(is_allow(&policy.check(
                "write_file",
                ToolCategory::Write,
                &Subject::Paths(vec![&at(".github/workflows/ci.yml")])
            )));
            for command in [
                "git config core.fsmonitor 'touch x'",
                "git -C . config --add core.hooksPath h",
                "cp evil .git/hooks/pre-commit",
                "cat x > .codewright/agents/coder.md",
                "cp a --target-directory=.claude/commands",
                "git -c core.pager='sh -c evil' log",
                "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0=x git status",
                "env LD_PRELOAD=/tmp/x.so git status",
                "PATH=.:$PATH git status",
            ] {
                assert!(is_ask(&bash(&policy, command)), "{mode:?} {command}");
            }
            for command in [
                "git status",
                "git config --get user.name",
                "cat .gitignore",
                "LANG=C git status",
            ] {
                assert!(is_allow(&bash(&policy, command)), "{mode:?} {command}");
            }
        }
        let yolo = Policy::new(PermissionMode::Yolo, vec![]);
        assert!(is_allow(&yolo.check(
            "write_file",
            ToolCategory::Write,
            &Subject::Paths(vec![&at(".git/config")])
        )));
    }

    #[test]
    fn always_allow_suggests_the_real_command() {
        let policy = Policy::new(
            PermissionMode::Normal,
            vec![rule("bash", "ls", RuleAction::Allow)],
        );
        let suggested = policy.suggest(
            "bash",
            &Subject::Command("FOO=1 env cargo test --all && ls && rm x"),
        );
        let patterns: Vec<&str> = suggested.iter().map(|r| r.pattern.as_str()).collect();
        assert_eq!(patterns, ["cargo test", "rm"]);
        // An unknown program has no name to allow.
        let suggested = policy.suggest("bash", &Subject::Command("$R x; cargo build"));
        let patterns: Vec<&str> = suggested.iter().map(|r| r.pattern.as_str()).collect();
        assert_eq!(patterns, ["cargo build"]);
    }

    /// Each rewording a tester used to delete a folder despite `deny bash rm -rf` in yolo mode.
    #[test]
    fn reworded_commands_cannot_escape_deny_rules() {
        let yolo = Policy::new(
            PermissionMode::Yolo,
            vec![rule("bash", "rm -rf", RuleAction::Deny)],
        );
        // The same program and options, spelled differently: denied.
        for command in [
            "rm -Rf X",
            "rm -R -f X",
            "rm -fR X",
            "/usr/bin/rm -Rf X",
            "rm --recursive --force X",
            "rm -r --force X",
            "rm --rec --forc X",
            "rm -rfv X",
            "rm -v -R -i -f X",
            "rm X -fr",
            "exec -a ls rm -rf X",
            "command rm -Rf X",
            "builtin exec rm -fr X",
            "busybox rm -rf X",
            "nohup setsid rm -rf X",
            "bash -c -e 'rm -rf X'",
            "sh -c -- 'rm -Rf X'",
            "eval 'rm -R -f X'",
            "ls | xargs -i rm -Rf {}",
            "find X -exec rm -R --force {} +",
            "find . -exec rm + {} -rf \\;",
            // Inside compound commands, as an injected instruction would put it.
            "echo cleaning up && rm -rf ~",
            "(cd / && rm -rf ~/)",
            "ls >/dev/null || true; rm -fr \"$HOME\"/*",
            "{ sleep 1; rm -rf ~; }",
            "echo ok | rm -rf ~ 2>&1",
            "x=$(rm -rf ~)",
            "echo \"$(rm -rf ~)\"",
            "rm -rf ~ &",
            "! rm -rf ~",
            "true\nrm -rf ~",
        ] {
            let verdict = bash(&yolo, command);
            assert!(is_deny(&verdict), "{command:?} gave {verdict:?}");
        }
        // The program, or what it is given, comes from an expansion or an alias: asked.
        for command in [
            "R=rm; $R -rf X",
            "${R:-rm} -rf X",
            "$(echo rm) -rf X",
            "`echo rm` -rf X",
            "rm$IFS-rf$IFS X",
            "/bin/r? -rf X",
            "{rm,-rf,X}",
            "$'\\x72m' -rf X",
            "alias x=rm; x -rf X",
            "shopt -s expand_aliases\nalias x=rm\nx -rf X",
            "alias nohup=rm; nohup -rf X",
            "hash -p /bin/rm x; x -rf X",
            "eval \"$CMD\"",
            "echo 'rm -rf X' | sh",
            "bash <(echo rm -rf X)",
            "F=-rf; rm $F X",
            "rm {-r,-f} X",
            "rm $'-\\x72f' X",
            // Not parsed (`for`), and not caught in its raw words either.
            "for d in X; do rm -r \"$d\"; done",
        ] {
            let verdict = bash(&yolo, command);
            assert!(is_ask(&verdict), "{command:?} gave {verdict:?}");
        }
        let reason = |command| match bash(&yolo, command) {
            Verdict::Ask(reason) => reason,
            other => panic!("{command:?} gave {other:?}"),
        };
        assert_eq!(
            reason("R=rm; $R -rf X"),
            "the program's name `$R` comes from a variable or another expansion, so it cannot be checked against your rules"
        );
        assert_eq!(
            reason("alias x=rm; x -rf X"),
            "`x` is an alias the command defines, so it cannot be checked against your rules"
        );
        assert_eq!(
            reason("F=-rf; rm $F X"),
            "`rm $F X` may match the rule `deny bash rm -rf` once the shell expands its arguments"
        );
    }

    #[test]
    fn deny_rules_leave_other_commands_alone() {
        let yolo = Policy::new(
            PermissionMode::Yolo,
            vec![rule("bash", "rm -rf", RuleAction::Deny)],
        );
        for command in [
            "rm -i x",
            "rm -f x",
            "rm -r x",
            "rm *.tmp",
            "ls -R",
            "cp -rf a b",
            "echo rm -rf x",
            "git status && echo $HOME",
            "echo $(date)",
            "[ -f x ] && rm x",
            "find . -name '*.tmp' -exec rm {} +",
            "ls | xargs rm",
            "bash build.sh",
        ] {
            let verdict = bash(&yolo, command);
            assert!(is_allow(&verdict), "{command:?} gave {verdict:?}");
        }
        // An expanded argument cannot change a subcommand written out.
        let no_force_push = Policy::new(
            PermissionMode::Yolo,
            vec![rule("bash", "git push --force", RuleAction::Deny)],
        );
        for command in ["git commit -m \"$(cat msg)\"", "git log --format=$FMT"] {
            let verdict = bash(&no_force_push, command);
            assert!(is_allow(&verdict), "{command:?} gave {verdict:?}");
        }
        for command in ["git push $(echo --force)", "git $SUB --force"] {
            let verdict = bash(&no_force_push, command);
            assert!(!is_allow(&verdict), "{command:?} gave {verdict:?}");
        }
        // With no rule restricting commands there is nothing to escape: yolo runs them.
        let unrestricted = Policy::new(
            PermissionMode::Yolo,
            vec![rule("edit_file", "*.lock", RuleAction::Deny)],
        );
        for command in [
            "R=rm; $R -rf X",
            "echo hi | sh",
            "for f in *; do ls $f; done",
        ] {
            let verdict = bash(&unrestricted, command);
            assert!(is_allow(&verdict), "{command:?} gave {verdict:?}");
        }

        let normal = Policy::new(
            PermissionMode::Normal,
            vec![
                rule("bash", "rm -rf", RuleAction::Deny),
                rule("bash", "git status", RuleAction::Allow),
                rule("bash", "echo", RuleAction::Allow),
                rule("bash", "date", RuleAction::Allow),
            ],
        );
        assert!(is_allow(&bash(&normal, "echo $(date)")));
        assert!(is_allow(&bash(&normal, "git status && echo $HOME")));
        assert!(is_ask(&bash(&normal, "echo $(whoami)")));

        // A rule allowing every command does not let an unknown program past a deny rule.
        let allow_all = Policy::new(
            PermissionMode::Normal,
            vec![
                rule("bash", "*", RuleAction::Allow),
                rule("*", "rm -rf", RuleAction::Deny),
            ],
        );
        assert!(is_allow(&bash(&allow_all, "ls $HOME")));
        assert!(is_ask(&bash(&allow_all, "R=rm; $R -rf X")));
        assert!(is_deny(&bash(&allow_all, "rm -Rf X")));
    }

    #[test]
    fn ask_rules_match_options_by_meaning_too() {
        let policy = Policy::new(
            PermissionMode::Normal,
            vec![
                rule("bash", "git push", RuleAction::Allow),
                rule("bash", "git push --force", RuleAction::Ask),
            ],
        );
        for command in [
            "git push -f origin main",
            "git push --forc",
            "git push origin +main",
            "git push $(echo --force)",
        ] {
            let verdict = bash(&policy, command);
            assert!(is_ask(&verdict), "{command:?} gave {verdict:?}");
        }
        for command in [
            "git push origin main",
            "git push --force-with-lease origin main",
        ] {
            let verdict = bash(&policy, command);
            assert!(is_allow(&verdict), "{command:?} gave {verdict:?}");
        }
    }
}
