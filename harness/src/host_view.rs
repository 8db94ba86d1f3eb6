//! What a confined process sees of the host (issue 41, item 4): the directories and files hidden, and
//! what is shown again under them. A module of its own, below the confinement and the install cache
//! that both use it (a subject's runs, its `--version`, an install's `prepare`).

use std::path::{Path, PathBuf};

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

/// What a confined process sees of the host, `launcher` being the probelab binary: [`HIDDEN_DIRS`] and
/// [`HIDDEN_ETC`] hidden, and the project's private files ([`project_private`]); shown again under them
/// (and under the host's /tmp, which the subject's own /tmp covers): `also` (the install cache and the
/// probe file's directory for a probe's subject: `crate::confine::host_view`; the install for a
/// subject's `--version` or an install's `prepare`), the probelab binary's directory, the project (the
/// directory probelab runs in), and the programs on PATH — a PATH directory under a home is shown with
/// the tool it belongs to (`~/.pyenv/shims` → `~/.pyenv`, `~/.cargo/bin` → `~/.cargo`, but
/// `~/.local/bin` alone), its credential files ([`HIDDEN_CREDENTIALS`]) hidden.
pub fn host_view_showing(also: &[PathBuf], launcher: &Path) -> HostView {
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
    // the probelab binary's directory (MCP and LSP servers run as it), or the binary alone when it lies
    // right in /tmp, which is never shown whole
    if let Some(dir) = launcher.parent() {
        show(if dir == Path::new("/tmp") { launcher.to_path_buf() } else { dir.to_path_buf() });
    }
    if let Ok(cwd) = std::env::current_dir() {
        show(cwd);
    }
    for dir in also {
        show(dir.clone());
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
