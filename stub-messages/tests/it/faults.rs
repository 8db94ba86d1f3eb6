//! Injected faults: each spoils one attempt, then the turn is served.

use crate::support::*;
use std::time::Instant;
use stub_messages::fault::Fault;
use stub_messages::sse::{check_stream, decode_all};

#[tokio::test]
async fn http_faults_carry_retry_after_and_then_the_turn_is_served() {
    let f = start("[[turn]]\ntext = \"ok\"\nfault = [{ kind = \"http\", status = 529, retry_after = 3 }, { kind = \"http\", status = 429 }, { kind = \"http\", status = 500 }]\n").await;
    let expected = [(529, "overloaded_error", Some("3")), (429, "rate_limit_error", None), (500, "api_error", None)];
    for (status, etype, retry) in expected {
        let (s, h, text) = post(&f, &body(hello(), true)).await;
        assert_eq!(s, status);
        assert_eq!(parse(&text)["error"]["type"], etype);
        assert_eq!(h.get("retry-after").and_then(|v| v.to_str().ok()), retry);
    }
    let (s, _, text) = post(&f, &body(hello(), true)).await;
    assert_eq!(s, 200);
    assert!(check_stream(&decode_all(text.as_bytes()).unwrap_or_default()).complete);
    let ex = f.stub.recorder().exchanges();
    assert_eq!(ex.len(), 4);
    assert!(ex.iter().all(|e| e.turn == Some(0)));
    assert_eq!(ex[0].fault, Some(Fault::Http { status: 529, retry_after: Some(3) }));
    assert_eq!(ex[3].fault, None);
}

#[tokio::test]
async fn an_error_event_mid_stream_then_the_whole_turn() {
    let f = start("[[turn]]\ntext = \"hello world\"\nfault = [{ kind = \"sse_error\", after_events = 3 }]\n").await;
    let (s, _, text) = post(&f, &body(hello(), true)).await;
    assert_eq!(s, 200);
    let events = decode_all(text.as_bytes()).unwrap_or_default();
    assert_eq!(events.len(), 4);
    let r = check_stream(&events);
    assert_eq!(r.error.as_ref().map(|e| e["type"].clone()), Some(serde_json::json!("overloaded_error")));
    assert!(!r.complete);
    let (_, _, text) = post(&f, &body(hello(), true)).await;
    let r = check_stream(&decode_all(text.as_bytes()).unwrap_or_default());
    assert!(r.complete && r.violations.is_empty(), "{:?}", r.violations);
}

#[tokio::test]
async fn a_cut_stream_aborts_the_body_and_records_what_was_sent() {
    let f = start("[[turn]]\ntext = \"hello world\"\nfault = [{ kind = \"cut\", after_events = 2 }]\n").await;
    let r = client().post(f.url("/v1/messages")).json(&body(hello(), true)).send().await;
    let r = r.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.status(), 200);
    assert!(r.text().await.is_err(), "the body must end abnormally");
    let ex = f.stub.recorder().exchanges();
    assert_eq!(ex[0].events.as_ref().map(Vec::len), Some(2));
    assert!(matches!(ex[0].fault, Some(Fault::Cut { after_events: 2 })));
}

#[tokio::test]
async fn slow_chunks_are_delayed_per_event() {
    let f = start("[[turn]]\ntext = \"abc\"\ndelay_ms = 20\n").await;
    let t = Instant::now();
    let (_, _, text) = post(&f, &body(hello(), true)).await;
    let n = decode_all(text.as_bytes()).unwrap_or_default().len() as u32;
    assert!(n >= 7);
    // A lower bound only: sleeps never end early, so this cannot flake on a slow machine.
    assert!(t.elapsed() >= std::time::Duration::from_millis(20) * n);
}
