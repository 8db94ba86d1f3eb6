//! The Bash tool's edges that probes alone cannot show (issue 6's leftovers): the literal fork bomb run
//! for real against the pids-cgroup guard, with what is left of it counted afterwards.
//!
//! The fork bomb is never run unguarded: the test first checks that the guard is there (a writable
//! cgroup-v1 `pids` hierarchy, root) and that a command really lands in a cgroup of its own with
//! `pids.max` = [`PIDS_MAX`]. Where the hierarchy is missing or not writable the test says so loudly on
//! stderr and does not run the bomb; where it is expected (root, hierarchy writable) and a command is not
//! confined by it, the test fails.

use crate::support::Sandbox;
use probelab_runtime::limits::{pids_limit_note, pids_stop_note, NO_OUTPUT, PIDS_MAX};
use probelab_runtime::{builtin, ToolContext, ToolError, ToolOutput};
use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};

const PIDS_ROOT: &str = "/sys/fs/cgroup/pids";
/// The literal fork bomb.
const FORK_BOMB: &str = ":(){ :|:& };:";

fn bash_tool() -> std::sync::Arc<dyn probelab_runtime::Tool> {
    builtin::registry().get("Bash").unwrap_or_else(|| panic!("no Bash tool"))
}

async fn bash(sb: &Sandbox, c: &ToolContext, command: &str, timeout_ms: u64) -> (Result<String, String>, Duration) {
    let t = Instant::now();
    let input = json!({"command": command, "description": "edge", "timeout": timeout_ms});
    // an outer bound against a hang: the tool's own deadline must come first
    let r = tokio::time::timeout(Duration::from_millis(timeout_ms + 20_000), sb.call(bash_tool().as_ref(), input, c))
        .await
        .unwrap_or_else(|_| panic!("the Bash tool hung 20 s past its deadline on {command:?}"));
    let r = match r {
        Ok(ToolOutput::Text(t)) | Ok(ToolOutput::Data { text: t, .. }) => Ok(t),
        Ok(other) => Ok(format!("{other:?}")),
        Err(ToolError::Runtime(t)) | Err(ToolError::Validation(t)) => Err(t),
    };
    (r, t.elapsed())
}

/// Root, and the `pids` hierarchy takes a new group: the runtime's guard is expected here.
fn guard_expected() -> Result<(), String> {
    if !nix::unistd::geteuid().is_root() {
        return Err("not root".into());
    }
    let probe = Path::new(PIDS_ROOT).join(format!("probelab-edges-check-{}", std::process::id()));
    std::fs::create_dir(&probe).map_err(|e| format!("cannot make a group under {PIDS_ROOT}: {e}"))?;
    let _ = std::fs::remove_dir(&probe);
    Ok(())
}

/// Processes whose process group is `pgid`, or that sit in the pids cgroup `cg`: (alive, zombies).
fn leftovers(pgid: i32, cg: &str) -> (Vec<i32>, usize) {
    let mut alive = Vec::new();
    let mut zombies = 0;
    let Ok(dir) = std::fs::read_dir("/proc") else { return (alive, zombies) };
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else { continue };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else { continue };
        // pid (comm) state ppid pgrp …: comm may hold spaces, so split after the last ')'
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else { continue };
        let f: Vec<&str> = rest.split_whitespace().collect();
        let (state, pgrp) = (f.first().copied().unwrap_or(""), f.get(2).and_then(|p| p.parse::<i32>().ok()));
        let in_cg = std::fs::read_to_string(e.path().join("cgroup"))
            .map(|t| t.lines().any(|l| l.split(':').nth(1) == Some("pids") && l.ends_with(&format!(":{cg}"))))
            .unwrap_or(false);
        if pgrp == Some(pgid) || in_cg {
            if state == "Z" {
                zombies += 1;
            } else {
                alive.push(pid);
            }
        }
    }
    (alive, zombies)
}

/// Waits (at most 2 s: SIGKILL is delivered at once, a dying process may need a moment) until nothing
/// of the command is alive; then the group's cgroup must be gone.
async fn assert_nothing_left(work: &Path, what: &str) {
    let pgid: i32 = std::fs::read_to_string(work.join(format!("{what}.pid")))
        .unwrap_or_else(|e| panic!("{what}.pid: {e}"))
        .trim()
        .parse()
        .unwrap_or_else(|e| panic!("{what}.pid: {e}"));
    let cg = std::fs::read_to_string(work.join(format!("{what}.cgroup"))).unwrap_or_else(|e| panic!("{e}"));
    let cg = cg.trim().to_string();
    assert!(cg.starts_with("/probelab-"), "{what}: the command ran in pids cgroup {cg:?}, not one of its own");
    let t = Instant::now();
    let (alive, zombies) = loop {
        let (alive, zombies) = leftovers(pgid, &cg);
        if alive.is_empty() || t.elapsed() > Duration::from_secs(2) {
            break (alive, zombies);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    eprintln!("bash_edges: {what}: {} processes alive, {zombies} zombies awaiting their reaper", alive.len());
    assert!(alive.is_empty(), "{what}: processes left alive in group {pgid} / cgroup {cg}: {alive:?}");
    assert!(
        !Path::new(PIDS_ROOT).join(cg.trim_start_matches('/')).exists(),
        "{what}: the command's cgroup {cg} was not removed"
    );
}

/// The bomb's own output: nothing, or bash's fork-retry lines (and the limit note) when it reached the
/// limit before its shell was gone.
fn only_bomb_noise(text: &str) -> bool {
    let note = pids_limit_note();
    text.lines().all(|l| l == NO_OUTPUT || l == note || l.ends_with("fork: retry: Resource temporarily unavailable"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_literal_fork_bomb_is_held_by_the_pids_cgroup_and_leaves_nothing() {
    if let Err(why) = guard_expected() {
        eprintln!(
            "\n!!! bash_edges: THE FORK BOMB WAS NOT RUN: the pids-cgroup guard is not available here ({why}; \
             it needs root and a writable cgroup-v1 hierarchy at {PIDS_ROOT}). Without it a fork bomb would \
             take the machine down; this test checks nothing on this machine. !!!\n"
        );
        return;
    }
    let sb = Sandbox::new();
    let c = sb.ctx();
    let where_am_i = "sed -n 's/^[0-9]*:pids://p' /proc/$$/cgroup";

    // the guard is expected here: a command must land in a cgroup of its own, limited to PIDS_MAX
    let (r, _) = bash(&sb, &c, &format!("cg=$({where_am_i}); echo \"$cg\"; cat {PIDS_ROOT}$cg/pids.max"), 10_000).await;
    let out = r.unwrap_or_else(|e| panic!("the guard check failed: {e}"));
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines.len() == 2 && lines[0].starts_with("/probelab-") && lines[1] == PIDS_MAX.to_string(),
        "root with a writable {PIDS_ROOT}, but a command is not confined by a pids cgroup of its own \
         (pids.max {PIDS_MAX}); the fork bomb is not run: {out:?}"
    );

    // 1. the literal bomb: its shell returns at once, and everything it forked goes with the shell
    let (r, took) = bash(&sb, &c, &format!("echo $$ > bomb.pid; {where_am_i} > bomb.cgroup\n{FORK_BOMB}"), 5_000).await;
    eprintln!("bash_edges: literal fork bomb ended after {took:?}: {r:?}");
    // its shell exits 0 at once; on a loaded machine the bomb may reach the limit first, and then the
    // guard stops it at its first refused fork (exit 143, the stop note last): held either way
    let text = match r {
        Ok(text) => text,
        Err(e) => {
            let body =
                e.strip_prefix("Exit code 143\n").and_then(|b| b.trim_end().strip_suffix(pids_stop_note().as_str()));
            let body =
                body.unwrap_or_else(|| panic!("the literal fork bomb's shell exits 0 or the guard stops it, got: {e}"));
            body.trim_end().to_string()
        }
    };
    assert!(only_bomb_noise(&text), "unexpected result of the literal fork bomb: {text}");
    assert!(took < Duration::from_secs(5), "the literal fork bomb ran into its deadline: {took:?}");
    assert_nothing_left(&c.cwd, "bomb").await;

    // 2. the bomb with its shell kept alive: stopped by the guard at its first refused fork, long before
    // its deadline (it would otherwise fork against the limit in bash's retries until then)
    let (r, took) =
        bash(&sb, &c, &format!("echo $$ > held.pid; {where_am_i} > held.cgroup\n{FORK_BOMB}; sleep 30"), 60_000).await;
    let text = r.err().unwrap_or_else(|| panic!("a command the guard stopped is an error result"));
    eprintln!("bash_edges: held fork bomb ended after {took:?} with {} lines", text.lines().count());
    let head = "Exit code 143";
    let tail = pids_stop_note();
    assert!(text.starts_with(head) && text.ends_with(&tail), "unexpected result: {text}");
    assert!(!text.contains("timed out"), "the guard, not the deadline, ended it: {text}");
    let body = text[head.len()..text.len() - tail.len()].trim_matches('\n');
    assert!(only_bomb_noise(body), "unexpected output of the held fork bomb: {body}");
    assert!(took < Duration::from_secs(30), "the held fork bomb took {took:?} to end (the guard stops it at once)");
    assert_nothing_left(&c.cwd, "held").await;

    // the machine is fine: a command still forks and runs
    let (r, _) = bash(&sb, &c, "sh -c 'echo ok'", 10_000).await;
    assert_eq!(r, Ok("ok".to_string()));
}

/// PIPE-5 (issue 27, item 5): a persisted Bash result's file holds the output as the command wrote it,
/// its trailing newlines kept, as Claude Code 2.1.235 writes it (measured: `seq 1 10000; echo; echo`
/// leaves a 48,896-byte file ending `10000\n\n\n`; the runtime wrote the trimmed text, 48,893 bytes);
/// the model's text is still trimmed.
#[tokio::test]
async fn a_persisted_result_is_written_as_the_command_wrote_it() {
    let sb = Sandbox::new();
    let rt = sb.start(sb.config()).await;
    let call = probelab_runtime::pipeline::ToolCall {
        id: "toolu_persist_1".into(),
        name: "Bash".into(),
        input: json!({"command": "seq 1 10000; echo; echo", "description": "over"}),
    };
    let result = rt.run_call(&call).await;
    let text = result.content.as_str().unwrap_or_default().to_string();
    assert!(text.starts_with("<persisted-output>\nOutput too large (47.7KB)."), "{text}");
    let path = text.lines().find_map(|l| l.split_once("Full output saved to: ")).map(|(_, p)| p.to_string());
    let path = path.unwrap_or_else(|| panic!("no path in {text}"));
    let file = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    assert_eq!(file.len(), 48_896);
    assert!(file.ends_with(b"9999\n10000\n\n\n"));
    probelab_runtime::builtin::shutdown(&rt.ctx).await;
}
