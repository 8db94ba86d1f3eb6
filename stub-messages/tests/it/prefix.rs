//! Requests parsed by prefix: a request extending one the stub accepted is parsed and checked from its
//! new part. Held to the stub that parses every request whole (`Stub::parsing_whole`): the same answers,
//! the same exchanges, the same record — for a long conversation with history rewrites, refusals the
//! rules find in the new part or in its neighbours in the old one, a body with whitespace; and for the
//! requests of a real Claude Code run, which moves its cache_control marker every turn.

use crate::support::*;
use serde_json::{json, Value};
use stub_messages::{read_record, Exchange, Script, Stub};

/// What a stub made of a run: the answers (status, body or events), the exchanges (requests whole), the
/// record's lines — all without the timings — and how many requests it parsed by prefix.
struct Outcome {
    answers: Vec<(u16, String)>,
    exchanges: Vec<Exchange>,
    record: Vec<Value>,
    by_prefix: u64,
}

/// Posts `bodies` (bytes as they go on the wire) in order to a stub of `script`.
async fn play(script: &str, bodies: &[Vec<u8>], whole: bool) -> Outcome {
    let script = Script::from_toml("prefix.toml", script).unwrap_or_else(|e| panic!("{e}"));
    let sink = Sink::default();
    let stub = Stub::new(script, sink.recorder());
    let Fixture { running, stub } = serve_stub(if whole { stub.parsing_whole() } else { stub }).await;
    let mut answers = Vec::new();
    for b in bodies {
        let r = client()
            .post(format!("{}/v1/messages", running.url()))
            .header("content-type", "application/json")
            .header("anthropic-version", "2023-06-01")
            .body(b.clone())
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let status = r.status().as_u16();
        answers.push((status, r.text().await.unwrap_or_default()));
    }
    let mut exchanges = stub.recorder().exchanges();
    for e in &mut exchanges {
        e.offset_ms = 0;
        e.elapsed_us = None;
        // the stubs' ports differ
        e.headers.remove("host");
    }
    let record = sink
        .text()
        .lines()
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"));
            if let Some(o) = v.as_object_mut() {
                o.shift_remove("offset_ms");
                o.shift_remove("elapsed_us");
                if let Some(h) = o.get_mut("headers").and_then(Value::as_object_mut) {
                    h.shift_remove("host");
                }
            }
            v
        })
        .collect();
    Outcome { answers, exchanges, record, by_prefix: stub.parsed_by_prefix() }
}

/// Both stubs on `bodies`: everything equal; the fast one's count of requests parsed by prefix.
async fn same_as_whole(script: &str, bodies: &[Vec<u8>]) -> u64 {
    let fast = play(script, bodies, false).await;
    let whole = play(script, bodies, true).await;
    assert_eq!(whole.by_prefix, 0);
    assert_eq!(fast.answers.len(), bodies.len());
    for (i, (f, w)) in fast.answers.iter().zip(&whole.answers).enumerate() {
        assert_eq!(f, w, "answer {i}");
    }
    assert_eq!(fast.exchanges.len(), whole.exchanges.len());
    for (f, w) in fast.exchanges.iter().zip(&whole.exchanges) {
        assert_eq!(f, w, "exchange {}", f.seq);
    }
    assert_eq!(fast.record, whole.record, "the record");
    fast.by_prefix
}

fn user(content: Value) -> Value {
    json!({"role": "user", "content": content})
}

fn assistant(content: Value) -> Value {
    json!({"role": "assistant", "content": content})
}

fn call(n: usize) -> Value {
    json!({"type": "tool_use", "id": format!("toolu_c_{n}"), "name": "Read", "input": {"file_path": format!("/f{n}")}})
}

fn result(n: usize) -> Value {
    json!({"type": "tool_result", "tool_use_id": format!("toolu_c_{n}"), "content": format!("line {n}\ncaf\u{e9}")})
}

fn bytes(messages: &[Value], stream: bool) -> Vec<u8> {
    serde_json::to_vec(&body(Value::Array(messages.to_vec()), stream)).unwrap_or_default()
}

#[tokio::test]
async fn a_long_conversation_is_answered_and_recorded_as_when_each_request_is_parsed_whole() {
    let mut script = String::new();
    for _ in 0..40 {
        script.push_str("[[turn]]\ntool_use = [{ name = \"Read\", input = { file_path = \"/f\" } }]\n");
    }
    let mut messages = vec![user(json!("hi"))];
    let mut bodies = Vec::new();
    for t in 0..40 {
        messages.push(assistant(json!([call(t)])));
        messages.push(user(json!([result(t)])));
        let mut sent = messages.clone();
        match t {
            // a history rewrite: a marker on the first message, then moved to the last
            10 => sent[0] = user(json!([{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}])),
            11 => {
                if let Some(last) = sent.last_mut() {
                    last["content"][0]["cache_control"] = json!({"type": "ephemeral"});
                }
            }
            // a call id of an old message used again: refused (the id is in the kept part)
            15 => {
                sent.push(assistant(json!([call(3)])));
                sent.push(user(json!([result(3)])));
            }
            // a result for no call
            16 => sent.push(user(json!([result(99)]))),
            // a prefill accepted, then no longer final and empty: refused
            20 => sent.push(assistant(json!([]))),
            21 => {
                sent.truncate(sent.len() - 2);
                sent.push(assistant(json!([])));
                sent.push(user(json!("go on")));
            }
            // system messages between a call and its results
            25 => {
                let n = sent.len();
                sent.insert(n - 1, json!({"role": "system", "content": "reminder"}));
            }
            _ => {}
        }
        let mut b = bytes(&sent, t % 3 == 0);
        if t == 30 {
            // whitespace: parsed whole by both
            b = serde_json::to_vec_pretty(&body(Value::Array(sent.clone()), false)).unwrap_or_default();
        }
        if t == 33 {
            // an unknown field after the messages
            let mut v = body(Value::Array(sent.clone()), false);
            v["temprature"] = json!(1);
            b = serde_json::to_vec(&v).unwrap_or_default();
        }
        bodies.push(b);
    }
    let by_prefix = same_as_whole(&script, &bodies).await;
    assert!(by_prefix >= 30, "{by_prefix} of 40 parsed by prefix");
}

#[tokio::test]
async fn a_real_claude_code_run_is_answered_and_recorded_as_when_each_request_is_parsed_whole() {
    let bodies: Vec<Vec<u8>> = read_record(CLAUDE_CODE_RECORD.as_bytes())
        .filter_map(Result::ok)
        .filter(|r| r.exchange.path == "/v1/messages")
        .filter_map(|r| r.exchange.request_bytes.map(|b| b.to_vec()))
        .collect();
    assert!(bodies.len() >= 9);
    let script = "[[turn]]\ntext = \"a\"\n".repeat(20);
    let by_prefix = same_as_whole(&script, &bodies).await;
    assert!(by_prefix >= 8, "{by_prefix} parsed by prefix");
}
