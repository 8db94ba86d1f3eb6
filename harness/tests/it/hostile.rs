//! The lab's own surfaces under hostile or careless input (issue 30): what a cloned repository or a
//! typo can put in front of `probelab` — names that climb out of probes/, links in place of goldens and
//! evidence, link cycles and FIFOs among the probes, /dev/zero as a session, absurd `-j` — never makes
//! it write outside the project, hang, or panic. Each command runs under a bound: a hang fails the test.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `probelab ARGS` in `dir`, killed (and the test failed) if it has not ended within 60 s.
fn probelab(dir: &Path, args: &[&str]) -> Output {
    probelab_env(dir, args, &[])
}

/// [`probelab`] with more environment.
fn probelab_env(dir: &Path, args: &[&str], env: &[(&str, &Path)]) -> Output {
    let child = Command::new(env!("CARGO_BIN_EXE_probelab"))
        .args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(out) => out.unwrap_or_else(|e| panic!("{e}")),
        Err(_) => {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), nix::sys::signal::Signal::SIGKILL);
            panic!("probelab {args:?} hung");
        }
    }
}

fn said(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn write(p: &Path, text: &str) {
    if let Some(d) = p.parent() {
        std::fs::create_dir_all(d).unwrap_or_else(|e| panic!("{e}"));
    }
    std::fs::write(p, text).unwrap_or_else(|e| panic!("{e}"));
}

/// A project in a temp dir (`init`), with the lab's `read.window` probe and its golden.
fn lab() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    assert!(probelab(d.path(), &["init"]).status.success());
    let text = std::fs::read_to_string(repo().join("probes/read/window.toml")).unwrap_or_else(|e| panic!("{e}"));
    write(&d.path().join("probes/window.toml"), &text);
    d
}

fn mkfifo(p: &Path) {
    let ok = Command::new("mkfifo").arg(p).status().is_ok_and(|s| s.success());
    assert!(ok, "mkfifo {}", p.display());
}

#[test]
fn new_and_import_write_under_probes_only() {
    let outer = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let root = outer.path().join("a/b");
    std::fs::create_dir_all(&root).unwrap_or_else(|e| panic!("{e}"));
    assert!(probelab(&root, &["init"]).status.success());
    let abs = outer.path().join("abs");
    for name in ["../../x", "../../../x", abs.to_str().unwrap_or_default(), "a/../../../y", ""] {
        let out = probelab(&root, &["new", name]);
        assert_eq!(out.status.code(), Some(2), "new {name:?}: {}", said(&out));
        assert!(said(&out).contains("is not a relative name under probes/"), "{}", said(&out));
    }
    let session = repo().join("fixtures/sessions/claude-code-2.1.235.jsonl");
    for name in ["../x", "../../../x", abs.to_str().unwrap_or_default()] {
        let out = probelab(&root, &["import", session.to_str().unwrap_or_default(), name]);
        assert_eq!(out.status.code(), Some(2), "import {name:?}: {}", said(&out));
    }
    let written: Vec<_> = ["a/x.toml", "x.toml", "abs.toml", "a/b/x.toml", "y.toml", "a/y.toml"]
        .iter()
        .map(|f| outer.path().join(f))
        .filter(|p| p.exists())
        .collect();
    assert!(written.is_empty(), "written outside probes/: {written:?}");
    assert!(probelab(&root, &["new", "ok/one"]).status.success());
    assert!(root.join("probes/ok/one.toml").is_file());
}

#[test]
fn import_refuses_what_is_not_a_regular_file_and_checks_its_own_output() {
    let d = lab();
    let out = probelab(d.path(), &["import", "/dev/zero", "z"]);
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    assert!(said(&out).contains("not a regular file"), "{}", said(&out));
    let fifo = d.path().join("s.jsonl");
    mkfifo(&fifo);
    let out = probelab(d.path(), &["import", fifo.to_str().unwrap_or_default(), "f"]);
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    // a session whose tool input `run` would refuse ({zz} is no placeholder): nothing written
    let session = std::fs::read_to_string(repo().join("fixtures/sessions/claude-code-2.1.235.jsonl"))
        .unwrap_or_else(|e| panic!("{e}"));
    let cwd = session.split("\"cwd\":\"").nth(1).and_then(|r| r.split('"').next()).unwrap_or_default().to_string();
    assert!(!cwd.is_empty());
    let odd = d.path().join("odd.jsonl");
    write(&odd, &session.replace(&format!("{cwd}/f.txt"), "{zz}/f.txt"));
    let out = probelab(d.path(), &["import", odd.to_str().unwrap_or_default(), "odd"]);
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    assert!(said(&out).contains("does not parse"), "{}", said(&out));
    assert!(!d.path().join("probes/odd.toml").exists());
}

#[test]
fn link_cycles_and_fifos_among_the_probes_end_in_an_answer() {
    let d = lab();
    let probes = d.path().join("probes");
    std::os::unix::fs::symlink(".", probes.join("l1")).unwrap_or_else(|e| panic!("{e}"));
    std::os::unix::fs::symlink(".", probes.join("l2")).unwrap_or_else(|e| panic!("{e}"));
    let out = probelab(d.path(), &["list"]);
    assert!(out.status.success(), "{}", said(&out));
    assert_eq!(said(&out).matches("read.window ").count(), 1, "{}", said(&out));
    let out = probelab(d.path(), &["review"]);
    assert!(out.status.success(), "{}", said(&out));
    mkfifo(&probes.join("pipe.toml"));
    let out = probelab(d.path(), &["list"]);
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    assert!(said(&out).contains("pipe.toml:1:1: cannot read: not a regular file"), "{}", said(&out));
    std::fs::remove_file(probes.join("pipe.toml")).unwrap_or_else(|e| panic!("{e}"));
    // a FIFO among goldens diff compares
    for side in ["l", "r"] {
        std::fs::create_dir_all(d.path().join(side)).unwrap_or_else(|e| panic!("{e}"));
    }
    mkfifo(&d.path().join("l/read.window.snap"));
    write(&d.path().join("r/read.window.snap"), "x\n");
    let out = probelab(d.path(), &["diff", "l", "r"]);
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    assert!(said(&out).contains("read.window.snap: not a regular file"), "{}", said(&out));
    // a FIFO as the project file: refused, not waited on
    std::fs::remove_file(d.path().join("probelab.toml")).unwrap_or_else(|e| panic!("{e}"));
    mkfifo(&d.path().join("probelab.toml"));
    let out = probelab(d.path(), &["list"]);
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    assert!(said(&out).contains("not a regular file"), "{}", said(&out));
}

#[test]
fn goldens_and_durations_that_are_links_are_replaced_not_written_through() {
    let d = lab();
    let outside = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let victim = |n: &str| {
        let p = outside.path().join(n);
        write(&p, "precious\n");
        p
    };
    let golden = d.path().join("golden/builtin/read.window.snap");
    let durations = d.path().join("target/probelab/builtin/durations.json");
    let (g, t) = (victim("g"), victim("t"));
    for (link, target) in [(&golden, &g), (&durations, &t)] {
        std::fs::create_dir_all(link.parent().unwrap_or(Path::new("."))).unwrap_or_else(|e| panic!("{e}"));
        std::os::unix::fs::symlink(target, link).unwrap_or_else(|e| panic!("{e}"));
    }
    // -j far beyond any machine: clamped, not 20,000 threads
    let out = probelab(d.path(), &["run", "--bless", "-j", "20000"]);
    assert!(out.status.success(), "{}", said(&out));
    assert!(said(&out).contains("-j 256"), "{}", said(&out));
    for p in [&g, &t] {
        assert_eq!(std::fs::read_to_string(p).unwrap_or_default(), "precious\n", "{} written through", p.display());
    }
    assert!(std::fs::symlink_metadata(&golden).is_ok_and(|m| m.is_file()));
    assert!(std::fs::read_to_string(&golden).unwrap_or_default().contains("probe: read.window"));
    assert!(std::fs::symlink_metadata(&durations).is_ok_and(|m| m.is_file()));
    // a subject named like a path: nothing of the run lands outside the project's out/
    let _ = probelab(d.path(), &["run", "--subject", "../../../escaped"]);
    let stray: Vec<_> = ["escaped", "../escaped"].iter().map(|p| d.path().join(p)).filter(|p| p.exists()).collect();
    assert!(stray.is_empty(), "written outside: {stray:?}");
    // a golden directory that is a link out of the golden root: refused
    std::fs::remove_dir_all(d.path().join("golden/builtin")).unwrap_or_else(|e| panic!("{e}"));
    std::os::unix::fs::symlink(outside.path(), d.path().join("golden/builtin")).unwrap_or_else(|e| panic!("{e}"));
    let out = probelab(d.path(), &["run", "--bless"]);
    assert!(!out.status.success(), "{}", said(&out));
    assert!(!outside.path().join("read.window.snap").exists());
}

#[test]
fn gc_blobs_keeps_what_pending_and_nested_goldens_name_and_survives_any_name() {
    let d = lab();
    assert!(probelab(d.path(), &["run", "--bless"]).status.success());
    let blobs = d.path().join("golden/blobs");
    let golden = d.path().join("golden/builtin/read.window.snap");
    let text = std::fs::read_to_string(&golden).unwrap_or_else(|e| panic!("{e}"));
    let before: Vec<_> = std::fs::read_dir(&blobs).into_iter().flatten().flatten().map(|e| e.path()).collect();
    assert!(!before.is_empty());
    // the only golden naming them moves: half to a pending .snap.new, half to a golden one level deeper
    std::fs::remove_file(&golden).unwrap_or_else(|e| panic!("{e}"));
    write(&d.path().join("golden/builtin/read.window.snap.new"), &text);
    write(&d.path().join("golden/claude-code@2.1.235/deeper/x.snap"), &text);
    // a name whose 12th byte is inside a character (byte slicing panicked on it)
    write(&blobs.join("0123456789aé-not-a-blob.json"), "x");
    let out = probelab(d.path(), &["gc-blobs"]);
    assert!(out.status.success(), "{}", said(&out));
    assert!(said(&out).contains("removed 0 unreferenced blob(s)"), "{}", said(&out));
    for b in &before {
        assert!(b.exists(), "{} removed although a golden names it", b.display());
    }
}

#[test]
fn an_exec_probe_ends_at_its_deadline() {
    let d = lab();
    let probe = "id = \"slow\"\nclaims = [\"GREP-1\"]\nabout = \"a\"\ndeadline_secs = 1\n\
                 [[exec]]\nargv = [\"sleep\", \"5\"]\n[[check]]\nexec = 1\nexit = 0\n";
    write(&d.path().join("probes/slow.toml"), probe);
    let out = probelab(d.path(), &["run", "probes/slow.toml"]);
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    assert!(said(&out).contains("was killed at its deadline"), "{}", said(&out));
}

#[test]
fn an_exec_whose_command_cannot_start_is_an_error_of_the_run_not_a_record_of_signal_0() {
    // measure writes no report when it cannot start the command: the record read as `signal 0` before
    let d = lab();
    let probe = "id = \"gone\"\nclaims = [\"GREP-1\"]\nabout = \"a\"\n\
                 [[exec]]\nargv = [\"./no-such-command\"]\n[[check]]\nexec = 1\nexit = 127\n";
    write(&d.path().join("probes/gone.toml"), probe);
    let out = probelab(d.path(), &["run", "probes/gone.toml"]);
    assert_ne!(out.status.code(), Some(0), "{}", said(&out));
    assert!(said(&out).contains("exec 1: probelab measure left no report "), "{}", said(&out));
    assert!(said(&out).contains("(probelab measure: cannot run ./no-such-command: "), "{}", said(&out));
    assert!(!said(&out).contains("signal 0"), "{}", said(&out));
}

#[test]
fn a_fake_lsp_that_cannot_write_its_trace_says_so_on_stderr() {
    // the trace is what LSP probes check; its write errors were dropped without a word. A file size limit
    // of 0 (SIGXFSZ ignored) fails every write to the trace; stderr is a pipe, which has no such limit
    let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let trace = d.path().join("trace.jsonl");
    write(&trace, "");
    let out = Command::new("sh")
        .args(["-c", "trap '' XFSZ; ulimit -f 0; exec \"$0\" fake-lsp --trace \"$1\""])
        .arg(env!("CARGO_BIN_EXE_probelab"))
        .arg(&trace)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(
        err.matches(&format!("fake-lsp: cannot write the trace {}: ", trace.display())).count(),
        1,
        "said once, the trace closed after it: {err}"
    );
    assert!(err.contains("no more lines are written to it"), "{err}");
    // a device as the trace: read as a file it never ended (`/dev/full` gives zeros forever)
    let out = Command::new("timeout")
        .args(["20", env!("CARGO_BIN_EXE_probelab"), "fake-lsp", "--trace", "/dev/full"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("fake-lsp: cannot read the trace /dev/full: not a regular file"), "{err}");
    assert!(err.contains("fake-lsp: cannot write the trace /dev/full: "), "{err}");
}

#[test]
fn probe_file_mistakes_found_before_the_run_exit_2_with_a_place() {
    let d = lab();
    let text = std::fs::read_to_string(d.path().join("probes/window.toml")).unwrap_or_default();
    // ids that differ only in case name one golden file on a case-insensitive disk
    write(&d.path().join("probes/upper.toml"), &text.replace("id = \"read.window\"", "id = \"Read.Window\""));
    let out = probelab(d.path(), &["run"]);
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    assert!(said(&out).contains("ids are unique, case aside"), "{}", said(&out));
    std::fs::remove_file(d.path().join("probes/upper.toml")).unwrap_or_else(|e| panic!("{e}"));
    write(
        &d.path().join("probes/dir.toml"),
        &text.replace("id = \"read.window\"", "id = \"dir\"").replace("[fixture]\n", "[fixture]\ndir = \"nowhere\"\n"),
    );
    let out = probelab(d.path(), &["run"]);
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    assert!(
        said(&out).contains("dir.toml:") && said(&out).contains("fixture dir \"nowhere\" is not a directory"),
        "{}",
        said(&out)
    );
}

#[test]
fn the_shipped_probes_that_climb_out_of_the_sandbox_do_not_depend_on_tmpdir() {
    // sandboxes under a TMPDIR far deeper than /tmp: the `..` climbs still end at /
    let base = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let deep = base.path().join("a/b/c/d/e/f");
    std::fs::create_dir_all(&deep).unwrap_or_else(|e| panic!("{e}"));
    let probes = ["probes/read/sandbox.toml", "probes/apply-patch/refusals.toml"];
    let out = probelab_env(&repo(), &[&["run"], &probes[..]].concat(), &[("TMPDIR", &deep)]);
    assert!(out.status.success(), "{}", said(&out));
    assert!(said(&out).contains("2 passed, 0 failed"), "{}", said(&out));
}

#[test]
fn a_sandbox_a_chmod_fault_closed_is_removed_for_a_user_who_is_not_root() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    if !nix::unistd::geteuid().is_root() {
        println!("skipped: dropping to another user needs root");
        return;
    }
    let open = |p: &Path, mode: u32| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap_or_else(|e| panic!("{e}"))
    };
    let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    open(d.path(), 0o755);
    let tmp = d.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap_or_else(|e| panic!("{e}"));
    open(&tmp, 0o1777);
    let probe = d.path().join("closed.toml");
    write(
        &probe,
        "id = \"closed\"\nclaims = [\"READ-1\"]\nabout = \"a\"\n[fixture]\nfiles.\"shut/f.txt\" = \"x\"\n\
         [[fixture.fault]]\nkind = \"chmod\"\npath = \"shut\"\nmode = \"0000\"\n[[turn]]\ntext = \"done\"\n",
    );
    open(&probe, 0o644);
    std::fs::create_dir(d.path().join("probes")).unwrap_or_else(|e| panic!("{e}"));
    // as nobody: the run's sandbox (with its directory at 0000) is gone when the run is
    let out = Command::new(env!("CARGO_BIN_EXE_probelab"))
        .args(["run", probe.to_str().unwrap_or_default()])
        .current_dir(d.path())
        .env("TMPDIR", &tmp)
        .uid(65534)
        .gid(65534)
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(said(&out).contains("closed"), "the probe did not run: {}", said(&out));
    let left: Vec<_> = std::fs::read_dir(&tmp).into_iter().flatten().flatten().map(|e| e.path()).collect();
    assert!(left.is_empty(), "left behind: {left:?}\n{}", said(&out));
}

#[test]
fn a_fifo_the_subject_leaves_in_place_of_a_checked_file_is_a_failure_not_a_hang() {
    let d = lab();
    let probe = "id = \"fifo\"\nclaims = [\"BASH-1\"]\nabout = \"a\"\n[fixture]\nfiles.\"f.txt\" = \"x\"\n\
                 [[turn]]\ntool_use = [{ name = \"Bash\", input = { command = \"rm f.txt && mkfifo f.txt\" } }]\n\
                 [[turn]]\ntext = \"done\"\n[[check]]\nfile = \"f.txt\"\ncontains = \"x\"\n";
    write(&d.path().join("probes/fifo.toml"), probe);
    let out = probelab(d.path(), &["run", "probes/fifo.toml"]);
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    assert!(said(&out).contains("cannot read f.txt: not a regular file"), "{}", said(&out));
    // nor does a FIFO among a fixture dir's files stop the copy
    mkfifo(&d.path().join("fixtures/p"));
    write(
        &d.path().join("probes/fixdir.toml"),
        &probe.replace("id = \"fifo\"", "id = \"fixdir\"").replace("[fixture]\n", "[fixture]\ndir = \".\"\n"),
    );
    let out = probelab(d.path(), &["run", "probes/fixdir.toml"]);
    assert_ne!(out.status.code(), Some(0), "{}", said(&out));
    assert!(said(&out).contains("is not a regular file"), "{}", said(&out));
}

/// Issue 41, item 7: what a subject sends never reaches the terminal raw — a tool result holding
/// escape sequences (set the window's title, clear the screen), shown in a failed check's diff, is
/// printed with its control characters escaped.
#[test]
fn a_subjects_escape_sequences_are_printed_escaped() {
    let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    assert!(probelab(d.path(), &["init"]).status.success());
    let text = "id = \"hostile.terminal\"\nclaims = [\"BASH-1\"]\nabout = \"escape sequences in a result\"\nsubjects = [\"builtin\"]\n\
                [[turn]]\ntool_use = [{ name = \"Bash\", input = { command = \"printf '\\\\033]0;pwned\\\\007\\\\033[2Jtext'\", description = \"esc\" } }]\n\
                [[turn]]\ntext = \"done\"\n[[check]]\nresult = 1\nequals = \"something else\"\n";
    write(&d.path().join("probes/terminal.toml"), text);
    let out = probelab(d.path(), &["run", "-j", "1", "--subject", "builtin"]);
    let all = said(&out);
    assert!(all.contains("\\x1b]0;pwned\\x07\\x1b[2Jtext"), "the result is shown, escaped:\n{all}");
    assert!(
        !all.contains('\u{1b}') && !all.contains('\u{7}'),
        "a raw control character reached the terminal:\n{all:?}"
    );
    assert_eq!(out.status.code(), Some(1), "{all}");
}

/// Issue 41, item 2: a `python3:MODULE` requirement is looked up without running the module — a module
/// of that name in the project (which a plain `python3 -c "import M"` run there would import) never
/// runs on the host.
#[test]
fn a_python_requirement_never_imports_project_code() {
    let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    assert!(probelab(d.path(), &["init"]).status.success());
    let marker = d.path().join("imported");
    write(&d.path().join("plantedmod.py"), &format!("open({:?}, 'w').write('x')\n", marker.display().to_string()));
    let text = "id = \"hostile.requires\"\nclaims = [\"READ-1\"]\nabout = \"a requirement named after project code\"\nsubjects = [\"builtin\"]\n\
                requires = [\"python3:plantedmod\"]\n[[turn]]\ntext = \"done\"\n";
    write(&d.path().join("probes/requires.toml"), text);
    let out = probelab(d.path(), &["run", "-j", "1", "--subject", "builtin", "--allow-empty"]);
    let all = said(&out);
    assert!(!marker.exists(), "the project's module ran on the host:\n{all}");
    assert!(all.contains("skip  hostile.requires (needs python3:plantedmod"), "{all}");
    // and a module the lab's Python has is found
    assert!(harness::probe::host::module_found("json"));
    assert!(!harness::probe::host::module_found("os.path"), "a dotted name is refused");
}

/// Issue 41, item 6: an empty or cut golden is an error of `diff`, never read as a transcript in which
/// nothing happened (it read as behaviour differences, exit 0).
#[test]
fn diff_refuses_an_empty_or_cut_golden() {
    let d = lab();
    let whole =
        std::fs::read_to_string(repo().join("golden/builtin/read.window.snap")).unwrap_or_else(|e| panic!("{e}"));
    for (name, bad) in [("empty", String::new()), ("cut", whole[..whole.len() / 2].to_string())] {
        write(&d.path().join("left/read.window.snap"), &whole);
        write(&d.path().join("right/read.window.snap"), &bad);
        let out = probelab(d.path(), &["diff", "left", "right"]);
        let all = said(&out);
        assert!(!out.status.success(), "{name}: {all}");
        assert!(all.contains("read.window.snap: not a whole golden transcript: it is"), "{name}: {all}");
    }
}
