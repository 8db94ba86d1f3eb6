//! Subjects (issue 26): an unknown `--subject` is a usage error listing the subjects there are; command
//! subjects from `probelab.toml` that never call the stub, crash or hang get a clear verdict within the
//! deadline + 2 s and leave no process and no sandbox behind; a file check never reads through a link
//! a subject left pointing out of the sandbox.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().unwrap_or_else(|e| panic!("{e}"))
}

/// `probelab ARGS` in `dir`, its temp files (sandboxes) in `tmp`.
fn probelab(dir: &Path, tmp: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_probelab"))
        .args(args)
        .current_dir(dir)
        .env("TMPDIR", tmp)
        .output()
        .unwrap_or_else(|e| panic!("probelab {args:?}: {e}"))
}

use crate::common::said;

/// A marker unique among the tests running side by side and between runs (digits: it is put in a
/// `sleep`'s seconds).
fn marker() -> String {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().subsec_nanos();
    format!("{}{n}{t:09}", std::process::id())
}

use crate::common::marked;

/// A project in a temp dir with `toml` as its probelab.toml, `probe` as probes/p.toml, and a temp dir
/// of its own for the run's sandboxes.
struct Project {
    _dir: tempfile::TempDir,
    root: PathBuf,
    tmp: PathBuf,
}

fn project(toml: &str, probe: &str) -> Project {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let root = dir.path().canonicalize().unwrap_or_else(|e| panic!("{e}"));
    let tmp = root.join("tmp");
    for d in [root.join("probes"), tmp.clone()] {
        std::fs::create_dir_all(d).unwrap_or_else(|e| panic!("{e}"));
    }
    std::fs::write(root.join("probelab.toml"), toml).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(root.join("probes/p.toml"), probe).unwrap_or_else(|e| panic!("{e}"));
    Project { _dir: dir, root, tmp }
}

#[test]
fn an_unknown_subject_is_a_usage_error_that_lists_the_subjects() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    // this repository: before, every probe was skipped and the run passed (exit 0)
    let out = probelab(&repo(), tmp.path(), &["run", "--subject", "myruntime", "probes/read"]);
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unknown subject \"myruntime\"; the subjects are:"), "{}", said(&out));
    assert!(err.contains("builtin") && err.contains("claude-code@V"), "{}", said(&out));
    assert!(out.stdout.is_empty(), "nothing ran: {}", said(&out));
    let out = probelab(&repo(), tmp.path(), &["run", "--subject", "claude-code", "probes/read"]);
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    assert!(said(&out).contains("it needs a version: claude-code@VERSION"), "{}", said(&out));
    // a built-in profile of a version that is not one is refused before anything runs
    let out = probelab(&repo(), tmp.path(), &["run", "--subject", "builtin@2.1.x", "probes/read"]);
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    assert!(said(&out).contains("not a Claude Code version: \"2.1.x\""), "{}", said(&out));
    assert!(out.stdout.is_empty(), "nothing ran: {}", said(&out));
    // a project's command subjects are among those listed, and `list` shows them
    let p = project(
        "[subjects.mine]\ncommand = [\"true\"]\n",
        "id = \"p\"\nclaims = [\"READ-1\"]\nabout = \"x\"\n[[turn]]\ntext = \"done\"\n",
    );
    let out = probelab(&p.root, &p.tmp, &["run", "--subject", "myne"]);
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    let listed = said(&out);
    assert!(listed.contains("  mine             command true (") && listed.contains("probelab.toml:1:"), "{listed}");
    let out = probelab(&p.root, &p.tmp, &["list"]);
    assert!(said(&out).contains("  mine "), "{}", said(&out));
    // the probe that names no subjects says what it runs on, as the skeleton of `new` does
    assert!(said(&out).contains(" builtin "), "{}", said(&out));
    assert!(probelab(&p.root, &p.tmp, &["new", "x/y"]).status.success());
    let skeleton = std::fs::read_to_string(p.root.join("probes/x/y.toml")).unwrap_or_else(|e| panic!("{e}"));
    let default = format!("# default: {}", harness::probe::DEFAULT_SUBJECTS);
    assert!(skeleton.contains(&default), "{skeleton}");
}

const AGENTS: &str = r#"
[subjects.quiet]                 # exits 0 without a request
command = ["sh", "-c", "exit 0"]
[subjects.crash]                 # exits 3 with a complaint on stderr
command = ["sh", "-c", "echo cannot reach the model at $ANTHROPIC_BASE_URL >&2; exit 3"]
env = { ANTHROPIC_BASE_URL = "{base_url}" }
[subjects.hang]                  # never ends: a child in its group, one in a session of its own
command = ["sh", "-c", "sleep 600.MARKER & setsid sleep 601.MARKER & exec sleep 602.MARKER"]
"#;

const ONE_READ: &str = r#"
id = "agent.one-read"
claims = ["READ-1"]
about = "one Read"
subjects = ["quiet", "crash", "hang"]
deadline_secs = 1
[fixture]
files."f.txt" = "x\n"
[[turn]]
tool_use = [{ name = "Read", input = { file_path = "{cwd}/f.txt" } }]
[[turn]]
text = "done"
"#;

#[test]
fn a_command_subject_that_never_calls_crashes_or_hangs_gets_a_clear_verdict_and_leaves_nothing() {
    let m = marker();
    let p = project(&AGENTS.replace("MARKER", &m), ONE_READ);
    let mut verdicts = Vec::new();
    for (subject, expect) in [
        ("quiet", "quiet never called the stub (no request came)"),
        ("crash", "crash exited with 3; its stderr ends:\\ncannot reach the model at http://127.0.0.1:"),
        ("hang", "hang passed the deadline of 1s: killed, with everything it started"),
    ] {
        let out = probelab(&p.root, &p.tmp, &["run", "--subject", subject, "--json"]);
        assert_eq!(out.status.code(), Some(1), "{}", said(&out));
        let stdout = String::from_utf8_lossy(&out.stdout);
        let line: serde_json::Value = stdout
            .lines()
            .find_map(|l| serde_json::from_str::<serde_json::Value>(l).ok().filter(|v| v["probe"] == "agent.one-read"))
            .unwrap_or_else(|| panic!("no line of the probe: {}", said(&out)));
        assert_eq!(line["status"], "fail", "{line}");
        assert!(line["detail"].as_str().unwrap_or_default().contains(expect), "{subject}: {expect:?} not in {line}");
        // the verdict came within the deadline + 2 s (the probe's own time, from its sandbox to its verdict)
        let ms = line["duration_ms"].as_f64().unwrap_or(f64::MAX);
        assert!(ms <= 3000.0, "{subject}: the verdict took {ms} ms, past the deadline of 1 s + 2 s");
        verdicts.push((subject, ms));
    }
    assert!(marked(&m).is_empty(), "left running: {:?}", marked(&m));
    let left: Vec<_> = std::fs::read_dir(&p.tmp).into_iter().flatten().flatten().map(|e| e.path()).collect();
    assert!(left.is_empty(), "left in the temp dir: {left:?}");
    eprintln!("verdicts (probe ms): {verdicts:?}");
}

#[test]
fn what_keep_writes_never_goes_through_a_link_the_subject_left() {
    let host = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let (transcript, record) = (host.path().join("transcript"), host.path().join("record"));
    for f in [&transcript, &record] {
        std::fs::write(f, "host file\n").unwrap_or_else(|e| panic!("{e}"));
    }
    let command = format!(
        "ln -s {} ../transcript.txt && ln -s {} ../record.jsonl && ln -s {} ../failures.json",
        transcript.display(),
        record.display(),
        record.display()
    );
    let probe = format!(
        "id = \"agent.links\"\nclaims = [\"BASH-1\"]\nabout = \"links where --keep writes\"\n[[turn]]\n\
         tool_use = [{{ name = \"Bash\", input = {{ command = {command:?}, description = \"links\" }} }}]\n\
         [[turn]]\ntext = \"done\"\n[[check]]\nresult = 1\nequals = \"not this\"\n"
    );
    let p = project("", &probe);
    let out = probelab(&p.root, &p.tmp, &["run", "--keep"]);
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    for f in [&transcript, &record] {
        let text = std::fs::read_to_string(f).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(text, "host file\n", "--keep wrote through the link into {}", f.display());
    }
    let kept =
        std::fs::read_dir(&p.tmp).into_iter().flatten().flatten().map(|e| e.path()).find(|d| d.join("work").is_dir());
    let kept = kept.unwrap_or_else(|| panic!("no kept sandbox: {}", said(&out)));
    let written = std::fs::read_to_string(kept.join("transcript.txt")).unwrap_or_default();
    assert!(written.contains("probe: agent.links"), "{written}");
    assert!(kept.join("failures.json").is_file() && kept.join("record.jsonl").is_file());
}

#[test]
fn a_file_check_never_reads_through_a_link_out_of_the_sandbox() {
    // a host file the probe's subject points a link at (the subject is untrusted: it may leave one)
    let host = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let secret = format!("host-secret-{}", marker());
    let target = host.path().join("hostname");
    std::fs::write(&target, format!("{secret}\n")).unwrap_or_else(|e| panic!("{e}"));
    let probe = format!(
        r#"
id = "agent.link-out"
claims = ["READ-1"]
about = "a link the subject left, pointing at a host file"
[[fixture.fault]]
kind = "symlink"
path = "link"
target = "{}"
[[turn]]
text = "done"
[[check]]
file = "link"
contains = "anything"
[[check]]
file = "*ink"
equals = "anything"
"#,
        target.display()
    );
    let p = project("", &probe);
    for args in [&["run"][..], &["run", "--json"]] {
        let out = probelab(&p.root, &p.tmp, args);
        assert_eq!(out.status.code(), Some(1), "{}", said(&out));
        assert!(!said(&out).contains(&secret), "the host file's content is shown:\n{}", said(&out));
        assert!(said(&out).contains("(outside the sandbox): not followed"), "{}", said(&out));
    }
}

#[test]
fn a_command_subject_goes_with_its_run_when_the_run_is_interrupted() {
    let m = marker();
    let p = project(
        &format!(
            "[subjects.slow]\ncommand = [\"sh\", \"-c\", \"sleep 600.{m} & setsid sleep 601.{m} & touch {{sandbox}}/ready-{m}; exec sleep 602.{m}\"]\n"
        ),
        "id = \"agent.slow\"\nclaims = [\"READ-1\"]\nabout = \"a subject that runs for minutes\"\nsubjects = [\"slow\"]\n\
         deadline_secs = 600\n[[turn]]\ntext = \"done\"\n",
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_probelab"))
        .args(["run", "--subject", "slow"])
        .current_dir(&p.root)
        .env("TMPDIR", &p.tmp)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    // the subject says it runs (a file in its sandbox: it may write nowhere else); bounded
    let ready = || {
        std::fs::read_dir(&p.tmp).into_iter().flatten().flatten().any(|e| e.path().join(format!("ready-{m}")).exists())
    };
    let until = std::time::Instant::now() + std::time::Duration::from_secs(90);
    while !ready() && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(ready(), "the subject never started");
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap_or_else(|e| panic!("{e}"));
    let status = child.wait().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(status.code(), Some(130), "{status:?}");
    let until = std::time::Instant::now() + std::time::Duration::from_secs(15);
    while !marked(&m).is_empty() && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(marked(&m).is_empty(), "left running: {:?}", marked(&m));
    let left: Vec<_> =
        std::fs::read_dir(&p.tmp).into_iter().flatten().flatten().map(|e| e.path()).filter(|d| d.is_dir()).collect();
    assert!(left.is_empty(), "sandboxes left: {left:?}");
}

/// `[subject.agent.NAME]` (issue 42): a command subject gets the probe's arguments after its command and
/// the probe's environment for it, and no other subject's; what the project's table sets (its endpoint,
/// the stub) wins over what the probe says.
#[test]
fn a_probe_s_options_for_a_command_subject_reach_that_subject_alone() {
    let toml = r#"
[subjects.told]
command = ["sh", "-c", "echo \"arg=$0 x=$PROBE_X url=$ANTHROPIC_BASE_URL\" >&2; exit 3"]
env = { ANTHROPIC_BASE_URL = "{base_url}" }
[subjects.other]
command = ["sh", "-c", "echo \"arg=$0 x=$PROBE_X\" >&2; exit 3"]
"#;
    let probe = r#"
id = "agent.options"
claims = ["READ-1"]
about = "options for one subject"
subjects = ["told", "other"]
deadline_secs = 5
[subject.agent.told]
args = ["from-the-probe"]
env = { PROBE_X = "x-value", ANTHROPIC_BASE_URL = "http://elsewhere.invalid" }
[[turn]]
text = "done"
"#;
    let p = project(toml, probe);
    let detail = |subject: &str| {
        let out = probelab(&p.root, &p.tmp, &["run", "--subject", subject, "--json"]);
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        let line: serde_json::Value = stdout
            .lines()
            .find_map(|l| serde_json::from_str::<serde_json::Value>(l).ok().filter(|v| v["probe"] == "agent.options"))
            .unwrap_or_else(|| panic!("no line of the probe: {}", said(&out)));
        line["detail"].as_str().unwrap_or_default().to_string()
    };
    let told = detail("told");
    assert!(told.contains("arg=from-the-probe x=x-value url=http://127.0.0.1:"), "{told}");
    let other = detail("other");
    assert!(other.contains("arg=sh x=") && !other.contains("x-value") && !other.contains("from-the-probe"), "{other}");
}
