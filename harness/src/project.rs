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
//!
//! [subjects.my-agent]        # a command subject: the user's own runtime (crate::subject::command)
//! command = ["python3", "{project}/agent.py", "{prompt}"]
//! env = { ANTHROPIC_BASE_URL = "{base_url}", ANTHROPIC_API_KEY = "sk-test" }
//! dialect = "claude-code"
//! ```
//!
//! Unknown keys, wrong types, empty paths and mistakes in a subject's table are errors with
//! `file:line:col`.

use crate::located::{Located, Problem};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use toml::Spanned;

/// The name of the project file.
pub const FILE: &str = "probelab.toml";

/// A project file that cannot be used, or no project at all: where, what, and what to do.
#[derive(Debug, thiserror::Error)]
pub enum ProjectError {
    /// A mistake in the project file, at its place.
    #[error(transparent)]
    File(#[from] Located),
    /// No project file or `probes/` in the directory or above it.
    #[error(
        "{}: no {FILE} (or probes/ directory) here or in any parent directory\n  hint: `probelab init` makes this directory a probelab project",
        .0.display()
    )]
    NotFound(PathBuf),
    /// `probelab init` where the project file is already.
    #[error("{}: exists already\n  hint: edit it, or remove it to start again", .0.display())]
    Exists(PathBuf),
    /// `probelab init` could not make a file or directory.
    #[error("{}: {source}", path.display())]
    Write {
        /// What it was making.
        path: PathBuf,
        /// Why it failed.
        source: std::io::Error,
    },
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
    #[serde(default)]
    claims: Option<Spanned<String>>,
    #[serde(default)]
    subjects: std::collections::BTreeMap<Spanned<String>, crate::subject::command::RawCommand>,
    #[serde(default)]
    limits: Option<Spanned<crate::limits::LimitsSpec>>,
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
    /// The claims of its own catalogue (`claims = "FILE"`, in `docs/claims.md`'s form), cited by its
    /// probes besides the built-in catalogue's.
    pub claims: Vec<crate::claims::Claim>,
    /// Its command subjects (`[subjects.NAME]`).
    pub subjects: std::collections::BTreeMap<String, std::sync::Arc<crate::subject::command::CommandSpec>>,
    /// The most a probe's `[limits]` may set (`[limits]`: processes, memory_mb, file_mb, disk_mb; a key
    /// left out: [`crate::limits::DEFAULT_CAPS`]'s).
    pub caps: crate::limits::LimitsSpec,
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
            claims: Vec::new(),
            subjects: Default::default(),
            caps: Default::default(),
        }
    }

    /// The project of `dir` itself: its `probelab.toml` if present (parsed), else the default layout when
    /// it holds `probes/`, else none.
    pub fn at(dir: &Path) -> Result<Option<Project>, ProjectError> {
        let file = dir.join(FILE);
        // anything but a directory by that name is the project file (a FIFO is refused, not waited on)
        if file.exists() && !file.is_dir() {
            let text =
                crate::safe_fs::read_text(&file).map_err(|e| Located::at(&file, "", 0, format!("cannot read: {e}")))?;
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
        Err(ProjectError::NotFound(start.to_path_buf()))
    }

    /// The lab's layout for running this project's probes with `engine` as the built-in engine.
    pub fn layout(&self, engine: PathBuf) -> crate::lab::Layout {
        crate::lab::Layout {
            fixtures: self.fixtures.clone(),
            golden: self.golden.clone(),
            engine,
            subjects: self.registry(),
        }
    }

    /// What its probes may name: its subjects and its own claims.
    pub fn known(&self) -> crate::probe::Known {
        crate::probe::Known {
            subjects: self.registry().names(),
            claims: self.claims.iter().map(|c| c.id.clone()).collect(),
            caps: self.caps,
        }
    }

    /// The subjects this project has: the registered kinds and its command subjects.
    pub fn registry(&self) -> crate::subject::Registry {
        crate::subject::Registry::new(self.subjects.clone())
    }

    /// `path` shown relative to the root when it is under it.
    pub fn show(&self, path: &Path) -> String {
        path.strip_prefix(&self.root).unwrap_or(path).display().to_string()
    }
}

/// Parses a project file's text; paths are taken relative to the file's directory.
pub fn parse(file: &Path, text: &str) -> Result<Project, ProjectError> {
    let at = |offset: usize, message: String, hint: Option<&str>| {
        let e = Located::at(file, text, offset, message);
        ProjectError::File(match hint {
            Some(h) => e.hint(h),
            None => e,
        })
    };
    if let Some(p) = unknown_key(text) {
        return Err(p.locate(file, text).into());
    }
    let raw: ProjectFile = toml::from_str(text)
        .map_err(|e| at(e.span().map(|s| s.start).unwrap_or(0), e.message().trim_end().to_string(), None))?;
    let root = file.parent().map(Path::to_path_buf).unwrap_or_default();
    let root = if root.as_os_str().is_empty() { PathBuf::from(".") } else { root };
    let mut project = Project::default_at(&root);
    project.file = Some(file.to_path_buf());
    for (value, slot, written) in [
        (&raw.probes, &mut project.probes, false),
        (&raw.golden, &mut project.golden, true),
        (&raw.fixtures, &mut project.fixtures, false),
        (&raw.out, &mut project.out, true),
    ] {
        if let Some(v) = value {
            if v.get_ref().trim().is_empty() {
                return Err(at(v.span().start, "an empty path".into(), Some("a directory, relative to this file")));
            }
            // what probelab writes stays inside the project (issue 41): a cloned project's file never
            // makes it write goldens or output elsewhere (`--golden DIR` on the command line still can);
            // probes and fixtures it only reads may be anywhere (another project's catalogue)
            let rel = Path::new(v.get_ref());
            let climbs = rel.components().any(|c| matches!(c, std::path::Component::ParentDir));
            if written && (rel.is_absolute() || climbs) {
                return Err(at(
                    v.span().start,
                    format!("{:?} is outside the project", v.get_ref()),
                    Some("a directory inside the project, relative to this file (`--golden DIR` names another place for a run)"),
                ));
            }
            *slot = root.join(v.get_ref());
        }
    }
    if let Some(c) = &raw.claims {
        let path = root.join(c.get_ref());
        let catalogue = std::fs::read_to_string(&path).map_err(|e| {
            at(c.span().start, format!("cannot read the claims catalogue {}: {e}", path.display()), None)
        })?;
        project.claims = crate::claims::parse(&catalogue);
        if project.claims.is_empty() {
            let hint = "a line `- FAMILY-N text` per claim (FAMILY in capitals, N a number), as in docs/claims.md";
            return Err(at(c.span().start, format!("{} holds no claim", path.display()), Some(hint)));
        }
        for (i, claim) in project.claims.iter().enumerate() {
            let twice = project.claims[..i].iter().any(|o| o.id == claim.id) || crate::claims::exists(&claim.id);
            if twice {
                let hint = "an id names one claim: give it another number or family";
                return Err(at(
                    c.span().start,
                    format!("{}: claim {} is given twice (or is the built-in catalogue's)", path.display(), claim.id),
                    Some(hint),
                ));
            }
        }
    }
    if let Some(l) = &raw.limits {
        if let Some((key, _)) = l.get_ref().entries().into_iter().find(|(_, v)| *v == Some(0)) {
            let hint = "a cap is at least 1; leave the key out for the default (four times the default limit)";
            return Err(at(l.span().start, format!("[limits] {key} = 0 lets no probe run"), Some(hint)));
        }
        project.caps = *l.get_ref();
    }
    for (name, raw) in raw.subjects {
        let place = |offset: usize| Located::at(file, text, offset, "").place();
        let spec = crate::subject::command::check(&name, raw, &root, place).map_err(|p| p.locate(file, text))?;
        project.subjects.insert(name.into_inner(), std::sync::Arc::new(spec));
    }
    Ok(project)
}

/// The first key of the project file (in the text's order) that no table of it takes, with the hint of
/// the table it is in: the top level, a `[subjects.NAME]` table, its `install`, `[limits]`. None when
/// every key is known, or when the text is not TOML (the deserializer says where). The message is the
/// deserializer's own for an unknown field; its hint, the table's keys (read off its type but at the top
/// level), is given here where the table is known.
fn unknown_key(text: &str) -> Option<Problem> {
    use crate::probe::keys::fields_of;
    use toml::de::{DeTable, DeValue};
    const TOP: &str =
        "the keys are probes, golden, fixtures and out (paths), claims, [subjects.NAME] tables and [limits]";
    fn table<'t, 'i>(v: &'t DeValue<'i>) -> Option<&'t DeTable<'i>> {
        match v {
            DeValue::Table(t) => Some(t),
            _ => None,
        }
    }
    let doc = DeTable::parse(text).ok()?;
    // a table's keys in words, read off its type (`a, b and c`)
    let words = |keys: &[&str]| match keys.split_last() {
        Some((last, [])) => last.to_string(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
    };
    let mut unknown: Vec<(usize, String, &[&str], String)> = Vec::new();
    let mut check = |t: &DeTable<'_>, keys: &'static [&'static str], hint: &dyn Fn(String) -> String| {
        for k in t.keys().filter(|k| !keys.contains(&k.get_ref().as_ref())) {
            unknown.push((k.span().start, k.get_ref().to_string(), keys, hint(words(keys))));
        }
    };
    let top = doc.get_ref();
    check(top, fields_of::<ProjectFile>(), &|_| TOP.to_string());
    if let Some(limits) = top.get("limits").and_then(|v| table(v.get_ref())) {
        check(limits, fields_of::<crate::limits::LimitsSpec>(), &|w| format!("the keys of [limits] are {w}"));
    }
    for subject in top.get("subjects").and_then(|v| table(v.get_ref())).into_iter().flat_map(|t| t.values()) {
        let Some(subject) = table(subject.get_ref()) else { continue };
        check(subject, fields_of::<crate::subject::command::RawCommand>(), &|w| format!("a subject's keys are {w}"));
        if let Some(install) = subject.get("install").and_then(|v| table(v.get_ref())) {
            check(install, fields_of::<crate::subject::command::RawInstall>(), &|w| {
                format!("an install's keys are {w}")
            });
        }
    }
    let (offset, key, keys, hint) = unknown.into_iter().min_by_key(|u| u.0)?;
    // serde's words for it, as the deserializer would have said them
    let message = <serde::de::value::Error as serde::de::Error>::unknown_field(&key, keys).to_string();
    Some(Problem::at(offset, message).hint(hint))
}

/// The file `probelab init` writes.
pub const INIT_FILE: &str = r#"# probelab.toml: this directory is a probelab project (a suite of probes, their goldens and fixtures).
# probelab finds it by walking up from the current directory. Paths are relative to this file.
probes = "probes"          # probe files (*.toml); `probelab new NAME` writes probes/NAME.toml
golden = "golden"          # golden/<subject>/<probe-id>.snap and golden/blobs/; `--golden DIR` overrides
fixtures = "fixtures"      # trees a probe copies with [fixture] dir = "NAME"
out = "target/probelab"    # evidence, durations of the last run, matrix shards
# claims = "claims.md"     # a catalogue of its own (`- FAMILY-N text` lines), cited by its probes
# [limits]                 # the most a probe's own [limits] may set (default: four times each default)
# disk_mb = 16384          # also processes, memory_mb, file_mb
# [subjects.my-agent]      # a command subject: the user's own runtime (docs/probe-format.md)
# command = ["python3", "{project}/agent.py", "{prompt}"]
# env = { ANTHROPIC_BASE_URL = "{base_url}", ANTHROPIC_API_KEY = "sk-test" }
"#;

/// `probelab init`: writes `dir/probelab.toml` and the empty `probes/`, `golden/`, `fixtures/` (an
/// existing project file is left alone: an error). Returns what it made.
pub fn init(dir: &Path) -> Result<Vec<PathBuf>, ProjectError> {
    let file = dir.join(FILE);
    let fail = |p: &Path, source: std::io::Error| ProjectError::Write { path: p.to_path_buf(), source };
    if file.exists() {
        return Err(ProjectError::Exists(file));
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
        let p = parse(Path::new("/p/probelab.toml"), "golden = \"g/one\"\nout = \"o\"\nprobes = \"/other/probes\"\n")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.root, PathBuf::from("/p"));
        assert_eq!(p.golden, PathBuf::from("/p/g/one"));
        assert_eq!(p.probes, PathBuf::from("/other/probes"));
        assert_eq!(p.out, PathBuf::from("/p/o"));
        let fixtures = parse(Path::new("/p/probelab.toml"), "").map(|p| p.fixtures).map_err(|e| e.to_string());
        assert_eq!(fixtures, Ok(PathBuf::from("/p/fixtures")));
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
        // what probelab writes stays in the project (issue 41)
        let e = err("out = \"/abs\"\n");
        assert!(e.starts_with("/p/probelab.toml:1:7: \"/abs\" is outside the project"), "{e}");
        let e = err("golden = \"g/../../x\"\n");
        assert!(e.starts_with("/p/probelab.toml:1:10: \"g/../../x\" is outside the project"), "{e}");
        let e = err("probes = [\n");
        assert!(e.starts_with("/p/probelab.toml:"), "{e}");
    }

    #[test]
    fn a_mistake_is_located_in_the_file_and_an_unknown_key_hinted_with_its_own_table_s_keys() {
        let e = parse(Path::new("/p/probelab.toml"), "probes = \"probes\"\nfixtures = \"\"\n").map(|_| ()).unwrap_err();
        let ProjectError::File(l) = &e else { panic!("not located: {e}") };
        assert_eq!((l.file.as_path(), l.line, l.col), (Path::new("/p/probelab.toml"), 2, 12));
        assert_eq!(e.to_string(), "/p/probelab.toml:2:12: an empty path\n  hint: a directory, relative to this file");
        // each table's unknown key: serde's words, on the key, and the keys of that table as the hint
        let hint = |text: &str| err(text).split_once("\n  hint: ").map(|(_, h)| h.to_string()).unwrap_or_default();
        let top = "the keys are probes, golden, fixtures and out (paths), claims, [subjects.NAME] tables and [limits]";
        assert_eq!(hint("probes = \"probes\"\ngoldens = \"g\"\n"), top);
        assert_eq!(
            hint("[subjects.a]\ncommand = [\"x\"]\ncmd = 1\n"),
            "a subject's keys are command, env, dialect, install, home_files and cwd_files"
        );
        assert_eq!(
            hint("[subjects.a]\ninstall = { npm = \"c@1.0.0\", program = \"x\", prog = 1 }\ncommand = [\"x\"]\n"),
            "an install's keys are npm, program, version_line, prepare, prepare_env and also"
        );
        assert_eq!(
            hint("[limits]\nthreads = 4\n"),
            "the keys of [limits] are processes, memory_mb, file_mb and disk_mb"
        );
        let e = err("[limits]\nthreads = 4\n");
        assert!(
            e.starts_with("/p/probelab.toml:2:1: unknown field `threads`, expected one of `processes`, `memory_mb`"),
            "{e}"
        );
        // the first unknown key in the text's order; a type error has no hint
        assert!(err("zz = 1\n[limits]\nthreads = 4\n").starts_with("/p/probelab.toml:1:1: unknown field `zz`"));
        assert_eq!(err("golden = 3\n"), "/p/probelab.toml:1:10: invalid type: integer `3`, expected a string");
    }

    #[test]
    fn the_caps_of_a_probe_s_limits_are_read_and_a_zero_refused() {
        let p = parse(Path::new("/p/probelab.toml"), "[limits]\ndisk_mb = 32\n").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.known().caps, crate::limits::LimitsSpec { disk_mb: Some(32), ..Default::default() });
        let e = err("[limits]\nprocesses = 0\n");
        assert!(e.contains("[limits] processes = 0 lets no probe run"), "{e}");
        let e = err("[limits]\nthreads = 4\n");
        assert!(e.contains("unknown field `threads`"), "{e}");
    }

    #[test]
    fn command_subjects_are_read_and_their_mistakes_placed() {
        let ok = "[subjects.my-agent]\ncommand = [\"python3\", \"{project}/a.py\", \"{prompt}\"]\n\
                  env = { ANTHROPIC_BASE_URL = \"{base_url}\" }\ndialect = \"claude-code\"\n\
                  home_files.\".config/a.json\" = '{ \"url\": \"{base_url_v1}\" }'\n";
        let p = parse(Path::new("/p/probelab.toml"), ok).unwrap_or_else(|e| panic!("{e}"));
        let c = p.subjects.get("my-agent").unwrap_or_else(|| panic!("no subject: {p:?}"));
        assert_eq!(c.command, ["python3", "{project}/a.py", "{prompt}"]);
        assert_eq!((c.dialect.as_deref(), c.project.as_path()), (Some("claude-code"), Path::new("/p")));
        assert_eq!(c.place, "/p/probelab.toml:1:11");
        assert_eq!(p.registry().parse("my-agent").map(|id| id.to_string()).ok(), Some("my-agent".to_string()));
        let e = err("[subjects.a]\ncommand = []\n");
        assert!(e.starts_with("/p/probelab.toml:2:11: an empty command"), "{e}");
        let e = err("[subjects.a]\ncommand = [\"x\", \"{bse_url}\"]\n");
        assert!(
            e.starts_with("/p/probelab.toml:2:17: unknown placeholder {bse_url}") && e.contains("{base_url_v1}"),
            "{e}"
        );
        let e = err("[subjects.a]\ncommand = [\"x\"]\ndialect = \"opencode\"\n");
        assert!(e.starts_with("/p/probelab.toml:3:11: unknown dialect \"opencode\""), "{e}");
        let e = err("[subjects.a]\ncommand = [\"x\"]\ncmd = 1\n");
        assert!(
            e.starts_with("/p/probelab.toml:3:1: unknown field `cmd`") && e.contains("a subject's keys are"),
            "{e}"
        );
        let e = err("[subjects.Bad]\ncommand = [\"x\"]\n");
        assert!(e.starts_with("/p/probelab.toml:1:11: \"Bad\" cannot name a subject"), "{e}");
        let e = err("[subjects.builtin]\ncommand = [\"x\"]\n");
        assert!(e.contains("\"builtin\" cannot name a subject"), "{e}");
        let e = err("[subjects.a]\ncommand = [\"x\"]\ncwd_files.\"../out\" = \"x\"\n");
        assert!(e.starts_with("/p/probelab.toml:3:11: \"../out\" is not a path inside"), "{e}");
        // a pinned install: a package at an exact version, a program inside it; {install} needs one
        let ok = "[subjects.a]\ninstall = { npm = \"@github/copilot@1.0.102\", program = \"node_modules/x/bin/x\" }\ncommand = [\"{program}\"]\n";
        let p = parse(Path::new("/p/probelab.toml"), ok).unwrap_or_else(|e| panic!("{e}"));
        let i = p.subjects.get("a").and_then(|c| c.install.clone()).unwrap_or_else(|| panic!("no install"));
        assert_eq!(
            (i.package.as_str(), i.version.to_string(), i.kind.dir),
            ("@github/copilot", "1.0.102".into(), "npm/@github+copilot")
        );
        let e = err("[subjects.a]\ninstall = { npm = \"copilot\", program = \"x\" }\ncommand = [\"x\"]\n");
        assert!(e.starts_with("/p/probelab.toml:2:19: \"copilot\" names no version"), "{e}");
        let e = err("[subjects.a]\ninstall = { npm = \"copilot@1.0\", program = \"x\" }\ncommand = [\"x\"]\n");
        assert!(e.starts_with("/p/probelab.toml:2:19: \"1.0\" is not an exact version"), "{e}");
        let e = err("[subjects.a]\ninstall = { npm = \"c@1.0.0\", program = \"../x\" }\ncommand = [\"x\"]\n");
        assert!(e.starts_with("/p/probelab.toml:2:40: \"../x\" is not a path inside the install"), "{e}");
        let e = err("[subjects.a]\ncommand = [\"{program}\"]\n");
        assert!(e.starts_with("/p/probelab.toml:2:12: {install} and {program} name a pinned install"), "{e}");
        let e = err("[subjects.a]\nenv = {}\n");
        assert!(e.starts_with("/p/probelab.toml:1:") && e.contains("missing field `command`"), "{e}");
    }

    #[test]
    fn a_command_subject_may_declare_a_dialect_file_of_the_project_checked_where_it_is_written() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let file = d.path().join(FILE);
        std::fs::create_dir(d.path().join("dialects")).unwrap_or_else(|e| panic!("{e}"));
        let dialect = "agent = \"copilot\"\n[tools.Read]\nname = \"view\"\ninput = { file_path = \"path\" }\n";
        std::fs::write(d.path().join("dialects/copilot.toml"), dialect).unwrap_or_else(|e| panic!("{e}"));
        let text =
            "[subjects.copilot]\ncommand = [\"copilot\", \"-p\", \"{prompt}\"]\ndialect = \"dialects/copilot.toml\"\n";
        let p = parse(&file, text).unwrap_or_else(|e| panic!("{e}"));
        let c = p.subjects.get("copilot").unwrap_or_else(|| panic!("no subject: {p:?}"));
        assert_eq!(c.dialect.as_deref(), Some("claude-code"), "it runs Claude Code's probes, translated");
        let (written, t) = c.translation.as_ref().unwrap_or_else(|| panic!("no dialect: {c:?}"));
        assert_eq!(written, "dialects/copilot.toml");
        assert_eq!(t.call("Read", &serde_json::json!({"file_path": "/s/a"})).map(|c| c.0), Ok("view".into()));
        assert!(c.about().ends_with(", dialect dialects/copilot.toml"), "{}", c.about());
        let id = p.registry().parse("copilot").unwrap_or_else(|e| panic!("{e}"));
        assert!(id.answers_to("claude-code"));
        // the dialect file's own mistake, at its own line and column, from the subject's line
        std::fs::write(d.path().join("dialects/copilot.toml"), "agent = \"copilot\"\n[tools.Read]\nnames = \"view\"\n")
            .unwrap_or_else(|e| panic!("{e}"));
        let e = parse(&file, text).map(|_| ()).unwrap_err().to_string();
        assert!(e.contains("probelab.toml:3:11: dialect file dialects/copilot.toml:3:1: unknown field `names`"), "{e}");
        std::fs::write(d.path().join("dialects/copilot.toml"), "agent = \"qwen\"\ntools = {}\n")
            .unwrap_or_else(|e| panic!("{e}"));
        let e = parse(&file, text).map(|_| ()).unwrap_err().to_string();
        assert!(e.contains("agent = \"qwen\", but it is the dialect of subject \"copilot\""), "{e}");
        let e = parse(&file, &text.replace("dialects/copilot.toml", "dialects/none.toml")).map(|_| ()).unwrap_err();
        assert!(e.to_string().contains("dialect file dialects/none.toml: No such file"), "{e}");
        let e = parse(&file, &text.replace("dialects/copilot.toml", "../x.toml")).map(|_| ()).unwrap_err();
        assert!(e.to_string().contains("must be a path inside the project"), "{e}");
    }

    #[test]
    fn the_root_is_the_nearest_ancestor_with_a_project_file_or_probes() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let top = d.path().join("top");
        let deep = top.join("a/b");
        std::fs::create_dir_all(&deep).unwrap_or_else(|e| panic!("{e}"));
        assert!(Project::find(&deep).is_err_and(|e| e.to_string().contains("probelab init")));
        std::fs::create_dir_all(d.path().join("top/probes")).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(Project::find(&deep).map(|p| p.root).map_err(|e| e.to_string()), Ok(top.clone()));
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
