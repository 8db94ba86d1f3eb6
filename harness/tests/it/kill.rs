//! A run leaves nothing behind however it is stopped (issue 16, `harness::cleanup`): `probelab run` on a
//! probe whose Bash command runs for minutes gets SIGINT, SIGTERM or SIGKILL once the command is running
//! (it writes a file first: the test waits for it); then no process carrying the run's marker is left
//! (its command line: the probe's path, the command), and no sandbox in the run's temp dir. On the
//! built-in subject, and on Claude Code 2.1.235 when it is installed.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long the long command would run (it is killed long before).
const COMMAND_SECS: u32 = 600;
/// Bound on the wait for the command to start (a debug build on a shared machine; Claude Code starts
/// slower than the built-in subject).
const START_BOUND: Duration = Duration::from_secs(90);
/// Bound on the wait for the run to exit after the signal, and for its leftovers to go.
const EXIT_BOUND: Duration = Duration::from_secs(15);
/// Interval between two looks at what is polled for (a file, the process table).
const POLL: Duration = Duration::from_millis(20);
/// The Claude Code version of the lab's goldens.
const CLAUDE_VERSION: &str = "2.1.235";

struct Case {
    dir: tempfile::TempDir,
    marker: String,
    tmp: PathBuf,
    probe: PathBuf,
}

fn case(subject: &str, sig: &str) -> Case {
    // unique among the tests running side by side and between runs
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().subsec_nanos();
    let marker = format!("{}{n}{t:09}", std::process::id());
    let dir =
        tempfile::Builder::new().prefix(&format!("kill-{sig}-{marker}-")).tempdir().unwrap_or_else(|e| panic!("{e}"));
    let tmp = dir.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap_or_else(|e| panic!("{e}"));
    let subjects = if subject == "builtin" { "" } else { "subjects = [\"claude-code\"]\n" };
    // the marker is in the sleep's argument (`600.<marker>` seconds) and in the shell's command line;
    // the subject runs confined: its `ready` file goes in its sandbox's root (see [`ready`])
    let command = format!("touch \"$HOME/../ready\"; sleep {COMMAND_SECS}.{marker}");
    let probe = dir.path().join("long.toml");
    let text = format!(
        "id = \"kill.long-bash\"\nclaims = [\"BASH-5\"]\n{subjects}about = \"a command that runs for minutes\"\n\
         deadline_secs = {COMMAND_SECS}\n[[turn]]\ntool_use = [{{ name = \"Bash\", input = {{ command = {command:?}, \
         description = \"long\", timeout = {} }} }}]\n[[turn]]\ntext = \"done\"\n",
        COMMAND_SECS * 1000
    );
    std::fs::write(&probe, text).unwrap_or_else(|e| panic!("{e}"));
    Case { dir, marker, tmp, probe }
}

/// The command has started: its `ready` file is in a sandbox of the run's TMPDIR.
fn ready(c: &Case) -> bool {
    std::fs::read_dir(&c.tmp).into_iter().flatten().flatten().any(|e| e.path().join("ready").exists())
}

fn start(c: &Case, subject: &str) -> Child {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    Command::new(env!("CARGO_BIN_EXE_probelab"))
        .args(["run", "--subject", subject])
        .arg(&c.probe)
        .current_dir(repo)
        .env("TMPDIR", &c.tmp)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(c.dir.path().join("stdout")).unwrap_or_else(|e| panic!("{e}")))
        .stderr(std::fs::File::create(c.dir.path().join("stderr")).unwrap_or_else(|e| panic!("{e}")))
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Live processes (not zombies) whose command line holds `marker`: (pid, command line).
fn marked(marker: &str) -> Vec<(u32, String)> {
    let mut out = Vec::new();
    let me = std::process::id();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        if pid == me {
            continue;
        }
        let Ok(raw) = std::fs::read(e.path().join("cmdline")) else { continue };
        let cmdline = String::from_utf8_lossy(&raw).replace('\0', " ");
        if cmdline.contains(marker) {
            out.push((pid, cmdline));
        }
    }
    out
}

fn sandboxes(tmp: &Path) -> Vec<String> {
    std::fs::read_dir(tmp)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("probelab-"))
        .collect()
}

fn dump(c: &Case) -> String {
    let read = |n: &str| std::fs::read_to_string(c.dir.path().join(n)).unwrap_or_default();
    format!("stdout:\n{}\nstderr:\n{}", read("stdout"), read("stderr"))
}

/// Polls `done` every [`POLL`] until it holds or `bound` passes; whether it held.
fn wait_for(bound: Duration, mut done: impl FnMut() -> bool) -> bool {
    let until = Instant::now() + bound;
    loop {
        if done() {
            return true;
        }
        if Instant::now() >= until {
            return false;
        }
        std::thread::sleep(POLL);
    }
}

/// Runs the probe on `subject`, sends `sig` once the command runs, and checks what is left.
fn killed_run_leaves_nothing(subject: &str, sig: nix::sys::signal::Signal, code: Option<i32>) {
    let c = case(subject, sig.as_str());
    let mut child = start(&c, subject);
    let started = wait_for(START_BOUND, || ready(&c) || child.try_wait().ok().flatten().is_some());
    assert!(started && ready(&c), "the command never started\n{}", dump(&c));
    assert!(
        wait_for(EXIT_BOUND, || marked(&c.marker).iter().any(|(_, l)| l.contains("sleep"))),
        "no sleep carrying the marker: {:?}\n{}",
        marked(&c.marker),
        dump(&c)
    );
    assert!(!sandboxes(&c.tmp).is_empty(), "the run has no sandbox in its TMPDIR\n{}", dump(&c));
    let sent = Instant::now();
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), sig).unwrap_or_else(|e| panic!("{e}"));
    let mut status = None;
    assert!(wait_for(EXIT_BOUND, || {
        status = child.try_wait().ok().flatten();
        status.is_some()
    }));
    let exited = sent.elapsed();
    let status = status.unwrap_or_else(|| panic!("no status"));
    match code {
        Some(code) => assert_eq!(status.code(), Some(code), "{}", dump(&c)),
        None => assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status), Some(sig as i32)),
    }
    let clean = wait_for(EXIT_BOUND, || marked(&c.marker).is_empty() && sandboxes(&c.tmp).is_empty());
    let cleaned = sent.elapsed();
    assert!(
        clean,
        "left after {sig}: processes {:?}, sandboxes {:?}\n{}",
        marked(&c.marker),
        sandboxes(&c.tmp),
        dump(&c)
    );
    eprintln!("{subject} {sig}: exit {exited:?} after the signal, nothing left after {cleaned:?}");
}

#[test]
fn sigint_to_a_builtin_run_leaves_nothing_and_exits_130() {
    killed_run_leaves_nothing("builtin", nix::sys::signal::Signal::SIGINT, Some(130));
}

#[test]
fn sigterm_to_a_builtin_run_leaves_nothing_and_exits_143() {
    killed_run_leaves_nothing("builtin", nix::sys::signal::Signal::SIGTERM, Some(143));
}

#[test]
fn sigkill_to_a_builtin_run_leaves_nothing() {
    killed_run_leaves_nothing("builtin", nix::sys::signal::Signal::SIGKILL, None);
}

/// Claude Code's installed binary, or `None` with a message (the test is then skipped).
fn claude_installed() -> Option<String> {
    let cache = std::env::var_os("PROBELAB_CACHE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/probelab")));
    let dir = cache.map(|c| c.join("claude-code").join(CLAUDE_VERSION));
    if dir.as_ref().is_some_and(|d| d.is_dir()) {
        Some(format!("claude-code@{CLAUDE_VERSION}"))
    } else {
        eprintln!("skipped: claude-code@{CLAUDE_VERSION} is not installed (scripts/setup installs it)");
        None
    }
}

#[test]
fn sigint_to_a_claude_code_run_leaves_nothing_and_exits_130() {
    if let Some(s) = claude_installed() {
        killed_run_leaves_nothing(&s, nix::sys::signal::Signal::SIGINT, Some(130));
    }
}

#[test]
fn sigterm_to_a_claude_code_run_leaves_nothing_and_exits_143() {
    if let Some(s) = claude_installed() {
        killed_run_leaves_nothing(&s, nix::sys::signal::Signal::SIGTERM, Some(143));
    }
}

#[test]
fn sigkill_to_a_claude_code_run_leaves_nothing() {
    if let Some(s) = claude_installed() {
        killed_run_leaves_nothing(&s, nix::sys::signal::Signal::SIGKILL, None);
    }
}

/// A run that passes its deadline leaves nothing of its subject, by itself (in this process: no
/// worker's last sweep behind it): the built-in loop's Bash command, or claude with its Bash tree.
fn run_past_its_deadline_leaves_nothing(subject: &str, deadline_secs: u64) {
    let c = case(subject, "deadline");
    let text = std::fs::read_to_string(&c.probe).unwrap_or_else(|e| panic!("{e}"));
    let text = text.replace(&format!("deadline_secs = {COMMAND_SECS}"), &format!("deadline_secs = {deadline_secs}"));
    let probe = harness::probe::parse(&c.probe, &text).unwrap_or_else(|e| panic!("{e}"));
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures");
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap_or_else(|e| panic!("{e}"));
    let began = Instant::now();
    let out = rt.block_on(async {
        let id = harness::subject::SubjectId::parse_registered(subject).unwrap_or_else(|| panic!("{subject}"));
        match id.version.as_ref() {
            None => harness::run::run_builtin(&probe, &fixtures).await,
            Some(v) => {
                let cc = harness::subject::claude_code::install_version(v).unwrap_or_else(|e| panic!("{e}"));
                harness::run::run_conversation(&probe, &cc, &fixtures).await
            }
        }
    });
    let out = out.unwrap_or_else(|e| panic!("{e}"));
    let took = began.elapsed();
    assert!(out.sandbox.root.join("ready").exists(), "the command never started: {:?}", out.end);
    assert!(!out.within_deadline, "{:?}", out.end);
    let bound = Duration::from_secs(deadline_secs) + EXIT_BOUND;
    assert!(took <= bound, "the run ended after {took:?}, more than {bound:?}");
    let clean = wait_for(EXIT_BOUND, || marked(&c.marker).is_empty());
    assert!(clean, "left after the deadline: {:?}", marked(&c.marker));
    eprintln!("{subject}: deadline {deadline_secs} s, run ended after {took:?}, nothing of it left");
}

#[test]
fn a_builtin_run_past_its_deadline_leaves_nothing() {
    run_past_its_deadline_leaves_nothing("builtin", 2);
}

#[test]
fn a_claude_code_run_past_its_deadline_leaves_its_bash_tree_nothing() {
    if let Some(s) = claude_installed() {
        run_past_its_deadline_leaves_nothing(&s, 15);
    }
}

#[test]
fn what_a_killed_process_group_leaves_is_swept_at_the_next_start() {
    // SIGKILL to the whole group of probelab (supervisor and worker at once, as a CI runner may do):
    // nothing of the run can clean up, so its command and sandbox are left — until the next start
    let c = case("builtin", "group");
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut child = {
        use std::os::unix::process::CommandExt as _;
        Command::new(env!("CARGO_BIN_EXE_probelab"))
            .arg("run")
            .arg(&c.probe)
            .current_dir(&repo)
            .env("TMPDIR", &c.tmp)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("{e}"))
    };
    assert!(wait_for(START_BOUND, || ready(&c)), "the command never started");
    let sleeping = || marked(&c.marker).iter().any(|(_, l)| l.starts_with("sleep"));
    assert!(wait_for(EXIT_BOUND, sleeping), "no sleep: {:?}", marked(&c.marker));
    nix::sys::signal::killpg(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGKILL)
        .unwrap_or_else(|e| panic!("{e}"));
    let _ = child.wait();
    // the command itself may be gone already: it ran in the run's confined session, whose holder dies
    // with the lab (PR_SET_PDEATHSIG) and takes its pid namespace along; the sandbox stays for the sweep
    assert!(!sandboxes(&c.tmp).is_empty(), "nothing was left to sweep: {:?}", marked(&c.marker));
    let next = Command::new(env!("CARGO_BIN_EXE_probelab"))
        .args(["run", "probes/read/window.toml"])
        .current_dir(&repo)
        .env("TMPDIR", &c.tmp)
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let stderr = String::from_utf8_lossy(&next.stderr);
    assert!(next.status.success(), "{stderr}");
    assert!(stderr.contains("removed 1 sandbox(es) left by runs that were killed"), "{stderr}");
    let clean = wait_for(EXIT_BOUND, || marked(&c.marker).is_empty() && sandboxes(&c.tmp).is_empty());
    assert!(clean, "not swept: processes {:?}, sandboxes {:?}", marked(&c.marker), sandboxes(&c.tmp));
    eprintln!("swept at the next start: {}", stderr.trim());
}

#[test]
fn a_daemon_a_probe_left_behind_is_killed_with_its_sandbox() {
    // `setsid … &` leaves the Bash's group, and once the Bash exits it is nobody's descendant the run
    // tracks (in process, as `cargo test` runs probes, no subreaper adopts it): it is found by its cwd
    // when the sandbox goes.
    let c = case("builtin", "daemon");
    let command = format!("setsid sleep {COMMAND_SECS}.{} >/dev/null 2>&1 < /dev/null & echo started", c.marker);
    let text = format!(
        "id = \"kill.daemon\"\nclaims = [\"BASH-5\"]\nabout = \"a daemon left behind\"\n[[turn]]\n\
         tool_use = [{{ name = \"Bash\", input = {{ command = {command:?}, description = \"daemon\" }} }}]\n\
         [[turn]]\ntext = \"done\"\n"
    );
    let probe = harness::probe::parse(Path::new("daemon.toml"), &text).unwrap_or_else(|e| panic!("{e}"));
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap_or_else(|e| panic!("{e}"));
    let layout = harness::lab::Layout::repo();
    rt.block_on(harness::lab::run_probe(&probe, &harness::subject::SubjectId::builtin(), &layout, false))
        .unwrap_or_else(|e| panic!("{e}"));
    let left = marked(&c.marker);
    for (pid, _) in &left {
        probelab_runtime::process::kill_tree(*pid as i32);
    }
    assert!(left.is_empty(), "left: {left:?}");
}
