//! The script the stub plays: assistant turns for the main conversation, named conversations (a
//! sub-agent, a teammate) with their own turns and a matcher on the request, and the answers to side
//! requests and `count_tokens`.
//!
//! A script is read from TOML — the `[[turn]]` part of a probe file; the other keys of a probe (`claims`,
//! `[fixture]`, `[[check]]`, …) are left to the harness and ignored here, while everything inside a turn,
//! a conversation and `[stub]` is checked strictly (unknown keys are errors with file:line:col).
//!
//! ```toml
//! id = "grep.max-count"                 # names the ids: toolu_grep_max-count_1, msg_…
//!
//! [stub]
//! count_tokens = 30000                  # the answer of /v1/messages/count_tokens (default: bytes / 4)
//! side_reply = "ok"                     # text of every side request's answer
//! cycle = false                         # true: start over instead of "script exhausted"
//! search_results = [{ title = "Tokio", url = "https://tokio.rs/" }]   # what web_search finds
//! search_text = "Found one."             # a text block after the search result (default: none)
//! strict = true                         # refuse what the real API refuses (crate::validate); false: pairing only
//! header_timeout_ms = 30000             # a request's headers (and a kept-alive connection's idle time)
//! body_timeout_ms = 60000               # a request's body, once its headers are in
//! shutdown_grace_ms = 500               # what open connections get when the stub stops, then cut
//! disconnect_consumes_turn = false      # a stream cut by its client leaves its turn for the retry
//!
//! [[turn]]                              # answer to the 1st main request
//! tool_use = [{ name = "Grep", input = { pattern = "MATCH" } }]
//! [[turn]]
//! text = "done"
//! wait = { conversation = "explorer", served = 1 }   # served only after the sub-agent's 1st turn (Wait)
//!
//! [[conversation]]                      # a sub-agent: requests whose system prompt contains the text
//! name = "explorer"
//! select = { system_contains = "You are an agent for" }
//! [[conversation.turn]]
//! text = "found it"
//! ```
//!
//! Routing: a request goes to the first named conversation whose selector matches; else to the main
//! conversation when it matches the main selector (default: the request carries client tools — server
//! tools such as `web_search` do not count); else it is a side request.
//!
//! Side requests get `side_reply` as one text block, except a request that carries a `web_search_*`
//! server tool (Claude Code's WebSearch and the built-in one send such a request, WEB-2): it is answered
//! as the API answers a search — a `server_tool_use` block (`web_search` with the query, taken from the
//! last user message after `Perform a web search for the query: `), a `web_search_tool_result` block
//! with the `search_results` that pass the tool's `allowed_domains` / `blocked_domains` (a result's host
//! equals a domain or is under it), then `search_text` as a text block if set.

use crate::fault::Fault;
use crate::wire::{ContentBlock, Message, MessagesRequest, StopReason, Usage};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// A script that failed to load: the message carries `file:line:col` when the place is known.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ScriptError(pub String);

/// One scripted assistant turn. Blocks are emitted in the order thinking, text, tool_use.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Turn {
    /// A thinking block first (with a deterministic signature).
    #[serde(default)]
    pub thinking: Option<String>,
    /// A text block.
    #[serde(default)]
    pub text: Option<String>,
    /// Tool calls, in order.
    #[serde(default)]
    pub tool_use: Vec<ToolUseSpec>,
    /// Override of the stop reason (default: tool_use when there are tool calls, else end_turn).
    #[serde(default)]
    pub stop_reason: Option<StopReason>,
    /// Usage override (default: input 100, output = output chars / 4, at least 1).
    #[serde(default)]
    pub usage: Option<UsageSpec>,
    /// Attempts spoiled before the turn is served (see [`crate::fault`]).
    #[serde(default)]
    pub fault: Vec<Fault>,
    /// Slow chunks: delay before each SSE event, in milliseconds.
    #[serde(default)]
    pub delay_ms: u64,
    /// Values the subject made up at run time (a background task id, a file name), taken from the request
    /// this turn answers: name → regex over the text of the messages since the last assistant turn (group 1
    /// if the regex has one, else the whole match). `{{name}}` in any later tool_use input (of any
    /// conversation) is replaced by the value; a name not captured leaves the placeholder as it is.
    #[serde(default)]
    pub capture: BTreeMap<String, String>,
    /// Serve this turn only once a condition holds ([`Wait`]): an event in the run instead of a sleep.
    #[serde(default)]
    pub wait: Option<Wait>,
}

/// Default of [`Wait::timeout_ms`]: a wait that takes this long means the run went wrong.
pub const WAIT_TIMEOUT_MS: u64 = 10_000;
/// Largest [`Wait::timeout_ms`] a script may ask for.
pub const MAX_WAIT_TIMEOUT_MS: u64 = 120_000;

/// `wait = { … }` on a turn: the request this turn answers is held until every condition given holds,
/// then the turn is served; a run sequences its events by what happened, never by the clock.
///
/// ```toml
/// [[turn]]                                  # held until the sub-agent's 1st turn was served
/// wait = { conversation = "slow", served = 1 }
/// [[conversation.turn]]                     # held until the main conversation's 2nd request came
/// wait = { conversation = "main", arrived = 2 }
/// [[turn]]                                  # held until a file exists and holds a text
/// wait = { file = "{cwd}/out.log", contains = "ready", timeout_ms = 5000 }
/// [[turn]]                                  # held until a file is gone
/// wait = { file = "{cwd}/.bashrc", exists = false }
/// ```
///
/// - `file` (+ `contains`): the file exists (and its text contains `contains`); the harness resolves
///   `{cwd}` `{home}` `{sandbox}` …, the stub puts captured values in place of `{{name}}`
///   ([`Turn::capture`]), so a background task's output file can be named. Files are looked at every
///   [`crate::server::WAIT_POLL_MS`] ms.
/// - `file` + `exists = false`: the file is not there (no entry at the path: a dangling symlink is
///   there). For what the subject removes once something happened (its own scratch files after a
///   command ended): a file that never existed holds at once.
/// - `conversation` + `served = N`: N turns of that conversation (`main` or a named one) have been served
///   (the stub began answering them). Waiting on what was *served* also orders the record: the waiting
///   turn is answered after the one it waits for.
/// - `conversation` + `arrived = N`: N requests of that conversation have arrived (served or still held
///   by a wait of their own).
/// - `timeout_ms` (default [`WAIT_TIMEOUT_MS`], at most [`MAX_WAIT_TIMEOUT_MS`]): the bound. Past it the
///   request is answered with an error (a stream's `error` event, else 400) and recorded with violation
///   `wait_timeout` naming the condition; the turn is given back, so the run also shows it unserved. A
///   wait never hangs a run.
///
/// A conversation's turns are served in their order: a turn also waits for the turn before it in its
/// conversation (several requests of one conversation can arrive at once, e.g. ten sub-agents).
/// Spoiled attempts ([`Turn::fault`]) do not wait; the turn's served attempt does. The record keeps
/// what a turn waited for ([`crate::record::Exchange::waited`]), never how long.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Wait {
    /// A file that must exist.
    #[serde(default)]
    pub file: Option<String>,
    /// A text the file must contain.
    #[serde(default)]
    pub contains: Option<String>,
    /// Texts of which the file must contain one (whichever comes: a notification queued, or the call
    /// that would have started it refused).
    #[serde(default)]
    pub contains_any: Option<Vec<String>>,
    /// `false`: the file must not be there instead (default: true).
    #[serde(default)]
    pub exists: Option<bool>,
    /// The conversation `served` / `arrived` count in (`main` or a `[[conversation]]` name).
    #[serde(default)]
    pub conversation: Option<String>,
    /// Turns of `conversation` served at least.
    #[serde(default)]
    pub served: Option<usize>,
    /// Requests of `conversation` arrived at least.
    #[serde(default)]
    pub arrived: Option<usize>,
    /// The bound, in milliseconds.
    #[serde(default)]
    pub timeout_ms: Option<u64>,
}

impl Wait {
    /// The bound.
    pub fn timeout(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.timeout_ms.unwrap_or(WAIT_TIMEOUT_MS))
    }

    /// The texts the file is waited for to contain, one of them (none: the file alone).
    pub fn needles(&self) -> Vec<&str> {
        self.contains.iter().chain(self.contains_any.iter().flatten()).map(String::as_str).collect()
    }

    /// What is waited for, in words (as the record and the transcript show it; captured values appear
    /// as their `{{name}}`, so the words do not vary from run to run).
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(f) = &self.file {
            match (&self.contains, &self.contains_any, self.exists) {
                (_, _, Some(false)) => parts.push(format!("file {f} is gone")),
                (Some(c), _, _) => {
                    parts.push(format!("file {f} contains {}", serde_json::to_string(c).unwrap_or_default()))
                }
                (None, Some(any), _) => {
                    parts.push(format!("file {f} contains one of {}", serde_json::to_string(any).unwrap_or_default()))
                }
                (None, None, _) => parts.push(format!("file {f} exists")),
            }
        }
        if let Some(c) = &self.conversation {
            if let Some(n) = self.served {
                parts.push(format!("conversation {c:?} served {n} turn(s)"));
            }
            if let Some(n) = self.arrived {
                parts.push(format!("conversation {c:?} received {n} request(s)"));
            }
        }
        parts.join(" and ")
    }

    fn problem(&self, conversations: &[&str]) -> Option<String> {
        let counts = self.served.is_some() || self.arrived.is_some();
        if self.contains.is_some() && self.file.is_none() {
            return Some("wait: contains needs a file".into());
        }
        if self.contains_any.is_some() && self.file.is_none() {
            return Some("wait: contains_any needs a file".into());
        }
        if self.contains_any.is_some() && self.contains.is_some() {
            return Some(
                "wait: contains and contains_any exclude each other (put the one text in contains_any)".into(),
            );
        }
        if self.contains_any.as_ref().is_some_and(|a| a.is_empty() || a.iter().any(String::is_empty)) {
            return Some("wait: contains_any needs texts, none of them empty (an empty one holds at once)".into());
        }
        if self.exists.is_some() && self.file.is_none() {
            return Some("wait: exists needs a file".into());
        }
        if self.exists == Some(false) && (self.contains.is_some() || self.contains_any.is_some()) {
            return Some(
                "wait: exists = false and contains exclude each other (a file that is gone holds no text)".into(),
            );
        }
        if self.file.is_none() && !counts {
            return Some("wait needs a condition: file (+ contains), or conversation + served / arrived".into());
        }
        if counts != self.conversation.is_some() {
            return Some(
                "wait: served / arrived count in a conversation: give conversation and served or arrived".into(),
            );
        }
        if let Some(c) = &self.conversation {
            if !conversations.contains(&c.as_str()) {
                return Some(format!(
                    "wait: conversation {c:?} is not in the script (it has {})",
                    conversations.iter().map(|c| format!("{c:?}")).collect::<Vec<_>>().join(", ")
                ));
            }
        }
        if self.timeout_ms.is_some_and(|t| t == 0 || t > MAX_WAIT_TIMEOUT_MS) {
            return Some(format!("wait: timeout_ms must be 1..={MAX_WAIT_TIMEOUT_MS}"));
        }
        None
    }
}

/// A scripted tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolUseSpec {
    /// Tool name.
    pub name: String,
    /// Tool input; must be a table (default: empty).
    #[serde(default = "empty_object")]
    pub input: Value,
    /// Explicit id (default `toolu_<script>_<n>`); must match `[A-Za-z0-9_-]+` like the real API's.
    #[serde(default)]
    pub id: Option<String>,
}

fn empty_object() -> Value {
    Value::Object(Default::default())
}

/// Usage numbers of a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UsageSpec {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Generated tokens.
    pub output_tokens: u64,
    /// Cache writes.
    #[serde(default)]
    pub cache_creation_input_tokens: u64,
    /// Cache reads.
    #[serde(default)]
    pub cache_read_input_tokens: u64,
}

/// A matcher on a request; every condition given must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Selector {
    /// The system prompt (blocks joined) contains this text.
    #[serde(default)]
    pub system_contains: Option<String>,
    /// The first user message's text contains this text.
    #[serde(default)]
    pub first_user_contains: Option<String>,
    /// The last user message's text contains this text (Claude Code's compaction request appends its
    /// summary prompt as the last user message of the conversation it summarises).
    #[serde(default)]
    pub last_user_contains: Option<String>,
    /// The request's tools include one with this name.
    #[serde(default)]
    pub has_tool: Option<String>,
    /// The request carries (true) or does not carry (false) a non-empty `tools` list.
    #[serde(default)]
    pub has_tools: Option<bool>,
    /// The requested model contains this text.
    #[serde(default)]
    pub model_contains: Option<String>,
}

impl Selector {
    fn is_empty(&self) -> bool {
        *self == Selector::default()
    }

    /// True when every condition holds for `req`.
    pub fn matches(&self, req: &MessagesRequest<'_>) -> bool {
        let tools = req.tool_names();
        self.system_contains.as_ref().is_none_or(|s| req.system_text().contains(s.as_str()))
            && self.first_user_contains.as_ref().is_none_or(|s| req.first_user_text().contains(s.as_str()))
            && self.last_user_contains.as_ref().is_none_or(|s| req.last_user_text().contains(s.as_str()))
            && self.has_tool.as_ref().is_none_or(|t| tools.contains(&t.as_str()))
            && self.has_tools.is_none_or(|want| want != tools.is_empty())
            && self.model_contains.as_ref().is_none_or(|m| req.model().contains(m.as_str()))
    }
}

/// A named conversation with its own cursor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Conversation {
    /// Name, used in ids and in the record.
    pub name: String,
    /// Which requests belong to it.
    pub select: Selector,
    /// Its turns.
    #[serde(default, rename = "turn")]
    pub turns: Vec<Turn>,
    /// It may not happen at all: while none of its requests came, its turns do not count as unserved
    /// ([`crate::server::Stub::progress`] reports it as 0 of 0); once one came, every turn must be served. For
    /// what a subject does only on some versions (Claude Code's compaction request).
    #[serde(default)]
    pub optional: bool,
    /// Its turns start over when they run out, instead of "script exhausted": for what a subject may do
    /// any number of times on some versions (Claude Code compacting again after each figure over its
    /// threshold). Its progress counts each round's turns once.
    #[serde(default)]
    pub repeat: bool,
}

/// `[stub]`: answers that are not turns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StubSettings {
    /// The `input_tokens` answered by count_tokens; default: request bytes / 4, rounded up.
    #[serde(default)]
    pub count_tokens: Option<u64>,
    /// Text of the answer to every side request.
    #[serde(default = "default_side_reply")]
    pub side_reply: String,
    /// Which requests are the main conversation (default: `has_tools = true`).
    #[serde(default)]
    pub main: Option<Selector>,
    /// Start every conversation over when its turns run out, instead of answering "script exhausted"
    /// (for benchmarks and soak runs; off by default so a probe cannot run past its script unseen).
    #[serde(default)]
    pub cycle: bool,
    /// What a `web_search` server tool finds (the search provider of WEB-2), in order.
    #[serde(default)]
    pub search_results: Vec<SearchResult>,
    /// A text block the search answer ends with (default: none).
    #[serde(default)]
    pub search_text: Option<String>,
    /// Refuse what the real API refuses (see [`crate::validate`]); `false` keeps only the pairing rule,
    /// for probes that want a lenient stub. Default true.
    #[serde(default = "yes")]
    pub strict: bool,
    /// Milliseconds a connection may take to send a request's headers (also the longest idle time of a
    /// kept-alive connection). Default [`crate::http::HEADER_READ_TIMEOUT_MS`].
    #[serde(default = "default_header_timeout_ms")]
    pub header_timeout_ms: u64,
    /// Milliseconds a request may take to send its body once its headers are in. Default
    /// [`crate::http::BODY_READ_TIMEOUT_MS`].
    #[serde(default = "default_body_timeout_ms")]
    pub body_timeout_ms: u64,
    /// Milliseconds open connections get to finish when the stub stops; then they are cut. Default
    /// [`crate::http::SHUTDOWN_GRACE_MS`].
    #[serde(default = "default_shutdown_grace_ms")]
    pub shutdown_grace_ms: u64,
    /// A stream whose client disconnected before its end consumes its turn (true), or leaves it for the
    /// next request, so a retry gets the same turn (false, the default).
    #[serde(default)]
    pub disconnect_consumes_turn: bool,
    /// Load deferred tools first: when the main conversation's first request offers `ToolSearch` but not
    /// every tool the main turns call, the stub answers it with a prelude — one `ToolSearch` call with
    /// `select:` and the missing names — and plays turn 1 to the request after. A script whose own turns
    /// call ToolSearch gets no prelude. The prelude is recorded (`prelude: true`, no turn number), so it
    /// shows in transcripts and counts neither as a turn nor as a scripted tool_use. Off by default; the
    /// lab turns it on for real agent binaries, whose versions defer different tools, unless the probe
    /// says `load_deferred = false` (a probe about deferral itself).
    #[serde(default)]
    pub load_deferred: Option<bool>,
}

impl Default for StubSettings {
    fn default() -> Self {
        StubSettings {
            count_tokens: None,
            side_reply: default_side_reply(),
            main: None,
            cycle: false,
            load_deferred: None,
            search_results: Vec::new(),
            search_text: None,
            strict: true,
            header_timeout_ms: default_header_timeout_ms(),
            body_timeout_ms: default_body_timeout_ms(),
            shutdown_grace_ms: default_shutdown_grace_ms(),
            disconnect_consumes_turn: false,
        }
    }
}

fn yes() -> bool {
    true
}

fn default_header_timeout_ms() -> u64 {
    crate::http::HEADER_READ_TIMEOUT_MS
}

fn default_body_timeout_ms() -> u64 {
    crate::http::BODY_READ_TIMEOUT_MS
}

fn default_shutdown_grace_ms() -> u64 {
    crate::http::SHUTDOWN_GRACE_MS
}

/// One hit of the scripted search provider: becomes a `web_search_result` block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchResult {
    /// Page title.
    pub title: String,
    /// Page URL (its host is what `allowed_domains` / `blocked_domains` filter on).
    pub url: String,
    /// `page_age` as the API sends it (e.g. `"2 days ago"`; default null).
    #[serde(default)]
    pub page_age: Option<String>,
}

/// The prefix both WebSearch implementations put before the query in the search side request.
pub const SEARCH_PROMPT_PREFIX: &str = "Perform a web search for the query: ";

/// True when `host` is `domain` or a subdomain of it (case-insensitive, a leading `www.` or `*.` of
/// the domain ignored).
pub fn host_in_domain(host: &str, domain: &str) -> bool {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    let d = domain.trim().trim_end_matches('.').to_ascii_lowercase();
    let d = d.strip_prefix("*.").unwrap_or(&d);
    !d.is_empty() && (host == d || host.ends_with(&format!(".{d}")))
}

/// The host of an absolute URL (`https://a.b:8/x` → `a.b`), without parsing more than that.
pub fn url_host(url: &str) -> Option<&str> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if authority.starts_with('[') {
        authority.split_inclusive(']').next()?
    } else {
        authority.split(':').next()?
    };
    (!host.is_empty()).then_some(host)
}

fn default_side_reply() -> String {
    "ok".into()
}

/// The name of the main conversation in ids and records.
pub const MAIN: &str = "main";

/// A loaded script.
#[derive(Debug, Clone, PartialEq)]
pub struct Script {
    /// Id used in message and tool_use ids (sanitised to `[A-Za-z0-9_-]`).
    pub id: String,
    /// Main conversation turns.
    pub turns: Vec<Turn>,
    /// Named conversations, tried in order before the main one.
    pub conversations: Vec<Conversation>,
    /// Side and count_tokens answers.
    pub stub: StubSettings,
}

/// The file form: only the keys the stub plays; a probe file's other keys are ignored here.
#[derive(Debug, Deserialize)]
struct ScriptFile {
    #[serde(default)]
    id: Option<String>,
    #[serde(default, rename = "turn")]
    turns: Vec<Turn>,
    #[serde(default, rename = "conversation")]
    conversations: Vec<Conversation>,
    #[serde(default)]
    stub: StubSettings,
}

/// Where a request goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// The main conversation.
    Main,
    /// The named conversation at this index.
    Named(usize),
    /// A side request.
    Side,
}

impl Route {
    /// The play's cursor of a routed conversation (the one mapping of routes to cursors): 0 for the main
    /// conversation, i + 1 for the i-th named one, None for a side request.
    pub fn slot(self) -> Option<usize> {
        match self {
            Route::Main => Some(0),
            Route::Named(i) => Some(i + 1),
            Route::Side => None,
        }
    }

    /// The route of cursor `slot` ([`Route::slot`]'s inverse).
    pub fn of_slot(slot: usize) -> Route {
        match slot {
            0 => Route::Main,
            n => Route::Named(n - 1),
        }
    }
}

impl Script {
    /// A script of main turns only.
    pub fn new(id: &str, turns: Vec<Turn>) -> Result<Script, ScriptError> {
        let s = Script { id: sanitize_id(id), turns, conversations: Vec::new(), stub: StubSettings::default() };
        s.validate()?;
        Ok(s)
    }

    /// Parses TOML text; `origin` names the file in errors.
    pub fn from_toml(origin: &str, text: &str) -> Result<Script, ScriptError> {
        let file: ScriptFile = toml::from_str(text).map_err(|e| {
            let msg = e.message().trim_end().to_string();
            match e.span() {
                Some(span) => {
                    let (line, col) = line_col(text, span.start);
                    ScriptError(format!("{origin}:{line}:{col}: {msg}"))
                }
                None => ScriptError(format!("{origin}: {msg}")),
            }
        })?;
        let id = file
            .id
            .clone()
            .unwrap_or_else(|| Path::new(origin).file_stem().and_then(|s| s.to_str()).unwrap_or("script").to_string());
        Script::from_parts(origin, &id, file.turns, file.conversations, file.stub)
    }

    /// A script of turns, conversations and stub settings already read (a probe file's, parsed once by
    /// its parser), validated as [`Script::from_toml`] validates; errors start with `origin`.
    pub fn from_parts(
        origin: &str,
        id: &str,
        turns: Vec<Turn>,
        conversations: Vec<Conversation>,
        stub: StubSettings,
    ) -> Result<Script, ScriptError> {
        let s = Script { id: sanitize_id(id), turns, conversations, stub };
        s.validate().map_err(|e| ScriptError(format!("{origin}: {}", e.0)))?;
        Ok(s)
    }

    /// Reads and parses a file.
    pub fn load(path: &Path) -> Result<Script, ScriptError> {
        let text =
            std::fs::read_to_string(path).map_err(|e| ScriptError(format!("{}: cannot read: {e}", path.display())))?;
        Script::from_toml(&path.display().to_string(), &text)
    }

    fn validate(&self) -> Result<(), ScriptError> {
        let mut names = std::collections::BTreeSet::new();
        for c in &self.conversations {
            if c.name == MAIN || !names.insert(c.name.as_str()) {
                return Err(ScriptError(format!("conversation name {:?} is used twice (or is \"main\")", c.name)));
            }
            if c.select.is_empty() {
                return Err(ScriptError(format!(
                    "conversation {:?} has an empty select: it would take every request",
                    c.name
                )));
            }
        }
        let all =
            std::iter::once((MAIN, &self.turns)).chain(self.conversations.iter().map(|c| (c.name.as_str(), &c.turns)));
        let mut ids = std::collections::BTreeSet::new();
        let names: Vec<&str> =
            std::iter::once(MAIN).chain(self.conversations.iter().map(|c| c.name.as_str())).collect();
        for (conv, turns) in all {
            for (t, turn) in turns.iter().enumerate() {
                let place = format!("conversation {conv:?}, turn {}", t + 1);
                if turn.thinking.is_none() && turn.text.is_none() && turn.tool_use.is_empty() {
                    return Err(ScriptError(format!("{place}: a turn needs text, thinking or tool_use")));
                }
                if self.stub.strict && turn.text.as_deref().is_some_and(|t| t.trim().is_empty()) {
                    return Err(ScriptError(format!(
                        "{place}: an empty text would come back in the client's next request, which the strict stub refuses like the API (`messages: text content blocks must be non-empty`); leave text out or set [stub] strict = false"
                    )));
                }
                for f in &turn.fault {
                    f.validate().map_err(|e| ScriptError(format!("{place}: {e}")))?;
                }
                if let Some(p) = turn.wait.as_ref().and_then(|w| w.problem(&names)) {
                    return Err(ScriptError(format!("{place}: {p}")));
                }
                for (name, re) in &turn.capture {
                    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
                        return Err(ScriptError(format!("{place}: capture name {name:?} must match [A-Za-z0-9_-]+")));
                    }
                    regex::Regex::new(re)
                        .map_err(|e| ScriptError(format!("{place}: capture {name:?}: bad regex: {e}")))?;
                }
                for u in &turn.tool_use {
                    if !u.input.is_object() {
                        return Err(ScriptError(format!("{place}: tool_use {:?}: input must be a table", u.name)));
                    }
                    if let Some(id) = &u.id {
                        if id.is_empty() || !id.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
                            return Err(ScriptError(format!("{place}: tool_use id {id:?} must match [A-Za-z0-9_-]+")));
                        }
                        if !ids.insert(id.clone()) {
                            return Err(ScriptError(format!("{place}: tool_use id {id:?} is used twice")));
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Where `req` goes (see the module doc).
    pub fn route(&self, req: &MessagesRequest<'_>) -> Route {
        if let Some(i) = self.conversations.iter().position(|c| c.select.matches(req)) {
            return Route::Named(i);
        }
        let main = match &self.stub.main {
            Some(sel) => sel.matches(req),
            None => !req.client_tool_names().is_empty(),
        };
        if main {
            Route::Main
        } else {
            Route::Side
        }
    }

    /// The cursor slot of a conversation by name: 0 for `main`, 1.. for the named ones in order.
    pub fn slot_of(&self, name: &str) -> Option<usize> {
        if name == MAIN {
            return Route::Main.slot();
        }
        self.conversations.iter().position(|c| c.name == name).and_then(|i| Route::Named(i).slot())
    }

    /// Name and turns of a routed conversation (`None` for side requests).
    pub fn conversation(&self, route: Route) -> Option<(&str, &[Turn])> {
        match route {
            Route::Main => Some((MAIN, &self.turns)),
            Route::Named(i) => self.conversations.get(i).map(|c| (c.name.as_str(), c.turns.as_slice())),
            Route::Side => None,
        }
    }

    /// The assistant message of turn `index` (0-based) of a conversation, answering `model`.
    /// Ids: `msg_<script>_<conversation>_<turn>`; tool_use `toolu_<script>_<n>` in the main conversation
    /// and `toolu_<script>_<conversation>_<n>` in named ones, n counting the conversation's tool calls
    /// from 1 across its turns.
    /// `captures` are the values taken so far (see [`Turn::capture`]), put in place of `{{name}}`.
    pub fn message(
        &self,
        route: Route,
        index: usize,
        model: &str,
        captures: &BTreeMap<String, String>,
    ) -> Option<Message> {
        self.message_in_lap(route, index, 0, model, captures)
    }

    /// The prelude answering a first request that offers `offered` tools (see
    /// [`StubSettings::load_deferred`]), or `None` when none is due: the main turns' tools the request
    /// lacks, loaded with one `ToolSearch` `select:` call (id `toolu_<script>_prelude_1`).
    pub fn prelude(&self, offered: &[&str], model: &str) -> Option<Message> {
        const TOOL_SEARCH: &str = "ToolSearch";
        let called: Vec<&str> = self.turns.iter().flat_map(|t| t.tool_use.iter().map(|u| u.name.as_str())).collect();
        if self.stub.load_deferred != Some(true) || !offered.contains(&TOOL_SEARCH) || called.contains(&TOOL_SEARCH) {
            return None;
        }
        let mut missing: Vec<&str> = called.into_iter().filter(|n| !offered.contains(n)).collect();
        missing.dedup();
        let mut seen = Vec::new();
        missing.retain(|n| {
            if seen.contains(n) {
                false
            } else {
                seen.push(*n);
                true
            }
        });
        if missing.is_empty() {
            return None;
        }
        let mut m = self.message(Route::Main, 0, model, &BTreeMap::new())?;
        m.id = format!("msg_{}_main_prelude", self.id);
        m.content = vec![ContentBlock::ToolUse {
            id: format!("toolu_{}_prelude_1", self.id),
            name: TOOL_SEARCH.into(),
            input: serde_json::json!({"query": format!("select:{}", missing.join(",")), "max_results": missing.len()}),
        }];
        m.stop_reason = Some(StopReason::ToolUse);
        Some(m)
    }

    /// [`Script::message`] on lap `lap` (0-based) of a `[stub] cycle` script: tool_use ids go on counting
    /// across laps (lap L's n is L × the conversation's tool calls + its index), so a conversation that
    /// replays its history never repeats an id — the API refuses repeated ids.
    pub fn message_in_lap(
        &self,
        route: Route,
        index: usize,
        lap: usize,
        model: &str,
        captures: &BTreeMap<String, String>,
    ) -> Option<Message> {
        let (name, turns) = self.conversation(route)?;
        let turn = turns.get(index)?;
        let per_lap: usize = turns.iter().map(|t| t.tool_use.len()).sum();
        let before: usize = lap * per_lap + turns[..index].iter().map(|t| t.tool_use.len()).sum::<usize>();
        let prefix = if name == MAIN { self.id.clone() } else { format!("{}_{}", self.id, sanitize_id(name)) };
        let mut content = Vec::new();
        if let Some(t) = &turn.thinking {
            content.push(ContentBlock::Thinking {
                thinking: t.clone(),
                signature: format!("stub-signature-{}-{}-{}", self.id, sanitize_id(name), index + 1),
            });
        }
        if let Some(t) = &turn.text {
            content.push(ContentBlock::Text { text: t.clone() });
        }
        for (k, u) in turn.tool_use.iter().enumerate() {
            let mut input = u.input.clone();
            if !captures.is_empty() {
                substitute(&mut input, captures);
            }
            content.push(ContentBlock::ToolUse {
                id: u.id.clone().unwrap_or_else(|| format!("toolu_{prefix}_{}", before + k + 1)),
                name: u.name.clone(),
                input,
            });
        }
        let stop = turn.stop_reason.unwrap_or(if turn.tool_use.is_empty() {
            StopReason::EndTurn
        } else {
            StopReason::ToolUse
        });
        let usage = match turn.usage {
            Some(u) => Usage {
                input_tokens: u.input_tokens,
                output_tokens: u.output_tokens,
                cache_creation_input_tokens: u.cache_creation_input_tokens,
                cache_read_input_tokens: u.cache_read_input_tokens,
            },
            None => Usage { input_tokens: 100, output_tokens: estimate_output_tokens(&content), ..Usage::default() },
        };
        Some(Message {
            id: format!("msg_{}_{}_{}", self.id, sanitize_id(name), index + 1),
            kind: "message".into(),
            role: "assistant".into(),
            model: model.to_string(),
            content,
            stop_reason: Some(stop),
            stop_sequence: None,
            usage,
        })
    }

    /// The answer to the `n`-th side request (1-based) `req`: a search answer when it carries a
    /// `web_search_*` server tool (see the module doc), else [`Script::side_message`].
    pub fn side_answer(&self, n: u64, req: &MessagesRequest<'_>) -> Message {
        let search = req
            .server_tools()
            .into_iter()
            .find(|t| t.get("type").and_then(Value::as_str).is_some_and(|k| k.starts_with("web_search")));
        let Some(tool) = search else {
            return self.side_message(n, req.model());
        };
        let domains = |key: &str| -> Vec<String> {
            tool.get(key)
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
                .unwrap_or_default()
        };
        let (allowed, blocked) = (domains("allowed_domains"), domains("blocked_domains"));
        let text = req.last_user_text();
        let query = text.strip_prefix(SEARCH_PROMPT_PREFIX).unwrap_or(&text).to_string();
        let hits: Vec<Value> = self
            .stub
            .search_results
            .iter()
            .filter(|r| {
                let host = url_host(&r.url).unwrap_or_default();
                (allowed.is_empty() || allowed.iter().any(|d| host_in_domain(host, d)))
                    && !blocked.iter().any(|d| host_in_domain(host, d))
            })
            .map(|r| {
                serde_json::json!({
                    "type": "web_search_result",
                    "title": r.title,
                    "url": r.url,
                    "encrypted_content": format!("stub-encrypted-{}", sanitize_id(&r.url)),
                    "page_age": r.page_age,
                })
            })
            .collect();
        let id = format!("srvtoolu_{}_{n}", self.id);
        let mut content = vec![
            ContentBlock::ServerToolUse {
                id: id.clone(),
                name: "web_search".into(),
                input: serde_json::json!({ "query": query }),
            },
            ContentBlock::WebSearchToolResult { tool_use_id: id, content: Value::Array(hits) },
        ];
        if let Some(t) = &self.stub.search_text {
            content.push(ContentBlock::Text { text: t.clone() });
        }
        Message {
            id: format!("msg_{}_side_{n}", self.id),
            kind: "message".into(),
            role: "assistant".into(),
            model: req.model().to_string(),
            usage: Usage { input_tokens: 100, output_tokens: estimate_output_tokens(&content), ..Usage::default() },
            content,
            stop_reason: Some(StopReason::EndTurn),
            stop_sequence: None,
        }
    }

    /// The text answer to the `n`-th side request (1-based).
    pub fn side_message(&self, n: u64, model: &str) -> Message {
        let content = vec![ContentBlock::Text { text: self.stub.side_reply.clone() }];
        Message {
            id: format!("msg_{}_side_{n}", self.id),
            kind: "message".into(),
            role: "assistant".into(),
            model: model.to_string(),
            usage: Usage { input_tokens: 100, output_tokens: estimate_output_tokens(&content), ..Usage::default() },
            content,
            stop_reason: Some(StopReason::EndTurn),
            stop_sequence: None,
        }
    }
}

fn estimate_output_tokens(content: &[ContentBlock]) -> u64 {
    let chars: usize = content
        .iter()
        .map(|b| match b {
            ContentBlock::Text { text } => text.chars().count(),
            ContentBlock::Thinking { thinking, .. } => thinking.chars().count(),
            ContentBlock::ToolUse { name, input, .. } | ContentBlock::ServerToolUse { name, input, .. } => {
                name.len() + input.to_string().len()
            }
            ContentBlock::WebSearchToolResult { .. } => 0,
        })
        .sum();
    (chars as u64).div_ceil(4).max(1)
}

/// `[A-Za-z0-9_-]` only, other characters become `_` (ids must pass the real API's id pattern).
pub fn sanitize_id(s: &str) -> String {
    let out: String =
        s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect();
    if out.is_empty() {
        "script".into()
    } else {
        out
    }
}

/// 1-based line and column (in characters) of a byte offset.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map(|l| l.chars().count()).unwrap_or(0) + 1;
    (line, col)
}

/// Takes the values of `turn.capture` from the request it answers: each regex is run over the text of the
/// messages after the last assistant message (tool_result contents, text blocks, string contents).
pub fn capture_values(turn: &Turn, request: &Value) -> Vec<(String, String)> {
    if turn.capture.is_empty() {
        return Vec::new();
    }
    let messages = request.get("messages").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let start = messages.iter().rposition(|m| m.get("role").and_then(Value::as_str) == Some("assistant"));
    let mut text = String::new();
    for m in &messages[start.map_or(0, |i| i + 1)..] {
        collect_text(m.get("content").unwrap_or(&Value::Null), &mut text);
    }
    let mut out = Vec::new();
    for (name, pattern) in &turn.capture {
        // validated when the script was loaded
        let Ok(re) = regex::Regex::new(pattern) else { continue };
        if let Some(c) = re.captures(&text) {
            if let Some(m) = c.get(1).or_else(|| c.get(0)) {
                out.push((name.clone(), m.as_str().to_string()));
            }
        }
    }
    out
}

fn collect_text(v: &Value, out: &mut String) {
    match v {
        Value::String(s) => {
            out.push_str(s);
            out.push('\n');
        }
        Value::Array(items) => items.iter().for_each(|i| collect_text(i, out)),
        Value::Object(o) => {
            for key in ["text", "content"] {
                if let Some(x) = o.get(key) {
                    collect_text(x, out);
                }
            }
        }
        _ => {}
    }
}

/// `text` with the captured values put in place of their `{{name}}` (a name not captured stays).
pub fn with_captures(text: &str, captures: &BTreeMap<String, String>) -> String {
    let mut out = text.to_string();
    for (name, value) in captures {
        out = out.replace(&format!("{{{{{name}}}}}"), value);
    }
    out
}

fn substitute(v: &mut Value, captures: &BTreeMap<String, String>) {
    match v {
        Value::String(s) if s.contains("{{") => {
            for (name, value) in captures {
                *s = s.replace(&format!("{{{{{name}}}}}"), value);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|i| substitute(i, captures)),
        Value::Object(o) => o.values_mut().for_each(|i| substitute(i, captures)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unknown_key_in_a_turn_has_a_place() {
        let err = Script::from_toml("p.toml", "id = \"x\"\n[[turn]]\ntext = \"a\"\ntxet = \"b\"\n").err();
        let msg = err.map(|e| e.0).unwrap_or_default();
        assert!(msg.starts_with("p.toml:4:1: unknown field `txet`"), "{msg}");
    }

    #[test]
    fn probe_keys_outside_the_script_are_ignored() {
        let s = Script::from_toml(
            "p.toml",
            "id = \"a.b\"\nclaims = [\"X\"]\n[fixture]\nfiles.\"f\" = \"1\"\n[[turn]]\ntext = \"t\"\n",
        );
        let s = s.map_err(|e| e.0);
        assert_eq!(s.as_ref().map(|s| s.id.as_str()), Ok("a_b"));
    }

    #[test]
    fn tool_ids_count_across_turns() {
        let turns = vec![
            Turn { tool_use: vec![spec("A"), spec("B")], ..Turn::default() },
            Turn { tool_use: vec![spec("C")], ..Turn::default() },
        ];
        let s = Script::new("p", turns).map_err(|e| e.0);
        let m = s.ok().and_then(|s| s.message(Route::Main, 1, "m", &BTreeMap::new()));
        match m.as_ref().map(|m| &m.content[0]) {
            Some(ContentBlock::ToolUse { id, .. }) => assert_eq!(id, "toolu_p_3"),
            other => panic!("{other:?}"),
        }
        assert_eq!(m.and_then(|m| m.stop_reason), Some(StopReason::ToolUse));
    }

    #[test]
    fn routing_prefers_named_conversations_then_tools() {
        let text = "[[turn]]\ntext = \"m\"\n[[conversation]]\nname = \"sub\"\nselect = { system_contains = \"SUB\" }\n[[conversation.turn]]\ntext = \"s\"\n";
        let s = Script::from_toml("p.toml", text).map_err(|e| e.0);
        let Ok(s) = s else { panic!("{s:?}") };
        let main = json!({"model": "m", "max_tokens": 1, "messages": [], "tools": [{"name": "Read"}]});
        let sub = json!({"model": "m", "max_tokens": 1, "messages": [], "system": [{"type": "text", "text": "I am SUB"}], "tools": [{"name": "Read"}]});
        let side = json!({"model": "m", "max_tokens": 1, "messages": []});
        let r = |v: &Value| MessagesRequest::parse(v).map(|r| s.route(&r)).ok();
        assert_eq!(r(&main), Some(Route::Main));
        assert_eq!(r(&sub), Some(Route::Named(0)));
        assert_eq!(r(&side), Some(Route::Side));
    }

    #[test]
    fn a_search_request_is_a_side_request_answered_from_the_script() {
        let text = "[stub]\nsearch_results = [{ title = \"A\", url = \"https://docs.a.test/x\" }, { title = \"B\", url = \"https://b.test/y\" }]\nsearch_text = \"two\"\n[[turn]]\ntext = \"m\"\n";
        let s = Script::from_toml("p.toml", text).map_err(|e| e.0);
        let Ok(s) = s else { panic!("{s:?}") };
        let body = json!({"model": "m", "max_tokens": 1,
            "messages": [{"role": "user", "content": [{"type": "text", "text": "Perform a web search for the query: rust"}]}],
            "tools": [{"type": "web_search_20250305", "name": "web_search", "max_uses": 8, "blocked_domains": ["b.test"]}]});
        let req = MessagesRequest::parse(&body).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.route(&req), Route::Side);
        let m = s.side_answer(1, &req);
        assert_eq!(m.content.len(), 3);
        match (&m.content[0], &m.content[1]) {
            (
                ContentBlock::ServerToolUse { id, input, .. },
                ContentBlock::WebSearchToolResult { tool_use_id, content },
            ) => {
                assert_eq!(input, &json!({"query": "rust"}));
                assert_eq!(id, tool_use_id);
                assert_eq!(content.as_array().map(Vec::len), Some(1));
                assert_eq!(content[0]["url"], "https://docs.a.test/x");
            }
            other => panic!("{other:?}"),
        }
        assert!(host_in_domain("docs.a.test", "a.test") && !host_in_domain("nota.test", "a.test"));
        assert_eq!(url_host("https://u:p@h.test:8/x?y"), Some("h.test"));
    }

    #[test]
    fn empty_turn_and_bad_id_are_refused() {
        assert!(Script::from_toml("p", "[[turn]]\n").is_err());
        assert!(Script::from_toml("p", "[[turn]]\ntool_use = [{name = \"A\", id = \"a b\"}]\n").is_err());
    }

    #[test]
    fn line_col_counts_from_one() {
        assert_eq!(line_col("ab\ncd", 4), (2, 2));
        assert_eq!(line_col("", 0), (1, 1));
    }

    fn spec(name: &str) -> ToolUseSpec {
        ToolUseSpec { name: name.into(), input: json!({}), id: None }
    }
}
