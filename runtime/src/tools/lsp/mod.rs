//! LSP (LSP-1..5): code intelligence from language servers the session configured (a probe's
//! `[[plugin]]` with `lspServers`, Claude Code's plugin shape: [`config`]). A real LSP client — JSON-RPC
//! over stdio ([`client`]), one server per configured file extension, started at the first call that
//! needs it ([`manager`]) — and the reference's result texts ([`mod@format`]).
//!
//! What the reference does (Claude Code 2.1.235, measured in `probes/claude-code/lsp-*.toml` and read in
//! its bundled source), and the built-in does too:
//! - the schema: `operation` (LSP-1's nine), `filePath`, `line`, `character` (1-based, positive), optional
//!   `query` (workspaceSymbol); a missing file is a `<tool_use_error>` (`File does not exist: …`);
//! - LSP-2: the position goes out 0-based (`line - 1`, `character - 1`); locations come back shown 1-based;
//! - LSP-3: `initialize` → `initialized` → `textDocument/didOpen` → the request; `shutdown` when the
//!   session ends; results are ordinary text results (errors of a server too: `Error performing …`);
//! - LSP-4: no server for the extension → `No LSP server available for file type: .ext`, not an error;
//! - LSP-5: counts of results and files (the structured record: `resultCount`, `fileCount`), locations
//!   without a URI dropped, targets `git check-ignore` names dropped (findReferences, goToDefinition,
//!   goToImplementation, workspaceSymbol), and the symbol under the cursor read from at most
//!   [`SYMBOL_READ_BYTES`] of the file ([`symbol_at`], what the reference's tool-use line shows);
//! - the tool exists only when a server is configured, and not in the session's first request (the
//!   reference loads plugin servers in the background): a call before it is offered gets the
//!   reference's "No such tool available: LSP. LSP is disabled for this session" (the pipeline asks
//!   [`manager::LspManager::offered_from`]); from 2.1.239 it is offered from the first request
//!   ([`LSP_IN_THE_FIRST_REQUEST`]).
//!
//! Where the built-in differs on purpose: a request that gets no answer within
//! [`manager::REQUEST_TIMEOUT_MS`] (the reference waits forever) ends the call with an `Error performing
//! …` text and the server is restarted at the next call, as after a crash; `initialize` says
//! `clientInfo` `probelab`; `exit` follows `shutdown` (the reference's CLI is gone before it sends it);
//! edits made by Edit / Write are not sent as `didChange` (the reference syncs them).

pub mod client;
pub mod config;
pub mod format;
pub mod manager;

use crate::context::ToolContext;
use crate::tool::{PermissionSubject, ToolError, ToolOutput, TypedTool};
use crate::validation;
use serde::Deserialize;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// The tool's name.
pub const LSP_TOOL: &str = "LSP";

/// LSP-1: the nine operations.
pub const OPERATIONS: [&str; 9] = [
    "goToDefinition",
    "findReferences",
    "hover",
    "documentSymbol",
    "workspaceSymbol",
    "goToImplementation",
    "prepareCallHierarchy",
    "incomingCalls",
    "outgoingCalls",
];

/// LSP-5: the symbol under the cursor is looked for in at most this many bytes of the file (a line past
/// them, or cut by them, shows no symbol).
#[allow(dead_code)] // with symbol_at: the reference shows the symbol only in its UI, never to the model
pub const SYMBOL_READ_BYTES: usize = 65_536;

/// A file over this size is not sent to a server (the reference's 10 MB limit).
pub const MAX_FILE_BYTES: u64 = 10_000_000;

/// The longest symbol shown (longer ones are cut with an ellipsis).
#[allow(dead_code)] // with symbol_at
pub const SYMBOL_MAX_CHARS: usize = 30;

/// How long `git check-ignore` may take (the reference's 5 s).
pub const GIT_CHECK_IGNORE_TIMEOUT_MS: u64 = 5_000;

/// The LSP tool.
#[derive(Debug, Default)]
pub struct Lsp;

/// From 2.1.239 the LSP tool is in the session's first request already (a configured server's tool is
/// offered at once; 2.1.238 left it out until request 2, and a call in request 1 was "disabled"):
/// measured by `claude-code.lsp-roundtrip` (its check "changed at 2.1.239 (probelab bisect)", the
/// timeline's LSP-1..5 entries 2.1.238 → 2.1.239).
pub const LSP_IN_THE_FIRST_REQUEST: crate::profile::Switch = crate::profile::Switch {
    name: "LSP offered from the first request",
    since: "2.1.239",
    probe: "claude-code.lsp-roundtrip",
};

/// From 2.1.269 the servers' `shutdown` request carries no params (2.1.268 sent `params: {}`): measured
/// by `claude-code.lsp-roundtrip`'s trace check ("changed at 2.1.269 (probelab bisect; 2.1.268 sends
/// params {})").
pub const LSP_SHUTDOWN_WITHOUT_PARAMS: crate::profile::Switch = crate::profile::Switch {
    name: "LSP shutdown without params",
    since: "2.1.269",
    probe: "claude-code.lsp-roundtrip",
};

/// Claude Code 2.1.242 (that release only) offers no LSP tool at all: with a plugin's server configured
/// the tool is in no request, the server is never started, and a call is the plain `Error: No such tool
/// available: LSP` (not the "disabled for this session" notice); [`ENV_ENABLE_LSP_TOOL`] brings it back.
/// Measured by `claude-code.lsp-roundtrip`, `claude-code.lsp-inputs`, `claude-code.lsp-failures` and
/// `lsp.no-server` (`docs/version-facts.md` row 6c: 2.1.241 / 2.1.242 / 2.1.243, three runs each).
/// [`LSP_TOOL_BACK`] reverts it.
pub const LSP_TOOL_WITHHELD: crate::profile::Switch = crate::profile::Switch {
    name: "LSP tool offered only with ENABLE_LSP_TOOL",
    since: "2.1.242",
    probe: "claude-code.lsp-roundtrip",
};

/// From 2.1.243 the LSP tool is offered again without [`ENV_ENABLE_LSP_TOOL`] (reverts
/// [`LSP_TOOL_WITHHELD`]; `docs/version-facts.md` row 6c).
pub const LSP_TOOL_BACK: crate::profile::Switch = crate::profile::Switch {
    name: "LSP tool offered again without ENABLE_LSP_TOOL (reverts the 2.1.242 one)",
    since: "2.1.243",
    probe: "claude-code.lsp-roundtrip",
};

/// Offers the LSP tool where the release withholds it ([`LSP_TOOL_WITHHELD`]): `1` on 2.1.242 gives the
/// tool and its results (`Defined in a.probe:3:5`, `docs/version-facts.md` §6).
pub const ENV_ENABLE_LSP_TOOL: &str = "ENABLE_LSP_TOOL";

/// Whether a session with this env at this profile has no LSP tool whatever its plugins configure
/// ([`LSP_TOOL_WITHHELD`] and not [`LSP_TOOL_BACK`], unless [`ENV_ENABLE_LSP_TOOL`] is on).
pub fn withheld(env: &std::collections::BTreeMap<String, String>, profile: crate::profile::Profile) -> bool {
    profile.has(&LSP_TOOL_WITHHELD)
        && !profile.has(&LSP_TOOL_BACK)
        && crate::settings::env_flag(env, ENV_ENABLE_LSP_TOOL) != Some(true)
}

/// The request the LSP tool is first offered in, at the session's profile.
fn first_request(ctx: &ToolContext) -> usize {
    if ctx.profile().has(&LSP_IN_THE_FIRST_REQUEST) {
        1
    } else {
        2
    }
}

/// Counts the session's requests for the LSP tool's visibility (LSP-3: offered from the second request
/// on), installed when the pool has LSP.
#[derive(Debug, Clone, Copy, Default)]
pub struct Offer;

impl crate::pipeline::Extension for Offer {
    fn before_request(&self, rt: &crate::pipeline::Runtime, _messages: &[Value]) -> Vec<String> {
        rt.ctx.session.state::<manager::LspManager>().request_begins();
        Vec::new()
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Args {
    operation: String,
    file_path: String,
    line: u64,
    character: u64,
    #[serde(default)]
    query: Option<String>,
}

const DESCRIPTION: &str = "Interact with Language Server Protocol (LSP) servers to get code intelligence features.

Supported operations:
- goToDefinition: Find where a symbol is defined
- findReferences: Find all references to a symbol
- hover: Get hover information (documentation, type info) for a symbol
- documentSymbol: Get all symbols (functions, classes, variables) in a document
- workspaceSymbol: Search for symbols matching a query across the entire workspace
- goToImplementation: Find implementations of an interface or abstract method
- prepareCallHierarchy: Get call hierarchy item at a position (functions/methods)
- incomingCalls: Find all functions/methods that call the function at a position
- outgoingCalls: Find all functions/methods called by the function at a position

All operations require:
- filePath: The file to operate on
- line: The line number (1-based, as shown in editors)
- character: The character offset (1-based, as shown in editors)

The workspaceSymbol operation also takes:
- query: The symbol name or partial name to search for. Always provide it \u{2014} most language servers return no results for an empty query.

Note: LSP servers must be configured for the file type. If no server is available, an error will be returned.";

/// The method and params of an operation on `uri` (LSP-2: 1-based in, 0-based out). The two call
/// operations start with `textDocument/prepareCallHierarchy`.
pub fn request_for(
    operation: &str,
    uri: &str,
    line: u64,
    character: u64,
    query: Option<&str>,
) -> (&'static str, Value) {
    let position = json!({"line": line.saturating_sub(1), "character": character.saturating_sub(1)});
    let doc = json!({"uri": uri});
    match operation {
        "goToDefinition" => ("textDocument/definition", json!({"textDocument": doc, "position": position})),
        "findReferences" => (
            "textDocument/references",
            json!({"textDocument": doc, "position": position, "context": {"includeDeclaration": true}}),
        ),
        "hover" => ("textDocument/hover", json!({"textDocument": doc, "position": position})),
        "documentSymbol" => ("textDocument/documentSymbol", json!({"textDocument": doc})),
        "workspaceSymbol" => ("workspace/symbol", json!({"query": query.unwrap_or("")})),
        "goToImplementation" => ("textDocument/implementation", json!({"textDocument": doc, "position": position})),
        _ => ("textDocument/prepareCallHierarchy", json!({"textDocument": doc, "position": position})),
    }
}

/// The symbol at 0-based `line` / `character` of a file, as the reference's tool-use line finds it:
/// only the first [`SYMBOL_READ_BYTES`] bytes are read (LSP-5); a line outside them, or the last line
/// when they were all used (it may be cut), gives none; the word or operator run under the cursor,
/// cut to [`SYMBOL_MAX_CHARS`].
#[allow(dead_code)] // LSP-5's 64 KB read, pinned by its test; no output of the tool shows it
pub fn symbol_at(path: &Path, line: usize, character: usize) -> Option<String> {
    use std::io::Read;
    let mut buf = vec![0; SYMBOL_READ_BYTES];
    let mut f = std::fs::File::open(path).ok()?;
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(_) => return None,
        }
    }
    let text = String::from_utf8_lossy(&buf[..n]);
    let lines: Vec<&str> = text.split('\n').collect();
    if line >= lines.len() || (n == SYMBOL_READ_BYTES && line == lines.len() - 1) {
        return None;
    }
    // JavaScript string offsets count UTF-16 units; the cursor is matched on them
    let l: Vec<u16> = lines[line].encode_utf16().collect();
    if l.is_empty() || character >= l.len() {
        return None;
    }
    let s = String::from_utf16_lossy(&l);
    let re = regex::Regex::new(r"[\w$'!]+|[+\-*/%&|^~<>=]+").ok()?;
    for m in re.find_iter(&s) {
        let start = s[..m.start()].encode_utf16().count();
        let end = start + m.as_str().encode_utf16().count();
        if character >= start && character < end {
            let w = m.as_str();
            return Some(if w.chars().count() > SYMBOL_MAX_CHARS {
                format!("{}\u{2026}", w.chars().take(SYMBOL_MAX_CHARS - 1).collect::<String>())
            } else {
                w.to_string()
            });
        }
    }
    None
}

/// The files `git check-ignore` names among these (run in `cwd`; no repository, no git: none).
pub async fn git_ignored(paths: &[String], cwd: &Path) -> std::collections::BTreeSet<String> {
    let mut out = std::collections::BTreeSet::new();
    for chunk in paths.chunks(50) {
        let run = tokio::process::Command::new("git")
            .arg("check-ignore")
            .args(chunk)
            .current_dir(cwd)
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .output();
        if let Ok(Ok(o)) =
            tokio::time::timeout(std::time::Duration::from_millis(GIT_CHECK_IGNORE_TIMEOUT_MS), run).await
        {
            if o.status.code() == Some(0) {
                out.extend(
                    String::from_utf8_lossy(&o.stdout)
                        .lines()
                        .map(str::trim)
                        .filter(|l| !l.is_empty())
                        .map(String::from),
                );
            }
        }
    }
    out
}

/// LSP-5: drops the results whose target file is git-ignored (results without a URI stay).
async fn drop_ignored(operation: &str, result: Value, cwd: &Path) -> Value {
    let Value::Array(items) = result else { return result };
    let uri_of = |v: &Value| -> Option<String> {
        let v = if operation == "workspaceSymbol" { v["location"].clone() } else { format::as_location(v) };
        v["uri"].as_str().filter(|u| !u.is_empty()).map(str::to_string)
    };
    let paths: Vec<String> = {
        let mut p: Vec<String> = items.iter().filter_map(uri_of).map(|u| format::uri_path(&u)).collect();
        p.dedup();
        p
    };
    if paths.is_empty() {
        return Value::Array(items);
    }
    let ignored = git_ignored(&paths, cwd).await;
    if ignored.is_empty() {
        return Value::Array(items);
    }
    Value::Array(
        items.into_iter().filter(|v| uri_of(v).is_none_or(|u| !ignored.contains(&format::uri_path(&u)))).collect(),
    )
}

/// `line` / `character` below 1: the reference's zod issue list (measured on 2.1.235:
/// `InputValidationError: [ { "origin": "number", "code": "too_small", … } ]`, two-space JSON).
pub fn positions_too_small(line: u64, character: u64) -> Option<String> {
    let issues: Vec<Value> = [("line", line), ("character", character)]
        .iter()
        .filter(|(_, v)| *v == 0)
        .map(|(f, _)| validation::too_small("number", 0, false, json!([f]), None))
        .collect();
    (!issues.is_empty()).then(|| validation::issues_error(&issues))
}

/// `~/x` and relative paths as the reference resolves a `filePath`.
fn resolve(ctx: &ToolContext, p: &str) -> PathBuf {
    let p = p.trim();
    if let Some(rest) = p.strip_prefix("~/") {
        return ctx.home.join(rest);
    }
    let path = Path::new(p);
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        ctx.cwd.join(path)
    }
}

impl TypedTool for Lsp {
    const NAME: &'static str = LSP_TOOL;
    const DESCRIPTION: &'static str = DESCRIPTION;
    const READ_ONLY: bool = true;
    const CONCURRENCY_SAFE: bool = true;
    /// The reference words a misfit input as zod's plain issue message, `Invalid input: …`.
    const ARGS_ERROR_PREFIX: &'static str = "Invalid input: ";
    type Args = Args;

    /// LSP-3: only with a configured server, and never in the session's first request (from 2.1.239 in
    /// every request: [`LSP_IN_THE_FIRST_REQUEST`]).
    fn is_visible(&self, ctx: &ToolContext) -> bool {
        ctx.session.state::<manager::LspManager>().offered_from(first_request(ctx))
    }

    /// LSP-3: a call before the tool was offered is a call to a tool the session does not have.
    fn is_available(&self, ctx: &ToolContext) -> bool {
        ctx.session.state::<manager::LspManager>().offered_from(first_request(ctx))
    }

    fn input_schema(&self) -> Value {
        let pos = |what: &str| json!({"description": format!("The {what} (1-based, as shown in editors)"), "type": "integer", "exclusiveMinimum": 0, "maximum": 9007199254740991i64});
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "operation": {"description": "The LSP operation to perform", "type": "string", "enum": OPERATIONS},
                "filePath": {"description": "The absolute or relative path to the file", "type": "string"},
                "line": pos("line number"),
                "character": pos("character offset"),
                "query": {"description": "The symbol name or partial name to search for (workspaceSymbol only). Most language servers return no results for an empty query, so always provide it when using workspaceSymbol.", "type": "string"}
            },
            "required": ["operation", "filePath", "line", "character"],
            "additionalProperties": false
        })
    }

    fn permission_subject(&self, input: &Value, ctx: &ToolContext) -> PermissionSubject {
        match input["filePath"].as_str() {
            Some(p) => PermissionSubject::ReadPath(resolve(ctx, p)),
            None => PermissionSubject::None,
        }
    }

    async fn call(&self, args: Args, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        if let Some(msg) = positions_too_small(args.line, args.character) {
            return Err(ToolError::Validation(msg));
        }
        let path = resolve(ctx, &args.file_path);
        let path = crate::fs::confine(ctx, &path.to_string_lossy())?;
        match std::fs::metadata(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(ToolError::Validation(format!("File does not exist: {}", args.file_path)))
            }
            Err(e) => return Err(ToolError::Validation(format!("Cannot access file: {}. {e}", args.file_path))),
            Ok(m) if !m.is_file() => {
                return Err(ToolError::Validation(format!("Path is not a file: {}", args.file_path)))
            }
            Ok(_) => {}
        }
        let op = args.operation.as_str();
        let out = |result: String, counts: Option<(usize, usize)>| {
            let mut data = json!({"operation": op, "result": result, "filePath": args.file_path});
            if let (Some((r, f)), Some(o)) = (counts, data.as_object_mut()) {
                o.insert("resultCount".into(), json!(r));
                o.insert("fileCount".into(), json!(f));
            }
            Ok(ToolOutput::Data { text: result, data })
        };
        let lsp = ctx.session.state::<manager::LspManager>();
        let uri = manager::file_uri(&path);
        let (method, params) = request_for(op, &uri, args.line, args.character, args.query.as_deref());
        let server = lsp.server_for(&path);
        if server.is_some_and(|i| !lsp.is_open(&uri, i)) {
            let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            if size > MAX_FILE_BYTES {
                let mb = size.div_ceil(1_000_000);
                return out(format!("File too large for LSP analysis ({mb}MB exceeds 10MB limit)"), None);
            }
        }
        let read = || std::fs::read(&path).map(|b| String::from_utf8_lossy(&b).into_owned());
        let mut result = match lsp.request(&path, read, method, params).await {
            Ok(None) => {
                return out(format!("No LSP server available for file type: {}", manager::extname(&path)), None)
            }
            Ok(Some(v)) => v,
            Err(e) => return out(format!("Error performing {op}: {e}"), None),
        };
        if op == "incomingCalls" || op == "outgoingCalls" {
            let Some(item) = result.as_array().and_then(|a| a.first()).cloned() else {
                return out(format::NO_CALL_ITEM.into(), Some((0, 0)));
            };
            let m = if op == "incomingCalls" { "callHierarchy/incomingCalls" } else { "callHierarchy/outgoingCalls" };
            result = match lsp.follow_up(&path, m, json!({"item": item})).await {
                Ok(v) => v,
                Err(e) => return out(format!("Error performing {op}: {e}"), None),
            };
        }
        if matches!(op, "findReferences" | "goToDefinition" | "goToImplementation" | "workspaceSymbol") {
            result = drop_ignored(op, result, &ctx.cwd).await;
        }
        let f = format::format(op, &result, &ctx.cwd, ctx.profile());
        out(f.text, Some((f.result_count, f.file_count)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_zero_position_is_refused_in_the_references_words() {
        assert_eq!(positions_too_small(1, 1), None);
        let m = positions_too_small(0, 1).unwrap_or_default();
        assert!(
            m.starts_with("InputValidationError: [\n  {\n    \"origin\": \"number\",\n    \"code\": \"too_small\","),
            "{m}"
        );
        assert!(m.ends_with("\"message\": \"Too small: expected number to be >0\"\n  }\n]"), "{m}");
        assert_eq!(positions_too_small(0, 0).map(|m| m.matches("too_small").count()), Some(2));
    }

    #[test]
    fn positions_go_out_zero_based() {
        let (m, p) = request_for("goToDefinition", "file:///a.probe", 1, 1, None);
        assert_eq!(m, "textDocument/definition");
        assert_eq!(p["position"], json!({"line": 0, "character": 0}));
        let (m, p) = request_for("findReferences", "file:///a.probe", 12, 7, None);
        assert_eq!(
            (m, &p["position"], &p["context"]),
            ("textDocument/references", &json!({"line": 11, "character": 6}), &json!({"includeDeclaration": true}))
        );
        let (m, p) = request_for("workspaceSymbol", "file:///a.probe", 1, 1, Some("Pro"));
        assert_eq!((m, p), ("workspace/symbol", json!({"query": "Pro"})));
        assert_eq!(request_for("incomingCalls", "u", 1, 1, None).0, "textDocument/prepareCallHierarchy");
        assert_eq!(request_for("documentSymbol", "u", 3, 3, None).1, json!({"textDocument": {"uri": "u"}}));
    }

    #[test]
    fn the_symbol_is_read_from_the_first_64_kib_only() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let f = d.path().join("a.py");
        std::fs::write(&f, "def run_probe(x):\n    return x >= 1\n").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(symbol_at(&f, 0, 4).as_deref(), Some("run_probe"));
        assert_eq!(symbol_at(&f, 1, 13).as_deref(), Some(">="));
        assert_eq!(symbol_at(&f, 0, 3), None); // the space
        assert_eq!(symbol_at(&f, 9, 0), None);
        // the line that starts at byte 65,530 is cut at 65,536: no symbol; one before it is whole
        let mut text = "x".repeat(65_529);
        text.push('\n');
        text.push_str("abcdefghij\n");
        std::fs::write(&f, &text).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(symbol_at(&f, 0, 0).map(|s| s.chars().count()), Some(30));
        assert_eq!(symbol_at(&f, 1, 0), None);
        // the same line inside the bound is found
        std::fs::write(&f, format!("{}\nabcdefghij\n", "x".repeat(100))).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(symbol_at(&f, 1, 2).as_deref(), Some("abcdefghij"));
        // a file of exactly 65,536 bytes: its last line may be cut, so it shows nothing
        std::fs::write(&f, format!("{}\nab", "y".repeat(65_533))).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(symbol_at(&f, 1, 0), None);
        std::fs::write(&f, format!("{}\nab", "y".repeat(65_532))).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(symbol_at(&f, 1, 0).as_deref(), Some("ab"));
    }
}
