//! The strict rules (`stub_messages::validate`): one test per rule, each showing the API-shaped 400 the
//! client gets and the violation the record keeps; then `[stub] strict = false` accepting them all but
//! the pairing rule.

use crate::support::*;
use serde_json::{json, Value};
use stub_messages::ExchangeKind;

const SCRIPT: &str = "[[turn]]\ntext = \"ok\"\n";

/// Posts `body`, asserts the API's error shape with exactly `message`, and that the record holds the
/// refusal as a violation of `kind` without consuming a turn.
async fn refused(body: Value, kind: &str, message: &str) {
    let f = start(SCRIPT).await;
    let (status, headers, text) = post(&f, &body).await;
    assert_eq!(status, 400, "{text}");
    let e = parse(&text);
    let request_id = headers.get("request-id").and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
    assert_eq!(
        e,
        json!({"type": "error", "error": {"type": "invalid_request_error", "message": message}, "request_id": request_id})
    );
    let ex = f.stub.recorder().exchanges();
    assert_eq!(ex.len(), 1);
    assert_eq!(ex[0].kind, ExchangeKind::Invalid);
    assert_eq!(ex[0].status, 400);
    assert_eq!(ex[0].violation.as_ref().map(|v| (v.kind.as_str(), v.message.as_str())), Some((kind, message)));
    assert_eq!(ex[0].response.as_ref(), Some(&e));
    assert_eq!(f.stub.progress()[0].1, 0, "a refused request consumes no turn");
}

/// A main request (it carries tools) with these messages and extra top-level fields.
fn with(messages: Value, extra: Value) -> Value {
    let mut b = body(messages, false);
    if let (Some(o), Some(x)) = (b.as_object_mut(), extra.as_object()) {
        o.extend(x.clone());
    }
    b
}

fn user(content: Value) -> Value {
    json!({"role": "user", "content": content})
}

fn assistant(content: Value) -> Value {
    json!({"role": "assistant", "content": content})
}

fn tool_use(id: &str) -> Value {
    json!({"type": "tool_use", "id": id, "name": "Read", "input": {}})
}

fn tool_result(id: &str) -> Value {
    json!({"type": "tool_result", "tool_use_id": id, "content": "r"})
}

#[tokio::test]
async fn unknown_top_level_field() {
    let b = with(hello(), json!({"temprature": 0.5}));
    refused(b, "unknown_field", "temprature: Extra inputs are not permitted").await;
}

#[tokio::test]
async fn max_tokens_not_positive() {
    for n in [json!(0), json!(-5)] {
        let b = with(hello(), json!({"max_tokens": n}));
        refused(b, "max_tokens", "max_tokens: Input should be greater than or equal to 1").await;
    }
}

#[tokio::test]
async fn messages_empty() {
    refused(with(json!([]), json!({})), "messages_empty", "messages: at least one message is required").await;
}

#[tokio::test]
async fn first_message_not_user() {
    let b = with(json!([assistant(json!("hello")), user(json!("hi"))]), json!({}));
    refused(b, "first_message_role", "messages: first message must use the \"user\" role").await;
}

#[tokio::test]
async fn empty_content_array_and_empty_string() {
    let msg = "messages.0: all messages must have non-empty content except for the optional final assistant message";
    refused(with(json!([user(json!([]))]), json!({})), "empty_content", msg).await;
    refused(with(json!([user(json!(""))]), json!({})), "empty_content", msg).await;
}

#[tokio::test]
async fn empty_and_whitespace_text_blocks() {
    let b = with(json!([user(json!([{"type": "text", "text": ""}]))]), json!({}));
    refused(b, "empty_text", "messages: text content blocks must be non-empty").await;
    let b = with(json!([user(json!([{"type": "text", "text": " \n"}]))]), json!({}));
    refused(b, "empty_text", "messages: text content blocks must contain non-whitespace text").await;
}

#[tokio::test]
async fn malformed_blocks() {
    let b = with(json!([user(json!(["hi"]))]), json!({}));
    refused(b, "block_shape", "messages.0.content.0: Input should be a valid dictionary").await;
    let b = with(json!([user(json!([{"text": "hi"}]))]), json!({}));
    refused(b, "block_shape", "messages.0.content.0: Unable to extract tag using discriminator 'type'").await;
    let b = with(json!([user(json!([{"type": "text"}]))]), json!({}));
    refused(b, "block_field", "messages.0.content.0.text.text: Field required").await;
}

#[tokio::test]
async fn unknown_block_type() {
    let b = with(json!([user(json!([{"type": "txt", "text": "hi"}]))]), json!({}));
    let f = start(SCRIPT).await;
    let (status, _, text) = post(&f, &b).await;
    assert_eq!(status, 400);
    let m = parse(&text)["error"]["message"].as_str().unwrap_or_default().to_string();
    assert!(
        m.starts_with("messages.0.content.0: Input tag 'txt' found using 'type' does not match any of the expected tags: 'text', 'image', "),
        "{m}"
    );
    refused(b, "unknown_block", &m).await;
}

#[tokio::test]
async fn assistant_only_blocks_in_a_user_message_and_vice_versa() {
    let b = with(json!([user(json!([tool_use("toolu_1")]))]), json!({}));
    refused(b, "block_role", "messages.0: `tool_use` blocks can only be in `assistant` messages").await;
    let b = with(json!([user(json!([{"type": "thinking", "thinking": "t", "signature": "s"}]))]), json!({}));
    refused(b, "block_role", "messages.0: `thinking` blocks can only be in `assistant` messages").await;
    let b = with(json!([user(json!("hi")), assistant(json!([tool_result("toolu_1")]))]), json!({}));
    refused(b, "block_role", "messages.1: `tool_result` blocks can only be in `user` messages").await;
}

#[tokio::test]
async fn thinking_replayed_without_its_signature() {
    let b = with(json!([user(json!("hi")), assistant(json!([{"type": "thinking", "thinking": "t"}]))]), json!({}));
    refused(b, "block_field", "messages.1.content.0.thinking.signature: Field required").await;
    let b = with(json!([user(json!("hi")), assistant(json!([{"type": "redacted_thinking"}]))]), json!({}));
    refused(b, "block_field", "messages.1.content.0.redacted_thinking.data: Field required").await;
    let b = with(
        json!([user(json!("hi")), assistant(json!([{"type": "thinking", "thinking": "t", "signature": ""}]))]),
        json!({}),
    );
    refused(b, "thinking_signature", "messages.1.content.0: Invalid `signature` in `thinking` block").await;
}

#[tokio::test]
async fn thinking_out_of_order() {
    let b = with(
        json!([
            user(json!("hi")),
            assistant(json!([{"type": "text", "text": "a"}, {"type": "thinking", "thinking": "t", "signature": "s"}])),
            user(json!("more")),
        ]),
        json!({}),
    );
    refused(
        b,
        "thinking_order",
        "messages.1.content.0: If an assistant message contains any thinking blocks, the first block must be `thinking` or `redacted_thinking`. Found `text`.",
    )
    .await;
}

#[tokio::test]
async fn tool_use_id_outside_the_pattern_and_twice() {
    let b = with(json!([user(json!("hi")), assistant(json!([tool_use("toolu 1")]))]), json!({}));
    refused(b, "tool_use_id", "messages.1.content.0.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'").await;
    let b = with(
        json!([
            user(json!("hi")),
            assistant(json!([tool_use("toolu_1")])),
            user(json!([tool_result("toolu_1")])),
            assistant(json!([tool_use("toolu_1")])),
            user(json!([tool_result("toolu_1")])),
        ]),
        json!({}),
    );
    refused(b, "duplicate_tool_use_id", "messages: `tool_use` ids must be unique").await;
}

#[tokio::test]
async fn tool_result_not_first_in_its_user_message() {
    let b = with(
        json!([
            user(json!("hi")),
            assistant(json!([tool_use("toolu_1"), tool_use("toolu_2")])),
            user(json!([tool_result("toolu_1"), {"type": "text", "text": "note"}, tool_result("toolu_2")])),
        ]),
        json!({}),
    );
    refused(
        b,
        "tool_result_position",
        "messages.2: Did not find 2 `tool_result` block(s) at the beginning of this message. Messages following `tool_use` blocks must begin with a matching number of `tool_result` blocks.",
    )
    .await;
}

#[tokio::test]
async fn a_missing_result_is_named_by_the_pairing_rule_first() {
    let b = with(
        json!([
            user(json!("hi")),
            assistant(json!([tool_use("toolu_1")])),
            user(json!([{"type": "text", "text": "no"}]))
        ]),
        json!({}),
    );
    refused(b, "tool_pairing", "messages.2: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1. Each `tool_use` block must have a corresponding `tool_result` block in the next message.").await;
}

#[tokio::test]
async fn tool_names_outside_the_pattern() {
    for name in ["read.file", "", &"a".repeat(65)] {
        let b = with(hello(), json!({"tools": [{"name": name, "input_schema": {"type": "object"}}]}));
        refused(b, "tool_definition", "tools.0.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'").await;
    }
    // a server tool has a `type`: its name is the API's, not checked against the pattern
    let f = start(SCRIPT).await;
    let b = with(
        hello(),
        json!({"tools": [{"name": "Read", "input_schema": {}}, {"type": "web_search_20250305", "name": "web_search", "max_uses": 8}]}),
    );
    assert_eq!(post(&f, &b).await.0, 200);
}

#[tokio::test]
async fn unknown_or_missing_fields_in_a_tool_definition() {
    let b = with(hello(), json!({"tools": [{"name": "Read", "input_schema": {}, "parameters": {}}]}));
    refused(b, "tool_definition", "tools.0.custom.parameters: Extra inputs are not permitted").await;
    let b = with(hello(), json!({"tools": [{"name": "Read"}]}));
    refused(b, "tool_definition", "tools.0.custom.input_schema: Field required").await;
}

#[tokio::test]
async fn duplicate_tool_names() {
    let t = json!({"name": "Read", "input_schema": {"type": "object"}});
    refused(with(hello(), json!({"tools": [t, t]})), "duplicate_tool_name", "tools: Tool names must be unique.").await;
}

#[tokio::test]
async fn more_cache_control_breakpoints_than_allowed() {
    let cc = json!({"type": "ephemeral"});
    let text = |t: &str| json!({"type": "text", "text": t, "cache_control": cc});
    let b = with(json!([user(json!([text("a"), text("b"), text("c")]))]), json!({"system": [text("s1"), text("s2")]}));
    refused(b, "cache_control_limit", "A maximum of 4 blocks with cache_control may be provided. Found 5.").await;
    // four are fine
    let f = start(SCRIPT).await;
    let b = with(json!([user(json!([text("a"), text("b")]))]), json!({"system": [text("s1"), text("s2")]}));
    assert_eq!(post(&f, &b).await.0, 200);
}

#[tokio::test]
async fn what_the_api_accepts_passes_a_prefill_system_messages_and_empty_thinking_among_it() {
    let f = start("[[turn]]\ntext = \"ok\"\n[[turn]]\ntext = \"again\"\n").await;
    let b = with(
        json!([
            {"role": "system", "content": "a reminder before the first user turn"},
            user(json!("hi")),
            assistant(json!([
                {"type": "redacted_thinking", "data": "abc"},
                {"type": "thinking", "thinking": "", "signature": "sig"},
                tool_use("toolu_1"),
            ])),
            {"role": "system", "content": [{"type": "text", "text": "reminder"}]},
            user(json!([tool_result("toolu_1"), {"type": "text", "text": "and a note"}])),
            user(json!("two user turns in a row are combined by the API")),
            assistant(json!("The answer is")),
        ]),
        json!({"metadata": {"user_id": "u"}, "thinking": {"type": "adaptive"}, "context_management": {}, "output_config": {}}),
    );
    let (status, _, text) = post(&f, &b).await;
    assert_eq!(status, 200, "{text}");
    // an empty final assistant message too
    let b = with(json!([user(json!("hi")), assistant(json!([]))]), json!({}));
    assert_eq!(post(&f, &b).await.0, 200);
    assert!(f.stub.recorder().exchanges().iter().all(|e| e.violation.is_none()));
}

#[tokio::test]
async fn strict_false_keeps_only_the_pairing_rule() {
    let f = start("[stub]\nstrict = false\ncycle = true\n[[turn]]\ntext = \"ok\"\n").await;
    let lenient = [
        with(hello(), json!({"temprature": 1})),
        with(hello(), json!({"max_tokens": 0})),
        with(json!([]), json!({})),
        with(json!([user(json!([{"type": "text", "text": ""}]))]), json!({})),
        with(json!([user(json!("hi")), assistant(json!([{"type": "thinking", "thinking": "t"}]))]), json!({})),
        with(hello(), json!({"tools": [{"name": "a.b", "input_schema": {}}, {"name": "a.b", "input_schema": {}}]})),
    ];
    for b in &lenient {
        let (status, _, text) = post(&f, b).await;
        assert_eq!(status, 200, "{b} -> {text}");
    }
    let unpaired =
        with(json!([user(json!("hi")), assistant(json!([tool_use("toolu_1")])), user(json!("no"))]), json!({}));
    let (status, _, _) = post(&f, &unpaired).await;
    assert_eq!(status, 400);
    let kinds: Vec<_> =
        f.stub.recorder().exchanges().iter().filter_map(|e| e.violation.as_ref().map(|v| v.kind.clone())).collect();
    assert_eq!(kinds, ["tool_pairing"]);
}

#[tokio::test]
async fn an_empty_scripted_text_is_refused_when_the_script_loads() {
    let err = stub_messages::Script::from_toml("s.toml", "[[turn]]\ntext = \"\"\n").err().map(|e| e.0);
    assert!(err.as_deref().unwrap_or_default().contains("text content blocks must be non-empty"), "{err:?}");
    assert!(stub_messages::Script::from_toml("s.toml", "[stub]\nstrict = false\n[[turn]]\ntext = \"\"\n").is_ok());
}
