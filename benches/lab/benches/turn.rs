//! The built-in loop's cost per turn, and where it goes.
//!
//! Everything runs on the runtime a probe runs on (`harness::suite::probe_runtime`: one thread, where the
//! stub and the loop take turns; on a two-worker runtime each request and answer also woke the other
//! thread, twice the cost).
//!
//! `turn/loop_per_turn`: the whole loop over the default tool pool (the ~57 KB request the built-in
//! subject sends), ten turns of a call to a tool the session does not have (answered at once, so the
//! turn is all loop: request building, the wire, the stub, SSE, the pipeline's refusal) and a final
//! text turn; criterion reports the time of one loop, the bench prints it per request. Then each part of
//! a turn alone, on the same request body (the one of the loop's last turn):
//! - `turn/api_tools`: the tool list of a request (`Runtime::api_tools`, every schema and description);
//! - `turn/serialise_body`: the request body to bytes (serde_json), as reqwest's `.json()` does;
//! - `turn/stub_round_trip`: those bytes POSTed to the stub and the SSE answer read to its end (no
//!   parsing on the client): the stub's parse, validation, routing, SSE and record, plus loopback;
//! - `turn/client_create`: the built-in client's `create` on the same body (serialise + wire + stub +
//!   its own SSE decoder and assembler);
//! - `turn/stub_parse`: the request's bytes parsed into a `serde_json::Value` (as the stub does);
//! - `turn/value_clone`: a deep copy of that value;
//! - `turn/stub_validate`: the strict stub's request rules alone;
//! - `turn/record`: the stub recording one exchange with that request (its JSON line, the request's
//!   bytes spliced in as they came, the key check);
//! - `turn/render_transcript`: the harness rendering and normalising the transcript of one loop (off
//!   the turn's path: once per probe).

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use harness::transcript::normalise::{Normaliser, Places};
use harness::transcript::{render, Blobs, Header, View};
use probelab_runtime::agent::{run_loop, Client, LoopEnd};
use std::sync::Arc;
use std::time::Instant;
use stub_messages::{serve, Exchange, Recorder, Script, Stub};

/// Calls of the loop bench before its final text turn.
const CALLS: usize = 10;

fn script() -> String {
    let mut s = String::from("id = \"bench\"\n[stub]\ncycle = true\n");
    for i in 0..CALLS {
        s.push_str(&format!("[[turn]]\ntool_use = [{{ name = \"NoSuchTool\", input = {{ n = {i} }} }}]\n"));
    }
    s.push_str("[[turn]]\ntext = \"done\"\n");
    s
}

fn bench(c: &mut Criterion) {
    // the runtime a probe runs on (one thread: the stub and the loop take turns on it)
    let rt = harness::suite::probe_runtime().unwrap_or_else(|e| panic!("{e}"));
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let script = Script::from_toml("bench.toml", &script()).unwrap_or_else(|e| panic!("{e}"));
    let (client, runtime, stub) = rt.block_on(async {
        let stub = Arc::new(Stub::new(script.clone(), Recorder::default()));
        let running = serve(stub.clone(), ([127, 0, 0, 1], 0).into()).await.unwrap_or_else(|e| panic!("{e}"));
        let url = running.url();
        let client = Arc::new(Client::new(&url, "claude-opus-5"));
        std::mem::forget(running); // serves until the bench process exits
        let runtime = probelab_benches::session(dir.path(), Some(client.clone()), Vec::new()).await;
        (client, runtime, stub)
    });

    // one loop first: its record gives the request bodies the parts below work on
    let end = rt.block_on(run_loop(client.as_ref(), &runtime, "go", CALLS + 2));
    assert_eq!(end, LoopEnd::EndTurn);
    let first_loop: Vec<Exchange> = stub.recorder().exchanges();
    let last_body = first_loop.last().and_then(|e| e.request.clone()).unwrap_or_else(|| panic!("no request"));
    let bytes = serde_json::to_vec(&last_body).unwrap_or_default();
    println!(
        "turn: default pool of {} tools; the last request of a loop is {} bytes ({} requests per loop)",
        runtime.api_tools().len(),
        bytes.len(),
        CALLS + 1
    );

    let mut g = c.benchmark_group("turn");
    // each loop against an empty record, as a probe's run is: the record taken (and dropped) between
    // loops, outside the timing — kept, it grew by 11 requests a loop (a GB over a bench), and the
    // allocator's fresh pages were a fifth of the measured time
    let _ = stub.recorder().take();
    g.bench_function("loop_per_turn", |b| {
        b.iter_batched(
            || drop(stub.recorder().take()),
            |()| {
                let end = rt.block_on(run_loop(client.as_ref(), &runtime, "go", CALLS + 2));
                assert_eq!(end, LoopEnd::EndTurn);
            },
            BatchSize::PerIteration,
        )
    });
    g.bench_function("api_tools", |b| b.iter(|| runtime.api_tools()));
    g.bench_function("serialise_body", |b| b.iter(|| serde_json::to_vec(&last_body).unwrap_or_default()));
    let http = reqwest::Client::new();
    // a stub that answers every request with the same text turn: the round trip of one request
    let (text_stub, text_record) = rt.block_on(async {
        let s =
            Script::from_toml("t.toml", "id = \"t\"\n[stub]\ncycle = true\nstrict = true\n[[turn]]\ntext = \"ok\"\n")
                .unwrap_or_else(|e| panic!("{e}"));
        let stub = Arc::new(Stub::new(s, Recorder::default()));
        let record = stub.recorder().clone();
        let running = serve(stub, ([127, 0, 0, 1], 0).into()).await.unwrap_or_else(|e| panic!("{e}"));
        let u = running.url();
        std::mem::forget(running);
        (u, record)
    });
    // the last body ends with tool results: the text stub gets it with its last assistant turn answered
    let rt_body = bytes.clone();
    g.bench_function("stub_round_trip", |b| {
        b.iter_batched(
            || drop(text_record.take()),
            |()| {
                rt.block_on(async {
                    let r = http
                        .post(format!("{text_stub}/v1/messages"))
                        .header("content-type", "application/json")
                        .header("x-api-key", "sk-ant-bench")
                        .header("anthropic-version", "2023-06-01")
                        .body(rt_body.clone())
                        .send()
                        .await
                        .unwrap_or_else(|e| panic!("{e}"));
                    assert_eq!(r.status(), 200);
                    r.bytes().await.unwrap_or_default()
                })
            },
            BatchSize::PerIteration,
        )
    });
    let text_client = Client::new(&text_stub, "claude-opus-5");
    g.bench_function("client_create", |b| {
        b.iter_batched(
            || drop(text_record.take()),
            |()| rt.block_on(text_client.create(&last_body)).unwrap_or_else(|e| panic!("{e}")),
            BatchSize::PerIteration,
        )
    });
    g.bench_function("stub_parse", |b| b.iter(|| serde_json::from_slice::<serde_json::Value>(&bytes).is_ok()));
    g.bench_function("value_clone", |b| b.iter(|| last_body.clone()));
    g.bench_function("stub_validate", |b| b.iter(|| stub_messages::validate::check_request(&last_body).is_ok()));
    // with the request's bytes, as the stub records an exchange (its line carries them as they came)
    let mut template = first_loop.last().cloned().unwrap_or_else(|| panic!("no exchange"));
    template.request_bytes = Some(bytes::Bytes::from(bytes.clone()));
    let sink = Recorder::default();
    g.bench_function("record", |b| {
        b.iter_batched(
            || {
                drop(sink.take());
                template.clone()
            },
            |ex| sink.record(ex),
            BatchSize::PerIteration,
        )
    });
    let places_root = dir.path().canonicalize().unwrap_or_else(|e| panic!("{e}"));
    let (cwd, home) = (places_root.join("work"), places_root.join("home"));
    let places = Places {
        root: &places_root,
        cwd: &cwd,
        home: &home,
        today: harness::transcript::normalise::today_utc(),
        subject: &harness::subject::SubjectId::builtin(),
        web: None,
    };
    g.bench_function("render_transcript", |b| {
        b.iter(|| {
            let view = View { exchanges: &first_loop, script: &script };
            let header =
                Header { probe: "bench", claims: &[], subject: "builtin", diverges: Vec::new(), cache_markers: true };
            let mut blobs = Blobs::new();
            let normaliser = Normaliser::new(&places);
            let norm = |t: &str| normaliser.apply(t);
            let raw = render(&header, &view, (&[], &[]), &mut blobs, &norm).unwrap_or_else(|e| panic!("{e}"));
            normaliser.apply(&raw)
        })
    });
    g.finish();

    // per request, outside criterion's statistics: the loop's mean over a fixed run
    let loops = 30;
    let mut took = std::time::Duration::ZERO;
    for _ in 0..loops {
        drop(stub.recorder().take());
        let t0 = Instant::now();
        rt.block_on(run_loop(client.as_ref(), &runtime, "go", CALLS + 2));
        took += t0.elapsed();
    }
    let per_request = took.as_secs_f64() * 1000.0 / (loops * (CALLS + 1)) as f64;
    println!("turn: {per_request:.2} ms per request of the loop ({loops} loops of {} requests)", CALLS + 1);
}

criterion_group!(benches, bench);
criterion_main!(benches);
