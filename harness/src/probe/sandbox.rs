//! The sandbox of one probe run: a fresh temp dir with `work/` (the cwd, holding the fixture) and
//! `home/` (HOME), removed afterwards unless kept. Placeholders `{cwd}`, `{home}`, `{sandbox}` in the
//! script's tool inputs and in checks are resolved against it, and so are the names a run adds to
//! [`Sandbox::placeholders`] (`{artifact}`: the artifact service's public origin, when the probe turns
//! the Artifact tool on; `{web}`: the web service's URL; `{probelab}`: this binary, see
//! [`probelab_binary`]); `[[fixture.fault]]` changes are applied before the run or before a given turn.
//! Every placeholder of a run is resolved here, in one place — the runtime and the subjects get
//! resolved values.

pub use super::placeholders::{placeholders_as_literals, probelab_binary, ENV_PROBELAB_BIN, PLACEHOLDERS, PROBELAB};
use super::{FaultOp, FsFault, Probe};
use probelab_runtime::config::PluginSpec;
use probelab_runtime::config::ServerSpec;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A materialised sandbox.
#[derive(Debug)]
pub struct Sandbox {
    dir: Option<tempfile::TempDir>,
    /// The root (canonical).
    pub root: PathBuf,
    /// `root/work`.
    pub cwd: PathBuf,
    /// `root/home`.
    pub home: PathBuf,
    /// More placeholders of this run: `{name}` → value (set before the script is resolved).
    pub placeholders: BTreeMap<String, String>,
    /// The last pid given before the sandbox existed: what works in it at teardown started after.
    since_pid: Option<i32>,
}

/// A path a probe names that the lab will not use: it leaves the sandbox, lexically or through a
/// symlink ([`Sandbox::inside`], [`Sandbox::confine`]).
#[derive(Debug, thiserror::Error)]
pub enum PathError {
    /// A relative path with `..`, or an absolute one outside the root (as the probe wrote it).
    #[error("fixture path {0:?} leaves the sandbox")]
    Leaves(String),
    /// A path given to [`Sandbox::confine`] that is not under the root.
    #[error("{} is outside the sandbox", .0.display())]
    Outside(PathBuf),
    /// More than [`MAX_SYMLINK_HOPS`] symlinks on the way (the kernel's ELOOP).
    #[error("more than {MAX_SYMLINK_HOPS} symlinks to follow at {}", .0.display())]
    TooManyLinks(PathBuf),
    /// A symlink on the way that could not be read.
    #[error("cannot read the symlink {}", path.display())]
    ReadLink {
        /// The link.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A symlink on the way that leads out of the sandbox (relative to the root, and where it points).
    #[error("{} is a symlink to {} (outside the sandbox): not followed", link.display(), target.display())]
    LinkLeadsOut {
        /// The link, relative to the root.
        link: PathBuf,
        /// Where it points, as it is written.
        target: PathBuf,
    },
}

/// Why a sandbox could not be made ([`Sandbox::create`]): each step with the path it concerns.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The sandbox could not be registered for removal (the run is stopping).
    #[error(transparent)]
    Register(#[from] crate::cleanup::RegisterError),
    /// The temp dir could not be made (or its path read).
    #[error("cannot create a sandbox")]
    Temp(#[source] std::io::Error),
    /// `work/` or `home/` could not be made.
    #[error("cannot create {}", path.display())]
    Dir {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The fixture dir could not be copied.
    #[error("copying {}", from.display())]
    Copy {
        /// The fixture dir.
        from: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A fixture file's path leaves the sandbox.
    #[error(transparent)]
    Path(#[from] PathError),
    /// A fixture file could not be written.
    #[error("cannot write {}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The fixture's files could not be given their mtimes.
    #[error("cannot set the fixture's mtimes")]
    Stamp(#[source] std::io::Error),
    /// A fixture file could not be given its own mtime.
    #[error("fixture file {rel:?}: mtime")]
    Mtime {
        /// The file as the probe names it.
        rel: String,
        /// Why.
        source: std::io::Error,
    },
    /// What the probe file asks of the fixture cannot be done.
    #[error("{}", probe.display())]
    Probe {
        /// The probe file.
        probe: PathBuf,
        /// What.
        source: FixtureError,
    },
}

/// What a probe asks of its fixture that cannot be done ([`SandboxError::Probe`]).
#[derive(Debug, thiserror::Error)]
pub enum FixtureError {
    /// `[fixture] dir` names no directory (the path looked for).
    #[error("fixture dir {} does not exist", .0.display())]
    NoDir(PathBuf),
    /// `[fixture] dir` leads out of the fixtures (through a symlink).
    #[error("fixture dir {dir:?} is not under {}", root.display())]
    DirOutside {
        /// As the probe wrote it.
        dir: String,
        /// The fixtures' root.
        root: PathBuf,
    },
    /// A fixture file's bytes or mtime.
    #[error("fixture file {rel:?}")]
    File {
        /// As the probe names it.
        rel: String,
        /// Why.
        source: FileProblem,
    },
    /// A fault before the run.
    #[error(transparent)]
    Fault(FaultError),
}

/// What is wrong with a fixture file ([`FixtureError::File`]).
#[derive(Debug, thiserror::Error)]
pub enum FileProblem {
    /// Its bytes cannot be made.
    #[error(transparent)]
    Bytes(#[from] super::files::FileError),
    /// Its mtime names no time.
    #[error(transparent)]
    Mtime(#[from] super::files::MtimeError),
}

/// A sandbox change that could not be applied ([`Sandbox::apply`]): the fault, then why.
#[derive(Debug, thiserror::Error)]
#[error("fixture fault {kind} {path:?}")]
pub struct FaultError {
    /// The fault's kind (`write`, `chmod`…).
    pub kind: &'static str,
    /// Its path as the probe wrote it.
    pub path: String,
    /// Why.
    #[source]
    pub cause: FaultCause,
}

/// Why a sandbox change could not be applied ([`FaultError`]).
#[derive(Debug, thiserror::Error)]
pub enum FaultCause {
    /// Its path leaves the sandbox.
    #[error(transparent)]
    Path(#[from] PathError),
    /// Its mtime names no time.
    #[error(transparent)]
    Mtime(#[from] super::files::MtimeError),
    /// The file system refused.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

impl Sandbox {
    /// Creates the dirs and the fixture. `fixtures_root` is where `[fixture] dir` is looked up.
    pub fn create(probe: &Probe, fixtures_root: &Path) -> Result<Sandbox, SandboxError> {
        let since_pid = crate::cleanup::last_pid();
        // registered for removal should the run be interrupted, the owner's pid written in its root
        let (dir, root) = crate::cleanup::register(|| {
            let dir = tempfile::Builder::new()
                .prefix(crate::cleanup::SANDBOX_PREFIX)
                .tempdir()
                .map_err(SandboxError::Temp)?;
            let root = dir.path().canonicalize().map_err(SandboxError::Temp)?;
            Ok::<_, SandboxError>(((dir, root.clone()), root))
        })?;
        let cwd = root.join("work");
        let home = root.join("home");
        for d in [&cwd, &home] {
            std::fs::create_dir_all(d).map_err(|source| SandboxError::Dir { path: d.clone(), source })?;
        }
        let placeholders = BTreeMap::from([(PROBELAB.to_string(), probelab_binary().to_string_lossy().into_owned())]);
        let sb = Sandbox { dir: Some(dir), root, cwd, home, placeholders, since_pid };
        let in_probe = |source| SandboxError::Probe { probe: probe.path.clone(), source };
        if let Some(d) = &probe.fixture.dir {
            let src = fixtures_root.join(d);
            if !src.is_dir() {
                return Err(in_probe(FixtureError::NoDir(src)));
            }
            // the parser refused absolute paths and `..`; a symlink under fixtures/ must not lead out either
            let (real, top) = (src.canonicalize(), fixtures_root.canonicalize());
            if !matches!((&real, &top), (Ok(r), Ok(t)) if r.starts_with(t)) {
                return Err(in_probe(FixtureError::DirOutside { dir: d.clone(), root: fixtures_root.to_path_buf() }));
            }
            copy_tree(&src, &sb.cwd).map_err(|source| SandboxError::Copy { from: src.clone(), source })?;
        }
        // no link the fixture dir shipped is followed (issue 41): each component opened without
        for (rel, spec) in &probe.fixture.files {
            let path = sb.inside(rel)?;
            let bytes =
                file_bytes(spec).map_err(|e| in_probe(FixtureError::File { rel: rel.clone(), source: e.into() }))?;
            probelab_runtime::nofollow::write(std::slice::from_ref(&sb.root), &path, &bytes)
                .map_err(|source| SandboxError::Write { path, source })?;
        }
        stamp_mtimes(&sb.cwd).map_err(SandboxError::Stamp)?;
        // a file's own mtime overrides its stamp
        for (rel, spec) in &probe.fixture.files {
            if let Some(m) = spec.mtime() {
                let t = m.time().map_err(|e| in_probe(FixtureError::File { rel: rel.clone(), source: e.into() }))?;
                set_mtime(&sb.inside(rel)?, t).map_err(|source| SandboxError::Mtime { rel: rel.clone(), source })?;
            }
        }
        for f in probe.fixture.fault.iter().filter(|f| f.at_turn.is_none()) {
            sb.apply(f).map_err(|e| in_probe(FixtureError::Fault(e)))?;
        }
        Ok(sb)
    }

    /// The same paths without ownership of the directory (for callbacks that outlive a borrow).
    pub fn view(&self) -> Sandbox {
        Sandbox {
            dir: None,
            root: self.root.clone(),
            cwd: self.cwd.clone(),
            home: self.home.clone(),
            placeholders: self.placeholders.clone(),
            since_pid: self.since_pid,
        }
    }

    /// Keeps the directory on disk (for `--keep`); returns its path.
    pub fn keep(&mut self) -> PathBuf {
        if let Some(d) = self.dir.take() {
            let _ = d.keep();
            crate::cleanup::unregister(&self.root, true);
        }
        self.root.clone()
    }

    /// A relative fixture path inside the cwd (`..` refused); `{home}/x` goes under HOME.
    pub fn inside(&self, rel: &str) -> Result<PathBuf, PathError> {
        let resolved = self.resolve(rel);
        let p = Path::new(&resolved);
        let abs = if p.is_absolute() { p.to_path_buf() } else { self.cwd.join(p) };
        if abs.components().any(|c| matches!(c, std::path::Component::ParentDir)) || !abs.starts_with(&self.root) {
            return Err(PathError::Leaves(rel.to_string()));
        }
        Ok(abs)
    }

    /// Replaces `{cwd}`, `{home}`, `{sandbox}` and the run's [`Sandbox::placeholders`].
    pub fn resolve(&self, s: &str) -> String {
        self.resolve_as(s, |v| v.to_string())
    }

    /// The probe's `[env]` with its placeholders resolved (`{cwd}`, `{home}`…), as the format says they
    /// are there (they reached subjects literally).
    pub fn env(&self, probe: &crate::probe::Probe) -> std::collections::BTreeMap<String, String> {
        // a web service that speaks https names its run's CA first: the probe's own `[env]` may override it
        let ca = probe
            .web
            .ca_file(&self.root)
            .map(|file| (crate::services::tls::CA_ENV.to_string(), file.to_string_lossy().into_owned()));
        ca.into_iter().chain(probe.env.iter().map(|(k, v)| (k.clone(), self.resolve(v)))).collect()
    }

    /// The probe's `[settings]` with the placeholders of every text resolved (a hook's command, a
    /// permission rule's path); settings that do not read back after it are kept as written.
    pub fn settings(&self, probe: &crate::probe::Probe) -> probelab_runtime::settings::Settings {
        fn walk(v: &mut serde_json::Value, f: &dyn Fn(&str) -> String) {
            match v {
                serde_json::Value::String(s) => *s = f(s),
                serde_json::Value::Array(a) => a.iter_mut().for_each(|x| walk(x, f)),
                serde_json::Value::Object(o) => o.values_mut().for_each(|x| walk(x, f)),
                _ => {}
            }
        }
        let Ok(mut v) = serde_json::to_value(&probe.settings) else { return probe.settings.clone() };
        walk(&mut v, &|s| self.resolve(s));
        serde_json::from_value(v).unwrap_or_else(|_| probe.settings.clone())
    }

    /// [`Sandbox::resolve`] for a regex (a check's `matches`): each placeholder becomes its value as an
    /// escaped literal, so `'^{cwd}/a\.txt$'` matches the cwd whatever characters its path has.
    pub fn resolve_regex(&self, re: &str) -> String {
        self.resolve_as(re, regex::escape)
    }

    fn resolve_as(&self, s: &str, literal: impl Fn(&str) -> String) -> String {
        let fixed = [("cwd", &self.cwd), ("home", &self.home), ("sandbox", &self.root)];
        let fixed = fixed.into_iter().map(|(n, p)| (n.to_string(), p.to_string_lossy().into_owned()));
        let mut out = s.to_string();
        for (name, value) in fixed.chain(self.placeholders.iter().map(|(n, v)| (n.clone(), v.clone()))) {
            let key = format!("{{{name}}}");
            if out.contains(&key) {
                out = out.replace(&key, &literal(&value));
            }
        }
        out
    }

    /// The probe's MCP servers with their placeholders resolved (MCP-1).
    pub fn mcp_servers(&self, probe: &Probe) -> BTreeMap<String, ServerSpec> {
        let r = |s: &str| self.resolve(s);
        let servers = probe.mcp_servers.iter().map(|(name, s)| {
            let spec = ServerSpec {
                command: r(&s.command),
                args: s.args.iter().map(|a| r(a)).collect(),
                env: s.env.iter().map(|(k, v)| (k.clone(), r(v))).collect(),
            };
            (name.clone(), spec)
        });
        servers.collect()
    }

    /// The probe's plugins (LSP servers) with their placeholders resolved (LSP-1..5).
    pub fn plugins(&self, probe: &Probe) -> Vec<PluginSpec> {
        probe.plugins.iter().map(|p| p.resolved(&|s| self.resolve(s))).collect()
    }

    /// Resolves placeholders in every string of a JSON value.
    pub fn resolve_json(&self, v: &mut Value) {
        match v {
            Value::String(s) => *s = self.resolve(s),
            Value::Array(a) => a.iter_mut().for_each(|x| self.resolve_json(x)),
            Value::Object(o) => o.values_mut().for_each(|x| self.resolve_json(x)),
            _ => {}
        }
    }

    /// The probe's script with placeholders resolved in tool inputs and in waits' files and texts.
    pub fn script(&self, probe: &Probe) -> stub_messages::Script {
        let mut s = probe.script.clone();
        let turns = s.turns.iter_mut().chain(s.conversations.iter_mut().flat_map(|c| c.turns.iter_mut()));
        for t in turns {
            for u in &mut t.tool_use {
                self.resolve_json(&mut u.input);
            }
            if let Some(w) = &mut t.wait {
                w.file = w.file.as_deref().map(|f| self.resolve(f));
                w.contains = w.contains.as_deref().map(|c| self.resolve(c));
                w.contains_any = w.contains_any.take().map(|a| a.iter().map(|c| self.resolve(c)).collect());
            }
        }
        s
    }

    /// Applies one sandbox change, on the path resolved inside the sandbox ([`Sandbox::confine`]): a
    /// change never reaches outside it through a symlink (`delete` removes a link itself, not what it
    /// points at; `symlink` may point anywhere — the link is the fixture).
    pub fn apply(&self, f: &FsFault) -> Result<(), FaultError> {
        use std::os::unix::fs::PermissionsExt;
        let fail = |cause: FaultCause| FaultError { kind: f.op.kind(), path: f.path.clone(), cause };
        let lexical = self.inside(&f.path).map_err(|e| fail(e.into()))?;
        let follow_last = !matches!(f.op, FaultOp::Delete | FaultOp::Symlink { .. });
        let p = self.confine(&lexical, follow_last).map_err(|e| fail(e.into()))?;
        let res = match &f.op {
            FaultOp::Write { content } => {
                if let Some(parent) = p.parent() {
                    let _ = std::fs::create_dir_all(parent);
                }
                std::fs::write(&p, content)
            }
            FaultOp::Delete => match std::fs::symlink_metadata(&p) {
                Ok(m) if m.is_dir() => std::fs::remove_dir_all(&p),
                _ => std::fs::remove_file(&p),
            },
            FaultOp::Mkdir => std::fs::create_dir_all(&p),
            FaultOp::Chmod { mode } => std::fs::set_permissions(&p, std::fs::Permissions::from_mode(*mode)),
            FaultOp::Symlink { target } => std::os::unix::fs::symlink(self.resolve(target), &p),
            FaultOp::Touch { mtime } => {
                // like touch(1): made empty when missing, then given the mtime (default: now)
                let t = match mtime.as_ref().map(|m| m.time()) {
                    Some(Ok(t)) => t,
                    Some(Err(e)) => return Err(fail(e.into())),
                    None => std::time::SystemTime::now(),
                };
                if let Some(parent) = p.parent() {
                    let _ = std::fs::create_dir_all(parent);
                }
                std::fs::OpenOptions::new().create(true).append(true).open(&p).and_then(|_| set_mtime(&p, t))
            }
        };
        res.map_err(|e| fail(e.into()))
    }

    /// `path` (lexically inside the root) with the sandbox's symlinks followed — every component but
    /// the last, and the last too with `follow_last` — each hop required to stay inside the root; a
    /// link that leads out is refused, naming the link and where it points. Dangling links that point
    /// inside resolve to where they point (a write creates the file there).
    pub fn confine(&self, path: &Path, follow_last: bool) -> Result<PathBuf, PathError> {
        self.confine_hops(path, follow_last, 0)
    }

    fn confine_hops(&self, path: &Path, follow_last: bool, hops: usize) -> Result<PathBuf, PathError> {
        let rel = path.strip_prefix(&self.root).map_err(|_| PathError::Outside(path.to_path_buf()))?;
        let comps: Vec<_> = rel.components().collect();
        let mut cur = self.root.clone();
        for (i, c) in comps.iter().enumerate() {
            let next = cur.join(c);
            let last = i + 1 == comps.len();
            let link = std::fs::symlink_metadata(&next).is_ok_and(|m| m.file_type().is_symlink());
            if !link || (last && !follow_last) {
                cur = next;
                continue;
            }
            if hops >= MAX_SYMLINK_HOPS {
                return Err(PathError::TooManyLinks(next));
            }
            let target =
                std::fs::read_link(&next).map_err(|source| PathError::ReadLink { path: next.clone(), source })?;
            let to = lexical_normal(&cur.join(&target));
            if !to.starts_with(&self.root) {
                let link = next.strip_prefix(&self.root).unwrap_or(&next).to_path_buf();
                return Err(PathError::LinkLeadsOut { link, target });
            }
            let rest: PathBuf = comps[i + 1..].iter().collect();
            return self.confine_hops(&to.join(rest), follow_last, hops + 1);
        }
        Ok(cur)
    }
}

/// Most symlinks [`Sandbox::confine`] follows for one path (the kernel's own limit, ELOOP).
pub const MAX_SYMLINK_HOPS: usize = 40;

/// `p` with `.` and `..` resolved by the text alone (`/a/b/../c` → `/a/c`).
fn lexical_normal(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        // the owning sandbox (not a view): its directory goes with it
        if let Some(d) = self.dir.take() {
            // what still works in it: a process that left its Bash's group and outlived the Bash (a
            // `timeout`, a `setsid` daemon) is no descendant of anything the run still tracks
            crate::cleanup::kill_working_in(
                &[self.root.canonicalize().unwrap_or_else(|_| self.root.clone())],
                self.since_pid,
            );
            // a directory a chmod fault closed is opened again: the removal must reach everything
            crate::cleanup::make_removable(d.path());
            drop(d);
            crate::cleanup::unregister(&self.root, false);
        }
    }
}

pub use super::files::file_bytes;

pub use super::files::{FIXTURE_MTIME_BASE, FIXTURE_MTIME_STEP};

/// Gives every file of the fixture a distinct, fixed mtime in path order (later paths newer): subjects
/// order Glob and Grep results by mtime (to the millisecond), and files written in the same instant would
/// tie and come in any order from run to run. Faults and the run itself change mtimes as they happen.
fn stamp_mtimes(cwd: &Path) -> std::io::Result<()> {
    fn files(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
        for e in std::fs::read_dir(dir)? {
            let e = e?;
            if e.file_type()?.is_dir() {
                files(&e.path(), out)?;
            } else if e.file_type()?.is_file() {
                out.push(e.path());
            }
        }
        Ok(())
    }
    let mut all = Vec::new();
    files(cwd, &mut all)?;
    all.sort();
    for (i, p) in all.iter().enumerate() {
        let t =
            std::time::UNIX_EPOCH + std::time::Duration::from_secs(FIXTURE_MTIME_BASE + FIXTURE_MTIME_STEP * i as u64);
        std::fs::File::options().write(true).open(p)?.set_modified(t)?;
    }
    Ok(())
}

/// Sets a file's (or a directory's) modification time.
fn set_mtime(p: &Path, t: std::time::SystemTime) -> std::io::Result<()> {
    std::fs::File::open(p)?.set_modified(t)
}

fn copy_tree(src: &Path, dst: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dst)?;
    for e in std::fs::read_dir(src)? {
        let e = e?;
        let to = dst.join(e.file_name());
        let kind = e.file_type()?;
        if kind.is_symlink() {
            // a link stays a link: never the host file it may point at, copied in
            std::os::unix::fs::symlink(std::fs::read_link(e.path())?, &to)?;
        } else if kind.is_dir() {
            copy_tree(&e.path(), &to)?;
        } else if kind.is_file() {
            std::fs::copy(e.path(), &to)?;
        } else {
            // a FIFO or a device: copying would read it (and wait on a FIFO for ever)
            let msg = format!("{} is not a regular file", e.path().display());
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, msg));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sandbox_at(root: &str) -> Sandbox {
        let root = PathBuf::from(root);
        Sandbox {
            dir: None,
            cwd: root.join("work"),
            home: root.join("home"),
            placeholders: BTreeMap::from([("web".to_string(), "http://127.0.0.1:9/a?b".to_string())]),
            root,
            since_pid: None,
        }
    }

    #[test]
    fn placeholders_in_a_regex_are_escaped_literals() {
        let sb = sandbox_at("/tmp/p.q+r(1)");
        let re = regex::Regex::new(&sb.resolve_regex("^{cwd}/f\\.txt$")).unwrap_or_else(|e| panic!("{e}"));
        assert!(re.is_match("/tmp/p.q+r(1)/work/f.txt"));
        assert!(!re.is_match("/tmp/pxq+r(1)/work/f.txt"), "the path's `.` is a literal, not any character");
        let web = regex::Regex::new(&sb.resolve_regex("^GET {web}$")).unwrap_or_else(|e| panic!("{e}"));
        assert!(web.is_match("GET http://127.0.0.1:9/a?b") && !web.is_match("GET http://127.0.0.1:9/a"));
        assert_eq!(sb.resolve("{home}/x {web}"), "/tmp/p.q+r(1)/home/x http://127.0.0.1:9/a?b");
    }

    #[test]
    fn a_regex_in_the_former_spelling_matches_the_path_as_a_literal() {
        let sb = sandbox_at("/tmp/p+q");
        let re = super::super::placeholders::old_spelling_read(r"^read \{cwd}/subdir$");
        let re = regex::Regex::new(&sb.resolve_regex(&re)).unwrap_or_else(|e| panic!("{e}"));
        assert!(re.is_match("read /tmp/p+q/work/subdir") && !re.is_match("read /tmp/ppq/work/subdir"));
    }

    #[test]
    fn a_regex_with_placeholders_is_validated_with_literals_in_their_place() {
        let raw = String::from("^{cwd}$");
        assert!(regex::Regex::new(&raw).is_err(), "the raw form is no regex");
        assert!(regex::Regex::new(&placeholders_as_literals("^{cwd}/{sandbox}x{2}$", "p")).is_ok());
        assert_eq!(placeholders_as_literals("a{2}{home}{other}", "p"), "a{2}p{other}");
    }

    const HEAD: &str = "id = \"x.y\"\nclaims = [\"READ-1\"]\nabout = \"a\"\n[[turn]]\ntext = \"done\"\n";

    /// A probe whose faults are: a symlink `out` to `outside`, then `then` (a fault's kind and keys).
    fn probe(outside: &Path, then: &str) -> Probe {
        let text = format!(
            "{HEAD}[[fixture.fault]]\nkind = \"symlink\"\npath = \"out\"\ntarget = {:?}\n[[fixture.fault]]\n{then}\n",
            outside.display().to_string()
        );
        super::super::parse(Path::new("probes/escape.toml"), &text).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn faults_do_not_follow_symlinks_out_of_the_sandbox() {
        let outside = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let victim = outside.path().join("victim.txt");
        std::fs::write(&victim, "host file\n").unwrap_or_else(|e| panic!("{e}"));
        let fixtures = Path::new(".");
        for then in [
            "kind = \"write\"\npath = \"out/victim.txt\"\ncontent = \"pwned\"",
            "kind = \"write\"\npath = \"out/new.txt\"\ncontent = \"pwned\"",
            "kind = \"chmod\"\npath = \"out/victim.txt\"\nmode = \"0777\"",
            "kind = \"delete\"\npath = \"out/victim.txt\"",
            "kind = \"mkdir\"\npath = \"out/sub/dir\"",
            "kind = \"chmod\"\npath = \"out\"\nmode = \"0777\"",
            "kind = \"write\"\npath = \"out\"\ncontent = \"pwned\"",
        ] {
            let e = Sandbox::create(&probe(outside.path(), then), fixtures)
                .err()
                .map(|e| crate::exit::chain(&e))
                .unwrap_or_else(|| panic!("{then}: applied"));
            assert!(e.starts_with("probes/escape.toml: fixture fault "), "{e}");
            assert!(e.contains("\"out\" is a symlink to") || e.contains("out is a symlink to"), "{e}");
            assert!(e.contains("outside the sandbox"), "{e}");
        }
        assert_eq!(std::fs::read_to_string(&victim).ok().as_deref(), Some("host file\n"));
        let names: Vec<_> =
            std::fs::read_dir(outside.path()).into_iter().flatten().flatten().map(|e| e.file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from("victim.txt")]);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(outside.path()).map(|m| m.permissions().mode() & 0o777).unwrap_or(0);
        assert_ne!(mode, 0o777);
        // the link itself may go, and links that stay inside are followed
        let sb = Sandbox::create(&probe(outside.path(), "kind = \"delete\"\npath = \"out\""), fixtures)
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(std::fs::symlink_metadata(sb.cwd.join("out")).is_err() && victim.exists());
        let text = format!(
            "{HEAD}[[fixture.fault]]\nkind = \"mkdir\"\npath = \"d\"\n[[fixture.fault]]\nkind = \"symlink\"\npath = \"in\"\n\
             target = \"d\"\n[[fixture.fault]]\nkind = \"write\"\npath = \"in/f.txt\"\ncontent = \"ok\"\n"
        );
        let p = super::super::parse(Path::new("p.toml"), &text).unwrap_or_else(|e| panic!("{e}"));
        let sb = Sandbox::create(&p, fixtures).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(std::fs::read_to_string(sb.cwd.join("d/f.txt")).ok().as_deref(), Some("ok"));
    }
}

#[cfg(test)]
mod path_error_tests {
    use super::*;

    #[test]
    fn a_path_that_leaves_says_how_as_a_variant_and_in_the_words_it_always_had() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = d.path().canonicalize().unwrap_or_else(|e| panic!("{e}"));
        std::fs::create_dir_all(root.join("work")).unwrap_or_else(|e| panic!("{e}"));
        std::os::unix::fs::symlink("/etc", root.join("work/out")).unwrap_or_else(|e| panic!("{e}"));
        let sb = Sandbox {
            dir: None,
            cwd: root.join("work"),
            home: root.join("home"),
            placeholders: BTreeMap::new(),
            root: root.clone(),
            since_pid: None,
        };
        let e = sb.inside("../x").err();
        assert!(matches!(&e, Some(PathError::Leaves(p)) if p == "../x"), "{e:?}");
        assert_eq!(e.map(|e| e.to_string()).as_deref(), Some("fixture path \"../x\" leaves the sandbox"));
        let e = sb.inside("out/passwd").and_then(|p| sb.confine(&p, true)).err();
        let Some(PathError::LinkLeadsOut { link, target }) = &e else { panic!("{e:?}") };
        assert_eq!((link.as_path(), target.as_path()), (Path::new("work/out"), Path::new("/etc")));
        assert_eq!(
            e.map(|e| e.to_string()).as_deref(),
            Some("work/out is a symlink to /etc (outside the sandbox): not followed")
        );
        assert!(matches!(sb.confine(Path::new("/elsewhere"), true), Err(PathError::Outside(_))));
    }
}
