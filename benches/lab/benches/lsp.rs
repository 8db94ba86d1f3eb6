//! LSP round trip (issue 8: "LSP round-trip (tool call → server → result) against the fake server"):
//! the LSP tool's whole call — path checks, the manager, JSON-RPC over the server's stdio, the fake
//! server's deterministic answer (it records every message to its trace file, as in the probes), the
//! formatter — with the server running and the file open (warm), and from nothing: spawn, `initialize`
//! → `initialized` → `didOpen` → the request, then `shutdown` → `exit` (cold).
//!
//! The fake server is this bench binary itself (started with [`SERVER_ENV`] set it serves
//! `harness::fake_lsp` on stdio), so the bench needs no probelab binary built beside it.

use criterion::Criterion;
use probelab_runtime::config::PluginSpec;
use probelab_runtime::{builtin, ToolError, ToolOutput};
use serde_json::json;

/// Set in the env of the server process: this binary is the fake LSP server.
const SERVER_ENV: &str = "PROBELAB_BENCH_FAKE_LSP";

fn plugins(dir: &std::path::Path) -> Vec<PluginSpec> {
    let exe = std::env::current_exe().unwrap_or_else(|e| panic!("{e}"));
    let trace = dir.join("trace.jsonl").to_string_lossy().into_owned();
    let spec = serde_json::json!({
        "name": "bench",
        "lspServers": {"probe": {
            "command": exe.to_string_lossy(),
            "args": ["--trace", trace],
            "extensionToLanguage": {".probe": "probe"},
            "env": {SERVER_ENV: "1"},
        }},
    });
    vec![serde_json::from_value(spec).unwrap_or_else(|e| panic!("{e}"))]
}

fn bench(c: &mut Criterion) {
    let rt = probelab_benches::runtime();
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let plugins = plugins(dir.path());
    let warm = rt.block_on(probelab_benches::session(dir.path(), None, plugins.clone()));
    let ctx = warm.ctx.clone();
    std::fs::write(ctx.cwd.join("a.probe"), "class Probe:\n  def run(self): pass\n").unwrap_or_else(|e| panic!("{e}"));
    let lsp = probelab_benches::tool("LSP");
    let input = json!({"operation": "goToDefinition", "filePath": ctx.cwd.join("a.probe"), "line": 1, "character": 1});
    let text = |r: Result<ToolOutput, ToolError>| match r {
        Ok(ToolOutput::Data { text, .. }) => text,
        other => panic!("unexpected {other:?}"),
    };
    // a first call starts the server; every result must be the server's answer, not an error text
    assert_eq!(text(rt.block_on(lsp.call(input.clone(), &ctx))), "Defined in a.probe:3:5");

    let mut g = c.benchmark_group("lsp");
    g.bench_function("round trip, warm: goToDefinition (server running, file open)", |b| {
        b.iter(|| text(rt.block_on(lsp.call(input.clone(), &ctx))))
    });
    g.bench_function("round trip, cold: spawn, initialize, didOpen, goToDefinition, shutdown", |b| {
        b.iter(|| {
            let cold = rt.block_on(probelab_benches::session(dir.path(), None, plugins.clone()));
            let t = text(rt.block_on(lsp.call(input.clone(), &cold.ctx)));
            rt.block_on(builtin::shutdown(&cold.ctx));
            t
        })
    });
    g.finish();
    rt.block_on(builtin::shutdown(&ctx));
}

fn main() {
    if std::env::var_os(SERVER_ENV).is_some() {
        let args: Vec<String> = std::env::args().skip(1).collect();
        let code = match harness::fake_lsp::parse_args(&args) {
            Ok(opts) => harness::fake_lsp::serve(&opts, &args),
            Err(e) => {
                eprintln!("{e}");
                2
            }
        };
        std::process::exit(code);
    }
    let mut c = Criterion::default().sample_size(30).configure_from_args();
    bench(&mut c);
    c.final_summary();
}
