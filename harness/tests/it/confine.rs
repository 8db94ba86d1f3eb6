//! Every subject runs confined by default (issue 30, item 2): a probe whose Bash (and a hook) writes
//! outside its sandbox (/var/tmp, the sandbox's parent `$HOME/../..`) and connects to a loopback port
//! that is not one of its services changes nothing outside the sandbox, and the connection never
//! arrives — on the built-in subject, and on Claude Code 2.1.235 where it is installed; an imported
//! session replays the same way. Only loopback addresses.

use std::path::{Path, PathBuf};

/// The probe, with the names of the files it tries to write and the port it tries.
fn probe(name: &str, port: u16) -> String {
    format!(
        r#"id = "confine.host-untouched"
claims = ["BASH-3"]
about = "writes outside the sandbox and a connection to a loopback port that is no service"
subjects = ["builtin", "claude-code"]
ask = "allow"

# a hook is a process of the subject too
[[settings.hooks.PreToolUse]]
matcher = "Bash"
hooks = [{{ type = "command", command = "echo x > /var/tmp/{name}-hook; echo ran > hook-ran.txt" }}]

[[turn]]
tool_use = [{{ name = "Bash", input = {{ command = "echo x > /var/tmp/{name}; echo x > \"$HOME/../../{name}\"; echo x > \"$HOME/../{name}\" && echo inside-written; (exec 3<>/dev/tcp/127.0.0.1/{port}) 2>&1; echo end", description = "escape" }} }}]
[[turn]]
text = "done"

[[check]]
result = 1
contains = ["/var/tmp/{name}: Read-only file system", "inside-written", "Connection refused", "end"]
[[check]]
file = "hook-ran.txt"
equals = "ran\n"
"#
    )
}

/// Runs the probe on `subject`, confined by each backend the machine has; asserts that the host saw
/// nothing of it.
fn untouched(subject: &str) {
    for backend in backends() {
        untouched_on(subject, backend);
    }
}

fn untouched_on(subject: &str, backend: &str) {
    let name = format!("probelab-confine-{}-{}-{backend}", std::process::id(), subject.replace(['@', '.'], "-"));
    let outside = [
        PathBuf::from("/var/tmp").join(&name),
        PathBuf::from("/var/tmp").join(format!("{name}-hook")),
        std::env::temp_dir().canonicalize().unwrap_or_default().join(&name),
    ];
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
    listener.set_nonblocking(true).unwrap_or_else(|e| panic!("{e}"));
    let port = listener.local_addr().unwrap_or_else(|e| panic!("{e}")).port();
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let lab = dir.path();
    assert!(probelab(lab, &["init"]).0);
    std::fs::write(lab.join("probes/host-untouched.toml"), probe(&name, port)).unwrap_or_else(|e| panic!("{e}"));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_probelab"))
        .args(["run", "--bless", "-j", "1", "--subject", subject])
        .env(probelab_runtime::confine::BACKEND_ENV, backend)
        .current_dir(lab)
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let landed: Vec<&Path> = outside.iter().map(PathBuf::as_path).filter(|p| p.exists()).collect();
    for p in &landed {
        let _ = std::fs::remove_file(p);
    }
    let connected = listener.accept().is_ok();
    assert!(landed.is_empty(), "{subject} on {backend}: the subject wrote outside its sandbox: {landed:?}");
    assert!(
        !connected,
        "{subject} on {backend}: the subject reached 127.0.0.1:{port}, which is no service of the probe"
    );
    assert!(out.status.success() && said.contains("1 passed, 0 failed"), "{subject} on {backend}:\n{said}");
}

#[test]
fn the_builtin_subject_changes_nothing_outside_its_sandbox() {
    untouched("builtin");
}

#[test]
fn claude_code_changes_nothing_outside_its_sandbox() {
    let version = harness::subject::claude_code::REFERENCE_VERSION;
    if !harness::versions::cache_root().join("claude-code").join(version).is_dir() {
        eprintln!("NOT RUN: claude-code@{version} is not installed (scripts/setup installs it)");
        return;
    }
    untouched(&format!("claude-code@{version}"));
}

/// `probelab ARGS` in `dir`: (success, what it said).
fn probelab(dir: &Path, args: &[&str]) -> (bool, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_probelab"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("probelab {args:?}: {e}"));
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), said)
}

#[test]
fn an_imported_session_replays_without_touching_the_host() {
    // a real session (claude-code@2.1.235's), its Bash command made to write outside the project
    let name = format!("probelab-confine-import-{}", std::process::id());
    let outside = PathBuf::from("/var/tmp").join(&name);
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let text = std::fs::read_to_string(repo.join("fixtures/sessions/claude-code-2.1.235.jsonl"))
        .unwrap_or_else(|e| panic!("{e}"));
    let escaping =
        text.replace(r#""command":"cat f.txt""#, &format!(r#""command":"echo x > /var/tmp/{name}; cat f.txt""#));
    assert_ne!(escaping, text, "the session's Bash command was found");
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let lab = tmp.path();
    let session = lab.join("session.jsonl");
    std::fs::write(&session, escaping).unwrap_or_else(|e| panic!("{e}"));
    assert!(probelab(lab, &["init"]).0);
    let (ok, said) = probelab(lab, &["import", &session.to_string_lossy(), "sessions/escape"]);
    assert!(ok, "{said}");
    let version = harness::subject::claude_code::REFERENCE_VERSION;
    let cc = format!("claude-code@{version}");
    let installed = harness::versions::cache_root().join("claude-code").join(version).is_dir();
    for backend in backends() {
        for subject in ["builtin"].into_iter().chain(installed.then_some(cc.as_str())) {
            // the recorded result (the file's text) no longer comes back: the run fails its check, the
            // host is what counts
            let out = std::process::Command::new(env!("CARGO_BIN_EXE_probelab"))
                .args(["run", "-j", "1", "--subject", subject])
                .env(probelab_runtime::confine::BACKEND_ENV, backend)
                .current_dir(lab)
                .output()
                .unwrap_or_else(|e| panic!("{e}"));
            let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
            let landed = outside.exists();
            let _ = std::fs::remove_file(&outside);
            assert!(!landed, "{subject} on {backend}: the replay wrote {}:\n{said}", outside.display());
            assert!(said.contains("Read-only file system"), "{subject} on {backend}: {said}");
        }
    }
}

/// `probelab run --golden GOLDEN PROBES…` in the repository with `env`: (exit code, what it said).
fn run_in_repo(golden: &Path, probes: &[&Path], extra: &[&str], env: &[(&str, &std::ffi::OsStr)]) -> (i32, String) {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_probelab"));
    cmd.args(["run", "--bless", "-j", "1", "--golden"]).arg(golden).args(extra).args(probes).current_dir(&repo);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap_or_else(|e| panic!("{e}"));
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.code().unwrap_or(-1), said)
}

#[test]
fn without_any_confinement_a_probe_is_skipped_unless_it_says_why_it_runs_unconfined() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let empty = tmp.path().join("bin");
    std::fs::create_dir(&empty).unwrap_or_else(|e| panic!("{e}"));
    let probe = tmp.path().join("unconfined.toml");
    let text = "id = \"x.unconfined\"\nclaims = [\"READ-1\"]\nabout = \"a Read\"\n[subject]\nunconfined = \"a test of the opt-out\"\n\
                [fixture]\nfiles.\"f.txt\" = \"a\\n\"\n[[turn]]\ntool_use = [{ name = \"Read\", input = { file_path = \"{cwd}/f.txt\" } }]\n\
                [[turn]]\ntext = \"done\"\n";
    std::fs::write(&probe, text).unwrap_or_else(|e| panic!("{e}"));
    let golden = tmp.path().join("golden");
    let window = Path::new("probes/read/window.toml");
    // bubblewrap asked for and missing (no bwrap on PATH): the confined probe is skipped, saying what it
    // needs; the one that opted out runs
    let no_bwrap: [(&str, &std::ffi::OsStr); 2] =
        [("PATH", empty.as_os_str()), (probelab_runtime::confine::BACKEND_ENV, "bwrap".as_ref())];
    let (code, said) = run_in_repo(&golden, &[&probe, window], &[], &no_bwrap);
    assert!(said.contains("skip  read.window (needs a way to confine the subject: PROBELAB_CONFINE=bwrap, and bubblewrap (bwrap) is not on PATH"), "{said}");
    assert!(said.contains("bless x.unconfined"), "{said}");
    assert!(said.contains("1 passed, 0 failed, 1 skipped: 1 missing confinement ("), "{said}");
    assert_eq!(code, 0, "{said}");
    // a run that ran nothing: exit 5 and why, unless --allow-empty
    let (code, said) = run_in_repo(&golden, &[window], &[], &no_bwrap);
    assert_eq!(code, 5, "{said}");
    assert!(said.contains("probelab run: nothing ran on builtin: all 1 probes were skipped (1 missing confinement); install the missing host parts above"), "{said}");
    let (code, said) = run_in_repo(&golden, &[window], &["--allow-empty"], &no_bwrap);
    assert_eq!(code, 0, "{said}");
    // no bwrap on PATH, nothing asked: probelab's own namespaces confine it (where the kernel allows)
    if backends().contains(&"namespaces") {
        let (code, said) = run_in_repo(&golden, &[window], &[], &[("PATH", empty.as_os_str())]);
        assert!(said.contains("bless read.window"), "{said}");
        assert_eq!(code, 0, "{said}");
    }
}

#[test]
fn a_subject_no_probe_is_for_ran_nothing_and_exits_5() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let golden = tmp.path().join("golden");
    let only_cc = Path::new("probes/claude-code/agent-message.toml");
    let (code, said) = run_in_repo(&golden, &[only_cc], &["--subject", "builtin"], &[]);
    assert_eq!(code, 5, "{said}");
    assert!(said.contains("0 passed, 0 failed, 1 skipped: 1 not for builtin ("), "{said}");
    assert!(said.contains("nothing ran on builtin: all 1 probes were skipped (1 not for builtin); select probes written for this subject"), "{said}");
}

/// The backends this machine confines with (`namespaces`, `bwrap`): every confinement test runs on each.
/// A backend that cannot run here is said, never silently dropped; none at all fails.
/// `probelab ARGS` in `dir` on the confinement `backend`: its exit code and all it said.
fn run_on(backend: &str, dir: &Path, args: &[&str]) -> (Option<i32>, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_probelab"))
        .args(args)
        .env(probelab_runtime::confine::BACKEND_ENV, backend)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("probelab {args:?}: {e}"));
    (out.status.code(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

fn backends() -> Vec<&'static str> {
    let launcher = Path::new(env!("CARGO_BIN_EXE_probelab"));
    let mut here = Vec::new();
    for b in ["namespaces", "bwrap"] {
        match probelab_runtime::confine::backend_chosen(b, launcher) {
            Ok(_) => here.push(b),
            Err(e) => eprintln!("NOT RUN on {b}: {e}"),
        }
    }
    assert!(!here.is_empty(), "no confinement backend works on this machine");
    here
}

/// What a confined process sees of its confinement, in words that do not depend on the run (no
/// times, ids or mount numbers): its ids and capabilities, its namespaces' contents (processes,
/// interfaces), the mounts with their options, `/dev`, what it can write and reach.
const OBSERVE: &str = r#"
id; grep -E '^(Cap|NoNewPrivs|Seccomp:)' /proc/self/status
[ "$OWN_PIDS" = true ] && { echo "pid $$"; ls /proc | grep -c '^[0-9]'; }
awk '{print $5, $6, $9, $10}' /proc/self/mountinfo | grep -vE '^/(proc|sys)/' | sed 's/,relatime//'
for f in /dev/* /dev/pts/*; do stat -c '%n %F %a %t:%T' "$f"; done
stat -c '%n %F %a' /tmp; ls -A /tmp
awk 'NR > 2 {print "interface", $1}' /proc/self/net/dev
ls -A /var /run; wc -c < /etc/shadow; (echo x > /var/tmp/x) 2>&1 | sed 's/^.*: //' 
for p in /etc/probelab-x /tmp/x /dev/shm/x "$SB/x" /proc/sys/kernel/core_pattern; do (echo x > "$p") 2>&1 | sed 's/^.*: //' ; [ -e "$p" ] && echo "wrote $p"; done
(exec 3<>/dev/tcp/127.0.0.1/"$PORT") 2>&1 | sed 's/^.*: //'
unshare -U true && echo nested-userns-ok; hostname >/dev/null && echo has-hostname
"#;

#[test]
fn every_backend_makes_the_same_confinement() {
    use probelab_runtime::confine::{backend_chosen, Confinement, Network};
    let here = backends();
    if here.len() < 2 {
        eprintln!("NOT RUN: one backend here ({here:?}); the comparison needs both");
        return;
    }
    let launcher = Path::new(env!("CARGO_BIN_EXE_probelab"));
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
    let port = listener.local_addr().unwrap_or_else(|e| panic!("{e}")).port().to_string();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap_or_else(|e| panic!("{e}"));
    for own_pids in [false, true] {
        let mut seen = Vec::new();
        for b in &here {
            let sb = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
            let backend = backend_chosen(b, launcher).unwrap_or_else(|e| panic!("{e}"));
            let mut c = Confinement::lab(backend, sb.path(), Network::Off, own_pids);
            c.hidden = vec![PathBuf::from("/var"), PathBuf::from("/run"), PathBuf::from("/etc/shadow")];
            c.skeleton = vec![PathBuf::from("/var/tmp")];
            let env = probelab_runtime::confine::with_env(
                probelab_runtime::confine::passed_env(),
                [("SB", sb.path().as_os_str()), ("PORT", port.as_ref()), ("OWN_PIDS", own_pids.to_string().as_ref())],
            );
            let mut cmd = c.wrap("bash", ["-c", OBSERVE], sb.path(), &env);
            cmd.stdin(std::process::Stdio::null());
            let out = rt.block_on(async { cmd.output().await }).unwrap_or_else(|e| panic!("{b}: {e}"));
            let name = sb.path().file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let text = String::from_utf8_lossy(&out.stdout)
                .replace(&sb.path().display().to_string(), "<sandbox>")
                .replace(&name, "<sandbox name>");
            assert!(out.status.success(), "{b}: {}\n{text}", String::from_utf8_lossy(&out.stderr));
            assert!(!sb.path().join("../x").exists());
            seen.push((b, text));
        }
        let (first, rest) = seen.split_first().unwrap_or_else(|| panic!("no backend"));
        for other in rest {
            let d =
                similar::TextDiff::from_lines(&first.1, &other.1).unified_diff().header(first.0, other.0).to_string();
            assert!(d.is_empty(), "own pids {own_pids}: the backends differ:\n{d}");
        }
        for must in [
            "CapEff:\t0000000000000000",
            "CapBnd:\t0000000000000000",
            "NoNewPrivs:\t1",
            "Read-only file system",
            "Connection refused",
            "interface lo:\n",
            "wrote /tmp/x",
            "wrote <sandbox>/x",
        ] {
            assert!(first.1.contains(must), "own pids {own_pids}: {must:?} not in\n{}", first.1);
        }
    }
}

/// The probes `probelab run --json` ran on `subject` (by id), and those it skipped with the reason's key.
fn ran_and_skipped(said: &str) -> (std::collections::BTreeSet<String>, std::collections::BTreeMap<String, String>) {
    let (mut ran, mut skipped) = (std::collections::BTreeSet::new(), std::collections::BTreeMap::new());
    for line in said.lines().filter(|l| l.starts_with('{')) {
        let v: serde_json::Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        let (Some(id), Some(status)) = (v["probe"].as_str(), v["status"].as_str()) else { continue };
        if status == "skipped" {
            skipped.insert(id.to_string(), v["reason"].as_str().unwrap_or_default().to_string());
        } else {
            ran.insert(id.to_string());
        }
    }
    (ran, skipped)
}

/// Issue 39: the README's main command on a machine without bubblewrap runs what a full set-up runs,
/// minus only the probes that name bubblewrap themselves (the Bash tool's own sandbox): confinement
/// itself needs no host package. (Where the kernel refuses namespaces, the check is not made: the
/// machine then needs bubblewrap for every loop probe, and says so.)
#[test]
fn without_bubblewrap_the_main_command_runs_all_but_the_probes_that_name_it() {
    if !backends().contains(&"namespaces") {
        eprintln!("NOT RUN: this kernel refuses namespaces to probelab");
        return;
    }
    if probelab_runtime::confine::bwrap_on_path().is_none() {
        eprintln!(
            "NOT RUN: bwrap is not installed, so there is no full set-up to compare with (scripts/setup installs it)"
        );
        return;
    }
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    // scripts/without hides bwrap from PATH (its link farm outside /tmp: a confined subject's /tmp is its own)
    let run = |hide: bool| {
        let probelab = env!("CARGO_BIN_EXE_probelab");
        let mut cmd = std::process::Command::new(if hide { "scripts/without" } else { probelab });
        if hide {
            cmd.args(["bwrap", "--", probelab]);
        }
        cmd.args(["run", "--json", "--subject", "builtin@2.1.235"]).current_dir(&repo);
        let out = cmd.output().unwrap_or_else(|e| panic!("{e}"));
        (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let (full_code, full) = run(false);
    let (code, bare) = run(true);
    let ((ran_full, _), (ran, skipped)) = (ran_and_skipped(&full), ran_and_skipped(&bare));
    assert_eq!(full_code, Some(0), "{full}");
    assert_eq!(code, Some(0), "{bare}");
    assert!(ran.is_subset(&ran_full), "ran without bwrap only: {:?}", ran.difference(&ran_full).collect::<Vec<_>>());
    let lost: Vec<&String> = ran_full.difference(&ran).collect();
    assert!(!lost.is_empty(), "the sandbox probes need bubblewrap: some probe should be lost without it");
    for id in &lost {
        let why = skipped.get(*id).map(String::as_str).unwrap_or("ran");
        assert!(why.starts_with("needs bubblewrap"), "{id} did not run without bwrap, but not for bubblewrap: {why}");
    }
    // and a probe that names bubblewrap is the only kind lost: every other loop probe ran
    assert!(ran.len() > 100, "only {} probes ran without bwrap", ran.len());
}

#[test]
fn scripts_without_hides_what_it_is_told_and_refuses_a_bad_command_line() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let without = |args: &[&str]| {
        let out = std::process::Command::new("scripts/without")
            .args(args)
            .current_dir(&repo)
            .output()
            .unwrap_or_else(|e| panic!("{e}"));
        (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned())
    };
    // sh is on every PATH: hidden, `command -v` fails; another program stays
    assert_eq!(without(&["sh", "--", "/bin/bash", "-c", "command -v sh"]).0, Some(1));
    let (code, said) = without(&["sh", "--", "/bin/bash", "-c", "command -v ls"]);
    assert_eq!(code, Some(0), "{said}");
    let farm = harness::versions::cache_root().join("without-");
    assert!(said.contains(&farm.display().to_string()), "ls comes from the link farm in the cache: {said}");
    // the farm goes with the command
    let left: Vec<_> = std::fs::read_dir(harness::versions::cache_root())
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| said.trim().starts_with(&e.path().display().to_string()))
        .collect();
    assert!(left.is_empty(), "the link farm was left: {left:?}");
    assert_eq!(without(&["sh"]).0, Some(2));
    assert_eq!(without(&["--", "true"]).0, Some(2));
}

/// Issue 41, item 1: every process of a confined subject lives in namespaces of the session's own (pid,
/// ipc, uts, network, mount): a host process of the same user — here one of the test's, and the test
/// itself, an ancestor of the lab — cannot be signalled (it is not even visible), and a SysV
/// shared-memory segment of the host cannot be removed. On the built-in subject (its Bash commands
/// join the run's session) and on every backend.
#[test]
fn a_confined_subject_reaches_no_host_process_and_no_host_ipc() {
    let mut victim = std::process::Command::new("sleep").arg("60").spawn().unwrap_or_else(|e| panic!("{e}"));
    let shm = std::process::Command::new("ipcmk").args(["-M", "4096"]).output().ok().filter(|o| o.status.success());
    let shmid = shm
        .as_ref()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).split_whitespace().last().map(str::to_string))
        .unwrap_or_else(|| "0".into());
    for backend in backends() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let lab = dir.path();
        assert!(probelab(lab, &["init"]).0);
        let text = format!(
            r#"id = "hostile.processes"
claims = ["BASH-3"]
about = "signals to host processes and the host's SysV IPC, from a confined Bash"
subjects = ["builtin"]
[[turn]]
tool_use = [{{ name = "Bash", input = {{ command = "kill -9 {victim} 2>/dev/null; echo kill=$?; kill -STOP {me} 2>/dev/null; echo stop=$?; ipcrm -m {shmid} 2>/dev/null; echo ipcrm=$?; echo procs=$(ls /proc | grep -c '^[0-9]*$')", description = "reach the host" }} }}]
[[turn]]
text = "done"
[[check]]
result = 1
contains = ["kill=1", "stop=1", "ipcrm=1"]
"#,
            victim = victim.id(),
            me = std::process::id(),
        );
        std::fs::write(lab.join("probes/processes.toml"), text).unwrap_or_else(|e| panic!("{e}"));
        let (code, said) = run_on(backend, lab, &["run", "--bless", "-j", "1", "--subject", "builtin"]);
        assert!(matches!(victim.try_wait(), Ok(None)), "{backend}: the host's process was killed:\n{said}");
        if shm.is_some() {
            let there = std::process::Command::new("ipcs").args(["-m", "-i", &shmid]).output();
            assert!(there.is_ok_and(|o| o.status.success()), "{backend}: the host's segment {shmid} is gone:\n{said}");
        }
        assert!(code == Some(0) && said.contains("1 passed, 0 failed"), "{backend}:\n{said}");
        let golden = std::fs::read_to_string(lab.join("golden/builtin/hostile.processes.snap")).unwrap_or_default();
        let procs: usize = golden
            .split("| procs=")
            .nth(1)
            .and_then(|t| t.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok())
            .unwrap_or(999);
        assert!(procs < 10, "{backend}: the session sees {procs} processes: the host's are visible\n{golden}");
    }
    let _ = victim.kill();
    let _ = victim.wait();
    if shm.is_some() {
        let _ = std::process::Command::new("ipcrm").args(["-m", &shmid]).status();
    }
}

/// Issue 41, item 4: canaries in the lab's environment and in the host's HOME never reach a golden —
/// the subject sees neither (an explicit list of variables passes; the homes, /var and /run are
/// hidden) — on the built-in subject and Claude Code 2.1.235 where installed, on every backend.
#[test]
fn host_and_lab_canaries_never_reach_a_golden() {
    let unique = format!(
        "{}x{}",
        std::process::id(),
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0)
    );
    let token = format!("canary{unique}");
    let home = PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/root".into()));
    let canary_file = home.join(format!("probelab-canary-{}", std::process::id()));
    let file_text = format!("hostcanary{unique}");
    std::fs::write(&canary_file, &file_text).unwrap_or_else(|e| panic!("{e}"));
    let version = harness::subject::claude_code::REFERENCE_VERSION;
    let cc = format!("claude-code@{version}");
    let installed = harness::versions::cache_root().join("claude-code").join(version).is_dir();
    for backend in backends() {
        for subject in ["builtin"].into_iter().chain(installed.then_some(cc.as_str())) {
            let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
            let lab = dir.path();
            assert!(probelab(lab, &["init"]).0);
            let text = format!(
                r#"id = "hostile.canaries"
claims = ["BASH-3"]
about = "what a confined Bash sees of the lab's environment and the host's files"
subjects = ["builtin", "claude-code"]
[[turn]]
tool_use = [{{ name = "Bash", input = {{ command = "env | sort; cat {file} 2>&1; ls -A {home} /run /var 2>&1; cat /etc/shadow 2>&1 | wc -c; echo end", description = "look" }} }}]
[[turn]]
text = "done"
[[check]]
result = 1
contains = ["end"]
"#,
                file = canary_file.display(),
                home = home.display(),
            );
            std::fs::write(lab.join("probes/canaries.toml"), text).unwrap_or_else(|e| panic!("{e}"));
            let out = std::process::Command::new(env!("CARGO_BIN_EXE_probelab"))
                .args(["run", "--bless", "-j", "1", "--subject", subject])
                .env(probelab_runtime::confine::BACKEND_ENV, backend)
                .env("PROBELAB_CANARY_TOKEN", &token)
                .current_dir(lab)
                .output()
                .unwrap_or_else(|e| panic!("{e}"));
            let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
            let golden = std::fs::read_to_string(lab.join(format!("golden/{subject}/hostile.canaries.snap")))
                .unwrap_or_default();
            assert!(out.status.success() && said.contains("1 passed, 0 failed"), "{subject} on {backend}:\n{said}");
            assert!(
                !golden.contains(&token),
                "{subject} on {backend}: the lab's variable reached the golden:\n{golden}"
            );
            assert!(
                !golden.contains(&file_text),
                "{subject} on {backend}: the host's file reached the golden:\n{golden}"
            );
            assert!(
                golden.contains("No such file or directory"),
                "{subject} on {backend}: the canary file is not hidden:\n{golden}"
            );
        }
    }
    let _ = std::fs::remove_file(&canary_file);
}

/// The golden writer's own guard: a transcript holding the value of one of the lab's secret variables
/// (here given to the subject on purpose, through the probe's `[env]`) is not blessed, and the error
/// names the variable, never the value.
#[test]
fn a_transcript_holding_a_lab_secret_is_not_blessed() {
    let token = format!("tok{}abcdefghijklmnop", std::process::id());
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let lab = dir.path();
    assert!(probelab(lab, &["init"]).0);
    let text = format!(
        "id = \"hostile.given\"\nclaims = [\"BASH-3\"]\nabout = \"a secret handed over\"\nsubjects = [\"builtin\"]\n[env]\nX = \"{token}\"\n\
         [[turn]]\ntool_use = [{{ name = \"Bash\", input = {{ command = \"echo $X\", description = \"say it\" }} }}]\n[[turn]]\ntext = \"done\"\n"
    );
    std::fs::write(lab.join("probes/given.toml"), text).unwrap_or_else(|e| panic!("{e}"));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_probelab"))
        .args(["run", "--bless", "-j", "1", "--subject", "builtin"])
        .env("PROBELAB_TEST_API_TOKEN", &token)
        .current_dir(lab)
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(!out.status.success(), "{said}");
    assert!(said.contains("holds the value of the lab's $PROBELAB_TEST_API_TOKEN (line "), "{said}");
    assert!(!lab.join("golden/builtin/hostile.given.snap").exists(), "{said}");
    assert_eq!(
        said.matches(&token).count(),
        said.matches(&format!("echo {token}")).count() + said.matches(&format!("X = \"{token}")).count(),
        "the error shows the value:\n{said}"
    );
}

/// Issue 41, item 2: nothing of a probe's environment acts on the host before the confinement exists —
/// an `LD_PRELOAD` library named by the probe's `[env]` would run in the launcher (bubblewrap, or
/// probelab's own) if the environment reached it; it is applied inside only. The library, built here,
/// writes a marker into the test's directory on the host when it loads.
#[test]
fn a_probes_ld_preload_never_runs_on_the_host() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let marker = dir.path().join("loaded-on-the-host");
    let src = dir.path().join("evil.c");
    let lib = dir.path().join("evil.so");
    std::fs::write(
        &src,
        format!(
            "#include <stdio.h>\n__attribute__((constructor)) static void f(void) {{ FILE *o = fopen(\"{}\", \"a\"); if (o) {{ fputs(\"x\\n\", o); fclose(o); }} }}\n",
            marker.display()
        ),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let built = std::process::Command::new("gcc").args(["-shared", "-fPIC", "-o"]).arg(&lib).arg(&src).status();
    if !built.is_ok_and(|s| s.success()) {
        eprintln!("NOT RUN: gcc cannot build the preload library here");
        return;
    }
    // the library works: loaded into a program of the host, it writes the marker
    let _ = std::process::Command::new("true").env("LD_PRELOAD", &lib).status();
    assert!(marker.exists(), "the test's library does not write its marker");
    std::fs::remove_file(&marker).unwrap_or_else(|e| panic!("{e}"));
    for backend in backends() {
        let lab = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        assert!(probelab(lab.path(), &["init"]).0);
        let text = format!(
            "id = \"hostile.preload\"\nclaims = [\"BASH-3\"]\nabout = \"LD_PRELOAD in the probe's env\"\nsubjects = [\"builtin\"]\n[env]\nLD_PRELOAD = \"{}\"\n\
             [[turn]]\ntool_use = [{{ name = \"Bash\", input = {{ command = \"echo ran\", description = \"run\" }} }}]\n[[turn]]\ntext = \"done\"\n\
             [[check]]\nresult = 1\ncontains = \"ran\"\n",
            lib.display()
        );
        std::fs::write(lab.path().join("probes/preload.toml"), text).unwrap_or_else(|e| panic!("{e}"));
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_probelab"))
            .args(["run", "--bless", "-j", "1", "--subject", "builtin"])
            .env(probelab_runtime::confine::BACKEND_ENV, backend)
            .current_dir(lab.path())
            .output()
            .unwrap_or_else(|e| panic!("{e}"));
        let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(!marker.exists(), "{backend}: the probe's LD_PRELOAD ran on the host:\n{said}");
        assert!(said.contains("1 passed, 0 failed"), "{backend}:\n{said}");
    }
}

/// Issue 41, item 2: `[[exec]]` commands run confined like subjects (they ran on the host, with the
/// lab's whole environment): a write outside the sandbox is refused and the lab's variables are not
/// there, on every backend.
#[test]
fn an_exec_probe_runs_confined_with_none_of_the_labs_environment() {
    let name = format!("probelab-exec-{}", std::process::id());
    for backend in backends() {
        let lab = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        assert!(probelab(lab.path(), &["init"]).0);
        let text = format!(
            "id = \"hostile.exec\"\nclaims = [\"GREP-4\"]\nabout = \"an exec command that reaches out\"\nsubjects = [\"builtin\"]\n\
             [[exec]]\nargv = [\"sh\", \"-c\", \"(echo x > /var/tmp/{name}) 2>&1; echo \\\"[$PROBELAB_EXEC_CANARY]\\\"; echo end\"]\n\
             [[check]]\nexec = 1\nexit = 0\ncontains = [\"Read-only file system\", \"[]\", \"end\"]\n"
        );
        std::fs::write(lab.path().join("probes/exec.toml"), text).unwrap_or_else(|e| panic!("{e}"));
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_probelab"))
            .args(["run", "--bless", "-j", "1", "--subject", "builtin"])
            .env(probelab_runtime::confine::BACKEND_ENV, backend)
            .env("PROBELAB_EXEC_CANARY", "visible")
            .current_dir(lab.path())
            .output()
            .unwrap_or_else(|e| panic!("{e}"));
        let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        let landed = Path::new("/var/tmp").join(&name);
        let wrote = landed.exists();
        let _ = std::fs::remove_file(&landed);
        assert!(!wrote, "{backend}: the exec command wrote {}:\n{said}", landed.display());
        assert!(said.contains("1 passed, 0 failed"), "{backend}:\n{said}");
    }
}

/// A launcher whose parent is gone before it could arrange to die with it does not go on (a holder
/// started by a shell that exited at once ran on, orphaned, for half an hour): it checks once the
/// signal is set, and says why it stops.
#[test]
fn a_launcher_whose_parent_is_already_gone_stops() {
    let mut gone = std::process::Command::new("true").spawn().unwrap_or_else(|e| panic!("{e}"));
    let pid = gone.id();
    let _ = gone.wait();
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_probelab"))
        .args(["confine-ns", "--own-pids", "--parent", &pid.to_string(), "--cwd"])
        .arg(dir.path())
        .args(["--", "/bin/sh", "-c", "echo ran"])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(i32::from(probelab_runtime::confine::ns::SETUP_FAILED)), "{said}");
    assert!(
        said.contains(&format!("the process it was to die with ({pid}) is gone")) && !said.contains("ran"),
        "{said}"
    );
    // with its real parent named, it runs
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_probelab"))
        .args(["confine-ns", "--own-pids", "--parent", &std::process::id().to_string(), "--rw"])
        .arg(dir.path())
        .arg("--cwd")
        .arg(dir.path())
        .args(["--", "/bin/sh", "-c", "echo ran"])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    if backends().contains(&"namespaces") {
        assert_eq!(String::from_utf8_lossy(&out.stdout), "ran\n", "{}", String::from_utf8_lossy(&out.stderr));
    }
}

/// Issue 41, item 3: the lab never writes through a link it did not make. A confined Bash command
/// replaces `~/.claude` with a link to a directory of the host; the built-in runtime, which runs in
/// the lab's process, then persists a large result, appends its session log and launches a workflow
/// (its script, journal and run record) under `~/.claude` — and must write nothing through the link. And a fixture directory that ships a link: the probe's
/// `files` are not written through it. On every backend.
#[test]
fn the_lab_never_writes_through_a_link_a_subject_or_fixture_planted() {
    for backend in backends() {
        let host = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let lab = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        assert!(probelab(lab.path(), &["init"]).0);
        let text = format!(
            r#"id = "hostile.links"
claims = ["PIPE-5"]
about = "links planted where the lab writes"
subjects = ["builtin"]
[[turn]]
tool_use = [{{ name = "Bash", input = {{ command = "rm -rf ~/.claude && ln -s {host} ~/.claude && echo planted", description = "plant" }} }}]
[[turn]]
tool_use = [{{ name = "Bash", input = {{ command = "head -c 120000 /dev/zero | tr '\\0' a", description = "a large output" }} }}]
[[turn]]
tool_use = [{{ name = "Workflow", input = {{ script = "export const meta = {{ name: 'w', description: 'd' }}\nreturn 1\n" }} }}]
[[turn]]
text = "done"
[[check]]
result = 1
contains = "planted"
"#,
            host = host.path().display()
        );
        std::fs::write(lab.path().join("probes/links.toml"), text).unwrap_or_else(|e| panic!("{e}"));
        // a fixture dir that ships a link out of the sandbox, and files written under it
        let fx = lab.path().join("fixtures/evil");
        std::fs::create_dir_all(&fx).unwrap_or_else(|e| panic!("{e}"));
        std::os::unix::fs::symlink(host.path(), fx.join("out")).unwrap_or_else(|e| panic!("{e}"));
        let shipped = "id = \"hostile.fixture-link\"\nclaims = [\"READ-1\"]\nabout = \"a fixture's link\"\nsubjects = [\"builtin\"]\n\
                       [fixture]\ndir = \"evil\"\nfiles.\"out/planted.txt\" = \"x\\n\"\n[[turn]]\ntext = \"done\"\n";
        std::fs::write(lab.path().join("probes/fixture-link.toml"), shipped).unwrap_or_else(|e| panic!("{e}"));
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_probelab"))
            .args(["run", "-j", "1", "--subject", "builtin"])
            .env(probelab_runtime::confine::BACKEND_ENV, backend)
            .current_dir(lab.path())
            .output()
            .unwrap_or_else(|e| panic!("{e}"));
        let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        let written: Vec<_> = walk(host.path());
        assert!(written.is_empty(), "{backend}: the lab wrote through a planted link: {written:?}\n{said}");
        assert!(said.contains("hostile.links"), "{backend}: {said}");
    }
}

/// Every file under `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// Issue 41, item 5: a subject that writes a file past the run's largest-file limit (`RLIMIT_FSIZE`,
/// lowered to 1 MiB through the lab's environment) is refused the write — its writer killed by
/// `SIGXFSZ`, the file stopping at the limit — and the run fails an invariant that names the file. No
/// cgroup needed: run on every backend.
#[test]
fn a_subject_writing_past_its_largest_file_limit_is_refused_and_told() {
    for backend in backends() {
        let lab = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        assert!(probelab(lab.path(), &["init"]).0);
        // the size the file reached, written where the checks cannot miss it
        let toml = "[subjects.fills]\ncommand = [\"sh\", \"-c\", \"head -c 3145728 /dev/zero > big; wc -c < big > size.txt\"]\n";
        std::fs::write(lab.path().join("probelab.toml"), toml).unwrap_or_else(|e| panic!("{e}"));
        // the probe lowers its own limit ([limits] file_mb), as one may raise it
        let probe = "id = \"hostile.disk\"\nclaims = [\"BASH-5\"]\nabout = \"past the largest file\"\nsubjects = [\"fills\"]\n\
                     deadline_secs = 20\n[limits]\nfile_mb = 1\n[[turn]]\ntext = \"done\"\n[[check]]\nfile = \"size.txt\"\nequals = \"1048576\\n\"\n";
        std::fs::write(lab.path().join("probes/disk.toml"), probe).unwrap_or_else(|e| panic!("{e}"));
        let (code, said) = run_on(backend, lab.path(), &["run", "-j", "1", "--subject", "fills"]);
        assert!(
            said.contains("the subject reached its largest-file limit of 1 MiB (writes past it refused): "),
            "{backend}:\n{said}"
        );
        assert!(said.contains("big"), "{backend}: the file is named:\n{said}");
        assert!(!said.contains("FAIL check 1"), "{backend}: the file stopped at 1 MiB:\n{said}");
        assert_eq!(code, Some(1), "{backend}:\n{said}");
    }
}

/// Issue 41, item 4: what the project keeps out of its source — the entries its ignore rules leave out
/// (a `.env`, build output) and its `.git` — is hidden from a subject, on every backend, also where the
/// project itself is shown over the private /tmp (a project under /tmp: the hide comes after the show);
/// its tracked and untracked-but-not-ignored files stay readable.
#[test]
fn a_subject_never_sees_what_the_project_ignores_nor_its_git_directory() {
    for backend in backends() {
        let lab = tempfile::Builder::new().tempdir_in("/tmp").unwrap_or_else(|e| panic!("{e}"));
        let root = lab.path().canonicalize().unwrap_or_else(|e| panic!("{e}"));
        assert!(probelab(&root, &["init"]).0);
        // a git work tree as the ignore rules see one (no git command needed)
        std::fs::create_dir_all(root.join(".git")).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(root.join(".git/config"), "url = https://token-CANARY@example.test/r\n")
            .unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(root.join(".gitignore"), ".env\nsecret/\n").unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(root.join(".env"), "API_KEY=CANARY\n").unwrap_or_else(|e| panic!("{e}"));
        std::fs::create_dir_all(root.join("secret")).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(root.join("secret/key"), "CANARY\n").unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(root.join("notes.txt"), "new work\n").unwrap_or_else(|e| panic!("{e}"));
        let paths = [".env", "secret/key", ".git/config", "notes.txt", "probelab.toml"];
        let script = paths
            .iter()
            .map(|p| {
                format!("if cat {r}/{p} >/dev/null 2>&1; then echo read {p}; else echo not {p}; fi", r = root.display())
            })
            .collect::<Vec<_>>()
            .join("; ");
        let toml = format!("[subjects.peek]\ncommand = [\"sh\", \"-c\", \"({script}) > seen.txt\"]\n");
        std::fs::write(root.join("probelab.toml"), toml).unwrap_or_else(|e| panic!("{e}"));
        let probe = "id = \"hostile.project\"\nclaims = [\"BASH-5\"]\nabout = \"the project's private files\"\nsubjects = [\"peek\"]\n\
                     [[turn]]\ntext = \"done\"\n[[check]]\nfile = \"seen.txt\"\n\
                     equals = \"not .env\\nnot secret/key\\nnot .git/config\\nread notes.txt\\nread probelab.toml\\n\"\n";
        std::fs::write(root.join("probes/peek.toml"), probe).unwrap_or_else(|e| panic!("{e}"));
        // the subject never calls the stub (that invariant fails); the check of what it saw is the test
        let (_, said) = run_on(backend, &root, &["run", "-j", "1", "--subject", "peek", "--json"]);
        let check = said
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .flat_map(|v| v["verdicts"].as_array().cloned().unwrap_or_default())
            .find(|v| v["name"] == "check 1: file seen.txt");
        assert_eq!(check.map(|c| c["pass"].clone()), Some(serde_json::Value::Bool(true)), "{backend}:\n{said}");
        assert!(!said.contains("CANARY"), "{backend}:\n{said}");
    }
}

/// Issue 41, item 5: a command the built-in runs in the Bash tool's own sandbox (settings.sandbox,
/// bubblewrap started from the lab's process) keeps the run's limits: a write past the largest file is
/// refused there too, and the verdict names the file. (Needs bubblewrap, as that sandbox does.)
#[test]
fn a_command_in_the_bash_tool_s_own_sandbox_keeps_the_run_s_file_limit() {
    if probelab_runtime::confine::bwrap_on_path().is_none() {
        eprintln!("NOT RUN: no bubblewrap on PATH (the Bash tool's sandbox needs it)");
        return;
    }
    for backend in backends() {
        let lab = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        assert!(probelab(lab.path(), &["init"]).0);
        let probe = "id = \"hostile.sandboxed-file\"\nclaims = [\"BASH-3\"]\nabout = \"past the largest file, sandboxed\"\nrequires = [\"bwrap\"]\n\
                     [limits]\nfile_mb = 1\n[settings.sandbox]\nenabled = true\nallowUnsandboxedCommands = false\n[[turn]]\n\
                     tool_use = [{ name = \"Bash\", input = { command = \"head -c 3145728 /dev/zero > big; wc -c < big\", description = \"fill\" } }]\n\
                     [[turn]]\ntext = \"done\"\n[[check]]\nresult = 1\ncontains = \"1048576\"\n";
        std::fs::write(lab.path().join("probes/fill.toml"), probe).unwrap_or_else(|e| panic!("{e}"));
        let (code, said) = run_on(backend, lab.path(), &["run", "-j", "1", "--subject", "builtin"]);
        assert!(
            said.contains("the subject reached its largest-file limit of 1 MiB (writes past it refused): "),
            "{backend}:\n{said}"
        );
        assert!(!said.contains("check of result 1"), "{backend}: the file stopped at 1 MiB:\n{said}");
        assert_eq!(code, Some(1), "{backend}:\n{said}");
    }
}

/// Issue 41, item 5: a subject that fills its sandbox with many files, each under the largest-file
/// limit, is stopped once the sandbox passes its disk limit (the probe's `[limits] disk_mb`), and the
/// verdict says so; a probe over the project's cap is refused at its key before anything runs.
#[test]
fn a_subject_filling_its_sandbox_past_the_disk_limit_is_stopped_and_told() {
    for backend in backends() {
        let lab = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        assert!(probelab(lab.path(), &["init"]).0);
        // 200 files of 1 MiB, one every 50 ms: 10 s unless it is stopped
        let toml = "[subjects.fills]\ncommand = [\"sh\", \"-c\", \"i=0; while [ $i -lt 200 ]; do head -c 1048576 /dev/zero > f$i; i=$((i+1)); sleep 0.05; done\"]\n";
        std::fs::write(lab.path().join("probelab.toml"), toml).unwrap_or_else(|e| panic!("{e}"));
        let probe = |disk: u64| {
            format!(
                "id = \"hostile.fill\"\nclaims = [\"BASH-5\"]\nabout = \"past the sandbox's disk\"\nsubjects = [\"fills\"]\n\
                 deadline_secs = 60\n[limits]\ndisk_mb = {disk}\n[[turn]]\ntext = \"done\"\n"
            )
        };
        std::fs::write(lab.path().join("probes/fill.toml"), probe(8)).unwrap_or_else(|e| panic!("{e}"));
        let run = || run_on(backend, lab.path(), &["run", "-j", "1", "--keep", "--subject", "fills"]);
        let (code, said) = run();
        assert_eq!(code, Some(1), "{backend}:\n{said}");
        assert!(said.contains("the subject reached its disk limit of 8 MiB: its sandbox took "), "{backend}:\n{said}");
        assert!(said.contains("stopped at its disk limit of 8 MiB"), "{backend}:\n{said}");
        // stopped well before its 200 files
        let kept = said
            .lines()
            .find_map(|l| l.trim().strip_prefix("sandbox kept at "))
            .map(|l| l.split(' ').next().unwrap_or_default().to_string());
        let kept = std::path::PathBuf::from(kept.unwrap_or_else(|| panic!("{backend}: no kept sandbox:\n{said}")));
        let written = walk_count(&kept, "f");
        assert!((8..100).contains(&written), "{backend}: {written} files of 1 MiB written:\n{said}");
        let _ = std::fs::remove_dir_all(&kept);
        // over the project's cap (default: four times 4 GiB): refused at the key, nothing runs
        std::fs::write(lab.path().join("probes/fill.toml"), probe(16385)).unwrap_or_else(|e| panic!("{e}"));
        let (code, said) = run();
        assert_eq!(code, Some(2), "{backend}:\n{said}");
        assert!(
            said.contains("fill.toml:7:1: [limits] disk_mb = 16385 is over the project's cap of 16384"),
            "{backend}:\n{said}"
        );
    }
}

/// How many files under `dir` (any depth) have a name starting with `prefix` and digits after it.
fn walk_count(dir: &Path, prefix: &str) -> usize {
    let mut n = 0;
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() && !p.is_symlink() {
                todo.push(p);
            } else if let Some(rest) = e.file_name().to_str().and_then(|f| f.strip_prefix(prefix)) {
                n += usize::from(!rest.is_empty() && rest.chars().all(|c| c.is_ascii_digit()));
            }
        }
    }
    n
}

/// Issue 41, item 5: a subject that starts more processes at once, or takes more memory, than the
/// run's limits is stopped there by the kernel and the run fails an invariant that says which limit it
/// reached; the host feels nothing. (Limits need a cgroup hierarchy the lab can write: not run where
/// there is none.) The limits are lowered for the test through the lab's environment.
#[test]
fn a_subject_past_its_process_or_memory_limit_gets_a_verdict_that_says_so() {
    let writable = ["/sys/fs/cgroup/pids/cgroup.procs", "/sys/fs/cgroup/memory/cgroup.procs"]
        .iter()
        .all(|p| std::fs::OpenOptions::new().write(true).open(p).is_ok());
    if !writable {
        eprintln!("NOT RUN: no writable cgroup-v1 pids and memory hierarchies here");
        return;
    }
    for backend in backends() {
        let lab = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        assert!(probelab(lab.path(), &["init"]).0);
        let toml = "[subjects.forks]\ncommand = [\"sh\", \"-c\", \"i=0; while [ $i -lt 60 ]; do sleep 2 & i=$((i+1)); done; wait\"]\n\
                    [subjects.eats]\ncommand = [\"python3\", \"-c\", \"b = bytearray(400 << 20); print(len(b))\"]\n";
        std::fs::write(lab.path().join("probelab.toml"), toml).unwrap_or_else(|e| panic!("{e}"));
        let probe = "id = \"hostile.limits\"\nclaims = [\"BASH-5\"]\nabout = \"past the run's limits\"\nsubjects = [\"forks\", \"eats\"]\n\
                     deadline_secs = 20\n[[turn]]\ntext = \"done\"\n";
        std::fs::write(lab.path().join("probes/limits.toml"), probe).unwrap_or_else(|e| panic!("{e}"));
        for (subject, expect) in [
            ("forks", "the subject reached its limit of 20 processes at once ("),
            ("eats", "the subject reached its memory limit of 64 MiB ("),
        ] {
            let out = std::process::Command::new(env!("CARGO_BIN_EXE_probelab"))
                .args(["run", "-j", "1", "--subject", subject])
                .env(probelab_runtime::confine::BACKEND_ENV, backend)
                .env(harness::limits::PROCESSES_ENV, "20")
                .env(harness::limits::MEMORY_ENV, "64")
                .current_dir(lab.path())
                .output()
                .unwrap_or_else(|e| panic!("{e}"));
            let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
            assert!(
                said.contains("FAIL invariant: the subject stayed within its limits") || said.contains(expect),
                "{subject} on {backend}:\n{said}"
            );
            assert!(said.contains(expect), "{subject} on {backend}:\n{said}");
            assert_eq!(out.status.code(), Some(1), "{subject} on {backend}:\n{said}");
        }
    }
    let left: Vec<_> = std::fs::read_dir("/sys/fs/cgroup/memory")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| {
            // a run's group whose probelab is gone was left behind
            let pid = n.strip_prefix("probelab-run-").and_then(|r| r.split('-').next());
            pid.is_some_and(|p| !Path::new("/proc").join(p).exists())
        })
        .collect();
    assert!(left.is_empty(), "groups left: {left:?}");
}
