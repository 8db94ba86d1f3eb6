//! Property tests: the stub's streams conform for any script, and no request body makes it panic or
//! answer anything but a well-formed reply or a recorded 4xx error.

use axum::body::Body;
use axum::http::Request;
use http_body_util::BodyExt;
use proptest::prelude::*;
use serde_json::{json, Value};
use std::sync::Arc;
use stub_messages::script::{Route, StubSettings, ToolUseSpec};
use stub_messages::sse::{check_stream, decode_all};
use stub_messages::wire::stream_events;
use stub_messages::{app, Recorder, Script, Stub, Turn};
use tower::ServiceExt;

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (-1e9f64..1e9).prop_map(Value::from),
        ".{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::btree_map("[a-zé_\"\\\\]{0,6}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn turn() -> impl Strategy<Value = Turn> {
    let tool = ("[A-Z][a-z]{0,8}", prop::collection::btree_map("[a-z_]{1,8}", json_value(), 0..4))
        .prop_map(|(name, m)| ToolUseSpec { name, input: Value::Object(m.into_iter().collect()), id: None });
    (prop::option::of(".{0,80}"), prop::option::of(".{0,200}"), prop::collection::vec(tool, 0..4))
        .prop_filter("a turn needs a block", |(th, te, tu)| th.is_some() || te.is_some() || !tu.is_empty())
        .prop_map(|(thinking, text, tool_use)| Turn { thinking, text, tool_use, ..Turn::default() })
}

proptest! {
    #[test]
    fn every_scripted_turn_streams_conformingly_and_reassembles_exactly(turns in prop::collection::vec(turn(), 1..4)) {
        // lenient, so that empty texts (which a strict script refuses: the client would replay them) are
        // streamed too
        let stub = StubSettings { strict: false, ..StubSettings::default() };
        let script = Script { id: "prop".into(), turns: turns.clone(), conversations: Vec::new(), stub };
        for i in 0..turns.len() {
            let message = script.message(Route::Main, i, "m", &Default::default()).ok_or_else(|| TestCaseError::fail("no message"))?;
            let wire: String = stream_events(&message).iter().map(|e| e.to_wire()).collect();
            let events = decode_all(wire.as_bytes()).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let report = check_stream(&events);
            prop_assert!(report.violations.is_empty(), "{:?}", report.violations);
            prop_assert!(report.complete);
            prop_assert_eq!(report.message.as_ref(), Some(&message));
        }
    }
}

fn messages_value() -> impl Strategy<Value = Value> {
    let block = prop_oneof![
        ".{0,10}".prop_map(|t| json!({"type": "text", "text": t})),
        "toolu_[a-c]".prop_map(|id| json!({"type": "tool_use", "id": id, "name": "Read", "input": {}})),
        "toolu_[a-c]".prop_map(|id| json!({"type": "tool_result", "tool_use_id": id, "content": "r"})),
        json_value(),
    ];
    let content = prop_oneof![
        ".{0,10}".prop_map(Value::from),
        prop::collection::vec(block, 0..3).prop_map(Value::from),
        json_value()
    ];
    let role = prop_oneof![Just(json!("user")), Just(json!("assistant")), json_value()];
    prop::collection::vec((role, content), 0..5)
        .prop_map(|ms| Value::from(ms.into_iter().map(|(r, c)| json!({"role": r, "content": c})).collect::<Vec<_>>()))
}

fn request_body() -> impl Strategy<Value = Vec<u8>> {
    let shaped = (messages_value(), any::<bool>(), any::<bool>(), prop::option::of(json_value())).prop_map(
        |(messages, stream, tools, extra)| {
            let mut b = json!({"model": "claude-x", "max_tokens": 64, "messages": messages, "stream": stream});
            if tools {
                b["tools"] = json!([{"name": "Read", "input_schema": {"type": "object"}}]);
            }
            if let Some(x) = extra {
                b["max_tokens"] = x;
            }
            b.to_string().into_bytes()
        },
    );
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..200),
        json_value().prop_map(|v| v.to_string().into_bytes()),
        shaped,
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]
    #[test]
    fn no_request_body_panics_the_stub_or_goes_unrecorded(bodies in prop::collection::vec(request_body(), 1..4)) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| TestCaseError::fail(e.to_string()))?;
        rt.block_on(async {
            let script = Script::from_toml("p", "[[turn]]\ntool_use = [{ name = \"Read\" }]\n[[turn]]\ntext = \"done\"\n")
                .map_err(|e| TestCaseError::fail(e.0))?;
            let stub = Arc::new(Stub::new(script, Recorder::default()));
            for (i, b) in bodies.iter().enumerate() {
                let req = Request::post("/v1/messages").header("content-type", "application/json").body(Body::from(b.clone()))
                    .map_err(|e| TestCaseError::fail(e.to_string()))?;
                let resp = app(stub.clone()).oneshot(req).await.map_err(|e| TestCaseError::fail(e.to_string()))?;
                let status = resp.status().as_u16();
                let sse = resp.headers().get("content-type").is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
                let bytes = resp.into_body().collect().await.map_err(|e| TestCaseError::fail(e.to_string()))?.to_bytes();
                prop_assert!(status == 200 || (400..500).contains(&status), "status {}", status);
                if sse {
                    let events = decode_all(&bytes).map_err(|e| TestCaseError::fail(e.to_string()))?;
                    let r = check_stream(&events);
                    prop_assert!(r.violations.is_empty(), "{:?}", r.violations);
                } else {
                    let v: Value = serde_json::from_slice(&bytes).map_err(|e| TestCaseError::fail(e.to_string()))?;
                    prop_assert!(v["type"] == "message" || (v["type"] == "error" && v["error"]["message"].is_string()), "{}", v);
                    prop_assert_eq!(status == 200, v["type"] == "message");
                }
                prop_assert_eq!(stub.recorder().exchanges().len(), i + 1);
            }
            Ok(())
        })?;
    }
}
