//! Transcripts: the stub's record of a run seen as a conversation (requests, responses, tool_results,
//! side traffic), rendered as readable text for golden files; large stable parts (each tool's schema and
//! description, the system prompt) are stored once in a blob store by SHA-256 and referenced by hash.
//!
//! - [`normalise`]: the ordered steps that remove what varies between runs and machines;
//! - [`golden`]: golden files (insta's `.snap` format) and the blob store;
//! - [`review`]: the pending goldens (`.snap.new`) `cargo test` leaves, accepted or rejected.

pub mod diff;
pub mod golden;
pub mod normalise;
pub mod review;
pub mod secrets;
pub mod wire;

use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use stub_messages::script::{Route, Script, MAIN};
use stub_messages::wire::ContentBlock;
use stub_messages::{Exchange, ExchangeKind, Requests};

/// The record of a run, with the script that produced it.
#[derive(Debug, Clone, Copy)]
pub struct View<'a> {
    /// Exchanges in the order the stub answered them (arrival order, except where turns waited).
    pub exchanges: &'a [Exchange],
    /// The script (placeholders resolved).
    pub script: &'a Script,
}

impl<'a> View<'a> {
    /// The index of the main-conversation request the N-th turn (1-based) answered: the exchange that
    /// served it.
    pub fn request_index(&self, n: usize) -> Option<usize> {
        self.exchanges.iter().position(|e| {
            e.kind == ExchangeKind::Turn
                && e.conversation.as_deref() == Some(MAIN)
                && e.turn == Some(n - 1)
                && e.fault.is_none()
                && e.status == 200
        })
    }

    /// The main-conversation request the N-th turn (1-based) answered: the exchange that served it (its
    /// request in the stored form: [`View::requests`] answers for the whole).
    pub fn request(&self, n: usize) -> Option<&'a Exchange> {
        self.request_index(n).map(|i| &self.exchanges[i])
    }

    /// The requests whole, as far as asked ([`Requests`]: fields and messages through the requests they
    /// are stored by reference to).
    pub fn requests(&self) -> Requests<'a> {
        Requests::new(self.exchanges)
    }

    /// Ids of the main conversation's scripted tool_uses, in script order.
    pub fn tool_use_ids(&self) -> Vec<String> {
        (0..self.script.turns.len())
            .filter_map(|t| self.script.message(Route::Main, t, "m", &Default::default()))
            .flat_map(|m| m.content)
            .filter_map(|b| match b {
                ContentBlock::ToolUse { id, .. } => Some(id),
                _ => None,
            })
            .collect()
    }

    /// The names of the scripted tool_uses of the main conversation, in order (as the probe wrote them).
    pub fn tool_use_names(&self) -> Vec<String> {
        self.script.turns.iter().flat_map(|t| t.tool_use.iter()).map(|u| u.name.clone()).collect()
    }

    /// The tool_result block answering the N-th scripted tool_use (1-based), from the first request
    /// that carries it.
    pub fn result(&self, n: usize) -> Option<Value> {
        let id = self.tool_use_ids().get(n - 1)?.clone();
        self.results_of(std::slice::from_ref(&id)).pop().flatten()
    }

    /// The tool_result blocks answering the tool_uses `ids`, each from the first request that carries it:
    /// one pass over the new part of each request (a message a request keeps from an earlier one was new
    /// there, with the same bytes).
    pub fn results_of(&self, ids: &[String]) -> Vec<Option<Value>> {
        let mut wanted: std::collections::HashMap<&str, Vec<usize>> = std::collections::HashMap::new();
        for (i, id) in ids.iter().enumerate() {
            wanted.entry(id.as_str()).or_default().push(i);
        }
        let mut out: Vec<Option<Value>> = vec![None; ids.len()];
        let mut missing = ids.len();
        let requests = self.requests();
        for (i, e) in self.exchanges.iter().enumerate() {
            if missing == 0 {
                break;
            }
            if e.kind != ExchangeKind::Turn {
                continue;
            }
            for m in requests.new_messages(i) {
                for b in m.get("content").and_then(Value::as_array).into_iter().flatten() {
                    if b.get("type").and_then(Value::as_str) != Some("tool_result") {
                        continue;
                    }
                    let Some(id) = b.get("tool_use_id").and_then(Value::as_str) else { continue };
                    // every call the block answers (a script may name an id twice), from its first carrier
                    for slot in wanted.remove(id).unwrap_or_default() {
                        out[slot] = Some(b.clone());
                        missing -= 1;
                    }
                }
            }
        }
        out
    }
}

/// The words of a tool_result's content for a reader: [`result_text`], except that a tool reference
/// names its tool (`[tool_reference CronCreate]`, where `result_text` keeps the `[tool_reference ?]`
/// the committed fingerprints were made with). What exploration compares and publishes.
pub fn result_words(block: &Value) -> String {
    match wire::ToolResult::read(block).map(|r| r.content) {
        Ok(wire::Content::Parts(parts)) if parts.iter().any(|p| matches!(p, wire::Part::ToolReference(_))) => parts
            .iter()
            .map(|p| match p {
                wire::Part::Text(t) => t.to_string(),
                wire::Part::ToolReference(name) => format!("[tool_reference {name}]"),
                wire::Part::Media { kind, media_type, .. } => format!("[{kind} {}]", media_type.unwrap_or("?")),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => result_text(block),
    }
}

/// The text of a tool_result's content: the string, or its blocks (text as is, others as
/// `[image image/png]` / `[document application/pdf]`) joined by newlines.
pub fn result_text(block: &Value) -> String {
    match block.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .map(|p| match p.get("type").and_then(Value::as_str) {
                Some("text") => p.get("text").and_then(Value::as_str).unwrap_or_default().to_string(),
                Some(other) => {
                    format!("[{other} {}]", p.pointer("/source/media_type").and_then(Value::as_str).unwrap_or("?"))
                }
                None => p.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// SHA-256 hex of bytes.
pub fn sha256(bytes: &[u8]) -> String {
    probelab_runtime::fs::hex(&Sha256::digest(bytes))
}

/// Blobs referenced by a rendering: hash → pretty JSON text.
pub type Blobs = BTreeMap<String, String>;

/// Normalises blob text before it is hashed (so machine-specific paths never reach a hash).
pub type Norm<'a> = &'a dyn Fn(&str) -> String;

fn blob(blobs: &mut Blobs, norm: Norm<'_>, v: &Value) -> String {
    let text = norm(&format!("{v:#}\n"));
    let h = sha256(text.as_bytes());
    let short = h[..12].to_string();
    blobs.insert(h, text);
    short
}

/// [`blob`] for the parts every request repeats (each tool's definition, the system prompt): the same
/// text is normalised and hashed once per transcript, not once per request (the normaliser's steps
/// over 25 tool definitions × every request were most of a probe's rendering time).
fn blob_once<'v>(blobs: &mut Blobs, norm: Norm<'_>, seen: &mut Vec<(&'v Value, String)>, v: &'v Value) -> String {
    // found by equality, not by the serialised text: no copy of a 3 KB definition per request
    // the same value first (a tool list kept from an earlier request), then an equal one
    if let Some((_, short)) =
        seen.iter().find(|(s, _)| std::ptr::eq(*s, v)).or_else(|| seen.iter().find(|(s, _)| *s == v))
    {
        return short.clone();
    }
    let short = blob(blobs, norm, v);
    seen.push((v, short.clone()));
    short
}

fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

/// A text as a transcript shows it: each line after `  | ` (an empty line as `  |`).
pub fn indent(text: &str) -> String {
    if text.is_empty() {
        return "  |".into();
    }
    text.split('\n')
        .map(|l| if l.is_empty() { "  |".to_string() } else { format!("  | {l}") })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Tool results longer than this are shown by their first 10 and last 3 lines; the whole text goes to
/// the blob store and its hash into the transcript.
pub const INLINE_RESULT_CHARS: usize = 8192;

/// Tool inputs longer than this go to the blob store (a readable transcript; the hash still pins them).
pub const INLINE_INPUT_CHARS: usize = 4096;

/// A record the renderer cannot read: where it is in the stub's record and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the stub's record, exchange {seq}, {place}: {what}")]
pub struct Malformed {
    /// The exchange's sequence number in the record.
    pub seq: u64,
    /// Where in it (`request 2, message 3, block 1`; `response 2, block 1`).
    pub place: String,
    /// What is wrong ([`wire::Malformed`]'s words).
    pub what: String,
}

fn render_block(b: &Value, out: &mut Vec<String>, blobs: &mut Blobs, norm: Norm<'_>) -> Result<(), wire::Malformed> {
    use wire::{Block, Content, Part};
    match Block::read(b)? {
        Block::ToolResult(r) => {
            let err = if r.is_error { " is_error" } else { "" };
            out.push(format!("tool_result {}{err}:", r.tool_use_id));
            match &r.content {
                Content::Parts(parts) => {
                    for (k, p) in parts.iter().enumerate() {
                        match p {
                            // where a text block ends is a byte the model sees (and the fingerprint
                            // counts): a text that follows another block says so
                            Part::Text(t) if k > 0 => {
                                out.push(format!("  [text block {}]", k + 1));
                                out.push(indent(t))
                            }
                            Part::Text(t) => out.push(indent(t)),
                            // TS-1: ToolSearch answers with references to the tools it loaded
                            Part::ToolReference(name) => out.push(format!("  [tool_reference {name}]")),
                            Part::Media { kind, media_type, data } => {
                                let data = data.unwrap_or_default();
                                out.push(format!(
                                    "  [{kind} {}, {} base64 chars, sha256 {}]",
                                    media_type.unwrap_or("?"),
                                    data.len(),
                                    &sha256(data.as_bytes())[..12]
                                ));
                            }
                        }
                    }
                }
                Content::Text(_) | Content::Empty => {
                    let text = match r.content {
                        Content::Text(t) => t,
                        _ => "",
                    };
                    if text.chars().count() > INLINE_RESULT_CHARS {
                        let lines: Vec<&str> = text.split('\n').collect();
                        let (head, tail) = (lines.len().min(10), lines.len().saturating_sub(10).min(3));
                        out.push(indent(&lines[..head].join("\n")));
                        let h = blob(blobs, norm, &Value::String(text.to_string()));
                        out.push(format!(
                            "  [… {} chars, {} lines in all; whole text in blob {h} …]",
                            text.chars().count(),
                            lines.len()
                        ));
                        if tail > 0 {
                            out.push(indent(&lines[lines.len() - tail..].join("\n")));
                        }
                    } else {
                        out.push(indent(text));
                    }
                }
            }
        }
        Block::Text(t) => out.push(format!("text: {}", quote(t))),
        Block::Thinking(t) => out.push(format!("thinking: {}", quote(t))),
        Block::ToolUse { id, name, input } => {
            let shown = input.to_string();
            let shown =
                if shown.len() > INLINE_INPUT_CHARS { format!("input@{}", blob(blobs, norm, input)) } else { shown };
            out.push(format!("tool_use {id} {name} {shown}"))
        }
        Block::Other(v) => out.push(v.to_string()),
    }
    Ok(())
}

fn content_blocks_of(m: &Value) -> &[Value] {
    m.get("content").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default()
}

/// The message with its tool_result blocks in the order of the calls they answer: a subject that runs
/// calls in parallel sends results in completion order, which varies from run to run and is no decision
/// of the subject's. Other blocks keep their places.
pub fn in_call_order(m: &Value, calls: &[String]) -> Value {
    let blocks = content_blocks_of(m);
    let is_result = |b: &Value| b.get("type").and_then(Value::as_str) == Some("tool_result");
    let mut results: Vec<&Value> = blocks.iter().filter(|b| is_result(b)).collect();
    if results.len() < 2 {
        return m.clone();
    }
    let rank = |b: &Value| {
        let id = b.get("tool_use_id").and_then(Value::as_str).unwrap_or_default();
        calls.iter().position(|c| c == id).unwrap_or(usize::MAX)
    };
    results.sort_by_key(|b| rank(b));
    let mut next = results.into_iter();
    let ordered: Vec<Value> = blocks
        .iter()
        .map(|b| if is_result(b) { next.next().cloned().unwrap_or_default() } else { b.clone() })
        .collect();
    let mut out = m.clone();
    out["content"] = Value::Array(ordered);
    out
}

/// Renders a message; a malformed one is an error naming the block (`block 2: …`) or the message.
fn render_message(m: &Value, out: &mut Vec<String>, blobs: &mut Blobs, norm: Norm<'_>) -> Result<(), wire::Malformed> {
    let role = match m.get("role") {
        Some(Value::String(r)) => r.as_str(),
        _ => return Err(wire::Malformed("a message without a role".into())),
    };
    match m.get("content") {
        Some(Value::String(s)) => out.push(format!("{role}: {}", quote(s))),
        Some(Value::Array(blocks)) => {
            if role != "user" {
                out.push(format!("{role}:"));
            }
            for (k, b) in blocks.iter().enumerate() {
                render_block(b, out, blobs, norm).map_err(|e| wire::Malformed(format!("block {}: {}", k + 1, e.0)))?;
            }
        }
        _ => return Err(wire::Malformed("a message whose content is neither a string nor blocks".into())),
    }
    Ok(())
}

/// Header facts of a transcript.
#[derive(Debug, Clone)]
pub struct Header<'a> {
    /// Probe id.
    pub probe: &'a str,
    /// Claim ids.
    pub claims: &'a [String],
    /// Subject name.
    pub subject: &'a str,
    /// "claim: fact" lines of the divergences from claims this probe shows on the subject.
    pub diverges: Vec<String>,
    /// Whether requests say where their cache markers sit (`cache_control:`): not for a probe whose
    /// request layout follows the timing of concurrent events ([`crate::probe::Probe::shape_varies`]).
    pub cache_markers: bool,
}

impl Header<'_> {
    fn lines(&self) -> Vec<String> {
        let mut out = vec![
            format!("probe: {}", self.probe),
            format!("claims: {}", self.claims.join(", ")),
            format!("subject: {}", self.subject),
        ];
        out.extend(self.diverges.iter().map(|d| format!("diverges from claim {d}")));
        out
    }
}

/// Renders a run as text (not yet normalised); fills `blobs` with what it references. A content block
/// of a turn that is not what its type says is an error with its place ([`wire`]).
pub fn render(
    h: &Header<'_>,
    view: &View<'_>,
    (files, verdicts): (&[String], &[String]),
    blobs: &mut Blobs,
    norm: Norm<'_>,
) -> Result<String, Malformed> {
    let mut out = h.lines();
    let mut shown = Shown { cache_markers: h.cache_markers, ..Shown::default() };
    let mut side: Vec<String> = Vec::new();
    // each request's fields and messages through the requests it is stored by reference to: only its new
    // part is looked at, so a run's render costs the same per turn however long the conversation
    let requests = view.requests();
    for (i, e) in view.exchanges.iter().enumerate() {
        match e.kind {
            ExchangeKind::Turn if e.fault.is_none() && e.status == 200 => {
                render_turn(&mut out, &mut shown, &requests, (i, e), blobs, norm)?
            }
            _ => side.push(side_line(e)),
        }
    }
    if !side.is_empty() {
        out.push(String::new());
        out.push("## other exchanges".into());
        out.extend(side);
    }
    files_section(&mut out, files);
    out.push(String::new());
    out.push("## verdicts".into());
    out.extend(verdicts.iter().cloned());
    Ok(out.join("\n") + "\n")
}

/// The heading of the files the checks read ([`crate::check::files_read`]).
pub const FILES_HEADING: &str = "## files the checks read";

fn files_section(out: &mut Vec<String>, files: &[String]) {
    if !files.is_empty() {
        out.push(String::new());
        out.push(FILES_HEADING.into());
        out.extend(files.iter().cloned());
    }
}

/// What the turns rendered so far showed, per conversation: how many of its messages, its last tools
/// line and system prompt (shown again only when they change); and the values shown as blobs.
#[derive(Default)]
struct Shown<'v> {
    messages: BTreeMap<String, usize>,
    tools: BTreeMap<String, String>,
    system: BTreeMap<String, String>,
    blobs: Vec<(&'v Value, String)>,
    /// Per request rendered, where its messages carry cache markers ([`cache_places`]).
    cache: BTreeMap<usize, Vec<(usize, String)>>,
    /// Whether to say where they sit ([`Header::cache_markers`]).
    cache_markers: bool,
}

/// A turn's request (what is new in it: the tools and system prompt when they changed, the first
/// request's model line, the messages the previous requests did not show) and its response.
fn render_turn<'v>(
    out: &mut Vec<String>,
    shown: &mut Shown<'v>,
    requests: &Requests<'v>,
    (i, e): (usize, &Exchange),
    blobs: &mut Blobs,
    norm: Norm<'_>,
) -> Result<(), Malformed> {
    let at = |place: String, what: wire::Malformed| Malformed { seq: e.seq, place, what: what.0 };
    let conv = e.conversation.clone().unwrap_or_default();
    let turn = e.turn.map(|t| t + 1).unwrap_or(0);
    out.push(String::new());
    out.push(if e.prelude {
        "## request 0 (prelude: deferred tools loaded)".to_string()
    } else if conv == MAIN {
        format!("## request {turn}")
    } else {
        format!("## request {turn} (conversation {conv})")
    });
    request_head(out, shown, requests, (i, turn, &conv), blobs, norm);
    let count = requests.message_count(i);
    let seen = shown.messages.get(&conv).copied().unwrap_or(0);
    // a conversation that got shorter and shares no first message with the request it is
    // stored against rewrote its history (a compaction: the summary comes first): shown
    // whole. A request of one message is another instance of the conversation starting
    // (parallel sub-agents of one named conversation), no rewrite; nor is one that repeats
    // the request it is stored against, or keeps its first messages (a sub-agent resumed
    // from an earlier point of its history, whose timing against the coordinator varies
    // between runs: claude-code.agent-message on 2.1.235) — those show nothing new, as before.
    let kept = requests.kept(i).min(count);
    // Only the main conversation's history is rewritten so (a compaction): a sub-agent's conversation
    // that comes back shorter with another first message was started again, the coordinator's message
    // folded into its first turn when that message arrived while it worked — a race against the
    // coordinator (claude-code.agent-message on 2.1.235 and 2.1.276), which a golden must not follow.
    let from = if conv == MAIN && count < seen && kept == 0 && count > 1 {
        out.push(format!("history rewritten: {count} messages, {kept} of them the previous request's"));
        kept
    } else {
        seen
    };
    let calls: Vec<String> = from
        .checked_sub(1)
        .and_then(|m| requests.message(i, m))
        .map(|m| {
            content_blocks_of(m)
                .iter()
                .filter_map(|b| b.get("id").and_then(Value::as_str).map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    for (k, m) in (from..count).filter_map(|k| Some((k, requests.message(i, k)?))) {
        render_message(&in_call_order(m, &calls), out, blobs, norm)
            .map_err(|w| at(format!("request {turn}, message {}", k + 1), w))?;
    }
    out.push(if e.prelude { "## response 0 (prelude)".to_string() } else { format!("## response {turn}") });
    if let Some(w) = &e.waited {
        out.push(format!("waited for: {w}"));
    }
    if let Some(resp) = &e.response {
        for (k, b) in resp.get("content").and_then(Value::as_array).into_iter().flatten().enumerate() {
            render_block(b, out, blobs, norm).map_err(|w| at(format!("response {turn}, block {}", k + 1), w))?;
        }
        out.push(format!("stop_reason: {}", resp.get("stop_reason").and_then(Value::as_str).unwrap_or("?")));
    }
    if let Some(v) = &e.violation {
        out.push(format!("violation {}: {}", v.kind, v.message));
    }
    // the assistant message answering this request is already shown as the response
    shown.messages.insert(conv, count + 1);
    Ok(())
}

/// A turn's request head: its tools and system prompt when they changed for its conversation, where
/// its cache markers sit, and the first request's model line.
fn request_head<'v>(
    out: &mut Vec<String>,
    shown: &mut Shown<'v>,
    requests: &Requests<'v>,
    (i, turn, conv): (usize, usize, &str),
    blobs: &mut Blobs,
    norm: Norm<'_>,
) {
    let field = |k: &str| requests.field(i, k);
    let tools: Vec<String> = field("tools")
        .and_then(Value::as_array)
        .map(|ts| {
            ts.iter()
                .map(|t| {
                    let name = t.get("name").and_then(Value::as_str).unwrap_or("?").to_string();
                    let defer = if t.get("defer_loading") == Some(&Value::Bool(true)) { " (deferred)" } else { "" };
                    format!("{name}@{}{defer}", blob_once(blobs, norm, &mut shown.blobs, t))
                })
                .collect()
        })
        .unwrap_or_default();
    let tools_line = tools.join(" ");
    if shown.tools.get(conv) != Some(&tools_line) {
        out.push(format!("tools: {tools_line}"));
        shown.tools.insert(conv.to_string(), tools_line);
    }
    if let Some(sys) = field("system") {
        let h = blob_once(blobs, norm, &mut shown.blobs, sys);
        if shown.system.get(conv) != Some(&h) {
            out.push(format!("system: {h}"));
            shown.system.insert(conv.to_string(), h);
        }
    }
    // where the request's cache markers sit: the request's shape, which moves between releases (and
    // with the model) where nothing else does — kept so a page can show it
    let places = if shown.cache_markers { cache_places(requests, i, &mut shown.cache) } else { Vec::new() };
    if !places.is_empty() {
        out.push(format!("cache_control: {}", places.join(" ")));
    }
    if turn == 1 {
        out.push(format!(
            "model: {}, max_tokens: {}, stream: {}",
            field("model").and_then(Value::as_str).unwrap_or("?"),
            field("max_tokens").cloned().unwrap_or_default(),
            field("stream").cloned().unwrap_or(Value::Bool(false))
        ));
    }
}

/// Where request `i` carries `cache_control`: `tools[NAME]`, `system[K]`, `message M block B` (1-based
/// message and block; `message M` for the message itself), in request order. A request stored against
/// an earlier one shares its first messages byte for byte, so their places are the earlier request's
/// (kept in `memo`): each message is looked at once.
fn cache_places(requests: &Requests<'_>, i: usize, memo: &mut BTreeMap<usize, Vec<(usize, String)>>) -> Vec<String> {
    let marked = |v: &Value| v.get("cache_control").is_some();
    let mut out = Vec::new();
    for t in requests.field(i, "tools").and_then(Value::as_array).into_iter().flatten().filter(|t| marked(t)) {
        out.push(format!("tools[{}]", t.get("name").and_then(Value::as_str).unwrap_or("?")));
    }
    if let Some(Value::Array(blocks)) = requests.field(i, "system") {
        out.extend(blocks.iter().enumerate().filter(|(_, b)| marked(b)).map(|(k, _)| format!("system[{}]", k + 1)));
    }
    let kept = requests.kept(i);
    let mut places: Vec<(usize, String)> = match requests.base_of(i) {
        Some(j) if kept > 0 => {
            let before = match memo.get(&j) {
                Some(p) => p.clone(),
                None => message_places(requests, j, 0),
            };
            before.into_iter().filter(|(m, _)| *m < kept).collect()
        }
        _ => Vec::new(),
    };
    places.extend(message_places(requests, i, kept));
    out.extend(places.iter().map(|(_, p)| p.clone()));
    memo.insert(i, places);
    out
}

/// The cache markers of request `i`'s messages from message `from` (0-based) on: (message, place).
fn message_places(requests: &Requests<'_>, i: usize, from: usize) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for m in from..requests.message_count(i) {
        let Some(msg) = requests.message(i, m) else { continue };
        if msg.get("cache_control").is_some() {
            out.push((m, format!("message {}", m + 1)));
        }
        for (k, _) in content_blocks_of(msg).iter().enumerate().filter(|(_, b)| b.get("cache_control").is_some()) {
            out.push((m, format!("message {} block {}", m + 1, k + 1)));
        }
    }
    out
}

/// An exchange that is no turn of a conversation (a count_tokens, a fault's answer, a refused request),
/// on one line of the transcript's "other exchanges".
fn side_line(e: &Exchange) -> String {
    let mut line = format!("{} {} -> {}", e.method, e.path, e.status);
    if let Some(f) = &e.fault {
        line.push_str(&format!(" (fault {})", serde_json::to_string(f).unwrap_or_default()));
    }
    if e.kind == ExchangeKind::CountTokens {
        if let Some(r) = &e.response {
            line.push_str(&format!(" {r}"));
        }
    }
    if let Some(v) = &e.violation {
        line.push_str(&format!(" violation {}: {}", v.kind, v.message));
    }
    line
}

/// Renders an exec probe: each command (argv as written), its exit, stdout and stderr verbatim;
/// durations and memory are evidence, never golden.
pub fn render_exec(
    h: &Header<'_>,
    records: &[crate::subject::exec::ExecRecord],
    (files, verdicts): (&[String], &[String]),
) -> String {
    let mut out = h.lines();
    for (i, r) in records.iter().enumerate() {
        out.push(String::new());
        out.push(format!("## exec {}: {}", i + 1, r.argv.join(" ")));
        match (r.timed_out, r.measured.exit, r.measured.signal) {
            (true, _, _) => out.push("killed at the deadline".into()),
            (false, Some(c), _) => out.push(format!("exit {c}")),
            (false, None, s) => out.push(format!("signal {}", s.unwrap_or(0))),
        }
        out.push("stdout:".into());
        out.push(indent(r.stdout.strip_suffix('\n').unwrap_or(&r.stdout)));
        out.push("stderr:".into());
        out.push(indent(r.stderr.strip_suffix('\n').unwrap_or(&r.stderr)));
    }
    files_section(&mut out, files);
    out.push(String::new());
    out.push("## verdicts".into());
    out.extend(verdicts.iter().cloned());
    out.join("\n") + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn results_are_shown_in_call_order_other_blocks_stay() {
        let m = json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "b", "content": "2"},
            {"type": "text", "text": "note"},
            {"type": "tool_result", "tool_use_id": "a", "content": "1"},
        ]});
        let out = in_call_order(&m, &["a".to_string(), "b".to_string()]);
        let ids: Vec<&str> = out["content"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|b| b["tool_use_id"].as_str().unwrap_or("text"))
            .collect();
        assert_eq!(ids, ["a", "text", "b"]);
    }

    fn turn(seq: u64, turn: usize, messages: Value) -> Exchange {
        serde_json::from_value(json!({
            "seq": seq, "offset_ms": 0, "method": "POST", "path": "/v1/messages", "headers": {},
            "kind": "turn", "conversation": "main", "turn": turn, "status": 200,
            "request": {"model": "m", "max_tokens": 1, "messages": messages},
            "response": {"content": [{"type": "text", "text": format!("answer {}", turn + 1)}], "stop_reason": "end_turn"},
        }))
        .unwrap_or_else(|e| panic!("exchange: {e}"))
    }

    /// A request carrying fewer messages than the conversation had (Claude Code after a compaction)
    /// shows the messages it carries now, said to be a rewrite; a request that extends the one before
    /// shows its new messages only; a one-message request starts another instance (as before).
    #[test]
    fn a_conversation_that_got_shorter_shows_its_rewritten_history() {
        let user = |t: &str| json!({"role": "user", "content": t});
        let said = |t: &str| json!({"role": "assistant", "content": t});
        let exchanges = vec![
            turn(1, 0, json!([user("first")])),
            turn(2, 1, json!([user("first"), said("answer 1"), user("second")])),
            turn(3, 2, json!([user("SUMMARY of first and second"), said("kept"), user("third")])),
            turn(4, 3, json!([user("another sub-agent starts")])),
            turn(5, 4, json!([user("SUMMARY of first and second"), said("kept"), user("third"), said("a"), user("b")])),
            turn(6, 5, json!([user("SUMMARY of first and second"), said("kept"), user("resumed earlier")])),
        ];
        let script = Script::new("t", Vec::new()).unwrap_or_else(|e| panic!("{e}"));
        let view = View { exchanges: &exchanges, script: &script };
        let h = Header { probe: "p", claims: &[], subject: "s", diverges: Vec::new(), cache_markers: true };
        let out = render(&h, &view, (&[], &[]), &mut Blobs::new(), &|t: &str| t.to_string())
            .unwrap_or_else(|e| panic!("{e}"));
        let third = out.split("## request 3").nth(1).unwrap_or_default();
        assert!(third.contains("history rewritten: 3 messages, 0 of them the previous request's"), "{out}");
        assert!(third.contains("SUMMARY of first and second"), "{out}");
        let second = out.split("## request 2").nth(1).and_then(|s| s.split("## response 2").next()).unwrap_or_default();
        assert!(second.contains("second") && !second.contains("first") && !second.contains("rewritten"), "{out}");
        let fourth = out.split("## request 4").nth(1).and_then(|r| r.split("## request 5").next()).unwrap_or_default();
        assert!(
            !fourth.contains("rewritten") && !fourth.contains("another sub-agent"),
            "one message: no rewrite {out}"
        );
        // a sub-agent's conversation started again shorter is no rewrite (a race against its coordinator)
        let named = |mut e: Exchange| {
            e.conversation = Some("named".into());
            e
        };
        let exchanges = vec![
            named(turn(1, 0, json!([user("work")]))),
            named(turn(2, 1, json!([user("work"), said("answer 1"), user("more")]))),
            named(turn(3, 2, json!([user("work, and the coordinator's message"), said("x")]))),
        ];
        let view = View { exchanges: &exchanges, script: &script };
        let out = render(&h, &view, (&[], &[]), &mut Blobs::new(), &|t: &str| t.to_string())
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(!out.contains("rewritten") && !out.contains("coordinator's message"), "{out}");
    }

    #[test]
    fn a_tool_reference_is_named_in_words_and_kept_as_it_was_in_the_fingerprints_text() {
        let b = json!({"type": "tool_result", "tool_use_id": "t", "content": [
            {"type": "tool_reference", "tool_name": "CronCreate"}, {"type": "text", "text": "loaded"}]});
        assert_eq!(result_words(&b), "[tool_reference CronCreate]\nloaded");
        assert_eq!(result_text(&b), "[tool_reference ?]\nloaded", "the committed fingerprints' text");
        let plain = json!({"type": "tool_result", "tool_use_id": "t", "content": "ok"});
        assert_eq!(result_words(&plain), result_text(&plain));
    }

    #[test]
    fn a_malformed_block_in_a_turn_is_an_error_with_its_place_never_an_empty_line() {
        let user = |content: Value| json!({"role": "user", "content": content});
        let render_of = |exchanges: Vec<Exchange>| {
            let script = Script::new("t", Vec::new()).unwrap_or_else(|e| panic!("{e}"));
            let view = View { exchanges: &exchanges, script: &script };
            let h = Header { probe: "p", claims: &[], subject: "s", diverges: Vec::new(), cache_markers: true };
            render(&h, &view, (&[], &[]), &mut Blobs::new(), &|t: &str| t.to_string())
        };
        let good = json!([{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}, {"type": "server_tool_use", "id": "s"}]);
        let out = render_of(vec![
            turn(1, 0, json!([user(json!("hi"))])),
            turn(2, 1, json!([user(json!("hi")), json!({"role": "assistant", "content": "a"}), user(good)])),
        ])
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(
            out.contains("tool_result t1:\n  | ok\n{\"type\":\"server_tool_use\",\"id\":\"s\"}"),
            "an unknown block stays raw: {out}"
        );
        let bad = json!([{"type": "tool_result", "content": "no id"}]);
        let e = render_of(vec![
            turn(1, 0, json!([user(json!("hi"))])),
            turn(7, 1, json!([user(json!("hi")), json!({"role": "assistant", "content": "a"}), user(bad)])),
        ])
        .unwrap_err();
        assert_eq!(
            e,
            Malformed {
                seq: 7,
                place: "request 2, message 3".into(),
                what: "block 1: a tool_result block without tool_use_id".into()
            }
        );
        assert_eq!(
            e.to_string(),
            "the stub's record, exchange 7, request 2, message 3: block 1: a tool_result block without tool_use_id"
        );
        let e = render_of(vec![turn(3, 0, json!([{"content": "no role"}]))]).unwrap_err();
        assert_eq!((e.seq, e.what.as_str()), (3, "a message without a role"));
    }
}
