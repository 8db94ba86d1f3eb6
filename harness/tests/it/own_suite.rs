//! A user's own suite, kept outside this repository (issue 19): `probelab init`, `new`, `run --bless`,
//! `run`, a golden diff, `diff` of two golden sets, configured paths and `--golden` — with the built
//! binary, from a directory below the project root, and nothing written into the repository.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().unwrap_or_else(|e| panic!("{e}"))
}

/// `probelab ARGS` in `dir`.
fn probelab(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_probelab"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("probelab {args:?}: {e}"))
}

use crate::common::said;

/// What the repository's probe data looks like: every file under probes/, golden/, fixtures/ (path,
/// size, mtime), whether a probelab.toml is at its root, and git's view of those paths.
fn repo_state() -> (BTreeMap<PathBuf, (u64, std::time::SystemTime)>, bool, String) {
    let root = repo();
    let mut files = BTreeMap::new();
    let mut stack: Vec<PathBuf> = ["probes", "golden", "fixtures"].iter().map(|d| root.join(d)).collect();
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())).flatten() {
            let (p, m) = (e.path(), e.metadata().unwrap_or_else(|e| panic!("{e}")));
            if m.is_dir() {
                stack.push(p);
            } else {
                files.insert(p, (m.len(), m.modified().unwrap_or(std::time::UNIX_EPOCH)));
            }
        }
    }
    let git = Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=all", "--", "probes", "golden", "fixtures", "probelab.toml"])
        .current_dir(&root)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    (files, root.join("probelab.toml").exists(), git)
}

/// `text` parsed as the probe file `own.toml` and run on the built-in subject with the repository's layout.
fn run_builtin(text: &str) -> harness::lab::Report {
    let probe = harness::probe::parse(Path::new("own.toml"), text).unwrap_or_else(|e| panic!("{e}"));
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap_or_else(|e| panic!("{e}"));
    rt.block_on(harness::lab::run_probe(
        &probe,
        &harness::subject::SubjectId::builtin(),
        &harness::lab::Layout::repo(),
        false,
    ))
    .unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn a_suite_outside_the_repository_is_made_blessed_run_and_diffed_there_only() {
    let before = repo_state();
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let lab = tmp.path().canonicalize().unwrap_or_else(|e| panic!("{e}"));
    assert!(!lab.starts_with(repo()), "the temp dir {} is inside the repository", lab.display());

    // no project yet: a clear error naming the directory and the way out
    let out = probelab(&lab, &["run"]);
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    assert!(said(&out).contains("no probelab.toml (or probes/ directory) here or in any parent"), "{}", said(&out));
    assert!(said(&out).contains("probelab init"), "{}", said(&out));

    let out = probelab(&lab, &["init"]);
    assert!(out.status.success(), "{}", said(&out));
    for made in ["probelab.toml", "probes", "golden", "fixtures"] {
        assert!(lab.join(made).exists(), "init did not make {made}: {}", said(&out));
    }
    assert_eq!(probelab(&lab, &["init"]).status.code(), Some(2), "a second init must refuse");

    // every later command from a directory below the root: the root is found by walking up
    let deep = lab.join("notes/deeper");
    std::fs::create_dir_all(&deep).unwrap_or_else(|e| panic!("{e}"));
    let out = probelab(&deep, &["new", "demo/first"]);
    assert!(out.status.success(), "{}", said(&out));
    let probe_file = lab.join("probes/demo/first.toml");
    assert!(probe_file.is_file(), "{}", said(&out));

    let out = probelab(&deep, &["run", "-j", "1", "--json"]);
    assert_eq!(out.status.code(), Some(1), "no golden yet: {}", said(&out));
    assert!(said(&out).contains("\"status\":\"golden-missing\""), "{}", said(&out));

    let out = probelab(&deep, &["run", "-j", "1", "--bless"]);
    assert!(out.status.success(), "the skeleton must pass as written: {}", said(&out));
    let golden = lab.join("golden/builtin/demo.first.snap");
    let text = std::fs::read_to_string(&golden).unwrap_or_else(|e| panic!("{}: {e}", golden.display()));
    assert!(text.contains("tool_result toolu_demo_first_1:\n  | 1\tone\n  | 2\ttwo\n"), "{text}");
    assert!(std::fs::read_dir(lab.join("golden/blobs")).map(|d| d.count()).unwrap_or(0) > 0);
    assert!(lab.join("target/probelab/builtin/durations.json").is_file(), "run state goes to the project's out dir");

    let out = probelab(&deep, &["run", "-j", "1"]);
    assert!(out.status.success(), "{}", said(&out));
    assert!(said(&out).contains("pass  demo.first [READ-1]"), "{}", said(&out));

    // a changed fixture: the run shows the golden diff and fails
    let probe = std::fs::read_to_string(&probe_file).unwrap_or_else(|e| panic!("{e}"));
    assert!(probe.contains("\"one\\ntwo\\nthree\\n\""), "{probe}");
    std::fs::write(&probe_file, probe.replace("\"one\\ntwo\\nthree\\n\"", "\"one\\ntwo\\nTHREE\\n\""))
        .unwrap_or_else(|e| panic!("{e}"));
    let out = probelab(&deep, &["run", "-j", "1"]);
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    assert!(said(&out).contains("-  | 3\tthree") && said(&out).contains("+  | 3\tTHREE"), "{}", said(&out));

    // --golden: bless into another set, then diff the two sets
    let out = probelab(&deep, &["run", "-j", "1", "--bless", "--golden", "../../alt"]);
    assert!(out.status.success(), "{}", said(&out));
    assert!(lab.join("alt/builtin/demo.first.snap").is_file(), "--golden is relative to the cwd: {}", said(&out));
    let out = probelab(&deep, &["diff", "builtin", "../../alt/builtin"]);
    assert!(out.status.success(), "{}", said(&out));
    assert!(said(&out).contains("THREE") && said(&out).contains("1 probes in common"), "{}", said(&out));

    // configured paths: probes, golden and fixtures where probelab.toml says
    std::fs::rename(lab.join("probes"), lab.join("suite")).unwrap_or_else(|e| panic!("{e}"));
    std::fs::create_dir_all(lab.join("trees/small")).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(lab.join("trees/small/g.txt"), "from the tree\n").unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(
        lab.join("suite/tree.toml"),
        "id = \"demo.tree\"\nclaims = [\"READ-1\"]\nabout = \"a fixture tree of the project\"\n[fixture]\ndir = \"small\"\n\
         [[turn]]\ntool_use = [{ name = \"Read\", input = { file_path = \"{cwd}/g.txt\" } }]\n[[turn]]\ntext = \"done\"\n\
         [[check]]\nresult = 1\ncontains = \"1\\tfrom the tree\"\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(lab.join("probelab.toml"), "probes = \"suite\"\ngolden = \"snaps\"\nfixtures = \"trees\"\n")
        .unwrap_or_else(|e| panic!("{e}"));
    let out = probelab(&deep, &["run", "-j", "1", "--bless"]);
    assert!(out.status.success(), "{}", said(&out));
    assert!(said(&out).contains("bless demo.tree") && said(&out).contains("bless demo.first"), "{}", said(&out));
    assert!(lab.join("snaps/builtin/demo.tree.snap").is_file() && lab.join("snaps/builtin/demo.first.snap").is_file());

    // a malformed project file: file:line:col and a hint, exit 2
    std::fs::write(lab.join("probelab.toml"), "probes = \"suite\"\ngoldens = \"snaps\"\n")
        .unwrap_or_else(|e| panic!("{e}"));
    let out = probelab(&deep, &["run"]);
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    let place = format!("{}:2:1: unknown field `goldens`", lab.join("probelab.toml").display());
    assert!(said(&out).contains(&place) && said(&out).contains("hint:"), "{}", said(&out));

    assert_eq!(repo_state(), before, "the suite's commands wrote into the repository");
}

#[test]
fn a_named_result_is_checked_with_a_regex_holding_a_placeholder() {
    let text = r#"id = "own.named"
claims = ["READ-1"]
about = "result = ID and {cwd} in a regex"
[[turn]]
tool_use = [{ id = "where", name = "Bash", input = { command = "pwd" } }]
[[turn]]
text = "done"
[[check]]
result = "where"
matches = '^{cwd}$'
[[check]]
result = "where"
matches = '^{home}$'
"#;
    let report = run_builtin(text);
    let (cwd, home) = (&report.verdicts[0], &report.verdicts[1]);
    assert_eq!(cwd.name, "check 1: result where");
    assert!(cwd.pass, "{}\n{}", cwd.detail, report.transcript);
    assert!(!home.pass && home.detail.contains("expected text to match"), "{home:?}");
    assert!(report.transcript.contains("tool_use where Bash"), "{}", report.transcript);
}

#[test]
fn a_failed_check_shows_a_cut_diff_and_json_and_keep_give_the_whole_texts() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let lab = tmp.path();
    assert!(probelab(lab, &["init"]).status.success());
    let actual: String = (0..4_000).map(|i| format!("line {i:05}\n")).collect();
    let expected: String =
        (0..4_000).map(|i| if i % 50 == 0 { format!("LINE {i:05}\n") } else { format!("line {i:05}\n") }).collect();
    let probe = format!(
        "id = \"own.fails\"\nclaims = [\"READ-1\"]\nabout = \"a long text that is not what the check says\"\n\
         [fixture]\nfiles.\"f.txt\" = {actual:?}\n\
         [[turn]]\ntool_use = [{{ name = \"Read\", input = {{ file_path = \"{{cwd}}/f.txt\", limit = 1 }} }}]\n[[turn]]\ntext = \"done\"\n\
         [[check]]\nfile = \"f.txt\"\nequals = {expected:?}\n[[check]]\nfile = \"f.txt\"\nmatches = '^xyz'\n"
    );
    std::fs::write(lab.join("probes/fails.toml"), probe).unwrap_or_else(|e| panic!("{e}"));

    let out = probelab(lab, &["run", "-j", "1"]);
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("--- expected\n") && text.contains("+++ actual\n"), "{text}");
    assert!(text.contains("@@ -48,7 +48,7 @@\n       line 00047\n       line 00048\n       line 00049\n      -LINE 00050\n      +line 00050\n"), "a unified diff: {text}");
    assert!(text.contains("diff lines not shown; --json has both texts as `expected` and `actual`"), "{text}");
    assert!(text.contains("[… 41000 of 44000 chars not shown (the middle)"), "the matches failure cuts: {text}");
    assert!(text.len() < 20_000, "the 40 KB texts are not printed whole: {} bytes", text.len());

    let out = probelab(lab, &["run", "-j", "1", "--json", "--keep"]);
    let first: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().next().unwrap_or_default())
            .unwrap_or_else(|e| panic!("{e}: {}", said(&out)));
    let verdicts = first["verdicts"].as_array().cloned().unwrap_or_default();
    assert_eq!(verdicts[0]["expected"].as_str(), Some(expected.as_str()));
    assert_eq!(verdicts[0]["actual"].as_str(), Some(actual.as_str()));
    assert_eq!(verdicts[1]["compared"][0]["assertion"], "matches");
    assert_eq!(verdicts[1]["expected"], "^xyz");
    assert!(verdicts[2].get("expected").is_none(), "an invariant has no texts: {}", verdicts[2]);
    let kept = PathBuf::from(first["kept"].as_str().unwrap_or_else(|| panic!("no kept dir: {first}")));
    let failures = std::fs::read_to_string(kept.join("failures.json")).unwrap_or_else(|e| panic!("{e}"));
    let _ = std::fs::remove_dir_all(&kept);
    let failures: serde_json::Value = serde_json::from_str(&failures).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(failures[0]["compared"][0]["actual"].as_str(), Some(actual.as_str()));
    assert_eq!(failures[1]["verdict"], "check 2: file f.txt");
}

#[test]
fn fixture_files_take_their_own_mtimes_and_a_touch_fault_sets_one_later() {
    let text = r#"id = "own.mtimes"
claims = ["GLOB-1"]
about = "mtime per file and a touch fault order Glob's oldest-first list"
[fixture]
files."a.txt" = { text = "a", mtime = 100 }
files."b.txt" = "b"
files."c.txt" = { repeat = "c", bytes = 3, mtime = "2025-12-31T23:58:20.250Z" }
[[fixture.fault]]
kind = "touch"
path = "d.txt"
mtime = -0.5
[[fixture.fault]]
at_turn = 3
kind = "touch"
path = "b.txt"
mtime = 200
[[turn]]
tool_use = [{ id = "before", name = "Glob", input = { pattern = "*.txt" } }]
[[turn]]
tool_use = [{ id = "stat", name = "Bash", input = { command = "find . -type f -printf '%T@ %p\n' | sort -n" } }]
[[turn]]
tool_use = [{ id = "after", name = "Glob", input = { pattern = "*.txt" } }]
[[turn]]
text = "done"
[[check]]
result = "before"
equals = "c.txt\nd.txt\nb.txt\na.txt"
[[check]]
result = "stat"
equals = "1767225500.2500000000 ./c.txt\n1767225599.5000000000 ./d.txt\n1767225601.0000000000 ./b.txt\n1767225700.0000000000 ./a.txt"
[[check]]
result = "after"
equals = "c.txt\nd.txt\na.txt\nb.txt"
"#;
    let report = run_builtin(text);
    assert!(report.passed(), "{}\n{}", report.failures().join("\n"), report.transcript);

    let bad = text.replace("mtime = 100", "mtime = \"soon\"");
    let e = harness::probe::parse(Path::new("own.toml"), &bad).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(e.starts_with("own.toml:5:7: fixture file \"a.txt\": mtime \"soon\" is not an RFC 3339 time"), "{e}");
    let e = harness::probe::parse(
        Path::new("own.toml"),
        &text.replace("kind = \"touch\"\npath = \"d.txt\"", "kind = \"write\"\npath = \"d.txt\""),
    )
    .err()
    .map(|e| e.to_string())
    .unwrap_or_default();
    assert!(e.contains("`mtime` does not apply to a \"write\" fault"), "{e}");
}

#[test]
fn the_subject_session_id_names_the_session_files() {
    let text = r#"id = "own.session-id"
claims = ["PIPE-5"]
about = "[subject] session_id names the session (its persisted results)"
subjects = ["builtin", "claude-code"]
[subject]
session_id = "11111111-2222-4333-8444-555555555555"
[[turn]]
tool_use = [{ id = "big", name = "Bash", input = { command = "head -c 40000 /dev/zero | tr '\\0' x" } }]
[[turn]]
text = "done"
[[check]]
result = "big"
contains = "/11111111-2222-4333-8444-555555555555/tool-results/"
[[check]]
file = "{home}/.claude/projects/*/11111111-2222-4333-8444-555555555555/tool-results/*"
exists = true
"#;
    let run = run_builtin;
    let report = run(text);
    assert!(report.passed(), "{}\n{}", report.failures().join("\n"), report.transcript);
    let default = run(&text.replace("session_id = \"11111111-2222-4333-8444-555555555555\"", ""));
    assert!(!default.verdicts[0].pass && !default.verdicts[1].pass, "without it the default id is used");
    let e = harness::probe::parse(Path::new("own.toml"), &text.replace("8444-555555555555\"", "8444\""))
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(e.starts_with("own.toml:6:1: session_id \"11111111-2222-4333-8444\" is not a UUID"), "{e}");
}

#[test]
fn review_accepts_and_rejects_the_pending_goldens_cargo_test_left() {
    use std::io::Write;
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let lab = tmp.path();
    assert!(probelab(lab, &["init"]).status.success());
    let out = probelab(lab, &["review"]);
    assert!(said(&out).contains("no pending goldens"), "{}", said(&out));
    let dir = lab.join("golden/builtin");
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
    // whole transcripts (a pending golden is checked before it is accepted): their verdicts to the last
    let old = harness::transcript::golden::file_text(
        "subject builtin 0.1.0, embedded",
        "probe: x\nline b\n\n## verdicts\npass invariant: i\n",
    );
    // what insta 1.49 writes when the probe test binary sees another transcript (a quoted description)
    let new =
        "---\nsource: harness/tests/probes.rs\nassertion_line: 109\ndescription: \"subject builtin 0.1.0, embedded\"\n\
               expression: transcript\n---\nprobe: x\nline B\n\n## verdicts\npass invariant: i\n";
    std::fs::write(dir.join("x.snap"), &old).unwrap_or_else(|e| panic!("{e}"));
    for name in ["x", "y", "z"] {
        std::fs::write(dir.join(format!("{name}.snap.new")), new.replace("probe: x", &format!("probe: {name}")))
            .unwrap_or_else(|e| panic!("{e}"));
    }
    let mut child = Command::new(env!("CARGO_BIN_EXE_probelab"))
        .arg("review")
        .current_dir(lab)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    // accept x, reject y, and the input ends before z: z stays pending
    child.stdin.take().map(|mut i| i.write_all(b"a\nr\n")).transpose().unwrap_or_else(|e| panic!("{e}"));
    let out = child.wait_with_output().unwrap_or_else(|e| panic!("{e}"));
    assert!(out.status.success(), "{}", said(&out));
    let text = said(&out);
    assert!(text.contains("[1/3] golden/builtin/x.snap\n--- golden\n+++ pending\n"), "{text}");
    assert!(text.contains("-line b\n+line B\n"), "{text}");
    assert!(text.contains("[2/3] golden/builtin/y.snap\n--- golden (none yet)"), "{text}");
    assert!(text.contains("1 accepted, 1 rejected, 1 skipped"), "{text}");
    let x = std::fs::read_to_string(dir.join("x.snap")).unwrap_or_default();
    assert_eq!(
        x,
        harness::transcript::golden::file_text(
            "subject builtin 0.1.0, embedded",
            "probe: x\nline B\n\n## verdicts\npass invariant: i\n"
        )
    );
    assert!(!dir.join("x.snap.new").exists() && !dir.join("y.snap.new").exists() && !dir.join("y.snap").exists());
    assert!(dir.join("z.snap.new").exists() && !dir.join("z.snap").exists());
    let out = probelab(lab, &["review", "--accept"]);
    assert!(said(&out).contains("1 accepted, 0 rejected, 0 skipped") && dir.join("z.snap").exists(), "{}", said(&out));
}

#[test]
fn a_session_claude_code_wrote_imports_as_a_probe_that_replays_on_both_subjects() {
    // written by claude-code@2.1.235 during a probe run (Read, Edit + Bash in one message, a failed Read)
    let session = repo().join("fixtures/sessions/claude-code-2.1.235.jsonl");
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let lab = tmp.path();
    assert!(probelab(lab, &["init"]).status.success());
    let out = probelab(lab, &["import", &session.to_string_lossy(), "sessions/first"]);
    assert!(out.status.success(), "{}", said(&out));
    let probe = std::fs::read_to_string(lab.join("probes/sessions/first.toml")).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        probe.contains("files.\"f.txt\" = \"one\\ntwo\\nthree\\n\"\n"),
        "the file as the first Read saw it: {probe}"
    );
    assert!(
        probe.contains("{ id = \"edit-2\", name = \"Edit\"") && probe.contains("{ id = \"bash-3\", name = \"Bash\"")
    );
    assert_eq!(probe.matches("[[check]]   # imported: review").count(), 4, "{probe}");
    assert!(probe.contains("result = \"bash-3\"\nis_error = false\nequals = \"one\\n2\\nthree\"\n"), "{probe}");
    assert!(probe
        .contains("is_error = true\nequals = \"File does not exist. Note: your current working directory is {cwd}.\""));
    let subject = format!("claude-code@{}", harness::subject::claude_code::REFERENCE_VERSION);
    for s in ["builtin", subject.as_str()] {
        // --bless writes the golden only when every check passed: the recorded results came back
        let out = probelab(lab, &["run", "-j", "1", "--bless", "--subject", s]);
        assert!(out.status.success(), "replay on {s}: {}", said(&out));
        assert!(said(&out).contains("bless sessions.first"), "{}", said(&out));
    }

    // bad input: each named with its file and line, exit 2
    let text = std::fs::read_to_string(&session).unwrap_or_else(|e| panic!("{e}"));
    let bad = |name: &str, content: &str| {
        let p = lab.join(name);
        std::fs::write(&p, content).unwrap_or_else(|e| panic!("{e}"));
        let out = probelab(lab, &["import", &p.to_string_lossy(), &format!("bad/{name}")]);
        assert_eq!(out.status.code(), Some(2), "{}", said(&out));
        (p.display().to_string(), said(&out))
    };
    let (p, said_) = bad("truncated.jsonl", &text[..text.len() - 40]);
    let lines = text.lines().count();
    assert!(said_.contains(&format!("{p}:{lines}: the session is truncated")), "{said_}");
    let (p, said_) = bad("garbled.jsonl", &text.replacen('\n', "\n{oops\n", 3));
    assert!(said_.contains(&format!("{p}:2: not a JSON line of a Claude Code session")), "{said_}");
    let (p, said_) = bad("other.jsonl", "{\"event\": \"something else\"}\n");
    assert!(said_.contains(&format!("{p}: not a Claude Code session")), "{said_}");
    assert!(!lab.join("probes/bad").exists(), "nothing is written for bad input");
}

/// `probelab ARGS` in `dir` with `path_first` ahead of PATH (where the runtime's `python3` is).
fn probelab_with_path(dir: &Path, path_first: &Path, args: &[&str]) -> Output {
    let path = std::env::join_paths(
        std::iter::once(path_first.to_path_buf())
            .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    Command::new(env!("CARGO_BIN_EXE_probelab"))
        .args(args)
        .current_dir(dir)
        .env("PATH", path)
        .output()
        .unwrap_or_else(|e| panic!("probelab {args:?}: {e}"))
}

#[test]
fn the_users_own_runtime_is_a_command_subject_inited_run_blessed_and_green_outside_the_repository() {
    // the example the README shows: docs/examples/my-agent (agent.py on the official Anthropic SDK with
    // Read and Write, its probelab.toml, a probe), copied into a temp dir and used from there
    let example = repo().join("docs/examples/my-agent");
    let agent = std::fs::read_to_string(example.join("agent.py")).unwrap_or_else(|e| panic!("{e}"));
    let config = std::fs::read_to_string(example.join("probelab.toml")).unwrap_or_else(|e| panic!("{e}"));
    let probe = std::fs::read_to_string(example.join("probes/write-read.toml")).unwrap_or_else(|e| panic!("{e}"));
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap_or_else(|e| panic!("{e}"));
    for (name, text) in [("agent.py", &agent), ("probelab.toml", &config)] {
        let body = text.split_once("\n\n").map(|(_, b)| b).unwrap_or(text);
        assert!(readme.contains(body), "README.md does not show docs/examples/my-agent/{name} as it is");
    }
    assert!(agent.lines().count() <= 50, "the runtime is meant to be small");
    // the Python with the anthropic SDK (scripts/setup's venv): its directory first on PATH, as `python3`
    let python = harness::probe::host::python();
    let bin = python.parent().map(Path::to_path_buf).unwrap_or_default();
    assert!(bin.join("python3").exists(), "{} has no python3: run scripts/setup", bin.display());

    let before = repo_state();
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let lab = tmp.path().canonicalize().unwrap_or_else(|e| panic!("{e}"));
    let out = probelab(&lab, &["init"]);
    assert!(out.status.success(), "{}", said(&out));
    std::fs::write(lab.join("agent.py"), &agent).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(lab.join("probelab.toml"), &config).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(lab.join("probes/write-read.toml"), &probe).unwrap_or_else(|e| panic!("{e}"));
    // a built-in probe beside it (the skeleton) is not for my-agent
    assert!(probelab(&lab, &["new", "demo/first"]).status.success());

    let out = probelab_with_path(&lab, &bin, &["run", "--subject", "my-agent"]);
    assert_eq!(out.status.code(), Some(1), "no golden yet: {}", said(&out));
    assert!(
        said(&out).contains("NEW   agent.write-read") && said(&out).contains("skip  demo.first (not for my-agent)"),
        "{}",
        said(&out)
    );
    let out = probelab_with_path(&lab, &bin, &["run", "--subject", "my-agent", "--bless"]);
    assert!(out.status.success(), "{}", said(&out));
    let golden =
        std::fs::read_to_string(lab.join("golden/my-agent/agent.write-read.snap")).unwrap_or_else(|e| panic!("{e}"));
    assert!(golden.contains("tools: Read@") && golden.contains("  | 1\tone\n  | 2\ttwo\n"), "{golden}");
    assert!(!golden.contains("sk-test"), "the key reached the golden: {golden}");
    let out = probelab_with_path(&lab, &bin, &["run", "--subject", "my-agent"]);
    assert!(out.status.success(), "{}", said(&out));
    assert!(
        said(&out).contains("pass  agent.write-read") && said(&out).contains("1 passed, 0 failed, 1 skipped"),
        "{}",
        said(&out)
    );
    // its differences from the reference, the probe run on both now (scripts/setup installs Claude Code)
    let cc = format!("claude-code@{}", harness::subject::claude_code::REFERENCE_VERSION);
    let out = probelab_with_path(&lab, &bin, &["diff", "--run", "my-agent", &cc]);
    assert!(out.status.success(), "{}", said(&out));
    let diff = said(&out);
    assert!(diff.contains("behaviour differs in 1 of 1 probes:\n  agent.write-read\n"), "{diff}");
    assert!(diff.contains("notes.txt{+ (file state is current in your context"), "{diff}");
    assert!(diff.contains("1 probes in common: 0% same behaviour"), "{diff}");
    assert_eq!(repo_state(), before, "the run wrote into the repository");
}

#[test]
fn a_users_suite_runs_from_cargo_test_one_trial_per_probe_and_subject_with_claims_of_its_own() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let lab = tmp.path().canonicalize().unwrap_or_else(|e| panic!("{e}"));
    let example = repo().join("docs/examples/my-agent");
    std::fs::copy(example.join("agent.py"), lab.join("agent.py")).unwrap_or_else(|e| panic!("{e}"));
    // the runtime's own catalogue, cited by its probe; the python named as it is (no PATH of the test's)
    std::fs::write(lab.join("claims.md"), "# my-agent's claims\n\n- MINE-1 Write writes the content as given.\n")
        .unwrap_or_else(|e| panic!("{e}"));
    let python = harness::probe::host::python();
    let config = std::fs::read_to_string(example.join("probelab.toml")).unwrap_or_else(|e| panic!("{e}"));
    let config = config.replace("\"python3\"", &format!("{:?}", python.display().to_string()));
    std::fs::write(lab.join("probelab.toml"), format!("claims = \"claims.md\"\n{config}"))
        .unwrap_or_else(|e| panic!("{e}"));
    std::fs::create_dir_all(lab.join("probes")).unwrap_or_else(|e| panic!("{e}"));
    let probe = std::fs::read_to_string(example.join("probes/write-read.toml")).unwrap_or_else(|e| panic!("{e}"));
    let probe = probe.replace("claims = [\"EDIT-1\", \"READ-1\"]", "claims = [\"MINE-1\", \"READ-1\"]");
    std::fs::write(lab.join("probes/write-read.toml"), &probe).unwrap_or_else(|e| panic!("{e}"));
    assert!(probelab(&lab, &["new", "demo/first"]).status.success());
    let out = probelab(&lab, &["list"]);
    assert!(said(&out).contains("MINE-1") && said(&out).contains("Write writes the content"), "{}", said(&out));
    for s in ["builtin", "my-agent"] {
        let out = probelab(&lab, &["run", "--subject", s, "--bless"]);
        assert!(out.status.success(), "{}", said(&out));
    }

    // the library call a user's `tests/probes.rs` makes: one trial per probe and subject
    // the nested run's lines go to a log file: a "test result: FAILED" of the trial broken on purpose
    // in this test's own output would read as a failure of the suite
    let log = lab.join("nested-trials.log").to_string_lossy().into_owned();
    let run = |lab: &Path| {
        let trials = harness::testing::trials(lab, &["builtin", "my-agent"]).unwrap_or_else(|e| panic!("{e}"));
        let names: Vec<String> = trials.iter().map(|t| t.name().to_string()).collect();
        let args = libtest_mimic::Arguments {
            test_threads: Some(1),
            logfile: Some(log.clone()),
            ..libtest_mimic::Arguments::default()
        };
        (names, libtest_mimic::run(&args, trials))
    };
    let (names, done) = run(&lab);
    assert_eq!(names, ["builtin/demo.first", "my-agent/agent.write-read"]);
    let logged = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!((done.num_passed, done.num_failed), (2, 0), "{done:?}\n{logged}");
    // a golden that no longer matches fails exactly its trial
    let golden = lab.join("golden/my-agent/agent.write-read.snap");
    let text = std::fs::read_to_string(&golden).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(&golden, text.replace("  | 2\ttwo", "  | 2\tTWO")).unwrap_or_else(|e| panic!("{e}"));
    let (_, done) = run(&lab);
    assert_eq!((done.num_passed, done.num_failed), (1, 1), "{done:?}");

    // an id of the catalogue's that is not there, and a catalogue that names a built-in id, are errors
    std::fs::write(lab.join("probes/write-read.toml"), probe.replace("MINE-1", "MINE-2"))
        .unwrap_or_else(|e| panic!("{e}"));
    let out = probelab(&lab, &["list"]);
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    assert!(
        said(&out).contains("write-read.toml:2:") && said(&out).contains("claim \"MINE-2\" is not in the catalogue"),
        "{}",
        said(&out)
    );
    std::fs::write(lab.join("claims.md"), "- READ-1 mine.\n").unwrap_or_else(|e| panic!("{e}"));
    let out = probelab(&lab, &["list"]);
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    assert!(
        said(&out).contains("probelab.toml:1:10:") && said(&out).contains("claim READ-1 is given twice"),
        "{}",
        said(&out)
    );
}

#[test]
fn diff_run_skips_on_both_sides_a_probe_whose_requirements_are_missing_and_says_so() {
    // issue 27, item 4: it ran them and reported a missing host part as a behaviour difference
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let lab = tmp.path().canonicalize().unwrap_or_else(|e| panic!("{e}"));
    assert!(probelab(&lab, &["init"]).status.success());
    let probe = |id: &str, requires: &str| {
        format!(
            "id = \"own.{id}\"\nclaims = [\"BASH-3\"]\nabout = \"x\"\nsubjects = [\"builtin\"]\n{requires}\n\
             [[turn]]\ntool_use = [{{ name = \"Bash\", input = {{ command = \"echo hi\" }} }}]\n[[turn]]\ntext = \"done\"\n"
        )
    };
    let missing = "requires = [\"probelab-no-such-command-27\"]";
    std::fs::write(lab.join("probes/needs.toml"), probe("needs", missing)).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(lab.join("probes/plain.toml"), probe("plain", "")).unwrap_or_else(|e| panic!("{e}"));
    let out = probelab(&lab, &["diff", "--run", "builtin", "builtin@2.1.235"]);
    assert!(out.status.success(), "{}", said(&out));
    let text = said(&out);
    assert!(
        text.contains(
            "skipped on both sides, their requirements missing here: own.needs (needs probelab-no-such-command-27"
        ),
        "{text}"
    );
    assert!(text.contains("1 probes in common: 100% same behaviour"), "{text}");
}

/// An agent of the test's own with tools in its own names and shapes (`view`, `create`), which refuses
/// to overwrite in words, without is_error — run on Claude Code's probes through a dialect file its
/// project declares (issue 40, item 1).
const OWN_DIALECT_AGENT: &str = r#"import os, sys
import anthropic
TOOLS = [
    {"name": "view", "description": "Shows a file.", "input_schema": {"type": "object",
     "properties": {"path": {"type": "string"}}, "required": ["path"]}},
    {"name": "create", "description": "Creates a new file.", "input_schema": {"type": "object",
     "properties": {"path": {"type": "string"}, "file_text": {"type": "string"}}, "required": ["path", "file_text"]}},
]
def run_tool(name, args):
    if name == "view":
        with open(args["path"], encoding="utf-8") as f:
            return f.read()
    if os.path.exists(args["path"]):
        return "Path " + args["path"] + " already exists"
    with open(args["path"], "w", encoding="utf-8") as f:
        f.write(args["file_text"])
    return "Created " + args["path"]
client = anthropic.Anthropic()
messages = [{"role": "user", "content": sys.argv[1]}]
while True:
    reply = client.messages.create(model="claude-sonnet-4-5", max_tokens=4096, tools=TOOLS, messages=messages)
    messages.append({"role": "assistant", "content": reply.content})
    calls = [b for b in reply.content if b.type == "tool_use"]
    if reply.stop_reason != "tool_use" or not calls:
        break
    messages.append({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": c.id, "content": run_tool(c.name, c.input)} for c in calls]})
"#;

/// A project made by `probelab init` in a temp dir (kept while the first value lives), and the directory
/// of the python with the official SDK (scripts/setup's venv), to put first on PATH as `python3`.
fn inited_lab_with_python() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let python = harness::probe::host::python();
    let bin = python.parent().map(Path::to_path_buf).unwrap_or_default();
    assert!(bin.join("python3").exists(), "{} has no python3: run scripts/setup", bin.display());
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let lab = tmp.path().canonicalize().unwrap_or_else(|e| panic!("{e}"));
    assert!(probelab(&lab, &["init"]).status.success());
    (tmp, lab, bin)
}

#[test]
fn a_project_declares_a_dialect_and_its_agent_runs_claude_code_s_probes_with_refusals_read_from_words() {
    let (_tmp, lab, bin) = inited_lab_with_python();
    std::fs::write(lab.join("agent.py"), OWN_DIALECT_AGENT).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(
        lab.join("probelab.toml"),
        "[subjects.mini]\ncommand = [\"python3\", \"{project}/agent.py\", \"{prompt}\"]\n\
         env = { ANTHROPIC_BASE_URL = \"{base_url}\", ANTHROPIC_API_KEY = \"sk-test\" }\n\
         dialect = \"dialects/mini.toml\"\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    std::fs::create_dir(lab.join("dialects")).unwrap_or_else(|e| panic!("{e}"));
    let dialect = "agent = \"mini\"\n[tools.Read]\nname = \"view\"\ninput = { file_path = \"path\" }\n\
                   [tools.Write]\nname = \"create\"\ninput = { file_path = \"path\", content = \"file_text\" }\n\
                   refuses = [\"already exists$\"]\n";
    std::fs::write(lab.join("dialects/mini.toml"), dialect).unwrap_or_else(|e| panic!("{e}"));
    // a probe of Claude Code's: a Write over a file never read is refused with is_error (Claude Code's
    // "File has not been read yet"); a new file is written; a Read returns the text
    let probe = "id = \"mini.write-over\"\nclaims = [\"EDIT-1\"]\nabout = \"x\"\nsubjects = [\"claude-code\"]\n\
                 [fixture]\nfiles = { \"old.txt\" = \"old\\n\" }\n\
                 [[turn]]\ntool_use = [{ name = \"Write\", input = { file_path = \"{cwd}/old.txt\", content = \"new\\n\" } }]\n\
                 [[turn]]\ntool_use = [{ name = \"Write\", input = { file_path = \"{cwd}/new.txt\", content = \"fresh\\n\" } }]\n\
                 [[turn]]\ntext = \"done\"\n\
                 [[check]]\nresult = 1\nis_error = true\ncontains = \"has not been read yet\"\n\
                 [[check]]\nfile = \"old.txt\"\nequals = \"old\\n\"\n\
                 [[check]]\nfile = \"new.txt\"\nequals = \"fresh\\n\"\n";
    std::fs::write(lab.join("probes/write-over.toml"), probe).unwrap_or_else(|e| panic!("{e}"));

    // the tool list, recorded from the agent's own first request, and the dialect checked against it
    let out = probelab_with_path(&lab, &bin, &["dialect", "check", "mini", "--record"]);
    assert!(out.status.success(), "{}", said(&out));
    assert!(said(&out).contains("recorded the 2 tools mini sent into dialects/mini.tools.json"), "{}", said(&out));
    assert!(said(&out).contains("maps (2): Read → view, Write → create\n") && said(&out).contains("problems: none"));
    // a dialect naming a tool the agent does not send is a problem (exit 1)
    let wrong = dialect.replace("name = \"view\"", "name = \"show\"");
    std::fs::write(lab.join("dialects/mini.toml"), &wrong).unwrap_or_else(|e| panic!("{e}"));
    let out = probelab_with_path(&lab, &bin, &["dialect", "check", "mini"]);
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    assert!(said(&out).contains("Read → show: mini sends no tool \"show\""), "{}", said(&out));
    std::fs::write(lab.join("dialects/mini.toml"), dialect).unwrap_or_else(|e| panic!("{e}"));

    // the conformance table: files and is_error are Claude Code's (the refusal read from words), the
    // words are not — semantic-only, and the cell says where is_error came from
    let out_dir = lab.join("table");
    let args = ["conformance", "--subject", "mini", "--claude-code", "none", "-j", "1", "--out"];
    let out = probelab_with_path(&lab, &bin, &[&args[..], &[&out_dir.to_string_lossy()]].concat());
    assert!(out.status.success(), "{}", said(&out));
    let table = std::fs::read_to_string(out_dir.join("table.txt")).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        table.contains("mini mini.write-over: semantic-only — check 1: result 1 (is_error read from words in check 1)"),
        "{table}"
    );
    // without the refusal, the same run differs: is_error is what the agent said
    std::fs::write(lab.join("dialects/mini.toml"), dialect.replace("refuses = [\"already exists$\"]\n", ""))
        .unwrap_or_else(|e| panic!("{e}"));
    let out = probelab_with_path(&lab, &bin, &[&args[..], &[&out_dir.to_string_lossy()]].concat());
    assert!(out.status.success(), "{}", said(&out));
    let table = std::fs::read_to_string(out_dir.join("table.txt")).unwrap_or_else(|e| panic!("{e}"));
    assert!(table.contains("mini mini.write-over: differs — check 1: result 1\n"), "{table}");
}

#[test]
fn a_command_subject_pinned_on_npm_is_installed_once_prepared_once_and_named_in_its_golden() {
    let (_tmp, lab, bin) = inited_lab_with_python();
    // the agent npm lays out: its version, its prepare step (a file it needs at every run), then the
    // agent of the dialect test, which reads that file first
    let agent = format!(
        "#!/usr/bin/env python3\nimport os, sys\nif sys.argv[1:] == ['--version']:\n    print('mini-agent 1.2.3'); sys.exit(0)\n\
         if sys.argv[1:] == ['--prepare']:\n    open(os.environ['MARK'], 'w').write('prepared\\n')\n    \
         open(os.environ['MARK'] + '.blob', 'wb').write(b'0' * (1 << 20))\n    \
         open(os.environ['COUNT'], 'a').write('x\\n'); sys.exit(0)\n\
         if open(os.environ['PREPARED']).read() != 'prepared\\n':\n    sys.exit(3)\n\
         import shutil\nif not shutil.which('mini-helper'):\n    sys.exit(4)\n{OWN_DIALECT_AGENT}"
    );
    std::fs::write(lab.join("agent-src.py"), agent).unwrap_or_else(|e| panic!("{e}"));
    let npm = format!(
        "#!/bin/sh\necho \"$*\" >> '{lab}/npm-runs'\nall=\"$*\"\nprefix=\nwhile [ $# -gt 0 ]; do\n  case \"$1\" in --prefix) prefix=$2; shift;; esac\n  shift\ndone\n\
         d=\"$prefix/node_modules/mini-agent/bin\"\nmkdir -p \"$d\" && cp '{lab}/agent-src.py' \"$d/agent\" && chmod +x \"$d/agent\"\n\
         case \"$all\" in *helper-pkg@0.1.0*) mkdir -p \"$prefix/node_modules/.bin\" && printf '#!/bin/sh\\necho ok\\n' > \"$prefix/node_modules/.bin/mini-helper\" && chmod +x \"$prefix/node_modules/.bin/mini-helper\";; esac\n",
        lab = lab.display()
    );
    let npm_path = lab.join("fake-npm");
    std::fs::write(&npm_path, npm).unwrap_or_else(|e| panic!("{e}"));
    std::process::Command::new("chmod").arg("+x").arg(&npm_path).status().unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(
        lab.join("probelab.toml"),
        "[subjects.mini]\n\
         install = { npm = \"mini-agent@1.2.3\", also = [\"helper-pkg@0.1.0\"], program = \"node_modules/mini-agent/bin/agent\", version_line = \"mini-agent {v}\", \
         prepare = [\"{program}\", \"--prepare\"], prepare_env = { MARK = \"{install}/prepared.txt\", COUNT = \"{install}/prepare-runs\" } }\n\
         command = [\"{program}\", \"{prompt}\"]\n\
         env = { ANTHROPIC_BASE_URL = \"{base_url}\", ANTHROPIC_API_KEY = \"sk-test\", PREPARED = \"{install}/prepared.txt\" }\n\
         dialect = \"dialects/mini.toml\"\n"
    )
    .unwrap_or_else(|e| panic!("{e}"));
    std::fs::create_dir(lab.join("dialects")).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(
        lab.join("dialects/mini.toml"),
        "agent = \"mini\"\n[tools.Read]\nname = \"view\"\ninput = { file_path = \"path\" }\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let probe = "id = \"mini.read\"\nclaims = [\"READ-1\"]\nabout = \"x\"\nsubjects = [\"claude-code\"]\n\
                 [fixture]\nfiles = { \"a.txt\" = \"alpha\\n\" }\n\
                 [[turn]]\ntool_use = [{ name = \"Read\", input = { file_path = \"{cwd}/a.txt\" } }]\n[[turn]]\ntext = \"done\"\n\
                 [[check]]\nresult = 1\nkind = \"semantic\"\ncontains = \"alpha\"\n";
    std::fs::write(lab.join("probes/read.toml"), probe).unwrap_or_else(|e| panic!("{e}"));
    let cache = lab.join("cache");
    // the python with the SDK first on PATH, as `python3` (the agent's `env python3`)
    let path = std::env::join_paths(
        std::iter::once(bin.clone()).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_probelab"))
            .args(args)
            .current_dir(&lab)
            .env("PATH", &path)
            .env("PROBELAB_CACHE", &cache)
            .env("PROBELAB_NPM", &npm_path)
            .output()
            .unwrap_or_else(|e| panic!("probelab {args:?}: {e}"))
    };
    let out = run(&["run", "--subject", "mini", "--bless"]);
    assert!(out.status.success(), "{}", said(&out));
    let out = run(&["run", "--subject", "mini"]);
    assert!(out.status.success() && said(&out).contains("pass  mini.read"), "{}", said(&out));
    // installed once into the cache, prepared once (confined: the install is all it may write), both
    // runs on it
    let count = |f: &Path| std::fs::read_to_string(f).unwrap_or_default().lines().count();
    let install = cache.join("npm/mini-agent/1.2.3");
    assert_eq!(
        (count(&lab.join("npm-runs")), count(&install.join("prepare-runs"))),
        (1, 1),
        "npm and prepare ran once each"
    );
    // the package beside it in the same install, its program first on the agent's PATH (else exit 4)
    let npm_args = std::fs::read_to_string(lab.join("npm-runs")).unwrap_or_default();
    assert!(npm_args.contains("mini-agent@1.2.3 helper-pkg@0.1.0"), "{npm_args}");
    assert!(install.join(".probelab-prepared").is_file() && install.join("prepared.txt").is_file());
    // what prepare added (a 1 MiB file) counts in the install's size, against the cache's cap
    let meta: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(install.join("probelab-install.json")).unwrap_or_else(|e| panic!("{e}")),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(meta["disk_size"].as_u64().is_some_and(|n| n > 1 << 20), "the prepared install's size: {meta}");
    let program = install.join("node_modules/mini-agent/bin/agent");
    let sha = {
        use sha2::Digest;
        let bytes = std::fs::read(&program).unwrap_or_else(|e| panic!("{e}"));
        format!("{:x}", sha2::Sha256::digest(&bytes))
    };
    let golden = std::fs::read_to_string(lab.join("golden/mini/mini.read.snap")).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        golden.contains(&format!("description: subject mini, npm mini-agent@1.2.3 (program sha256 {sha}), ")),
        "{golden}"
    );
    // a program changed in the cache is found at the next use, never run as the pinned one
    std::fs::write(&program, "#!/bin/sh\necho 'mini-agent 1.2.3'\n").unwrap_or_else(|e| panic!("{e}"));
    let out = run(&["run", "--subject", "mini"]);
    assert!(out.status.success(), "repaired and run again: {}", said(&out));
    assert_eq!(count(&lab.join("npm-runs")), 2, "the changed install was installed again: {}", said(&out));
}
