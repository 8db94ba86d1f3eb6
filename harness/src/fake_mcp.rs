//! The fixture MCP server (`probelab fake-mcp [--trace FILE]`): a stdio MCP server built on the official
//! Rust SDK's server side (rmcp), with one tool per annotation case, a long description, a tool that fails,
//! a tool that answers a protocol error, and two resources (MCP-1). Every answer is deterministic; with
//! `--trace` each `tools/call` and `resources/read` is appended to FILE as a JSON line
//! (`{"event":"start"|"end","tool":…,"arguments":…}` / `{"event":"read","uri":…}`), so a probe can check
//! what reached the server and in which order (two read-only calls of one turn overlap: start, start, end,
//! end; others do not).
//!
//! Tools (annotations in brackets):
//! - `echo` [readOnlyHint, openWorldHint false]: `echo: <text>`;
//! - `web_lookup` [readOnlyHint, openWorldHint]: `no results for <query>`;
//! - `write_note` [readOnlyHint false, destructiveHint false, idempotentHint]: `noted: <note>`;
//! - `delete_notes` [destructiveHint]: `deleted all notes`;
//! - `plain` [none]: `plain result`;
//! - `dotted.name` [none]: a name outside `[A-Za-z0-9_-]`;
//! - `long_doc` [none]: a description of [`LONG_DESCRIPTION_CHARS`] characters, numbered words;
//! - `multi` [readOnlyHint]: two text blocks, `first block` and `second block`;
//! - `fail` [none]: a result with `isError: true`, `fixture failure: <reason>`;
//! - `protocol_error` [none]: a JSON-RPC error -32603 `fixture protocol error`.
//!
//! Every tool waits `delay_ms` (an argument, at most [`MAX_DELAY_MS`]) between its start and end lines.
//! `meet_ms` (an argument, at most [`MAX_DELAY_MS`]) makes a call wait between them until it has met
//! another call — one already running when it started, or one that starts while it waits — or until
//! `meet_ms` passed: two calls a client runs side by side meet at once (start, start, end, end), calls it
//! runs one after the other never meet (start, end, start, end), and `meet_ms` is only how long a call
//! gives a partner to show up, never a sleep that sequences anything.
//!
//! `--never-answer`: a server that reads and never answers ([`never_answer`]).
//!
//! Resources: `fixture://notes/readme.txt` (text/plain) and `fixture://notes/data.json` (application/json).

use rmcp::model::{
    CallToolRequestParam, CallToolResult, Implementation, ListResourcesResult, ListToolsResult, PaginatedRequestParam,
    ProtocolVersion, ReadResourceRequestParam, ReadResourceResult, ResourcesCapability, ServerCapabilities, ServerInfo,
    ToolsCapability,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{json, Value};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Mutex;

/// `probelab fake-mcp --never-answer`: reads (and drops) what the client sends until it closes the
/// connection, and answers nothing, not even `initialize` — the server that hangs a client that waits
/// for it without a bound.
pub fn never_answer() {
    let _ = std::io::copy(&mut std::io::stdin().lock(), &mut std::io::sink());
}

/// Length of the `long_doc` tool's description: well past the reference's cut of MCP descriptions.
pub const LONG_DESCRIPTION_CHARS: usize = 3_000;
/// Longest `delay_ms` a tool of the fixture honours.
pub const MAX_DELAY_MS: u64 = 5_000;
/// The server's name in its `initialize` answer.
pub const SERVER_NAME: &str = "probelab-fake-mcp";

/// The text of `fixture://notes/readme.txt`.
pub const README_TEXT: &str = "Fixture resource text.\nSecond line.\n";
/// The text of `fixture://notes/data.json`.
pub const DATA_JSON: &str = "{\"answer\": 42}";

/// The `long_doc` description: words `w0001 w0002 …` (6 chars each with the space), cut to
/// [`LONG_DESCRIPTION_CHARS`], so where a client cut it can be read off the last word.
pub fn long_description() -> String {
    let mut s = String::new();
    let mut i = 1;
    while s.len() < LONG_DESCRIPTION_CHARS {
        s.push_str(&format!("w{i:04} "));
        i += 1;
    }
    s.truncate(LONG_DESCRIPTION_CHARS);
    s
}

/// The tool list, as the server sends it.
pub fn tools_json() -> Value {
    let text_arg = |name: &str, about: &str| json!({"type": "object", "properties": {name: {"type": "string", "description": about}}, "required": [name]});
    let empty = json!({"type": "object", "properties": {}});
    json!([
        {"name": "echo", "title": "Echo", "description": "Echoes the text back.",
         "inputSchema": {"type": "object", "properties": {
             "text": {"type": "string", "description": "What to echo"},
             "delay_ms": {"type": "integer", "description": "Wait this long first (at most 5000)"}},
             "required": ["text"]},
         "annotations": {"readOnlyHint": true, "openWorldHint": false}},
        {"name": "web_lookup", "description": "Looks a query up on the open web (the fixture finds nothing).",
         "inputSchema": text_arg("query", "The query"),
         "annotations": {"readOnlyHint": true, "openWorldHint": true}},
        {"name": "write_note", "description": "Writes a note.",
         "inputSchema": text_arg("note", "The note"),
         "annotations": {"readOnlyHint": false, "destructiveHint": false, "idempotentHint": true}},
        {"name": "delete_notes", "description": "Deletes every note.", "inputSchema": empty,
         "annotations": {"destructiveHint": true}},
        {"name": "plain", "description": "A tool without annotations.", "inputSchema": empty},
        {"name": "dotted.name", "description": "A tool whose name has a dot.", "inputSchema": empty},
        {"name": "long_doc", "description": long_description(), "inputSchema": empty},
        {"name": "multi", "description": "Answers with two text blocks.", "inputSchema": empty,
         "annotations": {"readOnlyHint": true}},
        {"name": "fail", "description": "Always fails (isError: true).",
         "inputSchema": text_arg("reason", "Why")},
        {"name": "protocol_error", "description": "Always answers a JSON-RPC error.", "inputSchema": empty},
    ])
}

/// The resource list, as the server sends it.
pub fn resources_json() -> Value {
    json!([
        {"uri": "fixture://notes/readme.txt", "name": "readme", "description": "The fixture's readme",
         "mimeType": "text/plain"},
        {"uri": "fixture://notes/data.json", "name": "data", "mimeType": "application/json"},
    ])
}

/// What a call answers: a result (maybe `isError`), or a protocol error.
pub fn answer(name: &str, args: &Value) -> Result<Value, (i32, String)> {
    let s = |k: &str| args.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
    let text = |t: String| Ok(json!({"content": [{"type": "text", "text": t}]}));
    match name {
        "echo" => text(format!("echo: {}", s("text"))),
        "web_lookup" => text(format!("no results for {}", s("query"))),
        "write_note" => text(format!("noted: {}", s("note"))),
        "delete_notes" => text("deleted all notes".into()),
        "plain" => text("plain result".into()),
        "dotted.name" => text("dotted result".into()),
        "long_doc" => text("long result".into()),
        "multi" => {
            Ok(json!({"content": [{"type": "text", "text": "first block"}, {"type": "text", "text": "second block"}]}))
        }
        "fail" => Ok(
            json!({"content": [{"type": "text", "text": format!("fixture failure: {}", s("reason"))}], "isError": true}),
        ),
        "protocol_error" => Err((-32603, "fixture protocol error".into())),
        other => Err((-32602, format!("unknown tool: {other}"))),
    }
}

/// The resource at `uri`: (mime type, text).
pub fn resource(uri: &str) -> Option<(&'static str, &'static str)> {
    match uri {
        "fixture://notes/readme.txt" => Some(("text/plain", README_TEXT)),
        "fixture://notes/data.json" => Some(("application/json", DATA_JSON)),
        _ => None,
    }
}

/// The fixture server.
#[derive(Debug, Default)]
pub struct FakeMcp {
    trace: Option<Mutex<std::fs::File>>,
    /// (calls started so far, calls running now), published to the calls waiting to meet another.
    calls: tokio::sync::watch::Sender<(u64, u64)>,
}

impl FakeMcp {
    /// A server tracing to `trace` (appended; created when missing).
    pub fn new(trace: Option<PathBuf>) -> std::io::Result<FakeMcp> {
        let trace = match trace {
            Some(p) => Some(Mutex::new(std::fs::OpenOptions::new().create(true).append(true).open(p)?)),
            None => None,
        };
        Ok(FakeMcp { trace, calls: tokio::sync::watch::channel((0, 0)).0 })
    }

    /// Appends a line to the trace. The trace is what a probe checks (that a tool was never called, that
    /// two calls overlapped): a line it cannot write fails the request, never passes unrecorded.
    fn log(&self, line: Value) -> Result<(), ErrorData> {
        let Some(f) = &self.trace else { return Ok(()) };
        let mut f = f.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        writeln!(f, "{line}")
            .and_then(|_| f.flush())
            .map_err(|e| ErrorData::internal_error(format!("fake MCP: cannot write the trace: {e}"), None))
    }
}

fn typed<T: serde::de::DeserializeOwned>(v: Value) -> Result<T, ErrorData> {
    serde_json::from_value(v).map_err(|e| ErrorData::internal_error(format!("fixture: {e}"), None))
}

impl ServerHandler for FakeMcp {
    fn get_info(&self) -> ServerInfo {
        // built typed, not parsed from JSON into a default on a mismatch (another protocol version, no name)
        ServerInfo {
            protocol_version: ProtocolVersion::V_2025_06_18,
            capabilities: ServerCapabilities {
                tools: Some(ToolsCapability::default()),
                resources: Some(ResourcesCapability::default()),
                ..ServerCapabilities::default()
            },
            server_info: Implementation {
                name: SERVER_NAME.into(),
                title: None,
                version: env!("CARGO_PKG_VERSION").into(),
                icons: None,
                website_url: None,
            },
            instructions: None,
        }
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParam>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        typed(json!({"tools": tools_json()}))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParam,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let args = Value::Object(request.arguments.clone().unwrap_or_default());
        let name = request.name.to_string();
        self.log(json!({"event": "start", "tool": name, "arguments": args}))?;
        let mut me = 0;
        self.calls.send_modify(|(started, running)| {
            *started += 1;
            *running += 1;
            me = *started;
        });
        if let Some(ms) = args.get("meet_ms").and_then(Value::as_u64) {
            let until = tokio::time::Instant::now() + std::time::Duration::from_millis(ms.min(MAX_DELAY_MS));
            let mut rx = self.calls.subscribe();
            loop {
                let (started, running) = *rx.borrow_and_update();
                if running >= 2 || started > me {
                    break;
                }
                if tokio::time::timeout_at(until, rx.changed()).await.is_err() {
                    break;
                }
            }
        }
        if let Some(ms) = args.get("delay_ms").and_then(Value::as_u64) {
            tokio::time::sleep(std::time::Duration::from_millis(ms.min(MAX_DELAY_MS))).await;
        }
        let out = answer(&name, &args);
        let logged = self.log(json!({"event": "end", "tool": name}));
        self.calls.send_modify(|(_, running)| *running -= 1);
        logged?;
        match out {
            Ok(v) => typed(v),
            Err((code, message)) => Err(ErrorData::new(rmcp::model::ErrorCode(code), message, None)),
        }
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParam>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        typed(json!({"resources": resources_json()}))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParam,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResult, ErrorData> {
        self.log(json!({"event": "read", "uri": request.uri}))?;
        match resource(&request.uri) {
            Some((mime, text)) => typed(json!({"contents": [{"uri": request.uri, "mimeType": mime, "text": text}]})),
            None => Err(ErrorData::resource_not_found(format!("no such resource: {}", request.uri), None)),
        }
    }
}

/// Serves the fixture on stdin/stdout until the client closes it.
pub async fn serve_stdio(trace: Option<PathBuf>) -> Result<(), String> {
    let server = FakeMcp::new(trace).map_err(|e| format!("fake-mcp: trace file: {e}"))?;
    let running = server.serve(rmcp::transport::stdio()).await.map_err(|e| format!("fake-mcp: {e}"))?;
    running.waiting().await.map_err(|e| format!("fake-mcp: {e}"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fixture_parses_as_mcp_types() {
        let tools: ListToolsResult =
            serde_json::from_value(json!({"tools": tools_json()})).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(tools.tools.len(), 10);
        let _: ListResourcesResult =
            serde_json::from_value(json!({"resources": resources_json()})).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(long_description().len(), LONG_DESCRIPTION_CHARS);
        assert!(long_description().starts_with("w0001 w0002 "));
        let info = FakeMcp::default().get_info();
        assert_eq!(info.server_info.name, SERVER_NAME);
        assert!(info.capabilities.tools.is_some() && info.capabilities.resources.is_some());
        // what the server says on the wire
        assert_eq!(
            serde_json::to_value(&info).unwrap(),
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {"tools": {}, "resources": {}},
                "serverInfo": {"name": SERVER_NAME, "version": env!("CARGO_PKG_VERSION")},
            })
        );
    }

    #[test]
    fn answers_are_fixed() {
        assert_eq!(
            answer("echo", &json!({"text": "hi"})),
            Ok(json!({"content": [{"type": "text", "text": "echo: hi"}]}))
        );
        assert_eq!(answer("protocol_error", &json!({})), Err((-32603, "fixture protocol error".into())));
        assert_eq!(answer("fail", &json!({"reason": "x"})).map(|v| v["isError"].clone()), Ok(json!(true)));
    }
}
