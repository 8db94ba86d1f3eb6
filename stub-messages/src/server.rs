//! The axum app: `POST /v1/messages` (SSE and JSON), `POST /v1/messages/count_tokens`, `GET /v1/models`
//! (+ `/{id}`), warm-ups (`HEAD|GET /`, `HEAD|GET /api/hello`), and an Anthropic-shaped error for anything
//! else. Every request, served or refused, becomes one [`Exchange`] in the [`Recorder`].
//!
//! [`app`] builds the router apart from any socket so tests can call it with `oneshot`; [`serve`] binds
//! it (use port 0 in tests) on the connection loop of [`crate::http`] and returns a handle that stops it.
//! Requests are checked by [`crate::validate`] (`[stub] strict`, default on) and always by the pairing
//! rule ([`crate::validate::check_tool_pairing`]).
//!
//! What the record says when a request does not end normally (decided here; the API has no such record):
//! - refused by the HTTP layer (malformed head, 431, 414, header timeout) or cut by the stop before its
//!   head was complete: kind `invalid`, status as answered (0 when nothing was), violation
//!   `malformed_request` / `headers_too_large` / `uri_too_long` / `header_timeout` / `shutdown`, the raw
//!   bytes in `request_text`, the head's method, path and headers as far as they parse;
//! - a body over 32 MB: 413 (`invalid_request`); not complete within `[stub] body_timeout_ms`: 408
//!   `timeout_error` (`body_timeout`), and the connection is closed;
//! - a client that leaves before its head or body is complete: `client_disconnected: true`, status 0,
//!   no violation (nothing was refused);
//! - a stream whose client leaves: `client_disconnected: true` with the events sent so far, and its turn
//!   is given back ([`Stub::progress`] steps back, the turn's faults counted as spent) so the retry gets
//!   the same turn whole, unless `[stub] disconnect_consumes_turn = true` or a later turn of the
//!   conversation was served meanwhile (the stub notices a client gone at its next write, so a retry
//!   sent before that, during a slow turn's `delay_ms`, gets the next turn); the turn hook runs again
//!   for the retry. A stream the stop cuts is violation `shutdown` and keeps its turn consumed.

use crate::fault::{error_for_status, Fault};
use crate::http::{RefusalReason, Refused};
use crate::play::{Decision, Play};
use crate::record::{Exchange, ExchangeKind, Recorder, Violation};
use crate::script::{Route, Script, Wait};
use crate::sse::check_stream;
use crate::validate::Refusal;
use crate::wire::{error_body, stream_events, Message, MessagesRequest, SseEvent};
use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};
use axum::Router;
use futures_util::stream;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The largest request body accepted, like the real API's 32 MB; larger gets 413 `request_too_large`.
pub const MAX_REQUEST_BYTES: usize = 32 * 1024 * 1024;

pub use crate::http::{BODY_READ_TIMEOUT_MS, HEADER_READ_TIMEOUT_MS, SHUTDOWN_GRACE_MS};

/// Models listed by `GET /v1/models`.
pub const MODELS: &[(&str, &str)] = &[
    ("claude-opus-5-5", "Claude Opus 5.5"),
    ("claude-opus-5", "Claude Opus 5"),
    ("claude-sonnet-4-5", "Claude Sonnet 4.5"),
    ("claude-haiku-4-5", "Claude Haiku 4.5"),
];

/// How often a turn waiting on a file looks at it ([`crate::script::Wait::file`]).
pub const WAIT_POLL_MS: u64 = 5;

/// Called with (conversation, 0-based turn) when a request is given its turn, before the turn's `wait`
/// (not for spoiled attempts): the harness uses it to change the subject's world between turns (a file
/// edited "by a linter"), and a turn can wait for what that change sets off.
pub type TurnHook = Arc<dyn Fn(&str, usize) + Send + Sync>;

/// The stub: a script, where each conversation stands, and the record.
pub struct Stub {
    script: Script,
    recorder: Recorder,
    play: Mutex<Play>,
    turn_hook: Option<TurnHook>,
    /// Set when the stop cuts open connections: a stream ending then was cut by the stub.
    cutting: AtomicBool,
    /// Bumped when a request arrives or a turn is served: what held turns wait on.
    changed: tokio::sync::watch::Sender<u64>,
    /// Requests are parsed by prefix of an earlier one when they extend it ([`crate::reuse`]); off, each
    /// is parsed whole (the reference the fast path is held to).
    by_prefix: bool,
    /// Requests parsed by prefix so far.
    parsed_by_prefix: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for Stub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stub").field("script", &self.script.id).field("progress", &self.progress()).finish()
    }
}

impl Stub {
    /// A stub playing `script` into `recorder`.
    pub fn new(script: Script, recorder: Recorder) -> Stub {
        let play = Play::new(&script);
        Stub {
            script,
            recorder,
            play: Mutex::new(play),
            turn_hook: None,
            cutting: AtomicBool::new(false),
            changed: tokio::sync::watch::channel(0).0,
            by_prefix: true,
            parsed_by_prefix: Default::default(),
        }
    }

    /// The same stub parsing and checking every request whole, as if none extended another
    /// ([`crate::reuse`] off): the same answers and the same record, at a cost that grows with each
    /// request's conversation.
    pub fn parsing_whole(mut self) -> Stub {
        self.by_prefix = false;
        self
    }

    /// How many requests were parsed by prefix of an earlier one ([`crate::reuse`]).
    pub fn parsed_by_prefix(&self) -> u64 {
        self.parsed_by_prefix.load(Ordering::Relaxed)
    }

    /// Installs the hook called when a request is given its turn, before the turn's wait ([`TurnHook`]).
    pub fn with_turn_hook(mut self, hook: TurnHook) -> Stub {
        self.turn_hook = Some(hook);
        self
    }

    /// The record.
    pub fn recorder(&self) -> &Recorder {
        &self.recorder
    }

    /// The script.
    pub fn script(&self) -> &Script {
        &self.script
    }

    /// Turns served so far per conversation (`main` first).
    pub fn progress(&self) -> Vec<(String, usize, usize)> {
        crate::locked(&self.play).progress(&self.script)
    }

    /// Turn `turn` of the conversation at cursor `slot` was not delivered (its client left mid-stream):
    /// the cursor steps back to it, its faults counted as spent, so the next request gets it whole. Not
    /// when a later turn of that conversation was served meanwhile; true when it stepped back.
    fn give_back(&self, slot: usize, turn: usize) -> bool {
        crate::locked(&self.play).give_back(&self.script, slot, turn)
    }

    fn decide(&self, route: Route, req: &MessagesRequest<'_>, request: &Value) -> Decision {
        crate::locked(&self.play).decide(&self.script, route, req, request)
    }

    fn bump(&self) {
        self.changed.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// A request was routed to `route`: counted for `arrived` waits.
    fn arrive(&self, route: Route) {
        crate::locked(&self.play).arrive(route);
        self.bump();
    }

    /// Holds the request until its ticket is next in its conversation and its wait holds, then marks it
    /// served (its `answer_seq` taken then). On timeout the ticket is skipped, the turn given back, and
    /// the arrival comes back with the message to answer. Dropped while waiting (client gone, stop): the
    /// guard records the request and gives the turn back.
    async fn release(
        self: &Arc<Self>,
        a: Arrival,
        slot: usize,
        ticket: usize,
        turn: usize,
        wait: Option<&Wait>,
    ) -> Result<Arrival, (Arrival, String)> {
        let timeout = wait.map_or(Duration::from_millis(crate::script::WAIT_TIMEOUT_MS), Wait::timeout);
        let deadline = tokio::time::Instant::now() + timeout;
        let mut rx = self.changed.subscribe();
        let mut guard = Held { stub: self.clone(), slot, ticket, turn, ex: Some(a) };
        let polls = wait.is_some_and(|w| w.file.is_some());
        loop {
            rx.borrow_and_update();
            let file = match wait.and_then(|w| w.file.as_deref()) {
                Some(f) => {
                    let captures = crate::locked(&self.play).captures.clone();
                    let path = crate::script::with_captures(f, &captures);
                    let needles = wait.map(Wait::needles).unwrap_or_default();
                    if wait.is_some_and(|w| w.exists == Some(false)) {
                        std::fs::symlink_metadata(&path).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
                    } else {
                        match std::fs::read(&path) {
                            Ok(bytes) => {
                                let text = String::from_utf8_lossy(&bytes);
                                needles.is_empty() || needles.iter().any(|n| text.contains(n))
                            }
                            Err(_) => false,
                        }
                    }
                }
                None => true,
            };
            {
                let mut play = crate::locked(&self.play);
                let ready =
                    play.cursors[slot].released == ticket && wait.is_none_or(|w| play.counts_hold(&self.script, w));
                if file && ready {
                    play.cursors[slot].pass(ticket);
                    let mut a = guard.ex.take().unwrap_or_else(|| unreachable!("the guard holds the arrival"));
                    a.ex.answer_seq = self.recorder.answering();
                    drop(play);
                    self.bump();
                    return Ok(a);
                }
            }
            tokio::select! {
                _ = rx.changed() => {}
                _ = tokio::time::sleep(Duration::from_millis(WAIT_POLL_MS)), if polls => {}
                _ = tokio::time::sleep_until(deadline) => {
                    let mut a = guard.ex.take().unwrap_or_else(|| unreachable!("the guard holds the arrival"));
                    guard.skip();
                    a.ex.answer_seq = self.recorder.answering();
                    let what = wait.map(Wait::describe).unwrap_or_else(|| "the turn before it in its conversation".into());
                    let msg = format!(
                        "stub-messages: turn {} of conversation {:?} waited {} ms for {what}, which did not happen; the turn was not served",
                        turn + 1,
                        a.ex.conversation.as_deref().unwrap_or("?"),
                        timeout.as_millis()
                    );
                    return Err((a, msg));
                }
            }
        }
    }
}

/// The router, without a socket.
pub fn app(stub: Arc<Stub>) -> Router {
    Router::new()
        .route("/v1/messages", post(messages))
        .route("/v1/messages/count_tokens", post(count_tokens))
        .route("/v1/models", get(models))
        .route("/v1/models/{id}", get(model))
        .route("/", any(warmup))
        .route("/api/hello", any(warmup))
        .fallback(unknown)
        .method_not_allowed_fallback(unknown)
        .with_state(stub)
}

pub use crate::http::{Running, ServeOptions};

/// Binds `addr` (port 0 picks a free port) and serves `stub` in a task of the current runtime, with the
/// timeouts and the stop grace of its `[stub]` settings; what the HTTP layer refuses, and what the stop
/// cuts, is recorded too (see [`crate::http`]).
pub async fn serve(stub: Arc<Stub>, addr: SocketAddr) -> std::io::Result<Running> {
    let settings = &stub.script.stub;
    let options = ServeOptions {
        header_timeout: Duration::from_millis(settings.header_timeout_ms),
        body_timeout: Duration::from_millis(settings.body_timeout_ms),
        shutdown_grace: Duration::from_millis(settings.shutdown_grace_ms),
        hooks: Some(Arc::new(StubHooks(stub.clone()))),
        accept: None,
    };
    crate::http::serve(app(stub), addr, options).await
}

/// Binds `addr` and serves any axum `router` in a task of the current runtime, with TCP_NODELAY, the
/// default timeouts and a bounded stop ([`Running::stop`]): the stub's own server, and the harness's local
/// services (a web site, an artifact store) use it alike.
pub async fn serve_router(router: Router, addr: SocketAddr) -> std::io::Result<Running> {
    crate::http::serve(router, addr, ServeOptions::default()).await
}

/// Records what the connection loop refused, and marks the stop's cut.
struct StubHooks(Arc<Stub>);

impl crate::http::ConnectionHooks for StubHooks {
    fn refused(&self, r: Refused) {
        let stub = &self.0;
        let (seq, offset_ms) = stub.recorder.arrival();
        let head = RawHead::parse(&r.bytes);
        let settings = &stub.script.stub;
        let status = r.status.unwrap_or(0);
        let violation = match r.reason {
            RefusalReason::Malformed => Some(Violation {
                kind: match status {
                    414 => "uri_too_long",
                    431 => "headers_too_large",
                    _ => "malformed_request",
                }
                .into(),
                message: format!(
                    "the HTTP layer refused the request before the stub saw it ({}), answering {}",
                    r.error.as_deref().unwrap_or("unparsable request"),
                    r.status.map_or("nothing".to_string(), |s| s.to_string())
                ),
            }),
            RefusalReason::HeaderTimeout => Some(Violation {
                kind: "header_timeout".into(),
                message: format!(
                    "the request head was not complete within {} ms ({} bytes came); the connection was closed unanswered",
                    settings.header_timeout_ms, r.total_bytes
                ),
            }),
            RefusalReason::Shutdown => Some(Violation {
                kind: "shutdown".into(),
                message: format!(
                    "the stub stopped before the request head was complete ({} bytes came); the connection was cut unanswered",
                    r.total_bytes
                ),
            }),
            RefusalReason::ClientClosed => None,
        };
        stub.recorder.record(Exchange {
            seq,
            offset_ms,
            method: head.method,
            path: head.path,
            query: head.query,
            headers: head.headers,
            request: None,
            request_text: Some(String::from_utf8_lossy(&r.bytes).into_owned()),
            request_base: None,
            kind: ExchangeKind::Invalid,
            conversation: None,
            turn: None,
            status,
            response: None,
            events: None,
            fault: None,
            violation,
            client_disconnected: r.reason == RefusalReason::ClientClosed,
            prelude: false,
            elapsed_us: None,
            arrived: r.first_byte,
            request_bytes: None,
            answer_seq: 0,
            waited: None,
        });
    }

    fn cutting(&self) {
        self.0.cutting.store(true, Ordering::SeqCst);
    }
}

/// What can be read of a request head hyper refused: best effort, lossy.
#[derive(Debug, Default, PartialEq)]
struct RawHead {
    method: String,
    path: String,
    query: Option<String>,
    headers: BTreeMap<String, String>,
}

impl RawHead {
    fn parse(bytes: &[u8]) -> RawHead {
        let text = String::from_utf8_lossy(bytes);
        let mut lines = text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l)).skip_while(|l| l.is_empty());
        let mut head = RawHead::default();
        if let Some(line) = lines.next() {
            let mut parts = line.splitn(3, ' ');
            head.method = parts.next().unwrap_or_default().to_string();
            let target = parts.next().unwrap_or_default();
            match target.split_once('?') {
                Some((p, q)) => {
                    head.path = p.to_string();
                    head.query = Some(q.to_string());
                }
                None => head.path = target.to_string(),
            }
        }
        for line in lines.take_while(|l| !l.is_empty()) {
            if let Some((name, value)) = line.split_once(':') {
                let v = value.trim().to_string();
                head.headers
                    .entry(name.trim().to_ascii_lowercase())
                    .and_modify(|e| {
                        e.push_str(", ");
                        e.push_str(&v);
                    })
                    .or_insert(v);
            }
        }
        head
    }
}

/// The request as it arrived, before the stub decides.
struct Arrival {
    ex: Exchange,
    /// The cursor slot and turn it was served, once decided (a stream its client leaves gives it back).
    served: Option<(usize, usize)>,
}

impl Arrival {
    fn new(stub: &Stub, method: &Method, uri: &Uri, headers: &HeaderMap, kind: ExchangeKind) -> Arrival {
        let (seq, offset_ms) = stub.recorder.arrival();
        let mut hs: BTreeMap<String, String> = BTreeMap::new();
        for (name, value) in headers {
            let v = String::from_utf8_lossy(value.as_bytes()).into_owned();
            hs.entry(name.as_str().to_string())
                .and_modify(|e| {
                    e.push_str(", ");
                    e.push_str(&v);
                })
                .or_insert(v);
        }
        Arrival {
            served: None,
            ex: Exchange {
                seq,
                offset_ms,
                method: method.to_string(),
                path: uri.path().to_string(),
                query: uri.query().map(str::to_string),
                headers: hs,
                request: None,
                request_text: None,
                request_base: None,
                kind,
                conversation: None,
                turn: None,
                status: 200,
                response: None,
                events: None,
                fault: None,
                violation: None,
                client_disconnected: false,
                prelude: false,
                elapsed_us: None,
                arrived: Some(std::time::Instant::now()),
                request_bytes: None,
                answer_seq: 0,
                waited: None,
            },
        }
    }

    fn request_id(&self) -> String {
        format!("req_stub_{}", self.ex.seq)
    }

    /// Records a JSON answer and builds it.
    fn json(mut self, stub: &Stub, status: StatusCode, mut body: Value, extra: &[(&str, String)]) -> Response {
        let id = self.request_id();
        // the API's error bodies carry the request id beside the error, as its `request-id` header does
        if body.get("type").and_then(Value::as_str) == Some("error") {
            if let Some(o) = body.as_object_mut() {
                o.insert("request_id".into(), Value::String(id.clone()));
            }
        }
        self.ex.status = status.as_u16();
        self.ex.response = Some(body.clone());
        stub.recorder.record(self.ex);
        let mut resp = (status, [(header::CONTENT_TYPE, "application/json")], body.to_string()).into_response();
        insert(&mut resp, "request-id", id);
        for (k, v) in extra {
            insert(&mut resp, k, v.clone());
        }
        resp
    }

    /// Records and builds an Anthropic error.
    fn error(mut self, stub: &Stub, status: StatusCode, violation: &str, message: String) -> Response {
        let (etype, _) = error_for_status(status.as_u16());
        self.ex.violation = Some(Violation { kind: violation.to_string(), message: message.clone() });
        self.json(stub, status, error_body(etype, &message), &[])
    }

    /// Takes the body: content type JSON, size within the limit, parses (by prefix of an earlier request
    /// when it extends one: [`crate::reuse`]). On failure the response is the recorded error. On success
    /// the parsed body comes back beside the arrival, not in it: the caller moves it into `ex.request`
    /// once it is done reading it (no copy of a 60 KB request per exchange).
    /// Only a turn request (`turn`) is parsed by prefix.
    async fn body(
        mut self,
        stub: &Stub,
        headers: &HeaderMap,
        body: Body,
        turn: bool,
    ) -> Result<(Arrival, Value, ParsedBy), Response> {
        // the stop may drop this future while the body arrives: the guard records the request then
        let mut guard = BodyGuard { stub, ex: Some(self.ex.clone()) };
        let read = axum::body::to_bytes(body, MAX_REQUEST_BYTES).await;
        guard.ex = None;
        let bytes = match read {
            Ok(b) => b,
            Err(e) => {
                self.ex.kind = ExchangeKind::Invalid;
                return Err(match BodyFailure::of(&e) {
                    BodyFailure::TooLarge => {
                        let msg = format!("Request exceeds the maximum allowed number of bytes ({MAX_REQUEST_BYTES}).");
                        self.error(stub, StatusCode::PAYLOAD_TOO_LARGE, "invalid_request", msg)
                    }
                    BodyFailure::TimedOut(limit) => {
                        let msg = format!(
                            "stub-messages: the request body did not arrive within {} ms of its headers",
                            limit.as_millis()
                        );
                        let mut resp = self.error(stub, StatusCode::REQUEST_TIMEOUT, "body_timeout", msg);
                        // the rest of the body is not read: the connection cannot carry another request
                        resp.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
                        resp
                    }
                    BodyFailure::ClientGone => {
                        // nothing can reach the client any more: recorded with status 0, no violation
                        self.ex.status = 0;
                        self.ex.client_disconnected = true;
                        stub.recorder.record(self.ex);
                        StatusCode::BAD_REQUEST.into_response()
                    }
                });
            }
        };
        let ctype = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
        let is_json = ctype.to_ascii_lowercase().starts_with("application/json");
        let fast = if is_json && turn && stub.by_prefix {
            stub.recorder.reuse(&bytes).and_then(|t| crate::reuse::value(&bytes, t))
        } else {
            None
        };
        if fast.is_some() {
            stub.parsed_by_prefix.fetch_add(1, Ordering::Relaxed);
        }
        let (parsed, by) = match fast {
            Some((v, layout, kept, checked)) => {
                (Ok(v), ParsedBy { layout: Some(layout), kept, checked: Some(checked) })
            }
            None => (serde_json::from_slice(&bytes).map_err(|e| e.to_string()), ParsedBy::default()),
        };
        if parsed.is_err() {
            let cut = &bytes[..bytes.len().min(64 * 1024)];
            self.ex.request_text = Some(String::from_utf8_lossy(cut).into_owned());
        }
        if !is_json {
            self.ex.request = parsed.ok();
            self.ex.kind = ExchangeKind::Invalid;
            let msg = format!(
                "Content-Type must be application/json (got {:?})",
                if ctype.is_empty() { "none" } else { ctype }
            );
            return Err(self.error(stub, StatusCode::BAD_REQUEST, "invalid_request", msg));
        }
        match parsed {
            Ok(v) => {
                // recorded as they came, beside their parse (`Recorder::record`)
                self.ex.request_bytes = Some(bytes);
                Ok((self, v, by))
            }
            Err(e) => {
                self.ex.kind = ExchangeKind::Invalid;
                Err(self.error(
                    stub,
                    StatusCode::BAD_REQUEST,
                    "invalid_request",
                    format!("There was an error parsing the body as JSON: {e}"),
                ))
            }
        }
    }
}

/// How a request body was parsed: by prefix of an earlier request ([`crate::reuse`]: its layout, how many
/// leading messages it kept, what the rules knew of them) or whole (the default).
#[derive(Debug, Default)]
struct ParsedBy {
    layout: Option<crate::stored::Layout>,
    kept: usize,
    checked: Option<crate::validate::Checked>,
}

/// Records a request whose handler was dropped while its body arrived (the stop cut the connection).
struct BodyGuard<'a> {
    stub: &'a Stub,
    ex: Option<Exchange>,
}

impl Drop for BodyGuard<'_> {
    fn drop(&mut self) {
        if let Some(mut ex) = self.ex.take() {
            ex.kind = ExchangeKind::Invalid;
            ex.status = 0;
            if self.stub.cutting.load(Ordering::SeqCst) {
                ex.violation = Some(Violation {
                    kind: "shutdown".into(),
                    message: "the stub stopped while the request body was arriving; the connection was cut unanswered"
                        .into(),
                });
            } else {
                ex.client_disconnected = true;
            }
            self.stub.recorder.record(ex);
        }
    }
}

/// A request held by [`Stub::release`]: dropped before it was served (its client left, or the stop cut
/// it), it is recorded as such, its ticket skipped and its turn given back.
struct Held {
    stub: Arc<Stub>,
    slot: usize,
    ticket: usize,
    turn: usize,
    ex: Option<Arrival>,
}

impl Held {
    /// The ticket will not be served: skip it and give the turn back.
    fn skip(&mut self) {
        {
            let mut play = crate::locked(&self.stub.play);
            if let Some(c) = play.cursors.get_mut(self.slot) {
                c.pass(self.ticket);
            }
        }
        self.stub.give_back(self.slot, self.turn);
        self.stub.bump();
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if let Some(mut a) = self.ex.take() {
            self.skip();
            a.ex.status = 0;
            if self.stub.cutting.load(Ordering::SeqCst) {
                a.ex.violation = Some(Violation {
                    kind: "shutdown".into(),
                    message: "the stub stopped while this request was held by its turn's wait; it was cut unanswered"
                        .into(),
                });
            } else {
                a.ex.client_disconnected = true;
            }
            self.stub.recorder.record(a.ex);
        }
    }
}

/// Why a request body could not be read.
enum BodyFailure {
    /// Over [`MAX_REQUEST_BYTES`].
    TooLarge,
    /// Over the body timeout of the connection loop.
    TimedOut(Duration),
    /// The connection failed or closed mid-body.
    ClientGone,
}

impl BodyFailure {
    fn of(e: &axum::Error) -> BodyFailure {
        let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
        while let Some(c) = cause {
            if c.is::<http_body_util::LengthLimitError>() {
                return BodyFailure::TooLarge;
            }
            if let Some(t) = c.downcast_ref::<crate::http::BodyTimedOut>() {
                return BodyFailure::TimedOut(t.0);
            }
            cause = c.source();
        }
        BodyFailure::ClientGone
    }
}

fn insert(resp: &mut Response, name: &str, value: String) {
    if let (Ok(n), Ok(v)) = (header::HeaderName::from_bytes(name.as_bytes()), HeaderValue::from_str(&value)) {
        resp.headers_mut().insert(n, v);
    }
}

async fn messages(State(stub): State<Arc<Stub>>, method: Method, uri: Uri, headers: HeaderMap, body: Body) -> Response {
    let arrival = Arrival::new(&stub, &method, &uri, &headers, ExchangeKind::Turn);
    let (mut a, value, by) = match arrival.body(&stub, &headers, body, true).await {
        Ok(x) => x,
        Err(resp) => return resp,
    };
    let req = match MessagesRequest::parse_after(&value, by.kept) {
        Ok(r) => r,
        Err(msg) => {
            a.ex.kind = ExchangeKind::Invalid;
            a.ex.request = Some(value);
            return a.error(&stub, StatusCode::BAD_REQUEST, "invalid_request", msg);
        }
    };
    if let Err(r) = check(&stub, &value, &req, &by) {
        a.ex.kind = ExchangeKind::Invalid;
        a.ex.request = Some(value);
        return a.error(&stub, StatusCode::BAD_REQUEST, r.kind, r.message);
    }
    // accepted: kept for the next request to extend (its messages come back when it is recorded)
    if let Some(raw) = a.ex.request_bytes.clone().filter(|_| stub.by_prefix) {
        if let Some(layout) = by.layout.or_else(|| crate::stored::Layout::of(&raw, None)) {
            let state = by.checked.unwrap_or_default().after(req.messages(), by.kept, stub.script.stub.strict);
            stub.recorder.accepted(a.ex.seq, raw, layout, state);
        }
    }
    let streaming = req.stream();
    let route = stub.script.route(&req);
    stub.arrive(route);
    let decision = stub.decide(route, &req, &value);
    a.ex.request = Some(value);
    if !matches!(decision, Decision::Serve { .. }) {
        a.ex.answer_seq = stub.recorder.answering();
    }
    answer(&stub, a, decision, streaming).await
}

/// The rules an accepted request keeps — strict: every rule of crate::validate (pairing among them);
/// lenient: the pairing rule alone — checked from the last message checked before, when the request
/// keeps it (`crate::reuse`).
fn check(stub: &Stub, value: &Value, req: &MessagesRequest<'_>, by: &ParsedBy) -> Result<(), Refusal> {
    let strict = stub.script.stub.strict;
    let before = by.checked.as_ref().filter(|c| c.resumes(by.kept, strict).is_some());
    if strict {
        crate::validate::check_request_after(value, before)
    } else {
        let from = before.and_then(|c| c.at).unwrap_or(0);
        crate::validate::check_tool_pairing_from(req.messages(), from)
            .map_err(|message| Refusal { kind: "tool_pairing", message })
    }
}

/// The answer the play state decided for an accepted request.
async fn answer(stub: &Arc<Stub>, mut a: Arrival, decision: Decision, streaming: bool) -> Response {
    match decision {
        Decision::Side(message) => {
            a.ex.kind = ExchangeKind::Side;
            reply(stub, a, message, streaming, 0, None)
        }
        Decision::Prelude(message) => {
            a.ex.conversation = Some(crate::script::MAIN.to_string());
            a.ex.prelude = true;
            reply(stub, a, message, streaming, 0, None)
        }
        Decision::Serve { conversation, slot, turn, message, delay_ms, ticket, wait } => {
            a.ex.conversation = Some(conversation.clone());
            a.ex.turn = Some(turn);
            a.ex.waited = wait.as_ref().map(Wait::describe);
            // before the wait: a turn may wait for what the hook sets off (a fault's gate file lets a
            // background command end, and the turn waits for the subject to have noticed)
            if let Some(hook) = &stub.turn_hook {
                hook(&conversation, turn);
            }
            let mut a = match stub.release(a, slot, ticket, turn, wait.as_ref()).await {
                Ok(a) => a,
                Err((mut a, msg)) => {
                    a.ex.violation = Some(Violation { kind: "wait_timeout".into(), message: msg.clone() });
                    return refuse(stub, a, streaming, "wait_timeout", msg);
                }
            };
            a.served = Some((slot, turn));
            reply(stub, a, message, streaming, delay_ms, None)
        }
        Decision::Spoil { conversation, turn, fault, message } => {
            a.ex.conversation = Some(conversation);
            a.ex.turn = Some(turn);
            a.ex.fault = Some(fault.clone());
            spoil(stub, a, fault, message, streaming)
        }
        Decision::Exhausted { conversation, turn, turns } => {
            let msg = format!(
                "stub-messages: script exhausted: conversation {conversation:?} has {turns} scripted turn(s) and this is request {} for it",
                turn + 1
            );
            a.ex.conversation = Some(conversation);
            a.ex.turn = Some(turn);
            a.ex.violation = Some(Violation { kind: "script_exhausted".into(), message: msg.clone() });
            refuse(stub, a, streaming, "script_exhausted", msg)
        }
    }
}

/// A request the script cannot answer (its wait timed out, the script is exhausted): an error event on a
/// stream, a 400 otherwise.
fn refuse(stub: &Arc<Stub>, a: Arrival, streaming: bool, violation: &str, msg: String) -> Response {
    if streaming {
        let events = vec![crate::wire::ev_error("invalid_request_error", &msg)];
        stream_response(stub, a, events, 0, End::Complete)
    } else {
        a.error(stub, StatusCode::BAD_REQUEST, violation, msg)
    }
}

/// A turn's fault: an HTTP error (with its retry-after), a stream fault (an error event, a cut), or on a
/// non-streaming request a stream fault's closest non-stream failure (529).
fn spoil(stub: &Arc<Stub>, a: Arrival, fault: Fault, message: Message, streaming: bool) -> Response {
    match fault {
        Fault::Http { status, retry_after } => {
            let (etype, emsg) = error_for_status(status);
            let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let extra: Vec<(&str, String)> = retry_after.map(|s| ("retry-after", s.to_string())).into_iter().collect();
            a.json(stub, code, error_body(etype, emsg), &extra)
        }
        Fault::SseError { .. } | Fault::Cut { .. } if !streaming => {
            let (etype, emsg) = error_for_status(529);
            let code = StatusCode::from_u16(529).unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
            a.json(stub, code, error_body(etype, emsg), &[])
        }
        stream_fault => reply(stub, a, message, true, 0, Some(stream_fault)),
    }
}

/// How a stream ends after its planned events.
#[derive(Clone, Copy)]
enum End {
    Complete,
    Cut,
}

fn reply(
    stub: &Arc<Stub>,
    a: Arrival,
    message: Message,
    streaming: bool,
    delay_ms: u64,
    fault: Option<Fault>,
) -> Response {
    if !streaming {
        let body = serde_json::to_value(&message).unwrap_or_default();
        return a.json(stub, StatusCode::OK, body, &[]);
    }
    let mut events = stream_events(&message);
    let end = match fault {
        Some(Fault::SseError { after_events, error_type }) => {
            events.truncate(after_events);
            let (_, msg) = error_for_status(529);
            let msg = if error_type == "overloaded_error" {
                msg.to_string()
            } else {
                format!("stub-messages: injected {error_type}")
            };
            events.push(crate::wire::ev_error(&error_type, &msg));
            End::Complete
        }
        Some(Fault::Cut { after_events }) => {
            events.truncate(after_events);
            End::Cut
        }
        _ => End::Complete,
    };
    stream_response(stub, a, events, delay_ms, end)
}

/// Records a stream when it is over: after its last event is produced, or when it is dropped early
/// (client gone, cut) with the events sent so far.
struct StreamLog {
    stub: Arc<Stub>,
    ex: Option<Exchange>,
    sent: Vec<SseEvent>,
    served: Option<(usize, usize)>,
}

impl StreamLog {
    fn finish(&mut self) {
        if let Some(mut ex) = self.ex.take() {
            let report = check_stream(&self.sent);
            ex.response = report.message.and_then(|m| serde_json::to_value(m).ok());
            ex.events = Some(std::mem::take(&mut self.sent));
            self.stub.recorder.record(ex);
        }
    }
}

impl Drop for StreamLog {
    /// Dropped before its end: the stop cut it, or its client went away (hyper drops the body when it
    /// cannot write). A client's stream gives its turn back unless `disconnect_consumes_turn`.
    fn drop(&mut self) {
        if let Some(ex) = self.ex.as_mut() {
            if self.stub.cutting.load(Ordering::SeqCst) {
                ex.violation = Some(Violation {
                    kind: "shutdown".into(),
                    message: format!(
                        "the stub stopped while this stream was open: cut after {} events",
                        self.sent.len()
                    ),
                });
            } else {
                ex.client_disconnected = true;
                if let Some((slot, turn)) = self.served {
                    if !self.stub.script.stub.disconnect_consumes_turn {
                        self.stub.give_back(slot, turn);
                    }
                }
            }
        }
        self.finish();
    }
}

fn stream_response(stub: &Arc<Stub>, a: Arrival, events: Vec<SseEvent>, delay_ms: u64, end: End) -> Response {
    let id = a.request_id();
    let log = StreamLog { stub: stub.clone(), ex: Some(a.ex), sent: Vec::new(), served: a.served };
    let state = (events.into_iter(), log, false);
    let body = stream::unfold(state, move |(mut events, mut log, done)| async move {
        if done {
            return None;
        }
        match events.next() {
            Some(ev) => {
                if delay_ms > 0 {
                    tokio::time::sleep(Duration::from_millis(delay_ms)).await;
                }
                let bytes = Bytes::from(ev.to_wire());
                log.sent.push(ev);
                if events.len() == 0 && matches!(end, End::Complete) {
                    log.finish();
                }
                Some((Ok::<Bytes, std::io::Error>(bytes), (events, log, false)))
            }
            None => match end {
                End::Complete => {
                    log.finish();
                    None
                }
                End::Cut => {
                    // Returning Pending once lets hyper flush the events already written, so the
                    // client really receives them before the connection is aborted.
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    log.finish();
                    let err = std::io::Error::new(
                        std::io::ErrorKind::ConnectionAborted,
                        "stub-messages: injected stream cut",
                    );
                    Some((Err(err), (events, log, true)))
                }
            },
        }
    });
    let mut resp = Response::new(Body::from_stream(body));
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream; charset=utf-8"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    insert(&mut resp, "request-id", id);
    resp
}

async fn count_tokens(
    State(stub): State<Arc<Stub>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let arrival = Arrival::new(&stub, &method, &uri, &headers, ExchangeKind::CountTokens);
    let (mut a, value, _) = match arrival.body(&stub, &headers, body, false).await {
        Ok(x) => x,
        Err(resp) => return resp,
    };
    let problem = match (value.get("model"), value.get("messages")) {
        (_, _) if !value.is_object() => Some("request body must be a JSON object"),
        (None, _) => Some("model: Field required"),
        (_, None) => Some("messages: Field required"),
        (_, Some(m)) if !m.is_array() => Some("messages: Input should be a valid list"),
        _ => None,
    };
    if let Some(p) = problem {
        a.ex.kind = ExchangeKind::Invalid;
        a.ex.request = Some(value);
        return a.error(&stub, StatusCode::BAD_REQUEST, "invalid_request", p.to_string());
    }
    let n = stub.script.stub.count_tokens.unwrap_or_else(|| (value.to_string().len() as u64).div_ceil(4));
    a.ex.request = Some(value);
    a.json(&stub, StatusCode::OK, json!({"input_tokens": n}), &[])
}

fn model_json(id: &str, name: &str) -> Value {
    json!({"type": "model", "id": id, "display_name": name, "created_at": "2025-09-29T00:00:00Z"})
}

async fn models(State(stub): State<Arc<Stub>>, method: Method, uri: Uri, headers: HeaderMap) -> Response {
    let a = Arrival::new(&stub, &method, &uri, &headers, ExchangeKind::Models);
    let data: Vec<Value> = MODELS.iter().map(|(id, n)| model_json(id, n)).collect();
    let body = json!({"data": data, "has_more": false, "first_id": MODELS[0].0, "last_id": MODELS[MODELS.len() - 1].0});
    a.json(&stub, StatusCode::OK, body, &[])
}

async fn model(
    State(stub): State<Arc<Stub>>,
    Path(id): Path<String>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    let a = Arrival::new(&stub, &method, &uri, &headers, ExchangeKind::Models);
    match MODELS.iter().find(|(m, _)| *m == id) {
        Some((m, n)) => a.json(&stub, StatusCode::OK, model_json(m, n), &[]),
        None => a.error(&stub, StatusCode::NOT_FOUND, "unknown_model", format!("model: {id}")),
    }
}

async fn warmup(State(stub): State<Arc<Stub>>, method: Method, uri: Uri, headers: HeaderMap) -> Response {
    let a = Arrival::new(&stub, &method, &uri, &headers, ExchangeKind::Warmup);
    if method != Method::GET && method != Method::HEAD {
        return unknown_response(&stub, a, &method, &uri);
    }
    a.json(&stub, StatusCode::OK, json!({"ok": true}), &[])
}

async fn unknown(State(stub): State<Arc<Stub>>, method: Method, uri: Uri, headers: HeaderMap) -> Response {
    let a = Arrival::new(&stub, &method, &uri, &headers, ExchangeKind::Unknown);
    unknown_response(&stub, a, &method, &uri)
}

fn unknown_response(stub: &Stub, mut a: Arrival, method: &Method, uri: &Uri) -> Response {
    a.ex.kind = ExchangeKind::Unknown;
    let msg = format!(
        "stub-messages does not serve {method} {}; it serves POST /v1/messages, POST /v1/messages/count_tokens, GET /v1/models, GET /v1/models/{{id}}, HEAD|GET / and HEAD|GET /api/hello",
        uri.path()
    );
    a.error(stub, StatusCode::NOT_FOUND, "unknown_endpoint", msg)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asst(ids: &[&str]) -> Value {
        json!({"role": "assistant", "content": ids.iter().map(|i| json!({"type": "tool_use", "id": i, "name": "X", "input": {}})).collect::<Vec<_>>()})
    }
    fn user(ids: &[&str]) -> Value {
        json!({"role": "user", "content": ids.iter().map(|i| json!({"type": "tool_result", "tool_use_id": i, "content": "r"})).collect::<Vec<_>>()})
    }

    #[test]
    fn pairing_accepts_exact_answers_and_names_missing_ids() {
        let q = json!({"role": "user", "content": "go"});
        assert!(crate::validate::check_tool_pairing(&[q.clone(), asst(&["a", "b"]), user(&["b", "a"])]).is_ok());
        let e = crate::validate::check_tool_pairing(&[q.clone(), asst(&["a", "b"]), user(&["a"])])
            .err()
            .unwrap_or_default();
        assert!(
            e.starts_with("messages.2: `tool_use` ids were found without `tool_result` blocks immediately after: b."),
            "{e}"
        );
        let e = crate::validate::check_tool_pairing(&[q.clone(), asst(&["a"]), user(&["a", "a"])])
            .err()
            .unwrap_or_default();
        assert!(e.contains("Found multiple `tool_result` blocks with id: a"), "{e}");
        let e = crate::validate::check_tool_pairing(&[q, asst(&["a"]), user(&["a", "z"])]).err().unwrap_or_default();
        assert!(e.contains("unexpected `tool_use_id` found in `tool_result` blocks: z"), "{e}");
    }
}
