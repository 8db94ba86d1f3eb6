//! The sandbox of one probe run: a fresh temp dir with `work/` (the cwd, holding the fixture) and
//! `home/` (HOME), removed afterwards unless kept. Placeholders `{cwd}`, `{home}`, `{sandbox}` in the
//! script's tool inputs and in checks are resolved against it, and so are the names a run adds to
//! [`Sandbox::placeholders`] (`{artifact}`: the artifact service's public origin, when the probe turns
//! the Artifact tool on; `{web}`: the web service's URL; `{probelab}`: this binary, see
//! [`probelab_binary`]); `[[fixture.fault]]` changes are applied before the run or before a given turn.
//! Every placeholder of a run is resolved here, in one place — the runtime and the subjects get
//! resolved values.

use super::{FsFault, Probe};
use probelab_runtime::config::PluginSpec;
use probelab_runtime::config::ServerSpec;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The `{probelab}` placeholder's name: the probelab binary (its `fake-mcp` and `fake-lsp` subcommands
/// are the fixture servers of MCP and LSP probes).
pub const PROBELAB: &str = "probelab";
/// Env override of the probelab binary `{probelab}` names.
pub const ENV_PROBELAB_BIN: &str = "PROBELAB_BIN";

/// The probelab binary: `$PROBELAB_BIN`, else this executable when it is probelab, else the `probelab`
/// beside or above it (a test binary in `target/<profile>/deps/`).
pub fn probelab_binary() -> PathBuf {
    if let Some(p) = std::env::var_os(ENV_PROBELAB_BIN) {
        return PathBuf::from(p);
    }
    let Ok(exe) = std::env::current_exe() else { return PathBuf::from("probelab") };
    if exe.file_stem().is_some_and(|n| n == "probelab") {
        return exe;
    }
    let dir = exe.parent().unwrap_or(Path::new("."));
    [dir.join("probelab"), dir.join("..").join("probelab")]
        .into_iter()
        .find(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from("probelab"))
}

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
}

impl Sandbox {
    /// Creates the dirs and the fixture. `fixtures_root` is where `[fixture] dir` is looked up.
    pub fn create(probe: &Probe, fixtures_root: &Path) -> Result<Sandbox, String> {
        // registered for removal should the run be interrupted, the owner's pid written in its root
        let (dir, root) = crate::cleanup::register(|| {
            let dir = tempfile::Builder::new()
                .prefix(crate::cleanup::SANDBOX_PREFIX)
                .tempdir()
                .map_err(|e| format!("cannot create a sandbox: {e}"))?;
            let root = dir.path().canonicalize().map_err(|e| e.to_string())?;
            Ok(((dir, root.clone()), root))
        })?;
        let cwd = root.join("work");
        let home = root.join("home");
        for d in [&cwd, &home] {
            std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
        }
        let placeholders = BTreeMap::from([(PROBELAB.to_string(), probelab_binary().to_string_lossy().into_owned())]);
        let sb = Sandbox { dir: Some(dir), root, cwd, home, placeholders };
        if let Some(d) = &probe.fixture.dir {
            let src = fixtures_root.join(d);
            if !src.is_dir() {
                return Err(format!("{}: fixture dir {} does not exist", probe.path.display(), src.display()));
            }
            copy_tree(&src, &sb.cwd).map_err(|e| format!("copying {}: {e}", src.display()))?;
        }
        for (rel, spec) in &probe.fixture.files {
            let path = sb.inside(rel)?;
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
            }
            std::fs::write(&path, file_bytes(spec)?).map_err(|e| format!("{}: {e}", path.display()))?;
        }
        stamp_mtimes(&sb.cwd).map_err(|e| format!("cannot set the fixture's mtimes: {e}"))?;
        for f in probe.fixture.fault.iter().filter(|f| f.at_turn.is_none()) {
            sb.apply(f)?;
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
    pub fn inside(&self, rel: &str) -> Result<PathBuf, String> {
        let resolved = self.resolve(rel);
        let p = Path::new(&resolved);
        let abs = if p.is_absolute() { p.to_path_buf() } else { self.cwd.join(p) };
        if abs.components().any(|c| matches!(c, std::path::Component::ParentDir)) || !abs.starts_with(&self.root) {
            return Err(format!("fixture path {rel:?} leaves the sandbox"));
        }
        Ok(abs)
    }

    /// Replaces `{cwd}`, `{home}`, `{sandbox}` and the run's [`Sandbox::placeholders`].
    pub fn resolve(&self, s: &str) -> String {
        let mut out = s
            .replace("{cwd}", &self.cwd.to_string_lossy())
            .replace("{home}", &self.home.to_string_lossy())
            .replace("{sandbox}", &self.root.to_string_lossy());
        for (name, value) in &self.placeholders {
            out = out.replace(&format!("{{{name}}}"), value);
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
            }
        }
        s
    }

    /// Applies one sandbox change.
    pub fn apply(&self, f: &FsFault) -> Result<(), String> {
        let p = self.inside(&f.path)?;
        let res = match f.kind.as_str() {
            "write" => {
                if let Some(parent) = p.parent() {
                    let _ = std::fs::create_dir_all(parent);
                }
                std::fs::write(&p, f.content.as_deref().unwrap_or_default())
            }
            "delete" => {
                if p.is_dir() {
                    std::fs::remove_dir_all(&p)
                } else {
                    std::fs::remove_file(&p)
                }
            }
            "mkdir" => std::fs::create_dir_all(&p),
            "chmod" => {
                use std::os::unix::fs::PermissionsExt;
                let mode = u32::from_str_radix(f.mode.as_deref().unwrap_or("0644").trim_start_matches("0o"), 8)
                    .map_err(|e| format!("chmod mode: {e}"))?;
                std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode))
            }
            "symlink" => std::os::unix::fs::symlink(self.resolve(f.target.as_deref().unwrap_or_default()), &p),
            other => return Err(format!("unknown fixture fault kind {other:?}")),
        };
        res.map_err(|e| format!("fixture fault {} {}: {e}", f.kind, f.path))
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        // the owning sandbox (not a view): its directory goes with it
        if let Some(d) = self.dir.take() {
            drop(d);
            crate::cleanup::unregister(&self.root, false);
        }
    }
}

pub use super::files::file_bytes;

/// The modification time of the fixture's first file (2026-01-01T00:00:00Z); the n-th file in path order
/// gets [`FIXTURE_MTIME_STEP`] more per file before it.
pub const FIXTURE_MTIME_BASE: u64 = 1_767_225_600;
/// Seconds between the mtimes of two consecutive fixture files.
pub const FIXTURE_MTIME_STEP: u64 = 1;

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

fn copy_tree(src: &Path, dst: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dst)?;
    for e in std::fs::read_dir(src)? {
        let e = e?;
        let to = dst.join(e.file_name());
        if e.file_type()?.is_dir() {
            copy_tree(&e.path(), &to)?;
        } else {
            std::fs::copy(e.path(), &to)?;
        }
    }
    Ok(())
}
