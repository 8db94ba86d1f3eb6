//! MCP tools (MCP-1): MCP servers configured for the session (a probe's `[mcp_servers.<name>]`, Claude
//! Code's `.mcp.json` shape: command / args / env) are started and connected at the session's start with
//! the official Rust SDK (rmcp) over stdio, and shut down at its end (stdin closed, then killed after
//! [`SHUTDOWN_GRACE_MS`]). Each server tool becomes a [`Tool`] in the pool; with a server that offers
//! resources come ListMcpResourcesTool, ReadMcpResourceTool and ReadMcpResourceDirTool.
//!
//! Measured on Claude Code 2.1.235 with the fixture server (`probelab fake-mcp`, the lab's `fake_mcp`;
//! probes `probes/claude-code/mcp-*.toml`), and copied here:
//! - names `mcp__<server>__<tool>`, characters outside `[A-Za-z0-9_-]` replaced by `_`
//!   (`dotted.name` → `mcp__fixture__dotted_name`);
//! - in the request, MCP tools follow the built-ins (PIPE-7: [`crate::registry::Registry::with_mcp`]), each with its
//!   description and the server's `inputSchema` as sent; annotations do not show in the request;
//! - descriptions over [`MAX_MCP_DESCRIPTION_CHARS`] are cut there and end in [`TRUNCATION_MARK`];
//! - readOnlyHint → read-only and concurrency-safe (two calls of one turn overlap at the server, others
//!   run one after the other); destructiveHint → destructive; openWorldHint is not
//!   read: nothing acts on it (no difference seen in a `-p` run either);
//! - the input is not checked against the server's schema (a missing required argument reaches the
//!   server): [`Tool::validates_input`] is false;
//! - a result's content blocks go to the model as blocks; `isError: true` → an error result, the text
//!   blocks joined, not wrapped; a JSON-RPC error → `MCP error <code>: <message>`, an error;
//! - ListMcpResourcesTool: a compact JSON array, each resource with a `server` field; an unknown server →
//!   `Server "x" not found. Available servers: a, b` (an error); ReadMcpResourceTool: the
//!   `resources/read` answer as compact JSON; a missing resource (-32002) → `Resource not found: <uri> —
//!   …` (not an error); ReadMcpResourceDirTool → [`DIR_LISTING_DISABLED`] (not an error);
//! - MCP tools are in the first request (2.1.235 waits for its servers in `-p` runs) and are not deferred
//!   without tool search; with tool search on they are deferred ([`super::tool_search`]).
//!
//! Decisions where the reference is silent: a server that fails to start only loses its tools (the
//! reason is kept in [`Mcp::failures`]); the resource tools come with the first server that declares the
//! resources capability; image blocks become API image blocks, other non-text blocks their JSON text;
//! servers run with the sandbox's cwd and HOME, PATH, and their configured env (nothing else of ours).

use crate::context::ToolContext;
use crate::profile::Switch;
use crate::tool::{Tool, ToolError, ToolOutput, TypedTool};
use futures_util::future::BoxFuture;
use rmcp::model::{CallToolRequestParam, ClientInfo, ReadResourceRequestParam};
use rmcp::service::RunningService;
use rmcp::{Peer, RoleClient, ServiceError, ServiceExt};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// A stdio MCP server of the session, in the shape of Claude Code's `.mcp.json` entries: `command`,
/// `args`, `env` (a probe's `[mcp_servers.<name>]`; the lab resolves its placeholders before the session
/// gets it).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerSpec {
    /// The program.
    pub command: String,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Extra environment.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
}

/// Longest description of an MCP tool sent to the model (MCP-1, measured on Claude Code 2.1.235: a
/// 3,000-char description arrives as its first 2,048 chars plus [`TRUNCATION_MARK`]).
pub const MAX_MCP_DESCRIPTION_CHARS: usize = 2_048;
/// What follows a cut description (MCP-1, measured).
pub const TRUNCATION_MARK: &str = "… [truncated]";
/// How long a server may take to start and answer `initialize` and `tools/list` (MCP-1; Claude Code's
/// `MCP_TIMEOUT` default is 30 s).
pub const CONNECT_TIMEOUT_MS: u64 = 30_000;
/// How long a server gets to exit after its stdin closes at the end of the session, before it is killed.
pub const SHUTDOWN_GRACE_MS: u64 = 2_000;
/// Bytes of a server's stderr kept for a connection error.
pub const STDERR_KEEP_BYTES: usize = 4_096;
/// The prefix of every MCP tool name (MCP-1).
pub const MCP_PREFIX: &str = "mcp__";
/// Lists the resources of the connected servers.
pub const LIST_RESOURCES: &str = "ListMcpResourcesTool";
/// Reads one resource.
pub const READ_RESOURCE: &str = "ReadMcpResourceTool";
/// Lists a directory resource (Claude Code's extension; disabled there, as here).
pub const READ_RESOURCE_DIR: &str = "ReadMcpResourceDirTool";
/// ReadMcpResourceDirTool's answer (measured: not an error).
pub const DIR_LISTING_DISABLED: &str = "Directory listing is not enabled in this build.";
/// JSON-RPC code of "resource not found" (MCP).
pub const RESOURCE_NOT_FOUND_CODE: i32 = -32002;

/// `mcp__<server>__<tool>`, each part with characters outside `[A-Za-z0-9_-]` replaced by `_` (MCP-1,
/// measured: `dotted.name` → `mcp__fixture__dotted_name`).
pub fn tool_name(server: &str, tool: &str) -> String {
    format!("{MCP_PREFIX}{}__{}", normalise_part(server), normalise_part(tool))
}

fn normalise_part(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect()
}

/// The description as sent: at most [`MAX_MCP_DESCRIPTION_CHARS`] chars, then [`TRUNCATION_MARK`].
pub fn truncate_description(d: &str) -> String {
    match d.char_indices().nth(MAX_MCP_DESCRIPTION_CHARS) {
        Some((cut, _)) => format!("{}{TRUNCATION_MARK}", &d[..cut]),
        None => d.to_string(),
    }
}

/// Tool names live as long as the process (the [`Tool`] trait names tools with `&'static str`); each
/// distinct name is leaked once.
fn intern(name: String) -> &'static str {
    static NAMES: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
    let set = NAMES.get_or_init(Mutex::default);
    let Ok(mut set) = set.lock() else { return Box::leak(name.into_boxed_str()) };
    if let Some(n) = set.get(name.as_str()) {
        return n;
    }
    let n: &'static str = Box::leak(name.into_boxed_str());
    set.insert(n);
    n
}

/// One connected server.
pub struct McpServer {
    /// Its name in the configuration.
    pub name: String,
    peer: Peer<RoleClient>,
    service: tokio::sync::Mutex<Option<RunningService<RoleClient, ClientInfo>>>,
    child: tokio::sync::Mutex<Option<tokio::process::Child>>,
    /// The server's process group, killed with the server (its children included) when it is dropped.
    group: Option<crate::process::Group>,
    /// Its tools as listed at connection (`tools/list`).
    pub tools: Vec<Value>,
    /// It declared the resources capability.
    pub resources: bool,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer").field("name", &self.name).field("tools", &self.tools.len()).finish()
    }
}

/// The MCP servers of a session: connected at its start, shut down at its end.
#[derive(Debug, Default)]
pub struct Mcp {
    /// Connected servers, by name.
    pub servers: Vec<Arc<McpServer>>,
    /// Servers that failed to connect: (name, why). Like the reference, a failed server only loses its
    /// tools; the session goes on.
    pub failures: Vec<(String, McpError)>,
}

impl Mcp {
    /// Starts and connects every server (in name order), `cwd` as their working directory, `home` as HOME,
    /// the process's PATH and the spec's env.
    pub async fn connect(
        servers: &BTreeMap<String, ServerSpec>,
        cwd: &Path,
        home: &Path,
        confine: Option<&crate::confine::Confinement>,
    ) -> Mcp {
        let mut mcp = Mcp::default();
        for (name, spec) in servers {
            match connect_one(name, spec, cwd, home, confine).await {
                Ok(s) => mcp.servers.push(Arc::new(s)),
                Err(e) => mcp.failures.push((name.clone(), e)),
            }
        }
        mcp
    }

    /// The session's MCP tools: one per server tool, and the resource tools when a server offers
    /// resources.
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        let mut out: Vec<Arc<dyn Tool>> = Vec::new();
        let all = Arc::new(self.servers.clone());
        if self.servers.iter().any(|s| s.resources) {
            out.push(Arc::new(ListMcpResources { servers: all.clone() }));
            out.push(Arc::new(ReadMcpResource { servers: all.clone() }));
            out.push(Arc::new(ReadMcpResourceDir));
        }
        for s in &self.servers {
            for t in &s.tools {
                if let Some(tool) = McpTool::new(s.clone(), t) {
                    out.push(Arc::new(tool));
                }
            }
        }
        out
    }

    /// Closes every server's stdin, waits up to [`SHUTDOWN_GRACE_MS`] for it to exit, then kills it.
    pub async fn shutdown(&self) {
        for s in &self.servers {
            if let Some(svc) = s.service.lock().await.take() {
                let _ = tokio::time::timeout(Duration::from_millis(SHUTDOWN_GRACE_MS), svc.cancel()).await;
            }
            if let Some(mut child) = s.child.lock().await.take() {
                let waited = tokio::time::timeout(Duration::from_millis(SHUTDOWN_GRACE_MS), child.wait()).await;
                if waited.is_err() {
                    let _ = child.kill().await;
                }
            }
            // what the server started goes with it
            if let Some(g) = &s.group {
                g.kill();
            }
        }
    }
}

/// Why an MCP server of the session could not be connected (it only loses its tools: `Mcp::failures`).
#[derive(Debug, Clone, thiserror::Error)]
pub enum McpError {
    /// The program did not start.
    #[error("MCP server {name:?}: cannot start {command}: {source}")]
    Start {
        /// The server's name.
        name: String,
        /// Its program.
        command: String,
        /// The OS error.
        source: Arc<std::io::Error>,
    },
    /// It started without the pipes of its stdio.
    #[error("MCP server {name:?}: no stdio pipes")]
    NoPipes {
        /// The server's name.
        name: String,
    },
    /// The handshake failed; what the server wrote on stderr until then, when anything.
    #[error("MCP server {name:?}: {why}{}", stderr_tail(stderr))]
    Handshake {
        /// The server's name.
        name: String,
        /// Why.
        why: HandshakeError,
        /// Its stderr (at most `STDERR_KEEP_BYTES`, trailing whitespace trimmed).
        stderr: String,
    },
}

fn stderr_tail(stderr: &str) -> String {
    if stderr.is_empty() {
        String::new()
    } else {
        format!("\nstderr: {stderr}")
    }
}

/// Why `initialize` / `tools/list` failed (`mcp::handshake`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HandshakeError {
    /// The SDK refused our `initialize` or the server's answer to it.
    #[error("{0}")]
    Initialize(String),
    /// `tools/list` failed.
    #[error("{0}")]
    ListTools(String),
    /// No answer within `CONNECT_TIMEOUT_MS`.
    #[error("no answer within {CONNECT_TIMEOUT_MS} ms")]
    Timeout,
}

async fn connect_one(
    name: &str,
    spec: &ServerSpec,
    cwd: &Path,
    home: &Path,
    confine: Option<&crate::confine::Confinement>,
) -> Result<McpServer, McpError> {
    // PATH and HOME of the lab's, the server's own `env` on top: nothing else of the lab's environment
    let path = std::env::var_os("PATH").unwrap_or_default();
    let vars = crate::confine::with_env(
        vec![("PATH".into(), path), ("HOME".into(), home.as_os_str().to_os_string())],
        &spec.env,
    );
    let mut child = crate::confine::command(confine, &spec.command, &spec.args, cwd, &vars)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| McpError::Start { name: name.to_string(), command: spec.command.clone(), source: Arc::new(e) })?;
    // a connection given up (its timeout, the probe's deadline) kills the server's whole group
    let group = crate::process::Group::led_by(child.id());
    let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
        return Err(McpError::NoPipes { name: name.to_string() });
    };
    let stderr = Arc::new(Mutex::new(Vec::<u8>::new()));
    if let Some(mut err) = child.stderr.take() {
        let keep = stderr.clone();
        tokio::spawn(async move {
            use tokio::io::AsyncReadExt;
            let mut buf = [0u8; 1024];
            while let Ok(n) = err.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                if let Ok(mut k) = keep.lock() {
                    let room = STDERR_KEEP_BYTES.saturating_sub(k.len());
                    k.extend_from_slice(&buf[..n.min(room)]);
                }
            }
        });
    }
    let fail = |why: HandshakeError| {
        let stderr = stderr.lock().map(|k| String::from_utf8_lossy(&k).trim_end().to_string()).unwrap_or_default();
        McpError::Handshake { name: name.to_string(), why, stderr }
    };
    let mut server = handshake(name, stdout, stdin).await.map_err(fail)?;
    server.child = tokio::sync::Mutex::new(Some(child));
    server.group = group;
    Ok(server)
}

/// `initialize` and `tools/list` over a server's output and input, within [`CONNECT_TIMEOUT_MS`].
pub async fn handshake<R, W>(name: &str, from_server: R, to_server: W) -> Result<McpServer, HandshakeError>
where
    R: tokio::io::AsyncRead + Send + Unpin + 'static,
    W: tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    let info: ClientInfo = serde_json::from_value(json!({
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "probelab", "version": env!("CARGO_PKG_VERSION")},
    }))
    .map_err(|e| HandshakeError::Initialize(e.to_string()))?;
    let deadline = Duration::from_millis(CONNECT_TIMEOUT_MS);
    let connected = tokio::time::timeout(deadline, async {
        let service =
            info.serve((from_server, to_server)).await.map_err(|e| HandshakeError::Initialize(e.to_string()))?;
        let tools = service.peer().list_all_tools().await.map_err(|e| HandshakeError::ListTools(e.to_string()))?;
        Ok::<_, HandshakeError>((service, tools))
    })
    .await;
    let (service, tools) = match connected {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => return Err(e),
        Err(_) => return Err(HandshakeError::Timeout),
    };
    let resources = service.peer().peer_info().is_some_and(|i| i.capabilities.resources.is_some());
    let tools = tools.iter().filter_map(|t| serde_json::to_value(t).ok()).collect();
    Ok(McpServer {
        name: name.to_string(),
        peer: service.peer().clone(),
        service: tokio::sync::Mutex::new(Some(service)),
        child: tokio::sync::Mutex::new(None),
        group: None,
        tools,
        resources,
    })
}

/// From Claude Code 2.1.274 a tool call's JSON-RPC error is its message alone (`MCP error -32603: `
/// before). The timeline is silent (the probe's checks stop applying at 2.1.274); the committed cells'
/// hash of `mcp.tools` result 6 changes between 2.1.273 and 2.1.274.
pub const CALL_ERROR_BARE: Switch =
    Switch { name: "mcp: a tool call's JSON-RPC error is its message alone", since: "2.1.274", probe: "mcp.tools" };

/// From Claude Code 2.1.330 ReadMcpResourceDirTool's "not enabled" answer is an error.
pub const DIR_LISTING_IS_ERROR: Switch = Switch {
    name: "mcp: ReadMcpResourceDirTool's not-enabled answer is an error",
    since: "2.1.330",
    probe: "mcp.resources",
};

/// A failed tool call's error at the session's release ([`CALL_ERROR_BARE`]).
fn call_error(ctx: &ToolContext, e: ServiceError) -> ToolError {
    match e {
        ServiceError::McpError(d) if ctx.profile().has(&CALL_ERROR_BARE) => ToolError::Runtime(d.message.to_string()),
        e => ToolError::Runtime(service_error(e).1),
    }
}

/// ReadMcpResourceDirTool's answer at the session's release ([`DIR_LISTING_IS_ERROR`]).
fn dir_listing(ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
    if ctx.profile().has(&DIR_LISTING_IS_ERROR) {
        Err(ToolError::Runtime(DIR_LISTING_DISABLED.into()))
    } else {
        Ok(ToolOutput::Text(DIR_LISTING_DISABLED.into()))
    }
}

/// The text of a protocol error as the reference words it: `MCP error <code>: <message>` (measured).
fn service_error(e: ServiceError) -> (Option<i32>, String) {
    match e {
        ServiceError::McpError(d) => (Some(d.code.0), format!("MCP error {}: {}", d.code.0, d.message)),
        other => (None, format!("MCP error: {other}")),
    }
}

/// An MCP server's tool in the pool.
pub struct McpTool {
    name: &'static str,
    server: Arc<McpServer>,
    tool: String,
    description: String,
    schema: Value,
    read_only: bool,
    destructive: bool,
}

impl std::fmt::Debug for McpTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

impl McpTool {
    /// The tool a server listed (`tools/list` entry); `None` without a name.
    pub fn new(server: Arc<McpServer>, listed: &Value) -> Option<McpTool> {
        let tool = listed.get("name")?.as_str()?.to_string();
        let hint = |k: &str| listed.get("annotations").and_then(|a| a.get(k)).and_then(Value::as_bool);
        Some(McpTool {
            name: intern(tool_name(&server.name, &tool)),
            description: truncate_description(listed.get("description").and_then(Value::as_str).unwrap_or_default()),
            schema: listed.get("inputSchema").cloned().unwrap_or_else(|| json!({"type": "object"})),
            read_only: hint("readOnlyHint") == Some(true),
            destructive: hint("destructiveHint") == Some(true),
            server,
            tool,
        })
    }
}

/// An MCP content block as a Messages API block: text as is, images as base64 image blocks, anything
/// else (audio, embedded resources, resource links) as its JSON text.
fn api_block(b: &Value) -> Value {
    match b.get("type").and_then(Value::as_str) {
        Some("text") => json!({"type": "text", "text": b.get("text").and_then(Value::as_str).unwrap_or_default()}),
        Some("image") => json!({"type": "image", "source": {
            "type": "base64",
            "media_type": b.get("mimeType").and_then(Value::as_str).unwrap_or("image/png"),
            "data": b.get("data").and_then(Value::as_str).unwrap_or_default(),
        }}),
        _ => json!({"type": "text", "text": b.to_string()}),
    }
}

impl Tool for McpTool {
    fn name(&self) -> &'static str {
        self.name
    }

    fn description(&self) -> String {
        self.description.clone()
    }

    fn input_schema(&self) -> Value {
        self.schema.clone()
    }

    fn is_read_only(&self, _input: &Value) -> bool {
        self.read_only
    }

    fn is_concurrency_safe(&self, _input: &Value) -> bool {
        self.read_only
    }

    fn is_destructive(&self, _input: &Value) -> bool {
        self.destructive
    }

    fn validates_input(&self) -> bool {
        false
    }

    fn call<'a>(&'a self, input: Value, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let arguments = match input {
                Value::Object(args) => Some(args),
                _ => None,
            };
            let params = CallToolRequestParam { name: self.tool.clone().into(), arguments };
            let result = self.server.peer.call_tool(params).await.map_err(|e| call_error(ctx, e))?;
            let result = serde_json::to_value(&result).map_err(|e| ToolError::Runtime(e.to_string()))?;
            let content: Vec<Value> = result.get("content").and_then(Value::as_array).cloned().unwrap_or_default();
            if result.get("isError").and_then(Value::as_bool) == Some(true) {
                let text: Vec<String> = content
                    .iter()
                    .map(|b| match b.get("text").and_then(Value::as_str) {
                        Some(t) => t.to_string(),
                        None => b.to_string(),
                    })
                    .collect();
                return Err(ToolError::Runtime(text.join("\n")));
            }
            Ok(ToolOutput::Blocks(content.iter().map(api_block).collect()))
        })
    }
}

fn find<'a>(servers: &'a [Arc<McpServer>], name: &str) -> Result<&'a Arc<McpServer>, ToolError> {
    servers.iter().find(|s| s.name == name).ok_or_else(|| {
        let names: Vec<&str> = servers.iter().map(|s| s.name.as_str()).collect();
        ToolError::Runtime(format!("Server \"{name}\" not found. Available servers: {}", names.join(", ")))
    })
}

/// A resource as the reference lists it: `name`, `title`, `uri`, `description`, `mimeType` first, the
/// rest as the server sent it, then `server` (measured key order).
fn listed_resource(r: &Value, server: &str) -> Value {
    let mut out = serde_json::Map::new();
    if let Value::Object(o) = r {
        for k in ["name", "title", "uri", "description", "mimeType"] {
            if let Some(v) = o.get(k) {
                out.insert(k.to_string(), v.clone());
            }
        }
        for (k, v) in o {
            if !out.contains_key(k) {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    out.insert("server".into(), json!(server));
    Value::Object(out)
}

/// ListMcpResourcesTool: the resources of every connected server (or of one), as a JSON array.
pub struct ListMcpResources {
    servers: Arc<Vec<Arc<McpServer>>>,
}

#[derive(Debug, Deserialize)]
pub struct ListArgs {
    #[serde(default)]
    server: Option<String>,
}

impl TypedTool for ListMcpResources {
    const NAME: &'static str = LIST_RESOURCES;
    const DESCRIPTION: &'static str = "\nList available resources from configured MCP servers.\nEach returned resource will include all standard MCP resource fields plus a 'server' field \nindicating which server the resource belongs to.\n\nParameters:\n- server (optional): The name of a specific MCP server to get resources from. If not provided,\n  resources from all servers will be returned.\n";
    const DEFER_LOADING: Option<bool> = Some(true); // measured: deferred with the MCP tools when tool search is on
    const READ_ONLY: bool = true;
    const CONCURRENCY_SAFE: bool = true;
    type Args = ListArgs;

    fn input_schema(&self) -> Value {
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {"server": {"description": "Optional server name to filter resources by", "type": "string"}},
            "additionalProperties": false
        })
    }

    async fn call(&self, args: ListArgs, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let chosen: Vec<&Arc<McpServer>> = match &args.server {
            Some(name) => vec![find(&self.servers, name)?],
            None => self.servers.iter().filter(|s| s.resources).collect(),
        };
        let mut out = Vec::new();
        for s in chosen {
            let listed = s.peer.list_all_resources().await.map_err(|e| ToolError::Runtime(service_error(e).1))?;
            for r in &listed {
                let r = serde_json::to_value(r).map_err(|e| ToolError::Runtime(e.to_string()))?;
                out.push(listed_resource(&r, &s.name));
            }
        }
        Ok(ToolOutput::Text(Value::Array(out).to_string()))
    }
}

/// ReadMcpResourceTool: one resource's `resources/read` answer, as JSON.
pub struct ReadMcpResource {
    servers: Arc<Vec<Arc<McpServer>>>,
}

#[derive(Debug, Deserialize)]
pub struct ReadArgs {
    server: String,
    uri: String,
}

fn read_schema(uri_about: &str) -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "server": {"description": "The MCP server name", "type": "string"},
            "uri": {"description": uri_about, "type": "string"}
        },
        "required": ["server", "uri"],
        "additionalProperties": false
    })
}

impl TypedTool for ReadMcpResource {
    const NAME: &'static str = READ_RESOURCE;
    const DESCRIPTION: &'static str = "\nReads a specific resource from an MCP server, identified by server name and resource URI.\n\nParameters:\n- server (required): The name of the MCP server from which to read the resource\n- uri (required): The URI of the resource to read\n";
    const DEFER_LOADING: Option<bool> = Some(true); // measured: deferred with the MCP tools when tool search is on
    const READ_ONLY: bool = true;
    const CONCURRENCY_SAFE: bool = true;
    type Args = ReadArgs;

    fn input_schema(&self) -> Value {
        read_schema("The resource URI to read")
    }

    async fn call(&self, args: ReadArgs, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let s = find(&self.servers, &args.server)?;
        match s.peer.read_resource(ReadResourceRequestParam { uri: args.uri.clone() }).await {
            Ok(r) => Ok(ToolOutput::Text(
                serde_json::to_value(&r).map_err(|e| ToolError::Runtime(e.to_string()))?.to_string(),
            )),
            Err(e) => match service_error(e) {
                // measured: a missing resource is a plain (non-error) answer that says what to do
                (Some(RESOURCE_NOT_FOUND_CODE), _) => Ok(ToolOutput::Text(format!(
                    "Resource not found: {} — it may have been deleted or the URI is stale. Re-run {LIST_RESOURCES} to refresh.",
                    args.uri
                ))),
                (_, text) => Err(ToolError::Runtime(text)),
            },
        }
    }
}

/// ReadMcpResourceDirTool: present like the reference's, and like it answers that directory listing is
/// not enabled.
#[derive(Debug, Default)]
pub struct ReadMcpResourceDir;

impl TypedTool for ReadMcpResourceDir {
    const NAME: &'static str = READ_RESOURCE_DIR;
    const DESCRIPTION: &'static str = "\nList the direct children of a directory resource on an MCP server (`resources/directory/read`).\n\nParameters:\n- server (required): The name of the MCP server to read from\n- uri (required): The URI of the directory resource\n\nThe listing is not recursive. Each entry carries its own `uri`; subdirectories appear with mimeType \"inode/directory\" — call this tool again on a subdirectory's `uri` to descend.\n\nOnly usable against a server that has declared support for directory listing; other servers return an error.\n";
    const DEFER_LOADING: Option<bool> = Some(true); // measured: deferred with the MCP tools when tool search is on
    const READ_ONLY: bool = true;
    const CONCURRENCY_SAFE: bool = true;
    type Args = serde::de::IgnoredAny;

    fn input_schema(&self) -> Value {
        read_schema("The directory resource URI to list")
    }

    async fn call(&self, _args: serde::de::IgnoredAny, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        dir_listing(ctx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tool call's JSON-RPC error before and from CALL_ERROR_BARE (mcp.tools on 2.1.273 / 2.1.274);
    /// the directory listing's answer before and from DIR_LISTING_IS_ERROR (mcp.resources on 2.1.329 /
    /// 2.1.330).
    #[test]
    fn texts_by_release() {
        let failed = |version: &str| {
            let (_d, ctx) = ToolContext::for_test_at(version);
            let e = ServiceError::McpError(rmcp::model::ErrorData::internal_error("fixture protocol error", None));
            call_error(&ctx, e).to_string()
        };
        assert_eq!(failed("2.1.273"), "MCP error -32603: fixture protocol error");
        assert_eq!(failed("2.1.274"), "fixture protocol error");
        let (_d, ctx) = ToolContext::for_test_at("2.1.329");
        assert!(matches!(dir_listing(&ctx), Ok(ToolOutput::Text(t)) if t == DIR_LISTING_DISABLED));
        let (_d, ctx) = ToolContext::for_test_at("2.1.330");
        assert!(matches!(dir_listing(&ctx), Err(ToolError::Runtime(t)) if t == DIR_LISTING_DISABLED));
    }

    #[test]
    fn failures_are_worded_with_the_server_and_its_stderr() {
        let name = "fx".to_string();
        let start = McpError::Start {
            name: name.clone(),
            command: "/no/such".into(),
            source: Arc::new(std::io::Error::from(std::io::ErrorKind::NotFound)),
        };
        assert_eq!(start.to_string(), "MCP server \"fx\": cannot start /no/such: entity not found");
        assert_eq!(McpError::NoPipes { name: name.clone() }.to_string(), "MCP server \"fx\": no stdio pipes");
        let quiet = McpError::Handshake { name: name.clone(), why: HandshakeError::Timeout, stderr: String::new() };
        assert_eq!(quiet.to_string(), format!("MCP server \"fx\": no answer within {CONNECT_TIMEOUT_MS} ms"));
        let loud = McpError::Handshake { name, why: HandshakeError::ListTools("closed".into()), stderr: "boom".into() };
        assert_eq!(loud.to_string(), "MCP server \"fx\": closed\nstderr: boom");
    }

    #[test]
    fn names_and_descriptions_as_the_reference_sends_them() {
        assert_eq!(tool_name("fixture", "dotted.name"), "mcp__fixture__dotted_name");
        assert_eq!(tool_name("my server", "a-b_c"), "mcp__my_server__a-b_c");
        // the fixture server's long description: `w0001 w0002 …`, 3,000 chars
        let long: String = (1..=600).map(|i| format!("w{i:04} ")).collect::<String>().chars().take(3000).collect();
        let cut = truncate_description(&long);
        assert_eq!(cut.chars().count(), MAX_MCP_DESCRIPTION_CHARS + TRUNCATION_MARK.chars().count());
        assert!(cut.ends_with("w0341 w0… [truncated]"), "{cut}");
        assert_eq!(truncate_description(&"é".repeat(2048)), "é".repeat(2048));
        assert!(truncate_description(&"é".repeat(2049)).ends_with("é… [truncated]"));
    }

    #[test]
    fn resources_are_listed_in_the_reference_key_order() {
        let r = json!({"uri": "u", "mimeType": "m", "size": 3, "name": "n"});
        assert_eq!(
            listed_resource(&r, "s").to_string(),
            r#"{"name":"n","uri":"u","mimeType":"m","size":3,"server":"s"}"#
        );
    }
}
