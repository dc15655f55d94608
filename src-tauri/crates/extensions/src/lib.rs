//! What users add to Codewright as files, in the conventions the ecosystem already shares, so a
//! user's existing `.claude/` folder works on day one:
//!
//! - [`agents`]: roles the model takes in a task (instructions, an allow-list of tools, a
//!   model): coder, planner, reviewer and explorer built in, more as Markdown files.
//! - [`skills`]: folders with a `SKILL.md` (the Agent Skills format). Only their names and
//!   descriptions go into the system prompt; the model loads one with the `skill` tool.
//! - [`commands`]: custom slash commands, Markdown files whose body becomes the prompt
//!   (`$ARGUMENTS`, `$1`… filled in).
//! - [`memory`]: the project's and the user's notes kept across tasks.
//! - [`task_files`]: pieces of work written down as Markdown files (ayder's convention), which
//!   `exec --implement` runs and marks done.
//!
//! Each kind is found in the project and in the user's home, `.codewright/` before `.claude/`
//! and the project before the user ([`Places`]). A file that cannot be read is reported with the
//! reason, never fatal to the others.

pub mod agents;
pub mod commands;
pub mod contained;
mod error;
pub mod front_matter;
pub mod memory;
pub mod skills;
pub mod task_files;

pub use error::ExtensionError;

use std::path::PathBuf;

/// Where extensions are looked for — the project folder and the user's home folder — and where
/// what was read of them may be kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Places {
    pub project: PathBuf,
    /// `None` when the home folder is unknown (only the project's extensions are found).
    pub home: Option<PathBuf>,
    /// A folder where what was read from skills is kept between runs (a file per program), so a
    /// run reads only the ones that changed (`None`: every skill is read each time).
    pub cache: Option<PathBuf>,
    /// The user trusts the project: the agents, commands and skills its folder defines
    /// (`.codewright/`, `.claude/`) are used. Until then only the user's own and the built-in
    /// ones are: a cloned repository cannot replace the coder or hand the reviewer edit tools.
    pub project_trusted: bool,
}

/// What a run found: where extensions are looked for, the skills it offers, and the agent it
/// runs as.
#[derive(Debug, Clone, Default)]
pub struct Installed {
    /// `None` outside a run (nothing found).
    pub places: Option<Places>,
    pub skills: skills::Catalog,
    /// `None`: the default agent (the coder), with nothing to add to the prompt.
    pub agent: Option<agents::AgentDef>,
}

/// Replaces the file at `path` with `bytes` whole, through a temporary file in its folder (made
/// if missing) renamed over it: a reader, or a crash, sees the old file or the new one, never
/// half of one.
pub fn write_whole(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    let folder = path.parent().unwrap_or(std::path::Path::new("."));
    std::fs::create_dir_all(folder)?;
    let mut file = tempfile::NamedTempFile::new_in(folder)?;
    std::io::Write::write_all(&mut file, bytes)?;
    file.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// What a project's folder defines for Codewright (agents, commands, skills, by name), asked
/// about before the project is trusted ([`Places::project_trusted`]). Empty: nothing to ask.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProjectDefines {
    pub agents: Vec<String>,
    pub commands: Vec<String>,
    pub skills: Vec<String>,
}

impl ProjectDefines {
    pub fn is_empty(&self) -> bool {
        self.agents.is_empty() && self.commands.is_empty() && self.skills.is_empty()
    }

    /// One line for a person: "agents coder, reviewer; commands fix; skills deploy".
    pub fn summary(&self) -> String {
        [
            ("agents", &self.agents),
            ("commands", &self.commands),
            ("skills", &self.skills),
        ]
        .iter()
        .filter(|(_, names)| !names.is_empty())
        .map(|(kind, names)| format!("{kind} {}", names.join(", ")))
        .collect::<Vec<_>>()
        .join("; ")
    }
}

/// What the folder `project` defines, read as a trusted project's would be (only names; the
/// files are read contained, like always).
pub fn project_defines(project: &std::path::Path) -> ProjectDefines {
    let places = Places {
        project: project.to_path_buf(),
        home: None,
        cache: None,
        project_trusted: true,
    };
    let mut agents: Vec<String> = agents::discover(&places)
        .agents
        .into_iter()
        .filter(|a| a.source.is_some())
        .map(|a| a.name)
        .collect();
    agents.sort();
    ProjectDefines {
        agents,
        commands: commands::discover(&places)
            .commands
            .into_iter()
            .map(|c| c.name)
            .collect(),
        skills: skills::discover(&places)
            .skills
            .into_iter()
            .map(|s| s.name)
            .collect(),
    }
}

/// The user's home folder, where their own extensions are (`~/.codewright`, `~/.claude`).
pub fn user_home() -> Option<PathBuf> {
    dirs::home_dir()
}

/// A file or folder that could not be used as an extension, and why.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Broken {
    pub path: PathBuf,
    pub source: Source,
    pub reason: String,
}

/// Where one extension was found, in order of precedence (first wins for the same name).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Source {
    /// `<project>/.codewright/…`
    Project,
    /// `<project>/.claude/…`
    ProjectClaude,
    /// `~/.codewright/…`
    User,
    /// `~/.claude/…`
    UserClaude,
}

impl Source {
    /// The folders of `kind` (`"skills"`, …) in order of precedence, with their sources.
    fn folders(places: &Places, kind: &str) -> Vec<(Source, PathBuf)> {
        let mut out = Vec::new();
        if places.project_trusted {
            out.push((
                Source::Project,
                places.project.join(".codewright").join(kind),
            ));
            out.push((
                Source::ProjectClaude,
                places.project.join(".claude").join(kind),
            ));
        }
        if let Some(home) = &places.home {
            out.push((Source::User, home.join(".codewright").join(kind)));
            out.push((Source::UserClaude, home.join(".claude").join(kind)));
        }
        out
    }

    /// The folder everything from this source must stay inside ([`contained`]): the project's.
    /// The user's own files may lead anywhere (dotfiles, a Nix store), still only as regular files
    /// read up to their caps (`None` when the home folder is unknown).
    pub fn root(self, places: &Places) -> Option<&std::path::Path> {
        match self {
            Source::Project | Source::ProjectClaude => Some(&places.project),
            Source::User | Source::UserClaude => {
                places.home.as_ref().map(|_| std::path::Path::new("/"))
            }
        }
    }

    /// How a person would name it ("project", "user (.claude)").
    pub fn label(self) -> &'static str {
        match self {
            Source::Project => "project",
            Source::ProjectClaude => "project (.claude)",
            Source::User => "user",
            Source::UserClaude => "user (.claude)",
        }
    }
}

/// Up to three of `names` nearest to `name` (a typo, a part of it), nearest first, for "did you
/// mean …".
pub fn closest<'a>(names: impl Iterator<Item = &'a str>, name: &str) -> Vec<&'a str> {
    // A namespaced name (`git:commit`) is near its last part too.
    let score = |n: &str| distance(n, name).min(distance(n.rsplit(':').next().unwrap_or(n), name));
    let mut scored: Vec<(usize, &str)> = names.map(|n| (score(n), n)).collect();
    scored.sort();
    let limit = (name.chars().count() / 2).max(2);
    scored
        .into_iter()
        .filter(|(d, n)| *d <= limit || (name.len() > 1 && (n.contains(name) || name.contains(*n))))
        .take(3)
        .map(|(_, n)| n)
        .collect()
}

/// Edit distance in characters.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            let next = (row[j + 1] + 1).min(row[j] + 1).min(prev + cost);
            prev = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}
