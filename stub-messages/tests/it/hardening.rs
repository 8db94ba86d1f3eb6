//! The connection layer under load and abuse: slow-loris connections, refusals of the HTTP layer, body
//! timeouts, clients that leave mid-request or mid-stream, a bounded stop, and the standalone binary
//! exiting on SIGTERM. Waits are for events, each with a bound; timings are asserted as bounds only.

use crate::support::*;
use std::time::{Duration, Instant};
use stub_messages::sse::{check_stream, decode_all};
use stub_messages::wire::ContentBlock;
use stub_messages::{Exchange, ExchangeKind};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long a test waits for an event it caused before it fails (the events take milliseconds).
const BOUND: Duration = Duration::from_secs(20);

/// Slow-loris connections opened by the tests.
const LORIS: usize = 200;

/// A partial request head: the request line and one header, the blank line never comes.
const PARTIAL: &[u8] = b"POST /v1/messages HTTP/1.1\r\nHost: stub\r\nx-api-key: sk-ant-loris-SECRET\r\n";

/// The text of a complete stream, as a client reassembles it.
fn final_text(sse: &str) -> String {
    let report = check_stream(&decode_all(sse.as_bytes()).unwrap_or_else(|e| panic!("{e}: {sse}")));
    assert!(report.complete && report.violations.is_empty(), "{:?}", report.violations);
    match report.message.as_ref().and_then(|m| m.content.first()) {
        Some(ContentBlock::Text { text }) => text.clone(),
        other => panic!("{other:?}"),
    }
}

fn addr(f: &Fixture) -> String {
    f.running.url().trim_start_matches("http://").to_string()
}

/// Polls the record until `done` holds for it, at most [`BOUND`].
async fn record_until(f: &Fixture, what: &str, done: impl Fn(&[Exchange]) -> bool) -> Vec<Exchange> {
    let start = Instant::now();
    loop {
        let ex = f.stub.recorder().exchanges();
        if done(&ex) {
            return ex;
        }
        assert!(start.elapsed() < BOUND, "waited {BOUND:?} for {what}; record: {ex:#?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn violation(e: &Exchange) -> Option<&str> {
    e.violation.as_ref().map(|v| v.kind.as_str())
}

/// Sends `bytes` on a new connection and reads until the server closes it (at most [`BOUND`]).
async fn exchange_raw(address: &str, bytes: &[u8]) -> Vec<u8> {
    let mut s = TcpStream::connect(address).await.unwrap_or_else(|e| panic!("{e}"));
    s.write_all(bytes).await.unwrap_or_else(|e| panic!("{e}"));
    let mut out = Vec::new();
    let read = tokio::time::timeout(BOUND, s.read_to_end(&mut out)).await;
    assert!(read.is_ok(), "the server kept the connection open past {BOUND:?}");
    out
}

/// Opens a connection that sends [`PARTIAL`] and then one more header byte every `trickle`, until the
/// server closes it; the task's result is how long the connection lived.
async fn loris(address: &str, trickle: Duration) -> tokio::task::JoinHandle<Duration> {
    let opened = Instant::now();
    let mut s = TcpStream::connect(address).await.unwrap_or_else(|e| panic!("{e}"));
    s.write_all(PARTIAL).await.unwrap_or_else(|e| panic!("{e}"));
    let task = tokio::spawn(async move {
        let mut buf = [0u8; 64];
        loop {
            tokio::select! {
                r = s.read(&mut buf) => if matches!(r, Ok(0) | Err(_)) { return opened.elapsed() },
                _ = tokio::time::sleep(trickle) => if s.write_all(b"x").await.is_err() { return opened.elapsed() },
            }
        }
    });
    task
}

#[tokio::test]
async fn slow_loris_connections_do_not_stop_a_request_and_are_closed_after_the_header_timeout() {
    let timeout = Duration::from_millis(3000);
    let f = start(&format!("[stub]\nheader_timeout_ms = {}\n[[turn]]\ntext = \"served\"\n", timeout.as_millis())).await;
    let a = addr(&f);
    let mut tasks = Vec::new();
    for _ in 0..LORIS {
        tasks.push(loris(&a, Duration::from_millis(100)).await);
    }
    // and a few that send nothing at all
    let mut silent = Vec::new();
    for _ in 0..10 {
        silent.push(TcpStream::connect(&a).await.unwrap_or_else(|e| panic!("{e}")));
    }
    let opened = Instant::now();
    let (status, _, text) = post(&f, &body(hello(), true)).await;
    assert_eq!(status, 200);
    assert_eq!(final_text(&text), "served");
    let answered = opened.elapsed();
    println!("with {LORIS} slow-loris connections open, a streamed turn was answered in {answered:?}");
    let still_open = tasks.iter().filter(|t| !t.is_finished()).count();
    assert_eq!(still_open, LORIS, "the request was answered after {answered:?}, when the loris should be open");
    let mut longest = Duration::ZERO;
    for t in tasks {
        let lived = tokio::time::timeout(BOUND, t).await.unwrap_or_else(|_| panic!("a loris outlived {BOUND:?}"));
        let lived = lived.unwrap_or_else(|e| panic!("{e}"));
        // a lower bound only: the timer starts after the connect, the sleep never ends early
        assert!(lived >= timeout, "a loris was closed after {lived:?}, before the {timeout:?} header timeout");
        longest = longest.max(lived);
    }
    println!(
        "the {LORIS} slow-loris connections were closed at most {longest:?} after they opened (timeout {timeout:?})"
    );
    // the silent ones too: a connection that sends nothing is closed by the same timer
    for mut p in silent {
        let mut buf = Vec::new();
        let read = tokio::time::timeout(BOUND, p.read_to_end(&mut buf)).await;
        assert!(read.is_ok_and(|r| r.is_ok_and(|n| n == 0)), "a silent connection was not closed");
    }
    let ex = record_until(&f, "the loris refusals", |ex| {
        ex.iter().filter(|e| violation(e) == Some("header_timeout")).count() == LORIS
    })
    .await;
    let loris: Vec<&Exchange> = ex.iter().filter(|e| violation(e) == Some("header_timeout")).collect();
    for e in &loris {
        assert_eq!(
            (e.method.as_str(), e.path.as_str(), e.status, e.kind),
            ("POST", "/v1/messages", 0, ExchangeKind::Invalid)
        );
        let text = e.request_text.as_deref().unwrap_or_default();
        assert!(text.starts_with("POST /v1/messages HTTP/1.1\r\nHost: stub\r\n") && text.ends_with('x'), "{text:?}");
        assert_eq!(e.headers.get("x-api-key").map(String::as_str), Some("<redacted>"));
        assert!(!text.contains("SECRET"), "the key reached the record");
    }
    // the silent connections sent nothing: no request, nothing recorded; the served one is there
    assert_eq!(ex.len(), LORIS + 1);
    assert_eq!(ex.iter().filter(|e| e.kind == ExchangeKind::Turn && e.status == 200).count(), 1);
}

#[tokio::test]
async fn every_refusal_of_the_http_layer_is_recorded() {
    let f = start("[stub]\nheader_timeout_ms = 500\nbody_timeout_ms = 500\n[[turn]]\ntext = \"x\"\n").await;
    let a = addr(&f);
    let many_headers: Vec<u8> = [
        b"GET /v1/models HTTP/1.1\r\nHost: stub\r\n".to_vec(),
        (0..200).flat_map(|i| format!("x-h{i}: v\r\n").into_bytes()).collect(),
        b"\r\n".to_vec(),
    ]
    .concat();
    let long_uri = [b"GET /v1/".to_vec(), vec![b'a'; 100 * 1024], b" HTTP/1.1\r\nHost: stub\r\n\r\n".to_vec()].concat();
    let cases: Vec<(&str, Vec<u8>, u16, &str)> = vec![
        ("bad request line", b"HELLO THERE\r\n\r\n".to_vec(), 400, "malformed_request"),
        ("200 headers", many_headers, 431, "headers_too_large"),
        ("100 KB URI", long_uri, 414, "uri_too_long"),
        (
            "non-UTF-8 path",
            b"GET /v1/mod\xc3\x28\xff HTTP/1.1\r\nHost: stub\r\n\r\n".to_vec(),
            400,
            "malformed_request",
        ),
    ];
    for (i, (what, bytes, status, kind)) in cases.iter().enumerate() {
        let answer = exchange_raw(&a, bytes).await;
        let line = String::from_utf8_lossy(&answer).lines().next().unwrap_or_default().to_string();
        assert!(line.starts_with(&format!("HTTP/1.1 {status} ")), "{what}: {line:?}");
        let ex = record_until(&f, what, |ex| ex.len() > i).await;
        let e = &ex[i];
        assert_eq!((e.kind, e.status, violation(e)), (ExchangeKind::Invalid, *status, Some(*kind)), "{what}: {e:#?}");
        let text = e.request_text.as_deref().unwrap_or_default();
        assert!(!text.is_empty() && String::from_utf8_lossy(bytes).starts_with(text), "{what}: {text:?}");
        assert!(e.violation.as_ref().is_some_and(|v| v.message.contains(&format!("answering {status}"))), "{e:#?}");
    }
    let ex = f.stub.recorder().exchanges();
    assert_eq!(ex[1].headers.len(), 201, "the headers of the 431 are kept");
    assert_eq!(ex[2].request_text.as_ref().map(String::len), Some(64 * 1024), "at most 64 KiB of a refused request");
    assert_eq!(ex[3].path, "/v1/mod\u{fffd}(\u{fffd}");

    // a head that never ends: closed unanswered after the header timeout
    let answer = exchange_raw(&a, PARTIAL).await;
    assert!(answer.is_empty(), "{answer:?}");
    let ex = record_until(&f, "the header timeout", |ex| ex.len() == 5).await;
    assert_eq!((ex[4].status, violation(&ex[4])), (0, Some("header_timeout")));

    // a client that leaves in the middle of a head: recorded as such, not as a refusal
    let mut s = TcpStream::connect(&a).await.unwrap_or_else(|e| panic!("{e}"));
    s.write_all(PARTIAL).await.unwrap_or_else(|e| panic!("{e}"));
    drop(s);
    let ex = record_until(&f, "the abandoned head", |ex| ex.len() == 6).await;
    assert_eq!((ex[5].status, violation(&ex[5]), ex[5].client_disconnected), (0, None, true), "{:#?}", ex[5]);
    assert_eq!(ex[5].path, "/v1/messages");

    // a body that does not arrive in time: 408, recorded; the connection is closed
    let slow_body = b"POST /v1/messages HTTP/1.1\r\nHost: stub\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{\"model\"";
    let answer = exchange_raw(&a, slow_body).await;
    let text = String::from_utf8_lossy(&answer).to_string();
    assert!(text.starts_with("HTTP/1.1 408 "), "{text}");
    assert!(text.contains("\"type\":\"timeout_error\"") && text.contains("did not arrive within 500 ms"), "{text}");
    let ex = record_until(&f, "the body timeout", |ex| ex.len() == 7).await;
    assert_eq!((ex[6].kind, ex[6].status, violation(&ex[6])), (ExchangeKind::Invalid, 408, Some("body_timeout")));

    // a client that leaves in the middle of a body: recorded with status 0, no turn consumed
    let mut s = TcpStream::connect(&a).await.unwrap_or_else(|e| panic!("{e}"));
    s.write_all(&slow_body[..slow_body.len() - 3]).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(f.stub.recorder().exchanges().len(), 7, "nothing is recorded while the body is arriving");
    drop(s);
    let ex = record_until(&f, "the abandoned body", |ex| ex.len() == 8).await;
    assert_eq!((ex[7].status, violation(&ex[7]), ex[7].client_disconnected), (0, None, true), "{:#?}", ex[7]);
    assert_eq!(f.stub.progress()[0].1, 0);
}

/// A turn long enough to leave in the middle: many events, each after a delay.
const SLOW_TURN: &str = "[[turn]]\ntext = \"one two three four five six seven eight nine ten\"\ndelay_ms = 30\n[[turn]]\ntext = \"second\"\n";

/// Streams turn requests, reads the first chunk of the answer and leaves.
async fn leave_mid_stream(f: &Fixture) -> String {
    let r = client().post(f.url("/v1/messages")).json(&body(hello(), true)).send().await;
    let mut r = r.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.status(), 200);
    let chunk = r.chunk().await.ok().flatten().unwrap_or_default();
    String::from_utf8_lossy(&chunk).into_owned()
}

#[tokio::test]
async fn a_stream_its_client_leaves_is_recorded_and_its_turn_served_again() {
    let f = start(SLOW_TURN).await;
    let first = leave_mid_stream(&f).await;
    assert!(first.contains("msg_test_main_1"), "{first}");
    let ex = record_until(&f, "the disconnect", |ex| ex.len() == 1).await;
    let e = &ex[0];
    assert!(e.client_disconnected && e.violation.is_none(), "{e:#?}");
    assert_eq!((e.kind, e.turn, e.status), (ExchangeKind::Turn, Some(0), 200));
    let sent = e.events.as_ref().map_or(0, Vec::len);
    assert!(sent >= 1 && !e.events.iter().flatten().any(|ev| ev.event == "message_stop"), "{sent} events");
    assert_eq!(f.stub.progress()[0].1, 0, "the turn was given back");
    // the retry gets the same turn, whole
    let (status, _, text) = post(&f, &body(hello(), true)).await;
    assert_eq!(status, 200);
    assert!(text.contains("msg_test_main_1"));
    assert_eq!(final_text(&text), "one two three four five six seven eight nine ten");
    let ex = f.stub.recorder().exchanges();
    assert_eq!((ex[1].turn, ex[1].client_disconnected), (Some(0), false));
    assert_eq!(f.stub.progress()[0].1, 1);
    // the record line of a disconnect carries the flag; old lines without it still parse
    let line = serde_json::to_value(&ex[0]).unwrap_or_default();
    assert_eq!(line["client_disconnected"], serde_json::Value::Bool(true));
    let old = serde_json::to_value(&ex[1]).unwrap_or_default();
    assert!(old.get("client_disconnected").is_none(), "false is not written");
    assert!(serde_json::from_value::<Exchange>(old).is_ok_and(|e| !e.client_disconnected));
}

#[tokio::test]
async fn disconnect_consumes_turn_true_moves_on() {
    let f = start(&format!("[stub]\ndisconnect_consumes_turn = true\n{SLOW_TURN}")).await;
    leave_mid_stream(&f).await;
    record_until(&f, "the disconnect", |ex| ex.len() == 1 && ex[0].client_disconnected).await;
    assert_eq!(f.stub.progress()[0].1, 1);
    let (_, _, text) = post(&f, &body(hello(), true)).await;
    assert!(text.contains("msg_test_main_2") && final_text(&text) == "second", "{text}");
}

#[tokio::test]
async fn the_stop_is_bounded_and_records_what_it_cuts() {
    let f = start("[stub]\nshutdown_grace_ms = 300\n[[turn]]\ntext = \"slow answer\"\ndelay_ms = 1000\n").await;
    let a = addr(&f);
    // a partial head, a silent connection, an idle kept-alive connection, a stream in flight
    let mut partial = TcpStream::connect(&a).await.unwrap_or_else(|e| panic!("{e}"));
    partial.write_all(PARTIAL).await.unwrap_or_else(|e| panic!("{e}"));
    let _silent = TcpStream::connect(&a).await.unwrap_or_else(|e| panic!("{e}"));
    let c = client();
    assert_eq!(c.get(f.url("/v1/models")).send().await.map(|r| r.status().as_u16()).ok(), Some(200));
    let url = f.url("/v1/messages");
    let streaming = tokio::spawn(async move {
        let r = client().post(url).json(&body(hello(), true)).send().await;
        match r {
            Ok(r) => r.text().await.is_ok(),
            Err(_) => false,
        }
    });
    record_until(&f, "the stream to start", |_| f.stub.progress()[0].1 == 1).await;
    let Fixture { running, stub } = f;
    let t = Instant::now();
    tokio::time::timeout(Duration::from_secs(2), running.stop())
        .await
        .unwrap_or_else(|_| panic!("the stop took more than 2 s"));
    let took = t.elapsed();
    println!("the stop took {took:?} (grace 300 ms)");
    assert!(took >= Duration::from_millis(300), "the grace was not given ({took:?})");
    assert!(!streaming.await.unwrap_or(true), "the stream in flight was cut");
    let ex = stub.recorder().exchanges();
    let cut: Vec<(&str, &str)> = ex.iter().filter_map(|e| violation(e).map(|v| (v, e.path.as_str()))).collect();
    assert_eq!(cut.len(), 2, "{ex:#?}");
    assert!(cut.contains(&("shutdown", "/v1/messages")));
    let stream = ex.iter().find(|e| e.kind == ExchangeKind::Turn).unwrap_or_else(|| panic!("{ex:#?}"));
    assert!(violation(stream) == Some("shutdown") && !stream.client_disconnected, "{stream:#?}");
    let head = ex.iter().find(|e| e.kind == ExchangeKind::Invalid).unwrap_or_else(|| panic!("{ex:#?}"));
    assert_eq!((violation(head), head.status), (Some("shutdown"), 0));
    let mut buf = Vec::new();
    assert!(matches!(partial.read_to_end(&mut buf).await, Ok(0) | Err(_)), "the partial connection was closed");
}

#[tokio::test]
async fn the_binary_exits_within_2_s_of_sigterm_with_idle_and_partial_connections_open() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let script = dir.path().join("s.toml");
    let record = dir.path().join("record.jsonl");
    // a header timeout far beyond the test: only the stop can close these connections
    std::fs::write(&script, "[stub]\nheader_timeout_ms = 600000\n[[turn]]\ntext = \"x\"\n")
        .unwrap_or_else(|e| panic!("{e}"));
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_stub-messages"))
        .arg("--script")
        .arg(&script)
        .arg("--record")
        .arg(&record)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    let stdout = child.stdout.take().unwrap_or_else(|| panic!("no stdout"));
    let mut lines = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(stdout));
    let url = tokio::time::timeout(BOUND, lines.next_line()).await.ok().and_then(|l| l.ok().flatten());
    let url = url.unwrap_or_else(|| panic!("the binary printed no URL"));
    let a = url.trim_start_matches("http://").to_string();
    let mut conns = Vec::new();
    for i in 0..LORIS {
        let mut s = TcpStream::connect(&a).await.unwrap_or_else(|e| panic!("{e}"));
        if i % 2 == 0 {
            s.write_all(PARTIAL).await.unwrap_or_else(|e| panic!("{e}"));
        }
        conns.push(s);
    }
    // answered after all of them were accepted (one accept queue, in order)
    let r = client().get(format!("{url}/v1/models")).send().await.map(|r| r.status().as_u16());
    assert_eq!(r.ok(), Some(200));
    let pid = child.id().unwrap_or_else(|| panic!("no pid")).to_string();
    let t = Instant::now();
    let killed = tokio::process::Command::new("kill").args(["-TERM", &pid]).status().await;
    assert!(killed.is_ok_and(|s| s.success()));
    let status = tokio::time::timeout(Duration::from_secs(2), child.wait()).await;
    let took = t.elapsed();
    println!("the binary exited {took:?} after SIGTERM with {LORIS} connections open");
    let status = status.unwrap_or_else(|_| panic!("still running 2 s after SIGTERM"));
    assert!(status.as_ref().is_ok_and(|s| s.success()), "exit {status:?} after {took:?}");
    let text = std::fs::read_to_string(&record).unwrap_or_else(|e| panic!("{e}"));
    let ex: Vec<Exchange> =
        text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect();
    let cut = ex.iter().filter(|e| violation(e) == Some("shutdown")).count();
    assert_eq!(cut, LORIS / 2, "each partial request is recorded as cut by the stop (silent ones sent nothing)");
    assert!(!text.contains("SECRET"));
    drop(conns);
}

#[tokio::test]
async fn a_sigterm_right_after_the_url_is_printed_stops_the_binary_cleanly() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let script = dir.path().join("s.toml");
    std::fs::write(&script, "[[turn]]\ntext = \"x\"\n").unwrap_or_else(|e| panic!("{e}"));
    // the signal follows the URL at once, many times: the handlers are in place before the URL is out
    for round in 0..20 {
        let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_stub-messages"))
            .arg("--script")
            .arg(&script)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("{e}"));
        let stdout = child.stdout.take().unwrap_or_else(|| panic!("no stdout"));
        let mut lines = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(stdout));
        let url = tokio::time::timeout(BOUND, lines.next_line()).await.ok().and_then(|l| l.ok().flatten());
        assert!(url.is_some_and(|u| u.starts_with("http://")), "round {round}: no URL");
        let pid = nix::unistd::Pid::from_raw(child.id().unwrap_or_else(|| panic!("no pid")) as i32);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap_or_else(|e| panic!("{e}"));
        let status = tokio::time::timeout(BOUND, child.wait()).await;
        let status = status.unwrap_or_else(|_| panic!("round {round}: still running after SIGTERM"));
        assert!(status.as_ref().is_ok_and(|s| s.success()), "round {round}: {status:?} (killed by the signal?)");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_half_closes_after_its_request_gets_its_answer() {
    // the script's turn is served again and again (a request that does not follow it still gets an
    // answer, a refusal); what matters is that every complete request is answered
    let f = start("[[turn]]\ntext = \"x\"\n").await;
    let json = body(hello(), true).to_string();
    let post = format!(
        "POST /v1/messages HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\nx-api-key: k\r\n\
         anthropic-version: 2023-06-01\r\ncontent-length: {}\r\n\r\n{json}",
        json.len()
    );
    for round in 0..200 {
        for request in [b"GET /v1/models HTTP/1.1\r\nhost: x\r\n\r\n".as_slice(), post.as_bytes()] {
            let mut s = TcpStream::connect(addr(&f)).await.unwrap_or_else(|e| panic!("{e}"));
            s.write_all(request).await.unwrap_or_else(|e| panic!("{e}"));
            s.shutdown().await.unwrap_or_else(|e| panic!("{e}"));
            let mut out = Vec::new();
            let read = tokio::time::timeout(BOUND, s.read_to_end(&mut out)).await;
            assert!(read.is_ok(), "round {round}: the server kept the connection open past {BOUND:?}");
            let text = String::from_utf8_lossy(&out);
            assert!(text.starts_with("HTTP/1.1 "), "round {round}: no answer to a half-closed request: {text:?}");
        }
    }
}
