//! ToolSearch and deferred tools (TS-1): with tool search on, a *deferred* tool is not in the request's
//! `tools[]` until the model loads it; the first request names the deferred tools in a text block; a
//! ToolSearch call loads some (exact `select:A,B`, or keyword scoring) and from the next request on they
//! are sent in full with `defer_loading: true`. ToolSearch itself is never deferred.
//!
//! Measured on Claude Code (`probes/claude-code/tool-search-*.toml`; 2.1.332 has it on by default,
//! 2.1.235 with `ENABLE_TOOL_SEARCH=true`):
//! - Request 1 carries the non-deferred tools, then `DeferredToolPlaceholder` (empty schema,
//!   `defer_loading: true`) just before the last tool, and a text naming the deferred tools one a line
//!   ([`ANNOUNCEMENT`]).
//! - A ToolSearch result is a list of `{"type": "tool_reference", "tool_name": …}` blocks (not a
//!   `<functions>` text block, whatever the tool's description and TS-1 say: the API expands the
//!   references), followed in the same user message, after every tool_result of the turn, by a text block
//!   `Tool loaded.` per successful ToolSearch call; no match is the plain text [`NO_MATCH`] (not an error).
//! - `select:` names are exact (case-sensitive); unknown names are dropped silently; a tool that is not
//!   deferred (Read) is still referenced. An empty query matches nothing.
//! - A deferred tool called before it is loaded runs like any other; only when its input fails schema
//!   validation does the error get [`unloaded_hint`]'s paragraph (load it first, and its schema).
//!
//! Decisions where the reference is silent or not copied:
//! - Deferral is a property of a tool where it decides ([`crate::tool::Tool::defer_loading`]); by default it is
//!   [`is_deferred_by_default`]: the names of [`DEFERRED_BUILTINS`] (TS-1's list plus what 2.1.235/2.1.332
//!   defer) and every MCP tool (`mcp__server__tool`).
//! - Tool search is on when [`ENV_ENABLE_TOOL_SEARCH`] is true (Claude Code's switch), and by default
//!   from 2.1.304 ([`TOOL_SEARCH_BY_DEFAULT`]: a profile at or after it; `ENABLE_TOOL_SEARCH=false` turns
//!   it off again); the reference's pool without the switch is unchanged.
//! - Keyword scoring ([`score`]) is our own: the reference's ranking is not documented, and where its
//!   scores tie it has an order of its own (`cron` → CronDelete, CronList, CronCreate; `web` → WebSearch,
//!   WebFetch); ours breaks ties by name. A term equal to a name part scores [`SCORE_NAME_PART`], a name
//!   part containing it [`SCORE_NAME_PARTIAL`], a description word starting with it
//!   [`SCORE_DESCRIPTION`]; `+term` must be in the name. Name parts: CamelCase split for built-ins
//!   (`NotebookEdit` → notebook, edit), `mcp__server__action` split into the server and the action's
//!   words (`mcp__slack__send_message` → slack, send, message).
//! - The schema requires `query` only: 2.1.235 lists `max_results` as required too but does not enforce it
//!   (a call without it runs); our pipeline enforces `required`, so we follow 2.1.332 there.

use crate::context::ToolContext;
use crate::profile::{Profile, Switch};
use crate::tool::{Tool, ToolError, ToolOutput, TypedTool};
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

/// Turns tool search on (TS-1), as Claude Code names the switch (`true` / `1`).
pub const ENV_ENABLE_TOOL_SEARCH: &str = "ENABLE_TOOL_SEARCH";
/// The tool's name.
pub const TOOL_SEARCH: &str = "ToolSearch";
/// ToolSearch's default `max_results` (TS-1, measured: "default: 5").
pub const DEFAULT_MAX_RESULTS: usize = 5;
/// The query prefix of an exact selection (TS-1).
pub const SELECT_PREFIX: &str = "select:";
/// The result when nothing matches (TS-1, measured text; not an error).
pub const NO_MATCH: &str = "No matching deferred tools found";
/// The text block that follows a successful ToolSearch's result (measured).
pub const TOOL_LOADED: &str = "Tool loaded.";
/// The tool every request with tool search on carries to keep deferred loading active (measured).
pub const PLACEHOLDER: &str = "DeferredToolPlaceholder";
/// Its description (measured).
pub const PLACEHOLDER_DESCRIPTION: &str =
    "Reserved placeholder that keeps deferred tool loading active; never call this tool.";
/// The first request's text naming the deferred tools (measured), followed by one name a line.
pub const ANNOUNCEMENT: &str = "The following deferred tools are now available via ToolSearch. Their schemas are NOT loaded — calling them directly will fail with InputValidationError. Use ToolSearch with query \"select:<name>[,<name>...]\" to load tool schemas before calling them:";
/// Score of a query term equal to a part of the tool's name (TS-1 keyword scoring).
pub const SCORE_NAME_PART: u32 = 10;
/// Score of a query term contained in a part of the tool's name (TS-1 keyword scoring).
pub const SCORE_NAME_PARTIAL: u32 = 5;
/// Score of a query term that starts a word of the tool's description (TS-1 keyword scoring).
pub const SCORE_DESCRIPTION: u32 = 2;

/// Built-in tools deferred when tool search is on (TS-1: NotebookEdit, AskUserQuestion, WebFetch,
/// WebSearch, plan mode, TodoWrite, Task*, SendMessage, Cron*, worktrees, LSP; plus ScheduleWakeup and
/// Monitor, deferred by the reference).
pub const DEFERRED_BUILTINS: &[&str] = &[
    "AskUserQuestion",
    "CronCreate",
    "CronDelete",
    "CronList",
    "EnterPlanMode",
    "EnterWorktree",
    "ExitPlanMode",
    "ExitWorktree",
    "LSP",
    "Monitor",
    "NotebookEdit",
    "ScheduleWakeup",
    "SendMessage",
    "TaskCreate",
    "TaskGet",
    "TaskList",
    "TaskOutput",
    "TaskStop",
    "TaskUpdate",
    "TodoWrite",
    "WebFetch",
    "WebSearch",
];

/// True for a tool deferred unless it says otherwise: [`DEFERRED_BUILTINS`] and MCP tools (TS-1).
pub fn is_deferred_by_default(name: &str) -> bool {
    name != TOOL_SEARCH && (DEFERRED_BUILTINS.contains(&name) || name.starts_with("mcp__"))
}

/// From 2.1.304 tool search is on unless [`ENV_ENABLE_TOOL_SEARCH`] turns it off (measured by
/// `tool-search.off`: 2.1.303 has no ToolSearch, 2.1.304 defers NotebookEdit and the cron tools). Claude
/// Code does so for a base URL that is not Anthropic's own (first-party sessions kept it off); the lab's
/// stub is such a URL and the built-in runtime speaks to nothing else, so the profile alone decides.
pub const TOOL_SEARCH_BY_DEFAULT: Switch =
    Switch { name: "tool search on by default", since: "2.1.304", probe: "tool-search.off" };

/// True when tool search is on: [`ENV_ENABLE_TOOL_SEARCH`] when the env says yes or no, else the
/// profile ([`TOOL_SEARCH_BY_DEFAULT`]; off for the reference).
pub fn enabled(env: &BTreeMap<String, String>, profile: Profile) -> bool {
    crate::settings::env_flag(env, ENV_ENABLE_TOOL_SEARCH).unwrap_or_else(|| profile.has(&TOOL_SEARCH_BY_DEFAULT))
}

/// A tool ToolSearch can find: what the last request's pool held.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Name.
    pub name: String,
    /// Description (for keyword scoring).
    pub description: String,
    /// Deferred (keyword search only looks at these).
    pub deferred: bool,
}

/// The session's tool-search state: the tools loaded so far and the pool ToolSearch searches.
#[derive(Debug, Default)]
pub struct ToolSearchState {
    loaded: Mutex<BTreeSet<String>>,
    catalogue: Mutex<Vec<Entry>>,
}

impl ToolSearchState {
    /// True once a ToolSearch result referenced `name`.
    pub fn is_loaded(&self, name: &str) -> bool {
        self.loaded.lock().map(|l| l.contains(name)).unwrap_or(false)
    }

    /// How many tools are loaded (the set only grows).
    pub fn loaded_count(&self) -> usize {
        self.loaded.lock().map(|l| l.len()).unwrap_or(0)
    }

    /// Marks tools loaded.
    pub fn load<'a>(&self, names: impl IntoIterator<Item = &'a str>) {
        if let Ok(mut l) = self.loaded.lock() {
            l.extend(names.into_iter().map(str::to_string));
        }
    }

    /// The pool as the last request showed it.
    pub fn catalogue(&self) -> Vec<Entry> {
        self.catalogue.lock().map(|c| c.clone()).unwrap_or_default()
    }

    fn set_catalogue(&self, entries: Vec<Entry>) {
        if let Ok(mut c) = self.catalogue.lock() {
            *c = entries;
        }
    }
}

/// Shapes a request's `tools` array when the pool has ToolSearch (TS-1): unloaded deferred tools are
/// left out, loaded ones get `defer_loading: true`, [`PLACEHOLDER`] goes before the last tool; the pool
/// is recorded for ToolSearch. Without ToolSearch in `tools` they are returned as they are.
pub fn shape_tools(ctx: &ToolContext, tools: Vec<Value>, deferred: impl Fn(&str) -> bool) -> Vec<Value> {
    if !tools.iter().any(|t| t["name"] == TOOL_SEARCH) {
        return tools;
    }
    let state = ctx.session.state::<ToolSearchState>();
    let name_of = |t: &Value| t["name"].as_str().unwrap_or_default().to_string();
    state.set_catalogue(
        tools
            .iter()
            .map(|t| Entry {
                name: name_of(t),
                description: t["description"].as_str().unwrap_or_default().to_string(),
                deferred: deferred(&name_of(t)),
            })
            .collect(),
    );
    let mut out: Vec<Value> = Vec::with_capacity(tools.len() + 1);
    for mut t in tools {
        let name = name_of(&t);
        if deferred(&name) {
            if !state.is_loaded(&name) {
                continue;
            }
            t["defer_loading"] = json!(true);
        }
        out.push(t);
    }
    let placeholder = json!({
        "name": PLACEHOLDER,
        "description": PLACEHOLDER_DESCRIPTION,
        "input_schema": {"type": "object", "properties": {}},
        "defer_loading": true,
    });
    let at = out.len().saturating_sub(1);
    out.insert(at, placeholder);
    out
}

/// The first request's text naming the deferred tools not loaded yet, or `None` (no ToolSearch in the
/// pool, or nothing deferred).
pub fn announcement(names: &[&str]) -> Option<String> {
    if names.is_empty() {
        return None;
    }
    Some(format!("{ANNOUNCEMENT}\n{}", names.join("\n")))
}

/// From Claude Code 2.1.257 the schema [`unloaded_hint`] quotes has a required property's `description`
/// after its other keys (`"notebook_path":{"type":"string","description":…}`; an optional one keeps it
/// first): measured by `tool-search.select` on NotebookEdit, the same in every committed golden from
/// 2.1.257 to 2.1.284 (2.1.252 and 2.1.285 have it first throughout). [`REQUIRED_DESCRIBED_FIRST_AGAIN`]
/// reverts it.
pub const REQUIRED_DESCRIBED_LAST: Switch = Switch {
    name: "ToolSearch: the quoted schema has a required property's description last",
    since: "2.1.257",
    probe: "tool-search.select",
};

/// From 2.1.285 every property's `description` is first again in the quoted schema (reverts
/// [`REQUIRED_DESCRIBED_LAST`]).
pub const REQUIRED_DESCRIBED_FIRST_AGAIN: Switch = Switch {
    name: "ToolSearch: the quoted schema has every description first again (reverts the 2.1.257 order)",
    since: "2.1.285",
    probe: "tool-search.select",
};

/// The paragraph the reference adds to a schema error of a deferred tool that was not loaded (measured).
/// The schema it quotes is not the one the API gets but its validator's JSON Schema form
/// ([`validator_schema`], in the key order of the session's release: [`REQUIRED_DESCRIBED_LAST`]).
pub fn unloaded_hint(name: &str, schema: &Value, profile: Profile) -> String {
    let required_last = profile.has(&REQUIRED_DESCRIBED_LAST) && !profile.has(&REQUIRED_DESCRIBED_FIRST_AGAIN);
    format!(
        "\n\nThis tool's schema was not sent to the API — it was not in the discovered-tool set derived from message history. Without the schema in your prompt, typed parameters (arrays, numbers, booleans) get emitted as strings and the client-side parser rejects them. Load the tool first: call ToolSearch with query \"select:{name}\", then retry this call. For reference, this tool's input schema is: {}",
        // a JSON value always serialises
        serde_json::to_string(&validator_schema(schema, required_last)).unwrap_or_default()
    )
}

/// A tool's API schema as the reference prints it in [`unloaded_hint`] (measured on 2.1.235 for
/// NotebookEdit, `probes/tool-search/select.toml`): `"$schema":
/// "https://json-schema.org/draft/2020-12/schema"` first (the API's has draft-07 last), and in every
/// sub-schema `description` before the other keys, which keep their order; with `required_last`
/// ([`REQUIRED_DESCRIBED_LAST`]) a property an object's `required` names has its `description` after
/// them instead (measured on properties of `type` and `description` alone: where it goes among more
/// keys is zod's order, `{...schema, ...meta}`).
pub fn validator_schema(schema: &Value, required_last: bool) -> Value {
    let mut top = serde_json::Map::new();
    top.insert("$schema".into(), json!("https://json-schema.org/draft/2020-12/schema"));
    if let Value::Object(m) = described(schema, required_last, false) {
        for (k, v) in m {
            if k != "$schema" {
                top.insert(k, v);
            }
        }
        return Value::Object(top);
    }
    schema.clone()
}

/// `v` with `description` first in each schema object, recursively (properties, items, any-/all-/oneOf);
/// last in `v` itself when `last`, and in a property its object requires when `required_last`.
fn described(v: &Value, required_last: bool, last: bool) -> Value {
    let Value::Object(m) = v else { return v.clone() };
    let required: Vec<&str> = match m.get("required") {
        Some(Value::Array(names)) if required_last => names.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    let inner = |x: &Value| described(x, required_last, false);
    let mut out = serde_json::Map::new();
    let description = m.get("description");
    if let (Some(d), false) = (description, last) {
        out.insert("description".into(), d.clone());
    }
    for (k, x) in m {
        let x = match k.as_str() {
            "description" => continue,
            "properties" => match x {
                Value::Object(props) => Value::Object(
                    props
                        .iter()
                        .map(|(n, s)| (n.clone(), described(s, required_last, required.contains(&n.as_str()))))
                        .collect(),
                ),
                _ => x.clone(),
            },
            "$defs" | "definitions" => match x {
                Value::Object(defs) => Value::Object(defs.iter().map(|(n, s)| (n.clone(), inner(s))).collect()),
                _ => x.clone(),
            },
            "items" | "additionalProperties" | "not" => inner(x),
            "anyOf" | "allOf" | "oneOf" => match x {
                Value::Array(xs) => Value::Array(xs.iter().map(inner).collect()),
                _ => x.clone(),
            },
            _ => x.clone(),
        };
        out.insert(k.clone(), x);
    }
    if let (Some(d), true) = (description, last) {
        out.insert("description".into(), d.clone());
    }
    Value::Object(out)
}

/// The parts of a tool name a keyword can match: `mcp__server__action` → server, then the action's
/// words (split at `_` and `-`); otherwise CamelCase words (`NotebookEdit` → notebook, edit). Lowercase.
pub fn name_parts(name: &str) -> Vec<String> {
    if let Some(rest) = name.strip_prefix("mcp__") {
        let (server, action) = rest.split_once("__").unwrap_or((rest, ""));
        let mut parts = vec![server.to_lowercase()];
        parts.extend(action.split(['_', '-']).filter(|p| !p.is_empty()).flat_map(camel_words));
        return parts;
    }
    name.split(['_', '-']).filter(|p| !p.is_empty()).flat_map(camel_words).collect()
}

/// CamelCase words of `s`, lowercase (`getHTTPResponse` → get, http, response).
fn camel_words(s: &str) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    let mut words = Vec::new();
    let mut cur = String::new();
    for (i, &c) in chars.iter().enumerate() {
        let boundary = i > 0
            && c.is_uppercase()
            && (chars[i - 1].is_lowercase()
                || chars[i - 1].is_ascii_digit()
                || (chars[i - 1].is_uppercase() && chars.get(i + 1).is_some_and(|n| n.is_lowercase())));
        if boundary && !cur.is_empty() {
            words.push(std::mem::take(&mut cur));
        }
        cur.extend(c.to_lowercase());
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    words
}

/// A keyword query's score for a tool (0 = no match; see the module doc). `+term` must be in the name.
pub fn score(query: &str, name: &str, description: &str) -> u32 {
    let parts = name_parts(name);
    let lower_name = name.to_lowercase();
    let words: Vec<String> =
        description.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).flat_map(camel_words).collect();
    let mut total = 0;
    for raw in query.split_whitespace() {
        let (required, term) = match raw.strip_prefix('+') {
            Some(t) => (true, t.to_lowercase()),
            None => (false, raw.to_lowercase()),
        };
        if term.is_empty() {
            continue;
        }
        let in_name = if parts.contains(&term) {
            SCORE_NAME_PART
        } else if parts.iter().any(|p| p.contains(&term)) || lower_name.contains(&term) {
            SCORE_NAME_PARTIAL
        } else {
            0
        };
        if required && in_name == 0 {
            return 0;
        }
        let in_description = if words.iter().any(|w| w.starts_with(&term)) { SCORE_DESCRIPTION } else { 0 };
        total += in_name + in_description;
    }
    total
}

/// What a query selects from `catalogue`, in result order (TS-1).
pub fn search(catalogue: &[Entry], query: &str, max_results: usize) -> Vec<String> {
    let query = query.trim();
    if let Some(list) = query.strip_prefix(SELECT_PREFIX) {
        let mut out: Vec<String> = Vec::new();
        for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            if catalogue.iter().any(|e| e.name == name) && !out.iter().any(|o| o == name) {
                out.push(name.to_string());
            }
        }
        return out;
    }
    let mut scored: Vec<(u32, &str)> = catalogue
        .iter()
        .filter(|e| e.deferred)
        .map(|e| (score(query, &e.name, &e.description), e.name.as_str()))
        .filter(|(s, _)| *s > 0)
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
    scored.into_iter().take(max_results).map(|(_, n)| n.to_string()).collect()
}

#[derive(Debug, Deserialize)]
pub struct Args {
    query: String,
    #[serde(default)]
    max_results: Option<f64>,
}

/// The ToolSearch tool (TS-1).
#[derive(Debug, Clone, Copy, Default)]
pub struct ToolSearch;

/// ToolSearch's description, as Claude Code 2.1.235 sends it.
pub const DESCRIPTION: &str = "Fetches full schema definitions for deferred tools so they can be called.\n\nDeferred tools appear by name in <system-reminder> messages. Until fetched, only the name is known — there is no parameter schema, so the tool cannot be invoked. This tool takes a query, matches it against the deferred tool list, and returns the matched tools' complete JSONSchema definitions inside a <functions> block. Once a tool's schema appears in that result, it is callable exactly like any tool defined at the top of the prompt.\n\nResult format: each matched tool appears as one <function>{\"description\": \"...\", \"name\": \"...\", \"parameters\": {...}}</function> line inside the <functions> block — the same encoding as the tool list at the top of this prompt.\n\nQuery forms:\n- \"select:Read,Edit,Grep\" — fetch these exact tools by name\n- \"notebook jupyter\" — keyword search, up to max_results best matches\n- \"+slack send\" — require \"slack\" in the name, rank by remaining terms";

impl TypedTool for ToolSearch {
    const NAME: &'static str = TOOL_SEARCH;
    const DESCRIPTION: &'static str = DESCRIPTION;
    const READ_ONLY: bool = true;
    const DEFER_LOADING: Option<bool> = Some(false);
    type Args = Args;

    fn input_schema(&self) -> Value {
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "query": {"description": "Query to find deferred tools. Use \"select:<tool_name>\" for direct selection, or keywords to search.", "type": "string"},
                "max_results": {"description": "Maximum number of results to return (default: 5)", "default": 5, "type": "number"}
            },
            "required": ["query"],
            "additionalProperties": false
        })
    }

    async fn call(&self, args: Args, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let max = match args.max_results {
            Some(n) if n.is_finite() && n >= 1.0 => n.floor() as usize,
            Some(_) => 1,
            None => DEFAULT_MAX_RESULTS,
        };
        let state = ctx.session.state::<ToolSearchState>();
        let found = search(&state.catalogue(), &args.query, max);
        if found.is_empty() {
            return Ok(ToolOutput::Text(NO_MATCH.into()));
        }
        state.load(found.iter().map(String::as_str));
        if let Some(id) = &ctx.call_id {
            ctx.session.followups.push(id, TOOL_LOADED.into());
        }
        Ok(ToolOutput::Blocks(found.iter().map(|n| json!({"type": "tool_reference", "tool_name": n})).collect()))
    }
}

/// Tool search as an extension of the session (TS-1), installed when ToolSearch is in the pool: deferred
/// tools are left out of `tools[]` until loaded, announced by name in the first request, and a call of an
/// unloaded one is told how to load it. A tool is deferred when it says so ([`Tool::defer_loading`]),
/// else by name ([`is_deferred_by_default`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct Deferral;

impl Deferral {
    fn deferred(rt: &crate::pipeline::Runtime, name: &str) -> bool {
        rt.registry.get(name).is_some_and(|t| t.defer_loading().unwrap_or_else(|| is_deferred_by_default(name)))
    }
}

impl crate::pipeline::Extension for Deferral {
    fn shape_tools(&self, rt: &crate::pipeline::Runtime, tools: Vec<Value>) -> Vec<Value> {
        shape_tools(&rt.ctx, tools, |n| Deferral::deferred(rt, n))
    }

    fn tools_key(&self, rt: &crate::pipeline::Runtime) -> u64 {
        rt.ctx.session.state::<ToolSearchState>().loaded_count() as u64
    }

    fn on_invalid_input(&self, rt: &crate::pipeline::Runtime, tool: &dyn Tool, message: &mut String) {
        if Deferral::deferred(rt, tool.name()) && !rt.ctx.session.state::<ToolSearchState>().is_loaded(tool.name()) {
            // the schema as this session's pool sends it (a version profile's text of the tool)
            message.push_str(&unloaded_hint(tool.name(), &rt.registry.sent_schema(tool), rt.ctx.profile()));
        }
    }

    fn before_request(&self, rt: &crate::pipeline::Runtime, messages: &[Value]) -> Vec<String> {
        if messages.len() != 1 {
            return Vec::new();
        }
        let state = rt.ctx.session.state::<ToolSearchState>();
        let names = rt.registry.names();
        let deferred: Vec<&str> = names
            .into_iter()
            .filter(|n| Deferral::deferred(rt, n) && !state.is_loaded(n) && rt.is_visible(n))
            .collect();
        announcement(&deferred).into_iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, description: &str, deferred: bool) -> Entry {
        Entry { name: name.into(), description: description.into(), deferred }
    }

    fn catalogue() -> Vec<Entry> {
        vec![
            entry("CronCreate", "Schedule a prompt to run at a future time.", true),
            entry("CronDelete", "Cancel a cron job previously scheduled with CronCreate.", true),
            entry("CronList", "List all cron jobs scheduled via CronCreate.", true),
            entry("EnterWorktree", "Creates an isolated git worktree.", true),
            entry("ExitWorktree", "Exit a worktree session.", true),
            entry("NotebookEdit", "Replaces a cell in a Jupyter notebook (.ipynb file).", true),
            entry("Read", "Reads a file from the local filesystem.", false),
            entry("WebFetch", "Fetches content from a URL.", true),
            entry("WebSearch", "Searches the web.", true),
            entry("mcp__slack__send_message", "Post a message to a channel.", true),
            entry("mcp__slack__list_channels", "List the channels of a workspace.", true),
            entry("mcp__github__create_issue", "Open an issue in a repository.", true),
        ]
    }

    #[test]
    fn name_parts_split_camel_case_and_mcp_names() {
        assert_eq!(name_parts("NotebookEdit"), ["notebook", "edit"]);
        assert_eq!(name_parts("LSP"), ["lsp"]);
        assert_eq!(name_parts("getHTTPResponse"), ["get", "http", "response"]);
        assert_eq!(name_parts("mcp__slack__send_message"), ["slack", "send", "message"]);
        assert_eq!(name_parts("mcp__my-server__listItems"), ["my-server", "list", "items"]);
        assert_eq!(name_parts("mcp__bare"), ["bare"]);
    }

    #[test]
    fn select_is_exact_ordered_and_drops_unknown_names() {
        let c = catalogue();
        assert_eq!(search(&c, "select:CronList,NotebookEdit", 5), ["CronList", "NotebookEdit"]);
        assert_eq!(search(&c, "select:cronlist,Nope,WebFetch", 5), ["WebFetch"]);
        assert_eq!(search(&c, "select:Read", 5), ["Read"], "a tool that is not deferred is still referenced");
        assert_eq!(search(&c, "select: WebFetch , WebFetch", 5), ["WebFetch"]);
        assert!(search(&c, "select:", 5).is_empty());
    }

    #[test]
    fn keywords_score_name_parts_before_descriptions() {
        let c = catalogue();
        assert_eq!(search(&c, "notebook jupyter", 5), ["NotebookEdit"]);
        // CronCreate's description does not say "cron": it ranks after the two that do
        assert_eq!(search(&c, "cron", 5), ["CronDelete", "CronList", "CronCreate"]);
        assert_eq!(search(&c, "worktree", 1), ["EnterWorktree"]);
        assert_eq!(search(&c, "exit worktree", 5), ["ExitWorktree", "EnterWorktree"]);
        assert!(search(&c, "zzzz qqqq", 5).is_empty());
        assert!(search(&c, "", 5).is_empty());
        assert!(search(&c, "read", 5).is_empty(), "keyword search looks at deferred tools only");
    }

    #[test]
    fn mcp_names_match_by_server_and_action() {
        let c = catalogue();
        assert_eq!(search(&c, "slack", 5), ["mcp__slack__list_channels", "mcp__slack__send_message"]);
        assert_eq!(search(&c, "slack send", 5)[0], "mcp__slack__send_message");
        assert_eq!(search(&c, "+slack message", 5), ["mcp__slack__send_message", "mcp__slack__list_channels"]);
        assert_eq!(search(&c, "+github issue", 5), ["mcp__github__create_issue"]);
        assert!(search(&c, "+jira issue", 5).is_empty(), "a required term must be in the name");
        assert_eq!(search(&c, "+web fetch", 5), ["WebFetch", "WebSearch"]);
    }

    /// The quoted schema's key order: `description` first everywhere before REQUIRED_DESCRIBED_LAST
    /// (2.1.252), last in a required property from it (2.1.257: `tool-search.select`'s NotebookEdit), first
    /// again from REQUIRED_DESCRIBED_FIRST_AGAIN (2.1.285).
    #[test]
    fn the_quoted_schema_orders_a_required_propertys_description_by_release() {
        let schema = json!({"type": "object", "properties": {
            "path": {"type": "string", "description": "p"},
            "mode": {"type": "string", "enum": ["a"], "description": "m"},
            "list": {"type": "array", "items": {"type": "string", "description": "i"}, "description": "l"}},
            "required": ["path", "list"], "additionalProperties": false});
        let quoted = |v: &str| {
            let hint = unloaded_hint("T", &schema, Profile::at(v).unwrap_or_else(|e| panic!("{e}")));
            hint.rsplit_once("input schema is: ").map(|(_, s)| s.to_string()).unwrap_or_else(|| panic!("{hint}"))
        };
        let first = r#"{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"path":{"description":"p","type":"string"},"mode":{"description":"m","type":"string","enum":["a"]},"list":{"description":"l","type":"array","items":{"description":"i","type":"string"}}},"required":["path","list"],"additionalProperties":false}"#;
        let last = r#"{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"path":{"type":"string","description":"p"},"mode":{"description":"m","type":"string","enum":["a"]},"list":{"type":"array","items":{"description":"i","type":"string"},"description":"l"}},"required":["path","list"],"additionalProperties":false}"#;
        assert_eq!(quoted("2.1.235"), first);
        assert_eq!(quoted("2.1.252"), first);
        assert_eq!(quoted("2.1.257"), last);
        assert_eq!(quoted("2.1.284"), last);
        assert_eq!(quoted("2.1.285"), first);
        assert_eq!(quoted("2.1.333"), first);
    }

    #[test]
    fn deferral_defaults() {
        assert!(is_deferred_by_default("NotebookEdit"));
        assert!(is_deferred_by_default("mcp__slack__send_message"));
        assert!(!is_deferred_by_default("Read"));
        assert!(!is_deferred_by_default(TOOL_SEARCH));
    }
}
