//! `wait = { … }` on turns: a held request is served when its condition holds, in its conversation's
//! order; the record says what it waited for and orders the exchanges as they were answered; a wait
//! that never holds ends in a recorded error, never a hang.

use crate::support::*;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};
use stub_messages::{serve, ExchangeKind, Recorder, Script, Stub};

/// Posts `request` to the stub on a task of its own: the status it gets, once the stub answers.
fn in_background(f: &Fixture, request: Value) -> tokio::task::JoinHandle<u16> {
    let url = f.url("/v1/messages");
    tokio::spawn(
        async move { client().post(url).json(&request).send().await.map(|r| r.status().as_u16()).unwrap_or(0) },
    )
}

fn named(first: &str) -> Value {
    json!({"model": "m", "max_tokens": 10, "stream": false, "tools": tools(),
        "messages": [{"role": "user", "content": first}]})
}

#[tokio::test]
async fn a_turn_waits_for_another_conversation_to_be_served_and_is_answered_after_it() {
    let f = start(
        "[[turn]]\nwait = { conversation = \"sub\", served = 1 }\ntext = \"main done\"\n\
         [[conversation]]\nname = \"sub\"\nselect = { first_user_contains = \"SUB:\" }\n[[conversation.turn]]\ntext = \"sub done\"\n",
    )
    .await;
    let main = in_background(&f, body(hello(), false));
    // the main request arrives first and is held
    let t0 = Instant::now();
    while f.stub.recorder().exchanges().is_empty() && !main.is_finished() && t0.elapsed() < Duration::from_secs(2) {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(!main.is_finished(), "the main turn must wait for the sub-agent");
    let (status, _, _) = post(&f, &named("SUB: go")).await;
    assert_eq!(status, 200);
    assert_eq!(main.await.unwrap_or(0), 200);
    let mut ex = f.stub.recorder().exchanges();
    ex.sort_by_key(|e| e.seq);
    assert_eq!(ex[0].conversation.as_deref(), Some("main"), "main arrived first");
    assert!(ex[0].answer_seq > ex[1].answer_seq, "but it was answered after the sub-agent: {ex:?}");
    assert_eq!(ex[0].waited.as_deref(), Some("conversation \"sub\" served 1 turn(s)"));
    assert_eq!(ex[1].waited, None);
}

#[tokio::test]
async fn a_turn_waits_for_a_file_with_a_captured_name() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.path().join("task-7.output");
    let toml = format!(
        "[[turn]]\ntool_use = [{{ name = \"Read\", input = {{}} }}]\n\
         [[turn]]\ncapture = {{ id = 'task (\\d+)' }}\nwait = {{ file = \"{}/task-{{{{id}}}}.output\", contains = \"ready\", timeout_ms = 5000 }}\ntext = \"seen\"\n",
        dir.path().display()
    );
    let f = start(&toml).await;
    let (status, _, text) = post(&f, &body(hello(), false)).await;
    assert_eq!(status, 200, "{text}");
    let id = parse(&text)["content"][0]["id"].as_str().unwrap_or_default().to_string();
    let second = body(
        json!([{"role": "user", "content": "hi"},
               {"role": "assistant", "content": [{"type": "tool_use", "id": id, "name": "Read", "input": {}}]},
               {"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": "started task 7"}]}]),
        false,
    );
    let req = in_background(&f, second);
    std::fs::write(&path, "not yet\n").unwrap_or_else(|e| panic!("{e}"));
    tokio::time::sleep(Duration::from_millis(30)).await;
    assert!(!req.is_finished(), "the file does not hold the text yet");
    std::fs::write(&path, "not yet\nready\n").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(req.await.unwrap_or(0), 200);
    let ex = f.stub.recorder().exchanges();
    let waited = ex.iter().find_map(|e| e.waited.clone()).unwrap_or_default();
    assert!(waited.ends_with("/task-{{id}}.output contains \"ready\""), "{waited}");
}

#[tokio::test]
async fn a_turn_waits_for_a_file_to_be_gone() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.path().join(".bashrc");
    std::fs::write(&path, "").unwrap_or_else(|e| panic!("{e}"));
    let toml = format!(
        "[[turn]]\nwait = {{ file = \"{}\", exists = false, timeout_ms = 5000 }}\ntext = \"gone\"\n",
        path.display()
    );
    let f = start(&toml).await;
    let req = in_background(&f, body(hello(), false));
    tokio::time::sleep(Duration::from_millis(30)).await;
    assert!(!req.is_finished(), "the file is still there");
    std::fs::remove_file(&path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(req.await.unwrap_or(0), 200);
    let ex = f.stub.recorder().exchanges();
    let waited = ex.iter().find_map(|e| e.waited.clone()).unwrap_or_default();
    assert!(waited.ends_with("/.bashrc is gone"), "{waited}");
    // a file that never was there: served at once
    let f = start("[[turn]]\nwait = { file = \"/nonexistent/probelab-never\", exists = false, timeout_ms = 50 }\ntext = \"at once\"\n").await;
    let (status, _, text) = post(&f, &body(hello(), false)).await;
    assert_eq!(status, 200, "{text}");
    assert!(text.contains("at once"), "{text}");
}

#[tokio::test]
async fn a_turn_waits_for_a_file_to_contain_one_of_several_texts() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.path().join("session.jsonl");
    std::fs::write(&path, "launched\n").unwrap_or_else(|e| panic!("{e}"));
    let toml = format!(
        "[[turn]]\nwait = {{ file = \"{}\", contains_any = [\"queued\", \"refused\"], timeout_ms = 5000 }}\ntext = \"on\"\n",
        path.display()
    );
    let f = start(&toml).await;
    let req = in_background(&f, body(hello(), false));
    tokio::time::sleep(Duration::from_millis(30)).await;
    assert!(!req.is_finished(), "neither text is there yet");
    // the second of the two
    std::fs::write(&path, "launched\nrefused\n").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(req.await.unwrap_or(0), 200);
    let ex = f.stub.recorder().exchanges();
    let waited = ex.iter().find_map(|e| e.waited.clone()).unwrap_or_default();
    assert!(waited.ends_with("/session.jsonl contains one of [\"queued\",\"refused\"]"), "{waited}");
    // an empty list, or one beside contains, is refused when the script is read
    for bad in ["contains_any = []", "contains_any = [\"\"]", "contains = \"a\", contains_any = [\"b\"]"] {
        let toml = format!("[[turn]]\nwait = {{ file = \"f\", {bad} }}\ntext = \"t\"\n");
        let e = Script::from_toml("test.toml", &toml).map(|_| ()).map_err(|e| e.to_string());
        assert!(e.as_ref().is_err_and(|e| e.contains("contains_any")), "{bad}: {e:?}");
    }
}

#[tokio::test]
async fn the_turn_hook_runs_before_the_turns_wait_so_a_turn_can_wait_for_what_it_set_off() {
    // the harness's at_turn faults: a gate file written for turn 1 lets a background job end, and
    // turn 1 waits for the job's mark; were the hook run after the wait, the turn would time out
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let (gate, mark) = (dir.path().join("go"), dir.path().join("done"));
    let toml = format!(
        "[[turn]]\nwait = {{ file = \"{}\", contains = \"ended\", timeout_ms = 5000 }}\ntext = \"seen\"\n",
        mark.display()
    );
    let script = Script::from_toml("test.toml", &toml).unwrap_or_else(|e| panic!("{e}"));
    let calls = Arc::new(std::sync::Mutex::new(Vec::new()));
    let hook_calls = calls.clone();
    let hook_gate = gate.clone();
    let stub =
        Arc::new(Stub::new(script, Recorder::default()).with_turn_hook(Arc::new(move |conv: &str, turn: usize| {
            hook_calls.lock().unwrap_or_else(|p| p.into_inner()).push((conv.to_string(), turn));
            std::fs::write(&hook_gate, "").unwrap_or_else(|e| panic!("{e}"));
        })));
    let running = serve(stub.clone(), "127.0.0.1:0".parse().unwrap_or_else(|_| unreachable!()))
        .await
        .unwrap_or_else(|e| panic!("cannot bind: {e}"));
    // the job: ends (writes its mark) once the gate is there
    let job = std::thread::spawn(move || {
        let t0 = Instant::now();
        while !gate.exists() && t0.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(2));
        }
        std::fs::write(&mark, "ended\n").unwrap_or_else(|e| panic!("{e}"));
    });
    let f = Fixture { running, stub };
    let (status, _, text) = post(&f, &body(hello(), false)).await;
    assert_eq!(status, 200, "{text}");
    assert!(text.contains("seen"), "{text}");
    job.join().unwrap_or_else(|_| panic!("the job panicked"));
    assert_eq!(
        *calls.lock().unwrap_or_else(|p| p.into_inner()),
        vec![("main".to_string(), 0)],
        "once, for main turn 1"
    );
    let ex = f.stub.recorder().exchanges();
    assert!(ex[0].violation.is_none(), "{:?}", ex[0].violation);
}

#[tokio::test]
async fn a_wait_that_never_holds_is_a_recorded_error_and_the_turn_stays_unserved() {
    let f =
        start("[[turn]]\nwait = { file = \"/nonexistent/probelab-never\", timeout_ms = 50 }\ntext = \"never\"\n").await;
    let t0 = Instant::now();
    let (status, _, text) = post(&f, &body(hello(), false)).await;
    assert!(t0.elapsed() < Duration::from_secs(2));
    assert_eq!(status, 400, "{text}");
    assert!(text.contains("waited 50 ms for file /nonexistent/probelab-never exists, which did not happen"), "{text}");
    let ex = f.stub.recorder().exchanges();
    assert_eq!(ex[0].violation.as_ref().map(|v| v.kind.as_str()), Some("wait_timeout"));
    assert_eq!(f.stub.progress()[0], ("main".to_string(), 0, 1), "the turn was given back");
    // streaming: an error event, not a hang
    let (status, _, text) = post(&f, &body(hello(), true)).await;
    assert_eq!(status, 200);
    assert!(text.contains("event: error") && text.contains("wait"), "{text}");
}

#[tokio::test]
async fn turns_of_one_conversation_are_served_in_order_when_their_requests_arrive_at_once() {
    let mut toml = String::from(
        "[[turn]]\ntext = \"main\"\n[[conversation]]\nname = \"many\"\nselect = { first_user_contains = \"MANY:\" }\n",
    );
    toml.push_str("[[conversation.turn]]\nwait = { conversation = \"main\", served = 1 }\ntext = \"first\"\n");
    for _ in 0..5 {
        toml.push_str("[[conversation.turn]]\ntext = \"later\"\n");
    }
    let f = start(&toml).await;
    let mut held = Vec::new();
    for _ in 0..6 {
        let url = f.url("/v1/messages");
        held.push(tokio::spawn(async move {
            let r = client().post(url).json(&named("MANY: go")).send().await;
            r.map(|r| r.status().as_u16()).unwrap_or(0)
        }));
    }
    let t0 = Instant::now();
    while f.stub.recorder().exchanges().is_empty() && t0.elapsed() < Duration::from_millis(100) {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(f.stub.recorder().exchanges().is_empty(), "every turn of `many` waits behind the first");
    let (status, _, _) = post(&f, &body(hello(), false)).await;
    assert_eq!(status, 200);
    for h in held {
        assert_eq!(h.await.unwrap_or(0), 200);
    }
    let mut ex: Vec<_> = f.stub.recorder().exchanges().into_iter().filter(|e| e.kind == ExchangeKind::Turn).collect();
    ex.sort_by_key(|e| e.answer_seq);
    let order: Vec<(Option<&str>, Option<usize>)> = ex.iter().map(|e| (e.conversation.as_deref(), e.turn)).collect();
    assert_eq!(
        order,
        [(Some("main"), Some(0))].into_iter().chain((0..6).map(|t| (Some("many"), Some(t)))).collect::<Vec<_>>()
    );
}

#[test]
fn a_wait_is_checked_when_the_script_loads() {
    let err = |t: &str| stub_messages::Script::from_toml("p.toml", t).err().map(|e| e.0).unwrap_or_default();
    assert!(err("[[turn]]\ntext = \"a\"\nwait = { conversation = \"nobody\", served = 1 }\n")
        .contains("wait: conversation \"nobody\" is not in the script"));
    assert!(err("[[turn]]\ntext = \"a\"\nwait = { timeout_ms = 5 }\n").contains("wait needs a condition"));
    assert!(err("[[turn]]\ntext = \"a\"\nwait = { contains = \"x\" }\n").contains("contains needs a file"));
    assert!(err("[[turn]]\ntext = \"a\"\nwait = { file = \"f\", sleep = 1 }\n").contains("unknown field `sleep`"));
    assert!(err("[[turn]]\ntext = \"a\"\nwait = { exists = false }\n").contains("exists needs a file"));
    assert!(err("[[turn]]\ntext = \"a\"\nwait = { file = \"f\", exists = false, contains = \"x\" }\n")
        .contains("exclude each other"));
}
