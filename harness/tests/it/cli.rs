//! The `probelab` binary, run as a user would.

use std::path::{Path, PathBuf};
use std::process::Command;

fn probelab() -> Command {
    Command::new(env!("CARGO_BIN_EXE_probelab"))
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap_or_else(|e| panic!("{e}"));
    p
}

/// A project in a temporary directory: `probes/` and `golden/`, empty.
fn empty_lab() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    for dir in ["probes", "golden"] {
        std::fs::create_dir_all(d.path().join(dir)).unwrap_or_else(|e| panic!("{e}"));
    }
    d
}

/// `probelab ARGS` run in `dir`.
fn run_in(dir: &Path, args: &[&str]) -> std::process::Output {
    probelab().args(args).current_dir(dir).output().unwrap_or_else(|e| panic!("probelab {args:?}: {e}"))
}

#[test]
fn a_malformed_probe_prints_file_line_col_and_exits_2() {
    let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let p = write(
        d.path(),
        "bad.toml",
        "id = \"x\"\nclaims = [\"READ-1\"]\nabout = \"a\"\n[[turn]]\ntext = \"t\"\n[[check]]\nresult = 1\n",
    );
    let out = probelab().arg("run").arg(&p).current_dir(repo()).output().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.toml:6:1: check names result 1, but the main conversation scripts 0 tool_use block(s)"),
        "{err}"
    );
    assert!(err.contains("hint:"), "{err}");
}

#[test]
fn run_prints_a_line_per_probe_and_a_summary() {
    let out = probelab()
        .args(["run", "probes/read/window.toml"])
        .current_dir(repo())
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("pass  read.window [READ-1, READ-3]"), "{text}");
    assert!(text.contains("1 passed, 0 failed, 0 skipped"), "{text}");
}

#[test]
fn a_changed_tool_output_shows_as_a_golden_diff_and_exit_1() {
    // A copy of the lab whose golden for read.window has a different line 3: the run must report a diff.
    let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let lab = d.path();
    std::fs::create_dir_all(lab.join("probes")).unwrap_or_else(|e| panic!("{e}"));
    std::fs::create_dir_all(lab.join("golden/builtin")).unwrap_or_else(|e| panic!("{e}"));
    std::fs::copy(repo().join("probes/read/window.toml"), lab.join("probes/window.toml"))
        .unwrap_or_else(|e| panic!("{e}"));
    let golden =
        std::fs::read_to_string(repo().join("golden/builtin/read.window.snap")).unwrap_or_else(|e| panic!("{e}"));
    assert!(golden.contains("  | 3\tthree"));
    std::fs::write(lab.join("golden/builtin/read.window.snap"), golden.replacen("  | 3\tthree", "  | 3\tTHREE", 1))
        .unwrap_or_else(|e| panic!("{e}"));
    let out = probelab().args(["run", "--json"]).current_dir(lab).output().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(out.status.code(), Some(1));
    let first: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().next().unwrap_or_default())
            .unwrap_or_default();
    assert_eq!(first["status"], "golden-diff");
    let diff = first["detail"].as_str().unwrap_or_default();
    assert!(diff.contains("-  | 3\tTHREE") && diff.contains("+  | 3\tthree"), "{diff}");
    // --bless accepts the new transcript; then the run passes
    let out = probelab().args(["run", "--bless"]).current_dir(lab).output().unwrap_or_else(|e| panic!("{e}"));
    assert!(out.status.success());
    let out = probelab().args(["run"]).current_dir(lab).output().unwrap_or_else(|e| panic!("{e}"));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
}

#[test]
fn new_writes_a_skeleton_that_parses() {
    let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    std::fs::create_dir_all(d.path().join("probes")).unwrap_or_else(|e| panic!("{e}"));
    let out = probelab().args(["new", "demo/first"]).current_dir(d.path()).output().unwrap_or_else(|e| panic!("{e}"));
    assert!(out.status.success());
    let p = d.path().join("probes/demo/first.toml");
    let probe = harness::probe::load(&p).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(probe.id, "demo.first");
}

#[test]
fn list_names_probes_and_claims() {
    let out = probelab().arg("list").current_dir(repo()).output().unwrap_or_else(|e| panic!("{e}"));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("read.window") && text.contains("GREP-5") && text.contains("builtin"), "{text}");
}

#[test]
fn list_into_a_reader_that_has_gone_is_no_panic() {
    // the read end is closed before the list is written (`probelab list | head -0`): the write gets EPIPE
    let mut child = probelab()
        .arg("list")
        .current_dir(repo())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap_or_else(|e| panic!("{e}"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.code(), Some(0), "{stderr}");
}

#[test]
fn a_tools_child_starts_with_no_signal_blocked() {
    // The run's worker catches SIGINT / SIGTERM / SIGHUP; a mask blocked for that was inherited by every
    // Bash child, so `timeout 1 cat fifo` never stopped its cat and the run hung at its end.
    let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let lab = d.path();
    std::fs::create_dir_all(lab.join("probes")).unwrap_or_else(|e| panic!("{e}"));
    write(
        &lab.join("probes"),
        "mask.toml",
        r#"id = "bash.mask"
claims = ["BASH-3"]
about = "a Bash child's blocked signals"

[[turn]]
tool_use = [{ name = "Bash", input = { command = "grep -E '^SigBlk' /proc/self/status", description = "mask" } }]

[[turn]]
text = "done"

[[check]]
result = 1
equals = "SigBlk:\t0000000000000000"
"#,
    );
    let out = probelab().args(["run", "--bless"]).current_dir(lab).output().unwrap_or_else(|e| panic!("{e}"));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("1 passed"), "{text}");
}

#[test]
fn a_renamed_copy_of_the_binary_is_its_own_probelab() {
    // a copy named otherwise (`/tmp/x/lab-copy`) used to hand `{probelab}` (fake servers, the relay) the
    // bare name `probelab`, looked up on PATH: `bwrap: execvp probelab: No such file or directory`
    let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let copy = d.path().join("lab-copy");
    std::fs::copy(env!("CARGO_BIN_EXE_probelab"), &copy).unwrap_or_else(|e| panic!("{e}"));
    let out = Command::new(&copy)
        .args(["run", "probes/lsp/hang.toml", "--json"])
        .current_dir(repo())
        .env("PATH", "/usr/bin:/bin")
        .env_remove("PROBELAB_BIN")
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{said}");
    assert!(said.contains("\"status\": \"pass\"") || said.contains("\"status\":\"pass\""), "{said}");
}

#[test]
fn watch_with_npm_unreachable_and_no_cached_list_is_an_error_exit_2_also_in_json() {
    // the registry is a closed port on loopback; no list of versions is cached: nothing may run, nothing
    // may be written, and CI's `--json` reader gets an object, not an empty stdout
    if Command::new("npm").arg("--version").output().is_err() {
        eprintln!("NOT RUN: npm is not installed");
        return;
    }
    let cache = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
    let port = closed.local_addr().unwrap_or_else(|e| panic!("{e}")).port();
    drop(closed);
    let before = Command::new("git").args(["status", "--porcelain", "docs"]).current_dir(repo()).output();
    let out = probelab()
        .args(["watch", "--json"])
        .current_dir(repo())
        .env("PROBELAB_CACHE", cache.path())
        .env("npm_config_registry", format!("http://127.0.0.1:{port}/"))
        .env("npm_config_fetch_retries", "0")
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(2), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(v["status"], "error");
    let e = v["error"].as_str().unwrap_or_default();
    assert!(e.contains("none is cached") && e.contains("the npm registry is unreachable"), "{e}");
    let after = Command::new("git").args(["status", "--porcelain", "docs"]).current_dir(repo()).output();
    assert_eq!(before.ok().map(|o| o.stdout), after.ok().map(|o| o.stdout), "watch wrote under docs/");
}

#[test]
fn a_dir_check_sees_the_tree_a_run_left_and_fails_with_it() {
    let d = empty_lab();
    let lab = d.path();
    let probe = |tree: &str| {
        format!(
            "id = \"dir.tree\"\nclaims = [\"EDIT-1\"]\nabout = \"a\"\n[fixture]\nfiles.\"a.txt\" = \"a\\n\"\n\
             [[fixture.fault]]\nkind = \"mkdir\"\npath = \"out\"\n[[fixture.fault]]\nkind = \"symlink\"\npath = \"out/link\"\ntarget = \"../a.txt\"\n[[turn]]\n\
             tool_use = [{{ name = \"Write\", input = {{ file_path = \"{{cwd}}/out/sub/new.txt\", content = \"n\" }} }}]\n\
             [[turn]]\ntext = \"done\"\n[[check]]\ndir = \"out\"\nequals = \"{tree}\"\n[[check]]\ndir = \".\"\n\
             not_contains = \".tmp\"\n"
        )
    };
    write(&lab.join("probes"), "tree.toml", &probe("link -> ../a.txt\\nsub/\\nsub/new.txt\\n"));
    let run = |args: &[&str]| run_in(lab, args);
    let out = run(&["run", "-j", "1", "--bless"]);
    assert!(out.status.success(), "{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let golden = std::fs::read_to_string(lab.join("golden/builtin/dir.tree.snap")).unwrap_or_else(|e| panic!("{e}"));
    assert!(golden.contains("pass check 1: dir out\n") && golden.contains("pass check 2: dir .\n"), "{golden}");
    write(&lab.join("probes"), "tree.toml", &probe("sub/\\nsub/new.txt\\n"));
    let out = run(&["run", "-j", "1"]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("check of dir out failed") && said.contains("+link -> ../a.txt"), "{said}");
}

#[test]
fn a_side_check_reads_the_side_request_its_text_picks_and_fails_on_another() {
    // WEB-1: WebFetch reads a page by a side request; `side = "text"` checks what that request gave the
    // reading model, here over the https-speaking web service (the built-in talks plain HTTP to it)
    let d = empty_lab();
    let lab = d.path();
    let probe = |select: &str, contains: &str| {
        format!(
            "id = \"side.read\"\nclaims = [\"WEB-1\"]\nabout = \"a\"\n[web]\ntls = true\n\
             pages.\"/p\" = {{ body = \"<h1>Title P</h1>\" }}\n[stub]\nside_reply = \"ok\"\nload_deferred = true\n[[turn]]\n\
             tool_use = [{{ name = \"WebFetch\", input = {{ url = \"{{web}}/p\", prompt = \"ASK one\" }} }}]\n\
             [[turn]]\ntext = \"done\"\n[[check]]\nside = \"{select}\"\ncontains = \"{contains}\"\n\
             [[check]]\nfile = \"{{sandbox}}/web-service/ca.pem\"\ncontains = \"BEGIN CERTIFICATE\"\n"
        )
    };
    write(&lab.join("probes"), "side.toml", &probe("ASK one", "Title P\\n=======\\n---\\n\\nASK one"));
    let run = |args: &[&str]| run_in(lab, args);
    let out = run(&["run", "-j", "1", "--bless"]);
    assert!(out.status.success(), "{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let golden = std::fs::read_to_string(lab.join("golden/builtin/side.read.snap")).unwrap_or_else(|e| panic!("{e}"));
    assert!(golden.contains("pass check 1: side request with \"ASK one\"\n"), "{golden}");
    write(&lab.join("probes"), "side.toml", &probe("ASK two", "Title P"));
    let out = run(&["run", "-j", "1"]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("no side request's last user message contains \"ASK two\""), "{said}");
    write(&lab.join("probes"), "side.toml", &probe("", "Title P"));
    let out = run(&["run", "-j", "1"]);
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains("side = \"\" picks every side request"), "{said}");
}

#[test]
fn a_request_check_of_one_part_sees_only_that_member_of_the_body() {
    let d = empty_lab();
    let lab = d.path();
    let probe = |part: &str| {
        format!(
            "id = \"req.part\"\nclaims = [\"PIPE-7\"]\nabout = \"a\"\n[[turn]]\ntext = \"done\"\n\
             [[check]]\nrequest = 1\npart = \"{part}\"\ncontains = \"Run the probe.\"\n"
        )
    };
    let run = |args: &[&str]| run_in(lab, args);
    // the prompt is a message, not the system prompt
    write(&lab.join("probes"), "p.toml", &probe("messages"));
    let out = run(&["run", "-j", "1", "--bless"]);
    assert!(out.status.success(), "{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    for (part, said_part) in
        [("system", "expected text to contain \"Run the probe.\""), ("nope", "request 1 has no member \"nope\"")]
    {
        write(&lab.join("probes"), "p.toml", &probe(part));
        let out = run(&["run", "-j", "1", "--bless"]);
        let said = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{part}: {said}");
        assert!(said.contains(said_part), "{part}: {said}");
    }
    // one part of the body or one tool's definition, not both
    write(&lab.join("probes"), "p.toml", &probe("messages").replace("part =", "tool = \"Read\"\npart ="));
    let out = run(&["run", "-j", "1"]);
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains("p.toml:9:1: a request check takes tool or part, not both"), "{said}");
}

#[test]
fn a_diff_that_cannot_write_its_page_says_where_and_exits_2() {
    let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let page = d.path().join("no-such-dir/diff.html");
    let out = probelab()
        .args(["diff", "golden/builtin", "golden/builtin", "--html"])
        .arg(&page)
        .current_dir(repo())
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err, format!("probelab diff: {}: No such file or directory (os error 2)\n", page.display()));
}

#[test]
fn measure_reports_a_command_s_cpu_time_apart_from_its_wall_time() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let run = |script: &str| {
        let out = dir.path().join("m.json");
        let st = probelab().arg("measure").arg("--out").arg(&out).args(["--", "sh", "-c", script]).status();
        assert_eq!(st.map(|s| s.code()).ok().flatten(), Some(0), "{script}");
        let text = std::fs::read_to_string(&out).unwrap_or_else(|e| panic!("{e}"));
        serde_json::from_str::<serde_json::Value>(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
    };
    let ms = |v: &serde_json::Value, k: &str| v[k].as_u64().unwrap_or_else(|| panic!("{k} in {v}"));
    // a sleep takes wall time and next to no CPU; a busy loop spends CPU (the child's own: measure is a
    // process of its own, so RUSAGE_CHILDREN is that one command)
    let asleep = run("sleep 0.3");
    assert!(ms(&asleep, "duration_ms") >= 300 && ms(&asleep, "cpu_ms") < 150, "{asleep}");
    let busy = run("i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done");
    assert!(ms(&busy, "cpu_ms") > 0, "{busy}");
}

/// Issue 43, item 5: the scheduled job as a script, never green on a failed step. Each step replaced
/// (WATCH_CI_SETUP, WATCH_CI_BUILD, WATCH_CI_PROBELAB) in a repository of the test's own, and once the
/// real probelab against an unreachable registry.
#[test]
fn scripts_watch_ci_maps_every_outcome_to_its_exit_and_commits_only_what_watch_published() {
    let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let repo_dir = d.path().join("repo");
    for sub in ["scripts", "docs/changes", "golden", "runtime/data"] {
        std::fs::create_dir_all(repo_dir.join(sub)).unwrap_or_else(|e| panic!("{e}"));
    }
    std::fs::copy(repo().join("scripts/watch-ci"), repo_dir.join("scripts/watch-ci")).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(repo_dir.join("docs/changes/README.md"), "pages\n").unwrap_or_else(|e| panic!("{e}"));
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"])
            .args(args)
            .current_dir(&repo_dir)
            .output()
            .unwrap_or_else(|e| panic!("{e}"));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    git(&["init", "-q"]);
    git(&["add", "."]);
    git(&["commit", "-q", "-m", "start"]);
    // a fake probelab: `watch --json` exits FAKE_EXIT, writing a page when FAKE_PAGE is set
    let fake = d.path().join("fake-probelab");
    std::fs::write(
        &fake,
        "#!/bin/sh\n[ \"$1 $2\" = \"watch --json\" ] || exit 9\n\
         [ -n \"$FAKE_PAGE\" ] && echo changed > docs/changes/$FAKE_PAGE.md\n\
         echo '{\"status\": \"x\", \"new\": [\"9.9.9\"]}'\nexit $FAKE_EXIT\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    Command::new("chmod").arg("+x").arg(&fake).status().unwrap_or_else(|e| panic!("{e}"));
    let marker = d.path().join("built");
    let run = |setup: &str, exit: &str, page: &str| {
        let out = Command::new(repo_dir.join("scripts/watch-ci"))
            .env("WATCH_CI_SETUP", setup)
            .env("WATCH_CI_BUILD", format!("touch {}", marker.display()))
            .env("WATCH_CI_PROBELAB", &fake)
            .env("FAKE_EXIT", exit)
            .env("FAKE_PAGE", page)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@t")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@t")
            .output()
            .unwrap_or_else(|e| panic!("{e}"));
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let commits = || git(&["rev-list", "--count", "HEAD"]).trim().to_string();
    // the set-up fails: nothing after it runs
    let (code, said) = run("false", "0", "");
    assert_eq!(code, Some(2), "{said}");
    assert!(!marker.exists(), "the build ran after a failed set-up");
    // the build fails
    let failing_build = Command::new(repo_dir.join("scripts/watch-ci"))
        .env("WATCH_CI_SETUP", "true")
        .env("WATCH_CI_BUILD", "exit 101")
        .env("WATCH_CI_PROBELAB", &fake)
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(failing_build.status.code(), Some(3));
    // watch fails (npm unreachable): 4, nothing committed
    assert_eq!(run("true", "2", "").0, Some(4));
    assert_eq!(commits(), "1");
    // nothing new: 0, no commit
    assert_eq!(run("true", "0", "").0, Some(0));
    assert_eq!(commits(), "1");
    // changes: 1, the page committed with the new releases named
    let (code, said) = run("true", "1", "9.9.9");
    assert_eq!(code, Some(1), "{said}");
    assert_eq!(commits(), "2");
    assert!(git(&["log", "-1", "--format=%s"]).contains("probelab watch: 9.9.9"));
    // a probe needs repair: 5, what was found committed too
    assert_eq!(run("true", "3", "9.9.10").0, Some(5));
    assert_eq!(commits(), "3");
    // watch says changes but published nothing: 6, never 0
    assert_eq!(run("true", "1", "").0, Some(6));
    // the real probelab against an unreachable registry: 4
    if Command::new("npm").arg("--version").output().is_ok() {
        let cache = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
        let port = closed.local_addr().unwrap_or_else(|e| panic!("{e}")).port();
        drop(closed);
        let out = Command::new(repo().join("scripts/watch-ci"))
            .env("WATCH_CI_SETUP", "true")
            .env("WATCH_CI_BUILD", "true")
            .env("WATCH_CI_PROBELAB", env!("CARGO_BIN_EXE_probelab"))
            .env("WATCH_CI_COMMIT", "0")
            .env("PROBELAB_CACHE", cache.path())
            .env("npm_config_registry", format!("http://127.0.0.1:{port}/"))
            .env("npm_config_fetch_retries", "0")
            .output()
            .unwrap_or_else(|e| panic!("{e}"));
        let said = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(4), "{said}");
        assert!(said.contains("the npm registry is unreachable"), "{said}");
    }
}

/// Issue 37, item 8: scripts/under-load judges a run by what the committed matrix says of its release —
/// a probe whose cell failed its checks or is n-a prints FAIL by design — and fails on any other FAIL, on a
/// pass where the cell failed, on a golden that differs, and on a failed built-in run beside them. A fake
/// probelab (PROBELAB_BIN) prints what each case needs; the cells are the test's own (PROBELAB_CELLS).
#[test]
fn scripts_under_load_fails_only_where_a_run_leaves_its_committed_verdicts() {
    let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let repo_dir = d.path().join("repo");
    std::fs::create_dir_all(repo_dir.join("scripts")).unwrap_or_else(|e| panic!("{e}"));
    std::fs::copy(repo().join("scripts/under-load"), repo_dir.join("scripts/under-load"))
        .unwrap_or_else(|e| panic!("{e}"));
    let cells = d.path().join("cells/9.9.9");
    std::fs::create_dir_all(&cells).unwrap_or_else(|e| panic!("{e}"));
    for (probe, outcome, reason) in [
        ("a.fine", "pass", ""),
        ("b.broken", "changed", "failed: check 2: result 1"),
        ("c.gone", "not-applicable", "X not offered"),
    ] {
        let cell = serde_json::json!({"probe": probe, "outcome": outcome, "reason": reason});
        std::fs::write(cells.join(format!("{probe}.json")), cell.to_string()).unwrap_or_else(|e| panic!("{e}"));
    }
    // the fake: the built-in suite exits FAKE_BUILTIN; a claude-code run waits (bounded) until the built-in
    // loop has finished once, then prints FAKE_LINES
    let fake = d.path().join("fake-probelab");
    std::fs::write(
        &fake,
        "#!/bin/sh\nif [ $# = 1 ]; then echo '3 passed'; exit \"$FAKE_BUILTIN\"; fi\n\
         for i in $(seq 200); do [ -e target/probelab/under-load/builtin-loops ] && break; sleep 0.05; done\n\
         printf '%b' \"$FAKE_LINES\"; echo '1 passed, 2 failed'; exit 1\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    Command::new("chmod").arg("+x").arg(&fake).status().unwrap_or_else(|e| panic!("{e}"));
    let run = |lines: &str, builtin: &str| {
        let out = Command::new(repo_dir.join("scripts/under-load"))
            .args(["2", "--versions", "9.9.9"])
            .env("PROBELAB_BIN", &fake)
            .env("PROBELAB_CELLS", d.path().join("cells"))
            .env("FAKE_LINES", lines)
            .env("FAKE_BUILTIN", builtin)
            .output()
            .unwrap_or_else(|e| panic!("{e}"));
        (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr))
    };
    let expected = "pass  a.fine [X-1]\\nFAIL  b.broken [X-1]\\nFAIL  c.gone [X-2]\\n";
    let (code, said) = run(expected, "0");
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("2 runs (2 of 9.9.9), 0 failed;") && said.contains(", 0 failed\n"), "{said}");
    // a probe whose cell passes fails under load
    let (code, said) = run("FAIL  a.fine [X-1]\\nFAIL  b.broken [X-1]\\nFAIL  c.gone [X-2]\\n", "0");
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains("9.9.9: FAIL a.fine (expected to pass)"), "{said}");
    // a probe that failed in the matrix passes: as much a change as the other way
    let (code, said) = run("pass  a.fine [X-1]\\npass  b.broken [X-1]\\nFAIL  c.gone [X-2]\\n", "0");
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains("9.9.9: pass b.broken (expected FAIL)"), "{said}");
    // a golden that moved, with the verdicts right
    let (code, said) = run(&format!("{expected}DIFF  a.fine [X-1]\\n"), "0");
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains("9.9.9: DIFF  a.fine"), "{said}");
    // the built-in suite failing beside them
    let (code, said) = run(expected, "1");
    assert_eq!(code, Some(1), "{said}");
    assert!(
        said.contains("0 failed; the built-in suite ran") && !said.contains("times beside them, 0 failed"),
        "{said}"
    );
    // a release the matrix has no cells of: usage error, nothing run
    let out = Command::new(repo_dir.join("scripts/under-load"))
        .args(["1", "--versions", "1.0.0"])
        .env("PROBELAB_BIN", &fake)
        .env("PROBELAB_CELLS", d.path().join("cells"))
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(out.status.code(), Some(2));
}
