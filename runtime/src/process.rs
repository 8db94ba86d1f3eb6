//! Child processes that leave nothing behind. Every child the runtime or the lab starts (a Bash command,
//! an MCP or LSP server, a hook, the Claude Code binary) is started in a process group of its own
//! (`process_group(0)`) and ended as a group: [`Group`] kills its group when dropped, so a child whose
//! owner is cancelled (a deadline, a dropped future) takes its descendants with it. What escapes its
//! group (a grandchild that called `setsid`, as Node's `detached` children do) is found by parentage
//! instead: [`kill_tree`] stops the whole tree first (so nothing forks while it is being walked), then
//! kills it.
//!
//! Pure `/proc` reads and signals (no unsafe): parentage comes from `/proc/<pid>/stat`.

use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::Pid;
use std::collections::{BTreeMap, BTreeSet};

/// Rounds of "stop every process of the tree not yet stopped" before the tree is killed: a process
/// that forks between two scans is caught by the next one, and a tree that keeps forking faster than
/// it is walked (a fork bomb) is bounded by the rounds.
pub const KILL_TREE_ROUNDS: usize = 32;

/// A process group, killed (SIGKILL) when the guard is dropped. Made from a child started with
/// `process_group(0)`: its pid is the group's id.
#[derive(Debug)]
pub struct Group {
    pgid: i32,
    /// The leader's start time (`/proc/<pid>/stat` field 22): a pid reused by another process after
    /// the leader was reaped is not taken for it.
    started: Option<u64>,
}

impl Group {
    /// The group led by `pid` (a child started with `process_group(0)`); `None` for no pid (the child
    /// already exited).
    pub fn led_by(pid: Option<u32>) -> Option<Group> {
        let pgid = pid.and_then(|p| i32::try_from(p).ok()).filter(|p| *p > 0)?;
        Some(Group { pgid, started: stat(pgid).map(|s| s.3) })
    }

    /// The group's id.
    pub fn id(&self) -> i32 {
        self.pgid
    }

    /// Kills the group's tree (its leader's descendants, wherever their groups are) and the group. When
    /// the leader is gone, only what is left of its group is killed — and nothing when its pid now leads
    /// another group (reused).
    pub fn kill(&self) {
        match stat(self.pgid) {
            Some(s) if Some(s.3) == self.started && self.started.is_some() => kill_tree(self.pgid),
            Some(_) => {}
            // the leader is gone (or a zombie): its pid is not reused while a member of its group lives,
            // so whatever still has this group id is of it (ESRCH when nothing is left)
            None => {
                let _ = killpg(Pid::from_raw(self.pgid), Signal::SIGKILL);
            }
        }
    }
}

/// (pid, parent pid, process group, start time) of one process, from `/proc/<pid>/stat`; `None` when
/// it is gone or a zombie.
fn stat(pid: i32) -> Option<(i32, i32, i32, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(pid, &stat).filter(|_| !stat.rsplit(')').next().is_some_and(|r| r.trim_start().starts_with('Z')))
}

fn parse_stat(pid: i32, stat: &str) -> Option<(i32, i32, i32, u64)> {
    // `pid (comm) state ppid pgrp …`: comm may hold spaces and parentheses; the last `)` ends it
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // fields 4, 5 and 22 of proc(5), counted from `state` (field 3)
    Some((pid, f.get(1)?.parse().ok()?, f.get(2)?.parse().ok()?, f.get(19)?.parse().ok()?))
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill();
    }
}

/// (pid, parent pid, process group) of every process, from `/proc`.
fn processes() -> Vec<(i32, i32, i32)> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    let mut out = Vec::new();
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else { continue };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else { continue };
        if let Some((pid, ppid, pgrp, _)) = parse_stat(pid, &stat) {
            out.push((pid, ppid, pgrp));
        }
    }
    out
}

/// Every descendant of `root` (not `root` itself), by parentage, plus the members of `root`'s
/// process group and their descendants when `root` leads one.
pub fn descendants(root: i32) -> BTreeSet<i32> {
    let procs = processes();
    let mut children: BTreeMap<i32, Vec<i32>> = BTreeMap::new();
    for &(pid, ppid, _) in &procs {
        children.entry(ppid).or_default().push(pid);
    }
    let mut out = BTreeSet::new();
    let mut todo: Vec<i32> = procs.iter().filter(|p| p.2 == root && p.0 != root).map(|p| p.0).collect();
    todo.extend(children.get(&root).into_iter().flatten());
    while let Some(p) = todo.pop() {
        if p != root && out.insert(p) {
            todo.extend(children.get(&p).into_iter().flatten());
        }
    }
    out
}

/// Kills `root` and its whole tree: every process is stopped first (SIGSTOP), scanning again until a
/// scan finds nothing new (at most [`KILL_TREE_ROUNDS`]), then all are killed (SIGKILL), and so is
/// `root`'s process group. A process that is not there any more is skipped.
pub fn kill_tree(root: i32) {
    if root <= 0 {
        return;
    }
    let mut stopped = BTreeSet::from([root]);
    let _ = kill(Pid::from_raw(root), Signal::SIGSTOP);
    for _ in 0..KILL_TREE_ROUNDS {
        let new: Vec<i32> = descendants(root).into_iter().filter(|p| !stopped.contains(p)).collect();
        if new.is_empty() {
            break;
        }
        for p in new {
            let _ = kill(Pid::from_raw(p), Signal::SIGSTOP);
            stopped.insert(p);
        }
    }
    let _ = killpg(Pid::from_raw(root), Signal::SIGKILL);
    for p in stopped {
        let _ = kill(Pid::from_raw(p), Signal::SIGKILL);
    }
}

/// Kills every descendant of this process (not itself), as [`kill_tree`] does: the lab's last word on
/// an interrupted run. With this process a child subreaper, that is everything it started, orphans
/// included.
pub fn kill_own_descendants() {
    let me = std::process::id() as i32;
    let mut stopped = BTreeSet::new();
    for _ in 0..KILL_TREE_ROUNDS {
        // by parentage only: this process's own group holds its parent and siblings too
        let procs = processes();
        let mut children: BTreeMap<i32, Vec<i32>> = BTreeMap::new();
        for &(pid, ppid, _) in &procs {
            children.entry(ppid).or_default().push(pid);
        }
        let mut tree = BTreeSet::new();
        let mut todo: Vec<i32> = children.get(&me).cloned().unwrap_or_default();
        while let Some(p) = todo.pop() {
            if tree.insert(p) {
                todo.extend(children.get(&p).into_iter().flatten());
            }
        }
        let new: Vec<i32> = tree.into_iter().filter(|p| !stopped.contains(p)).collect();
        if new.is_empty() {
            break;
        }
        for p in new {
            let _ = kill(Pid::from_raw(p), Signal::SIGSTOP);
            stopped.insert(p);
        }
    }
    for p in stopped {
        let _ = kill(Pid::from_raw(p), Signal::SIGKILL);
    }
}

/// The cgroup-v1 `pids` hierarchy where a Bash command's group is made (the fork-bomb guard), when it
/// is writable: `probelab-<owner pid>-<n>`.
pub const PIDS_ROOT: &str = "/sys/fs/cgroup/pids";

/// Removes the `pids` cgroups made by processes `owner_gone` says are gone (a killed run's); their
/// processes are killed first. Returns how many were removed.
pub fn sweep_cgroups(owner_gone: impl Fn(u32) -> bool) -> usize {
    let Ok(dir) = std::fs::read_dir(PIDS_ROOT) else { return 0 };
    let mut removed = 0;
    for e in dir.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(owner) = name.strip_prefix("probelab-").and_then(|r| r.split('-').next()).and_then(|p| p.parse().ok())
        else {
            continue;
        };
        if !owner_gone(owner) {
            continue;
        }
        // best-effort cleanup: a cgroup whose process list cannot be read has none left to kill here, and
        // its removal below fails and leaves it for the next sweep
        let procs = std::fs::read_to_string(e.path().join("cgroup.procs")).unwrap_or_default();
        for pid in procs.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
        if std::fs::remove_dir(e.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt as _;

    #[test]
    fn a_tree_that_left_its_group_is_killed() {
        // the shell's child starts a session of its own (setsid): outside the group, inside the tree
        let mut child = std::process::Command::new("bash")
            .arg("-c")
            .arg("setsid sleep 300 & echo $!; wait")
            .stdout(std::process::Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("{e}"));
        let mut line = String::new();
        let out = child.stdout.take().unwrap_or_else(|| panic!("no stdout"));
        std::io::BufRead::read_line(&mut std::io::BufReader::new(out), &mut line).unwrap_or_else(|e| panic!("{e}"));
        let grandchild: i32 = line.trim().parse().unwrap_or_else(|e| panic!("{line:?}: {e}"));
        let root = child.id() as i32;
        assert!(descendants(root).contains(&grandchild), "{grandchild} not under {root}");
        drop(Group::led_by(Some(child.id())));
        let _ = child.wait();
        // the grandchild was reparented to init or a subreaper and killed: gone or a zombie (SIGKILL
        // is delivered asynchronously: waited for, within a bound)
        let state = || {
            let s = std::fs::read_to_string(format!("/proc/{grandchild}/stat")).unwrap_or_default();
            s.rfind(')').and_then(|i| s[i + 1..].split_whitespace().next().map(str::to_string))
        };
        let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while !(state().is_none() || state().as_deref() == Some("Z")) && std::time::Instant::now() < until {
            std::thread::yield_now();
        }
        let last = state();
        assert!(last.is_none() || last.as_deref() == Some("Z"), "grandchild {grandchild} is {last:?}");
    }
}
