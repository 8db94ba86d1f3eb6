//! Every subject runs confined by default (issue 30, item 2): a probe whose Bash (and a hook) writes
//! outside its sandbox (/var/tmp, the sandbox's parent `$HOME/../..`) and connects to a loopback port
//! that is not one of its services changes nothing outside the sandbox, and the connection never
//! arrives — on the built-in subject, and on Claude Code 2.1.235 where it is installed; an imported
//! session replays the same way. Only loopback addresses.

use harness::lab::{run_probe, Layout};
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

/// Runs the probe on `subject`; asserts that the host saw nothing of it.
fn untouched(subject: &str) {
    let name = format!("probelab-confine-{}-{}", std::process::id(), subject.replace(['@', '.'], "-"));
    let outside = [
        PathBuf::from("/var/tmp").join(&name),
        PathBuf::from("/var/tmp").join(format!("{name}-hook")),
        std::env::temp_dir().canonicalize().unwrap_or_default().join(&name),
    ];
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
    listener.set_nonblocking(true).unwrap_or_else(|e| panic!("{e}"));
    let port = listener.local_addr().unwrap_or_else(|e| panic!("{e}")).port();
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.path().join("host-untouched.toml");
    let text = probe(&name, port);
    std::fs::write(&path, &text).unwrap_or_else(|e| panic!("{e}"));
    let probe = harness::probe::parse(&path, &text).unwrap_or_else(|e| panic!("{e}"));
    let mut layout = Layout::repo();
    layout.golden = dir.path().join("golden");
    layout.engine = PathBuf::from(env!("CARGO_BIN_EXE_probelab"));
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap_or_else(|e| panic!("{e}"));
    let report = rt.block_on(run_probe(&probe, subject, &layout, false));
    let landed: Vec<&Path> = outside.iter().map(PathBuf::as_path).filter(|p| p.exists()).collect();
    for p in &landed {
        let _ = std::fs::remove_file(p);
    }
    let connected = listener.accept().is_ok();
    let report = report.unwrap_or_else(|e| panic!("{subject}: {e}"));
    assert!(landed.is_empty(), "{subject}: the subject wrote outside its sandbox: {landed:?}");
    assert!(!connected, "{subject}: the subject reached 127.0.0.1:{port}, which is no service of the probe");
    assert!(report.passed(), "{subject}: {:?}\n{}", report.failures(), report.transcript);
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
    for subject in ["builtin"].into_iter().chain(installed.then_some(cc.as_str())) {
        // the recorded result (the file's text) no longer comes back: the run fails its check, the host
        // is what counts
        let (_, said) = probelab(lab, &["run", "-j", "1", "--subject", subject]);
        let landed = outside.exists();
        let _ = std::fs::remove_file(&outside);
        assert!(!landed, "{subject}: the replay wrote {}:\n{said}", outside.display());
        assert!(said.contains("Read-only file system"), "{subject}: {said}");
    }
}

#[test]
fn without_bubblewrap_a_probe_is_skipped_unless_it_says_why_it_runs_unconfined() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let empty = tmp.path().join("bin");
    std::fs::create_dir(&empty).unwrap_or_else(|e| panic!("{e}"));
    let probe = tmp.path().join("unconfined.toml");
    let text = "id = \"x.unconfined\"\nclaims = [\"READ-1\"]\nabout = \"a Read\"\n[subject]\nunconfined = \"a test of the opt-out\"\n\
                [fixture]\nfiles.\"f.txt\" = \"a\\n\"\n[[turn]]\ntool_use = [{ name = \"Read\", input = { file_path = \"{cwd}/f.txt\" } }]\n\
                [[turn]]\ntext = \"done\"\n";
    std::fs::write(&probe, text).unwrap_or_else(|e| panic!("{e}"));
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let golden = tmp.path().join("golden");
    // no bwrap on PATH: the confined probe is skipped, saying what it needs; the one that opted out runs
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_probelab"))
        .args(["run", "--bless", "-j", "1", "--golden"])
        .arg(&golden)
        .arg(&probe)
        .arg("probes/read/window.toml")
        .current_dir(&repo)
        .env("PATH", &empty)
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(said.contains("skip  read.window (needs bubblewrap"), "{said}");
    assert!(said.contains("bless x.unconfined"), "{said}");
    assert!(out.status.success(), "{said}");
}
