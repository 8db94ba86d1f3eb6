//! What a probe needs from the host: `requires = ["bwrap", "curl"]` in a probe (and per subject in
//! `[subject.builtin]` / `[subject.claude-code]`). A run looks each part up once, at run time, and skips
//! a probe whose part is missing with what it needs and how to get it — `needs bubblewrap (scripts/setup
//! installs it)` — instead of failing on a machine where `scripts/setup` did not run. `scripts/setup`
//! stays the one way the lab installs host parts; `cargo test` (after it) counts a missing part as a
//! failure, like a missing Claude Code.
//!
//! Names: the parts of [`PARTS`] (a friendly name, a real check, how to get it); `python3:MODULE` (the
//! module imports in the lab's Python: `$PROBELAB_PYTHON`, else the venv of `scripts/setup`, else
//! `python3`); any other name is a command that must be on PATH.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// A host part the lab knows by name.
#[derive(Debug, Clone, Copy)]
pub struct Part {
    /// The name probes use.
    pub name: &'static str,
    /// What it is called in messages.
    pub what: &'static str,
    /// How to get it.
    pub how: &'static str,
}

/// The part every confined loop probe needs ([`crate::probe::Probe::requires_on`] adds it): a way
/// to confine the subject — the kernel's unprivileged namespaces (probelab's own launcher) or a
/// working bubblewrap ([`probelab_runtime::confine::backend`]).
pub const CONFINEMENT: &str = "confinement";

/// The named host parts.
pub const PARTS: &[Part] = &[
    Part {
        name: CONFINEMENT,
        what: "a way to confine the subject",
        how: "a kernel that lets users make namespaces (sysctl kernel.unprivileged_userns_clone=1, or an AppArmor profile that allows probelab), or bubblewrap (scripts/setup installs it)",
    },
    Part { name: "bwrap", what: "bubblewrap", how: "scripts/setup installs it" },
    Part { name: "socat", what: "socat", how: "scripts/setup installs it" },
    Part { name: "curl", what: "curl", how: "scripts/setup installs it" },
    Part { name: "ps", what: "ps", how: "scripts/setup installs procps" },
    Part { name: "git", what: "git", how: "apt-get install git" },
    Part { name: "npm", what: "npm (Node.js)", how: "apt-get install npm" },
    Part { name: "chromium", what: "headless Chromium", how: "scripts/setup installs it" },
    Part { name: "rg", what: "ripgrep", how: "scripts/setup builds ripgrep 14.1.1 from crates.io" },
    Part { name: "fd", what: "fd 10 or newer", how: "scripts/setup builds fd-find 10.2.0 from crates.io" },
    Part { name: "node", what: "Node.js 20.6 or newer", how: "apt-get install nodejs, or npm's node package" },
    Part { name: "python3:pylsp", what: "python-lsp-server", how: "scripts/setup installs it" },
    Part {
        name: "pids-cgroup",
        what: "a writable cgroup-v1 pids hierarchy (/sys/fs/cgroup/pids)",
        how: "root on a Linux host that mounts it; the Bash tool's fork-bomb guard lives there",
    },
];

/// True when `name` is a well-formed requirement (a part, `python3:MODULE` or a command name).
pub fn valid_name(name: &str) -> bool {
    let body = name.strip_prefix("python3:").unwrap_or(name);
    !body.is_empty() && body.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '+'))
}

/// The first of `names` the host lacks, as the reason a probe is skipped; `None` when all are there.
pub fn missing(names: &[String]) -> Option<String> {
    missing_part(names).map(|(_, why)| why)
}

/// [`missing`] with the part's name: (`confinement`, `needs a way to confine the subject: …`).
pub fn missing_part(names: &[String]) -> Option<(String, String)> {
    names.iter().find_map(|n| lookup(n).map(|why| (n.clone(), why)))
}

/// Whether `name` is there: `None` when it is, else what is missing and how to get it (cached per process).
pub fn lookup(name: &str) -> Option<String> {
    static SEEN: OnceLock<Mutex<HashMap<String, Option<String>>>> = OnceLock::new();
    let seen = SEEN.get_or_init(Mutex::default);
    if let Some(known) = seen.lock().ok().and_then(|m| m.get(name).cloned()) {
        return known;
    }
    let answer = check(name);
    if let Ok(mut m) = seen.lock() {
        m.insert(name.to_string(), answer.clone());
    }
    answer
}

fn check(name: &str) -> Option<String> {
    let part = PARTS.iter().find(|p| p.name == name);
    let needs = |detail: &str| {
        let (what, how) = part.map_or((name, "not installed"), |p| (p.what, p.how));
        Some(format!("needs {what}{detail} ({how})"))
    };
    if let Some(module) = name.strip_prefix("python3:") {
        return if module_found(module) { None } else { needs("") };
    }
    match name {
        CONFINEMENT => {
            let launcher = crate::probe::placeholders::probelab_binary();
            match probelab_runtime::confine::backend(&launcher) {
                Ok(_) => None,
                Err(why) => needs(&format!(": {why}")),
            }
        }
        "bwrap" => {
            let Some(bwrap) = on_path("bwrap") else { return needs("") };
            // what the Bash tool asks of it (tools/bwrap.rs): new namespaces, a read-only root
            let out = std::process::Command::new(bwrap)
                .args(["--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net"])
                .args(["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--", "true"])
                .stdin(std::process::Stdio::null())
                .output();
            match out {
                Ok(o) if o.status.success() => None,
                Ok(o) => {
                    let why = String::from_utf8_lossy(&o.stderr).lines().next().unwrap_or("").trim().to_string();
                    Some(format!(
                        "needs a bubblewrap that can make namespaces ({why}); the sandbox probes run where it can"
                    ))
                }
                Err(e) => needs(&format!(" that runs ({e})")),
            }
        }
        "pids-cgroup" => {
            // what the Bash tool does (runtime tools/bash.rs): a group of its own under the hierarchy
            let dir = Path::new("/sys/fs/cgroup/pids").join(format!("probelab-host-check-{}", std::process::id()));
            let made = std::fs::create_dir(&dir).is_ok();
            let _ = std::fs::remove_dir(&dir);
            if made {
                None
            } else {
                needs("")
            }
        }
        "chromium" => {
            let found =
                std::env::var_os("PROBELAB_CHROMIUM").map(PathBuf::from).filter(|p| p.is_file()).or_else(|| {
                    ["chromium-headless-shell", "chromium", "chromium-browser"].iter().find_map(|c| on_path(c))
                });
            if found.is_some() {
                None
            } else {
                needs("")
            }
        }
        "rg" | "fd" | "node" => {
            if locate(name).is_some() {
                None
            } else {
                needs("")
            }
        }
        command => {
            if on_path(command).is_some() {
                None
            } else {
                needs("")
            }
        }
    }
}

/// Whether the lab's Python has `module`, looked up without running any of it (issue 41: a check of
/// the host runs no project code): `importlib.util.find_spec` in an isolated interpreter (`-I`: no
/// current or script directory on `sys.path`, no `PYTHON*` variables, no user site), started in `/`
/// with PATH alone. A dotted name is refused (its parent package would be imported to find it).
pub fn module_found(module: &str) -> bool {
    if module.contains('.') || !valid_name(&format!("python3:{module}")) {
        return false;
    }
    let script = "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec(sys.argv[1]) else 1)";
    std::process::Command::new(python())
        .args(["-I", "-c", script, module])
        .current_dir("/")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The lab's Python: `$PROBELAB_PYTHON`, else the venv of `scripts/setup`, else `python3`.
pub fn python() -> PathBuf {
    if let Some(p) = std::env::var_os("PROBELAB_PYTHON") {
        return PathBuf::from(p);
    }
    let venv = crate::versions::cache_root().join("venv/bin/python");
    if venv.is_file() {
        venv
    } else {
        PathBuf::from("python3")
    }
}

/// Where the lab finds a program agents need (`rg`, `fd` ≥ 10, `node` ≥ 20.6): what `scripts/setup`
/// installed into the cache (`$PROBELAB_RG` for rg), else PATH, if its `--version` is recent enough.
pub fn locate(name: &str) -> Option<PathBuf> {
    static SEEN: OnceLock<Mutex<HashMap<String, Option<PathBuf>>>> = OnceLock::new();
    let seen = SEEN.get_or_init(Mutex::default);
    if let Some(known) = seen.lock().ok().and_then(|m| m.get(name).cloned()) {
        return known;
    }
    let cache = crate::versions::cache_root();
    let (candidates, least): (Vec<PathBuf>, (u64, u64)) = match name {
        "rg" => (
            std::env::var_os("PROBELAB_RG")
                .map(PathBuf::from)
                .into_iter()
                .chain([cache.join("ripgrep-14.1.1/bin/rg")])
                .chain(on_path("rg"))
                .collect(),
            (13, 0),
        ),
        "fd" => (
            [cache.join("fd-10.2.0/bin/fd")].into_iter().chain(on_path("fd")).chain(on_path("fdfind")).collect(),
            (10, 0),
        ),
        "node" => (on_path("node").into_iter().collect(), (20, 6)),
        _ => (Vec::new(), (0, 0)),
    };
    let found = candidates.into_iter().find(|p| is_executable(p) && version_of(p).is_some_and(|v| v >= least));
    if let Ok(mut m) = seen.lock() {
        m.insert(name.to_string(), found.clone());
    }
    found
}

/// The (major, minor) a program's `--version` prints first (`ripgrep 14.1.1`, `fd 10.2.0`, `v20.20.2`).
fn version_of(program: &Path) -> Option<(u64, u64)> {
    let out = std::process::Command::new(program).arg("--version").stdin(std::process::Stdio::null()).output().ok()?;
    parse_version(&String::from_utf8_lossy(&out.stdout))
}

/// The first (major, minor) of a `--version` text.
fn parse_version(text: &str) -> Option<(u64, u64)> {
    let word = text.split_whitespace().find(|w| w.trim_start_matches('v').starts_with(|c: char| c.is_ascii_digit()))?;
    let mut parts = word.trim_start_matches('v').split('.').map(|p| p.parse::<u64>().ok());
    Some((parts.next()??, parts.next().flatten().unwrap_or(0)))
}

/// Where `command` is on PATH (an executable file), if anywhere.
pub fn on_path(command: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(command)).find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_command_says_what_and_how() {
        assert_eq!(lookup("probelab-no-such-command"), Some("needs probelab-no-such-command (not installed)".into()));
        assert_eq!(lookup("sh"), None);
        assert!(valid_name("python3:pylsp") && valid_name("bwrap") && !valid_name("a b") && !valid_name("python3:"));
    }

    #[test]
    fn versions_are_read_from_what_the_programs_print() {
        assert_eq!(parse_version("fdfind 8.6.0\n"), Some((8, 6)));
        assert_eq!(parse_version("ripgrep 14.1.1\n\nfeatures:+pcre2"), Some((14, 1)));
        assert_eq!(parse_version("v20.20.2\n"), Some((20, 20)));
        assert_eq!(parse_version("no digits"), None);
        assert!(locate("probelab-no-such-part").is_none());
    }

    #[test]
    fn a_missing_module_is_named() {
        assert!(lookup("python3:probelab_no_such_module").is_some_and(|m| m.starts_with("needs python3:")));
    }
}
