//! Limits on what a confined subject can take of the host (issue 41, item 5): processes at once and
//! memory, per run, through the kernel's cgroups — the process-count (`pids`) and `memory`
//! controllers of a cgroup-v1 hierarchy (`/sys/fs/cgroup/pids`, `/sys/fs/cgroup/memory`) or of the
//! unified v2 one, where the lab may make groups there (root on most hosts, as the Bash tool's
//! fork-bomb guard needs). A run's group is made before its subject starts; the confinement's launcher
//! joins it first thing ([`probelab_runtime::confine::ns`]'s `--cgroup`), so everything the subject
//! starts is counted. A subject that reaches a limit is stopped there by the kernel (a fork refused,
//! the process the kernel's OOM killer chose killed) and the run fails an invariant that says which
//! limit it reached ([`RunLimits::reached`]); the host never feels it. Where no hierarchy can be
//! written, no limit applies, and nothing says otherwise: the Bash tool keeps its own guard.
//!
//! The largest file the subject may write is a limit of its processes ([`MAX_FILE_BYTES`],
//! `RLIMIT_FSIZE`, needing no cgroup): a file of the sandbox that reached it is the verdict
//! ([`files_at_limit`]). The sandbox's disk as a whole ([`MAX_DISK_BYTES`]) is watched while the subject
//! runs ([`watch_disk`]): the space its files take (allocated blocks, each inode once, links not
//! followed) is measured every [`DISK_POLL`] at least; past the limit the subject is stopped and the run
//! fails the same invariant. A watch, not a quota (an unprivileged lab cannot mount a sized
//! filesystem the host sees): the sandbox may pass the limit by what the subject writes within one
//! interval, each file of it bounded by the largest-file limit.
//!
//! Decisions: defaults ([`MAX_PROCESSES`], [`MAX_MEMORY_BYTES`], [`MAX_FILE_BYTES`], [`MAX_DISK_BYTES`]),
//! far above what any probe of the catalogue takes (Claude Code at its busiest: ~40 processes, ~700 MB,
//! a sandbox of ~25 MB), which the lab's environment may change for a run ([`PROCESSES_ENV`],
//! [`MEMORY_ENV`], [`FILE_ENV`], [`DISK_ENV`]). A probe sets its own (`[limits]`, [`LimitsSpec`]),
//! higher or lower, up to the project's caps (`probelab.toml`'s `[limits]`, by default [`DEFAULT_CAPS`]);
//! a probe over a cap is an error at its key when the probe is read.
//! The built-in runtime's Bash commands join the fork-bomb guard's group of their own instead of the
//! run's pids group (a process is in one group per hierarchy), so for them the guard's 256 is the
//! limit; the memory group holds every process of the run.

use std::path::{Path, PathBuf};

/// The most processes a run's subject may have at once.
pub const MAX_PROCESSES: u64 = 2048;

/// The most memory a run's subject may use (RSS and page cache charged to its group): 6 GiB.
pub const MAX_MEMORY_BYTES: u64 = 6 << 30;

/// The largest file a run's subject may write: 1 GiB (`RLIMIT_FSIZE`, set by the confinement's launcher
/// and inherited by everything the subject starts; a write past it is refused and the writer gets
/// `SIGXFSZ`). A disk filled with one file is the usual way; what it does not bound — many files, each
/// under it — is said in the module's docs.
pub const MAX_FILE_BYTES: u64 = 1 << 30;

/// The most disk a run's sandbox may take: 4 GiB ([`watch_disk`]).
pub const MAX_DISK_BYTES: u64 = 4 << 30;

/// How often the sandbox's disk is measured, at least (a measure that takes long spaces the next by ten
/// times its own duration, so a large tree does not keep a core busy).
pub const DISK_POLL: std::time::Duration = std::time::Duration::from_millis(200);

/// The lab's environment may lower or raise the defaults for a whole run of probelab (the limits'
/// own tests; a host with less memory): processes at once.
pub const PROCESSES_ENV: &str = "PROBELAB_LIMIT_PROCESSES";
/// The same for memory, in MiB.
pub const MEMORY_ENV: &str = "PROBELAB_LIMIT_MEMORY_MB";
/// The same for the largest file, in MiB.
pub const FILE_ENV: &str = "PROBELAB_LIMIT_FILE_MB";
/// The same for the sandbox's disk, in MiB.
pub const DISK_ENV: &str = "PROBELAB_LIMIT_DISK_MB";

/// Limits as a probe (`[limits]`: its own, higher or lower than the defaults) or a project
/// (`probelab.toml`'s `[limits]`: the most a probe may set) writes them; absent: the default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsSpec {
    /// Processes at once.
    #[serde(default)]
    pub processes: Option<u64>,
    /// Memory, MiB.
    #[serde(default)]
    pub memory_mb: Option<u64>,
    /// The largest file, MiB.
    #[serde(default)]
    pub file_mb: Option<u64>,
    /// The sandbox's disk, MiB.
    #[serde(default)]
    pub disk_mb: Option<u64>,
}

/// The caps of a project that sets none: what a probe may set at most (four times each default).
pub const DEFAULT_CAPS: LimitsSpec = LimitsSpec {
    processes: Some(4 * MAX_PROCESSES),
    memory_mb: Some(4 * (MAX_MEMORY_BYTES >> 20)),
    file_mb: Some(4 * (MAX_FILE_BYTES >> 20)),
    disk_mb: Some(4 * (MAX_DISK_BYTES >> 20)),
};

impl LimitsSpec {
    /// Each key with its value, in the table's order.
    pub fn entries(&self) -> [(&'static str, Option<u64>); 4] {
        [
            ("processes", self.processes),
            ("memory_mb", self.memory_mb),
            ("file_mb", self.file_mb),
            ("disk_mb", self.disk_mb),
        ]
    }

    /// The first limit that is 0, or over its cap in `caps` (a cap the project left out: [`DEFAULT_CAPS`]'s):
    /// (key, value, cap; the cap 0 for a zero).
    pub fn refused(&self, caps: &LimitsSpec) -> Option<(&'static str, u64, u64)> {
        let caps = caps.entries();
        let defaults = DEFAULT_CAPS.entries();
        self.entries().into_iter().zip(caps).zip(defaults).find_map(|(((key, v), (_, cap)), (_, default))| {
            let v = v?;
            let cap = cap.or(default).unwrap_or(u64::MAX);
            (v == 0 || v > cap).then_some((key, v, if v == 0 { 0 } else { cap }))
        })
    }
}

/// The limits of one run, in bytes where sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Processes at once.
    pub processes: u64,
    /// Memory.
    pub memory_bytes: u64,
    /// The largest file.
    pub file_bytes: u64,
    /// The sandbox's disk.
    pub disk_bytes: u64,
}

impl Limits {
    /// The limits of a run of a probe that sets `spec`: its own where it sets them, else the lab's
    /// environment's ([`PROCESSES_ENV`]…), else the defaults.
    pub fn of(spec: &LimitsSpec) -> Limits {
        let env = |k: &str| std::env::var(k).ok().and_then(|v| v.trim().parse::<u64>().ok()).filter(|n| *n > 0);
        let mb = |own: Option<u64>, k: &str, default: u64| own.or_else(|| env(k)).map_or(default, |m| m << 20);
        Limits {
            processes: spec.processes.or_else(|| env(PROCESSES_ENV)).unwrap_or(MAX_PROCESSES),
            memory_bytes: mb(spec.memory_mb, MEMORY_ENV, MAX_MEMORY_BYTES),
            file_bytes: mb(spec.file_mb, FILE_ENV, MAX_FILE_BYTES),
            disk_bytes: mb(spec.disk_mb, DISK_ENV, MAX_DISK_BYTES),
        }
    }
}

/// The disk the tree under `root` takes: allocated blocks of every entry, each inode once, links not
/// followed; what vanishes while it is walked is not counted.
pub fn disk_used(root: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut seen = std::collections::HashSet::new();
    let mut total = 0u64;
    each_entry(root, |_, meta| {
        if seen.insert((meta.dev(), meta.ino())) {
            total = total.saturating_add(meta.blocks().saturating_mul(512));
        }
    });
    total
}

/// Calls `f` with every entry under `root` and its own metadata (links not followed, directories
/// walked); an entry that vanishes or cannot be read is left out.
fn each_entry(root: &Path, mut f: impl FnMut(&Path, &std::fs::Metadata)) {
    let mut todo = vec![root.to_path_buf()];
    while let Some(dir) = todo.pop() {
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = e.path();
            let Ok(meta) = std::fs::symlink_metadata(&path) else { continue };
            f(&path, &meta);
            if meta.is_dir() {
                todo.push(path);
            }
        }
    }
}

/// Watches the disk the sandbox at `root` takes and resolves, with what it took, once that passes
/// `limit` (never, while it stays within); each measure runs off the async threads.
pub async fn watch_disk(root: PathBuf, limit: u64) -> u64 {
    loop {
        let started = std::time::Instant::now();
        let dir = root.clone();
        let used = tokio::task::spawn_blocking(move || disk_used(&dir)).await.unwrap_or(0);
        if used > limit {
            return used;
        }
        tokio::time::sleep(DISK_POLL.max(started.elapsed() * 10)).await;
    }
}

/// The verdict of a sandbox that passed its disk limit: what it took when the subject was stopped.
pub fn disk_reached(limit: u64, used: u64) -> String {
    format!(
        "the subject reached its disk limit of {} MiB: its sandbox took {} MiB, and the subject was stopped",
        limit >> 20,
        used.div_ceil(1 << 20)
    )
}

/// The files under `sandbox` that reached the largest-file limit `limit` (a write past it was
/// refused), in words; each path relative to the sandbox. Links are not followed.
pub fn files_at_limit(sandbox: &Path, limit: u64) -> Vec<String> {
    let mut out = Vec::new();
    each_entry(sandbox, |path, meta| {
        if meta.is_file() && meta.len() >= limit {
            out.push(path.strip_prefix(sandbox).unwrap_or(path).display().to_string());
        }
    });
    out.sort();
    if out.is_empty() {
        return out;
    }
    vec![format!(
        "the subject reached its largest-file limit of {} MiB (writes past it refused): {}",
        limit >> 20,
        out.join(", ")
    )]
}

/// A run's cgroups: removed (once empty) when dropped.
#[derive(Debug, Default)]
pub struct RunLimits {
    /// The pids group's directory, when one could be made.
    pids: Option<PathBuf>,
    /// The memory group's directory.
    memory: Option<PathBuf>,
    /// cgroup v2: one directory holds both.
    unified: bool,
    /// The limits set: (processes, memory bytes).
    set: (u64, u64),
}

/// Where groups are made: (pids parent, memory parent, unified).
fn parents() -> Option<(PathBuf, PathBuf, bool)> {
    let v1 = (Path::new("/sys/fs/cgroup/pids"), Path::new("/sys/fs/cgroup/memory"));
    if v1.0.join("cgroup.procs").is_file() || v1.1.join("cgroup.procs").is_file() {
        return Some((v1.0.to_path_buf(), v1.1.to_path_buf(), false));
    }
    let v2 = Path::new("/sys/fs/cgroup");
    let controllers = std::fs::read_to_string(v2.join("cgroup.subtree_control")).unwrap_or_default();
    (controllers.contains("pids") || controllers.contains("memory")).then(|| (v2.to_path_buf(), v2.to_path_buf(), true))
}

/// Removes the groups of runs whose probelab is gone (`probelab-run-PID-N` where no process PID is
/// alive: a lab killed with SIGKILL never dropped its [`RunLimits`]), once empty; the first run of a
/// later probelab does it, so a killed run leaves no group for long. A group that still holds a
/// process is left alone.
pub fn sweep(parent: &Path) -> Vec<String> {
    let mut removed = Vec::new();
    for e in std::fs::read_dir(parent).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name.strip_prefix("probelab-run-").and_then(|r| r.split('-').next()) else { continue };
        if pid.parse::<u32>().is_err() || Path::new("/proc").join(pid).exists() {
            continue;
        }
        if std::fs::remove_dir(e.path()).is_ok() {
            removed.push(name);
        }
    }
    removed
}

impl RunLimits {
    /// Makes the run's groups with `limits`' processes and memory; a hierarchy that cannot be written is
    /// left out.
    pub fn create(limits: &Limits) -> RunLimits {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let Some((pids_parent, memory_parent, unified)) = parents() else { return RunLimits::default() };
        static SWEPT: std::sync::Once = std::sync::Once::new();
        SWEPT.call_once(|| {
            sweep(&pids_parent);
            sweep(&memory_parent);
        });
        let (processes, memory) = (limits.processes, limits.memory_bytes);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let name = format!("probelab-run-{}-{n}", std::process::id());
        let make = |parent: &Path, file: &str, value: u64| {
            let dir = parent.join(&name);
            if !dir.is_dir() && std::fs::create_dir(&dir).is_err() {
                return None;
            }
            if std::fs::write(dir.join(file), value.to_string()).is_err() {
                let _ = std::fs::remove_dir(&dir);
                return None;
            }
            Some(dir)
        };
        if unified {
            let dir = make(&pids_parent, "pids.max", processes);
            let with_memory =
                dir.as_ref().is_some_and(|d| std::fs::write(d.join("memory.max"), memory.to_string()).is_ok());
            return RunLimits {
                pids: dir.clone(),
                memory: dir.filter(|_| with_memory),
                unified,
                set: (processes, memory),
            };
        }
        RunLimits {
            pids: make(&pids_parent, "pids.max", processes),
            memory: make(&memory_parent, "memory.limit_in_bytes", memory),
            unified,
            set: (processes, memory),
        }
    }

    /// The `cgroup.procs` files the subject's launcher joins: all of them (`whole`: the launcher holds
    /// the subject), or the memory group's alone (a process joining a session, which may sit in the
    /// Bash tool's guard group of the pids hierarchy).
    pub fn procs_files(&self, whole: bool) -> Vec<PathBuf> {
        let groups = match (self.unified, whole) {
            // v2: one group for both controllers; a session's processes stay where they are
            (true, true) => vec![&self.pids],
            (true, false) => vec![],
            (false, true) => vec![&self.pids, &self.memory],
            (false, false) => vec![&self.memory],
        };
        groups.into_iter().flatten().map(|d| d.join("cgroup.procs")).collect()
    }

    /// The limits the subject reached, in words (none: it stayed within them).
    pub fn reached(&self) -> Vec<String> {
        let count = |dir: &Option<PathBuf>, file: &str, key: &str| -> u64 {
            let Some(d) = dir else { return 0 };
            let text = std::fs::read_to_string(d.join(file)).unwrap_or_default();
            text.lines().filter_map(|l| l.strip_prefix(key)?.trim().parse::<u64>().ok()).next().unwrap_or(0)
        };
        let mut out = Vec::new();
        let forks = count(&self.pids, "pids.events", "max ");
        if forks > 0 {
            out.push(format!(
                "the subject reached its limit of {} processes at once ({forks} forks refused)",
                self.set.0
            ));
        }
        let oom = if self.unified {
            count(&self.memory, "memory.events", "oom_kill ")
        } else {
            count(&self.memory, "memory.oom_control", "oom_kill ")
        };
        if oom > 0 {
            out.push(format!(
                "the subject reached its memory limit of {} MiB ({oom} processes killed by the kernel)",
                self.set.1 >> 20
            ));
        }
        out
    }
}

impl Drop for RunLimits {
    fn drop(&mut self) {
        for dir in [self.pids.take(), self.memory.take()].into_iter().flatten() {
            // the last processes of the run may still be going (a holder killed a moment ago): a group
            // is removed once empty; a few tries, a millisecond apart, bound it
            for _ in 0..200 {
                if std::fs::remove_dir(&dir).is_ok() || !dir.exists() {
                    break;
                }
                let _ = std::fs::write(dir.join("cgroup.kill"), "1");
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_groups_of_a_probelab_that_is_gone_are_swept_and_no_other() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let mine = format!("probelab-run-{}-1", std::process::id());
        // a pid above the kernel's pid_max (4194304 at most) is nobody's
        for name in ["probelab-run-4999999-1", "probelab-run-4999999-2", mine.as_str(), "probelab-run-x-1", "other"] {
            std::fs::create_dir(d.path().join(name)).unwrap_or_else(|e| panic!("{e}"));
        }
        // a group that still holds something stays (the kernel refuses to remove it; here: a file)
        std::fs::write(d.path().join("probelab-run-4999999-2").join("x"), "").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(super::sweep(d.path()), vec!["probelab-run-4999999-1".to_string()]);
        for name in ["probelab-run-4999999-2", mine.as_str(), "probelab-run-x-1", "other"] {
            assert!(d.path().join(name).is_dir(), "{name} kept");
        }
    }
}
