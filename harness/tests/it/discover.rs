//! `probelab discover` against two real releases (issue 38): the reference and the newest release the
//! matrix measured, which `scripts/setup` installs. One session each side twice, no minimising: the
//! exploration must find what is known to differ between them — TaskOutput gone from the tools offered,
//! Read's size-limit refusal offering `allow_large` — say it in its report, and write report.json.

use std::path::Path;

#[test]
fn discover_finds_what_is_known_to_differ_between_two_releases() {
    let (a, b) = (probelab_runtime::profile::REFERENCE, probelab_runtime::profile::NEWEST);
    for v in [a, b] {
        if !harness::versions::cache_root().join("claude-code").join(v).is_dir() {
            eprintln!("NOT RUN: claude-code@{v} is not installed (scripts/setup installs it)");
            return;
        }
    }
    let out = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let run = std::process::Command::new(env!("CARGO_BIN_EXE_probelab"))
        .args(["discover", a, b, "--sessions", "1", "--no-minimise", "--out"])
        .arg(out.path())
        .current_dir(&repo)
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let said = format!("{}{}", String::from_utf8_lossy(&run.stdout), String::from_utf8_lossy(&run.stderr));
    assert!(run.status.success(), "{said}");
    let report: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.path().join("report.json")).unwrap_or_else(|e| panic!("{e}\n{said}")),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let stable = report["stable"].as_array().cloned().unwrap_or_default();
    let shows = |kind: &str, what: &str, left_has: &str, right_has: &str| {
        stable.iter().any(|f| {
            f["kind"] == kind
                && f["what"].as_str().is_some_and(|w| w.contains(what))
                && f["left"].as_str().is_some_and(|l| l.contains(left_has))
                && f["right"]
                    .as_str()
                    .is_some_and(|r| r.contains(right_has) && !r.contains(left_has) || left_has.is_empty())
        })
    };
    assert!(shows("request", "tools offered", "TaskOutput", ""), "TaskOutput's leaving not found:\n{said}");
    assert!(
        stable.iter().any(|f| f["kind"] == "result"
            && f["right"].as_str().is_some_and(|r| r.contains("allow_large"))
            && f["left"].as_str().is_some_and(|l| !l.contains("allow_large"))),
        "Read's allow_large not found:\n{said}"
    );
    assert!(report["calls"].as_u64().unwrap_or(0) > 50, "{said}");
    assert!(said.contains("## Stable differences: "), "{said}");
}
