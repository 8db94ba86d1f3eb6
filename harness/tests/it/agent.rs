//! The built-in agent loop against the stub: retries (honouring retry-after), giving up, fatal errors,
//! the turn limit.

use crate::support::Sandbox;
use probelab_runtime::agent::{run_loop, Client, LoopEnd, MAX_RETRIES};
use probelab_runtime::builtin::SessionConfig;
use std::sync::Arc;
use std::time::{Duration, Instant};
use stub_messages::{serve, Exchange, Recorder, Script, Stub};

async fn run(script: &str, max_turns: usize) -> (LoopEnd, Vec<Exchange>, Duration) {
    let script = Script::from_toml("agent.toml", script).unwrap_or_else(|e| panic!("{e}"));
    let stub = Arc::new(Stub::new(script, Recorder::default()));
    let running = serve(stub.clone(), ([127, 0, 0, 1], 0).into()).await.unwrap_or_else(|e| panic!("{e}"));
    let client = Arc::new(Client::new(&running.url(), "claude-opus-5"));
    let sb = Sandbox::new();
    sb.write("f.txt", "x\n");
    let rt = sb.start(SessionConfig { model: Some(client.clone()), ..sb.config() }).await;
    let t = Instant::now();
    let end = run_loop(client.as_ref(), &rt, "go", max_turns).await;
    let took = t.elapsed();
    running.stop().await;
    let mut ex = stub.recorder().exchanges();
    ex.sort_by_key(|e| e.seq);
    (end, ex, took)
}

#[tokio::test]
async fn http_faults_are_retried_and_retry_after_is_honoured() {
    let (end, ex, took) = run(
        "[[turn]]\ntext = \"ok\"\nfault = [{ kind = \"http\", status = 529, retry_after = 1 }, { kind = \"http\", status = 429 }, { kind = \"http\", status = 500 }]\n",
        5,
    )
    .await;
    assert_eq!(end, LoopEnd::EndTurn);
    assert_eq!(ex.iter().map(|e| e.status).collect::<Vec<_>>(), [529, 429, 500, 200]);
    // a lower bound only: the 1 s retry-after was waited out (sleeps never end early)
    assert!(took >= Duration::from_secs(1), "{took:?}");
}

#[tokio::test]
async fn stream_faults_are_retried() {
    let (end, ex, _) = run(
        "[[turn]]\ntext = \"ok\"\nfault = [{ kind = \"sse_error\", after_events = 2 }, { kind = \"cut\", after_events = 3 }]\n",
        5,
    )
    .await;
    assert_eq!(end, LoopEnd::EndTurn);
    assert_eq!(ex.len(), 3);
    assert!(ex[2].fault.is_none());
}

#[tokio::test]
async fn retries_end_with_a_clear_error() {
    let faults = vec!["{ kind = \"http\", status = 529 }"; MAX_RETRIES as usize + 1].join(", ");
    let (end, ex, _) = run(&format!("[[turn]]\ntext = \"never\"\nfault = [{faults}]\n"), 5).await;
    match end {
        LoopEnd::Error(e) => assert!(e.contains("HTTP 529") && e.contains("gave up after 4 retries"), "{e}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(ex.len(), MAX_RETRIES as usize + 1);
}

#[tokio::test]
async fn an_exhausted_script_is_fatal_at_once() {
    let (end, ex, _) = run("[[turn]]\ntool_use = [{ name = \"Read\", input = { file_path = \"f.txt\" } }]\n", 5).await;
    match end {
        LoopEnd::Error(e) => assert!(e.contains("script exhausted"), "{e}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(ex.len(), 2, "not retried");
    // the tool_use was still answered in the request that found the script's end
    let last = ex[1].request.as_ref().map(|r| r["messages"][2]["content"][0]["type"].clone());
    assert_eq!(last, Some(serde_json::json!("tool_result")));
}

#[tokio::test]
async fn the_turn_limit_stops_a_model_that_never_ends() {
    let (end, ex, _) =
        run("[stub]\ncycle = true\n[[turn]]\ntool_use = [{ name = \"Read\", input = { file_path = \"f.txt\" } }]\n", 3)
            .await;
    assert_eq!(end, LoopEnd::TurnLimit);
    assert_eq!(ex.len(), 3);
}
