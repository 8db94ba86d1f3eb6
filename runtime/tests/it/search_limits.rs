//! The Grep tool on hostile inputs: each ends with a clear result within the deadline — never a hang,
//! never a panic (issue: search acceptance).

use crate::support::Sandbox;
use probelab_runtime::limits::GREP_DEADLINE_ENV as DEADLINE_ENV;
use probelab_runtime::{builtin, ToolContext, ToolError, ToolOutput};
use serde_json::json;
use std::time::{Duration, Instant};

const DEADLINE_MS: u64 = 5_000;

/// A sandbox and a context of it with the Grep deadline set.
fn sandbox() -> (Sandbox, ToolContext) {
    let sb = Sandbox::new();
    let mut c = sb.ctx();
    c.env.insert(DEADLINE_ENV.into(), DEADLINE_MS.to_string());
    (sb, c)
}

async fn grep(sb: &Sandbox, c: &ToolContext, input: serde_json::Value) -> (Result<ToolOutput, ToolError>, Duration) {
    let t = Instant::now();
    let tool = builtin::registry().get("Grep").unwrap_or_else(|| panic!("no Grep tool"));
    // the outer bound is only a guard against a hang; the tool's own deadline must fire first
    let r = tokio::time::timeout(Duration::from_millis(DEADLINE_MS * 3), sb.call(tool.as_ref(), input, c))
        .await
        .unwrap_or_else(|_| panic!("the Grep tool hung past three times its deadline"));
    (r, t.elapsed())
}

fn text(r: &Result<ToolOutput, ToolError>) -> String {
    match r {
        Ok(ToolOutput::Text(t)) | Ok(ToolOutput::Data { text: t, .. }) => t.clone(),
        Ok(other) => format!("{other:?}"),
        Err(e) => format!("error: {e}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pathological_pattern_is_refused_at_once() {
    let (sb, c) = sandbox();
    std::fs::write(c.cwd.join("f.txt"), "a".repeat(10_000)).unwrap_or_else(|e| panic!("{e}"));
    let (r, _) = grep(&sb, &c, json!({"pattern": "a{1,1000000000}"})).await;
    assert!(text(&r).contains("compiled regex exceeds size limit"), "{}", text(&r));
    let (r, _) = grep(&sb, &c, json!({"pattern": "(a+a+)+b", "output_mode": "count"})).await;
    // count mode always names the totals, as Claude Code 2.1.235 does
    assert_eq!(text(&r), "No matches found\n\nFound 0 total occurrences across 0 files.");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_gigabyte_file_is_searched_or_cut_off_by_the_deadline() {
    let (sb, c) = sandbox();
    let f = std::fs::File::create(c.cwd.join("huge.bin")).unwrap_or_else(|e| panic!("{e}"));
    f.set_len(1 << 30).unwrap_or_else(|e| panic!("{e}")); // sparse: 1 GiB of NUL bytes
    drop(f);
    std::fs::write(c.cwd.join("note.txt"), "needle\n").unwrap_or_else(|e| panic!("{e}"));
    let (r, _) =
        grep(&sb, &c, json!({"pattern": "needle", "path": c.cwd.join("huge.bin").display().to_string()})).await;
    let t = text(&r);
    assert!(t == "No files found" || t.contains("timed out"), "{t}");
    // in a directory walk the binary file is skipped at its first NUL; the text file is found
    let (r, _) = grep(&sb, &c, json!({"pattern": "needle"})).await;
    assert_eq!(text(&r), "Found 1 file\nnote.txt");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deep_tree_a_binary_file_and_a_fifo() {
    let (sb, c) = sandbox();
    let mut deep = c.cwd.clone();
    for i in 0..300 {
        deep.push(format!("d{}", i % 10));
    }
    std::fs::create_dir_all(&deep).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(deep.join("bottom.txt"), "needle at the bottom\n").unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(c.cwd.join("bin.dat"), b"needle\x00binary\n").unwrap_or_else(|e| panic!("{e}"));
    let fifo = c.cwd.join("pipe");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap_or_else(|e| panic!("{e}"));
    assert!(made.success());
    let (r, took) = grep(&sb, &c, json!({"pattern": "needle", "output_mode": "count"})).await;
    let t = text(&r);
    assert!(t.ends_with("Found 1 total occurrence across 1 file."), "{t}");
    assert!(took < Duration::from_millis(DEADLINE_MS));
    let (r, _) = grep(
        &sb,
        &c,
        json!({"pattern": "needle", "path": c.cwd.join("bin.dat").display().to_string(), "output_mode": "content"}),
    )
    .await;
    assert!(text(&r).starts_with("binary file matches (found \"\\0\" byte around offset 6)"), "{}", text(&r));
    let (r, _) = grep(&sb, &c, json!({"pattern": "needle", "path": fifo.display().to_string()})).await;
    assert!(
        matches!(&r, Err(ToolError::Validation(m)) if m.starts_with("Path is not a regular file or directory")),
        "{}",
        text(&r)
    );
}
