//! A run leaves nothing behind, however it ends.
//!
//! `probelab run` runs as two processes: the one the user started, the *supervisor*, starts itself
//! again as the *worker* (the same arguments, [`ENV_SUPERVISOR`] naming the supervisor) and only
//! forwards signals to it and passes its exit code on. The worker does the run:
//! - it is a child subreaper: whatever its children start stays its descendant, orphans included;
//! - SIGINT, SIGTERM or SIGHUP stop the run: every descendant is stopped then killed
//!   ([`probelab_runtime::process::kill_own_descendants`]), every live sandbox removed
//!   ([`register`]), the run's cgroups removed, and the worker exits 128 + the signal (130, 143);
//! - its parent-death signal is SIGTERM: a SIGKILLed supervisor (nothing can catch SIGKILL) still gets
//!   its worker to clean up as above.
//!
//! What a SIGKILL of the worker itself leaves (or a machine that went down) is swept at the next start
//! ([`sweep_stale`]): a sandbox's root holds its owner's pid ([`OWNER_FILE`]); a sandbox whose owner is
//! gone is removed, with the processes still working in it, and so are the dead owners' cgroups.
//!
//! Handlers catch the signals (tokio's, on a thread of their own: [`on_stop_signals`]), not the signal
//! mask: a mask blocked for `sigwait` is inherited by every child (the standard library's spawn does
//! not reset it), so a probe's `timeout 1 cat fifo` could never stop its `cat` (SIGTERM blocked) and
//! the run hung at its end on the pipe the `cat` held (`harness/tests/it/cli.rs` checks a Bash
//! child's mask). A handler is reset to the default by `exec`: children start as from a shell.

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Mutex;

/// Env var of the worker: the supervisor's pid.
pub const ENV_SUPERVISOR: &str = "PROBELAB_SUPERVISOR_PID";
/// The file in a sandbox's root that names the process owning it (its pid, decimal).
pub const OWNER_FILE: &str = ".probelab-owner";
/// Prefix of a sandbox's directory name in the temp dir.
pub const SANDBOX_PREFIX: &str = "probelab-";
/// Rounds of "kill what runs, remove what is left" when a run is interrupted: a probe task may start a
/// process or make a sandbox between two rounds.
pub const INTERRUPT_ROUNDS: usize = 3;

/// The signals that stop a run.
const STOP_SIGNALS: [Signal; 3] = [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP];

struct Live {
    stopping: bool,
    roots: BTreeSet<PathBuf>,
}

static LIVE: Mutex<Live> = Mutex::new(Live { stopping: false, roots: BTreeSet::new() });

/// Why a sandbox could not be registered ([`register`]).
#[derive(Debug, thiserror::Error)]
pub enum RegisterError {
    /// A thread panicked holding the registry.
    #[error("the sandbox registry is poisoned")]
    Poisoned,
    /// The run is being stopped: no sandbox is made any more.
    #[error("the run is being stopped")]
    Stopping,
    /// The owner file could not be written into the sandbox.
    #[error("cannot write {}", path.display())]
    Owner {
        /// The owner file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// Makes a sandbox directory through `make` (which returns its root) and registers it for removal if
/// the run is interrupted; refused once the run is stopping. The owner file is written into it.
pub fn register<T, E: From<RegisterError>>(make: impl FnOnce() -> Result<(T, PathBuf), E>) -> Result<T, E> {
    let mut live = LIVE.lock().map_err(|_| RegisterError::Poisoned)?;
    if live.stopping {
        return Err(RegisterError::Stopping.into());
    }
    let (made, root) = make()?;
    let owner = root.join(OWNER_FILE);
    std::fs::write(&owner, std::process::id().to_string())
        .map_err(|source| RegisterError::Owner { path: owner, source })?;
    live.roots.insert(root);
    Ok(made)
}

/// Forgets a sandbox (removed, or kept on request: its owner file goes too, so no sweep takes it).
pub fn unregister(root: &Path, kept: bool) {
    if kept {
        let _ = std::fs::remove_file(root.join(OWNER_FILE));
    }
    if let Ok(mut live) = LIVE.lock() {
        live.roots.remove(root);
    }
}

/// What [`supervise`] made of this process.
pub enum Role {
    /// The run happened in the worker; this is its exit code.
    Supervised(ExitCode),
    /// This process is the worker: go on with the run.
    Worker,
}

/// The first step of a command that runs probes, before any thread is started: see the module doc.
/// When the worker cannot be started, the run goes on in this process (still cleaned up on SIGINT /
/// SIGTERM; a SIGKILL's leftovers are swept at the next start).
pub fn supervise() -> Role {
    let parent = nix::unistd::getppid().as_raw();
    let supervisor = std::env::var(ENV_SUPERVISOR).ok().and_then(|v| v.parse::<i32>().ok());
    if supervisor.is_some_and(|s| s == parent) {
        worker(true);
        return Role::Worker;
    }
    match run_worker() {
        Ok(code) => Role::Supervised(code),
        Err(e) => {
            eprintln!("probelab: cannot start the run's worker process ({e}); running in this one");
            worker(false);
            Role::Worker
        }
    }
}

fn run_worker() -> std::io::Result<ExitCode> {
    let exe = std::env::current_exe()?;
    let mut child = std::process::Command::new(exe)
        .args(std::env::args_os().skip(1))
        .env(ENV_SUPERVISOR, std::process::id().to_string())
        .spawn()?;
    let pid = Pid::from_raw(child.id() as i32);
    on_stop_signals(move |sig| {
        let _ = kill(pid, sig);
    })?;
    let status = child.wait()?;
    let code =
        status.code().unwrap_or_else(|| 128 + std::os::unix::process::ExitStatusExt::signal(&status).unwrap_or(9));
    Ok(ExitCode::from(code.clamp(0, 255) as u8))
}

/// Calls `on` with each stop signal that arrives, on a thread of its own. The handlers are in place
/// when this returns (a signal from then on is caught, never the default's death).
fn on_stop_signals(mut on: impl FnMut(Signal) + Send + 'static) -> std::io::Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    let rt = tokio::runtime::Builder::new_current_thread().enable_io().build()?;
    let (mut int, mut term, mut hup) = {
        let _in = rt.enter();
        let of = |s: Signal| signal(SignalKind::from_raw(s as i32));
        (of(STOP_SIGNALS[0])?, of(STOP_SIGNALS[1])?, of(STOP_SIGNALS[2])?)
    };
    std::thread::Builder::new().name("probelab-signals".into()).spawn(move || {
        rt.block_on(async move {
            loop {
                let sig = tokio::select! {
                    _ = int.recv() => STOP_SIGNALS[0],
                    _ = term.recv() => STOP_SIGNALS[1],
                    _ = hup.recv() => STOP_SIGNALS[2],
                };
                on(sig);
            }
        })
    })?;
    Ok(())
}

/// Sets up this process as the run's worker.
fn worker(supervised: bool) {
    if supervised {
        let _ = nix::sys::prctl::set_pdeathsig(Signal::SIGTERM);
        // the supervisor may have gone before the death signal was armed
        if std::env::var(ENV_SUPERVISOR).ok() != Some(nix::unistd::getppid().as_raw().to_string()) {
            std::process::exit(128 + Signal::SIGTERM as i32);
        }
        // not for the subjects' environment (a varying pid in a probe's `env` output); no other thread
        // runs yet
        std::env::remove_var(ENV_SUPERVISOR);
    }
    let _ = nix::sys::prctl::set_child_subreaper(true);
    if let Err(e) = on_stop_signals(|sig| interrupted(sig)) {
        eprintln!("probelab: cannot catch SIGINT / SIGTERM / SIGHUP ({e}): an interrupted run may leave processes and sandboxes (swept at the next start)");
    }
    let swept = sweep_stale(&std::env::temp_dir());
    if swept > 0 {
        eprintln!("probelab: removed {swept} sandbox(es) left by runs that were killed");
    }
}

/// Set first thing when a stop signal arrived: the run's own end (a subject killed by the stop ends its
/// probe, and the run may finish before the stop does) must not exit before the stop's exit code.
static STOPPING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether a stop signal arrived: the stop exits the process with 128 + the signal, not the run.
pub fn stopping() -> bool {
    STOPPING.load(std::sync::atomic::Ordering::SeqCst)
}

/// Stops the run: see the module doc. Never returns.
fn interrupted(sig: Signal) -> ! {
    STOPPING.store(true, std::sync::atomic::Ordering::SeqCst);
    eprintln!("probelab: {sig}: stopping the run (its processes killed, its sandboxes removed)");
    let me = std::process::id();
    for _ in 0..INTERRUPT_ROUNDS {
        probelab_runtime::process::kill_own_descendants();
        let roots: Vec<PathBuf> = match LIVE.lock() {
            Ok(mut live) => {
                live.stopping = true;
                std::mem::take(&mut live.roots).into_iter().collect()
            }
            Err(_) => Vec::new(),
        };
        for r in &roots {
            remove_all(r);
        }
        probelab_runtime::process::sweep_cgroups(|owner| owner == me);
        if roots.is_empty() {
            break;
        }
    }
    std::process::exit(128 + sig as i32)
}

/// Gives the owner every permission on each directory under `root` (links not followed), so that a
/// sandbox a probe's `chmod` fault (or its subject) closed — a directory at 0000 or 0555 — can be listed
/// and emptied by a user who is not root (root's removal never needed it).
pub fn make_removable(root: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(m) = std::fs::symlink_metadata(&d) else { continue };
        if !m.is_dir() {
            continue;
        }
        let mode = m.permissions().mode();
        if mode & 0o700 != 0o700 {
            let _ = std::fs::set_permissions(&d, std::fs::Permissions::from_mode(mode | 0o700));
        }
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(e.path());
            }
        }
    }
}

fn remove_all(root: &Path) {
    make_removable(root);
    // a process killed a moment ago may still be writing: a few tries
    for _ in 0..INTERRUPT_ROUNDS {
        if std::fs::remove_dir_all(root).is_ok() || !root.exists() {
            return;
        }
    }
}

/// Whether process `pid` is gone (no `/proc` entry, or a zombie).
pub fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat.rfind(')').and_then(|i| stat[i + 1..].split_whitespace().next()) == Some("Z"),
        Err(_) => true,
    }
}

/// Removes the sandboxes under `tmp` whose owner is gone (killing the processes whose cwd is inside
/// them first), and the gone owners' cgroups. Returns how many sandboxes were removed.
pub fn sweep_stale(tmp: &Path) -> usize {
    let Ok(dir) = std::fs::read_dir(tmp) else { return 0 };
    let mut stale = Vec::new();
    for e in dir.flatten() {
        if !e.file_name().to_string_lossy().starts_with(SANDBOX_PREFIX) {
            continue;
        }
        let owner = std::fs::read_to_string(e.path().join(OWNER_FILE)).ok().and_then(|t| t.trim().parse::<u32>().ok());
        if owner.is_some_and(gone) {
            stale.push(e.path().canonicalize().unwrap_or_else(|_| e.path()));
        }
    }
    if !stale.is_empty() {
        kill_working_in(&stale, None);
        for s in &stale {
            remove_all(s);
        }
    }
    probelab_runtime::process::sweep_cgroups(gone);
    stale.len()
}

/// The pid the kernel gave last in this pid namespace (`/proc/loadavg`'s last field), if readable.
pub(crate) fn last_pid() -> Option<i32> {
    std::fs::read_to_string("/proc/loadavg").ok()?.split_whitespace().last()?.parse().ok()
}

/// Kills every process whose cwd or executable lies under one of `dirs` (and its tree), this process
/// excepted (a lab started from inside a kept sandbox). With `since` (the [`last_pid`] taken before
/// anything could have entered `dirs`), only processes started after it are looked at — pids are given
/// in increasing order until they wrap at `pid_max`; when the last pid is below `since` they wrapped,
/// and every process is looked at. (A run that forked more than `pid_max` processes could wrap past
/// `since` unseen; a Bash command's processes are also killed through its pids cgroup and group.)
pub(crate) fn kill_working_in(dirs: &[PathBuf], since: Option<i32>) {
    let Ok(procs) = std::fs::read_dir("/proc") else { return };
    let me = std::process::id() as i32;
    let window = since.zip(last_pid()).filter(|(from, to)| to >= from);
    for e in procs.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()).filter(|p| *p != me) else {
            continue;
        };
        if window.is_some_and(|(from, to)| pid <= from || pid > to) {
            continue;
        }
        let inside = ["cwd", "exe"]
            .iter()
            .any(|l| std::fs::read_link(e.path().join(l)).is_ok_and(|p| dirs.iter().any(|d| p.starts_with(d))));
        if inside {
            probelab_runtime::process::kill_tree(pid);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sandbox_whose_owner_is_gone_is_swept_and_a_live_ones_is_kept() {
        let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let dead = tmp.path().join("probelab-dead");
        let live = tmp.path().join("probelab-live");
        let foreign = tmp.path().join("probelab-no-owner");
        for d in [&dead, &live, &foreign] {
            std::fs::create_dir_all(d.join("work")).unwrap_or_else(|e| panic!("{e}"));
        }
        // a pid that cannot be running: above the kernel's pid_max limit
        std::fs::write(dead.join(OWNER_FILE), "4194305").unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(live.join(OWNER_FILE), std::process::id().to_string()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(sweep_stale(tmp.path()), 1);
        assert!(!dead.exists());
        assert!(live.exists() && foreign.exists());
    }

    #[test]
    fn what_works_in_a_dir_is_killed_and_the_window_looks_only_at_newer_processes() {
        let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let dir = tmp.path().canonicalize().unwrap_or_else(|e| panic!("{e}"));
        let spawn = || {
            std::process::Command::new("sleep").arg("30").current_dir(&dir).spawn().unwrap_or_else(|e| panic!("{e}"))
        };
        let mut older = spawn();
        let since = last_pid();
        assert!(since.is_some_and(|p| p >= older.id() as i32), "/proc/loadavg's last pid {since:?}");
        let mut newer = spawn();
        kill_working_in(std::slice::from_ref(&dir), since);
        // the newer one is killed (SIGKILL: its wait returns at once), the older one is out of the window
        let status = newer.wait().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status), Some(9));
        assert!(older.try_wait().unwrap_or_else(|e| panic!("{e}")).is_none(), "a process before the window was killed");
        // without a window every process is looked at
        kill_working_in(std::slice::from_ref(&dir), None);
        let status = older.wait().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status), Some(9));
    }
}
