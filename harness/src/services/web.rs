//! The web of a probe run (WEB-1, WEB-2): a real local HTTP server (axum on `127.0.0.1:0`) serving the
//! pages of the probe's `[web]` table, which the built-in WebFetch reaches over the network exactly as
//! it would reach the internet. Started per probe by [`crate::run`] when the probe has a `[web]` table,
//! stopped with the run; never a mock inside the tool.
//!
//! ```toml
//! [web]
//! pages."docs.example.test/a" = { body = "<h1>A</h1>" }          # 200, text/html; charset=utf-8
//! pages."docs.example.test/old" = { status = 301, location = "https://evil.example.test/x" }
//! pages."/plain" = { body = "hi", content_type = "text/plain" }   # a key without a host: any host
//! pages."docs.example.test/big" = { body = { repeat = "<p>x</p>", bytes = 300000 } }
//! pages."docs.example.test/h" = { headers = { "retry-after" = "30" }, status = 429 }
//! ```
//!
//! A page key is `host/path` (with `?query` when the page has one), or `/path` for any host; the host is
//! taken from the request's `Host` header (port dropped), so real domain names reach the server: the
//! built-in tools resolve every name to it (reqwest's custom DNS resolver) — nothing leaves the machine.
//! A request for a page not in the table gets `404 Not Found` (text/plain). `status` defaults to 200
//! (302 when `location` is set), `content_type` to `text/html; charset=utf-8` when there is a body;
//! `delay_ms` holds the answer back (for time limits).
//!
//! The run gives its base URL, `{web}`, to the transcript ([`crate::run::RunOutput::web`]), which shows
//! it as `<web>` (the port differs per run). The log, `<sandbox>/web-service/log.txt`, has one line per
//! request in arrival order, without ports or times: `GET docs.example.test/a 200`. A probe checks it with
//! `file = "{sandbox}/web-service/log.txt"` — e.g. that a redirect to a denied host was never requested
//! (WEB-1); so a request the log cannot record is answered `500` with the reason, never served unlogged.
//!
//! `{web}` in a probe's turns is this server's base URL (`http://127.0.0.1:<port>`), for subjects whose
//! DNS the lab cannot steer (Claude Code). TLS is not spoken: the built-in runtime talks plain HTTP to
//! this server also for `https://` URLs (the server stands in for the internet, TLS is not modelled).

use crate::probe::sandbox::file_bytes;
use crate::probe::web::{PageError, PageProblem};
use crate::services::ServiceError;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;
use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The service's directory under the sandbox root.
pub use crate::probe::web::SERVICE_DIR;
/// The log file's name in [`SERVICE_DIR`].
pub const LOG_FILE: &str = "log.txt";

pub use crate::probe::web::{Page, WebSpec};

/// The directory of the service in a sandbox.
pub fn dir_for(sandbox_root: &Path) -> PathBuf {
    sandbox_root.join(SERVICE_DIR)
}

struct Inner {
    spec: WebSpec,
    /// Each page's body, made once at the start (a generated one can be large).
    bodies: BTreeMap<String, Bytes>,
    log: PathBuf,
    lines: Mutex<()>,
}

type Shared = Arc<Inner>;

/// A running web service (`url()` is the `{web}` placeholder).
pub use stub_messages::Running;

/// Starts the service for `spec`, logging into `dir` (created).
pub async fn start(spec: &WebSpec, dir: &Path) -> Result<Running, ServiceError> {
    spec.validate()?;
    std::fs::create_dir_all(dir).map_err(|source| ServiceError::Create { path: dir.to_path_buf(), source })?;
    let log = dir.join(LOG_FILE);
    std::fs::write(&log, "").map_err(|source| ServiceError::Write { path: log.clone(), source })?;
    let mut bodies = BTreeMap::new();
    for (key, page) in &spec.pages {
        if let Some(b) = &page.body {
            let body = file_bytes(b).map_err(|e| PageError { key: key.clone(), problem: PageProblem::Body(e) })?;
            bodies.insert(key.clone(), Bytes::from(body));
        }
    }
    let shared: Shared = Arc::new(Inner { spec: spec.clone(), bodies, log, lines: Mutex::new(()) });
    let app = Router::new().fallback(serve_page).with_state(shared);
    let mut options = stub_messages::http::ServeOptions::default();
    if spec.tls {
        let tls = crate::services::tls::Tls::new()?;
        let ca = dir.join(crate::services::tls::CA_FILE);
        std::fs::write(&ca, &tls.ca_pem).map_err(|source| ServiceError::Write { path: ca.clone(), source })?;
        options.accept = Some(tls.sniff());
    }
    let running = stub_messages::http::serve(app, ([127, 0, 0, 1], 0).into(), options)
        .await
        .map_err(|source| ServiceError::Serve { service: "web", source })?;
    Ok(running)
}

/// The host a request names (its `Host` header without the port; `?` when it has none).
fn host_of(headers: &HeaderMap) -> String {
    let h = headers.get("host").and_then(|v| v.to_str().ok()).unwrap_or("?");
    let h =
        if h.starts_with('[') { h.split_inclusive(']').next().unwrap_or(h) } else { h.split(':').next().unwrap_or(h) };
    h.to_ascii_lowercase()
}

/// The page for `host` + `path_query` and its key: the exact `host/path` key first, then `/path`.
fn find<'a>(spec: &'a WebSpec, host: &str, path_query: &str) -> Option<(&'a String, &'a Page)> {
    spec.pages.get_key_value(&format!("{host}{path_query}")).or_else(|| spec.pages.get_key_value(path_query))
}

/// Appends one line to the request log.
fn log_line(s: &Inner, line: &str) -> std::io::Result<()> {
    let _guard = s.lines.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    writeln!(std::fs::OpenOptions::new().append(true).open(&s.log)?, "{line}")
}

async fn serve_page(State(s): State<Shared>, method: Method, uri: Uri, headers: HeaderMap) -> Response {
    let host = host_of(&headers);
    let pq = uri.path_and_query().map(|p| p.as_str().to_string()).unwrap_or_else(|| uri.path().to_string());
    let found = find(&s.spec, &host, &pq);
    let status = match found {
        Some((_, p)) => p.status.unwrap_or(if p.location.is_some() { 302 } else { 200 }),
        None => 404,
    };
    // the log is the evidence a probe checks (that a page was never requested): a request it cannot
    // record is not answered as if it had been
    if let Err(e) = log_line(&s, &format!("{method} {host}{pq} {status}")) {
        let text = format!("probelab web service: cannot log the request in {}: {e}", s.log.display());
        return (StatusCode::INTERNAL_SERVER_ERROR, [("content-type", "text/plain")], text).into_response();
    }
    let Some((key, page)) = found else {
        return (StatusCode::NOT_FOUND, [("content-type", "text/plain")], "Not Found").into_response();
    };
    if page.delay_ms > 0 {
        tokio::time::sleep(std::time::Duration::from_millis(page.delay_ms)).await;
    }
    // a page without a body (a redirect, a bare status) answers an empty one
    let mut resp = Response::new(Body::from(s.bodies.get(key).cloned().unwrap_or_default()));
    *resp.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    let h = resp.headers_mut();
    let ctype = page.content_type.clone().or_else(|| page.body.is_some().then(|| "text/html; charset=utf-8".into()));
    if let Some(v) = ctype.and_then(|c| HeaderValue::from_str(&c).ok()) {
        h.insert("content-type", v);
    }
    if let Some(v) = page.location.as_deref().and_then(|l| HeaderValue::from_str(l).ok()) {
        h.insert("location", v);
    }
    for (k, v) in &page.headers {
        if let (Ok(k), Ok(v)) = (HeaderName::from_bytes(k.as_bytes()), HeaderValue::from_str(v)) {
            h.insert(k, v);
        }
    }
    resp
}

pub use probelab_runtime::config::{ToService, WebAccess};

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn pages_are_served_by_host_and_path_and_logged() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let spec: WebSpec = toml::from_str(
            "pages.\"a.test/x\" = { body = \"<p>x</p>\" }\npages.\"/any\" = { body = \"y\", content_type = \"text/plain\" }\npages.\"a.test/r\" = { location = \"/x\" }\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let running = start(&spec, d.path()).await.unwrap_or_else(|e| panic!("{e}"));
        let client = reqwest::Client::builder()
            .dns_resolver(Arc::new(ToService(running.addr)))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        let port = running.addr.port();
        let get = |u: String| {
            let c = client.clone();
            async move { c.get(u).send().await.unwrap_or_else(|e| panic!("{e}")) }
        };
        let r = get(format!("http://a.test:{port}/x")).await;
        assert_eq!(r.status(), 200);
        assert_eq!(r.headers()["content-type"], "text/html; charset=utf-8");
        assert_eq!(r.text().await.unwrap_or_default(), "<p>x</p>");
        let r = get(format!("http://b.test:{port}/any")).await;
        assert_eq!(r.text().await.unwrap_or_default(), "y");
        let r = get(format!("http://a.test:{port}/r")).await;
        assert_eq!((r.status().as_u16(), r.headers()["location"].to_str().ok()), (302, Some("/x")));
        assert_eq!(get(format!("http://b.test:{port}/x")).await.status(), 404);
        running.stop().await;
        let log = std::fs::read_to_string(d.path().join(LOG_FILE)).unwrap_or_default();
        assert_eq!(log, "GET a.test/x 200\nGET b.test/any 200\nGET a.test/r 302\nGET b.test/x 404\n");
    }

    #[tokio::test]
    async fn a_request_the_log_cannot_record_is_answered_500_not_served_unlogged() {
        let d = tempfile::tempdir().unwrap();
        let spec: WebSpec = toml::from_str("pages.\"/x\" = { body = \"secret\" }\n").unwrap();
        let running = start(&spec, d.path()).await.unwrap();
        // a directory in the log's place: no append opens it, for root too
        std::fs::remove_file(d.path().join(LOG_FILE)).unwrap();
        std::fs::create_dir(d.path().join(LOG_FILE)).unwrap();
        let client = reqwest::Client::builder().dns_resolver(Arc::new(ToService(running.addr))).build().unwrap();
        let r = client.get(format!("http://a.test:{}/x", running.addr.port())).send().await.unwrap();
        assert_eq!(r.status(), 500);
        let text = r.text().await.unwrap();
        assert!(text.starts_with("probelab web service: cannot log the request in "), "{text}");
        assert!(!text.contains("secret"), "{text}");
        running.stop().await;
    }

    /// One GET over `io`, HTTP/1.1 with `Connection: close`: the response's bytes.
    async fn get_over<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin>(mut io: S, path: &str) -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let req = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
        io.write_all(req.as_bytes()).await.unwrap();
        let mut out = Vec::new();
        let _ = io.read_to_end(&mut out).await;
        String::from_utf8_lossy(&out).into_owned()
    }

    #[tokio::test]
    async fn with_tls_one_port_serves_https_by_the_runs_ca_and_plain_http_alike() {
        use rustls::pki_types::pem::PemObject;
        let d = tempfile::tempdir().unwrap();
        let spec: WebSpec = toml::from_str("tls = true\npages.\"/x\" = { body = \"secret page\" }\n").unwrap();
        let running = start(&spec, d.path()).await.unwrap();
        let ca = std::fs::read(d.path().join(crate::services::tls::CA_FILE)).unwrap();
        assert_eq!(spec.ca_file(Path::new("/s")), Some(PathBuf::from("/s/web-service/ca.pem")));
        let client = |roots: rustls::RootCertStore| {
            let config = rustls::ClientConfig::builder_with_provider(crate::services::tls::provider())
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_root_certificates(roots)
                .with_no_client_auth();
            tokio_rustls::TlsConnector::from(Arc::new(config))
        };
        let mut trusted = rustls::RootCertStore::empty();
        trusted.add(rustls::pki_types::CertificateDer::from_pem_slice(&ca).unwrap()).unwrap();
        let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
        // https, by a client that trusts the run's CA (what NODE_EXTRA_CA_CERTS gives a subject)
        let tcp = tokio::net::TcpStream::connect(running.addr).await.unwrap();
        let tls = client(trusted).connect(name.clone(), tcp).await.unwrap();
        let got = get_over(tls, "/x").await;
        assert!(got.starts_with("HTTP/1.1 200 OK") && got.ends_with("secret page"), "{got}");
        // plain HTTP on the same port (the built-in runtime's way)
        let got = get_over(tokio::net::TcpStream::connect(running.addr).await.unwrap(), "/x").await;
        assert!(got.starts_with("HTTP/1.1 200 OK") && got.ends_with("secret page"), "{got}");
        // a client that trusts only the system's roots: the handshake fails, no page is served
        let tcp = tokio::net::TcpStream::connect(running.addr).await.unwrap();
        let refused = client(rustls::RootCertStore::empty()).connect(name, tcp).await;
        assert!(refused.is_err(), "a client without the run's CA completed the handshake");
        running.stop().await;
        let log = std::fs::read_to_string(d.path().join(LOG_FILE)).unwrap();
        assert_eq!(log, "GET 127.0.0.1/x 200\nGET 127.0.0.1/x 200\n");
        // without tls no CA is named to subjects
        let plain: WebSpec = toml::from_str("pages.\"/x\" = { body = \"p\" }\n").unwrap();
        assert_eq!(plain.ca_file(d.path()), None);
    }

    #[test]
    fn bad_pages_are_refused_before_the_run() {
        let spec: WebSpec = toml::from_str("pages.\"nohost\" = { body = \"x\" }\n").unwrap_or_else(|e| panic!("{e}"));
        assert!(spec.validate().is_err());
        let spec: WebSpec = toml::from_str("pages.\"/a\" = { status = 1000 }\n").unwrap_or_else(|e| panic!("{e}"));
        assert!(spec.validate().is_err());
    }
}
