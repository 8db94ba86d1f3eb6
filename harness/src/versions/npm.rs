//! The npm command: `npm` on PATH, or `$PROBELAB_NPM` (tests point it at a fake that lays out a package).

use super::error::VersionError;
use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long `npm view` may take.
pub const VIEW_DEADLINE: Duration = Duration::from_secs(120);
/// How long `npm install` of one version (~330 MB) may take.
pub const INSTALL_DEADLINE: Duration = Duration::from_secs(1800);
/// How much of npm's stderr an error quotes (its last lines).
const STDERR_TAIL_LINES: usize = 15;

/// The npm program probelab runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Npm {
    program: OsString,
}

/// What a successful npm run printed.
#[derive(Debug)]
pub struct Output {
    /// Its stdout.
    pub stdout: String,
    /// Its stderr.
    pub stderr: String,
}

impl Npm {
    /// A given program (a path, or a name looked up on PATH).
    pub fn new(program: impl Into<OsString>) -> Npm {
        Npm { program: program.into() }
    }

    /// `$PROBELAB_NPM`, else `npm`.
    pub fn from_env() -> Npm {
        Npm::new(std::env::var_os("PROBELAB_NPM").filter(|p| !p.is_empty()).unwrap_or_else(|| "npm".into()))
    }

    /// The program.
    pub fn program(&self) -> &OsStr {
        &self.program
    }

    /// Runs `npm ARGS` in `cwd`, stdin closed, within `deadline`; `what` names the job in errors.
    pub fn run(&self, args: &[&OsStr], cwd: &Path, deadline: Duration, what: &str) -> Result<Output, VersionError> {
        let ran = run_captured(&self.program, args, cwd, deadline, None).map_err(|e| VersionError::NpmMissing {
            program: self.program.to_string_lossy().into_owned(),
            what: what.to_string(),
            error: e.to_string(),
        })?;
        match ran.status {
            Ok(()) => Ok(Output { stdout: ran.stdout, stderr: ran.stderr }),
            Err(status) => Err(failed(what, status, &ran.stderr)),
        }
    }
}

/// What a command run by [`run_captured`] did.
#[derive(Debug)]
pub(crate) struct Captured {
    /// Ok on exit 0, else `exit N` / `killed by a signal` / `timed out after N s` / `its stdout could not
    /// be read: …`.
    pub status: Result<(), String>,
    /// Its stdout.
    pub stdout: String,
    /// Its stderr.
    pub stderr: String,
}

/// Runs a program in its own process group, stdin closed, stdout and stderr captured; killed (the
/// whole group) at the deadline. `env`: `None` inherits the lab's environment (npm needs its own
/// settings), `Some` gives exactly these variables. Err only when it cannot be started; an output that
/// cannot be read fails its status.
pub(crate) fn run_captured(
    program: &OsStr,
    args: &[&OsStr],
    cwd: &Path,
    deadline: Duration,
    env: Option<&[(&str, &OsStr)]>,
) -> std::io::Result<Captured> {
    use std::os::unix::process::CommandExt;
    let spawn = || {
        let mut cmd = Command::new(program);
        if let Some(env) = env {
            cmd.env_clear().envs(env.iter().copied());
        }
        cmd.args(args)
            .current_dir(cwd)
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
    };
    // ETXTBSY: a script written a moment ago (a fake npm) whose write handle another thread's fork
    // still holds; it clears once that child has exec'd
    let mut child = spawn();
    for _ in 0..20 {
        match &child {
            Err(e) if e.raw_os_error() == Some(26) => {
                std::thread::sleep(Duration::from_millis(25));
                child = spawn();
            }
            _ => break,
        }
    }
    let mut child = child?;
    // read both pipes on their own threads, so a chatty program never blocks on a full pipe
    let reader = |pipe: Option<Box<dyn Read + Send>>| {
        pipe.map(|mut p| {
            std::thread::spawn(move || {
                let mut b = Vec::new();
                p.read_to_end(&mut b).map(|_| b)
            })
        })
    };
    let out = reader(child.stdout.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let err = reader(child.stderr.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => break Ok(()),
            Ok(Some(status)) => {
                break Err(match status.code() {
                    Some(c) => format!("exit {c}"),
                    None => "killed by a signal".to_string(),
                })
            }
            Ok(None) if started.elapsed() >= deadline => {
                // the whole group: the program's own children hold the pipes too
                if let Ok(pid) = i32::try_from(child.id()) {
                    let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), nix::sys::signal::SIGKILL);
                }
                let _ = child.kill();
                let _ = child.wait();
                break Err(format!("timed out after {} s", deadline.as_secs()));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => break Err(format!("cannot wait for it: {e}")),
        }
    };
    // a pipe that fails to read makes the run a failure, not an empty output read as the program's answer
    let join = |h: Option<std::thread::JoinHandle<std::io::Result<Vec<u8>>>>, name: &str| match h.map(|h| h.join()) {
        None => Ok(String::new()),
        Some(Ok(Ok(b))) => Ok(String::from_utf8_lossy(&b).into_owned()),
        Some(Ok(Err(e))) => Err(format!("its {name} could not be read: {e}")),
        Some(Err(_)) => Err(format!("its {name} could not be read: the reader panicked")),
    };
    let (stdout, stderr) = (join(out, "stdout"), join(err, "stderr"));
    let status = match (&stdout, &stderr) {
        (Err(e), _) | (_, Err(e)) => Err(e.clone()),
        _ => status,
    };
    // the stream that failed is empty, its failure in the status
    Ok(Captured { status, stdout: stdout.unwrap_or_default(), stderr: stderr.unwrap_or_default() })
}

/// The error for a failed npm run: its exit, the tail of its stderr, and a hint where the stderr shows
/// the cause.
pub(crate) fn failed(what: &str, status: String, stderr: &str) -> VersionError {
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail = lines[lines.len().saturating_sub(STDERR_TAIL_LINES)..].join("\n");
    let hint = if ["ENOTFOUND", "ECONNREFUSED", "ETIMEDOUT", "EAI_AGAIN", "ECONNRESET", "ENETUNREACH"]
        .iter()
        .any(|c| stderr.contains(c))
    {
        "; the npm registry is unreachable: check the network and npm's registry setting (`npm config get registry`)"
    } else if stderr.contains("ENOSPC") {
        "; the disk is full: free some space or lower PROBELAB_CACHE_MAX"
    } else {
        ""
    };
    VersionError::NpmFailed {
        what: what.to_string(),
        status,
        stderr_tail: if tail.is_empty() { "(npm printed nothing on stderr)".to_string() } else { tail },
        hint: hint.to_string(),
    }
}

/// npm's stderr says the version does not exist (E404 / ETARGET).
pub(crate) fn says_no_such_version(e: &VersionError) -> bool {
    match e {
        VersionError::NpmFailed { stderr_tail, .. } => {
            stderr_tail.contains("ETARGET") || stderr_tail.contains("No matching version found")
        }
        _ => false,
    }
}

/// The digest of the package tree npm installed in `dir`: the SHA-256 of one line per package of its
/// hidden lockfile (`node_modules/.package-lock.json`), `PATH VERSION INTEGRITY`, sorted by path — what
/// was installed, and not where it was fetched from (a mirror's URLs differ) nor how npm laid the file
/// out. None when there is no such file or it is not npm's.
pub(crate) fn package_tree_sha256(dir: &Path) -> Option<String> {
    use sha2::{Digest, Sha256};
    let text = std::fs::read(dir.join("node_modules/.package-lock.json")).ok()?;
    let lock: serde_json::Value = serde_json::from_slice(&text).ok()?;
    let packages = lock.get("packages")?.as_object()?;
    let mut lines: Vec<String> = packages
        .iter()
        .map(|(path, p)| {
            let field = |k: &str| p.get(k).and_then(|v| v.as_str()).unwrap_or("-");
            format!("{path} {} {}\n", field("version"), field("integrity"))
        })
        .collect();
    lines.sort();
    let mut h = Sha256::new();
    for l in &lines {
        h.update(l.as_bytes());
    }
    Some(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_package_tree_s_digest_is_what_was_installed_not_where_from_nor_in_which_order() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        std::fs::create_dir(d.path().join("node_modules")).unwrap_or_else(|e| panic!("{e}"));
        let write = |text: &str| {
            std::fs::write(d.path().join("node_modules/.package-lock.json"), text).unwrap_or_else(|e| panic!("{e}"))
        };
        let digest = || super::package_tree_sha256(d.path());
        assert_eq!(digest(), None, "no lockfile");
        let (a, b) = (
            r#""node_modules/a": { "version": "1.0.0", "resolved": "https://registry.npmjs.org/a/-/a-1.0.0.tgz", "integrity": "sha512-AAA" }"#,
            r#""node_modules/b": { "version": "2.0.0", "resolved": "https://registry.npmjs.org/b/-/b-2.0.0.tgz", "integrity": "sha512-BBB" }"#,
        );
        write(&format!(r#"{{ "lockfileVersion": 3, "packages": {{ {a}, {b} }} }}"#));
        let first = digest().unwrap_or_else(|| panic!("a digest"));
        // another mirror, another order, another lockfile version: the same tree
        let mirrored = format!(r#"{{ "lockfileVersion": 2, "packages": {{ {b}, {a} }} }}"#)
            .replace("registry.npmjs.org", "mirror.example");
        write(&mirrored);
        assert_eq!(digest().as_deref(), Some(first.as_str()));
        // one package's content changed: another tree
        write(&mirrored.replace("sha512-BBB", "sha512-BBC"));
        assert!(digest().is_some_and(|d| d != first));
        write("not json");
        assert_eq!(digest(), None);
    }

    use super::*;
    use crate::versions::Failing;

    #[test]
    fn a_failed_npm_quotes_its_exit_and_stderr_tail_and_names_an_unreachable_registry() {
        let stderr = (1..=30).map(|i| format!("npm verbose {i}\n")).collect::<String>()
            + "npm error code ENOTFOUND\nnpm error request to https://registry/x failed\n";
        let e = failed("list the versions", "exit 1".into(), &stderr);
        let text = e.to_string();
        assert!(
            text.starts_with("npm could not list the versions (exit 1); the npm registry is unreachable"),
            "{text}"
        );
        assert!(text.ends_with("npm error request to https://registry/x failed"), "{text}");
        assert!(!text.contains("npm verbose 17\n"), "only the tail: {text}");
        assert!(text.contains("npm verbose 18\n"), "{text}");
    }

    #[test]
    fn a_missing_npm_says_how_to_get_one() {
        let npm = Npm::new("/nonexistent/npm-for-probelab");
        let e = npm.run(&[], Path::new("/"), VIEW_DEADLINE, "list the versions").failing("no such program");
        assert!(matches!(e, VersionError::NpmMissing { .. }), "{e:?}");
        assert!(e.to_string().contains("install Node.js/npm, or point PROBELAB_NPM at an npm"), "{e}");
    }

    #[test]
    fn no_such_version_is_read_from_npm_s_stderr() {
        let e = failed("install", "exit 1".into(), "npm error code ETARGET\nnpm error notarget No matching version");
        assert!(says_no_such_version(&e));
        assert!(!says_no_such_version(&failed("install", "exit 1".into(), "npm error code E500")));
    }
}
