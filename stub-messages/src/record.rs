//! The exchange log: one [`Exchange`] per request that reached the stub, kept in memory and written as
//! one JSONL line to an optional sink, flushed per exchange — a subject that crashes mid-run loses
//! nothing already sent.
//!
//! Secrets never reach the record: the `x-api-key`, `authorization`, `proxy-authorization` and `cookie`
//! headers are replaced by `<redacted>`, and any `sk-ant-…` token anywhere in the line (a key pasted into a
//! prompt, an env dump in a tool result) is replaced too.

use crate::fault::Fault;
use crate::stored::{rebuild, Layout, RequestBase};
use crate::wire::SseEvent;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::collections::HashMap;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// What a request was, as the stub classified it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExchangeKind {
    /// A scripted conversation (main or named).
    Turn,
    /// A side request (answered with the fixed short text).
    Side,
    /// `/v1/messages/count_tokens`.
    CountTokens,
    /// `/v1/models…`.
    Models,
    /// `HEAD /`, `/api/hello` and the like.
    Warmup,
    /// A request the stub refused (bad JSON, missing fields, unpaired tool_result, …).
    Invalid,
    /// A path or method the stub does not serve.
    Unknown,
}

/// A rule the subject broke (or the script's end), kept beside the exchange.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Violation {
    /// `tool_pairing`, `invalid_request`, `script_exhausted`, `unknown_endpoint`, …
    pub kind: String,
    /// What exactly.
    pub message: String,
}

/// One request/response that crossed the wire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Exchange {
    /// Arrival order, from 1.
    pub seq: u64,
    /// Milliseconds from the stub's start to the request's arrival (monotonic clock).
    pub offset_ms: u64,
    /// HTTP method.
    pub method: String,
    /// Path without the query.
    pub path: String,
    /// Query string, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    /// Request headers, names lower-cased, secrets redacted; repeated headers joined with `, `.
    pub headers: BTreeMap<String, String>,
    /// The request body when it was JSON: whole, or when [`Exchange::request_base`] is set, its stored
    /// form (the new messages and the members that changed: [`crate::stored`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<Value>,
    /// The earlier request this one is stored by reference to ([`crate::stored`]); absent when stored
    /// whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_base: Option<RequestBase>,
    /// The request body when it was not JSON (lossy UTF-8, at most 64 KiB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_text: Option<String>,
    /// How the stub classified it.
    pub kind: ExchangeKind,
    /// The conversation a turn request was routed to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation: Option<String>,
    /// The 0-based turn index answered (or attempted) in that conversation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<usize>,
    /// HTTP status sent.
    pub status: u16,
    /// The JSON body sent, or for a stream the message a client reassembles from the events sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<Value>,
    /// For a stream: the events as sent, in order (a cut stream lists only those sent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events: Option<Vec<SseEvent>>,
    /// The fault injected into this attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<Fault>,
    /// The rule broken, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub violation: Option<Violation>,
    /// The client went away before the exchange was over: a stream it stopped reading (its `events` are
    /// those sent), a body or a request head it did not finish (status 0: nothing could be answered).
    /// Absent (false) in records written before the field existed.
    #[serde(default, skip_serializing_if = "is_false")]
    pub client_disconnected: bool,
    /// The stub's prelude to the main conversation (deferred tools loaded: `[stub] load_deferred`), not a
    /// scripted turn.
    #[serde(default, skip_serializing_if = "is_false")]
    pub prelude: bool,
    /// Microseconds the stub spent on it: from the request's arrival to the response's last byte handed
    /// to the connection (a stream: its last event). Set when recorded; never in goldens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elapsed_us: Option<u64>,
    /// The order in which the stub began answering (from 1): after a turn's wait ([`crate::script::Wait`]),
    /// so it differs from `seq` where a turn waited (or where requests raced each other). A transcript
    /// read in this order shows what the waits sequenced. Set when recorded if not before; 0 (absent) in
    /// records written before the field existed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub answer_seq: u64,
    /// What the turn waited for before it was served ([`crate::script::Wait::describe`]), never how long.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waited: Option<String>,
    /// When the request arrived (not serialised; turns into `elapsed_us` when recorded).
    #[serde(skip)]
    pub arrived: Option<Instant>,
    /// The request's bytes as they arrived, when [`Exchange::request`] is their parse: the recorded line
    /// carries them as they are instead of the value serialised again (not kept in memory after).
    #[serde(skip)]
    pub request_bytes: Option<bytes::Bytes>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Header names whose values never reach a record.
pub const SECRET_HEADERS: &[&str] = &["x-api-key", "authorization", "proxy-authorization", "cookie"];

/// The placeholder that replaces secrets.
pub const REDACTED: &str = "<redacted>";

/// Replaces every `sk-ant-…` token in `s` (the key alphabet `[A-Za-z0-9_-]`).
pub fn redact_keys(s: &str) -> String {
    const PREFIX: &str = KEY_PREFIX;
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find(PREFIX) {
        out.push_str(&rest[..i]);
        out.push_str(REDACTED);
        let tail = &rest[i + PREFIX.len()..];
        let end = tail.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-')).unwrap_or(tail.len());
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

/// How an Anthropic API key begins: what [`redact_keys`] looks for.
pub const KEY_PREFIX: &str = "sk-ant-";

impl Inner {
    /// Stores a conversation's request by reference to its previous one when it extends it
    /// (`crate::stored`: the record grows with the turns, not with their square), and keeps it as the
    /// base of the next; a request whose bytes cannot be spliced (`raw` None) or laid out leaves no base.
    /// The stored form, and the kept members and messages moved out of the request's value.
    #[allow(clippy::type_complexity)]
    fn store(
        &mut self,
        ex: &mut Exchange,
        raw: Option<&bytes::Bytes>,
    ) -> (Option<Vec<u8>>, Vec<Value>, Vec<(String, Value)>) {
        let (mut drained, mut left_out) = (Vec::new(), Vec::new());
        let (Some(conv), true) = (ex.conversation.clone(), ex.request.is_some()) else {
            return (None, drained, left_out);
        };
        let Some(r) = raw else {
            self.bases.remove(&conv);
            return (None, drained, left_out);
        };
        let base = self.bases.get(&conv);
        let Some(lr) = Layout::of(r, base.map(|(_, b, l)| (&b[..], l))) else {
            self.bases.remove(&conv);
            return (None, drained, left_out);
        };
        let mut stored = None;
        if let Some((seq, b, lb)) = base {
            if let Some((s, rb)) = crate::stored::store(r, &lr, *seq, b, lb) {
                if let Some(v) = ex.request.as_mut() {
                    (drained, left_out) = crate::stored::store_value(v, &rb);
                }
                ex.request_base = Some(rb);
                stored = Some(s);
            }
        }
        self.bases.insert(conv, (ex.seq, r.clone(), lr));
        (stored, drained, left_out)
    }
}

/// Writes an exchange's line into `buf`; whether it was made. With `request` (the request as it
/// crossed the wire, or its stored form) the line is the rest of the exchange, then those bytes: they are
/// not made again from the value (a JSON text with no line break and no key).
fn write_line(buf: &mut Vec<u8>, ex: &mut Exchange, request: Option<&[u8]>) -> bool {
    let Some(r) = request else { return serde_json::to_writer(&mut *buf, &*ex).is_ok() };
    let value = ex.request.take();
    let made = serde_json::to_writer(&mut *buf, &*ex).is_ok() && buf.last() == Some(&b'}');
    ex.request = value;
    if made {
        // never `{}`: an exchange always has its seq, method, path…
        buf.pop();
        buf.extend_from_slice(b",\"request\":");
        buf.extend_from_slice(r);
        buf.push(b'}');
    }
    made
}

/// Whether a request's bytes can go into a record line as they are: UTF-8 (a line is text), no line
/// break (JSON has them only as whitespace between tokens; a line must not) and no key to redact (then
/// the value is serialised and redacted as any line).
fn splice_ok(raw: &[u8]) -> bool {
    !raw.is_empty()
        && memchr::memchr2(b'\n', b'\r', raw).is_none()
        && memchr::memmem::find(raw, KEY_PREFIX.as_bytes()).is_none()
        && std::str::from_utf8(raw).is_ok()
}

/// The largest line buffer a thread keeps between two records (a larger one is freed after use).
const LINE_KEEP_BYTES: usize = 1 << 20;

thread_local! {
    static LINE: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

struct Inner {
    exchanges: Vec<Exchange>,
    sink: Option<Box<dyn Write + Send>>,
    sink_error: Option<String>,
    /// Per conversation, its last request recorded: the base the next one is stored by reference to
    /// (`seq`, bytes as they arrived, layout).
    bases: std::collections::HashMap<String, (u64, bytes::Bytes, Layout)>,
    /// The requests the stub accepted last, for the next to be parsed by prefix ([`crate::reuse`]).
    parsed: crate::reuse::Parsed,
}

/// The log. Cheap to clone (shared); safe to use from every request task.
#[derive(Clone)]
pub struct Recorder {
    inner: Arc<Mutex<Inner>>,
    start: Instant,
    seq: Arc<std::sync::atomic::AtomicU64>,
    answers: Arc<std::sync::atomic::AtomicU64>,
}

impl Default for Recorder {
    fn default() -> Self {
        Recorder::new(None)
    }
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = crate::locked(&self.inner).exchanges.len();
        f.debug_struct("Recorder").field("exchanges", &n).finish()
    }
}

impl Recorder {
    /// A recorder writing JSONL to `sink` (if any) besides keeping every exchange in memory.
    pub fn new(sink: Option<Box<dyn Write + Send>>) -> Recorder {
        Recorder {
            inner: Arc::new(Mutex::new(Inner {
                exchanges: Vec::new(),
                sink,
                sink_error: None,
                bases: Default::default(),
                parsed: Default::default(),
            })),
            start: Instant::now(),
            seq: Arc::new(std::sync::atomic::AtomicU64::new(0)),
            answers: Arc::new(std::sync::atomic::AtomicU64::new(0)),
        }
    }

    /// A sequence number and the offset for a request arriving now.
    pub fn arrival(&self) -> (u64, u64) {
        let seq = self.seq.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        (seq, self.start.elapsed().as_millis() as u64)
    }

    /// The next [`Exchange::answer_seq`]: the stub begins answering a request now.
    pub fn answering(&self) -> u64 {
        self.answers.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1
    }

    /// When the recorder started: `offset_ms` counts from here.
    pub fn started(&self) -> Instant {
        self.start
    }

    /// Redacts, keeps and writes one exchange.
    pub fn record(&self, mut ex: Exchange) {
        if let Some(at) = ex.arrived.take() {
            ex.elapsed_us = Some(at.elapsed().as_micros() as u64);
        }
        if ex.answer_seq == 0 {
            ex.answer_seq = self.answering();
        }
        for (name, value) in ex.headers.iter_mut() {
            if SECRET_HEADERS.contains(&name.as_str()) {
                *value = REDACTED.to_string();
            }
        }
        // the line is made in a buffer this thread keeps (a 60 KB request per turn: its allocation was
        // most of the record's cost, `benches/lab/benches/turn.rs`); redacted only when it holds a key
        let raw = ex.request_bytes.take().filter(|r| ex.request.is_some() && splice_ok(r));
        let mut inner = crate::locked(&self.inner);
        // the messages of a request the stub keeps for the next to extend: the kept ones moved out of the
        // value, the new ones copied (`crate::reuse`)
        let wanted = ex.request.is_some() && inner.parsed.wants(ex.seq);
        let (stored, mut drained, mut left_out) = inner.store(&mut ex, raw.as_ref());
        if wanted {
            let request = ex.request.as_ref().and_then(Value::as_object);
            for (k, v) in request.into_iter().flatten() {
                match (k.as_str(), v) {
                    ("messages", Value::Array(m)) => drained.extend(m.iter().cloned()),
                    _ => left_out.push((k.clone(), v.clone())),
                }
            }
            inner.parsed.fill(ex.seq, drained, left_out);
        }
        LINE.with_borrow_mut(|buf| {
            buf.clear();
            let made = write_line(buf, &mut ex, stored.as_deref().or(raw.as_deref()));
            // UTF-8 (serde_json's text, a spliced request passed `splice_ok`); were it not, the lossy text
            // still shows a key to redact — never an empty text that skips the redaction
            let text = String::from_utf8_lossy(buf);
            let redacted = (made && text.contains(KEY_PREFIX)).then(|| redact_keys(&text));
            if let Some(line) = &redacted {
                // a key in the text: keep memory and file identical, re-read the redacted line (only then:
                // the redacted headers alone are already redacted in memory)
                if let Ok(r) = serde_json::from_str::<Exchange>(line) {
                    ex = r;
                }
            }
            if let (Some(sink), true) = (inner.sink.as_mut(), made) {
                let line = redacted.as_deref().map(str::as_bytes).unwrap_or(buf);
                let res = sink.write_all(line).and_then(|_| sink.write_all(b"\n")).and_then(|_| sink.flush());
                if let Err(e) = res {
                    inner.sink_error.get_or_insert_with(|| e.to_string());
                }
            }
            inner.exchanges.push(ex);
            if buf.capacity() > LINE_KEEP_BYTES {
                *buf = Vec::new();
            }
        });
    }

    /// Every exchange recorded so far, in the order they completed, each request whole (rebuilt from the
    /// stored form: a copy of every request, for tests and tools; a run reads [`Recorder::take`]).
    pub fn exchanges(&self) -> Vec<Exchange> {
        let stored = crate::locked(&self.inner).exchanges.clone();
        let requests = Requests::new(&stored);
        let wholes: Vec<Option<Value>> =
            (0..stored.len()).map(|i| stored[i].request_base.as_ref().and_then(|_| requests.whole(i))).collect();
        let mut out = stored.clone();
        for (e, w) in out.iter_mut().zip(wholes) {
            if let Some(w) = w {
                e.request = Some(w);
                e.request_base = None;
            }
        }
        out
    }

    /// Every exchange recorded so far, moved out, in the stored form ([`crate::stored`]: a request
    /// stored by reference holds its new part; [`Requests`] answers for the whole): the log is empty
    /// after (what comes later is kept as before, its bases forgotten).
    pub fn take(&self) -> Vec<Exchange> {
        let mut i = crate::locked(&self.inner);
        i.bases.clear();
        i.parsed.clear();
        std::mem::take(&mut i.exchanges)
    }

    /// The earlier request accepted that `raw` extends, taken out with its messages ([`crate::reuse`]).
    pub(crate) fn reuse(&self, raw: &[u8]) -> Option<crate::reuse::Taken> {
        crate::locked(&self.inner).parsed.take(raw)
    }

    /// Keeps request `seq`, accepted, for a later one to extend: its messages come when it is recorded.
    pub(crate) fn accepted(&self, seq: u64, raw: bytes::Bytes, layout: Layout, checked: crate::validate::Checked) {
        crate::locked(&self.inner).parsed.insert(seq, raw, layout, checked);
    }

    /// The first write error of the sink, if any (the in-memory log is still complete).
    pub fn sink_error(&self) -> Option<String> {
        crate::locked(&self.inner).sink_error.clone()
    }
}

/// One exchange of a record read back: its request whole.
#[derive(Debug, Clone)]
pub struct ReadExchange {
    /// The exchange, with [`Exchange::request`] the whole request and [`Exchange::request_bytes`] its
    /// bytes as they arrived (when the line carried them), `request_base` cleared.
    pub exchange: Exchange,
    /// How the line stored it, when by reference.
    pub stored_as: Option<RequestBase>,
}

/// Why a record cannot be read back ([`read_record`]): the line (1-based) and what is wrong with it.
#[derive(Debug, thiserror::Error)]
#[error("record line {line}")]
pub struct RecordError {
    /// The line, 1-based.
    pub line: usize,
    /// What is wrong with it.
    #[source]
    pub problem: RecordProblem,
}

/// What is wrong with a line of a record ([`RecordError`]).
#[derive(Debug, thiserror::Error)]
pub enum RecordProblem {
    /// It could not be read.
    #[error("cannot be read")]
    Read(#[source] std::io::Error),
    /// It is not an exchange (or its rebuilt request is not JSON).
    #[error("is not an exchange")]
    Json(#[source] serde_json::Error),
    /// Its request is stored by reference to a request that is not the previous one of its conversation.
    #[error("request {seq} (its base) is not the previous one of {conversation:?}")]
    BaseNotPrevious {
        /// The request it refers to.
        seq: u64,
        /// Its conversation.
        conversation: String,
    },
    /// Its request is stored by reference and cannot be rebuilt.
    #[error("its request cannot be rebuilt")]
    Rebuild(#[source] crate::stored::RebuildError),
    /// It says its request is stored by reference and has none.
    #[error("a request stored by reference has no request")]
    NoRequest,
}

/// Reads a record (the stub's JSONL) back, every request whole: a request stored by reference
/// ([`RequestBase`]) is rebuilt from the earlier line it names, byte for byte. Memory: one request per
/// conversation besides the line read. An error names the line.
pub fn read_record(r: impl std::io::BufRead) -> impl Iterator<Item = Result<ReadExchange, RecordError>> {
    let mut last: HashMap<String, (u64, Vec<u8>)> = HashMap::new();
    r.lines().enumerate().map(move |(n, line)| {
        let at = |problem: RecordProblem| RecordError { line: n + 1, problem };
        let line = line.map_err(|e| at(RecordProblem::Read(e)))?;
        let mut ex: Exchange = serde_json::from_str(&line).map_err(|e| at(RecordProblem::Json(e)))?;
        let stored_as = ex.request_base.take();
        let raw: Option<Vec<u8>> = ex.request.as_ref().and(
            Layout::of(line.as_bytes(), None)
                .and_then(|l| l.member(line.as_bytes(), b"\"request\"").map(<[u8]>::to_vec)),
        );
        let whole = match (&stored_as, raw) {
            (Some(rb), Some(stored)) => {
                let conv = ex.conversation.clone().unwrap_or_default();
                let base = last
                    .get(&conv)
                    .filter(|(seq, _)| *seq == rb.seq)
                    .ok_or_else(|| at(RecordProblem::BaseNotPrevious { seq: rb.seq, conversation: conv.clone() }))?;
                let bytes = rebuild(&stored, &base.1, rb).map_err(|e| at(RecordProblem::Rebuild(e)))?;
                ex.request = Some(serde_json::from_slice(&bytes).map_err(|e| at(RecordProblem::Json(e)))?);
                Some(bytes)
            }
            (Some(_), None) => return Err(at(RecordProblem::NoRequest)),
            (None, raw) => raw,
        };
        if let (Some(conv), Some(bytes)) = (&ex.conversation, &whole) {
            last.insert(conv.clone(), (ex.seq, bytes.clone()));
        }
        ex.request_bytes = whole.map(bytes::Bytes::from);
        Ok(ReadExchange { exchange: ex, stored_as })
    })
}

/// The requests of exchanges kept in the stored form, answered without rebuilding them: a top-level
/// field, a message by index, the count of messages, the new part. Built once over a run's exchanges
/// (an index by `seq`); each answer follows the references it needs.
#[derive(Debug)]
pub struct Requests<'a> {
    exchanges: &'a [Exchange],
    by_seq: HashMap<u64, usize>,
    /// Per exchange, for each member it left out (`RequestBase::same`), the exchange holding it (or one
    /// to go on from): a field is found in one step, not by following every request before.
    owners: Vec<Vec<(&'a str, usize)>>,
}

impl<'a> Requests<'a> {
    /// The index over `exchanges` (any order).
    pub fn new(exchanges: &'a [Exchange]) -> Requests<'a> {
        let mut r = Requests {
            exchanges,
            by_seq: exchanges.iter().enumerate().map(|(i, e)| (e.seq, i)).collect(),
            owners: Vec::with_capacity(exchanges.len()),
        };
        for i in 0..exchanges.len() {
            let mut own = Vec::new();
            if let Some((j, rb)) = r.base(i) {
                for k in &rb.same {
                    // a base recorded before: where it found the member (resolved already), else itself
                    let at = r.owners.get(j).filter(|_| j < i).and_then(|o| o.iter().find(|(m, _)| *m == k));
                    own.push((k.as_str(), at.map_or(j, |(_, o)| *o)));
                }
            }
            r.owners.push(own);
        }
        r
    }

    fn base(&self, i: usize) -> Option<(usize, &'a RequestBase)> {
        let rb = self.exchanges.get(i)?.request_base.as_ref()?;
        self.by_seq.get(&rb.seq).map(|j| (*j, rb)).filter(|(j, _)| *j != i)
    }

    /// The stored messages of exchange `i` (its new part: all of them when stored whole).
    pub fn new_messages(&self, i: usize) -> &'a [Value] {
        self.exchanges
            .get(i)
            .and_then(|e| e.request.as_ref())
            .and_then(|r| r.get("messages"))
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default()
    }

    /// The exchange whose request exchange `i`'s is stored against (None when stored whole).
    pub fn base_of(&self, i: usize) -> Option<usize> {
        self.base(i).map(|(j, _)| j)
    }

    /// How many of exchange `i`'s messages are its base's (0 when stored whole).
    pub fn kept(&self, i: usize) -> usize {
        self.base(i).map_or(0, |(_, rb)| rb.messages)
    }

    /// Top-level field `key` of exchange `i`'s request (from the request it refers to, when the same).
    pub fn field(&self, mut i: usize, key: &str) -> Option<&'a Value> {
        for _ in 0..=self.exchanges.len() {
            match self.owners.get(i).and_then(|o| o.iter().find(|(m, _)| *m == key)) {
                Some((_, j)) => i = *j,
                None => return self.exchanges.get(i)?.request.as_ref()?.get(key),
            }
        }
        None
    }

    /// How many messages exchange `i`'s request has.
    pub fn message_count(&self, i: usize) -> usize {
        self.kept(i) + self.new_messages(i).len()
    }

    /// Message `m` (0-based) of exchange `i`'s request.
    pub fn message(&self, mut i: usize, m: usize) -> Option<&'a Value> {
        for _ in 0..=self.exchanges.len() {
            let kept = self.kept(i);
            if m >= kept {
                return self.new_messages(i).get(m - kept);
            }
            i = self.base(i)?.0;
        }
        None
    }

    /// Exchange `i`'s request whole (a copy: for the few requests a check or a layer looks at entirely).
    pub fn whole(&self, i: usize) -> Option<Value> {
        let mut req = self.exchanges.get(i)?.request.clone()?;
        let Some((j, rb)) = self.base(i) else { return Some(req) };
        // the key order: the base's (its own base's, …) when members were left out, else the stored one
        let mut at = i;
        for _ in 0..=self.exchanges.len() {
            match self.base(at) {
                Some((b, r)) if !r.same.is_empty() => at = b,
                _ => break,
            }
        }
        let order: Vec<String> = self.exchanges[at].request.as_ref()?.as_object()?.keys().cloned().collect();
        let mut out = serde_json::Map::new();
        for k in order {
            let v = if k == "messages" {
                Some(Value::Array((0..self.message_count(i)).filter_map(|m| self.message(i, m).cloned()).collect()))
            } else if rb.same.contains(&k) {
                self.field(j, &k).cloned()
            } else {
                req.get_mut(&k).map(Value::take)
            };
            if let Some(v) = v {
                out.insert(k, v);
            }
        }
        Some(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sink the test reads back.
    struct W(Arc<Mutex<Vec<u8>>>);
    impl Write for W {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().map(|mut v| v.extend_from_slice(b)).ok();
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn keys_in_text_are_redacted() {
        assert_eq!(redact_keys("a sk-ant-api03-AbC_d-9 b sk-ant-"), "a <redacted> b <redacted>");
        assert_eq!(redact_keys("no key"), "no key");
    }

    #[test]
    fn secret_headers_are_redacted_in_memory_and_in_the_sink() {
        let buf = Arc::new(Mutex::new(Vec::<u8>::new()));
        let r = Recorder::new(Some(Box::new(W(buf.clone()))));
        let mut headers = BTreeMap::new();
        headers.insert("x-api-key".to_string(), "sk-ant-secret".to_string());
        headers.insert("authorization".to_string(), "Bearer abc".to_string());
        headers.insert("user-agent".to_string(), "t".to_string());
        r.record(Exchange {
            seq: 1,
            offset_ms: 0,
            method: "POST".into(),
            path: "/v1/messages".into(),
            query: None,
            headers,
            request: Some(serde_json::json!({"note": "key sk-ant-xyz"})),
            request_text: None,
            request_base: None,
            kind: ExchangeKind::Side,
            conversation: None,
            turn: None,
            elapsed_us: None,
            arrived: None,
            request_bytes: None,
            answer_seq: 0,
            waited: None,
            status: 200,
            response: None,
            events: None,
            fault: None,
            violation: None,
            client_disconnected: false,
            prelude: false,
        });
        let text = String::from_utf8(buf.lock().map(|b| b.clone()).unwrap_or_default()).unwrap_or_default();
        assert!(!text.contains("secret") && !text.contains("abc") && !text.contains("xyz"), "{text}");
        assert!(text.ends_with('\n'));
        let ex = &r.exchanges()[0];
        assert_eq!(ex.headers["x-api-key"], REDACTED);
        assert_eq!(ex.request.as_ref().map(|r| r["note"].clone()), Some(serde_json::json!("key <redacted>")));
        // take moves the log out: empty after, the taken exchange the same as the one read before
        let kept = r.exchanges();
        let taken = r.take();
        assert_eq!(taken.len(), 1);
        assert_eq!(taken[0].request, kept[0].request);
        assert!(r.exchanges().is_empty() && r.take().is_empty());
    }

    #[test]
    fn a_thread_that_panicked_holding_the_log_loses_no_exchange() {
        let ex = |seq: u64| -> Exchange {
            serde_json::from_value(serde_json::json!({
                "seq": seq, "offset_ms": 0, "method": "POST", "path": "/v1/messages", "headers": {},
                "kind": "turn", "status": 200
            }))
            .unwrap_or_else(|e| panic!("{e}"))
        };
        let r = Arc::new(Recorder::new(None));
        r.record(ex(1));
        let held = r.clone();
        let panicked = std::thread::spawn(move || {
            let _guard = held.inner.lock();
            panic!("a panic while the log is held");
        })
        .join();
        assert!(panicked.is_err() && r.inner.is_poisoned());
        // recorded before and after the poisoning, all read back (a poisoned lock read as empty lost them)
        r.record(ex(2));
        assert_eq!(r.exchanges().iter().map(|e| e.seq).collect::<Vec<_>>(), [1, 2]);
        assert_eq!(r.take().len(), 2);
    }

    #[test]
    fn a_request_is_recorded_as_its_bytes_came_unless_they_hold_a_line_break_or_a_key() {
        let line_of = |raw: &str| {
            let buf = Arc::new(Mutex::new(Vec::<u8>::new()));
            let r = Recorder::new(Some(Box::new(W(buf.clone()))));
            let mut ex: Exchange = serde_json::from_value(serde_json::json!({
                "seq": 1, "offset_ms": 0, "method": "POST", "path": "/v1/messages", "headers": {},
                "kind": "turn", "status": 200
            }))
            .unwrap_or_else(|e| panic!("{e}"));
            ex.request = Some(serde_json::from_str(raw).unwrap_or_else(|e| panic!("{e}")));
            ex.request_bytes = Some(bytes::Bytes::from(raw.to_string()));
            r.record(ex);
            let text = String::from_utf8(buf.lock().map(|b| b.clone()).unwrap_or_default()).unwrap_or_default();
            let kept = r.take().remove(0);
            assert!(kept.request_bytes.is_none(), "the bytes are not kept in memory");
            // one line, read back to the exchange kept in memory
            assert_eq!(text.matches('\n').count(), 1, "{text:?}");
            let back: Exchange = serde_json::from_str(text.trim_end()).unwrap_or_else(|e| panic!("{e}: {text}"));
            assert_eq!(back.request, kept.request);
            assert_eq!((back.seq, back.status, back.kind), (1, 200, ExchangeKind::Turn));
            (text, kept)
        };
        // as they came: the client's spacing and escapes, not serde_json's
        let raw = r#"{ "model" : "m", "note": "caf\u00e9" }"#;
        let (text, _) = line_of(raw);
        assert!(text.contains(&format!("\"request\":{raw}}}")), "{text}");
        // a line break between tokens: serialised from the value
        let (text, _) = line_of("{\"model\":\n\"m\"}");
        assert!(text.contains(r#""request":{"model":"m"}"#), "{text}");
        // a key: serialised and redacted, in the line and in memory
        let (text, kept) = line_of(r#"{ "note": "sk-ant-abc" }"#);
        assert!(!text.contains("sk-ant-abc") && text.contains(REDACTED), "{text}");
        assert_eq!(kept.request, Some(serde_json::json!({"note": REDACTED})));
    }
}
