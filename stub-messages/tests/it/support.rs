//! Shared helpers: a stub on 127.0.0.1:0 from inline TOML, a reqwest client, request builders, a record
//! sink read back, a real Claude Code record.

use serde_json::{json, Value};
use std::io::Write;
use std::sync::{Arc, Mutex};
use stub_messages::{serve, Recorder, Running, Script, Stub};

/// A real record: Claude Code 2.1.235 running `probes/claude-code/edit-texts.toml` (9 turns; kept with
/// `probelab run --subject claude-code@2.1.235 --keep`).
pub const CLAUDE_CODE_RECORD: &str = include_str!("../data/claude-code-2.1.235.edit-texts.record.jsonl");

/// A record sink the test reads back.
#[derive(Clone, Default)]
pub struct Sink(Arc<Mutex<Vec<u8>>>);

impl Sink {
    /// A recorder that writes here.
    pub fn recorder(&self) -> Recorder {
        Recorder::new(Some(Box::new(self.clone())))
    }

    /// What was written (a record is UTF-8: anything else fails the test).
    pub fn text(&self) -> String {
        let bytes = self.0.lock().map(|b| b.clone()).unwrap_or_else(|e| panic!("the sink's lock: {e}"));
        String::from_utf8(bytes).unwrap_or_else(|e| panic!("a record is UTF-8: {e}"))
    }
}

impl Write for Sink {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().map(|mut v| v.extend_from_slice(b)).ok();
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A running stub and its shared state.
pub struct Fixture {
    pub running: Running,
    pub stub: Arc<Stub>,
}

impl Fixture {
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.running.url())
    }
}

/// A stub of `toml` (no record kept), served.
pub async fn start(toml: &str) -> Fixture {
    let script = match Script::from_toml("test.toml", toml) {
        Ok(s) => s,
        Err(e) => panic!("bad test script: {e}"),
    };
    serve_stub(Stub::new(script, Recorder::default())).await
}

/// `stub` served on 127.0.0.1:0.
pub async fn serve_stub(stub: Stub) -> Fixture {
    let stub = Arc::new(stub);
    let running = match serve(stub.clone(), "127.0.0.1:0".parse().unwrap_or_else(|_| unreachable!())).await {
        Ok(r) => r,
        Err(e) => panic!("cannot bind: {e}"),
    };
    Fixture { running, stub }
}

pub fn client() -> reqwest::Client {
    reqwest::Client::new()
}

pub fn tools() -> Value {
    json!([{"name": "Read", "description": "d", "input_schema": {"type": "object"}}])
}

/// A main-conversation request body (it carries tools).
pub fn body(messages: Value, stream: bool) -> Value {
    json!({"model": "claude-sonnet-4-5", "max_tokens": 100, "stream": stream, "tools": tools(), "messages": messages})
}

pub fn hello() -> Value {
    json!([{"role": "user", "content": "hi"}])
}

pub async fn post(f: &Fixture, body: &Value) -> (u16, reqwest::header::HeaderMap, String) {
    let r = client()
        .post(f.url("/v1/messages?beta=true"))
        .header("x-api-key", "sk-ant-test-SECRET")
        .header("anthropic-version", "2023-06-01")
        .json(body)
        .send()
        .await
        .unwrap_or_else(|e| panic!("request failed: {e}"));
    let status = r.status().as_u16();
    let headers = r.headers().clone();
    let text = r.text().await.unwrap_or_default();
    (status, headers, text)
}

pub fn parse(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}
