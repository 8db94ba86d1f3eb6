//! `probelab matrix` / `bisect` on bad input, run as a user would, against a cache of the test's own
//! (a catalogue written by the test, no npm): each error names the version and what to do, and exits 2
//! (or a matrix cell says it); a matrix stopped half-way resumes from the cells it kept; a golden made
//! with another binary is an error cell, not a comparison.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A cache whose catalogue lists 2.0.0 (no linux-x64 binary), 2.1.200, 2.1.201, 2.1.235, fetched now.
fn cache() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let dir = d.path().join("claude-code");
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
    let v = |version: &str, linux: bool| serde_json::json!({"version": version, "published": null, "linux_x64": linux});
    let cat = serde_json::json!({
        "package": "@anthropic-ai/claude-code",
        "fetched_at": jiff::Timestamp::now().to_string(),
        "versions": [v("2.0.0", false), v("2.1.200", true), v("2.1.201", true), v("2.1.235", true)],
    });
    std::fs::write(dir.join("versions.json"), cat.to_string()).unwrap_or_else(|e| panic!("{e}"));
    d
}

fn probelab(cache: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_probelab"))
        .args(args)
        .current_dir(repo())
        .env("PROBELAB_CACHE", cache)
        .env("PROBELAB_NPM", "/nonexistent/npm")
        .envs(env.iter().copied())
        .output()
        .unwrap_or_else(|e| panic!("{e}"))
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn bad_versions_are_named_with_what_to_do() {
    let c = cache();
    let out = probelab(c.path(), &["matrix", "--versions", "2.1.202"], &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("2.1.202") && stderr(&out).contains("2.1.201"),
        "unknown, with the nearest: {}",
        stderr(&out)
    );
    let out = probelab(c.path(), &["matrix", "--versions", ">=9.0.0"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains(">=9.0.0"), "{}", stderr(&out));
    let out = probelab(c.path(), &["matrix", "--versions", "2.0.0"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("2.0.0") && stderr(&out).contains("linux-x64"), "{}", stderr(&out));
    let out = probelab(c.path(), &["bisect", "claude-code.read-size", "--good", "2.1.200", "--bad", "2.1.999"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("2.1.999"), "{}", stderr(&out));
    let out = probelab(c.path(), &["bisect", "no.such-probe", "--good", "2.1.200", "--bad", "2.1.235"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no.such-probe"), "{}", stderr(&out));
}

#[test]
fn npm_unreachable_without_a_catalogue_is_a_clear_error() {
    let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let out = probelab(d.path(), &["matrix", "--versions", "2.1.235"], &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("/nonexistent/npm") || err.contains("npm"), "{err}");
    assert!(err.contains("versions.json"), "says which list it lacks: {err}");
}

#[test]
fn a_cap_below_one_install_is_an_error_cell_before_any_download() {
    let c = cache();
    let out_dir = c.path().join("cells");
    let out = probelab(
        c.path(),
        &["matrix", "--versions", "2.1.201", "--out", &out_dir.to_string_lossy(), "probes/claude-code/read-size.toml"],
        &[("PROBELAB_CACHE_MAX", "10M")],
    );
    assert_eq!(out.status.code(), Some(1), "an error cell: {}", stderr(&out));
    let cell: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out_dir.join("2.1.201/claude-code.read-size.json")).unwrap_or_else(|e| panic!("{e}")),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(cell["outcome"], "error");
    let reason = cell["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("2.1.201") && reason.contains("PROBELAB_CACHE_MAX"), "{reason}");
    assert!(!c.path().join("claude-code/2.1.201").exists(), "nothing was installed");
}

#[test]
fn a_stopped_matrix_resumes_from_the_cells_it_kept() {
    let c = cache();
    let out_dir = c.path().join("cells");
    let kept = out_dir.join("2.1.201");
    std::fs::create_dir_all(&kept).unwrap_or_else(|e| panic!("{e}"));
    let probe =
        harness::probe::load(&repo().join("probes/claude-code/read-size.toml")).unwrap_or_else(|e| panic!("{e}"));
    let mut obs = harness::observe::Observation::error(&probe, "claude-code", Some("2.1.201"), "x");
    obs.outcome = harness::observe::Outcome::Pass;
    obs.reason = String::new();
    obs.fingerprint = "f".repeat(64);
    obs.normaliser = harness::transcript::normalise::stamp().into();
    harness::observatory::write_cell(&out_dir, &obs).unwrap_or_else(|e| panic!("{e}"));
    // the version is not installed and cannot be (cap): a resumed cell needs neither
    let out = probelab(
        c.path(),
        &["matrix", "--versions", "2.1.201", "--out", &out_dir.to_string_lossy(), "probes/claude-code/read-size.toml"],
        &[("PROBELAB_CACHE_MAX", "10M")],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("kept from an earlier run"), "{}", stderr(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("claude-code.read-size p"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    // a cell that ran another version of the probe file is not kept: the matrix runs it again (and here
    // cannot install the version, so the cell is an error naming why)
    obs.probe_sha256 = "0".repeat(64);
    harness::observatory::write_cell(&out_dir, &obs).unwrap_or_else(|e| panic!("{e}"));
    let out = probelab(
        c.path(),
        &["matrix", "--versions", "2.1.201", "--out", &out_dir.to_string_lossy(), "probes/claude-code/read-size.toml"],
        &[("PROBELAB_CACHE_MAX", "10M")],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(!stderr(&out).contains("kept from an earlier run"), "{}", stderr(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("claude-code.read-size E"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn a_golden_of_another_binary_is_an_error_cell_naming_both_hashes() {
    // the reference version, installed by scripts/setup in the real cache
    let mut layout = harness::lab::Layout::repo();
    layout.engine = PathBuf::from(env!("CARGO_BIN_EXE_probelab"));
    let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    layout.golden = d.path().to_path_buf();
    let v = harness::subject::claude_code::REFERENCE_VERSION;
    let dir = d.path().join(format!("claude-code@{v}"));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
    let wrong = "0".repeat(64);
    std::fs::write(
        dir.join("claude-code.read-size.snap"),
        format!("---\nsource: x\ndescription: subject claude-code {v}, binary sha256 {wrong}\nexpression: transcript\n---\nbody\n"),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let probe =
        harness::probe::load(&repo().join("probes/claude-code/read-size.toml")).unwrap_or_else(|e| panic!("{e}"));
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap_or_else(|e| panic!("{e}"));
    let obs = rt.block_on(harness::observatory::run_cell(&probe, v, &layout, harness::observatory::Goldens::Compare));
    assert_eq!(obs.outcome, harness::observe::Outcome::Error);
    assert!(obs.reason.contains(&wrong) && obs.reason.contains(v), "{}", obs.reason);
}

#[test]
fn history_answers_since_when_from_the_committed_data_in_one_command() {
    let c = cache();
    // since when does Read mention allow_large, and what does it say (issue 43's first question)
    let out = probelab(c.path(), &["history", "Read"], &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    let at = text.find("\n2.1.296 (against 2.1.295)\n").unwrap_or_else(|| panic!("no 2.1.296 entry:\n{text}"));
    let release = &text[at..text[at + 1..].find("\n\n").map_or(text.len(), |e| at + 1 + e)];
    assert!(release.contains("interface  ~ tool Read: + property `allow_large` (boolean)"), "{release}");
    assert!(release.contains("call Read again with allow_large: true"), "the words of the result: {release}");
    assert!(!text[..at].contains("allow_large"), "allow_large before 2.1.296:\n{text}");
    // a probe whose change was in another tool's results only is not in Read's history
    assert!(!text.contains("edit.symlink-writes"), "{text}");
    // the same as JSON, narrowed with --since
    let out = probelab(c.path(), &["history", "read", "--since", "2.1.296", "--json"], &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(v["topic"], "tool Read");
    let versions: Vec<&str> =
        v["entries"].as_array().into_iter().flatten().filter_map(|e| e["version"].as_str()).collect();
    assert!(!versions.is_empty() && versions.iter().all(|v| *v != "2.1.296"), "{versions:?}");
    // a claim, a budget by a part of its name, a tool that came and went
    let out = probelab(c.path(), &["history", "token ceiling"], &[]);
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("history of budget \"Read: token ceiling\""));
    let out = probelab(c.path(), &["history", "TaskOutput"], &[]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("\n2.1.277 (against 2.1.276)\n  interface  - tool TaskOutput\n")
    );
    // what the exploration of a release found of the tool, from the published records
    let out = probelab(c.path(), &["history", "NotebookEdit", "--since", "2.1.319"], &[]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("\n2.1.321 (against 2.1.319)\n"), "{text}");
    assert!(text.contains("\"Deleted cell undefined\"; 2.1.321: \"Deleted cell cell-1\""), "{text}");
    assert!(text.contains("\n  exploration result: NotebookEdit (notebook/notebook-edit/delete) "), "{text}");
    // which tools came, went or became deferred, and when
    let out = probelab(c.path(), &["history", "tools"], &[]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("\n2.1.277 (against 2.1.276)\n  interface  - tool TaskOutput\n"), "{text}");
    assert!(text.lines().filter(|l| l.contains("interface  ")).all(|l| l.contains(" tool ")), "{text}");
    // one release's limits, each with its probe and how it was measured
    let out = probelab(c.path(), &["budgets", "2.1.334", "--tool", "read"], &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("budgets of Claude Code 2.1.334"), "{text}");
    let token = text.lines().find(|l| l.starts_with("Read: token ceiling")).unwrap_or_else(|| panic!("{text}"));
    assert!(token.contains(" 25000 ") && token.ends_with("read.token-limit, exact: Claude Code wrote it"), "{token}");
    assert!(!text.contains("Bash"), "--tool read: {text}");
    let out = probelab(c.path(), &["budgets", "2.1.100"], &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    // what it cannot answer, said
    for (args, said) in [
        (&["history", "Nope"][..], "\"Nope\" is no tool a probe calls"),
        (&["history", "Auto-compact"], "\"Auto-compact\" names 4 budgets"),
        (&["history", "Read", "--since", "2.1.100"], "--since 2.1.100"),
    ] {
        let out = probelab(c.path(), args, &[]);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(said), "{args:?}: {}", stderr(&out));
    }
}
