//! Bash tool round trip (issue: "Bash tool round-trip for `true` and for 1 MB of output"): the whole
//! call — spawn `bash -c` in a fresh process group (and pids cgroup where there is one), read the
//! interleaved output, reap, kill what is left, read the final cwd — for `true`, for 1 MB of output
//! (`head -c`), and through the full pipeline (schema, permissions with the shell parser, budget: the
//! 1 MB result is persisted). A plain `bash -c true` spawned by tokio is measured beside it, in the same
//! process, as the reference: the ratio is the runtime's own overhead.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use probelab_runtime::pipeline::ToolCall;
use serde_json::json;

fn bench(c: &mut Criterion) {
    let rt = probelab_benches::runtime();
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let runtime = rt.block_on(probelab_benches::session(dir.path(), None, Vec::new()));
    let ctx = runtime.ctx.clone();
    let bash = probelab_benches::tool("Bash");

    let mut g = c.benchmark_group("bash");
    g.bench_function("reference: tokio spawn bash -c true", |b| {
        b.iter(|| {
            rt.block_on(async {
                tokio::process::Command::new("bash").args(["-c", "true"]).status().await.map(|s| s.success())
            })
        })
    });
    g.bench_function("tool: true", |b| b.iter(|| rt.block_on(bash.call(json!({"command": "true"}), &ctx)).is_ok()));
    g.throughput(Throughput::Bytes(1 << 20));
    g.bench_function("tool: 1 MB of output", |b| {
        b.iter(|| rt.block_on(bash.call(json!({"command": "head -c 1048576 /dev/zero | tr '\\0' x"}), &ctx)).is_ok())
    });
    g.bench_function("pipeline: 1 MB of output, persisted", |b| {
        let call = ToolCall {
            id: "toolu_bench".into(),
            name: "Bash".into(),
            input: json!({"command": "head -c 1048576 /dev/zero | tr '\\0' x", "description": "1 MB"}),
        };
        b.iter(|| rt.block_on(runtime.run_call(&call)).is_error)
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30);
    targets = bench
}
criterion_main!(benches);
