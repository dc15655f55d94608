//! Skills in the Agent Skills format: a folder with a `SKILL.md` (front matter `name` and
//! `description`, then Markdown instructions), optional reference files and `scripts/`.
//!
//! Progressive disclosure: [`Catalog::prompt_section`] lists only names and descriptions; the
//! model loads a skill's instructions with [`Skill::load`] and its other files with
//! [`Skill::read`] when it needs them (the `skill` tool). Scripts run through `bash`, asked like
//! any command.

use crate::{contained, front_matter, Broken, ExtensionError, Places, Source};
use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

mod cache;

/// The instructions file of a skill folder.
pub const SKILL_FILE: &str = "SKILL.md";
/// A `SKILL.md` or a reference file larger than this is not read.
pub const MAX_FILE: u64 = 256 * 1024;
/// Descriptions longer than this are cut in the prompt (the format's limit).
const MAX_DESCRIPTION: usize = 1024;
/// Skill folders read per place; more are reported, not read.
const MAX_SKILLS: usize = 1000;
/// The folder of Codewright's data folder that [`Places::cache`] names.
pub const CACHE_FOLDER: &str = "cache";
/// Files listed per skill.
const MAX_LISTED: usize = 200;

/// A skill that loaded.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Skill {
    pub name: String,
    pub description: String,
    /// Its folder.
    pub dir: PathBuf,
    pub source: Source,
    /// The folder its files must stay inside ([`crate::contained`]): the project's for a
    /// project's skill, `/` for the user's own ([`Source::root`]).
    #[serde(skip)]
    pub root: PathBuf,
}

/// The skills found for a project: one per name (the place of highest precedence wins), sorted
/// by name, and the folders that could not be used.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Catalog {
    pub skills: Vec<Skill>,
    pub broken: Vec<Broken>,
}

/// Finds the skills of `places`: `<project>/.codewright/skills`, `<project>/.claude/skills`,
/// `~/.codewright/skills`, `~/.claude/skills`, in that order of precedence for the same name.
/// Only the `SKILL.md` files that changed since [`Places::cache`] recorded them are read.
pub fn discover(places: &Places) -> Catalog {
    let mut by_name: BTreeMap<String, Skill> = BTreeMap::new();
    let mut broken = Vec::new();
    let mut cache = places.cache.as_deref().map(cache::Cache::open);
    let mut listed = Vec::new();
    for (source, folder) in Source::folders(places, "skills") {
        let Some(root) = source.root(places) else {
            continue;
        };
        if !contained::is_dir_inside(root, &folder) {
            continue; // absent (the usual case), or leading out of its place: nothing to list
        }
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue; // unreadable: nothing to list
        };
        listed.push(folder.clone());
        // (A link to a folder is followed while it stays in its place — the project, or the
        // user's home, where skills are often linked in from a shared checkout.)
        let mut dirs: Vec<PathBuf> = entries
            .flatten()
            .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
            .filter(|e| {
                e.file_type().is_ok_and(|t| {
                    t.is_dir() || (t.is_symlink() && contained::is_dir_inside(root, &e.path()))
                })
            })
            .map(|e| e.path())
            .collect();
        dirs.sort();
        if dirs.len() > MAX_SKILLS {
            broken.push(Broken {
                path: folder.clone(),
                source,
                reason: format!(
                    "it holds {} skill folders; only the first {MAX_SKILLS} are read",
                    dirs.len()
                ),
            });
            dirs.truncate(MAX_SKILLS);
        }
        for dir in dirs {
            match read_skill(root, &dir, source, cache.as_mut()) {
                Ok(skill) => match by_name.get(&skill.name) {
                    // Two in one place: the first folder (by name) is used, the other said so.
                    Some(first) if first.source == source => broken.push(Broken {
                        reason: format!(
                            "it is named {} like {}, which is used instead",
                            skill.name,
                            first.dir.display()
                        ),
                        path: dir,
                        source,
                    }),
                    // A place of higher precedence has one by this name.
                    Some(_) => {}
                    None => {
                        by_name.insert(skill.name.clone(), skill);
                    }
                },
                Err(reason) => broken.push(Broken {
                    path: dir,
                    source,
                    reason,
                }),
            }
        }
    }
    if let Some(cache) = cache {
        cache.save(&listed);
    }
    Catalog {
        skills: by_name.into_values().collect(),
        broken,
    }
}

/// The skill in `dir`, from `cache` when its `SKILL.md` has not changed since it was recorded.
fn read_skill(
    root: &Path,
    dir: &Path,
    source: Source,
    cache: Option<&mut cache::Cache>,
) -> Result<Skill, String> {
    let path = dir.join(SKILL_FILE);
    // Only a regular file inside the skill's place: a link out is refused, a pipe never waited on.
    let meta = std::fs::metadata(&path)
        .ok()
        .ok_or_else(|| format!("it has no {SKILL_FILE}"))?;
    if !contained::is_file_inside(root, &path) {
        return Err(format!(
            "its {SKILL_FILE} is not a regular file inside its place (a link out of it, or a pipe), so it is not read"
        ));
    }
    let stamp = cache::Stamp::of(&meta);
    let parsed = match (cache, stamp) {
        (Some(cache), Some(stamp)) => match cache.get(&path, stamp) {
            Some(parsed) => parsed,
            None => {
                let parsed = parse_skill(dir, &read_skill_file(root, &path)?);
                cache.put(&path, stamp, &parsed);
                parsed
            }
        },
        _ => parse_skill(dir, &read_skill_file(root, &path)?),
    };
    let (name, description) = parsed?;
    Ok(Skill {
        name,
        description,
        dir: dir.to_path_buf(),
        source,
        root: root.to_path_buf(),
    })
}

/// The bytes of a `SKILL.md` inside `root` (up to one byte over [`MAX_FILE`]).
fn read_skill_file(root: &Path, path: &Path) -> Result<Vec<u8>, String> {
    contained::read(root, path, MAX_FILE)
        .map_err(|e| format!("its {SKILL_FILE}: {e}"))?
        .ok_or_else(|| format!("it has no {SKILL_FILE}"))
}

/// The name and description a `SKILL.md` of the folder `dir` gives, or why it cannot be used.
fn parse_skill(dir: &Path, bytes: &[u8]) -> cache::Parsed {
    if bytes.len() as u64 > MAX_FILE {
        return Err(format!(
            "its {SKILL_FILE} is over {} KB; a skill's instructions must stay under that (move details into reference files)",
            MAX_FILE / 1024
        ));
    }
    let text = std::str::from_utf8(bytes).map_err(|_| format!("its {SKILL_FILE} is not text"))?;
    let doc = front_matter::parse(text, false).map_err(|e| format!("{SKILL_FILE}: {e}"))?;
    let folder = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = doc
        .text("name")
        .map_err(|e| format!("{SKILL_FILE}: {e}"))?
        .unwrap_or(folder);
    check_name(&name).map_err(|e| format!("{SKILL_FILE}: {e}"))?;
    // Without a description, the body's first paragraph says what the skill is for.
    let description = match doc
        .text("description")
        .map_err(|e| format!("{SKILL_FILE}: {e}"))?
    {
        Some(d) if !d.is_empty() => d,
        _ => first_paragraph(&doc.body).ok_or_else(|| {
            format!("{SKILL_FILE} has no `description:` (it tells the model when to use the skill)")
        })?,
    };
    let description = description.split_whitespace().collect::<Vec<_>>().join(" ");
    let description = match description.char_indices().nth(MAX_DESCRIPTION) {
        Some((at, _)) => format!("{}…", &description[..at]),
        None => description,
    };
    Ok((name, description))
}

/// The format's rule for names: 1–64 lowercase letters, digits and hyphens, no hyphen at either
/// end and none doubled.
fn check_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--");
    if ok {
        Ok(())
    } else {
        Err(format!(
            "the name {name:?} is not a skill name: use 1–64 lowercase letters, digits and single hyphens (e.g. pdf-forms)"
        ))
    }
}

fn first_paragraph(body: &str) -> Option<String> {
    body.split("\n\n")
        .map(|p| {
            p.lines()
                .filter(|l| !l.trim_start().starts_with('#'))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .map(|p| p.trim().to_string())
        .find(|p| !p.is_empty())
}

impl Catalog {
    /// The skill named `name`.
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|s| s.name == name)
    }

    /// The catalog without the skills named in `off` (switched off for a task).
    pub fn without(mut self, off: &[String]) -> Catalog {
        self.skills.retain(|s| !off.contains(&s.name));
        self
    }

    /// The catalog with the skills a task ranks higher (TalkCody's conversation-skill priority:
    /// `priority` by name, 0 when unnamed) listed first, for the model to prefer when several
    /// fit; equal ones stay in name order.
    pub fn ranked(mut self, priority: &std::collections::HashMap<String, i64>) -> Catalog {
        let rank = |s: &Skill| priority.get(&s.name).copied().unwrap_or(0);
        self.skills.sort_by_key(|s| std::cmp::Reverse(rank(s)));
        self
    }

    /// What the system prompt says about the skills: names and descriptions only. `None` when
    /// there are none.
    pub fn prompt_section(&self) -> Option<String> {
        if self.skills.is_empty() {
            return None;
        }
        let mut out = String::from(
            "# Skills\n\nSkills are instructions for particular kinds of work, installed by the user. When a request matches a skill's description, load the skill with the skill tool first and follow it; when several match, prefer the one listed first.\n",
        );
        for skill in &self.skills {
            out.push_str(&format!("\n- {}: {}", skill.name, skill.description));
        }
        Some(out)
    }

    /// The nearest names to `name`, for "no skill named …; did you mean …".
    pub fn closest(&self, name: &str) -> Vec<&str> {
        crate::closest(self.skills.iter().map(|s| s.name.as_str()), name)
    }
}

impl Skill {
    /// The skill's instructions for the model: its `SKILL.md` without front matter, where its
    /// folder is, and the other files it holds (read with [`Skill::read`]).
    pub fn load(&self) -> Result<String, ExtensionError> {
        let text = self.read_bounded(&self.dir.join(SKILL_FILE))?;
        let doc = front_matter::parse(&text, false).map_err(ExtensionError::Invalid)?;
        let mut out = format!(
            "# Skill: {}\n\nIts folder: {} (run its scripts from there with bash; paths in the instructions are relative to it).\n\n{}",
            self.name,
            self.dir.display(),
            doc.body.trim_end()
        );
        let files = self.files();
        if !files.is_empty() {
            out.push_str(&format!(
                "\n\n## Files in this skill\n\nRead one with the skill tool: {{\"name\": \"{}\", \"file\": \"<path>\"}}.\n",
                self.name
            ));
            for file in &files {
                out.push_str(&format!("\n- {file}"));
            }
            if files.len() == MAX_LISTED {
                out.push_str("\n- (more files not listed)");
            }
        }
        Ok(out)
    }

    /// One of the skill's files, by its path relative to the skill's folder. Paths that leave
    /// the folder (`..`, absolute, a link pointing out) are refused.
    pub fn read(&self, file: &str) -> Result<String, ExtensionError> {
        let relative = Path::new(file);
        if file.is_empty()
            || relative
                .components()
                .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
        {
            return Err(ExtensionError::Refused(format!(
                "{file:?} is not a path inside the skill: give it relative to the skill's folder, as listed"
            )));
        }
        let root = self
            .dir
            .canonicalize()
            .map_err(|e| ExtensionError::File(format!("the skill's folder cannot be read: {e}")))?;
        let path = root.join(relative).canonicalize().map_err(|_| {
            ExtensionError::NotFound(format!(
                "the skill {} has no file {file}; its files are listed when it is loaded",
                self.name
            ))
        })?;
        if !path.starts_with(&root) {
            return Err(ExtensionError::Refused(format!(
                "{file} points outside the skill's folder"
            )));
        }
        if path.is_dir() {
            return Err(ExtensionError::Refused(format!(
                "{file} is a folder; give a file inside it"
            )));
        }
        self.read_bounded(&path)
    }

    /// The skill's files other than `SKILL.md`, relative to its folder, sorted (hidden files and
    /// links to folders are left out; at most 200).
    pub fn files(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut stack = vec![self.dir.clone()];
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                if entry.file_name().to_string_lossy().starts_with('.') {
                    continue;
                }
                let path = entry.path();
                let Ok(kind) = entry.file_type() else {
                    continue;
                };
                if kind.is_dir() {
                    stack.push(path);
                } else if self.readable(&path, kind) {
                    // (Not a link to a folder or out of the skill, nor a pipe: `read` refuses those.)
                    if let Ok(relative) = path.strip_prefix(&self.dir) {
                        if relative != Path::new(SKILL_FILE) {
                            out.push(relative.to_string_lossy().into_owned());
                        }
                    }
                }
            }
            if out.len() >= MAX_LISTED {
                break;
            }
        }
        out.sort();
        out.truncate(MAX_LISTED);
        out
    }

    /// Whether the entry at `path` is a file `read` gives: a regular file, or a link to one in
    /// the skill's folder.
    fn readable(&self, path: &Path, kind: std::fs::FileType) -> bool {
        if kind.is_file() {
            return true;
        }
        kind.is_symlink() && contained::is_file_inside(&self.dir, path)
    }

    /// A file of the skill's, inside its folder and its place, read up to [`MAX_FILE`].
    fn read_bounded(&self, path: &Path) -> Result<String, ExtensionError> {
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let refused = |e: contained::Refusal| match e {
            contained::Refusal::Outside { .. } => ExtensionError::Refused(format!(
                "{name} leads outside the skill's place (through a link), so it is not read"
            )),
            contained::Refusal::NotAFile { .. } => {
                ExtensionError::Refused(format!("{name} is not a regular file"))
            }
            contained::Refusal::NotText { .. } => {
                ExtensionError::Refused(format!("{name} is not text"))
            }
            contained::Refusal::Unreadable { error, .. } => {
                ExtensionError::File(format!("{name} cannot be read: {error}"))
            }
        };
        if !contained::is_dir_inside(&self.root, &self.dir) {
            return Err(ExtensionError::Refused(format!(
                "the skill's folder {} now leads outside its place, so nothing in it is read",
                self.dir.display()
            )));
        }
        let bytes = contained::read(&self.dir, path, MAX_FILE)
            .map_err(refused)?
            .ok_or_else(|| {
                ExtensionError::NotFound(format!("{name} cannot be read: it is gone"))
            })?;
        if bytes.len() as u64 > MAX_FILE {
            return Err(ExtensionError::Refused(format!(
                "{name} is over the {} KB a skill's file may be; read parts of it with read_file",
                MAX_FILE / 1024
            )));
        }
        String::from_utf8(bytes).map_err(|_| ExtensionError::Refused(format!("{name} is not text")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tasks_priorities_list_its_skills_higher_first() {
        let named = |name: &str| Skill {
            name: name.into(),
            description: format!("does {name}"),
            dir: PathBuf::from(name),
            source: Source::Project,
            root: PathBuf::new(),
        };
        let catalog = Catalog {
            skills: vec![named("a"), named("b"), named("c"), named("d")],
            broken: vec![],
        };
        let ranks = [
            ("c".to_string(), 2),
            ("d".to_string(), 1),
            ("a".to_string(), -1),
        ];
        let ranked = catalog.ranked(&ranks.into_iter().collect());
        let order: Vec<&str> = ranked.skills.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(order, ["c", "d", "b", "a"]);
        let section = ranked.prompt_section().unwrap();
        assert!(
            section.contains("prefer the one listed first.\n\n- c: does c\n- d: does d\n- b:"),
            "{section}"
        );
    }

    fn skill(root: &Path, folder: &str, text: &str) -> PathBuf {
        let dir = root.join(folder);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(SKILL_FILE), text).unwrap();
        dir
    }

    fn places(project: &Path, home: &Path) -> Places {
        Places {
            project: project.to_path_buf(),
            home: Some(home.to_path_buf()),
            cache: None,
            project_trusted: true,
        }
    }

    #[test]
    fn every_place_is_read_with_its_precedence_and_broken_skills_are_listed() {
        let project = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        let p = project.path();
        let h = home.path();
        // The same name in all four places: the project's .codewright wins.
        for (root, label) in [
            (p.join(".codewright/skills"), "project"),
            (p.join(".claude/skills"), "project-claude"),
            (h.join(".codewright/skills"), "user"),
            (h.join(".claude/skills"), "user-claude"),
        ] {
            skill(
                &root,
                "review",
                &format!("---\nname: review\ndescription: from {label}\n---\nbody"),
            );
        }
        skill(
            &p.join(".claude/skills"),
            "lint",
            "---\nname: lint\ndescription: from project-claude\n---\n",
        );
        skill(
            &h.join(".claude/skills"),
            "lint",
            "---\nname: lint\ndescription: from user-claude\n---\n",
        );
        skill(
            &h.join(".claude/skills"),
            "pdf",
            "---\nname: pdf\ndescription: Read PDF files\n---\n",
        );
        skill(
            &h.join(".codewright/skills"),
            "notes",
            "# Notes\n\nKeeps notes tidy.\n",
        );
        skill(
            &p.join(".codewright/skills"),
            "bad-yaml",
            "---\nname: bad-yaml\ndescription: a: b\n---\n",
        );
        skill(
            &p.join(".codewright/skills"),
            "Bad Name",
            "---\ndescription: d\n---\n",
        );
        skill(
            &h.join(".codewright/skills"),
            "zz-notes",
            "---\nname: notes\ndescription: a copy\n---\n",
        );
        std::fs::create_dir_all(p.join(".codewright/skills/empty")).unwrap();
        let catalog = discover(&places(p, h));
        let found: Vec<(&str, &str, Source)> = catalog
            .skills
            .iter()
            .map(|s| (s.name.as_str(), s.description.as_str(), s.source))
            .collect();
        assert_eq!(
            found,
            [
                ("lint", "from project-claude", Source::ProjectClaude),
                ("notes", "Keeps notes tidy.", Source::User),
                ("pdf", "Read PDF files", Source::UserClaude),
                ("review", "from project", Source::Project),
            ]
        );
        let broken: Vec<(String, &str)> = catalog
            .broken
            .iter()
            .map(|b| {
                (
                    b.path.file_name().unwrap().to_string_lossy().into_owned(),
                    b.reason.as_str(),
                )
            })
            .collect();
        assert_eq!(broken.len(), 4, "{broken:?}");
        assert!(broken[0].0 == "Bad Name" && broken[0].1.contains("not a skill name"));
        assert!(
            broken[1].0 == "bad-yaml" && broken[1].1.contains("not valid YAML (line 3)"),
            "{broken:?}"
        );
        assert!(broken[2].0 == "empty" && broken[2].1 == "it has no SKILL.md");
        assert!(
            broken[3].0 == "zz-notes"
                && broken[3].1.starts_with("it is named notes like ")
                && broken[3].1.ends_with("notes, which is used instead"),
            "two of one name in one place: {broken:?}"
        );
        // Switched off for a task: gone from the prompt.
        let prompt = catalog
            .clone()
            .without(&["pdf".into()])
            .prompt_section()
            .unwrap();
        assert!(prompt.contains("\n- lint: from project-claude") && !prompt.contains("pdf"));
        assert_eq!(Catalog::default().prompt_section(), None);
        assert_eq!(catalog.closest("reveiw"), ["review"]);
        assert!(catalog.closest("zzzzzzzz").is_empty());
    }

    #[test]
    fn a_skill_loads_its_body_and_files_and_reads_nothing_outside_its_folder() {
        let project = tempfile::tempdir().unwrap();
        let dir = skill(
            &project.path().join(".codewright/skills"),
            "forms",
            "---\nname: forms\ndescription: Fill PDF forms\n---\n\n# Forms\nRun scripts/fill.py.\n",
        );
        std::fs::create_dir_all(dir.join("scripts")).unwrap();
        std::fs::write(dir.join("scripts/fill.py"), "print('filled')\n").unwrap();
        std::fs::write(dir.join("reference.md"), "field names").unwrap();
        std::fs::write(dir.join(".hidden"), "x").unwrap();
        std::fs::write(project.path().join("secret.txt"), "secret").unwrap();
        std::os::unix::fs::symlink(project.path().join("secret.txt"), dir.join("link.txt"))
            .unwrap();
        std::os::unix::fs::symlink(dir.join("scripts"), dir.join("folder-link")).unwrap();
        std::os::unix::fs::symlink(dir.join("reference.md"), dir.join("alias.md")).unwrap();
        let catalog = discover(&Places {
            project: project.path().to_path_buf(),
            home: None,
            cache: None,
            project_trusted: true,
        });
        let forms = catalog.get("forms").unwrap();
        let loaded = forms.load().unwrap();
        assert!(
            loaded.starts_with("# Skill: forms\n\nIts folder: "),
            "{loaded}"
        );
        assert!(
            loaded.contains("# Forms\nRun scripts/fill.py.") && !loaded.contains("description:")
        );
        assert!(
            loaded.ends_with("\n- alias.md\n- reference.md\n- scripts/fill.py"),
            "{loaded}"
        );
        assert_eq!(forms.read("reference.md").unwrap(), "field names");
        assert_eq!(
            forms.read("alias.md").unwrap(),
            "field names",
            "a link inside is read"
        );
        assert_eq!(
            forms.read("./scripts/fill.py").unwrap(),
            "print('filled')\n"
        );
        assert!(forms
            .read("../../../secret.txt")
            .unwrap_err()
            .to_string()
            .contains("not a path inside the skill"));
        assert!(forms
            .read("/etc/passwd")
            .unwrap_err()
            .to_string()
            .contains("not a path inside the skill"));
        assert!(forms
            .read("link.txt")
            .unwrap_err()
            .to_string()
            .contains("outside the skill's folder"));
        assert!(forms
            .read("nope.md")
            .unwrap_err()
            .to_string()
            .contains("has no file nope.md"));
        assert!(forms
            .read("scripts")
            .unwrap_err()
            .to_string()
            .contains("is a folder"));
        std::fs::write(dir.join("big.md"), vec![b'a'; MAX_FILE as usize + 1]).unwrap();
        assert!(forms
            .read("big.md")
            .unwrap_err()
            .to_string()
            .contains("over the 256 KB"));
    }

    #[test]
    fn what_was_read_is_used_while_a_skill_file_is_unchanged_and_never_for_a_fresh_one() {
        use std::time::{Duration, SystemTime};
        let project = tempfile::tempdir().unwrap();
        let other = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        let data = tempfile::tempdir().unwrap();
        let places = Places {
            cache: Some(data.path().to_path_buf()),
            project_trusted: true,
            ..places(project.path(), home.path())
        };
        let skills = home.path().join(".claude/skills");
        let text = |d: &str| format!("---\nname: forms\ndescription: {d}\n---\nBody.\n");
        let description =
            |places: &Places| discover(places).get("forms").map(|s| s.description.clone());
        let an_hour_ago = SystemTime::now() - Duration::from_secs(3600);
        // Written in place (the same inode), its modification time set.
        let rewrite = |file: &Path, body: &str, modified: SystemTime| {
            let f = std::fs::OpenOptions::new()
                .write(true)
                .truncate(true)
                .open(file)
                .unwrap();
            std::io::Write::write_all(&mut &f, body.as_bytes()).unwrap();
            f.set_modified(modified).unwrap();
        };
        let stamp = |file: &Path| cache::Stamp::of(&std::fs::metadata(file).unwrap()).unwrap();
        // What the cache holds for `file` as it is now.
        let recorded = |file: &Path| cache::Cache::open(data.path()).get(file, stamp(file));
        // Plants a record for `file` as it is now, as if it had said `what`.
        let plant = |file: &Path, what: &str| {
            let mut cache = cache::Cache::open(data.path());
            cache.put(file, stamp(file), &Ok(("forms".into(), what.into())));
            cache.save(&[]);
        };

        let file = skill(&skills, "forms", &text("Fill in forms")).join(SKILL_FILE);
        rewrite(&file, &text("Fill in forms"), an_hour_ago);
        assert_eq!(description(&places).as_deref(), Some("Fill in forms"));
        assert_eq!(
            recorded(&file),
            Some(Ok(("forms".into(), "Fill in forms".into())))
        );
        // The record is what a run uses while the file is unchanged: one planted is believed.
        plant(&file, "PLANTED");
        assert_eq!(description(&places).as_deref(), Some("PLANTED"));
        // Any change is read: new content of the same size with its time set back (its change
        // time moved), ...
        rewrite(&file, &text("Fill in formz"), an_hour_ago);
        assert_eq!(description(&places).as_deref(), Some("Fill in formz"));
        // ... a new file renamed over it, with the same content and time (another inode), ...
        plant(&file, "PLANTED");
        assert_eq!(description(&places).as_deref(), Some("PLANTED"));
        let new = skills.join("forms/SKILL.md.new");
        std::fs::write(&new, text("Fill in formz")).unwrap();
        std::fs::File::options()
            .write(true)
            .open(&new)
            .unwrap()
            .set_modified(an_hour_ago)
            .unwrap();
        std::fs::rename(&new, &file).unwrap();
        assert_eq!(description(&places).as_deref(), Some("Fill in formz"));
        // ... and another size.
        rewrite(&file, &text("Fill in forms, longer"), an_hour_ago);
        assert_eq!(
            description(&places).as_deref(),
            Some("Fill in forms, longer")
        );

        // A file modified just now (here: in the future, so however slow the machine) is read
        // every time and never recorded: a second write of the same size in the same tick of
        // the clock would look unchanged.
        rewrite(
            &file,
            &text("Fill in forms CCC"),
            SystemTime::now() + Duration::from_secs(3600),
        );
        assert_eq!(description(&places).as_deref(), Some("Fill in forms CCC"));
        assert_eq!(recorded(&file), None);

        // A broken skill is recorded as broken.
        rewrite(&file, "---\nname: Not A Name\n---\n", an_hour_ago);
        let reason = &discover(&places).broken[0].reason;
        assert!(reason.contains("is not a skill name"), "{reason}");
        assert_eq!(recorded(&file), Some(Err(reason.clone())));

        // Another project's skills are kept when this one's are read; a removed skill is gone
        // from the catalog and from the cache.
        let pdf = skill(
            &other.path().join(".codewright/skills"),
            "pdf",
            "---\ndescription: Read PDFs\n---\n",
        )
        .join(SKILL_FILE);
        rewrite(&pdf, "---\ndescription: Read PDFs\n---\n", an_hour_ago);
        let in_other = Places {
            project: other.path().to_path_buf(),
            ..places.clone()
        };
        assert!(discover(&in_other).get("pdf").is_some());
        let gone = stamp(&file);
        std::fs::remove_dir_all(skills.join("forms")).unwrap();
        assert_eq!(description(&places), None);
        assert_eq!(cache::Cache::open(data.path()).get(&file, gone), None);
        assert!(
            recorded(&pdf).is_some(),
            "the other project's skill is still recorded"
        );

        // A cache that is not one is read around, then replaced.
        let written: Vec<_> = std::fs::read_dir(data.path()).unwrap().flatten().collect();
        assert_eq!(written.len(), 1, "one file, the test program's");
        std::fs::write(written[0].path(), "{ not json").unwrap();
        assert!(discover(&in_other).get("pdf").is_some());
        assert!(recorded(&pdf).is_some());
    }
}
