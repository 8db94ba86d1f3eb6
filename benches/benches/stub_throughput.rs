//! Stub throughput on loopback: one streamed 3-block reply (thinking, text, tool_use) per request,
//! read to the end by a reqwest client. Criterion times a request; a fixed run of requests afterwards
//! prints requests per second and p50 / p99 latency.

use criterion::{criterion_group, criterion_main, Criterion};
use std::sync::Arc;
use std::time::{Duration, Instant};
use stub_messages::{serve, Recorder, Script, Stub};

const SCRIPT: &str = r#"
id = "bench"
[stub]
cycle = true
[[turn]]
thinking = "Thinking about which file to read before answering the question."
text = "Let me read the file and the surrounding directory first."
tool_use = [{ name = "Read", input = { file_path = "/sandbox/src/lib.rs", offset = 1, limit = 200 } }]
"#;

fn body() -> serde_json::Value {
    serde_json::json!({
        "model": "claude-opus-5", "max_tokens": 1024, "stream": true,
        "tools": [{"name": "Read", "input_schema": {"type": "object"}}],
        "messages": [{"role": "user", "content": "read lib.rs"}],
    })
}

fn bench(c: &mut Criterion) {
    let rt = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(rt) => rt,
        Err(e) => panic!("runtime: {e}"),
    };
    let (url, client) = rt.block_on(async {
        let script = Script::from_toml("bench.toml", SCRIPT).unwrap_or_else(|e| panic!("{e}"));
        let stub = Arc::new(Stub::new(script, Recorder::default()));
        let running = serve(stub, ([127, 0, 0, 1], 0).into()).await.unwrap_or_else(|e| panic!("{e}"));
        let url = format!("{}/v1/messages", running.url());
        std::mem::forget(running); // serves until the bench process exits
        (url, reqwest::Client::new())
    });
    let body = body();
    let one = || async {
        let r = client.post(&url).json(&body).send().await.unwrap_or_else(|e| panic!("{e}"));
        let bytes = r.bytes().await.unwrap_or_else(|e| panic!("{e}"));
        assert!(bytes.ends_with(b"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"));
    };
    c.bench_function("stub/sse_3_blocks_round_trip", |b| b.iter(|| rt.block_on(one())));

    let n = 2000;
    let mut lat = Vec::with_capacity(n);
    let start = Instant::now();
    for _ in 0..n {
        let t = Instant::now();
        rt.block_on(one());
        lat.push(t.elapsed());
    }
    let total = start.elapsed();
    lat.sort();
    let pct = |p: f64| lat[((n as f64 * p) as usize).min(n - 1)];
    println!(
        "stub/sse_3_blocks: {n} sequential requests: {:.0} req/s, p50 {:?}, p99 {:?}, max {:?}",
        n as f64 / total.as_secs_f64(),
        pct(0.50),
        pct(0.99),
        lat.last().copied().unwrap_or(Duration::ZERO)
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
