//! The official Anthropic Python SDK as a real client of the stub (installed by `scripts/setup`).

use crate::support::*;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::Stdio;
use stub_messages::ExchangeKind;
use tokio::io::AsyncBufReadExt;

/// The Python that has `anthropic`: `$PROBELAB_PYTHON`, else the venv `scripts/setup` makes.
fn python() -> PathBuf {
    if let Some(p) = std::env::var_os("PROBELAB_PYTHON") {
        return PathBuf::from(p);
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|| PathBuf::from(".cache"));
    let p = cache.join("probelab/venv/bin/python");
    assert!(p.exists(), "{} is missing: run scripts/setup (it installs the anthropic SDK into that venv)", p.display());
    p
}

fn api_key_header(h: &std::collections::BTreeMap<String, String>) -> Option<&str> {
    h.get("x-api-key").or_else(|| h.get("authorization")).map(String::as_str)
}

fn client_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/sdk/anthropic_client.py")
}

async fn sdk(url: &str, scenario: &str) -> (bool, Value) {
    let out = tokio::process::Command::new(python())
        .arg(client_script())
        .arg(url)
        .arg(scenario)
        .output()
        .await
        .unwrap_or_else(|e| panic!("cannot run python: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let v = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
        panic!("SDK printed no JSON ({e}).\nstdout: {stdout}\nstderr: {}", String::from_utf8_lossy(&out.stderr))
    });
    (out.status.success(), v)
}

const READ_TURNS: &str = r#"
id = "sdk"
[[turn]]
text = "Let me read it."
tool_use = [{ name = "Read", input = { file_path = "/sandbox/f.txt", offset = 1, limit = 20, flags = { deep = ["x", 1, false] } } }]
[[turn]]
text = "The file says data."
"#;

#[tokio::test]
async fn sdk_stream_reassembles_the_scripted_tool_use() {
    let f = start(READ_TURNS).await;
    let (ok, v) = sdk(&f.running.url(), "stream").await;
    assert!(ok, "{v}");
    assert_eq!(v["stop_reason"], "tool_use");
    assert_eq!(v["id"], "msg_sdk_main_1");
    assert_eq!(
        v["content"][0],
        json!({"type": "text", "text": "Let me read it.", "citations": null})
            .as_object()
            .map(|o| {
                let mut o = o.clone();
                o.remove("citations");
                Value::Object(o)
            })
            .unwrap_or_default()
    );
    assert_eq!(v["content"][1]["type"], "tool_use");
    assert_eq!(v["content"][1]["id"], "toolu_sdk_1");
    assert_eq!(
        v["content"][1]["input"],
        json!({"file_path": "/sandbox/f.txt", "offset": 1, "limit": 20, "flags": {"deep": ["x", 1, false]}})
    );
    assert!(v["events"].as_array().is_some_and(|e| e.iter().any(|k| k == "input_json")), "{v}");
    let ex = &f.stub.recorder().exchanges()[0];
    // SDK 2.x sends the key as a bearer token; older ones as x-api-key: whichever came is redacted.
    assert_eq!(api_key_header(&ex.headers), Some("<redacted>"));
    assert!(ex.headers["user-agent"].starts_with("Anthropic/Python"), "{:?}", ex.headers);
    assert_eq!(ex.request.as_ref().map(|r| r["stream"].clone()), Some(json!(true)));
}

#[tokio::test]
async fn sdk_non_streaming_create() {
    let f = start(READ_TURNS).await;
    let (ok, v) = sdk(&f.running.url(), "json").await;
    assert!(ok, "{v}");
    assert_eq!(v["stop_reason"], "tool_use");
    assert_eq!(v["content"][1]["input"]["limit"], 20);
}

#[tokio::test]
async fn sdk_tool_loop_passes_the_pairing_rule() {
    let f = start(READ_TURNS).await;
    let (ok, v) = sdk(&f.running.url(), "loop").await;
    assert!(ok, "{v}");
    assert_eq!(v["stop_reasons"], json!(["tool_use", "end_turn"]));
    assert_eq!(v["second"][0]["text"], "The file says data.");
    let ex = f.stub.recorder().exchanges();
    assert_eq!(ex.len(), 2);
    assert!(ex.iter().all(|e| e.violation.is_none() && e.kind == ExchangeKind::Turn));
}

/// The real-client check of the strict rules: an ordinary program's traffic (cached system prompt and
/// tool, thinking replayed with its signature, results followed by a note, stop sequences, tool_choice,
/// a prefill, count_tokens) trips none of them.
#[tokio::test]
async fn sdk_traffic_passes_every_strict_rule() {
    let f = start(
        r#"
id = "sdk"
[[turn]]
thinking = "The file first."
text = "Let me read it."
tool_use = [{ name = "Read", input = { file_path = "/sandbox/f.txt" } }]
[[turn]]
text = "The file says data."
"#,
    )
    .await;
    assert!(f.stub.script().stub.strict);
    let (ok, v) = sdk(&f.running.url(), "strict").await;
    assert!(ok, "{v}");
    assert_eq!(v["stop_reasons"], json!(["tool_use", "end_turn", "end_turn"]));
    assert_eq!(v["first"][0]["type"], "thinking");
    let ex = f.stub.recorder().exchanges();
    let refused: Vec<_> = ex.iter().filter_map(|e| e.violation.as_ref()).collect();
    assert!(refused.is_empty(), "{refused:?}");
    let kinds: Vec<_> = ex.iter().map(|e| (e.kind, e.status)).collect();
    assert_eq!(
        kinds,
        [
            (ExchangeKind::Turn, 200),
            (ExchangeKind::Turn, 200),
            (ExchangeKind::Side, 200), // the prefill request carries no tools
            (ExchangeKind::CountTokens, 200)
        ]
    );
    // the replayed assistant turn came back whole: thinking (with the stub's signature) first
    let replayed = &ex[1].request.as_ref().map(|r| r["messages"][1]["content"].clone()).unwrap_or_default();
    assert_eq!(replayed[0]["signature"], "stub-signature-sdk-main-1");
    assert_eq!(replayed[2]["type"], "tool_use");
}

#[tokio::test]
async fn sdk_retries_a_529_and_both_attempts_are_recorded() {
    let f =
        start("[[turn]]\ntext = \"after retry\"\nfault = [{ kind = \"http\", status = 529, retry_after = 0 }]\n").await;
    let (ok, v) = sdk(&f.running.url(), "stream").await;
    assert!(ok, "{v}");
    assert_eq!(v["content"][0]["text"], "after retry");
    let ex = f.stub.recorder().exchanges();
    let statuses: Vec<u16> = ex.iter().map(|e| e.status).collect();
    assert_eq!(statuses, [529, 200]);
    assert!(ex.iter().all(|e| e.turn == Some(0)));
    // the SDK counts its retries in a header
    assert_eq!(ex[1].headers.get("x-stainless-retry-count").map(String::as_str), Some("1"));
}

#[tokio::test]
async fn sdk_sees_the_pairing_violation_as_a_bad_request() {
    let f = start(READ_TURNS).await;
    let (ok, v) = sdk(&f.running.url(), "unpaired").await;
    assert!(!ok);
    assert_eq!((v["error"].clone(), v["status"].clone()), (json!("BadRequestError"), json!(400)));
    assert!(v["body"]["error"]["message"].as_str().unwrap_or_default().contains("toolu_x_1"), "{v}");
    // the body the SDK keeps names the request, as the API's do
    assert_eq!(v["body"]["request_id"], "req_stub_1");
}

#[tokio::test]
async fn sdk_count_tokens_and_models() {
    let f = start("[stub]\ncount_tokens = 4242\n").await;
    assert_eq!(sdk(&f.running.url(), "count_tokens").await.1["input_tokens"], 4242);
    let (ok, v) = sdk(&f.running.url(), "models").await;
    assert!(ok, "{v}");
    assert!(v["ids"].as_array().is_some_and(|ids| ids.iter().any(|i| i == "claude-sonnet-4-5")));
}

/// The acceptance path of the README: the standalone binary serves a script file, the SDK streams from
/// it, and the record file holds the exchange with the key redacted.
#[tokio::test]
async fn standalone_binary_serves_the_sdk_and_writes_a_redacted_record() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let script = dir.path().join("probe.toml");
    let record = dir.path().join("record.jsonl");
    std::fs::write(&script, READ_TURNS).unwrap_or_else(|e| panic!("{e}"));
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_stub-messages"))
        .arg("--script")
        .arg(&script)
        .arg("--record")
        .arg(&record)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    let stdout = child.stdout.take().unwrap_or_else(|| panic!("no stdout"));
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let url = lines.next_line().await.ok().flatten().unwrap_or_else(|| panic!("the binary printed no URL"));
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    let (ok, v) = sdk(&url, "stream").await;
    assert!(ok, "{v}");
    assert_eq!(v["content"][1]["input"]["file_path"], "/sandbox/f.txt");

    let pid = child.id().unwrap_or_else(|| panic!("no pid")).to_string();
    let killed = tokio::process::Command::new("kill").args(["-TERM", &pid]).status().await;
    assert!(killed.is_ok_and(|s| s.success()));
    let out = child.wait_with_output().await.unwrap_or_else(|e| panic!("{e}"));
    assert!(out.status.success(), "exit {:?}", out.status);
    assert!(String::from_utf8_lossy(&out.stderr).contains("conversation main: 1/2 turns served"));

    let text = std::fs::read_to_string(&record).unwrap_or_else(|e| panic!("{e}"));
    assert!(!text.contains("SECRET"), "the API key leaked into the record");
    let lines: Vec<Value> = text.lines().map(parse).collect();
    assert_eq!(lines.len(), 1);
    let headers: std::collections::BTreeMap<String, String> =
        serde_json::from_value(lines[0]["headers"].clone()).unwrap_or_default();
    assert_eq!(api_key_header(&headers), Some("<redacted>"));
    assert_eq!(lines[0]["response"]["content"][1]["input"]["offset"], 1);
    assert_eq!(lines[0]["events"][0]["event"], "message_start");
}

#[tokio::test]
async fn standalone_binary_reports_a_bad_script_with_its_place() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let script = dir.path().join("bad.toml");
    std::fs::write(&script, "[[turn]]\ntext = 3\n").unwrap_or_else(|e| panic!("{e}"));
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_stub-messages"))
        .arg("--script")
        .arg(&script)
        .output()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.toml:2:8: invalid type: integer `3`, expected a string"), "{err}");
}
