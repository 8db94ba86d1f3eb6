//! A JSON-RPC 2.0 client over a language server's stdio (`Content-Length` framing), as the reference's
//! `createLSPClient` runs one: the server process is spawned with its own env added to the session's,
//! a reader task routes responses to their requests and answers the server's own requests
//! (`workspace/configuration` from the server's `settings`, anything else "unhandled method"), and the
//! connection dies — failing every pending request with the reason — when the server exits, closes its
//! stdout or breaks the base protocol (a header block that is not `Content-Length` / `Content-Type`
//! lines: logs on stdout). A body that is not JSON is dropped, like the reference's reader does.

use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin};
use tokio::sync::oneshot;

/// Largest message body accepted (the reference's 32 MiB limit).
pub const MAX_BODY_BYTES: usize = 33_554_432;

/// The reference's words for non-protocol output on the server's stdout.
pub const NON_PROTOCOL_OUTPUT: &str = "LSP server sent non-protocol output in the header block \u{2014} its stdout is desynchronized from the base protocol (logs/banners on stdout instead of stderr?)";

/// Why a frame of the server's stdout could not be read (the texts are the reference's, or say as much).
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// Reading the pipe failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The output ended inside a header block.
    #[error("LSP server closed its stdout mid-message")]
    ClosedMidMessage,
    /// A header line that is not `Name: value`, or an unknown header.
    #[error("{NON_PROTOCOL_OUTPUT}")]
    NonProtocol,
    /// A Content-Length that is not a number.
    #[error("LSP server sent a Content-Length that is not a number \u{2014} its stdout is desynchronized from the base protocol")]
    BadLength,
    /// A header block without a Content-Length.
    #[error("LSP server sent a header block without a Content-Length \u{2014} its stdout is desynchronized from the base protocol (non-protocol output on stdout?)")]
    NoLength,
    /// A body over [`MAX_BODY_BYTES`].
    #[error("LSP server declared a message larger than the size limit \u{2014} refusing to buffer it")]
    TooLarge,
}

/// Why a server could not be started.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    /// The process did not start.
    #[error("LSP server {name} failed to start: spawn {command} {source}")]
    Start {
        /// The server's name.
        name: String,
        /// The command run.
        command: String,
        /// Why.
        source: std::io::Error,
    },
    /// The process started without the pipes asked for.
    #[error("LSP server process stdio not available")]
    NoStdio,
}

/// Why a request failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RpcError {
    /// The server answered with a JSON-RPC error.
    #[error("{message}")]
    Server {
        /// Its code.
        code: i64,
        /// Its message.
        message: String,
    },
    /// The connection is gone (crash, exit, protocol violation).
    #[error("{0}")]
    Closed(String),
    /// No answer within the deadline.
    #[error("{0}")]
    Timeout(String),
}

type Pending = Arc<Mutex<HashMap<i64, oneshot::Sender<Result<Value, RpcError>>>>>;

/// A running server and its connection.
#[derive(Debug)]
pub struct Client {
    name: String,
    stdin: Arc<tokio::sync::Mutex<ChildStdin>>,
    child: tokio::sync::Mutex<Child>,
    /// The server's process group: killed (its children included) when the client is dropped.
    group: Option<crate::process::Group>,
    pending: Pending,
    next_id: AtomicI64,
    dead: Arc<Mutex<Option<String>>>,
    reader: tokio::task::JoinHandle<()>,
}

impl Drop for Client {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// Reads one frame. `Ok(None)` at a clean end of input; `Err` names a protocol violation or I/O error.
pub async fn read_frame(r: &mut (impl AsyncBufRead + Unpin)) -> Result<Option<Vec<u8>>, FrameError> {
    let mut len: Option<usize> = None;
    let mut seen_header = false;
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = r.read_until(b'\n', &mut line).await?;
        if n == 0 {
            return if seen_header { Err(FrameError::ClosedMidMessage) } else { Ok(None) };
        }
        let text = String::from_utf8_lossy(&line);
        let l = text.trim_end_matches(['\r', '\n']);
        if l.is_empty() {
            if !seen_header {
                continue;
            }
            break;
        }
        seen_header = true;
        let Some((k, v)) = l.split_once(':') else { return Err(FrameError::NonProtocol) };
        let k = k.trim().to_ascii_lowercase();
        if !k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
            return Err(FrameError::NonProtocol);
        }
        match k.as_str() {
            "content-length" => {
                let v = v.trim();
                if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(FrameError::BadLength);
                }
                len = v.parse().ok();
            }
            "content-type" => {}
            _ => return Err(FrameError::NonProtocol),
        }
    }
    let Some(len) = len else {
        return Err(FrameError::NoLength);
    };
    if len > MAX_BODY_BYTES {
        return Err(FrameError::TooLarge);
    }
    let mut body = vec![0; len];
    r.read_exact(&mut body).await?;
    Ok(Some(body))
}

/// The section of `settings` a `workspace/configuration` item asks for (`a.b` walks objects; missing is
/// null), as the reference answers.
pub fn config_section(settings: Option<&Value>, section: Option<&str>) -> Value {
    let Some(mut v) = settings else { return Value::Null };
    let Some(section) = section.filter(|s| !s.is_empty()) else { return v.clone() };
    for part in section.split('.') {
        match v.get(part) {
            Some(x) => v = x,
            None => return Value::Null,
        }
    }
    v.clone()
}

impl Client {
    /// Starts `command args` in `cwd` with `env` added, stderr discarded.
    pub fn spawn(
        name: &str,
        command: &str,
        args: &[String],
        env: &std::collections::BTreeMap<String, String>,
        cwd: &Path,
        settings: Option<Value>,
        confine: Option<&crate::confine::Confinement>,
    ) -> Result<Client, SpawnError> {
        let vars = crate::confine::with_env(crate::confine::passed_env(), env);
        let mut child = crate::confine::command(confine, command, args, cwd, &vars)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .map_err(|source| SpawnError::Start { name: name.to_string(), command: command.to_string(), source })?;
        let group = crate::process::Group::led_by(child.id());
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(SpawnError::NoStdio);
        };
        let pending: Pending = Arc::default();
        let dead: Arc<Mutex<Option<String>>> = Arc::default();
        let (tx_out, mut rx_out) = tokio::sync::mpsc::unbounded_channel::<Vec<u8>>();
        let reader = {
            let (pending, dead) = (pending.clone(), dead.clone());
            let name = name.to_string();
            tokio::spawn(async move {
                let mut r = BufReader::new(stdout);
                let why = loop {
                    let body = match read_frame(&mut r).await {
                        Ok(Some(b)) => b,
                        Ok(None) => break format!("LSP server {name} closed the connection"),
                        Err(e) => break e.to_string(),
                    };
                    let Ok(msg) = serde_json::from_slice::<Value>(&body) else { continue };
                    let id = msg.get("id").cloned();
                    match (msg.get("method").and_then(Value::as_str), id) {
                        (Some(method), Some(id)) => {
                            let reply = match method {
                                "workspace/configuration" => {
                                    let items = msg["params"]["items"].as_array().cloned().unwrap_or_default();
                                    let out: Vec<Value> = items
                                        .iter()
                                        .map(|i| config_section(settings.as_ref(), i["section"].as_str()))
                                        .collect();
                                    json!({"jsonrpc": "2.0", "id": id, "result": out})
                                }
                                m => json!({"jsonrpc": "2.0", "id": id,
                                    "error": {"code": -32601, "message": format!("Unhandled method {m}")}}),
                            };
                            let _ = tx_out.send(reply.to_string().into_bytes());
                        }
                        (Some(_), None) => {} // a notification (diagnostics, logs)
                        (None, Some(id)) => {
                            let Some(id) = id.as_i64() else { continue };
                            let tx = pending.lock().ok().and_then(|mut p| p.remove(&id));
                            if let Some(tx) = tx {
                                let res = match msg.get("error") {
                                    Some(e) => Err(RpcError::Server {
                                        code: e["code"].as_i64().unwrap_or(0),
                                        message: e["message"].as_str().unwrap_or("unknown error").to_string(),
                                    }),
                                    None => Ok(msg.get("result").cloned().unwrap_or(Value::Null)),
                                };
                                let _ = tx.send(res);
                            }
                        }
                        (None, None) => {}
                    }
                };
                if let Ok(mut d) = dead.lock() {
                    d.get_or_insert(why.clone());
                }
                let waiting: Vec<_> = pending.lock().map(|mut p| p.drain().collect()).unwrap_or_default();
                for (_, tx) in waiting {
                    let _ = tx.send(Err(RpcError::Closed(why.clone())));
                }
            })
        };
        let stdin = Arc::new(tokio::sync::Mutex::new(stdin));
        // the server's own requests are answered through the same writer as ours; the reply task holds
        // the writer weakly, so dropping the client closes the server's stdin
        let replies = Arc::downgrade(&stdin);
        tokio::spawn(async move {
            while let Some(body) = rx_out.recv().await {
                let Some(stdin) = replies.upgrade() else { break };
                let mut w = stdin.lock().await;
                let _ = write_frame(&mut *w, &body).await;
            }
        });
        Ok(Client {
            name: name.to_string(),
            stdin,
            child: tokio::sync::Mutex::new(child),
            group,
            pending,
            next_id: AtomicI64::new(0),
            dead,
            reader,
        })
    }

    /// Why the connection died, if it did.
    pub fn dead(&self) -> Option<String> {
        self.dead.lock().ok().and_then(|d| d.clone())
    }

    async fn send(&self, msg: &Value) -> Result<(), RpcError> {
        if let Some(why) = self.dead() {
            return Err(RpcError::Closed(why));
        }
        let mut w = self.stdin.lock().await;
        write_frame(&mut *w, msg.to_string().as_bytes())
            .await
            .map_err(|e| RpcError::Closed(format!("LSP server {} stdin error: {e}", self.name)))
    }

    /// Sends a request and waits for its answer at most `deadline`.
    pub async fn request(&self, method: &str, params: Value, deadline: Duration) -> Result<Value, RpcError> {
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        let (tx, rx) = oneshot::channel();
        if let Ok(mut p) = self.pending.lock() {
            p.insert(id, tx);
        }
        // no params at all for a null (JSON-RPC's params are optional: a `shutdown` from 2.1.269)
        let message = if params.is_null() {
            json!({"jsonrpc": "2.0", "id": id, "method": method})
        } else {
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        };
        let sent = self.send(&message).await;
        if let Err(e) = sent {
            if let Ok(mut p) = self.pending.lock() {
                p.remove(&id);
            }
            return Err(e);
        }
        match tokio::time::timeout(deadline, rx).await {
            Ok(Ok(r)) => r,
            Ok(Err(_)) => Err(RpcError::Closed(self.dead().unwrap_or_else(|| "connection closed".into()))),
            Err(_) => {
                if let Ok(mut p) = self.pending.lock() {
                    p.remove(&id);
                }
                Err(RpcError::Timeout(format!(
                    "no answer within {}ms; the server was stopped and the next call restarts it",
                    deadline.as_millis()
                )))
            }
        }
    }

    /// Sends a notification.
    pub async fn notify(&self, method: &str, params: Value) -> Result<(), RpcError> {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params})).await
    }

    /// The exit status when the process has ended (waits at most `wait`).
    pub async fn exit_status(&self, wait: Duration) -> Option<std::process::ExitStatus> {
        let mut c = self.child.lock().await;
        tokio::time::timeout(wait, c.wait()).await.ok().and_then(Result::ok)
    }

    /// Kills the process (if it still runs) and reaps it.
    pub async fn kill(&self) {
        let mut c = self.child.lock().await;
        let _ = c.kill().await;
        if let Some(g) = &self.group {
            g.kill();
        }
    }
}

/// Writes one framed message.
pub async fn write_frame(w: &mut (impl tokio::io::AsyncWrite + Unpin), body: &[u8]) -> std::io::Result<()> {
    w.write_all(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes()).await?;
    w.write_all(body).await?;
    w.flush().await
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn frames(data: &[u8]) -> Vec<Result<Option<Vec<u8>>, String>> {
        let mut r = BufReader::new(data);
        let mut out = Vec::new();
        loop {
            let f = read_frame(&mut r).await.map_err(|e| e.to_string());
            let end = !matches!(f, Ok(Some(_)));
            out.push(f);
            if end {
                return out;
            }
        }
    }

    #[tokio::test]
    async fn frames_are_read_and_violations_named() {
        let got = frames(b"Content-Length: 2\r\nContent-Type: x\r\n\r\n{}Content-Length: 1\r\n\r\n1").await;
        assert_eq!(got, vec![Ok(Some(b"{}".to_vec())), Ok(Some(b"1".to_vec())), Ok(None)]);
        let got = frames(b"starting server...\r\n\r\n{}").await;
        assert_eq!(got, vec![Err(NON_PROTOCOL_OUTPUT.to_string())]);
        let got = frames(b"Content-Length: x\r\n\r\n").await;
        assert!(matches!(&got[0], Err(e) if e.contains("not a number")));
        let got = frames(b"Content-Type: y\r\n\r\n").await;
        assert!(matches!(&got[0], Err(e) if e.contains("without a Content-Length")));
    }

    #[test]
    fn configuration_sections_walk_the_settings() {
        let s = json!({"python": {"analysis": {"x": 1}}});
        assert_eq!(config_section(Some(&s), Some("python.analysis")), json!({"x": 1}));
        assert_eq!(config_section(Some(&s), Some("python.nope")), Value::Null);
        assert_eq!(config_section(Some(&s), None), s);
        assert_eq!(config_section(None, Some("a")), Value::Null);
    }
}
