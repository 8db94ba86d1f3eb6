//! Shared helpers: a stub on 127.0.0.1:0 from inline TOML, a reqwest client, request builders.

use serde_json::{json, Value};
use std::sync::Arc;
use stub_messages::{serve, Recorder, Running, Script, Stub};

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

pub async fn start(toml: &str) -> Fixture {
    let script = match Script::from_toml("test.toml", toml) {
        Ok(s) => s,
        Err(e) => panic!("bad test script: {e}"),
    };
    let stub = Arc::new(Stub::new(script, Recorder::default()));
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
