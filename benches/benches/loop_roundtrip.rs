//! The built-in subject's loop round trip per tool call: stub + client + pipeline + a Read of a small
//! file. One iteration = two requests (the tool_use turn and the final text turn) and one Read.

use criterion::{criterion_group, criterion_main, Criterion};
use probelab_runtime::agent::{run_loop, Client, LoopEnd};
use std::sync::Arc;
use stub_messages::{serve, Recorder, Script, Stub};

const SCRIPT: &str = r#"
id = "bench"
[stub]
cycle = true
[[turn]]
tool_use = [{ name = "Read", input = { file_path = "small.txt" } }]
[[turn]]
text = "done"
"#;

fn bench(c: &mut Criterion) {
    let rt = probelab_benches::runtime();
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let (client, runtime) = rt.block_on(async {
        let script = Script::from_toml("bench.toml", SCRIPT).unwrap_or_else(|e| panic!("{e}"));
        let stub = Arc::new(Stub::new(script, Recorder::default()));
        let running = serve(stub, ([127, 0, 0, 1], 0).into()).await.unwrap_or_else(|e| panic!("{e}"));
        let client = Arc::new(Client::new(&running.url(), "claude-opus-5"));
        std::mem::forget(running);
        let runtime = probelab_benches::session(dir.path(), Some(client.clone()), Vec::new()).await;
        std::fs::write(runtime.ctx.cwd.join("small.txt"), "line\n".repeat(40)).unwrap_or_else(|e| panic!("{e}"));
        (client, runtime)
    });
    c.bench_function("loop/read_small_file_round_trip", |b| {
        b.iter(|| {
            let end = rt.block_on(run_loop(client.as_ref(), &runtime, "read it", 4));
            assert_eq!(end, LoopEnd::EndTurn);
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
