//! https for the lab's local web service (WEB-1, `[web] tls = true`): Claude Code upgrades every `http:`
//! URL to `https:` (`claude-code.web-fetch-https`), so a page it should fetch must be served over TLS, by
//! a certificate it trusts.
//!
//! Each run makes its own certificate authority and a server certificate signed by it (rcgen, ECDSA
//! P-256), for `127.0.0.1`, `::1` and `localhost` — the names `{web}` gives a subject whose DNS the lab
//! cannot steer. The CA's certificate (never its key) is written into the sandbox
//! ([`CA_FILE`] in the service's directory) and named to every subject by `NODE_EXTRA_CA_CERTS`
//! ([`CA_ENV`]), the variable Node and Bun (Claude Code's runtime) read extra roots from: the subject
//! trusts this run's service and nothing else it did not trust before. The key lives in the lab's
//! memory only and dies with the run.
//!
//! One port speaks both: the first byte of a connection decides ([`Sniff`]). A TLS record starts with
//! 0x16 (a handshake); anything else is served as plain HTTP, as without `tls` — the built-in runtime
//! talks plain HTTP to the service whatever the URL's scheme (its WebFetch module doc), so one probe
//! serves both subjects the same pages and the log holds the same lines.

use std::sync::Arc;
use stub_messages::http::{Accept, Accepting, Io};

/// The CA certificate's file name in the web service's directory.
pub const CA_FILE: &str = "ca.pem";

/// The variable that names the CA to a subject (Node's and Bun's extra trusted roots).
pub const CA_ENV: &str = "NODE_EXTRA_CA_CERTS";

/// The first byte of a TLS connection: a handshake record.
const TLS_HANDSHAKE: u8 = 0x16;

/// The TLS implementation: ring's, not aws-lc-rs's (a cmake build on every fresh machine). rustls marks
/// it deprecated for lacking post-quantum key exchange, which a loopback service of one run does not need.
pub fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    #[allow(deprecated)]
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Why the web service's TLS could not be set up ([`Tls::new`]).
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A key or a certificate could not be made.
    #[error("cannot make the web service's {what}")]
    Make {
        /// `CA key`, `server certificate`…
        what: &'static str,
        /// Why.
        source: rcgen::Error,
    },
    /// rustls refused the configuration.
    #[error("cannot set up TLS")]
    Config(#[source] rustls::Error),
}

/// A run's certificate authority and the acceptor of its server certificate.
pub struct Tls {
    /// The CA's certificate, PEM.
    pub ca_pem: String,
    acceptor: tokio_rustls::TlsAcceptor,
}

impl Tls {
    /// A new CA and a server certificate for the loopback names, signed by it.
    pub fn new() -> Result<Tls, TlsError> {
        fn e(what: &'static str) -> impl Fn(rcgen::Error) -> TlsError {
            move |source| TlsError::Make { what, source }
        }
        let ca_key = rcgen::KeyPair::generate().map_err(e("CA key"))?;
        let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).map_err(e("CA"))?;
        ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca.distinguished_name.push(rcgen::DnType::CommonName, "probelab web service CA (one run)");
        ca.key_usages = vec![rcgen::KeyUsagePurpose::KeyCertSign, rcgen::KeyUsagePurpose::DigitalSignature];
        let ca_cert = ca.self_signed(&ca_key).map_err(e("CA certificate"))?;
        let issuer = rcgen::Issuer::new(ca, ca_key);
        let key = rcgen::KeyPair::generate().map_err(e("server key"))?;
        let names = vec!["127.0.0.1".to_string(), "::1".to_string(), "localhost".to_string()];
        let mut params = rcgen::CertificateParams::new(names).map_err(e("server certificate"))?;
        params.distinguished_name.push(rcgen::DnType::CommonName, "127.0.0.1");
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
        let cert = params.signed_by(&key, &issuer).map_err(e("server certificate"))?;
        let der_key = rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into());
        let config = rustls::ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(TlsError::Config)?
            .with_no_client_auth()
            .with_single_cert(vec![cert.der().clone()], der_key)
            .map_err(TlsError::Config)?;
        let mut config = config;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Tls { ca_pem: ca_cert.pem(), acceptor: tokio_rustls::TlsAcceptor::from(Arc::new(config)) })
    }

    /// The connection step that serves TLS and plain HTTP on one port.
    pub fn sniff(&self) -> Arc<dyn Accept> {
        Arc::new(Sniff(self.acceptor.clone()))
    }
}

/// TLS when the connection opens with a handshake record, plain HTTP otherwise.
struct Sniff(tokio_rustls::TlsAcceptor);

impl Accept for Sniff {
    fn accept(&self, tcp: tokio::net::TcpStream) -> Accepting {
        let acceptor = self.0.clone();
        Box::pin(async move {
            let mut first = [0u8; 1];
            // peek waits for the first byte without taking it (the server's header timeout bounds it)
            let n = tcp.peek(&mut first).await?;
            if n == 1 && first[0] == TLS_HANDSHAKE {
                let tls = acceptor.accept(tcp).await?;
                Ok(Box::new(tls) as Box<dyn Io>)
            } else {
                Ok(Box::new(tcp) as Box<dyn Io>)
            }
        })
    }
}
