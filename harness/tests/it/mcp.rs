//! The runtime's MCP client (probelab-runtime) against the lab's fixture server (`probelab fake-mcp`,
//! started as a real process over stdio, as a probe's `[mcp_servers]` entry would): names, annotations
//! mapped to the flags (MCP-1), results and errors as the reference words them; and the lab's side of the
//! configuration (placeholders resolved by the sandbox, Claude Code's `--mcp-config` file).

use crate::support::Sandbox;
use probelab_runtime::builtin::{self, SessionConfig};
use probelab_runtime::config::ServerSpec;
use probelab_runtime::{ToolError, ToolOutput};
use serde_json::{json, Value};
use std::collections::BTreeMap;

const LIST_RESOURCES: &str = "ListMcpResourcesTool";
const READ_RESOURCE: &str = "ReadMcpResourceTool";
const READ_RESOURCE_DIR: &str = "ReadMcpResourceDirTool";

#[tokio::test]
async fn a_call_the_fixture_server_cannot_trace_fails_rather_than_passing_unrecorded() {
    // the trace is what probes check (a tool never called, two calls overlapping): a write error was dropped
    let sb = Sandbox::new();
    let spec = ServerSpec {
        command: env!("CARGO_BIN_EXE_probelab").into(),
        args: vec!["fake-mcp".into(), "--trace".into(), "/dev/full".into()],
        ..Default::default()
    };
    let config = SessionConfig { mcp_servers: BTreeMap::from([("fixture".to_string(), spec)]), ..sb.config() };
    let runtime = sb.start(config).await;
    assert!(builtin::mcp_failures(&runtime).is_empty(), "{:?}", builtin::mcp_failures(&runtime));
    let t = runtime.registry.get("mcp__fixture__echo").unwrap();
    let out = sb.call(t.as_ref(), json!({"text": "hi"}), &runtime.ctx).await;
    match out {
        Err(ToolError::Runtime(m)) => {
            assert!(m.starts_with("MCP error -32603: fake MCP: cannot write the trace: "), "{m}")
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn tools_from_the_fixture_server_map_annotations_to_flags() {
    let sb = Sandbox::new();
    let spec = ServerSpec {
        command: env!("CARGO_BIN_EXE_probelab").into(),
        args: vec!["fake-mcp".into()],
        ..Default::default()
    };
    let config = SessionConfig { mcp_servers: BTreeMap::from([("fixture".to_string(), spec)]), ..sb.config() };
    let runtime = sb.start(config).await;
    assert!(builtin::mcp_failures(&runtime).is_empty(), "{:?}", builtin::mcp_failures(&runtime));
    let (pool, ctx) = (&runtime.registry, &runtime.ctx);
    // the session's MCP part of the pool: what the built-in pool does not have, in pool order
    let builtins = builtin::pool(&ctx.env, ctx.profile()).names();
    let names: Vec<&str> = pool.names().into_iter().filter(|n| !builtins.contains(n)).collect();
    assert_eq!(names[..3], [LIST_RESOURCES, READ_RESOURCE_DIR, READ_RESOURCE]);
    assert_eq!(names.len(), 13);
    let flags = |n: &str| {
        let t = pool.get(n).unwrap_or_else(|| panic!("{n}"));
        (t.is_read_only(&Value::Null), t.is_concurrency_safe(&Value::Null), t.is_destructive(&Value::Null))
    };
    assert_eq!(flags("mcp__fixture__echo"), (true, true, false));
    assert_eq!(flags("mcp__fixture__write_note"), (false, false, false));
    assert_eq!(flags("mcp__fixture__delete_notes"), (false, false, true));
    assert_eq!(flags("mcp__fixture__plain"), (false, false, false));
    let call = |n: &str, input: Value| {
        let t = pool.get(n).unwrap_or_else(|| panic!("{n}"));
        let (sb, ctx) = (&sb, ctx.clone());
        async move { sb.call(t.as_ref(), input, &ctx).await }
    };
    assert_eq!(
        call("mcp__fixture__echo", json!({"text": "hi"})).await,
        Ok(ToolOutput::Blocks(vec![json!({"type": "text", "text": "echo: hi"})]))
    );
    assert_eq!(
        call("mcp__fixture__fail", json!({"reason": "r"})).await,
        Err(ToolError::Runtime("fixture failure: r".into()))
    );
    assert_eq!(
        call("mcp__fixture__protocol_error", json!({})).await,
        Err(ToolError::Runtime("MCP error -32603: fixture protocol error".into()))
    );
    assert_eq!(
        call(READ_RESOURCE, json!({"server": "other", "uri": "x"})).await,
        Err(ToolError::Runtime("Server \"other\" not found. Available servers: fixture".into()))
    );
    builtin::shutdown(&runtime.ctx).await;
}

#[test]
fn placeholders_resolve_in_every_string_and_claude_code_gets_its_config_file() {
    let text = "id = \"x.mcp\"\nclaims = [\"MCP-1\"]\nabout = \"a\"\n[mcp_servers.f]\ncommand = \"{probelab}\"\nargs = [\"--trace\", \"{cwd}/t\"]\nenv = { K = \"{cwd}\" }\n[[turn]]\ntext = \"done\"\n";
    let probe = harness::probe::parse(std::path::Path::new("p.toml"), text).unwrap_or_else(|e| panic!("{e}"));
    let sandbox =
        harness::probe::sandbox::Sandbox::create(&probe, std::path::Path::new(".")).unwrap_or_else(|e| panic!("{e}"));
    let out = sandbox.mcp_servers(&probe);
    let cwd = sandbox.cwd.to_string_lossy().into_owned();
    assert_eq!(out["f"].args, ["--trace".to_string(), format!("{cwd}/t")]);
    assert_eq!(out["f"].env["K"], cwd);
    assert_eq!(out["f"].command, harness::probe::sandbox::probelab_binary().to_string_lossy());
    let cfg = harness::subject::claude_code::mcp_config(&out);
    assert_eq!(cfg["mcpServers"]["f"]["type"], "stdio");
    assert_eq!(cfg["mcpServers"]["f"]["env"]["K"], cwd.as_str());
}
