//! The project a `probelab` command works in: a suite of probes with its goldens and fixtures, rooted
//! wherever the user keeps it — not where this binary was built.
//!
//! The root is found by walking up from the current directory to the first directory that holds a
//! `probelab.toml` (or, without one, a `probes/` directory: this repository, a suite laid out the default
//! way). `probelab init` writes a `probelab.toml` and the empty `probes/`, `golden/`, `fixtures/` beside
//! it. Every path in the file is relative to the file's directory:
//!
//! ```toml
//! # probelab.toml
//! probes = "probes"          # probe files (*.toml, walked); `probelab new` writes here
//! golden = "golden"          # golden/<subject>/<id>.snap and golden/blobs/ (`--golden DIR` overrides)
//! fixtures = "fixtures"      # `[fixture] dir = "x"` copies fixtures/x into the sandbox's cwd
//! out = "target/probelab"    # evidence, durations of the last run, matrix shards
//! ```
//!
//! Unknown keys, wrong types and empty paths are errors with `file:line:col`.

use serde::Deserialize;
use std::path::{Path, PathBuf};
use toml::Spanned;

/// The name of the project file.
pub const FILE: &str = "probelab.toml";

/// A project file that cannot be used, or no project at all: where, what, and what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{place}: {message}{}", hint.as_ref().map(|h| format!("\n  hint: {h}")).unwrap_or_default())]
pub struct ProjectError {
    /// `file:line:col`, or the directory searched when there is no project.
    pub place: String,
    /// What is wrong.
    pub message: String,
    /// How to fix it.
    pub hint: Option<String>,
}

/// `probelab.toml` as written (its keys are documented in docs/probe-format.md: [`crate::probe::keys`]).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ProjectFile {
    #[serde(default)]
    probes: Option<Spanned<String>>,
    #[serde(default)]
    golden: Option<Spanned<String>>,
    #[serde(default)]
    fixtures: Option<Spanned<String>>,
    #[serde(default)]
    out: Option<Spanned<String>>,
}

/// Where a suite's parts live (absolute or relative to the current directory, as the root was found).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Project {
    /// The directory holding `probelab.toml` (or `probes/`).
    pub root: PathBuf,
    /// The project file, when there is one.
    pub file: Option<PathBuf>,
    /// Probe files.
    pub probes: PathBuf,
    /// Goldens and their blobs.
    pub golden: PathBuf,
    /// Fixture trees.
    pub fixtures: PathBuf,
    /// What runs leave behind that is not a golden: evidence, durations, matrix shards.
    pub out: PathBuf,
}

impl Project {
    /// The default layout rooted at `root`.
    pub fn default_at(root: &Path) -> Project {
        Project {
            root: root.to_path_buf(),
            file: None,
            probes: root.join("probes"),
            golden: root.join("golden"),
            fixtures: root.join("fixtures"),
            out: root.join("target").join("probelab"),
        }
    }

    /// The project of `dir` itself: its `probelab.toml` if present (parsed), else the default layout when
    /// it holds `probes/`, else none.
    pub fn at(dir: &Path) -> Result<Option<Project>, ProjectError> {
        let file = dir.join(FILE);
        // anything but a directory by that name is the project file (a FIFO is refused, not waited on)
        if file.exists() && !file.is_dir() {
            let text = crate::safe_fs::read_text(&file).map_err(|e| ProjectError {
                place: format!("{}:1:1", file.display()),
                message: format!("cannot read: {e}"),
                hint: None,
            })?;
            return parse(&file, &text).map(Some);
        }
        if dir.join("probes").is_dir() {
            return Ok(Some(Project::default_at(dir)));
        }
        Ok(None)
    }

    /// The project `start` is in: `start` or its nearest ancestor holding `probelab.toml` or `probes/`.
    pub fn find(start: &Path) -> Result<Project, ProjectError> {
        for dir in start.ancestors() {
            if let Some(p) = Project::at(dir)? {
                return Ok(p);
            }
        }
        Err(ProjectError {
            place: start.display().to_string(),
            message: format!("no {FILE} (or probes/ directory) here or in any parent directory"),
            hint: Some("`probelab init` makes this directory a probelab project".into()),
        })
    }

    /// The lab's layout for running this project's probes with `engine` as the built-in engine.
    pub fn layout(&self, engine: PathBuf) -> crate::lab::Layout {
        crate::lab::Layout { fixtures: self.fixtures.clone(), golden: self.golden.clone(), engine }
    }

    /// `path` shown relative to the root when it is under it.
    pub fn show(&self, path: &Path) -> String {
        path.strip_prefix(&self.root).unwrap_or(path).display().to_string()
    }
}

/// Parses a project file's text; paths are taken relative to the file's directory.
pub fn parse(file: &Path, text: &str) -> Result<Project, ProjectError> {
    let at = |offset: usize, message: String, hint: Option<&str>| {
        let (line, col) = stub_messages::script::line_col(text, offset);
        ProjectError { place: format!("{}:{line}:{col}", file.display()), message, hint: hint.map(str::to_string) }
    };
    let raw: ProjectFile = toml::from_str(text).map_err(|e| {
        let msg = e.message().trim_end().to_string();
        let hint = msg.contains("unknown field").then_some("the keys are probes, golden, fixtures and out (paths)");
        at(e.span().map(|s| s.start).unwrap_or(0), msg, hint)
    })?;
    let root = file.parent().map(Path::to_path_buf).unwrap_or_default();
    let root = if root.as_os_str().is_empty() { PathBuf::from(".") } else { root };
    let mut project = Project::default_at(&root);
    project.file = Some(file.to_path_buf());
    for (value, slot) in [
        (&raw.probes, &mut project.probes),
        (&raw.golden, &mut project.golden),
        (&raw.fixtures, &mut project.fixtures),
        (&raw.out, &mut project.out),
    ] {
        if let Some(v) = value {
            if v.get_ref().trim().is_empty() {
                return Err(at(v.span().start, "an empty path".into(), Some("a directory, relative to this file")));
            }
            *slot = root.join(v.get_ref());
        }
    }
    Ok(project)
}

/// The file `probelab init` writes.
pub const INIT_FILE: &str = r#"# probelab.toml: this directory is a probelab project (a suite of probes, their goldens and fixtures).
# probelab finds it by walking up from the current directory. Paths are relative to this file.
probes = "probes"          # probe files (*.toml); `probelab new NAME` writes probes/NAME.toml
golden = "golden"          # golden/<subject>/<probe-id>.snap and golden/blobs/; `--golden DIR` overrides
fixtures = "fixtures"      # trees a probe copies with [fixture] dir = "NAME"
out = "target/probelab"    # evidence, durations of the last run, matrix shards
"#;

/// `probelab init`: writes `dir/probelab.toml` and the empty `probes/`, `golden/`, `fixtures/` (an
/// existing project file is left alone: an error). Returns what it made.
pub fn init(dir: &Path) -> Result<Vec<PathBuf>, ProjectError> {
    let file = dir.join(FILE);
    let fail = |p: &Path, e: std::io::Error| ProjectError {
        place: p.display().to_string(),
        message: e.to_string(),
        hint: None,
    };
    if file.exists() {
        return Err(ProjectError {
            place: file.display().to_string(),
            message: "exists already".into(),
            hint: Some("edit it, or remove it to start again".into()),
        });
    }
    std::fs::create_dir_all(dir).map_err(|e| fail(dir, e))?;
    std::fs::write(&file, INIT_FILE).map_err(|e| fail(&file, e))?;
    let mut made = vec![file];
    for sub in ["probes", "golden", "fixtures"] {
        let p = dir.join(sub);
        if !p.exists() {
            std::fs::create_dir_all(&p).map_err(|e| fail(&p, e))?;
            made.push(p);
        }
    }
    Ok(made)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        parse(Path::new("/p/probelab.toml"), text).err().map(|e| e.to_string()).unwrap_or_else(|| "parsed".into())
    }

    #[test]
    fn paths_are_relative_to_the_file() {
        let p = parse(Path::new("/p/probelab.toml"), "golden = \"g/one\"\nout = \"/abs\"\n")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.root, PathBuf::from("/p"));
        assert_eq!(p.golden, PathBuf::from("/p/g/one"));
        assert_eq!(p.probes, PathBuf::from("/p/probes"));
        assert_eq!(p.out, PathBuf::from("/abs"));
        assert_eq!(parse(Path::new("/p/probelab.toml"), "").map(|p| p.fixtures), Ok(PathBuf::from("/p/fixtures")));
    }

    #[test]
    fn mistakes_are_reported_with_file_line_col() {
        let e = err("probes = \"probes\"\ngoldens = \"g\"\n");
        assert!(e.starts_with("/p/probelab.toml:2:1: unknown field `goldens`"), "{e}");
        assert!(e.contains("hint: the keys are probes, golden, fixtures and out"), "{e}");
        let e = err("golden = 3\n");
        assert!(e.starts_with("/p/probelab.toml:1:10: invalid type"), "{e}");
        let e = err("probes = \"probes\"\nfixtures = \"\"\n");
        assert!(e.starts_with("/p/probelab.toml:2:12: an empty path"), "{e}");
        let e = err("probes = [\n");
        assert!(e.starts_with("/p/probelab.toml:"), "{e}");
    }

    #[test]
    fn the_root_is_the_nearest_ancestor_with_a_project_file_or_probes() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let top = d.path().join("top");
        let deep = top.join("a/b");
        std::fs::create_dir_all(&deep).unwrap_or_else(|e| panic!("{e}"));
        assert!(Project::find(&deep).is_err_and(|e| e.to_string().contains("probelab init")));
        std::fs::create_dir_all(d.path().join("top/probes")).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(Project::find(&deep).map(|p| p.root), Ok(top.clone()));
        std::fs::write(top.join("a").join(FILE), "golden = \"gold\"\n").unwrap_or_else(|e| panic!("{e}"));
        let p = Project::find(&deep).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((p.root, p.golden), (top.join("a"), top.join("a/gold")));
        std::fs::write(top.join("a").join(FILE), "golden = [").unwrap_or_else(|e| panic!("{e}"));
        assert!(Project::find(&deep).is_err_and(|e| e.to_string().contains("probelab.toml:1:")));
    }

    #[test]
    fn init_writes_a_file_that_parses_to_the_defaults_and_refuses_twice() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let made = init(d.path()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(made.len(), 4);
        let p = Project::find(d.path()).unwrap_or_else(|e| panic!("{e}"));
        let defaults = Project { file: Some(d.path().join(FILE)), ..Project::default_at(d.path()) };
        assert_eq!(p, defaults);
        assert!(d.path().join("golden").is_dir() && d.path().join("fixtures").is_dir());
        assert!(init(d.path()).is_err_and(|e| e.to_string().contains("exists already")));
    }
}
