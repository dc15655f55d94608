//! `--project`: every command that takes one takes a project's id or its folder, and without it
//! uses the project of the current folder (a folder inside a project is that project).

use crate::error::{bad_input, Result};
use codewright_host::{Host, HostError};
use codewright_protocol::{ErrorKind, ProjectId};
use std::path::PathBuf;

/// What `--project` was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProjectArg {
    /// A number: a project's id (a folder named by digits is `./12`).
    Id(ProjectId),
    Folder(PathBuf),
}

impl std::str::FromStr for ProjectArg {
    type Err = String;

    fn from_str(given: &str) -> Result<ProjectArg, String> {
        if given.trim().is_empty() {
            return Err("give a project's id or its folder".into());
        }
        if given.bytes().all(|b| b.is_ascii_digit()) {
            return given
                .parse()
                .map(|id| ProjectArg::Id(ProjectId(id)))
                .map_err(|_| format!("{given} is not a project id"));
        }
        Ok(ProjectArg::Folder(PathBuf::from(given)))
    }
}

fn current_folder() -> Result<PathBuf> {
    std::env::current_dir().map_err(|e| {
        HostError::new(
            ErrorKind::BadPath,
            format!("cannot read the current folder: {e}"),
        )
    })
}

/// The project `given` names, else the current folder's; a folder that is in no project is an
/// error that says how to add it.
pub fn existing(host: &Host, given: Option<&ProjectArg>) -> Result<ProjectId> {
    let folder = match given {
        Some(ProjectArg::Id(id)) => return host.project(*id).map(|p| p.id),
        Some(ProjectArg::Folder(folder)) => folder.clone(),
        None => current_folder()?,
    };
    if !folder.is_dir() {
        return Err(bad_input(format!(
            "there is no folder {}: --project takes a project's id (see `codewright-cli projects list`) or its folder",
            folder.display()
        )));
    }
    host.project_containing(&folder)?.ok_or_else(|| {
        HostError::new(ErrorKind::NotFound, format!(
            "{} is in no project; add it with `codewright-cli projects add {}`, or pass --project ID (see `codewright-cli projects list`)",
            folder.display(),
            folder.display()
        ))
    })
}

/// The project `given` names, else the current folder's; a folder inside a project is that
/// project, and a folder in none is added as one (as `exec` does for the folder it works in).
pub fn found_or_added(host: &Host, given: Option<&ProjectArg>) -> Result<ProjectId> {
    let folder = match given {
        Some(ProjectArg::Id(id)) => return host.project(*id).map(|p| p.id),
        Some(ProjectArg::Folder(folder)) => folder.clone(),
        None => current_folder()?,
    };
    if folder.is_dir() {
        if let Some(project) = host.project_containing(&folder)? {
            return Ok(project);
        }
    }
    host.project_in(&folder)
}

/// An optional `--project` (one project, or every project without it).
pub fn optional(host: &Host, given: Option<&ProjectArg>) -> Result<Option<ProjectId>> {
    given.map(|given| existing(host, Some(given))).transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digits_are_an_id_and_anything_else_a_folder() {
        assert_eq!("12".parse(), Ok(ProjectArg::Id(ProjectId(12))));
        assert_eq!(
            "./12".parse(),
            Ok(ProjectArg::Folder(PathBuf::from("./12")))
        );
        assert_eq!(".".parse(), Ok(ProjectArg::Folder(PathBuf::from("."))));
        assert!("".parse::<ProjectArg>().is_err());
    }
}
