//! The artifact service of a probe run (ART-1): a real local HTTP server (axum on `127.0.0.1:0`) that
//! the built-in Artifact tool (probelab-runtime's `tools/artifact.rs`) talks to. Objects live in memory, each with
//! its versions (content, author, the writer's request token) and its comments. Started per probe by
//! [`crate::run`] when the probe turns the Artifact tool on, stopped with the run; never a mock inside
//! the tool.
//!
//! Its files live in `<sandbox>/artifact-service/` (outside the cwd and HOME, so no tool result shows
//! them by accident), which is how a probe drives it and checks it without any new probe syntax:
//! - `inbox/*.json`: actions of *other parties*, applied in file-name order before each request is
//!   handled, then removed. A probe writes them as fixture files (before the run) or as
//!   `[[fixture.fault]] kind = "write"` changes (before a given turn). Each file holds one action or an
//!   array of them ([`Action`]): `create` an object, `publish` a new version as someone else, add a
//!   `comment`, or arm a `fault`.
//! - `log.txt`: one line per request and per inbox action, in order, without times or ports — a probe
//!   checks it with `file = "{sandbox}/artifact-service/log.txt"` and `equals`, e.g. to show that an
//!   unknown outcome led to one publish and a re-read, never to a second publish.
//! - `state.json`: the objects after the last request (id → title, live version, version authors,
//!   comment count), for `json` pointer checks.
//!
//! Once either file cannot be written, every request is answered `500` with `evidence_lost` and the
//! reason: the files would no longer hold what the session did.
//!
//! API (JSON): `GET /v1/artifacts/{id}`; `GET /v1/artifacts?token=T` (the objects a request token
//! created); `POST /v1/artifacts` `{title, content, token}`; `POST /v1/artifacts/{id}/versions`
//! `{base_version, content, title?, token}` (409 unless `base_version` is the live version: the
//! compare-and-swap behind the tool's live-version check); `POST /v1/artifacts/{id}/edits`
//! `{base_version, ops: [{old_string, new_string}], token}` (a live edit made on the server, each
//! `old_string` must occur exactly once; all ops or none; 422 otherwise); `POST
//! /v1/artifacts/{id}/comments` `{text, token}`. Errors are `{"error": {"type", "message"}}`.
//!
//! Faults ([`FaultKind`]): `applied-504` applies the write, then answers 504 Gateway Timeout;
//! `applied-reset` applies it, then starts a 200 answer whose body breaks off (the connection closes
//! mid-answer); `unapplied-504` applies nothing and answers 504; `refused-503` applies nothing and
//! answers 503. All but the last are the "unknown outcome" of ART-1: the writer cannot tell from the
//! answer whether the write happened.

use axum::body::{Body, Bytes};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path as FsPath, PathBuf};
use std::sync::{Arc, Mutex};

/// The service's directory under the sandbox root.
pub const SERVICE_DIR: &str = "artifact-service";

/// The author the service records for the session's own writes.
pub const SESSION_AUTHOR: &str = "claude";

/// One version of an object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version {
    /// 1-based.
    pub version: u64,
    /// The whole content.
    pub content: String,
    /// Who wrote it.
    pub author: String,
    /// The writer's request token (empty for inbox actions).
    pub token: String,
}

/// A comment on an object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Comment {
    /// `c1`, `c2`, … (service-wide).
    pub id: String,
    /// Who wrote it.
    pub author: String,
    /// The text, as written.
    pub text: String,
    /// The live version when it was written.
    pub version: u64,
    /// The writer's request token (empty for inbox actions).
    pub token: String,
}

/// An object with its history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Object {
    /// `art_` + 8 lowercase hex digits.
    pub id: String,
    /// Title.
    pub title: String,
    /// Versions, oldest first (never empty).
    pub versions: Vec<Version>,
    /// Comments, oldest first.
    pub comments: Vec<Comment>,
}

impl Object {
    fn live(&self) -> u64 {
        self.versions.last().map(|v| v.version).unwrap_or(0)
    }

    fn content(&self) -> &str {
        self.versions.last().map(|v| v.content.as_str()).unwrap_or("")
    }

    fn to_json(&self) -> Value {
        json!({
            "id": self.id,
            "title": self.title,
            "version": self.live(),
            "content": self.content(),
            "history": self.versions.iter().map(|v| json!({"version": v.version, "author": v.author, "token": v.token})).collect::<Vec<_>>(),
            "comments": self.comments.iter().map(|c| json!({"id": c.id, "author": c.author, "text": c.text, "version": c.version, "token": c.token})).collect::<Vec<_>>(),
        })
    }
}

/// What a fault does to the next matching write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum FaultKind {
    /// Apply, then answer 504 (an unknown outcome for the writer).
    #[serde(rename = "applied-504")]
    Applied504,
    /// Apply, then break the answer off mid-body (an unknown outcome for the writer).
    #[serde(rename = "applied-reset")]
    AppliedReset,
    /// Apply nothing, answer 503 (a known outcome: not applied).
    #[serde(rename = "refused-503")]
    Refused503,
    /// Apply nothing, answer 504 (an unknown outcome for the writer, that did not happen).
    #[serde(rename = "unapplied-504")]
    Unapplied504,
}

impl FaultKind {
    fn name(self) -> &'static str {
        match self {
            FaultKind::Applied504 => "applied-504",
            FaultKind::AppliedReset => "applied-reset",
            FaultKind::Refused503 => "refused-503",
            FaultKind::Unapplied504 => "unapplied-504",
        }
    }
}

/// Which writes a fault hits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WriteKind {
    /// `POST /v1/artifacts`.
    Create,
    /// `POST …/versions`.
    Publish,
    /// `POST …/edits`.
    Edit,
    /// `POST …/comments`.
    Comment,
}

fn default_times() -> u32 {
    1
}

/// An action of another party, from the inbox.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case", deny_unknown_fields)]
pub enum Action {
    /// A new object (the next id), as `author`. `content`, or `repeat` cycled to `chars` characters.
    Create {
        /// Title.
        title: String,
        /// Content.
        #[serde(default)]
        content: Option<String>,
        /// A pattern to repeat instead of `content`.
        #[serde(default)]
        repeat: Option<String>,
        /// Length of the repeated content, in characters.
        #[serde(default)]
        chars: Option<usize>,
        /// Author (default `someone`).
        #[serde(default)]
        author: Option<String>,
    },
    /// A new version of an object, as `author` (a concurrent editor).
    Publish {
        /// The object.
        artifact: String,
        /// The new content.
        content: String,
        /// Author (default `someone`).
        #[serde(default)]
        author: Option<String>,
    },
    /// A comment, as `author`.
    Comment {
        /// The object.
        artifact: String,
        /// Text.
        text: String,
        /// Author (default `someone`).
        #[serde(default)]
        author: Option<String>,
    },
    /// Arms a fault for the next `times` writes of kind `on`.
    Fault {
        /// Which writes.
        on: WriteKind,
        /// What happens.
        kind: FaultKind,
        /// How many (default 1).
        #[serde(default = "default_times")]
        times: u32,
    },
}

#[derive(Debug)]
struct Armed {
    on: WriteKind,
    kind: FaultKind,
    left: u32,
}

/// The service's state.
#[derive(Debug)]
struct Inner {
    dir: PathBuf,
    /// The first write of the service's evidence (`log.txt`, `state.json`) that failed: from then on every
    /// request is answered 500 with it ([`evidence_kept`]), never as if it had been recorded.
    failed: std::sync::OnceLock<String>,
    objects: BTreeMap<String, Object>,
    next_id: u64,
    next_comment: u64,
    faults: Vec<Armed>,
}

type Shared = Arc<Mutex<Inner>>;

impl Inner {
    fn log(&self, line: &str) {
        let path = self.dir.join("log.txt");
        let written =
            std::fs::OpenOptions::new().create(true).append(true).open(&path).and_then(|mut f| writeln!(f, "{line}"));
        self.note_failure(&path, written);
    }

    /// Keeps the first failed write (later ones add nothing: the evidence is incomplete from the first).
    fn note_failure(&self, path: &FsPath, written: std::io::Result<()>) {
        if let Err(e) = written {
            let _ = self.failed.set(format!("{}: {e}", path.display()));
        }
    }

    fn save_state(&self) {
        let objects: serde_json::Map<String, Value> = self
            .objects
            .values()
            .map(|o| {
                (
                    o.id.clone(),
                    json!({
                        "title": o.title,
                        "version": o.live(),
                        "authors": o.versions.iter().map(|v| v.author.clone()).collect::<Vec<_>>(),
                        "comments": o.comments.len(),
                    }),
                )
            })
            .collect();
        let text = format!("{:#}", json!({ "objects": objects }));
        let path = self.dir.join("state.json");
        self.note_failure(&path, std::fs::write(&path, text + "\n"));
    }

    fn new_id(&mut self) -> String {
        self.next_id += 1;
        format!("art_{:08x}", self.next_id)
    }

    fn new_comment_id(&mut self) -> String {
        self.next_comment += 1;
        format!("c{}", self.next_comment)
    }

    /// Applies the inbox, file by file in name order; each file is removed once read.
    fn drain_inbox(&mut self) {
        let inbox = self.dir.join("inbox");
        let mut files: Vec<PathBuf> = std::fs::read_dir(&inbox)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        files.sort();
        for f in files {
            let name = f.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let text = std::fs::read_to_string(&f).map_err(|e| format!("cannot read it: {e}"));
            let _ = std::fs::remove_file(&f);
            let actions: Result<Vec<Action>, String> =
                match text.and_then(|t| serde_json::from_str::<Value>(&t).map_err(|e| e.to_string())) {
                    Ok(Value::Array(items)) => {
                        items.into_iter().map(|v| serde_json::from_value(v).map_err(|e| e.to_string())).collect()
                    }
                    Ok(v) => serde_json::from_value(v).map(|a| vec![a]).map_err(|e| e.to_string()),
                    Err(e) => Err(e),
                };
            match actions {
                Ok(actions) => {
                    for a in actions {
                        let line = self.apply(a);
                        self.log(&format!("inbox {name}: {line}"));
                    }
                }
                Err(e) => self.log(&format!("inbox {name}: not applied: {e}")),
            }
        }
    }

    fn apply(&mut self, a: Action) -> String {
        match a {
            Action::Create { title, content, repeat, chars, author } => {
                let content = match (content, repeat) {
                    (Some(c), _) => c,
                    (None, Some(r)) if !r.is_empty() => r.chars().cycle().take(chars.unwrap_or(0)).collect(),
                    _ => String::new(),
                };
                let author = author.unwrap_or_else(|| "someone".into());
                let id = self.new_id();
                let line = format!("create {id} v1 by {author} ({} chars)", content.chars().count());
                self.objects.insert(
                    id.clone(),
                    Object {
                        id,
                        title,
                        versions: vec![Version { version: 1, content, author, token: String::new() }],
                        comments: Vec::new(),
                    },
                );
                line
            }
            Action::Publish { artifact, content, author } => {
                let author = author.unwrap_or_else(|| "someone".into());
                match self.objects.get_mut(&artifact) {
                    Some(o) => {
                        let v = o.live() + 1;
                        o.versions.push(Version { version: v, content, author: author.clone(), token: String::new() });
                        format!("publish {artifact} v{v} by {author}")
                    }
                    None => format!("publish {artifact}: no such artifact"),
                }
            }
            Action::Comment { artifact, text, author } => {
                let author = author.unwrap_or_else(|| "someone".into());
                let cid = self.new_comment_id();
                match self.objects.get_mut(&artifact) {
                    Some(o) => {
                        let version = o.live();
                        o.comments.push(Comment {
                            id: cid.clone(),
                            author: author.clone(),
                            text,
                            version,
                            token: String::new(),
                        });
                        format!("comment {cid} on {artifact} v{version} by {author}")
                    }
                    None => format!("comment on {artifact}: no such artifact"),
                }
            }
            Action::Fault { on, kind, times } => {
                self.faults.push(Armed { on, kind, left: times });
                format!("fault {} armed for the next {times} {on:?} write(s)", kind.name()).to_lowercase()
            }
        }
    }

    /// The armed fault for this write, if any (consumed).
    fn take_fault(&mut self, on: WriteKind) -> Option<FaultKind> {
        let f = self.faults.iter_mut().find(|f| f.on == on && f.left > 0)?;
        f.left -= 1;
        let kind = f.kind;
        self.faults.retain(|f| f.left > 0);
        Some(kind)
    }
}

/// A JSON answer.
fn reply(status: StatusCode, body: Value) -> Response {
    (status, [("content-type", "application/json")], body.to_string()).into_response()
}

fn error(status: StatusCode, kind: &str, message: String) -> Response {
    reply(status, json!({"error": {"type": kind, "message": message}}))
}

/// A request body as `T`, or the 400 answer.
fn body<T: serde::de::DeserializeOwned>(bytes: &Bytes) -> Result<T, Box<Response>> {
    serde_json::from_slice(bytes)
        .map_err(|e| Box::new(error(StatusCode::BAD_REQUEST, "invalid_request", format!("bad body: {e}"))))
}

/// The answer to an applied write, bent by a fault.
fn answer_write(fault: Option<FaultKind>, status: StatusCode, body: Value) -> Response {
    match fault {
        Some(FaultKind::Applied504) => {
            error(StatusCode::GATEWAY_TIMEOUT, "gateway_timeout", "the upstream did not answer in time".into())
        }
        Some(FaultKind::AppliedReset) => {
            // a 200 whose body breaks off: the client sees the connection close mid-answer
            let first = Bytes::from_static(b"{\"id\":");
            let stream = futures_util::stream::iter(vec![
                Ok::<Bytes, std::io::Error>(first),
                Err(std::io::Error::new(std::io::ErrorKind::ConnectionReset, "fault: applied-reset")),
            ]);
            Response::builder()
                .status(StatusCode::OK)
                .header("content-type", "application/json")
                .body(Body::from_stream(stream))
                .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
        }
        _ => reply(status, body),
    }
}

/// The answer and the log note of a fault that keeps the write from being applied.
fn not_applied(fault: Option<FaultKind>) -> Option<(Response, String)> {
    let f = fault?;
    let (status, kind) = match f {
        FaultKind::Refused503 => (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
        FaultKind::Unapplied504 => (StatusCode::GATEWAY_TIMEOUT, "gateway_timeout"),
        _ => return None,
    };
    let resp = error(status, kind, "the service could not take the request".into());
    Some((resp, format!("{} (fault {}: not applied)", status.as_u16(), f.name())))
}

fn fault_note(fault: Option<FaultKind>) -> String {
    match fault {
        Some(f) => format!(" (fault {}: answered {})", f.name(), fault_status(f)),
        None => String::new(),
    }
}

fn fault_status(f: FaultKind) -> &'static str {
    match f {
        FaultKind::Applied504 => "504",
        FaultKind::AppliedReset => "200 cut off",
        FaultKind::Refused503 => "503",
        FaultKind::Unapplied504 => "504",
    }
}

fn lock(s: &Shared) -> std::sync::MutexGuard<'_, Inner> {
    s.lock().unwrap_or_else(|p| p.into_inner())
}

async fn get_one(State(s): State<Shared>, Path(id): Path<String>) -> Response {
    let mut st = lock(&s);
    st.drain_inbox();
    let r = match st.objects.get(&id) {
        Some(o) => {
            st.log(&format!("GET /v1/artifacts/{id} -> 200 v{}", o.live()));
            reply(StatusCode::OK, o.to_json())
        }
        None => {
            st.log(&format!("GET /v1/artifacts/{id} -> 404"));
            error(StatusCode::NOT_FOUND, "not_found", format!("no artifact {id}"))
        }
    };
    st.save_state();
    r
}

#[derive(Debug, Deserialize)]
struct ListQuery {
    #[serde(default)]
    token: Option<String>,
}

async fn list(State(s): State<Shared>, Query(q): Query<ListQuery>) -> Response {
    let mut st = lock(&s);
    st.drain_inbox();
    let token = q.token.unwrap_or_default();
    let found: Vec<Value> = st
        .objects
        .values()
        .filter(|o| !token.is_empty() && o.versions.first().is_some_and(|v| v.token == token))
        .map(|o| json!({"id": o.id, "version": o.live()}))
        .collect();
    st.log(&format!("GET /v1/artifacts?token=… -> 200 ({} found)", found.len()));
    st.save_state();
    reply(StatusCode::OK, json!({"artifacts": found}))
}

#[derive(Debug, Deserialize)]
struct CreateBody {
    title: String,
    content: String,
    #[serde(default)]
    token: String,
}

async fn create(State(s): State<Shared>, raw: Bytes) -> Response {
    let b: CreateBody = match body(&raw) {
        Ok(b) => b,
        Err(r) => return *r,
    };
    let mut st = lock(&s);
    st.drain_inbox();
    let fault = st.take_fault(WriteKind::Create);
    let r = if let Some((resp, note)) = not_applied(fault) {
        st.log(&format!("POST /v1/artifacts -> {note}"));
        resp
    } else {
        let id = st.new_id();
        st.log(&format!("POST /v1/artifacts -> created {id} v1{}", fault_note(fault)));
        st.objects.insert(
            id.clone(),
            Object {
                id: id.clone(),
                title: b.title,
                versions: vec![Version {
                    version: 1,
                    content: b.content,
                    author: SESSION_AUTHOR.into(),
                    token: b.token,
                }],
                comments: Vec::new(),
            },
        );
        answer_write(fault, StatusCode::CREATED, json!({"id": id, "version": 1}))
    };
    st.save_state();
    r
}

#[derive(Debug, Deserialize)]
struct PublishBody {
    base_version: u64,
    content: String,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    token: String,
}

/// Checks the object exists and `base` is its live version: the compare-and-swap of every overwrite.
fn check_base(st: &Inner, id: &str, base: u64, what: &str) -> Result<(), Box<Response>> {
    match st.objects.get(id) {
        None => {
            st.log(&format!("POST /v1/artifacts/{id}/{what} base={base} -> 404"));
            Err(Box::new(error(StatusCode::NOT_FOUND, "not_found", format!("no artifact {id}"))))
        }
        Some(o) if o.live() != base => {
            let live = o.live();
            let by = o.versions.last().map(|v| v.author.clone()).unwrap_or_default();
            st.log(&format!("POST /v1/artifacts/{id}/{what} base={base} -> 409 (live is v{live})"));
            Err(Box::new(reply(
                StatusCode::CONFLICT,
                json!({"error": {"type": "version_conflict", "message": format!("live version is v{live}"), "live_version": live, "live_author": by}}),
            )))
        }
        Some(_) => Ok(()),
    }
}

async fn publish(State(s): State<Shared>, Path(id): Path<String>, raw: Bytes) -> Response {
    let b: PublishBody = match body(&raw) {
        Ok(b) => b,
        Err(r) => return *r,
    };
    let mut st = lock(&s);
    st.drain_inbox();
    if let Err(r) = check_base(&st, &id, b.base_version, "versions") {
        st.save_state();
        return *r;
    }
    let fault = st.take_fault(WriteKind::Publish);
    let r = if let Some((resp, note)) = not_applied(fault) {
        st.log(&format!("POST /v1/artifacts/{id}/versions base={} -> {note}", b.base_version));
        resp
    } else {
        let v = b.base_version + 1;
        if let Some(o) = st.objects.get_mut(&id) {
            if let Some(t) = b.title {
                o.title = t;
            }
            o.versions.push(Version { version: v, content: b.content, author: SESSION_AUTHOR.into(), token: b.token });
        }
        st.log(&format!(
            "POST /v1/artifacts/{id}/versions base={} -> published v{v}{}",
            b.base_version,
            fault_note(fault)
        ));
        answer_write(fault, StatusCode::OK, json!({"id": id, "version": v}))
    };
    st.save_state();
    r
}

#[derive(Debug, Deserialize)]
struct EditOp {
    old_string: String,
    new_string: String,
}

#[derive(Debug, Deserialize)]
struct EditBody {
    base_version: u64,
    ops: Vec<EditOp>,
    #[serde(default)]
    token: String,
}

/// Applies live-edit ops in order on `content`: each `old_string` must occur exactly once in the text
/// as the previous ops left it.
fn apply_ops(content: &str, ops: &[EditOp]) -> Result<String, String> {
    let mut out = content.to_string();
    for (i, op) in ops.iter().enumerate() {
        if op.old_string.is_empty() {
            return Err(format!("op {}: old_string is empty", i + 1));
        }
        match out.matches(op.old_string.as_str()).count() {
            0 => return Err(format!("op {}: old_string not found", i + 1)),
            1 => out = out.replacen(op.old_string.as_str(), &op.new_string, 1),
            n => return Err(format!("op {}: old_string matches {n} places; it must match exactly one", i + 1)),
        }
    }
    Ok(out)
}

async fn edit(State(s): State<Shared>, Path(id): Path<String>, raw: Bytes) -> Response {
    let b: EditBody = match body(&raw) {
        Ok(b) => b,
        Err(r) => return *r,
    };
    let mut st = lock(&s);
    st.drain_inbox();
    if let Err(r) = check_base(&st, &id, b.base_version, "edits") {
        st.save_state();
        return *r;
    }
    let current = st.objects.get(&id).map(|o| o.content().to_string()).unwrap_or_default();
    let new = match apply_ops(&current, &b.ops) {
        Ok(n) => n,
        Err(e) => {
            st.log(&format!("POST /v1/artifacts/{id}/edits base={} -> 422 ({e})", b.base_version));
            st.save_state();
            return error(StatusCode::UNPROCESSABLE_ENTITY, "edit_failed", e);
        }
    };
    let fault = st.take_fault(WriteKind::Edit);
    let r = if let Some((resp, note)) = not_applied(fault) {
        st.log(&format!("POST /v1/artifacts/{id}/edits base={} -> {note}", b.base_version));
        resp
    } else {
        let v = b.base_version + 1;
        if let Some(o) = st.objects.get_mut(&id) {
            o.versions.push(Version { version: v, content: new, author: SESSION_AUTHOR.into(), token: b.token });
        }
        st.log(&format!(
            "POST /v1/artifacts/{id}/edits base={} -> edited v{v} ({} ops){}",
            b.base_version,
            b.ops.len(),
            fault_note(fault)
        ));
        answer_write(fault, StatusCode::OK, json!({"id": id, "version": v}))
    };
    st.save_state();
    r
}

#[derive(Debug, Deserialize)]
struct CommentBody {
    text: String,
    #[serde(default)]
    token: String,
}

async fn comment(State(s): State<Shared>, Path(id): Path<String>, raw: Bytes) -> Response {
    let b: CommentBody = match body(&raw) {
        Ok(b) => b,
        Err(r) => return *r,
    };
    let mut st = lock(&s);
    st.drain_inbox();
    if !st.objects.contains_key(&id) {
        st.log(&format!("POST /v1/artifacts/{id}/comments -> 404"));
        st.save_state();
        return error(StatusCode::NOT_FOUND, "not_found", format!("no artifact {id}"));
    }
    let fault = st.take_fault(WriteKind::Comment);
    let r = if let Some((resp, note)) = not_applied(fault) {
        st.log(&format!("POST /v1/artifacts/{id}/comments -> {note}"));
        resp
    } else {
        let cid = st.new_comment_id();
        let mut version = 0;
        if let Some(o) = st.objects.get_mut(&id) {
            version = o.live();
            o.comments.push(Comment {
                id: cid.clone(),
                author: SESSION_AUTHOR.into(),
                text: b.text,
                version,
                token: b.token,
            });
        }
        st.log(&format!("POST /v1/artifacts/{id}/comments -> added {cid} on v{version}{}", fault_note(fault)));
        answer_write(fault, StatusCode::CREATED, json!({"id": cid, "version": version}))
    };
    st.save_state();
    r
}

async fn not_found() -> Response {
    error(StatusCode::NOT_FOUND, "not_found", "no such endpoint".into())
}

/// A running artifact service (`url()` is the API base, never shown to the model).
pub use stub_messages::Running;

/// The service's directory for a sandbox root.
pub fn dir_for(sandbox_root: &FsPath) -> PathBuf {
    sandbox_root.join(SERVICE_DIR)
}

/// Answers 500 in place of a request's answer once the service could not write its evidence: a probe
/// checks `log.txt` and `state.json`, which would no longer hold what the session did.
async fn evidence_kept(State(s): State<Shared>, req: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let answer = next.run(req).await;
    match lock(&s).failed.get() {
        Some(why) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "evidence_lost",
            format!("probelab artifact service: cannot write its evidence: {why}"),
        ),
        None => answer,
    }
}

/// Starts the service with its files in `dir` (created; an `inbox/` already there is applied on the
/// first request).
pub async fn start(dir: &FsPath) -> Result<Running, crate::services::ServiceError> {
    let inbox = dir.join("inbox");
    std::fs::create_dir_all(&inbox).map_err(|source| crate::services::ServiceError::Create { path: inbox, source })?;
    let inner = Inner {
        dir: dir.to_path_buf(),
        failed: std::sync::OnceLock::new(),
        objects: BTreeMap::new(),
        next_id: 0,
        next_comment: 0,
        faults: Vec::new(),
    };
    let shared: Shared = Arc::new(Mutex::new(inner));
    let app = Router::new()
        .route("/v1/artifacts", get(list).post(create))
        .route("/v1/artifacts/{id}", get(get_one))
        .route("/v1/artifacts/{id}/versions", post(publish))
        .route("/v1/artifacts/{id}/edits", post(edit))
        .route("/v1/artifacts/{id}/comments", post(comment))
        .fallback(not_found)
        .layer(axum::middleware::from_fn_with_state(shared.clone(), evidence_kept))
        .with_state(shared);
    stub_messages::serve_router(app, ([127, 0, 0, 1], 0).into())
        .await
        .map_err(|source| crate::services::ServiceError::Serve { service: "artifact", source })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(o: &str, n: &str) -> EditOp {
        EditOp { old_string: o.into(), new_string: n.into() }
    }

    #[test]
    fn ops_apply_in_order_and_need_exactly_one_match() {
        assert_eq!(apply_ops("a b c", &[op("b", "x"), op("x c", "y")]), Ok("a y".into()));
        assert_eq!(
            apply_ops("a a", &[op("a", "b")]),
            Err("op 1: old_string matches 2 places; it must match exactly one".into())
        );
        assert_eq!(apply_ops("a", &[op("z", "b")]), Err("op 1: old_string not found".into()));
        assert_eq!(apply_ops("a", &[op("", "b")]), Err("op 1: old_string is empty".into()));
    }

    #[tokio::test]
    async fn inbox_actions_apply_before_a_request_and_faults_bend_the_answer() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let dir = d.path().join(SERVICE_DIR);
        let svc = start(&dir).await.unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(
            dir.join("inbox/01.json"),
            r#"[{"action":"create","title":"t","content":"hello","author":"alice"},{"action":"fault","on":"publish","kind":"applied-504"}]"#,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let c = reqwest::Client::new();
        let r =
            c.get(format!("{}/v1/artifacts/art_00000001", svc.url())).send().await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.status(), 200);
        let r = c
            .post(format!("{}/v1/artifacts/art_00000001/versions", svc.url()))
            .json(&json!({"base_version": 1, "content": "v2", "token": "t1"}))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.status(), 504);
        let r = c
            .post(format!("{}/v1/artifacts/art_00000001/versions", svc.url()))
            .json(&json!({"base_version": 1, "content": "again", "token": "t2"}))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.status(), 409);
        svc.stop().await;
        let log = std::fs::read_to_string(dir.join("log.txt")).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            log,
            "inbox 01.json: create art_00000001 v1 by alice (5 chars)\n\
             inbox 01.json: fault applied-504 armed for the next 1 publish write(s)\n\
             GET /v1/artifacts/art_00000001 -> 200 v1\n\
             POST /v1/artifacts/art_00000001/versions base=1 -> published v2 (fault applied-504: answered 504)\n\
             POST /v1/artifacts/art_00000001/versions base=1 -> 409 (live is v2)\n"
        );
        assert!(!dir.join("inbox/01.json").exists());
    }

    #[tokio::test]
    async fn an_inbox_file_that_cannot_be_read_is_logged_as_such_not_as_empty_json() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let dir = d.path().join(SERVICE_DIR);
        let svc = start(&dir).await.unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(dir.join("inbox/01.json"), b"[\xff]").unwrap_or_else(|e| panic!("{e}"));
        let c = reqwest::Client::new();
        let r = c.get(format!("{}/v1/artifacts", svc.url())).send().await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.status(), 200);
        svc.stop().await;
        let log = std::fs::read_to_string(dir.join("log.txt")).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            log.starts_with("inbox 01.json: not applied: cannot read it: stream did not contain valid UTF-8"),
            "{log}"
        );
    }

    #[tokio::test]
    async fn a_request_whose_evidence_cannot_be_written_is_answered_500_not_as_if_recorded() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join(SERVICE_DIR);
        let svc = start(&dir).await.unwrap();
        // a directory in state.json's place: no write opens it, for root too (the log was dropped the same way)
        std::fs::create_dir(dir.join("state.json")).unwrap();
        let c = reqwest::Client::new();
        let r = c.post(format!("{}/v1/artifacts", svc.url())).body(r#"{"title": "t", "content": "c"}"#);
        let r = r.send().await.unwrap();
        assert_eq!(r.status(), 500);
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["error"]["type"], "evidence_lost");
        let m = v["error"]["message"].as_str().unwrap();
        assert!(
            m.starts_with("probelab artifact service: cannot write its evidence: ") && m.contains("state.json"),
            "{m}"
        );
        // and every request after it: the evidence is incomplete from then on
        let r = c.get(format!("{}/v1/artifacts/art_00000001", svc.url())).send().await.unwrap();
        assert_eq!(r.status(), 500);
        svc.stop().await;
    }
}
