//! Exec probes: each `[[exec]]` command runs in the probe's sandbox (cwd `work/`, HOME `home/`, stdin
//! closed) under `probelab measure`, which records the exit status, wall time, CPU time and peak RSS of
//! exactly that process tree's child (getrusage of its only child). `{rg}` names the subject's engine started
//! with argv0 `rg`: for the built-in subject a symlink named `rg` to the probelab binary.

use crate::probe::sandbox::Sandbox;
use crate::probe::Probe;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Why an exec probe's commands could not be run (the message says which step and where; the cause is
/// its source).
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    /// The sandbox's `bin/` could not be made.
    #[error("cannot create {}", path.display())]
    CreateDir {
        /// The directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The engine could not be linked as `rg`.
    #[error("cannot link {} as rg", engine.display())]
    Link {
        /// The engine.
        engine: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// An exec whose argv is empty.
    #[error("{}: exec {n} has an empty argv", probe.display())]
    EmptyArgv {
        /// The probe file.
        probe: PathBuf,
        /// The exec (1-based).
        n: usize,
    },
    /// `probelab measure` could not be started.
    #[error("cannot start {}", engine.display())]
    Spawn {
        /// The probelab binary.
        engine: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Waiting for exec `n` failed.
    #[error("exec {n}")]
    Wait {
        /// The exec (1-based).
        n: usize,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// `probelab measure` left no report that reads (the command could not be started): what it said
    /// on stderr, if anything.
    #[error("exec {n}: probelab measure left {why}{}", said.as_ref().map(|l| format!(" ({l})")).unwrap_or_default())]
    Measure {
        /// The exec (1-based).
        n: usize,
        /// What it left: no report, or one that does not parse (and why).
        why: String,
        /// Its last `probelab measure: ` line.
        said: Option<String>,
    },
}

/// Default deadline of one command.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(10);

/// What `probelab measure` writes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Measured {
    /// Exit code (None when killed by a signal).
    pub exit: Option<i32>,
    /// Signal that ended it.
    pub signal: Option<i32>,
    /// Wall time.
    pub duration_ms: u64,
    /// Peak resident set size of the child, KiB.
    pub max_rss_kib: u64,
    /// CPU time (user + system) of the child and the processes it waited for, ms: what the command
    /// itself spent, whatever else the host was doing (a report without it reads 0).
    #[serde(default)]
    pub cpu_ms: u64,
}

/// One command's evidence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecRecord {
    /// The argv as the probe wrote it (placeholders kept, so it is stable).
    pub argv: Vec<String>,
    /// Exit, time, memory.
    pub measured: Measured,
    /// Killed at the deadline.
    pub timed_out: bool,
    /// Verbatim stdout.
    pub stdout: String,
    /// Verbatim stderr.
    pub stderr: String,
}

/// Runs every command of an exec probe. `engine` is the probelab binary (it runs `measure`); `rg_engine`
/// is what `{rg}` starts as `rg` (the probelab binary for the built-in subject, the Claude Code binary for
/// that subject).
///
/// `confine`: the probe's confinement (every exec probe runs confined like a subject, unless it opts
/// out with a reason): `measure` and the command start inside it, with the lab's passed variables and
/// the sandbox's HOME as their whole environment.
pub async fn run_exec(
    probe: &Probe,
    sandbox: &Sandbox,
    engine: &Path,
    rg_engine: &Path,
    confine: Option<&probelab_runtime::confine::Confinement>,
) -> Result<Vec<ExecRecord>, ExecError> {
    let bin = sandbox.root.join("bin");
    std::fs::create_dir_all(&bin).map_err(|source| ExecError::CreateDir { path: bin.clone(), source })?;
    let rg = bin.join("rg");
    if !rg.exists() {
        std::os::unix::fs::symlink(rg_engine, &rg)
            .map_err(|source| ExecError::Link { engine: rg_engine.to_path_buf(), source })?;
    }
    let mut out = Vec::new();
    // the probe's deadline bounds the commands together: each is killed at its own deadline or at the
    // probe's, whichever comes first, and none starts after the probe's
    let until = std::time::Instant::now() + Duration::from_secs(probe.deadline_secs);
    for (i, spec) in probe.execs.iter().enumerate() {
        let left = until.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            break;
        }
        let mut argv: Vec<String> = spec.argv.iter().map(|a| sandbox.resolve(a)).collect();
        if argv.first().map(String::as_str) == Some("{rg}") {
            argv[0] = rg.display().to_string();
        }
        if argv.is_empty() {
            return Err(ExecError::EmptyArgv { probe: probe.path.clone(), n: i + 1 });
        }
        let report = sandbox.root.join(format!("measure-{}.json", i + 1));
        let deadline = spec.deadline_ms.map(Duration::from_millis).unwrap_or(DEFAULT_DEADLINE).min(left);
        let vars = probelab_runtime::confine::with_env(
            probelab_runtime::confine::passed_env(),
            [("HOME", sandbox.home.as_os_str())],
        );
        let args = ["measure".into(), "--out".into(), report.clone().into_os_string(), "--".into()]
            .into_iter()
            .chain(argv.iter().map(std::ffi::OsString::from));
        let child = probelab_runtime::confine::command(confine, engine, args, &sandbox.cwd, &vars)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .map_err(|source| ExecError::Spawn { engine: engine.to_path_buf(), source })?;
        // the measured command runs in measure's group: both go when this exec ends, however it ends
        let _group = probelab_runtime::process::Group::led_by(child.id());
        let (timed_out, output) = match tokio::time::timeout(deadline, child.wait_with_output()).await {
            Ok(Ok(o)) => (false, Some(o)),
            Ok(Err(source)) => return Err(ExecError::Wait { n: i + 1, source }),
            Err(_) => (true, None),
        };
        let (stdout, stderr) = output
            .map(|o| (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned()))
            .unwrap_or_default();
        // killed at the deadline, measure wrote nothing (the record says so); otherwise its report is the
        // exit status, and without one the exec did not run (a command that cannot be started): an error
        // of the run, never a record that reads `signal 0`
        let measured = if timed_out { Measured::default() } else { read_measured(&report, &stderr, i + 1)? };
        out.push(ExecRecord { argv: spec.argv.clone(), measured, timed_out, stdout, stderr });
    }
    Ok(out)
}

/// The report `probelab measure` wrote for exec `n` (1-based); `stderr` is what measure and the command
/// printed there (measure says there why it could not run the command).
fn read_measured(report: &Path, stderr: &str, n: usize) -> Result<Measured, ExecError> {
    let why = match std::fs::read(report) {
        Ok(b) => match serde_json::from_slice(&b) {
            Ok(m) => return Ok(m),
            Err(e) => format!("its report {} does not parse: {e}", report.display()),
        },
        Err(e) => format!("no report {}: {e}", report.display()),
    };
    let said = stderr.lines().rfind(|l| l.starts_with("probelab measure: ")).map(str::to_string);
    Err(ExecError::Measure { n, why, said })
}

/// `probelab measure --out FILE -- ARGV…`: runs ARGV with the inherited stdio, then writes
/// [`Measured`] to FILE and exits with the child's status.
pub fn measure(out: &Path, argv: &[std::ffi::OsString]) -> std::process::ExitCode {
    let Some((prog, rest)) = argv.split_first() else {
        eprintln!("probelab measure: no command");
        return std::process::ExitCode::from(2);
    };
    let start = std::time::Instant::now();
    let status = std::process::Command::new(prog).args(rest).status();
    let duration_ms = start.elapsed().as_millis() as u64;
    let status = match status {
        Ok(s) => s,
        Err(e) => {
            eprintln!("probelab measure: cannot run {}: {e}", PathBuf::from(prog).display());
            return std::process::ExitCode::from(127);
        }
    };
    use std::os::unix::process::ExitStatusExt;
    let usage = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN).ok();
    let max_rss_kib = usage.map(|u| u.max_rss().max(0) as u64).unwrap_or(0);
    let ms = |t: nix::sys::time::TimeVal| (t.tv_sec().max(0) as u64) * 1000 + (t.tv_usec().max(0) as u64) / 1000;
    let cpu_ms = usage.map(|u| ms(u.user_time()) + ms(u.system_time())).unwrap_or(0);
    let m = Measured { exit: status.code(), signal: status.signal(), duration_ms, max_rss_kib, cpu_ms };
    if let Err(e) = std::fs::write(out, serde_json::to_vec(&m).unwrap_or_default()) {
        eprintln!("probelab measure: cannot write {}: {e}", out.display());
    }
    let code = status.code().unwrap_or(128 + status.signal().unwrap_or(0));
    std::process::ExitCode::from(code.clamp(0, 255) as u8)
}
