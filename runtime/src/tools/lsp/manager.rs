//! The session's LSP servers: one per configured server, chosen by file extension (lower-cased; the
//! first server configured for an extension wins), started at the first call that needs it
//! (`initialize` → `initialized`), files opened once per server run (`textDocument/didOpen`, version
//! counted per document over the session), requests sent with a deadline, and `shutdown` → `exit` when
//! the session ends. This follows the reference's manager (Claude Code 2.1.235's bundled source), with
//! these decisions where it has no deadline or we must stay deterministic:
//!
//! - a request gets [`REQUEST_TIMEOUT_MS`] (the reference waits forever on a hung server): past it the
//!   server is killed and counted as crashed, and the call's result says so;
//! - `initialize` gets the server's `startupTimeout`, else [`STARTUP_TIMEOUT_MS`];
//! - a server that crashed, hung, or broke the protocol is restarted at the next call that needs it,
//!   at most `maxRestarts` ([`MAX_RESTARTS`]) times in a row, unless `restartOnCrash = false`;
//! - the LSP tool shows from the session's second request on (the reference loads its servers in the
//!   background while the first request goes out), see [`LspManager::tool_visible`].

use super::client::{Client, RpcError, SpawnError};
use super::config::ServerConfig;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Deadline of one request to a server (our decision: the reference has none; LSP-3's round trip must
/// end with a clear result when a server hangs).
pub const REQUEST_TIMEOUT_MS: u64 = 30_000;
/// Env switch of the session that shortens `REQUEST_TIMEOUT_MS` (probes of a hanging server).
pub const ENV_REQUEST_TIMEOUT_MS: &str = "PROBELAB_LSP_REQUEST_TIMEOUT_MS";
/// Deadline of `initialize` when the server sets no `startupTimeout` (our decision, as above).
pub const STARTUP_TIMEOUT_MS: u64 = 30_000;
/// Deadline of `shutdown` when the server sets no `shutdownTimeout`.
pub const SHUTDOWN_TIMEOUT_MS: u64 = 5_000;
/// Crash recoveries in a row before a server is given up (the reference's `maxRestarts` default).
pub const MAX_RESTARTS: u32 = 3;
/// What a request gets when its server's connection dies under it (crash, exit, protocol violation):
/// the words of the reference's JSON-RPC library (measured in `probes/claude-code/lsp-failures.toml`).
pub const DISPOSED: &str = "Pending response rejected since connection got disposed";
/// Documents kept open per session; past it the least recently used gets `didClose` (the reference's 50).
pub const MAX_OPEN_DOCUMENTS: usize = 50;

/// Why a request got no answer: the texts the tool shows after `Error performing <operation>: `.
#[derive(Debug, thiserror::Error)]
pub enum LspError {
    /// A server index out of range.
    #[error("no such LSP server")]
    NoSuchServer,
    /// The server crashed before and `restartOnCrash` is false.
    #[error("LSP server '{name}' crashed (restartOnCrash is false): {why}")]
    CrashedNoRestart {
        /// The server.
        name: String,
        /// Its last error.
        why: String,
    },
    /// The server crashed more than `maxRestarts` times in a row.
    #[error("LSP server '{name}' exceeded max crash recovery attempts ({max})")]
    TooManyCrashes {
        /// The server.
        name: String,
        /// Its `maxRestarts`.
        max: u32,
    },
    /// The process did not start.
    #[error(transparent)]
    Spawn(#[from] SpawnError),
    /// The process started but `initialize` failed (timed out, crashed, answered an error).
    #[error("Failed to start LSP server '{name}': {why}")]
    Init {
        /// The server.
        name: String,
        /// Why.
        why: String,
    },
    /// The file to open on the server could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The request failed (an error answer, a hang, a crash).
    #[error("LSP request '{method}' failed for server '{name}': {shown}")]
    Request {
        /// Its method.
        method: String,
        /// The server.
        name: String,
        /// What the tool shows of the failure.
        shown: String,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum State {
    #[default]
    Stopped,
    Running,
    Error,
}

#[derive(Debug, Default)]
struct Slot {
    client: Option<Arc<Client>>,
    state: State,
    crashes: u32,
    error: Option<String>,
}

/// The session's LSP servers.
#[derive(Debug, Default)]
pub struct LspManager {
    servers: Vec<ServerConfig>,
    confine: Option<crate::confine::Confinement>,
    slots: Vec<tokio::sync::Mutex<Slot>>,
    /// Open documents, least recently used first: (uri, server index).
    open: Mutex<Vec<(String, usize)>>,
    /// Document versions over the session.
    versions: Mutex<HashMap<String, i64>>,
    requests: AtomicUsize,
    /// Held while a document is checked and opened: parallel calls open it once.
    opening: tokio::sync::Mutex<()>,
    cwd: PathBuf,
    request_timeout: Duration,
}

/// Node's `path.extname`: the last `.` of the file name and what follows (`""` for none, or a
/// leading dot only).
pub fn extname(path: &Path) -> String {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    match name.rfind('.') {
        Some(i) if i > 0 => name[i..].to_string(),
        _ => String::new(),
    }
}

/// `file://` URI of an absolute path (percent-encoded like Node's `pathToFileURL`).
pub fn file_uri(path: &Path) -> String {
    url::Url::from_file_path(path).map(|u| u.to_string()).unwrap_or_else(|_| format!("file://{}", path.display()))
}

impl LspManager {
    /// A manager for these servers in a session whose cwd is `cwd`; `env` is the session's (for
    /// [`ENV_REQUEST_TIMEOUT_MS`]).
    pub fn new(servers: Vec<ServerConfig>, cwd: &Path, env: &std::collections::BTreeMap<String, String>) -> LspManager {
        let ms = env.get(ENV_REQUEST_TIMEOUT_MS).and_then(|v| v.trim().parse().ok()).unwrap_or(REQUEST_TIMEOUT_MS);
        LspManager {
            slots: servers.iter().map(|_| tokio::sync::Mutex::default()).collect(),
            servers,
            cwd: cwd.to_path_buf(),
            request_timeout: Duration::from_millis(ms),
            ..LspManager::default()
        }
    }

    /// Its servers start under `confine` ([`crate::confine`]; `None`: unconfined).
    pub fn confined(mut self, confine: Option<crate::confine::Confinement>) -> LspManager {
        self.confine = confine;
        self
    }

    /// The manager of a session with these plugins (their placeholders already resolved by the caller:
    /// [`super::config::PluginSpec::resolved`]).
    pub fn from_plugins(
        plugins: &[super::config::PluginSpec],
        cwd: &Path,
        env: &std::collections::BTreeMap<String, String>,
    ) -> LspManager {
        LspManager::new(super::config::servers(plugins), cwd, env)
    }

    /// Some server is configured (else the session has no LSP tool).
    pub fn configured(&self) -> bool {
        !self.servers.is_empty()
    }

    /// A request of the session begins ([`super::Offer`], once per request).
    pub fn request_begins(&self) {
        self.requests.fetch_add(1, Ordering::SeqCst);
    }

    /// The LSP tool is in the current request's `tools[]` (and a call to it is one to a tool the session
    /// has) from request `first` on, when a server is configured: 2 as measured on 2.1.235 (LSP-3: the
    /// reference's servers load in the background while the first request goes out), 1 from 2.1.239
    /// (`super::LSP_IN_THE_FIRST_REQUEST`). Asking does not change it (the loop asks when it makes a
    /// request's tools and when it checks whether the last request's still hold).
    pub fn offered_from(&self, first: usize) -> bool {
        self.configured() && self.requests.load(Ordering::SeqCst) >= first
    }

    /// The server for a file (by extension, lower-cased).
    pub fn server_for(&self, path: &Path) -> Option<usize> {
        let ext = extname(path).to_lowercase();
        if ext.is_empty() {
            return None;
        }
        self.servers.iter().position(|s| s.spec.extension_to_language.keys().any(|k| k.to_lowercase() == ext))
    }

    /// The name of server `i`.
    pub fn server_name(&self, i: usize) -> &str {
        self.servers.get(i).map(|s| s.name.as_str()).unwrap_or("")
    }

    /// Is `uri` open on server `i`?
    pub fn is_open(&self, uri: &str, i: usize) -> bool {
        self.open.lock().map(|o| o.iter().any(|(u, s)| u == uri && *s == i)).unwrap_or(false)
    }

    /// The running client of server `i`, started (or restarted) when needed.
    async fn client(&self, i: usize) -> Result<Arc<Client>, LspError> {
        let (Some(cfg), Some(slot)) = (self.servers.get(i), self.slots.get(i)) else {
            return Err(LspError::NoSuchServer);
        };
        let mut slot = slot.lock().await;
        if let Some(c) = &slot.client {
            match c.dead() {
                None => return Ok(c.clone()),
                Some(why) => {
                    let why = crash_reason(c, &cfg.name, why).await;
                    self.mark_failed(&mut slot, i, why);
                }
            }
        }
        let max = cfg.spec.max_restarts.unwrap_or(MAX_RESTARTS);
        if slot.state == State::Error {
            if cfg.spec.restart_on_crash == Some(false) && slot.crashes > 0 {
                // a server in the error state after a crash has its error recorded (`mark_failed`)
                let why = slot.error.clone().unwrap_or_default();
                return Err(LspError::CrashedNoRestart { name: cfg.name.clone(), why });
            }
            if slot.crashes > max {
                return Err(LspError::TooManyCrashes { name: cfg.name.clone(), max });
            }
        }
        match self.start(cfg).await {
            Ok(c) => {
                slot.client = Some(c.clone());
                slot.state = State::Running;
                slot.crashes = 0;
                slot.error = None;
                Ok(c)
            }
            Err(e) => {
                slot.state = State::Error;
                slot.crashes += 1;
                slot.error = Some(e.to_string());
                Err(e)
            }
        }
    }

    fn mark_failed(&self, slot: &mut Slot, i: usize, why: String) {
        slot.client = None;
        slot.state = State::Error;
        slot.crashes += 1;
        slot.error = Some(why);
        if let Ok(mut o) = self.open.lock() {
            o.retain(|(_, s)| *s != i);
        }
    }

    async fn start(&self, cfg: &ServerConfig) -> Result<Arc<Client>, LspError> {
        let spec = &cfg.spec;
        let folder = spec.workspace_folder.as_ref().map(PathBuf::from).unwrap_or_else(|| self.cwd.clone());
        let client = Arc::new(Client::spawn(
            &cfg.name,
            &spec.command,
            &spec.args,
            &spec.env,
            &folder,
            spec.settings.clone(),
            self.confine.as_ref(),
        )?);
        let uri = file_uri(&folder);
        let name = folder.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let params = json!({
            "processId": std::process::id(),
            "clientInfo": {"name": "probelab", "version": env!("CARGO_PKG_VERSION")},
            "initializationOptions": spec.initialization_options.clone().unwrap_or_else(|| json!({})),
            "workspaceFolders": [{"uri": uri, "name": name}],
            "rootPath": folder,
            "rootUri": uri,
            "capabilities": {
                "workspace": {"configuration": spec.settings.is_some(), "workspaceFolders": false},
                "textDocument": {
                    "synchronization": {"dynamicRegistration": false, "willSave": false, "willSaveWaitUntil": false, "didSave": true},
                    "publishDiagnostics": {"relatedInformation": true, "tagSupport": {"valueSet": [1, 2]}, "versionSupport": false, "codeDescriptionSupport": true, "dataSupport": false},
                    "hover": {"dynamicRegistration": false, "contentFormat": ["markdown", "plaintext"]},
                    "definition": {"dynamicRegistration": false, "linkSupport": true},
                    "references": {"dynamicRegistration": false},
                    "documentSymbol": {"dynamicRegistration": false, "hierarchicalDocumentSymbolSupport": true},
                    "callHierarchy": {"dynamicRegistration": false}
                },
                "general": {"positionEncodings": ["utf-16"]}
            }
        });
        let deadline = Duration::from_millis(spec.startup_timeout.unwrap_or(STARTUP_TIMEOUT_MS));
        let started = async {
            client.request("initialize", params, deadline).await?;
            client.notify("initialized", json!({})).await?;
            if let Some(s) = &spec.settings {
                client.notify("workspace/didChangeConfiguration", json!({"settings": s})).await?;
            }
            Ok::<(), RpcError>(())
        };
        match started.await {
            Ok(()) => Ok(client),
            Err(e) => {
                let why = match e {
                    RpcError::Timeout(_) => {
                        format!(
                            "LSP server '{}' timed out after {}ms during initialization",
                            cfg.name,
                            deadline.as_millis()
                        )
                    }
                    RpcError::Closed(w) => crash_reason(&client, &cfg.name, w).await,
                    RpcError::Server { message, .. } => message,
                };
                client.kill().await;
                Err(LspError::Init { name: cfg.name.clone(), why })
            }
        }
    }

    /// Opens `path` (its `text`) on server `i` unless it is open there.
    async fn open(&self, client: &Client, i: usize, path: &Path, uri: &str, text: &str) -> Result<(), RpcError> {
        if self.is_open(uri, i) {
            if let Ok(mut o) = self.open.lock() {
                if let Some(p) = o.iter().position(|(u, s)| u == uri && *s == i) {
                    let e = o.remove(p);
                    o.push(e);
                }
            }
            return Ok(());
        }
        let version = self
            .versions
            .lock()
            .map(|mut v| {
                let n = v.entry(uri.to_string()).or_insert(0);
                *n += 1;
                *n
            })
            .unwrap_or(1);
        let ext = extname(path).to_lowercase();
        let language = self.servers[i]
            .spec
            .extension_to_language
            .iter()
            .find(|(k, _)| k.to_lowercase() == ext)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| "plaintext".into());
        client
            .notify(
                "textDocument/didOpen",
                json!({"textDocument": {"uri": uri, "languageId": language, "version": version, "text": text}}),
            )
            .await?;
        let evicted: Vec<(String, usize)> = match self.open.lock() {
            Ok(mut o) => {
                o.push((uri.to_string(), i));
                let extra = o.len().saturating_sub(MAX_OPEN_DOCUMENTS);
                o.drain(..extra).collect()
            }
            Err(_) => vec![],
        };
        for (u, s) in evicted {
            if s == i {
                let _ = client.notify("textDocument/didClose", json!({"textDocument": {"uri": u}})).await;
            }
        }
        Ok(())
    }

    /// Opens `path` on its server (reading it with `read` the first time) and sends `method` with
    /// `params`; `Ok(None)` when no server handles the file's extension. Errors are the texts the tool
    /// shows after `Error performing <operation>: `.
    pub async fn request(
        &self,
        path: &Path,
        read: impl FnOnce() -> std::io::Result<String>,
        method: &str,
        params: Value,
    ) -> Result<Option<Value>, LspError> {
        let Some(i) = self.server_for(path) else { return Ok(None) };
        let client = self.client(i).await?;
        let uri = file_uri(path);
        let opening = self.opening.lock().await;
        if !self.is_open(&uri, i) {
            let text = read().map_err(|source| LspError::Read { path: path.to_path_buf(), source })?;
            if let Err(e) = self.open(&client, i, path, &uri, &text).await {
                return Err(self.failed(i, &client, method, e).await);
            }
        } else {
            self.open(&client, i, path, &uri, "").await.ok();
        }
        drop(opening);
        match client.request(method, params, self.request_timeout).await {
            Ok(v) => Ok(Some(v)),
            Err(e) => Err(self.failed(i, &client, method, e).await),
        }
    }

    /// Sends a follow-up request to the server already serving `path` (call hierarchy's second step).
    pub async fn follow_up(&self, path: &Path, method: &str, params: Value) -> Result<Value, LspError> {
        let Some(i) = self.server_for(path) else { return Ok(Value::Null) };
        let client = self.client(i).await?;
        match client.request(method, params, self.request_timeout).await {
            Ok(v) => Ok(v),
            Err(e) => Err(self.failed(i, &client, method, e).await),
        }
    }

    /// Words a failed request; a crash, hang or protocol break takes the server down (restarted at the
    /// next call). A connection that died mid-request is worded as the reference's JSON-RPC library
    /// words it ([`DISPOSED`]); the cause is kept as the server's last error.
    async fn failed(&self, i: usize, client: &Arc<Client>, method: &str, e: RpcError) -> LspError {
        let name = self.server_name(i).to_string();
        let method = method.to_string();
        let (shown, why) = match e {
            RpcError::Server { message, .. } => return LspError::Request { method, name, shown: message },
            RpcError::Timeout(w) => {
                client.kill().await;
                (w.clone(), w)
            }
            RpcError::Closed(w) => (DISPOSED.to_string(), crash_reason(client, &name, w).await),
        };
        if let Some(slot) = self.slots.get(i) {
            let mut slot = slot.lock().await;
            if slot.client.as_ref().is_some_and(|c| Arc::ptr_eq(c, client)) {
                self.mark_failed(&mut slot, i, why);
            }
        }
        client.kill().await;
        LspError::Request { method, name, shown }
    }

    /// Ends every running server: `shutdown` (within its `shutdownTimeout`), `exit`, then the process.
    /// `shutdown` carries `params: {}` as 2.1.235 sends it, no params at all from 2.1.269
    /// (`super::LSP_SHUTDOWN_WITHOUT_PARAMS`: `bare`).
    pub async fn shutdown(&self, bare: bool) {
        for (i, slot) in self.slots.iter().enumerate() {
            let mut slot = slot.lock().await;
            if let Some(c) = slot.client.take() {
                let ms = self.servers[i].spec.shutdown_timeout.unwrap_or(SHUTDOWN_TIMEOUT_MS);
                if c.dead().is_none() {
                    let params = if bare { Value::Null } else { json!({}) };
                    let _ = c.request("shutdown", params, Duration::from_millis(ms)).await;
                    let _ = c.notify("exit", json!({})).await;
                    let _ = c.exit_status(Duration::from_millis(500)).await;
                }
                c.kill().await;
            }
            slot.state = State::Stopped;
        }
        if let Ok(mut o) = self.open.lock() {
            o.clear();
        }
    }
}

/// The reason a connection died, with the exit status when the process has ended.
async fn crash_reason(c: &Client, name: &str, why: String) -> String {
    match c.exit_status(Duration::from_millis(300)).await {
        Some(st) if st.code().is_some_and(|x| x != 0) => {
            format!("LSP server {name} crashed with exit code {}", st.code().unwrap_or_default())
        }
        Some(st) if st.code().is_none() => {
            use std::os::unix::process::ExitStatusExt;
            format!("LSP server {name} crashed with killed by signal {}", st.signal().unwrap_or_default())
        }
        _ => why,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extensions_are_nodes() {
        assert_eq!(extname(Path::new("/a/b.Probe")), ".Probe");
        assert_eq!(extname(Path::new("/a/.bashrc")), "");
        assert_eq!(extname(Path::new("/a/Makefile")), "");
        assert_eq!(extname(Path::new("/a/x.tar.gz")), ".gz");
    }

    #[test]
    fn the_tool_shows_from_the_second_request_when_a_server_is_configured() {
        let none = LspManager::default();
        none.request_begins();
        none.request_begins();
        assert!(!none.offered_from(2) && !none.offered_from(1), "no server: never");
        let cfg = ServerConfig {
            name: "plugin:p:s".into(),
            spec: super::super::config::LspServerSpec {
                command: "x".into(),
                extension_to_language: [(".PROBE".to_string(), "probe".to_string())].into(),
                ..Default::default()
            },
        };
        let m = LspManager::new(vec![cfg], Path::new("/sb/work"), &Default::default());
        assert!(!m.offered_from(2) && !m.offered_from(1));
        m.request_begins();
        assert!(!m.offered_from(2) && !m.offered_from(2), "asking twice is no second request");
        assert!(m.offered_from(1), "from 2.1.239: in the first request");
        m.request_begins();
        assert!(m.offered_from(2) && m.offered_from(1));
        assert_eq!(m.server_for(Path::new("/x/a.probe")), Some(0));
        assert_eq!(m.server_for(Path::new("/x/a.py")), None);
        assert_eq!(file_uri(Path::new("/a b/c#.probe")), "file:///a%20b/c%23.probe");
    }
}
