//! The lab's policy of confinement: every subject runs confined ([`probelab_runtime::confine`], the
//! one bubblewrap wrapper: the host read-only, only the probe's sandbox writable, no network but the
//! stub and the probe's services) unless its probe opts out with a reason (`[subject] unconfined =
//! "why"`). The built-in subject's processes (Bash outside its own sandbox, hooks, MCP and LSP servers)
//! get it through [`probelab_runtime::builtin::SessionConfig::confine`]; the Claude Code binary is
//! started under it whole ([`crate::subject::claude_code::run`]).
//!
//! Two backends make it, with the same guarantees ([`probelab_runtime::confine::Backend`]): probelab's
//! own launcher where the kernel lets this user make namespaces (no host package), else bubblewrap;
//! `PROBELAB_CONFINE=namespaces|bwrap` picks one ([`probelab_runtime::confine::backend`]). Where
//! neither can, the probe is skipped by its `requires` ([`crate::probe::Probe::requires_on`] adds
//! `confinement`), and a run that gets here anyway refuses: a subject never runs unconfined silently.

pub use probelab_runtime::confine::{Confinement, Network, Served};
use std::path::{Path, PathBuf};

/// A run's confinement: what wraps the subject, and the lab's end of its relayed ports (kept alive for
/// the run).
#[derive(Debug)]
pub struct RunConfinement {
    /// The wrapper.
    pub confinement: Confinement,
    _served: Option<Served>,
    /// The built-in subject's session: its holder, killed with everything left in it at the run's end.
    _session: Option<probelab_runtime::confine::SessionHolder>,
    /// The run's limits (dropped last: removed once the processes are gone).
    limits: crate::limits::RunLimits,
}

impl RunConfinement {
    /// The limits the subject reached, in words ([`crate::limits::RunLimits::reached`], and a file of
    /// `sandbox` at the largest-file limit: [`crate::limits::files_at_limit`]).
    pub fn limits_reached(&self, sandbox: &Path) -> Vec<String> {
        let mut out = self.limits.reached();
        if let Some(n) = self.confinement.limits.as_ref().and_then(|l| l.max_file_bytes) {
            out.extend(crate::limits::files_at_limit(sandbox, n));
        }
        out
    }
}

/// The confinement of `probe`'s `subject` (`builtin`, `claude-code@V`) writing only `sandbox`, reaching the loopback `ports` (the stub,
/// the probe's services): `Ok(None)` when the probe opted out; an error when the host cannot confine.
/// `whole`: the confinement wraps the whole subject (Claude Code: its namespaces its own); else each
/// process the built-in runtime starts joins one session made for the run
/// ([`probelab_runtime::confine::Session`]: one pid, ipc, uts, network and mount namespace for all of
/// them, the lab's processes outside it).
pub async fn for_run(
    probe: &crate::probe::Probe,
    subject: &crate::subject::id::SubjectId,
    sandbox: &Path,
    ports: &[u16],
    whole: bool,
) -> Result<Option<RunConfinement>, String> {
    if probe.unconfined_on(subject).is_some() {
        return Ok(None);
    }
    let launcher = crate::probe::placeholders::probelab_binary();
    let backend = probelab_runtime::confine::backend(&launcher).map_err(|why| {
        format!(
            "{}: the subject cannot be confined: {why}; it is not run unconfined (`[subject] unconfined = \"why\"` opts a probe out)",
            probe.path.display()
        )
    })?;
    let (network, served) = if ports.is_empty() {
        (Network::Off, None)
    } else {
        let served = probelab_runtime::confine::serve_ports(&sandbox.join(".net"), ports)
            .map_err(|e| format!("cannot serve the confined subject's ports: {e}"))?;
        (Network::Relayed(served.ports(&launcher)), Some(served))
    };
    let mut confinement = Confinement::lab(backend, sandbox, network, true);
    let set = crate::limits::Limits::of(&probe.limits);
    let limits = crate::limits::RunLimits::create(&set);
    confinement.limits = Some(probelab_runtime::confine::Limits {
        launcher: launcher.clone(),
        whole: limits.procs_files(true),
        joining: limits.procs_files(false),
        max_file_bytes: Some(set.file_bytes),
    });
    let view = host_view(probe, &launcher);
    confinement.hidden = view.hidden;
    confinement.skeleton = view.skeleton;
    confinement.visible = view.shown;
    let session = if whole {
        None
    } else {
        let holder = probelab_runtime::confine::start_session(&confinement, &launcher)
            .await
            .map_err(|e| format!("{}: cannot confine the subject: {e}", probe.path.display()))?;
        confinement.session = Some(holder.session.clone());
        Some(holder)
    };
    Ok(Some(RunConfinement { confinement, _served: served, _session: session, limits }))
}

/// Directories of the host a subject never sees (issue 41, item 4): the homes (the lab's user's keys,
/// tokens, shell history), `/var` and `/run` (services' state and their path sockets, which a network
/// namespace does not cover), and the rest that holds no program. Each becomes an empty read-only
/// directory; what the lab must show under them (its cache, its binary, the project, the programs on
/// PATH) is shown again, read-only.
pub const HIDDEN_DIRS: &[&str] = &["/root", "/home", "/var", "/run", "/srv", "/mnt", "/media", "/boot"];

/// Files and directories of `/etc` that hold secrets: hidden as well.
pub const HIDDEN_ETC: &[&str] = &[
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/ssl/private",
    "/etc/security/opasswd",
];

/// Files under a shown tool directory that hold credentials: hidden inside it.
pub const HIDDEN_CREDENTIALS: &[&str] =
    &[".cargo/credentials", ".cargo/credentials.toml", ".npmrc", ".pypirc", ".netrc", ".git-credentials"];

/// What a confined subject sees of the host.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct HostView {
    /// Hidden (directories: an empty tmpfs; files: /dev/null).
    pub hidden: Vec<PathBuf>,
    /// Empty directories inside the hidden ones.
    pub skeleton: Vec<PathBuf>,
    /// Shown again under the hidden ones, read-only.
    pub shown: Vec<PathBuf>,
}

/// The host as `probe`'s subject sees it, `launcher` being the probelab binary: [`HIDDEN_DIRS`] and
/// [`HIDDEN_ETC`] hidden; shown again under them (and under the host's /tmp, which the subject's own
/// /tmp covers): the install cache (Claude Code versions, agents, the
/// venv), the probelab binary's directory, the project (the directory probelab runs in, and the probe
/// file's), and the programs on PATH — a PATH directory under a home is shown with the tool it
/// belongs to (`~/.pyenv/shims` → `~/.pyenv`, `~/.cargo/bin` → `~/.cargo`, but `~/.local/bin` alone),
/// its credential files ([`HIDDEN_CREDENTIALS`]) hidden.
pub fn host_view(probe: &crate::probe::Probe, launcher: &Path) -> HostView {
    let private = std::env::current_dir().map(|cwd| project_private(&cwd)).unwrap_or_default();
    let mut hidden_dirs: Vec<PathBuf> = HIDDEN_DIRS.iter().map(PathBuf::from).filter(|p| p.is_dir()).collect();
    hidden_dirs.extend(private.iter().filter(|p| p.is_dir() && !p.is_symlink()).cloned());
    let under_hidden = |p: &Path| hidden_dirs.iter().any(|h| p.starts_with(h) && p != h);
    // a subject's /tmp is its own: what lies under the host's (a checkout or project there, the
    // probelab binary an MCP or LSP server runs as) is shown again the same way — never /tmp itself
    let under_tmp = |p: &Path| p.starts_with("/tmp") && p != Path::new("/tmp");
    let mut shown: Vec<PathBuf> = Vec::new();
    let mut show = |p: PathBuf| {
        if let Ok(p) = p.canonicalize() {
            if (under_hidden(&p) || under_tmp(&p)) && !shown.iter().any(|s| p.starts_with(s)) {
                shown.retain(|s| !s.starts_with(&p));
                shown.push(p);
            }
        }
    };
    show(crate::versions::cache_root());
    // the probelab binary's directory (MCP and LSP servers run as it), or the binary alone when it lies
    // right in /tmp, which is never shown whole
    if let Some(dir) = launcher.parent() {
        show(if dir == Path::new("/tmp") { launcher.to_path_buf() } else { dir.to_path_buf() });
    }
    if let Ok(cwd) = std::env::current_dir() {
        show(cwd);
    }
    if let Some(dir) = probe.path.parent() {
        show(std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf()));
    }
    for dir in std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()) {
        let Some(home) = home_of(&dir) else {
            show(dir);
            continue;
        };
        let tool: PathBuf = dir.components().take(home.components().count() + 1).collect();
        let tool_name = tool.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        show(if tool_name == ".local" || tool == dir { dir } else { tool });
    }
    let mut hidden: Vec<PathBuf> = hidden_dirs.clone();
    hidden.extend(private.iter().filter(|p| p.is_file() && !p.is_symlink()).cloned());
    hidden.extend(HIDDEN_ETC.iter().map(PathBuf::from).filter(|p| p.exists()));
    if let Ok(entries) = std::fs::read_dir("/etc/ssh") {
        hidden.extend(
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().ends_with("_key"))),
        );
    }
    for s in &shown {
        if let Some(home) = home_of(s) {
            hidden.extend(HIDDEN_CREDENTIALS.iter().map(|c| home.join(c)).filter(|c| c.starts_with(s) && c.exists()));
        }
    }
    let skeleton = ["/var/tmp"].iter().map(PathBuf::from).filter(|p| p.is_dir() && under_hidden(p)).collect();
    HostView { hidden, skeleton, shown }
}

/// What of the project in `start` (the git work tree it lies in) a subject never sees (issue 41, item 4):
/// its `.git` (history, remote URLs with tokens, hooks) and every entry its ignore rules leave out —
/// build output, `.env` files, local caches: what the project says is not its source (`.gitignore`,
/// `.git/info/exclude`, the user's global excludes, read by the ripgrep family's `ignore` crate; no git
/// command runs, so nothing of the project's git configuration executes). A whole ignored directory is
/// one entry. Decision: untracked files that no rule ignores stay visible — a probe and the helper
/// script it starts, written and not yet committed, must run. None outside a git work tree. Read once
/// per process.
pub fn project_private(start: &Path) -> Vec<PathBuf> {
    /// Each work tree read, with what it keeps to itself.
    type Seen = std::sync::Mutex<Vec<(PathBuf, Vec<PathBuf>)>>;
    static SEEN: std::sync::OnceLock<Seen> = std::sync::OnceLock::new();
    let seen = SEEN.get_or_init(Default::default);
    let Some(top) = start.ancestors().find(|d| d.join(".git").exists()).map(Path::to_path_buf) else {
        return Vec::new();
    };
    if let Some((_, v)) = seen.lock().ok().and_then(|s| s.iter().find(|(t, _)| *t == top).cloned()) {
        return v;
    }
    let mut kept = std::collections::HashSet::new();
    let walk = ignore::WalkBuilder::new(&top)
        .hidden(false)
        .parents(false)
        .follow_links(false)
        .filter_entry(|e| e.file_name() != ".git")
        .build();
    for e in walk.flatten() {
        kept.insert(e.path().to_path_buf());
    }
    let mut out = vec![top.join(".git")];
    for dir in kept.iter().filter(|p| p.is_dir() && !p.is_symlink()) {
        for child in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = child.path();
            if !kept.contains(&p) && child.file_name() != ".git" {
                out.push(p);
            }
        }
    }
    out.sort();
    if let Ok(mut s) = seen.lock() {
        s.push((top, out.clone()));
    }
    out
}

/// The home directory `p` lies in: `/root`, or `/home/NAME`.
fn home_of(p: &Path) -> Option<PathBuf> {
    let mut c = p.components();
    c.next()?; // the root
    let first = c.next()?.as_os_str();
    if first == "root" {
        return Some(PathBuf::from("/root"));
    }
    (first == "home").then(|| c.next().map(|n| Path::new("/home").join(n.as_os_str()))).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_the_subject_needs_under_the_host_tmp_is_shown_again_never_tmp_itself() {
        // a project (and a probe file) under the host's /tmp: the subject's own /tmp would cover it
        let d = tempfile::Builder::new().tempdir_in("/tmp").unwrap_or_else(|e| panic!("{e}"));
        let probes = d.path().join("probes");
        std::fs::create_dir_all(&probes).unwrap_or_else(|e| panic!("{e}"));
        let text = "id = \"t.p\"\nclaims = [\"READ-1\"]\nabout = \"x\"\n[[turn]]\ntext = \"done\"\n";
        let probe = crate::probe::parse(&probes.join("p.toml"), text).unwrap_or_else(|e| panic!("{e}"));
        let launcher = d.path().join("bin/probelab");
        std::fs::create_dir_all(d.path().join("bin")).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(&launcher, "").unwrap_or_else(|e| panic!("{e}"));
        let view = host_view(&probe, &launcher);
        let canon = |p: &Path| p.canonicalize().unwrap_or_else(|e| panic!("{e}"));
        assert!(view.shown.contains(&canon(&probes)), "{:?}", view.shown);
        assert!(view.shown.contains(&canon(&d.path().join("bin"))), "{:?}", view.shown);
        assert!(!view.shown.iter().any(|s| s == Path::new("/tmp")), "{:?}", view.shown);
        // a probe right in /tmp shows nothing of /tmp; a binary right in /tmp is shown alone
        let loose = crate::probe::parse(Path::new("/tmp/p.toml"), text).unwrap_or_else(|e| panic!("{e}"));
        let binary = tempfile::Builder::new().prefix("probelab-").tempfile_in("/tmp").unwrap_or_else(|e| panic!("{e}"));
        let view = host_view(&loose, binary.path());
        assert!(!view.shown.iter().any(|s| s == Path::new("/tmp")), "{:?}", view.shown);
        assert!(view.shown.contains(&canon(binary.path())), "{:?}", view.shown);
    }
}
