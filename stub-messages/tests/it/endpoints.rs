//! Every endpoint over a socket, with reqwest as the client.

use crate::support::*;
use serde_json::json;
use stub_messages::sse::{check_stream, decode_all};
use stub_messages::wire::{ContentBlock, StopReason};
use stub_messages::ExchangeKind;

const THREE_BLOCKS: &str = r#"
id = "t"
[[turn]]
thinking = "let me look"
text = "Reading it."
tool_use = [{ name = "Read", input = { file_path = "/w/f.txt", limit = 2, nested = { "é" = [1, 2.5, true] } } }]
[[turn]]
text = "done"
"#;

#[tokio::test]
async fn a_streamed_turn_is_a_conforming_stream_equal_to_the_json_answer() {
    let f = start(THREE_BLOCKS).await;
    let (status, headers, text) = post(&f, &body(hello(), true)).await;
    assert_eq!(status, 200);
    assert_eq!(headers["content-type"], "text/event-stream; charset=utf-8");
    assert_eq!(headers["request-id"], "req_stub_1");
    let events = decode_all(text.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
    let report = check_stream(&events);
    assert!(report.violations.is_empty(), "{:?}", report.violations);
    assert!(report.complete);
    let msg = report.message.unwrap_or_else(|| panic!("no message"));
    assert_eq!(msg.id, "msg_t_main_1");
    assert_eq!(msg.stop_reason, Some(StopReason::ToolUse));
    assert_eq!(msg.content.len(), 3);
    assert_eq!(
        msg.content[2],
        ContentBlock::ToolUse {
            id: "toolu_t_1".into(),
            name: "Read".into(),
            input: json!({"file_path": "/w/f.txt", "limit": 2, "nested": {"é": [1, 2.5, true]}}),
        }
    );
    // the input arrived in several pieces, after an empty one
    let pieces: Vec<&str> = events
        .iter()
        .filter(|e| e.data["delta"]["type"] == "input_json_delta")
        .map(|e| e.data["delta"]["partial_json"].as_str().unwrap_or_default())
        .collect();
    assert!(pieces.len() >= 3, "{pieces:?}");
    assert_eq!(pieces[0], "");
    let names: Vec<&str> = events.iter().map(|e| e.event.as_str()).collect();
    assert_eq!(&names[..3], ["message_start", "content_block_start", "ping"]);
    assert!(names.contains(&"content_block_delta"));
    assert_eq!(&names[names.len() - 2..], ["message_delta", "message_stop"]);

    // the record: redacted key, query, turn, events as sent, reassembled response
    let ex = &f.stub.recorder().exchanges()[0];
    assert_eq!(ex.kind, ExchangeKind::Turn);
    assert_eq!(ex.query.as_deref(), Some("beta=true"));
    assert_eq!(ex.headers["x-api-key"], "<redacted>");
    assert_eq!((ex.conversation.as_deref(), ex.turn), (Some("main"), Some(0)));
    assert_eq!(ex.events.as_ref().map(Vec::len), Some(events.len()));
    assert_eq!(ex.response.as_ref().map(|r| r["content"][2]["input"]["limit"].clone()), Some(json!(2)));
}

#[tokio::test]
async fn json_answer_and_the_pairing_rule_of_the_next_request() {
    let f = start(THREE_BLOCKS).await;
    let (status, _, text) = post(&f, &body(hello(), false)).await;
    assert_eq!(status, 200);
    let m = parse(&text);
    assert_eq!(m["type"], "message");
    assert_eq!(m["content"][2]["id"], "toolu_t_1");
    assert_eq!(m["stop_reason"], "tool_use");
    assert_eq!(m["usage"]["cache_read_input_tokens"], 0);

    // next request without the tool_result: 400 naming the id, recorded as a violation, cursor kept
    let mut msgs = hello().as_array().cloned().unwrap_or_default();
    msgs.push(json!({"role": "assistant", "content": m["content"].clone()}));
    msgs.push(json!({"role": "user", "content": [{"type": "text", "text": "no result"}]}));
    let (status, _, text) = post(&f, &body(json!(msgs.clone()), false)).await;
    assert_eq!(status, 400);
    let e = parse(&text);
    assert_eq!(e["error"]["type"], "invalid_request_error");
    assert!(e["error"]["message"].as_str().unwrap_or_default().contains("toolu_t_1"), "{e}");
    let ex = f.stub.recorder().exchanges();
    assert_eq!(ex[1].violation.as_ref().map(|v| v.kind.as_str()), Some("tool_pairing"));

    // answered properly: turn 2
    msgs.pop();
    msgs.push(
        json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_t_1", "content": "x"}]}),
    );
    let (status, _, text) = post(&f, &body(json!(msgs), false)).await;
    assert_eq!(status, 200);
    assert_eq!(parse(&text)["content"][0]["text"], "done");
    assert_eq!(f.stub.recorder().exchanges()[2].turn, Some(1));
}

#[tokio::test]
async fn an_exhausted_script_answers_an_error_at_once_and_records_it() {
    let f = start("[[turn]]\ntext = \"only\"\n").await;
    assert_eq!(post(&f, &body(hello(), false)).await.0, 200);
    let (status, _, text) = post(&f, &body(hello(), false)).await;
    assert_eq!(status, 400);
    assert!(parse(&text)["error"]["message"].as_str().unwrap_or_default().contains("script exhausted"));
    let (status, _, text) = post(&f, &body(hello(), true)).await;
    assert_eq!(status, 200);
    let events = decode_all(text.as_bytes()).unwrap_or_default();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].event, "error");
    let kinds: Vec<_> =
        f.stub.recorder().exchanges().iter().map(|e| e.violation.as_ref().map(|v| v.kind.clone())).collect();
    assert_eq!(kinds, [None, Some("script_exhausted".to_string()), Some("script_exhausted".to_string())]);
}

#[tokio::test]
async fn a_cycling_script_starts_over() {
    let f = start("[stub]\ncycle = true\n[[turn]]\ntext = \"a\"\n[[turn]]\ntext = \"b\"\n").await;
    let mut texts = Vec::new();
    for _ in 0..5 {
        let (_, _, t) = post(&f, &body(hello(), false)).await;
        texts.push(parse(&t)["content"][0]["text"].as_str().unwrap_or_default().to_string());
    }
    assert_eq!(texts, ["a", "b", "a", "b", "a"]);
}

#[tokio::test]
async fn side_requests_get_the_fixed_reply_and_keep_the_cursor() {
    let f = start("[stub]\nside_reply = \"title\"\n[[turn]]\ntext = \"main 1\"\n").await;
    let side = json!({"model": "claude-haiku-4-5", "max_tokens": 10, "messages": hello()});
    let (status, _, text) = post(&f, &side).await;
    assert_eq!(status, 200);
    let m = parse(&text);
    assert_eq!((m["content"][0]["text"].clone(), m["id"].clone()), (json!("title"), json!("msg_test_side_1")));
    let (_, _, text) = post(&f, &body(hello(), false)).await;
    assert_eq!(parse(&text)["content"][0]["text"], "main 1");
    let kinds: Vec<_> = f.stub.recorder().exchanges().iter().map(|e| e.kind).collect();
    assert_eq!(kinds, [ExchangeKind::Side, ExchangeKind::Turn]);
}

#[tokio::test]
async fn named_conversations_keep_their_own_cursors() {
    let f = start(
        r#"
[[turn]]
tool_use = [{ name = "Task", input = { prompt = "explore" } }]
[[turn]]
text = "main done"
[[conversation]]
name = "sub"
select = { first_user_contains = "explore" }
[[conversation.turn]]
tool_use = [{ name = "Read", input = {} }]
[[conversation.turn]]
text = "sub done"
"#,
    )
    .await;
    let sub = body(json!([{"role": "user", "content": "please explore"}]), false);
    let (_, _, a) = post(&f, &body(hello(), false)).await;
    let (_, _, b) = post(&f, &sub).await;
    assert_eq!(parse(&a)["content"][0]["id"], "toolu_test_1");
    assert_eq!(parse(&b)["content"][0]["id"], "toolu_test_sub_1");
    let convs: Vec<_> = f.stub.recorder().exchanges().iter().map(|e| (e.conversation.clone(), e.turn)).collect();
    assert_eq!(convs, [(Some("main".into()), Some(0)), (Some("sub".into()), Some(0))]);
    assert_eq!(f.stub.progress(), [("main".to_string(), 1, 2), ("sub".to_string(), 1, 2)]);
}

/// A compaction request carries the whole conversation with the summary prompt as its last user
/// message: `last_user_contains` takes it, and the first user message (the same as the main
/// conversation's) does not decide.
#[tokio::test]
async fn last_user_contains_routes_by_the_last_user_message() {
    let f = start(
        r#"
[[turn]]
text = "main one"
[[turn]]
text = "main two"
[[conversation]]
name = "compact"
select = { last_user_contains = "create a detailed summary" }
[[conversation.turn]]
text = "<summary>s</summary>"
"#,
    )
    .await;
    let summary = body(
        json!([
            {"role": "user", "content": "hello"},
            {"role": "assistant", "content": "main one"},
            {"role": "user", "content": [{"type": "text", "text": "Your task is to create a detailed summary of the conversation so far"}]}
        ]),
        false,
    );
    let later = body(
        json!([
            {"role": "user", "content": "create a detailed summary"},
            {"role": "assistant", "content": "main one"},
            {"role": "user", "content": "go on"}
        ]),
        false,
    );
    let (_, _, a) = post(&f, &body(hello(), false)).await;
    let (_, _, b) = post(&f, &summary).await;
    let (_, _, c) = post(&f, &later).await;
    assert_eq!(parse(&a)["content"][0]["text"], "main one");
    assert_eq!(parse(&b)["content"][0]["text"], "<summary>s</summary>");
    assert_eq!(parse(&c)["content"][0]["text"], "main two");
}

/// An optional conversation none of whose requests came counts as 0 of 0 turns (nothing unserved);
/// once one came, its turns count like any conversation's.
#[tokio::test]
async fn an_optional_conversation_counts_only_once_it_happened() {
    let script = r#"
[[turn]]
text = "main"
[[conversation]]
name = "compact"
optional = true
select = { last_user_contains = "summary" }
[[conversation.turn]]
text = "s1"
[[conversation.turn]]
text = "s2"
"#;
    let f = start(script).await;
    post(&f, &body(hello(), false)).await;
    assert_eq!(f.stub.progress(), [("main".to_string(), 1, 1), ("compact".to_string(), 0, 0)]);
    let g = start(script).await;
    post(&g, &body(json!([{"role": "user", "content": "a summary please"}]), false)).await;
    assert_eq!(g.stub.progress(), [("main".to_string(), 0, 1), ("compact".to_string(), 1, 2)]);
}

/// A conversation that repeats answers each of its requests, its turns over again, where one that does
/// not says "script exhausted"; the main conversation still runs out.
#[tokio::test]
async fn a_repeating_conversation_starts_its_turns_over_the_others_run_out() {
    let script = |repeat: bool| {
        format!(
            "[[turn]]\ntext = \"main\"\n[[conversation]]\nname = \"compact\"\noptional = true\nrepeat = {repeat}\n\
             select = {{ last_user_contains = \"summary\" }}\n[[conversation.turn]]\ntext = \"s1\"\n"
        )
    };
    let summary = body(json!([{"role": "user", "content": "a summary please"}]), false);
    let f = start(&script(true)).await;
    for _ in 0..3 {
        let (status, _, text) = post(&f, &summary).await;
        assert_eq!(status, 200, "{text}");
        assert_eq!(parse(&text)["content"][0]["text"], "s1");
    }
    assert_eq!(f.stub.progress()[1], ("compact".to_string(), 1, 1));
    let g = start(&script(false)).await;
    post(&g, &summary).await;
    let (status, _, text) = post(&g, &summary).await;
    assert_eq!(status, 400, "{text}");
    assert!(text.contains("script exhausted"), "{text}");
}

#[tokio::test]
async fn count_tokens_is_settable_and_otherwise_estimated() {
    let req = json!({"model": "m", "messages": hello()});
    for (script, expected) in
        [("[stub]\ncount_tokens = 31337\n", json!(31337)), ("", json!(req.to_string().len().div_ceil(4)))]
    {
        let f = start(script).await;
        let r = client().post(f.url("/v1/messages/count_tokens?beta=true")).json(&req).send().await;
        let r = r.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.status(), 200);
        assert_eq!(parse(&r.text().await.unwrap_or_default())["input_tokens"], expected);
        assert_eq!(f.stub.recorder().exchanges()[0].kind, ExchangeKind::CountTokens);
    }
}

#[tokio::test]
async fn models_and_warmups() {
    let f = start("").await;
    let c = client();
    let list = parse(
        &c.get(f.url("/v1/models")).send().await.unwrap_or_else(|e| panic!("{e}")).text().await.unwrap_or_default(),
    );
    assert_eq!(list["data"][0]["type"], "model");
    assert_eq!(list["has_more"], false);
    let one = c.get(f.url("/v1/models/claude-sonnet-4-5")).send().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(one.status(), 200);
    let none = c.get(f.url("/v1/models/gpt-9")).send().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(none.status(), 404);
    assert_eq!(parse(&none.text().await.unwrap_or_default())["error"]["type"], "not_found_error");
    for path in ["/", "/api/hello"] {
        let r = c.head(f.url(path)).send().await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.status(), 200, "HEAD {path}");
    }
    assert_eq!(c.get(f.url("/api/hello")).send().await.map(|r| r.status().as_u16()).ok(), Some(200));
    let kinds: Vec<_> = f.stub.recorder().exchanges().iter().map(|e| e.kind).collect();
    assert_eq!(kinds.iter().filter(|k| **k == ExchangeKind::Warmup).count(), 3);
}

#[tokio::test]
async fn unknown_paths_methods_and_bad_bodies_get_recorded_json_errors() {
    let f = start("[[turn]]\ntext = \"x\"\n").await;
    let c = client();
    let cases: Vec<(reqwest::RequestBuilder, u16, &str)> = vec![
        (c.get(f.url("/v1/complete")), 404, "does not serve GET /v1/complete"),
        (c.get(f.url("/v1/messages")), 404, "does not serve GET /v1/messages"),
        (
            c.post(f.url("/v1/messages")).header("content-type", "application/json").body("{not json"),
            400,
            "parsing the body as JSON",
        ),
        (
            c.post(f.url("/v1/messages")).header("content-type", "text/plain").body("{}"),
            400,
            "Content-Type must be application/json",
        ),
        (c.post(f.url("/v1/messages")).json(&json!({"model": "m", "messages": []})), 400, "max_tokens: Field required"),
        (
            c.post(f.url("/v1/messages")).json(&json!({"model": "m", "max_tokens": 5, "messages": [{"role": "user"}]})),
            400,
            "messages.0.content: Field required",
        ),
        (c.post(f.url("/v1/messages/count_tokens")).json(&json!({"messages": []})), 400, "model: Field required"),
        (
            c.post(f.url("/v1/messages")).header("content-type", "application/json").body(vec![b' '; 33 * 1024 * 1024]),
            413,
            "maximum allowed number of bytes",
        ),
    ];
    let n = cases.len();
    for (req, status, text) in cases {
        let r = req.send().await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.status().as_u16(), status, "{text}");
        let b = parse(&r.text().await.unwrap_or_default());
        assert_eq!(b["type"], "error");
        assert!(b["error"]["message"].as_str().unwrap_or_default().contains(text), "{b} should contain {text:?}");
    }
    let ex = f.stub.recorder().exchanges();
    assert_eq!(ex.len(), n);
    assert!(ex.iter().all(|e| e.violation.is_some() && e.status >= 400));
    assert_eq!(ex[2].request_text.as_deref(), Some("{not json"));
    assert_eq!(f.stub.progress()[0].1, 0, "no turn consumed by refused requests");
}

#[tokio::test]
async fn a_turn_captures_a_value_from_the_request_it_answers_for_later_tool_uses() {
    let f = start(
        r#"
id = "c"
[[turn]]
tool_use = [{ name = "Bash", input = { command = "sleep 1", run_in_background = true } }]
[[turn]]
capture = { task = 'with ID: (\w+)\.', missing = 'no such (\w+)' }
tool_use = [{ name = "TaskOutput", input = { task_id = "{{task}}", note = ["{{task}}/{{missing}}"] } }]
[[turn]]
text = "done"
"#,
    )
    .await;
    let (_, _, text) = post(&f, &body(hello(), false)).await;
    let m = parse(&text);
    let mut msgs = hello().as_array().cloned().unwrap_or_default();
    msgs.push(json!({"role": "assistant", "content": m["content"].clone()}));
    msgs.push(json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_c_1",
        "content": [{"type": "text", "text": "Command running in background with ID: b7x9. Output is…"}]}]}));
    let (status, _, text) = post(&f, &body(json!(msgs), false)).await;
    assert_eq!(status, 200, "{text}");
    let input = &parse(&text)["content"][0]["input"];
    // found: replaced everywhere, nested too; not found: the placeholder stays, visibly
    assert_eq!(input, &json!({"task_id": "b7x9", "note": ["b7x9/{{missing}}"]}));
}

#[tokio::test]
async fn a_capture_with_a_bad_regex_or_name_is_refused_when_the_script_loads() {
    for (capture, wanted) in [("{ t = '(' }", "bad regex"), ("{ \"a b\" = 'x' }", "must match")] {
        let text = format!("id = \"c\"\n[[turn]]\ncapture = {capture}\ntext = \"x\"\n");
        let err = stub_messages::script::Script::from_toml("s.toml", &text).err().map(|e| e.0).unwrap_or_default();
        assert!(err.contains(wanted) && err.contains("turn 1"), "{err}");
    }
}
