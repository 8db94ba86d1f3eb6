//! The LSP tool against a real language server — python-lsp-server (pylsp, on jedi), installed by
//! `scripts/setup` into the cached venv (missing is a failure, not a skip) — on the small project of
//! `fixtures/lsp/pyproj`: goToDefinition, findReferences, hover and documentSymbol give the right
//! answers (LSP-1, LSP-2, LSP-5). And against the fake server: a crash, a hang and a protocol break
//! each end the call with a clear text within the deadline, and the next call restarts the server.

use crate::support::Sandbox;
use probelab_runtime::builtin::{self, SessionConfig};
use probelab_runtime::config::PluginSpec;
use probelab_runtime::limits::LSP_REQUEST_TIMEOUT_ENV as ENV_REQUEST_TIMEOUT_MS;
use probelab_runtime::{ToolContext, ToolError, ToolOutput};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn pylsp() -> PathBuf {
    let p = harness::subject::claude_code::cache_root().join("venv/bin/pylsp");
    assert!(p.is_file(), "{} is missing: run scripts/setup (it installs python-lsp-server)", p.display());
    p
}

fn copy_fixture(to: &Path) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/lsp/pyproj");
    for e in std::fs::read_dir(&src).unwrap_or_else(|e| panic!("{}: {e}", src.display())) {
        let e = e.unwrap_or_else(|e| panic!("{e}"));
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap_or_else(|e| panic!("{e}"));
    }
}

/// A context of a session in `sb` started with these plugins (a TOML `[[plugin]]` list), as the lab
/// starts one.
async fn ctx(sb: &Sandbox, plugins: &str, env: &[(&str, &str)]) -> ToolContext {
    #[derive(serde::Deserialize)]
    struct Plugins {
        plugin: Vec<PluginSpec>,
    }
    let p: Plugins = toml::from_str(plugins).unwrap_or_else(|e| panic!("{e}"));
    let config = SessionConfig {
        env: env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        plugins: p.plugin,
        ..sb.config()
    };
    sb.start(config).await.ctx
}

async fn call(sb: &Sandbox, c: &ToolContext, input: Value) -> String {
    let tool = builtin::registry().get("LSP").unwrap_or_else(|| panic!("no LSP tool"));
    let r = tokio::time::timeout(Duration::from_secs(60), sb.call(tool.as_ref(), input, c))
        .await
        .unwrap_or_else(|_| panic!("the LSP tool hung"));
    match r {
        Ok(ToolOutput::Data { text, .. }) | Ok(ToolOutput::Text(text)) => text,
        Ok(o) => panic!("unexpected output {o:?}"),
        Err(ToolError::Validation(m) | ToolError::Runtime(m)) => panic!("error: {m}"),
    }
}

fn op(operation: &str, file: &Path, line: u64, character: u64) -> Value {
    json!({"operation": operation, "filePath": file.to_string_lossy(), "line": line, "character": character})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_python_server_answers_the_four_main_operations() {
    let sb = Sandbox::new();
    let plugins = format!(
        "[[plugin]]\nname = \"python\"\nlspServers.pylsp = {{ command = {:?}, extensionToLanguage = {{ \".py\" = \"python\" }} }}\n",
        pylsp().to_string_lossy()
    );
    let c = ctx(&sb, &plugins, &[]).await;
    copy_fixture(&c.cwd);
    let (main, shapes) = (c.cwd.join("main.py"), c.cwd.join("shapes.py"));

    // main.py:5 `print(total_area(...))`: the `t` of total_area is column 7 (1-based)
    let def = call(&sb, &c, op("goToDefinition", &main, 5, 7)).await;
    assert_eq!(def, "Defined in shapes.py:15:5");

    // Square is declared at shapes.py:4:7 and used three times in main.py
    let refs = call(&sb, &c, op("findReferences", &shapes, 4, 7)).await;
    assert!(refs.starts_with("Found 4 references across 2 files:"), "{refs}");
    assert!(refs.contains("\nmain.py:\n  Line 1:20\n  Line 3:9\n  Line 4:7"), "{refs}");
    assert!(refs.contains("\nshapes.py:\n  Line 4:7"), "{refs}");

    // hover on `area` of `big.area()` (main.py:6:11) shows its docstring
    let hover = call(&sb, &c, op("hover", &main, 6, 11)).await;
    assert!(hover.contains("The area of the square."), "{hover}");

    let symbols = call(&sb, &c, op("documentSymbol", &shapes, 1, 1)).await;
    for want in ["Square (Class) - Line 4", "area (", "total_area (Function) - Line 15"] {
        assert!(symbols.contains(want), "{want:?} not in:\n{symbols}");
    }
    builtin::shutdown(&c).await;
}

async fn fake(sb: &Sandbox, mode: &str) -> (ToolContext, PathBuf) {
    let trace = sb.root.join("trace.jsonl");
    let plugins = format!(
        "[[plugin]]\nname = \"fake\"\nlspServers.probe = {{ command = {:?}, args = [\"fake-lsp\", \"--trace\", {:?}, \"--mode\", {mode:?}, \"--once\"], extensionToLanguage = {{ \".probe\" = \"probe\" }} }}\n",
        env!("CARGO_BIN_EXE_probelab"),
        trace.to_string_lossy(),
    );
    let c = ctx(sb, &plugins, &[(ENV_REQUEST_TIMEOUT_MS, "1500")]).await;
    std::fs::write(c.cwd.join("a.probe"), "class Probe:\n").unwrap_or_else(|e| panic!("{e}"));
    (c, trace)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_a_hang_and_garbage_end_the_call_in_time_and_the_next_call_restarts_the_server() {
    for (mode, why) in [
        ("crash", "Pending response rejected since connection got disposed"),
        ("garbage", "Pending response rejected since connection got disposed"),
        ("hang", "no answer within 1500ms; the server was stopped and the next call restarts it"),
    ] {
        let sb = Sandbox::new();
        let (c, trace) = fake(&sb, mode).await;
        let file = c.cwd.join("a.probe");
        let t = Instant::now();
        let first = call(&sb, &c, op("goToDefinition", &file, 1, 1)).await;
        assert_eq!(
            first,
            format!("Error performing goToDefinition: LSP request 'textDocument/definition' failed for server 'plugin:fake:probe': {why}"),
            "{mode}"
        );
        assert!(t.elapsed() < Duration::from_secs(10), "{mode}: took {:?}", t.elapsed());
        let second = call(&sb, &c, op("goToDefinition", &file, 1, 1)).await;
        assert_eq!(second, "Defined in a.probe:3:5", "{mode}");
        builtin::shutdown(&c).await;
        let view = harness::fake_lsp::trace_view(&std::fs::read_to_string(&trace).unwrap_or_default());
        assert_eq!(view["starts"], 2, "{mode}: {view}");
        let methods: Vec<&str> = view["methods"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
        assert_eq!(methods.last(), Some(&"exit"), "{mode}: {methods:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_cannot_start_is_given_up_after_its_restarts() {
    let sb = Sandbox::new();
    let plugins = "[[plugin]]\nname = \"fake\"\nlspServers.probe = { command = \"/nonexistent/lsp-server\", extensionToLanguage = { \".probe\" = \"probe\" }, maxRestarts = 1 }\n";
    let c = ctx(&sb, plugins, &[]).await;
    std::fs::write(c.cwd.join("a.probe"), "x\n").unwrap_or_else(|e| panic!("{e}"));
    let file = c.cwd.join("a.probe");
    let mut texts = Vec::new();
    for _ in 0..4 {
        texts.push(call(&sb, &c, op("hover", &file, 1, 1)).await);
    }
    assert!(
        texts[0].starts_with("Error performing hover: LSP server plugin:fake:probe failed to start: "),
        "{texts:?}"
    );
    assert_eq!(texts[1], texts[0]);
    assert_eq!(
        texts[2],
        "Error performing hover: LSP server 'plugin:fake:probe' exceeded max crash recovery attempts (1)"
    );
    assert_eq!(texts[3], texts[2]);
}
