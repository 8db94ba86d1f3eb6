//! The stub's own HTTP/1 connection loop, on hyper directly instead of `axum::serve`: it bounds how long a
//! request may take to arrive, bounds the stop, and reports what the HTTP layer refused before any
//! handler saw it, so that the record holds every refusal.
//!
//! - **Header read timeout** ([`ServeOptions::header_timeout`]): hyper's, from the moment a connection
//!   waits for a request head until the head is complete; trickling bytes does not extend it. It also
//!   bounds the idle time of a kept-alive connection (hyper starts the same timer there).
//! - **Body read timeout** ([`ServeOptions::body_timeout`]): from the head to the end of the body; the
//!   body then fails with [`BodyTimedOut`], which the stub answers with 408.
//! - **Bounded stop** ([`Running::stop`]): no new connections; open ones are asked to finish (idle
//!   keep-alive connections close at once) and get [`ServeOptions::shutdown_grace`]; whatever is still
//!   open is then cut, and the stop returns within a further [`CUT_WAIT`].
//! - **Refusals of the HTTP layer** reach [`ConnectionHooks::refused`]: a request line or header hyper
//!   cannot parse (its 400), more headers than hyper takes (431), a URI longer than `http` takes (414), a
//!   non-UTF-8 / non-ASCII request target (400), a head that did not arrive within the timeout (the
//!   connection is closed, nothing is answered), a partial request cut by the stop, a partial request its
//!   client abandoned. The bytes of the connection since its last request are taken as they were read
//!   (at most [`MAX_REFUSED_BYTES`]), with the status hyper wrote, if any.
//!
//! What cannot be seen, and why: the exact bytes of one request among several on a kept-alive
//! connection are not framed here (hyper frames them and does not hand out its buffer), so the bytes of
//! a refused request are those read since the previous request's head or body end; a client that
//! pipelines a second request before the first one's body is read would have them mixed. A connection
//! that closes, times out or is stopped without having sent anything since its last request is not a
//! request and is not reported; after a request whose handler left its body unread (hyper drains it),
//! only bytes that start like a request line (`METHOD target`) are taken for a new request. A connection
//! the kernel or `accept` refuses (a full backlog, no file descriptors left) never reaches the loop and
//! cannot be recorded; the loop backs off [`ACCEPT_BACKOFF`] and goes on.

// The defaults of the connection layer's bounds (`[stub]` header_timeout_ms, body_timeout_ms,
// shutdown_grace_ms).

/// Default of `[stub] header_timeout_ms`: a request head must be complete within 30 s of the connection
/// waiting for it (also the longest keep-alive idle time; clients drop idle connections sooner: undici
/// after 4 s, httpx after 5 s).
pub const HEADER_READ_TIMEOUT_MS: u64 = 30_000;

/// Default of `[stub] body_timeout_ms`: a request body must be complete within 60 s of its head (32 MB
/// at 0.5 MB/s).
pub const BODY_READ_TIMEOUT_MS: u64 = 60_000;

/// Default of `[stub] shutdown_grace_ms`: what open connections get to finish when the stub stops before
/// they are cut (the stub's answers take milliseconds; a stop with open partial requests returns within
/// this and [`CUT_WAIT`], well under the 2 s a SIGTERM'd stub has).
pub const SHUTDOWN_GRACE_MS: u64 = 500;

use bytes::Bytes;
use http_body::{Body as HttpBody, Frame, SizeHint};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::watch;
use tower::ServiceExt;

/// The most bytes of a refused connection kept for the record (64 KiB, as for a non-JSON body).
pub const MAX_REFUSED_BYTES: usize = 64 * 1024;

/// The most bytes of what the HTTP layer wrote back that are kept to read its status line.
const MAX_WRITTEN_BYTES: usize = 256;

/// How long the stop waits for cut connections to report and end before it drops them.
pub const CUT_WAIT: Duration = Duration::from_millis(250);

/// Pause after a failed `accept` (out of file descriptors, …) before the next one.
pub const ACCEPT_BACKOFF: Duration = Duration::from_millis(10);

/// How the loop serves.
#[derive(Clone)]
pub struct ServeOptions {
    /// A request head must be complete within this (also the longest keep-alive idle time).
    pub header_timeout: Duration,
    /// A request body must be complete within this, counted from its head.
    pub body_timeout: Duration,
    /// What open connections get to finish when the server stops, before they are cut.
    pub shutdown_grace: Duration,
    /// Told about refusals and cuts (the stub records them); `None` for a plain server.
    pub hooks: Option<Arc<dyn ConnectionHooks>>,
    /// Turns each accepted TCP stream into the stream HTTP is read from (a TLS handshake: the harness's
    /// web service); `None` serves plain HTTP on the stream as accepted. A stream whose handshake fails
    /// or takes longer than [`ServeOptions::header_timeout`] is closed unserved (not a refusal: nothing of
    /// a request was read).
    pub accept: Option<Arc<dyn Accept>>,
}

/// A byte stream HTTP can be served on.
pub trait Io: AsyncRead + AsyncWrite + Unpin + Send + 'static {}

impl<T: AsyncRead + AsyncWrite + Unpin + Send + 'static> Io for T {}

/// What [`Accept::accept`] gives back.
pub type Accepting = Pin<Box<dyn Future<Output = std::io::Result<Box<dyn Io>>> + Send>>;

/// A step between `accept` and HTTP ([`ServeOptions::accept`]).
pub trait Accept: Send + Sync {
    /// The stream to serve HTTP on, made from the accepted TCP stream.
    fn accept(&self, tcp: tokio::net::TcpStream) -> Accepting;
}

impl std::fmt::Debug for ServeOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServeOptions")
            .field("header_timeout", &self.header_timeout)
            .field("body_timeout", &self.body_timeout)
            .field("shutdown_grace", &self.shutdown_grace)
            .field("hooks", &self.hooks.is_some())
            .field("accept", &self.accept.is_some())
            .finish()
    }
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            header_timeout: Duration::from_millis(HEADER_READ_TIMEOUT_MS),
            body_timeout: Duration::from_millis(BODY_READ_TIMEOUT_MS),
            shutdown_grace: Duration::from_millis(SHUTDOWN_GRACE_MS),
            hooks: None,
            accept: None,
        }
    }
}

/// What the connection loop tells its owner.
pub trait ConnectionHooks: Send + Sync {
    /// A request the HTTP layer refused, or a partial one cut or abandoned (see the module doc).
    fn refused(&self, refused: Refused);
    /// The stop's grace is over: open connections are about to be cut (a response cut now was cut by
    /// the stop, not by its client).
    fn cutting(&self);
}

/// Why a connection's last request never reached a handler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefusalReason {
    /// hyper could not parse the head and answered an error status (400, 414, 431, …).
    Malformed,
    /// The head did not arrive within the header timeout; the connection was closed unanswered.
    HeaderTimeout,
    /// The stop cut the connection before its head was complete.
    Shutdown,
    /// The client closed the connection in the middle of a head.
    ClientClosed,
}

/// A request that never reached a handler.
#[derive(Debug, Clone)]
pub struct Refused {
    /// Why.
    pub reason: RefusalReason,
    /// The status hyper wrote back, if it wrote one.
    pub status: Option<u16>,
    /// The bytes read since the connection's previous request (at most [`MAX_REFUSED_BYTES`]).
    pub bytes: Vec<u8>,
    /// How many bytes that was before the cap.
    pub total_bytes: usize,
    /// hyper's error, when there was one.
    pub error: Option<String>,
    /// When the first of those bytes arrived.
    pub first_byte: Option<Instant>,
    /// The peer.
    pub peer: SocketAddr,
}

/// The error of a request body that did not arrive within [`ServeOptions::body_timeout`].
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("the request body did not arrive within {0:?}")]
pub struct BodyTimedOut(pub Duration);

/// A server bound to a socket.
#[derive(Debug)]
pub struct Running {
    /// The bound address.
    pub addr: SocketAddr,
    stop: Option<watch::Sender<bool>>,
    task: tokio::task::JoinHandle<()>,
}

impl Running {
    /// `http://ADDR` — what clients take as their base URL.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Stops accepting, lets open connections finish within the grace, cuts the rest, and waits: it
    /// returns within the grace and [`CUT_WAIT`]. Dropping a `Running` stops the server the same way,
    /// without waiting.
    pub async fn stop(mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(true);
        }
        let _ = (&mut self.task).await;
    }
}

/// Binds `addr` and serves `router` with `options` in a task of the current runtime.
pub async fn serve(router: axum::Router, addr: SocketAddr, options: ServeOptions) -> std::io::Result<Running> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let addr = listener.local_addr()?;
    let (stop_tx, stop_rx) = watch::channel(false);
    let task = tokio::spawn(accept_loop(listener, router, options, stop_rx));
    Ok(Running { addr, stop: Some(stop_tx), task })
}

/// Where connections stand in the stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Phase {
    Serving,
    Draining,
    Cut,
}

async fn accept_loop(
    listener: tokio::net::TcpListener,
    router: axum::Router,
    options: ServeOptions,
    mut stop: watch::Receiver<bool>,
) {
    let (phase_tx, phase_rx) = watch::channel(Phase::Serving);
    let mut conns = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            // a stop request, or the Running dropped
            _ = stopped(&mut stop) => break,
            accepted = listener.accept() => match accepted {
                Ok((tcp, peer)) => {
                    // Without TCP_NODELAY each SSE event waits on the peer's delayed ACK (~40 ms per request).
                    let _ = tcp.set_nodelay(true);
                    let (router, options, phase) = (router.clone(), options.clone(), phase_rx.clone());
                    conns.spawn(async move {
                        let io: Box<dyn Io> = match &options.accept {
                            None => Box::new(tcp),
                            Some(a) => match tokio::time::timeout(options.header_timeout, a.accept(tcp)).await {
                                Ok(Ok(io)) => io,
                                // a failed or stalled handshake: nothing of a request to record
                                _ => return,
                            },
                        };
                        connection(io, peer, router, options, phase).await
                    });
                }
                Err(_) => tokio::time::sleep(ACCEPT_BACKOFF).await,
            },
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
    drop(listener);
    let _ = phase_tx.send(Phase::Draining);
    let grace = tokio::time::Instant::now() + options.shutdown_grace;
    while let Ok(Some(_)) = tokio::time::timeout_at(grace, conns.join_next()).await {}
    if conns.is_empty() {
        return;
    }
    if let Some(h) = &options.hooks {
        h.cutting();
    }
    let _ = phase_tx.send(Phase::Cut);
    let cut = tokio::time::Instant::now() + CUT_WAIT;
    while let Ok(Some(_)) = tokio::time::timeout_at(cut, conns.join_next()).await {}
    conns.abort_all();
}

/// Resolves when a stop is asked for, or when the [`Running`] is gone.
async fn stopped(rx: &mut watch::Receiver<bool>) {
    let _ = rx.wait_for(|s| *s).await;
}

/// Resolves when the stop reaches `phase` (or the accept loop is gone: then at once).
async fn reached(rx: &mut watch::Receiver<Phase>, phase: Phase) {
    let _ = rx.wait_for(|p| *p >= phase).await;
}

/// What a connection read and wrote since its last request: the evidence of a refusal.
#[derive(Debug, Default)]
struct TapState {
    read: Vec<u8>,
    read_total: usize,
    first_byte: Option<Instant>,
    written: Vec<u8>,
    requests: u64,
}

#[derive(Debug, Default)]
struct Tap(Mutex<TapState>);

impl Tap {
    fn on_read(&self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        let mut s = crate::locked(&self.0);
        if s.read_total == 0 {
            s.first_byte = Some(Instant::now());
        }
        s.read_total += bytes.len();
        let room = MAX_REFUSED_BYTES.saturating_sub(s.read.len());
        s.read.extend_from_slice(&bytes[..bytes.len().min(room)]);
    }

    fn on_write(&self, bytes: &[u8]) {
        let mut s = crate::locked(&self.0);
        let room = MAX_WRITTEN_BYTES.saturating_sub(s.written.len());
        s.written.extend_from_slice(&bytes[..bytes.len().min(room)]);
    }

    /// A request head reached the service, or a body ended: what was read belongs to a request.
    fn mark(&self, new_request: bool) {
        let mut s = crate::locked(&self.0);
        s.read.clear();
        s.read_total = 0;
        s.first_byte = None;
        s.written.clear();
        if new_request {
            s.requests += 1;
        }
    }

    /// The bytes read since the last mark and the status written since, if they make (the start of) a
    /// request: any bytes on a fresh connection or when hyper refused them (`refused`), else bytes that
    /// start like a request line.
    fn pending(&self, refused: bool) -> Option<Pending> {
        let s = crate::locked(&self.0);
        let plausible = !s.read.is_empty() && (refused || s.requests == 0 || looks_like_request(&s.read));
        plausible.then(|| Pending {
            bytes: s.read.clone(),
            total_bytes: s.read_total,
            first_byte: s.first_byte,
            status: if refused { written_status(&s.written) } else { None },
        })
    }
}

/// A request that did not reach the service, as the tap saw it.
struct Pending {
    bytes: Vec<u8>,
    total_bytes: usize,
    first_byte: Option<Instant>,
    status: Option<u16>,
}

/// True when `bytes` start (after blank lines) like a request line: an upper-case method and a space.
fn looks_like_request(bytes: &[u8]) -> bool {
    let b = bytes.iter().position(|c| *c != b'\r' && *c != b'\n').map_or(&[][..], |i| &bytes[i..]);
    let method = b.iter().take_while(|c| c.is_ascii_uppercase()).count();
    (1..=16).contains(&method) && b.get(method) == Some(&b' ')
}

/// The status of the last `HTTP/1.x NNN` status line in what was written.
fn written_status(written: &[u8]) -> Option<u16> {
    let text = String::from_utf8_lossy(written);
    let at = text.rfind("HTTP/1.")?;
    text[at..].split(' ').nth(1).and_then(|s| s.get(..3)).and_then(|s| s.parse().ok())
}

/// The connection's stream with both directions copied into the tap.
struct TapIo {
    inner: Box<dyn Io>,
    tap: Arc<Tap>,
}

impl AsyncRead for TapIo {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let res = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = &res {
            self.tap.on_read(&buf.filled()[before..]);
        }
        res
    }
}

impl AsyncWrite for TapIo {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        let res = Pin::new(&mut self.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = &res {
            self.tap.on_write(&buf[..*n]);
        }
        res
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let res = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if let Poll::Ready(Ok(mut n)) = &res {
            for b in bufs {
                if n == 0 {
                    break;
                }
                let k = n.min(b.len());
                self.tap.on_write(&b[..k]);
                n -= k;
            }
        }
        res
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

/// A request body with the body timeout, marking the tap when it ends.
struct TimedBody {
    inner: Incoming,
    deadline: Pin<Box<tokio::time::Sleep>>,
    limit: Duration,
    tap: Arc<Tap>,
    ended: bool,
}

impl HttpBody for TimedBody {
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if self.ended {
            return Poll::Ready(None);
        }
        match Pin::new(&mut self.inner).poll_frame(cx) {
            Poll::Ready(None) => {
                self.ended = true;
                self.tap.mark(false);
                Poll::Ready(None)
            }
            Poll::Ready(Some(frame)) => Poll::Ready(Some(frame.map_err(Into::into))),
            Poll::Pending => match self.deadline.as_mut().poll(cx) {
                Poll::Ready(()) => Poll::Ready(Some(Err(Box::new(BodyTimedOut(self.limit))))),
                Poll::Pending => Poll::Pending,
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        self.ended || self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

async fn connection(
    tcp: Box<dyn Io>,
    peer: SocketAddr,
    router: axum::Router,
    options: ServeOptions,
    mut phase: watch::Receiver<Phase>,
) {
    let tap = Arc::new(Tap::default());
    let io = TokioIo::new(TapIo { inner: tcp, tap: tap.clone() });
    let service_tap = tap.clone();
    let body_timeout = options.body_timeout;
    let service = hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
        service_tap.mark(true);
        let tap = service_tap.clone();
        let req = req.map(|inner| {
            axum::body::Body::new(TimedBody {
                inner,
                deadline: Box::pin(tokio::time::sleep(body_timeout)),
                limit: body_timeout,
                tap,
                ended: false,
            })
        });
        router.clone().oneshot(req)
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    // half_close: a client may shut its side once its request is sent; it still gets the answer
    builder.timer(TokioTimer::new()).header_read_timeout(options.header_timeout).keep_alive(true).half_close(true);
    let conn = builder.serve_connection(io, service);
    tokio::pin!(conn);
    let mut stopping = false;
    // biased: the connection is polled first, so bytes that arrived before the stop are read and count
    let result = tokio::select! {
        biased;
        r = conn.as_mut() => Some(r),
        _ = reached(&mut phase, Phase::Draining) => {
            stopping = true;
            conn.as_mut().graceful_shutdown();
            let mut cut = phase.clone();
            tokio::select! {
                biased;
                r = conn.as_mut() => Some(r),
                _ = reached(&mut cut, Phase::Cut) => None,
            }
        }
    };
    let Some(hooks) = &options.hooks else { return };
    let (reason, error) = match &result {
        // cut by the stop
        None => (RefusalReason::Shutdown, None),
        Some(Ok(())) if stopping => (RefusalReason::Shutdown, None),
        Some(Ok(())) => (RefusalReason::ClientClosed, None),
        Some(Err(e)) if e.is_timeout() => (RefusalReason::HeaderTimeout, Some(e.to_string())),
        Some(Err(e)) if e.is_parse() || e.is_parse_too_large() || e.is_parse_status() => {
            (RefusalReason::Malformed, Some(e.to_string()))
        }
        Some(Err(e)) if stopping => (RefusalReason::Shutdown, Some(e.to_string())),
        Some(Err(e)) => (RefusalReason::ClientClosed, Some(e.to_string())),
    };
    let Some(p) = tap.pending(reason == RefusalReason::Malformed) else { return };
    hooks.refused(Refused {
        reason,
        status: p.status,
        bytes: p.bytes,
        total_bytes: p.total_bytes,
        error,
        first_byte: p.first_byte,
        peer,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_line_is_told_from_body_bytes() {
        assert!(looks_like_request(b"POST /v1/messages HTTP/1.1\r\n"));
        assert!(looks_like_request(b"\r\nGET / HTTP/1.1"));
        assert!(!looks_like_request(b"{\"model\": \"x\"}"));
        assert!(!looks_like_request(b"post / HTTP/1.1"));
        assert!(!looks_like_request(b""));
    }

    #[test]
    fn the_status_is_read_from_what_hyper_wrote() {
        assert_eq!(written_status(b"HTTP/1.1 431 Request Header Fields Too Large\r\n"), Some(431));
        assert_eq!(written_status(b"HTTP/1.1 200 OK\r\n\r\nHTTP/1.1 400 Bad Request\r\n"), Some(400));
        assert_eq!(written_status(b""), None);
    }
}
