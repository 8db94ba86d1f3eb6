//! A long conversation's cost per turn (issue 29), the wire alone: the built-in loop (its client
//! serialising the request, the pipeline, a Read of a two-line file) against the stub (parsing, the
//! request rules, the record by prefix) for N = 10, 100, 1000 turns of one Read each, then a text turn.
//!
//! Every request carries the whole conversation (the API's rule); the client serialises only the
//! messages new since its last request and the stub parses and checks a request from its new part
//! (`stub_messages::Stub::parsed_by_prefix`), so a turn's cost stays flat. Criterion's throughput is in
//! turns (`thrpt`: turns per second). Besides, one 1000-turn run is timed turn by turn (the stub's turn
//! hook): the median time of turns 6–15 and of turns 991–1000 and their ratio are printed.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use probelab_runtime::agent::{run_loop, Client, LoopEnd};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use stub_messages::{serve, Recorder, Script, Stub};

/// N turns of a Read, then a text turn; played again from the start for the next run (`cycle`).
fn script(turns: usize) -> String {
    let mut s = String::from("id = \"long\"\n[stub]\ncycle = true\n");
    for _ in 0..turns {
        s.push_str("[[turn]]\ntool_use = [{ name = \"Read\", input = { file_path = \"f.txt\" } }]\n");
    }
    s.push_str("[[turn]]\ntext = \"done\"\n");
    s
}

/// A session and a stub for `turns`-turn runs; the stub's turn hook notes when each turn is served.
struct Setup {
    client: Arc<Client>,
    runtime: probelab_runtime::Runtime,
    served: Arc<Mutex<Vec<Instant>>>,
    _dir: tempfile::TempDir,
}

fn setup(rt: &tokio::runtime::Runtime, turns: usize) -> Setup {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let served = Arc::new(Mutex::new(Vec::new()));
    let hook_served = served.clone();
    let (client, runtime) = rt.block_on(async {
        let script = Script::from_toml("long.toml", &script(turns)).unwrap_or_else(|e| panic!("{e}"));
        let hook: stub_messages::server::TurnHook = Arc::new(move |_: &str, _: usize| {
            if let Ok(mut s) = hook_served.lock() {
                s.push(Instant::now());
            }
        });
        let stub = Arc::new(Stub::new(script, Recorder::default()).with_turn_hook(hook));
        let running = serve(stub, ([127, 0, 0, 1], 0).into()).await.unwrap_or_else(|e| panic!("{e}"));
        let client = Arc::new(Client::new(&running.url(), "claude-opus-5"));
        std::mem::forget(running);
        let runtime = probelab_benches::session(dir.path(), Some(client.clone()), Vec::new()).await;
        std::fs::write(runtime.ctx.cwd.join("f.txt"), "one\ntwo\n").unwrap_or_else(|e| panic!("{e}"));
        (client, runtime)
    });
    Setup { client, runtime, served, _dir: dir }
}

fn run(rt: &tokio::runtime::Runtime, s: &Setup, turns: usize) {
    let end = rt.block_on(run_loop(s.client.as_ref(), &s.runtime, "read it", turns + 1));
    assert_eq!(end, LoopEnd::EndTurn);
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

fn bench(c: &mut Criterion) {
    let rt = probelab_benches::runtime();
    let mut g = c.benchmark_group("long_session");
    g.sample_size(10).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(5));
    for turns in [10usize, 100, 1000] {
        let s = setup(&rt, turns);
        g.throughput(Throughput::Elements(turns as u64));
        g.bench_with_input(BenchmarkId::from_parameter(turns), &turns, |b, _| b.iter(|| run(&rt, &s, turns)));
    }
    g.finish();
    // turn by turn: the time from one turn served to the next (the client's and the stub's work on it)
    let s = setup(&rt, 1000);
    let mut at_10 = Vec::new();
    let mut at_1000 = Vec::new();
    for _ in 0..3 {
        if let Ok(mut v) = s.served.lock() {
            v.clear();
        }
        run(&rt, &s, 1000);
        let t = s.served.lock().map(|v| v.clone()).unwrap_or_default();
        let gap = |i: usize| t[i].duration_since(t[i - 1]);
        at_10.extend((6..=15).map(gap));
        at_1000.extend((991..=1000).map(gap));
    }
    let (a, b) = (median(at_10), median(at_1000));
    println!(
        "long_session/turn-by-turn: turn 10 {:.1} µs, turn 1000 {:.1} µs (× {:.2})",
        a.as_secs_f64() * 1e6,
        b.as_secs_f64() * 1e6,
        b.as_secs_f64() / a.as_secs_f64().max(1e-9)
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
