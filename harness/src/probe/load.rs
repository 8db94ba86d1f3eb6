//! Probe files found under paths, read and parsed, and checked together (unique ids, fixture
//! directories).

use super::problems::string_offset;
use super::*;
use crate::located::Located;
use std::path::{Path, PathBuf};

/// True for a file under a `claude-code` directory of the probes (`probes/claude-code/x.toml`): the
/// probes that measure Claude Code, run on it only unless they name their subjects.
pub(crate) fn in_claude_code_dir(path: &Path) -> bool {
    path.parent().and_then(Path::file_name).is_some_and(|d| d == "claude-code")
}

/// Reads and parses a probe file.
pub fn load(path: &Path) -> Result<Probe, Located> {
    load_with(path, &Known::default())
}

/// Reads and parses a probe file that may name what `known` holds ([`parse_with`]).
pub fn load_with(path: &Path, known: &Known) -> Result<Probe, Located> {
    let bytes = crate::safe_fs::read_capped(path, crate::safe_fs::MAX_TEXT_BYTES).map_err(|e| {
        Located::at(path, "", 0, format!("cannot read: {e}")).hint("a probe is a regular file of TOML text")
    })?;
    let text = String::from_utf8(bytes).map_err(|e| {
        // the place of the first byte that is not UTF-8
        let ok = e.utf8_error().valid_up_to();
        let valid = std::str::from_utf8(&e.as_bytes()[..ok]).unwrap_or_default();
        Located::at(path, valid, ok, "the file is not UTF-8 text")
            .hint("a probe file is TOML, UTF-8 encoded: write bytes that are not text as a base64 file")
    })?;
    parse_with(path, &text, known)
}

/// Why the probes under some paths could not be loaded ([`discover`], [`load_all`]).
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// A path given is neither a file nor a directory.
    #[error("{}: no such probe file or directory", .0.display())]
    NoSuchPath(PathBuf),
    /// A directory could not be walked.
    #[error("{}", path.display())]
    Walk {
        /// The directory given.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The paths hold no `*.toml` file.
    #[error("no probe files (*.toml) under {}", paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "))]
    NoProbeFiles {
        /// The paths given.
        paths: Vec<PathBuf>,
    },
    /// A probe file is wrong (file:line:col, what, a hint).
    #[error(transparent)]
    Probe(#[from] Located),
    /// Two probes have one id, case aside (`also` is the other's id when it differs in case).
    #[error(
        "{}: probe id {id:?} is also used by {}{}: ids are unique, case aside (they name golden files)",
        file.display(),
        other.display(),
        also.as_ref().map(|a| format!(" (as {a:?})")).unwrap_or_default()
    )]
    DuplicateId {
        /// The file loaded second.
        file: PathBuf,
        /// Its id.
        id: String,
        /// The file that has it already.
        other: PathBuf,
        /// The other's id when it differs in case.
        also: Option<String>,
    },
}

/// Every `*.toml` under the given paths (files taken as they are, directories walked), sorted.
pub fn discover(paths: &[PathBuf]) -> Result<Vec<PathBuf>, LoadError> {
    let mut out = Vec::new();
    for p in paths {
        if p.exists() && !p.is_dir() {
            // taken as it is: a file that is not a regular one is refused when it is loaded
            out.push(p.clone());
        } else if p.is_dir() {
            let found = crate::safe_fs::walk_files(p, &|f| f.extension().is_some_and(|x| x == "toml"));
            out.extend(found.map_err(|source| LoadError::Walk { path: p.clone(), source })?);
        } else {
            return Err(LoadError::NoSuchPath(p.clone()));
        }
    }
    out.sort();
    out.dedup();
    if out.is_empty() {
        return Err(LoadError::NoProbeFiles { paths: paths.to_vec() });
    }
    Ok(out)
}

/// Each probe's `[fixture] dir` is a directory under `fixtures`: a missing one is an error of the probe
/// file, placed on its value, before anything runs.
pub fn check_fixture_dirs(probes: &[Probe], fixtures: &Path) -> Result<(), Located> {
    for p in probes {
        let Some(dir) = &p.fixture.dir else { continue };
        if !fixtures.join(dir).is_dir() {
            let at = string_offset(&p.source, dir).unwrap_or(0);
            let message = format!("fixture dir {dir:?} is not a directory under {}", fixtures.display());
            let hint = "name a directory under the project's fixtures (probelab.toml `fixtures`)";
            return Err(Located::at(&p.path, &p.source, at, message).hint(hint));
        }
    }
    Ok(())
}

/// Loads every probe under `paths`; ids must be unique.
pub fn load_all(paths: &[PathBuf]) -> Result<Vec<Probe>, LoadError> {
    load_all_with(paths, &Known::default())
}

/// [`load_all`] for a project whose probes may name what `known` holds ([`parse_with`]).
pub fn load_all_with(paths: &[PathBuf], known: &Known) -> Result<Vec<Probe>, LoadError> {
    let mut probes: Vec<Probe> = Vec::new();
    for f in discover(paths)? {
        let p = load_with(&f, known)?;
        // ids name golden files: two that differ only in case are one file on a case-insensitive disk
        if let Some(other) = probes.iter().find(|o| o.id.eq_ignore_ascii_case(&p.id)) {
            let also = (other.id != p.id).then(|| other.id.clone());
            return Err(LoadError::DuplicateId { file: f, id: p.id, other: other.path.clone(), also });
        }
        probes.push(p);
    }
    Ok(probes)
}
