//! A recording fake LSP server, shipped with the harness: `probelab fake-lsp --trace FILE [--mode MODE]
//! [--once]`. It speaks JSON-RPC over stdio with `Content-Length` framing, appends every message it
//! receives and sends to the trace file (one JSON object a line, flushed per message, so a server killed
//! mid-run loses nothing already seen), and answers deterministically — the same request gets the same
//! answer, whatever client asks. Probes read its trace (`lsp = "<trace file>"` checks): LSP-3's message
//! sequence, LSP-2's `{"line":0,"character":0}`.
//!
//! Trace lines: `{"event":"start","args":[…]}` when a server process starts, `{"dir":"recv","msg":…}` for
//! each message from the client, `{"dir":"send","msg":…}` for each answer, `{"event":"eof"}` when stdin
//! closes, `{"event":"exit","code":N}` when it leaves on `exit`.
//!
//! Answers (positions are 0-based, as on the wire; `<uri>` is the request's document, `<dir>` its folder):
//! - `initialize`: every capability LSP-1's nine operations need, full text sync, `serverInfo`
//!   `probelab-fake-lsp`.
//! - `textDocument/definition`: `<uri>` 2:4–2:9 (the tool shows it 1-based: `:3:5`).
//! - `textDocument/references`: `<uri>` 0:0, `<uri>` 2:4 and `<dir>/other.probe` 1:2.
//! - `textDocument/hover`: markdown `fake hover at L:C` with the received 0-based position.
//! - `textDocument/documentSymbol`: class `Probe` (lines 0–3) holding method `run` (line 1) and
//!   constant `LIMIT` (line 2).
//! - `workspace/symbol`: `Probe` (class) and `<query>` (function) in `<root>/a.probe`.
//! - `textDocument/implementation`: `<uri>` 1:2.
//! - `textDocument/prepareCallHierarchy`: `run` (method) at 1:2 of `<uri>`; `callHierarchy/incomingCalls`:
//!   from `main` at 4:0; `callHierarchy/outgoingCalls`: to `helper` at 5:0.
//! - `shutdown`: `null`; `exit`: leaves with 0. Unknown requests: error -32601.
//!
//! Modes (the failures the client must survive): `normal` (default); `crash` exits with status 3 on the
//! first request after `initialize`; `hang` never answers a request after `initialize`; `garbage` answers
//! each request after `initialize` with a log line where a header block belongs (non-protocol output). With `--once` the mode applies only to
//! the first server process of a trace (the trace's first `start`), so a restarted server behaves.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

/// How the fake server misbehaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Answers every request.
    Normal,
    /// Exits with status 3 at the first request after `initialize`.
    Crash,
    /// Never answers a request after `initialize`.
    Hang,
    /// Answers requests after `initialize` with a log line instead of a framed message.
    Garbage,
}

/// The fake server's command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// The trace file (appended to).
    pub trace: PathBuf,
    /// The mode.
    pub mode: Mode,
    /// The mode applies to the first process of the trace only.
    pub once: bool,
}

/// Parses `--trace FILE [--mode MODE] [--once]`.
pub fn parse_args(args: &[String]) -> Result<Options, String> {
    let mut trace = None;
    let mut mode = Mode::Normal;
    let mut once = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--trace" => trace = it.next().map(PathBuf::from),
            "--mode" => {
                mode = match it.next().map(String::as_str) {
                    Some("normal") => Mode::Normal,
                    Some("crash") => Mode::Crash,
                    Some("hang") => Mode::Hang,
                    Some("garbage") => Mode::Garbage,
                    other => return Err(format!("unknown mode {other:?}: normal | crash | hang | garbage")),
                }
            }
            "--once" => once = true,
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    let trace = trace.ok_or("--trace FILE is required")?;
    Ok(Options { trace, mode, once })
}

/// The usage line.
pub const USAGE: &str = "usage: probelab fake-lsp --trace FILE [--mode normal|crash|hang|garbage] [--once]";

/// Reads one `Content-Length` framed message; `Ok(None)` at end of input.
pub fn read_frame(r: &mut impl BufRead) -> std::io::Result<Option<Vec<u8>>> {
    let mut len: Option<usize> = None;
    let mut line = String::new();
    loop {
        line.clear();
        if r.read_line(&mut line)? == 0 {
            return Ok(None);
        }
        let l = line.trim_end_matches(['\r', '\n']);
        if l.is_empty() {
            if len.is_some() {
                break;
            }
            continue;
        }
        if let Some((k, v)) = l.split_once(':') {
            if k.trim().eq_ignore_ascii_case("content-length") {
                len = v.trim().parse().ok();
            }
        }
    }
    let mut body = vec![0; len.unwrap_or(0)];
    r.read_exact(&mut body)?;
    Ok(Some(body))
}

/// Frames a message.
pub fn frame(body: &[u8]) -> Vec<u8> {
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out
}

/// The trace file, and its path for the message should a write fail.
struct Trace(Option<std::fs::File>, PathBuf);

impl Trace {
    /// Appends a line. One that cannot be written is said on stderr (the client's log), as a trace that
    /// cannot be opened is, and the trace is closed: a trace with a hole would read as messages never sent.
    fn line(&mut self, v: Value) {
        if let Some(f) = &mut self.0 {
            if let Err(e) = f.write_all(format!("{v}\n").as_bytes()).and_then(|_| f.flush()) {
                eprintln!(
                    "fake-lsp: cannot write the trace {}: {e}; no more lines are written to it",
                    self.1.display()
                );
                self.0 = None;
            }
        }
    }
}

/// How many server processes a trace has seen start: none when there is no trace yet (the first start)
/// or it cannot be read (said on stderr, the client's log: the server then answers as a first start).
pub fn starts(trace: &Path) -> usize {
    // a regular file of a bounded size: a device named as the trace (`/dev/full` reads zeros forever) is
    // an error, not a read that never ends
    let text = match crate::safe_fs::read_text(trace) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => {
            eprintln!("fake-lsp: cannot read the trace {}: {e}", trace.display());
            String::new()
        }
    };
    text.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).filter(|v| v["event"] == "start").count()
}

/// Runs the server on stdin/stdout until `exit` or end of input; the process's exit status.
pub fn serve(opts: &Options, args: &[String]) -> i32 {
    let first = starts(&opts.trace) == 0;
    let mode = if opts.once && !first { Mode::Normal } else { opts.mode };
    let file = std::fs::OpenOptions::new().create(true).append(true).open(&opts.trace);
    if let Err(e) = &file {
        eprintln!("fake-lsp: cannot open the trace {}: {e}", opts.trace.display());
    }
    let mut trace = Trace(file.ok(), opts.trace.clone());
    trace.line(json!({"event": "start", "args": args}));
    let stdin = std::io::stdin();
    let mut input = BufReader::new(stdin.lock());
    let mut out = std::io::stdout().lock();
    let mut initialized = false;
    loop {
        let body = match read_frame(&mut input) {
            Ok(Some(b)) => b,
            Ok(None) | Err(_) => {
                trace.line(json!({"event": "eof"}));
                return 0;
            }
        };
        let msg: Value = match serde_json::from_slice(&body) {
            Ok(v) => v,
            Err(e) => {
                trace.line(json!({"event": "bad-frame", "error": e.to_string()}));
                continue;
            }
        };
        trace.line(json!({"dir": "recv", "msg": msg}));
        let method = msg["method"].as_str().unwrap_or_default().to_string();
        if method == "exit" {
            trace.line(json!({"event": "exit", "code": 0}));
            return 0;
        }
        let Some(id) = msg.get("id").cloned() else { continue }; // a notification (or a response)
        if msg.get("method").is_none() {
            continue; // a response to a request of ours (we send none)
        }
        if initialized && method != "shutdown" {
            match mode {
                Mode::Normal => {}
                Mode::Crash => {
                    trace.line(json!({"event": "crash", "code": 3}));
                    return 3;
                }
                Mode::Hang => continue,
                Mode::Garbage => {
                    // what a server that logs to stdout sends: text where a header block belongs
                    let junk = b"Starting probe server... ready\r\n\r\n{}".to_vec();
                    trace.line(json!({"dir": "send", "garbage": String::from_utf8_lossy(&junk)}));
                    let _ = out.write_all(&junk);
                    let _ = out.flush();
                    continue;
                }
            }
        }
        if method == "initialize" {
            initialized = true;
        }
        let reply = match answer(&method, &msg["params"]) {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err((code, message)) => json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}),
        };
        trace.line(json!({"dir": "send", "msg": reply}));
        if out.write_all(&frame(reply.to_string().as_bytes())).and_then(|_| out.flush()).is_err() {
            trace.line(json!({"event": "eof"}));
            return 0;
        }
    }
}

fn pos(line: u32, character: u32) -> Value {
    json!({"line": line, "character": character})
}

fn range(l0: u32, c0: u32, l1: u32, c1: u32) -> Value {
    json!({"start": pos(l0, c0), "end": pos(l1, c1)})
}

fn location(uri: &str, l: u32, c: u32, len: u32) -> Value {
    json!({"uri": uri, "range": range(l, c, l, c + len)})
}

/// The folder of a `file://` URI (`file:///a/b.probe` → `file:///a`).
fn dir_of(uri: &str) -> &str {
    uri.rsplit_once('/').map(|(d, _)| d).unwrap_or(uri)
}

fn item(name: &str, kind: u32, uri: &str, l: u32, c: u32) -> Value {
    json!({
        "name": name, "kind": kind, "uri": uri, "detail": "fake",
        "range": range(l, 0, l + 1, 0), "selectionRange": range(l, c, l, c + name.len() as u32),
    })
}

/// The deterministic answer to a request: a result, or an error (code, message).
pub fn answer(method: &str, params: &Value) -> Result<Value, (i64, String)> {
    let uri = params["textDocument"]["uri"].as_str().unwrap_or_default();
    Ok(match method {
        "initialize" => json!({
            "capabilities": {
                "textDocumentSync": 1,
                "definitionProvider": true,
                "referencesProvider": true,
                "hoverProvider": true,
                "documentSymbolProvider": true,
                "workspaceSymbolProvider": true,
                "implementationProvider": true,
                "callHierarchyProvider": true,
            },
            "serverInfo": {"name": "probelab-fake-lsp", "version": "1"},
        }),
        "shutdown" => Value::Null,
        "textDocument/definition" => json!([location(uri, 2, 4, 5)]),
        "textDocument/references" => json!([
            location(uri, 0, 0, 5),
            location(uri, 2, 4, 5),
            location(&format!("{}/other.probe", dir_of(uri)), 1, 2, 5),
        ]),
        "textDocument/hover" => {
            let p = &params["position"];
            json!({
                "contents": {"kind": "markdown", "value": format!("fake hover at {}:{}", p["line"], p["character"])},
                "range": range(0, 0, 0, 5),
            })
        }
        "textDocument/documentSymbol" => json!([{
            "name": "Probe", "kind": 5, "range": range(0, 0, 3, 0), "selectionRange": range(0, 6, 0, 11),
            "children": [
                {"name": "run", "kind": 6, "detail": "()", "range": range(1, 2, 1, 20), "selectionRange": range(1, 2, 1, 5)},
                {"name": "LIMIT", "kind": 14, "range": range(2, 2, 2, 20), "selectionRange": range(2, 2, 2, 7)},
            ],
        }]),
        "workspace/symbol" => {
            let q = params["query"].as_str().unwrap_or_default();
            let root = "file:///probelab-fake-root/a.probe";
            let mut out = vec![json!({"name": "Probe", "kind": 5, "location": location(root, 0, 6, 5)})];
            if !q.is_empty() {
                out.push(json!({"name": q, "kind": 12, "location": location(root, 4, 0, q.len() as u32)}));
            }
            Value::Array(out)
        }
        "textDocument/implementation" => json!([location(uri, 1, 2, 3)]),
        "textDocument/prepareCallHierarchy" => json!([item("run", 6, uri, 1, 2)]),
        "callHierarchy/incomingCalls" => {
            let uri = params["item"]["uri"].as_str().unwrap_or_default();
            json!([{"from": item("main", 12, uri, 4, 0), "fromRanges": [range(4, 4, 4, 7)]}])
        }
        "callHierarchy/outgoingCalls" => {
            let uri = params["item"]["uri"].as_str().unwrap_or_default();
            json!([{"to": item("helper", 12, uri, 5, 0), "fromRanges": [range(1, 8, 1, 14)]}])
        }
        other => return Err((-32601, format!("method not found: {other}"))),
    })
}

/// What a trace shows: the methods the server received, in order, across every process of the trace,
/// and the parameters of the first message of each method. The JSON view a `lsp = "…"` check's `json`
/// pointers read: `{"methods": [...], "starts": N, "<method>": <params of its first message>}` (a `/` in a
/// method name is `~1` in a pointer: `/textDocument~1definition/position`).
pub fn trace_view(text: &str) -> Value {
    let mut methods = Vec::new();
    let mut first = serde_json::Map::new();
    let mut starts = 0;
    for v in text.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()) {
        if v["event"] == "start" {
            starts += 1;
        }
        if v["dir"] != "recv" {
            continue;
        }
        if let Some(m) = v["msg"]["method"].as_str() {
            methods.push(Value::String(m.to_string()));
            first.entry(m.to_string()).or_insert_with(|| v["msg"].get("params").cloned().unwrap_or(Value::Null));
        }
    }
    let mut out = serde_json::Map::new();
    out.insert("methods".into(), Value::Array(methods));
    out.insert("starts".into(), json!(starts));
    out.extend(first);
    Value::Object(out)
}

/// The trace as text for `contains` / `equals` checks: one line per received message, `METHOD PARAMS`.
pub fn trace_text(text: &str) -> String {
    let mut out = String::new();
    for v in text.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()) {
        if v["dir"] == "recv" {
            if let Some(m) = v["msg"]["method"].as_str() {
                let params = v["msg"].get("params").map(Value::to_string).unwrap_or_default();
                out.push_str(&format!("{m} {params}\n"));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip() {
        let mut data = frame(br#"{"a":1}"#);
        data.extend(frame(b"{}"));
        let mut r = std::io::Cursor::new(data);
        assert_eq!(read_frame(&mut r).unwrap_or_else(|e| panic!("{e}")), Some(br#"{"a":1}"#.to_vec()));
        assert_eq!(read_frame(&mut r).unwrap_or_else(|e| panic!("{e}")), Some(b"{}".to_vec()));
        assert_eq!(read_frame(&mut r).unwrap_or_else(|e| panic!("{e}")), None);
    }

    #[test]
    fn arguments_parse() {
        let a = |s: &str| s.split_whitespace().map(String::from).collect::<Vec<_>>();
        assert_eq!(
            parse_args(&a("--trace t.jsonl --mode hang --once")),
            Ok(Options { trace: "t.jsonl".into(), mode: Mode::Hang, once: true })
        );
        assert!(parse_args(&a("--mode hang")).is_err());
        assert!(parse_args(&a("--trace t --mode bogus")).is_err());
    }

    #[test]
    fn answers_are_deterministic_and_zero_based() {
        let p = json!({"textDocument": {"uri": "file:///w/a.probe"}, "position": {"line": 0, "character": 0}});
        let d = answer("textDocument/definition", &p).unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(d[0]["range"]["start"], json!({"line": 2, "character": 4}));
        let r = answer("textDocument/references", &p).unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(r[2]["uri"], "file:///w/other.probe");
        let h = answer("textDocument/hover", &p).unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(h["contents"]["value"], "fake hover at 0:0");
        assert_eq!(answer("bogus/method", &p).map_err(|e| e.0), Err(-32601));
    }

    #[test]
    fn the_trace_view_lists_methods_and_first_params() {
        let t = [
            json!({"event": "start", "args": []}),
            json!({"dir": "recv", "msg": {"id": 1, "method": "initialize", "params": {"a": 1}}}),
            json!({"dir": "send", "msg": {"id": 1, "result": {}}}),
            json!({"dir": "recv", "msg": {"method": "textDocument/definition", "params": {"position": pos(0, 0)}}}),
            json!({"dir": "recv", "msg": {"method": "textDocument/definition", "params": {"position": pos(9, 9)}}}),
        ]
        .iter()
        .map(|v| format!("{v}\n"))
        .collect::<String>();
        let v = trace_view(&t);
        assert_eq!(v["methods"], json!(["initialize", "textDocument/definition", "textDocument/definition"]));
        assert_eq!(v.pointer("/textDocument~1definition/position"), Some(&pos(0, 0)));
        assert_eq!(v["starts"], 1);
        assert!(trace_text(&t).starts_with("initialize {\"a\":1}\n"));
    }
}
