//! TLS for `https://` targets: rustls (ring provider), driven by hand over the same
//! non-blocking socket and `try_read`/`try_write` calls as plain HTTP.
//!
//! tokio-rustls would wrap the socket in an `AsyncRead`/`AsyncWrite` stream; the connection
//! loop in [`crate::conn`] works on readiness and `try_*` calls instead (see its header), so
//! this module feeds rustls' `read_tls`/`write_tls` from those calls directly. The engine
//! parses plaintext exactly as it does for http; TLS adds only the record layer.
//!
//! Certificates are verified against the system's trust store (as curl does) plus any
//! `--cacert` file; a certificate of that file that the server presents as is, byte for byte,
//! is accepted as pinned ([`Pinned`]: what `openssl req -x509` makes is a CA certificate, which
//! the WebPKI rules refuse as a server's own); `--insecure` skips verification (self-signed
//! test servers) but still checks the handshake signatures. TLS handshake failures during a run count as `connect`
//! errors; the preflight reports the first one in words.

use std::io::{self, Read, Write};
use std::net::TcpStream as StdTcpStream;
use std::sync::Arc;
use std::time::Duration;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    ClientConfig, ClientConnection, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use tokio::net::TcpStream;

use crate::error::EngineError;

/// TlsSettings is what every connection of a run needs to start a TLS session.
#[derive(Debug, Clone)]
pub struct TlsSettings {
    /// config: ALPN `http/1.1`, for the HTTP/1.1 connections.
    config: Arc<ClientConfig>,
    /// h2: ALPN `h2`, for the HTTP/2 connections.
    h2: Arc<ClientConfig>,
    /// either: ALPN `h2` then `http/1.1`, for the preflight that lets the server choose.
    either: Arc<ClientConfig>,
    name: ServerName<'static>,
}

impl TlsSettings {
    /// new builds the client configuration for `host`: system roots plus `ca_file`
    /// (PEM), or no verification at all when `insecure`.
    pub fn new(host: &str, insecure: bool, ca_file: Option<&str>) -> Result<Self, EngineError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| EngineError::config(format!("TLS: {e}")))?;
        let mut config = if insecure {
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(NoVerify(provider)))
                .with_no_client_auth()
        } else {
            let pins = match ca_file {
                Some(path) => ca_certs(path)?,
                None => Vec::new(),
            };
            let verifier = WebPkiServerVerifier::builder_with_provider(
                Arc::new(roots(&pins)),
                provider.clone(),
            )
            .build()
            .map_err(|e| EngineError::config(format!("TLS: {e}")))?;
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(Pinned {
                    pins,
                    webpki: verifier,
                    provider,
                }))
                .with_no_client_auth()
        };
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let mut h2 = config.clone();
        h2.alpn_protocols = vec![b"h2".to_vec()];
        let mut either = config.clone();
        either.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        let name = ServerName::try_from(host.to_string())
            .map_err(|e| EngineError::config(format!("TLS: bad server name {host:?}: {e}")))?;
        Ok(TlsSettings {
            config: Arc::new(config),
            h2: Arc::new(h2),
            either: Arc::new(either),
            name,
        })
    }

    /// h2_connector is what an HTTP/2 connection needs to start TLS (ALPN `h2`): the h2
    /// crate reads and writes through tokio's I/O traits, which tokio-rustls provides.
    pub fn h2_connector(&self) -> (tokio_rustls::TlsConnector, ServerName<'static>) {
        (
            tokio_rustls::TlsConnector::from(self.h2.clone()),
            self.name.clone(),
        )
    }

    /// http1_connector is what a connection read through tokio's I/O traits needs to start
    /// TLS for HTTP/1.1 (ALPN `http/1.1`): a `wss://` socket's upgrade.
    pub fn http1_connector(&self) -> (tokio_rustls::TlsConnector, ServerName<'static>) {
        (
            tokio_rustls::TlsConnector::from(self.config.clone()),
            self.name.clone(),
        )
    }

    /// session starts a client session (no I/O yet).
    pub fn session(&self) -> Result<ClientConnection, rustls::Error> {
        ClientConnection::new(self.config.clone(), self.name.clone())
    }

    /// preflight completes one blocking handshake on `stream`, so a bad certificate or a
    /// server that does not speak TLS is reported in words before the run starts; it offers
    /// `offer` ([`Alpn`]) and returns whether the server chose `h2`.
    pub fn preflight(
        &self,
        stream: StdTcpStream,
        wait: Duration,
        offer: Alpn,
    ) -> Result<bool, String> {
        let _ = stream.set_read_timeout(Some(wait));
        let _ = stream.set_write_timeout(Some(wait));
        let mut sock = stream;
        let config = match offer {
            Alpn::Http1 => &self.config,
            Alpn::H2 => &self.h2,
            Alpn::Either => &self.either,
        };
        let mut tls =
            ClientConnection::new(config.clone(), self.name.clone()).map_err(|e| e.to_string())?;
        while tls.is_handshaking() {
            tls.complete_io(&mut sock).map_err(|e| match e.kind() {
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => {
                    "no TLS handshake within the timeout (is it an https server?)".to_string()
                }
                io::ErrorKind::UnexpectedEof => {
                    "the server closed the connection during the TLS handshake".to_string()
                }
                _ => refusal(&e),
            })?;
        }
        let h2 = tls.alpn_protocol() == Some(b"h2");
        tls.send_close_notify();
        let _ = tls.complete_io(&mut sock);
        Ok(h2)
    }
}

/// hint says what to do about a failed TLS handshake (a preflight's), in words.
pub fn hint(why: &str) -> &'static str {
    if why.contains("CA certificate presented") {
        " (pass that certificate with --cacert FILE: redline trusts it as it is; or skip \
         checks with --insecure)"
    } else if why.contains("certificate") {
        " (trust its CA with --cacert FILE, or skip checks with --insecure)"
    } else if why.contains("corrupt message") {
        " (is it an https server? use http:// for plain HTTP)"
    } else {
        ""
    }
}

/// refusal says in words why a handshake failed: rustls' own text for a refused certificate
/// is its enum's Debug (`invalid peer certificate: Other(OtherError(CaUsedAsEndEntity))`),
/// which tells a user neither what is wrong nor what to do.
fn refusal(e: &io::Error) -> String {
    use rustls::CertificateError as C;
    let Some(rustls::Error::InvalidCertificate(cert)) = e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
    else {
        return e.to_string();
    };
    let why = match cert {
        C::UnknownIssuer => "is signed by a CA this machine does not trust".to_string(),
        C::Expired | C::ExpiredContext { .. } => "has expired".to_string(),
        C::NotValidYet | C::NotValidYetContext { .. } => "is not valid yet".to_string(),
        C::NotValidForName | C::NotValidForNameContext { .. } => {
            "does not name this host (connect by a name it lists)".to_string()
        }
        C::Revoked => "has been revoked".to_string(),
        C::BadSignature => "carries a signature that does not verify".to_string(),
        C::BadEncoding => "cannot be read (bad encoding)".to_string(),
        // webpki's CaUsedAsEndEntity reaches rustls as an opaque `Other`: its name is all
        // there is to go on.
        C::Other(other) if format!("{other:?}").contains("CaUsedAsEndEntity") => {
            "is a CA certificate presented as the server's own (what `openssl req -x509` \
             makes), which no trust store accepts as a server certificate"
                .to_string()
        }
        other => format!("was refused ({other:?})"),
    };
    format!("the server's certificate {why}")
}

/// Alpn is what the preflight handshake offers the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alpn {
    /// Http1: `http/1.1` only (an HTTP/1.1 run).
    Http1,
    /// H2: `h2` only (an HTTP/2 run).
    H2,
    /// Either: `h2`, then `http/1.1`: the server chooses the run's protocol.
    Either,
}

/// roots is the trust store: the system's certificates, plus those of the `--cacert` file.
fn roots(extra: &[CertificateDer<'static>]) -> RootCertStore {
    let mut store = RootCertStore::empty();
    let system = rustls_native_certs::load_native_certs();
    store.add_parsable_certificates(system.certs);
    // A certificate that is no CA (or that webpki cannot use as a trust anchor) can still be
    // pinned: Pinned compares the server's certificate with the file's, byte for byte.
    store.add_parsable_certificates(extra.iter().cloned());
    store
}

/// ca_certs reads the PEM certificates of a `--cacert` file; a file with none is an error.
fn ca_certs(path: &str) -> Result<Vec<CertificateDer<'static>>, EngineError> {
    let bad = |e: &dyn std::fmt::Display| EngineError::config(format!("cacert {path:?}: {e}"));
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| bad(&e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(&e))?;
    if certs.is_empty() {
        return Err(bad(&"no PEM certificate in the file"));
    }
    Ok(certs)
}

/// Pinned verifies server certificates as WebPKI does (system roots plus `--cacert`), and also
/// accepts a server certificate that is one of the `--cacert` file's own, byte for byte: a
/// self-signed certificate as `openssl req -x509` makes it (CA:TRUE), which WebPKI refuses as
/// a server's end-entity certificate (`CaUsedAsEndEntity`) where curl accepts it.
///
/// The pin is the identity: the user named this exact certificate, and the handshake
/// signature (still verified, with the provider's algorithms) proves the server holds its
/// key, so its names and dates are not checked again.
#[derive(Debug)]
struct Pinned {
    pins: Vec<CertificateDer<'static>>,
    webpki: Arc<WebPkiServerVerifier>,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for Pinned {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if self.pins.iter().any(|p| p.as_ref() == end_entity.as_ref()) {
            return Ok(ServerCertVerified::assertion());
        }
        self.webpki
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// NoVerify accepts any server certificate (`--insecure`) but still checks that the server
/// holds the key of the certificate it sent.
#[derive(Debug)]
struct NoVerify(Arc<CryptoProvider>);

impl ServerCertVerifier for NoVerify {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// Sock adapts a tokio socket to `io::Read`/`io::Write` through its non-blocking `try_*`
/// calls (a `WouldBlock` clears tokio's cached readiness, as it must).
pub struct Sock<'a>(pub &'a TcpStream);

impl Read for Sock<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.try_read(buf)
    }
}

impl Write for Sock<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.try_write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// try_read reads plaintext into `buf` without blocking: `Ok(0)` is the end of the stream
/// (close_notify, or the peer closing the socket: HTTP framing tells a truncated response);
/// `WouldBlock` means more ciphertext must arrive first.
pub fn try_read(tls: &mut ClientConnection, sock: &TcpStream, buf: &mut [u8]) -> io::Result<usize> {
    let mut closed = false;
    loop {
        match tls.reader().read(buf) {
            Ok(n) => return Ok(n),
            // The socket is closed: what rustls held was all there will be.
            Err(e) if e.kind() == io::ErrorKind::WouldBlock && closed => return Ok(0),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(0),
            Err(e) => return Err(e),
        }
        closed = tls.read_tls(&mut Sock(sock))? == 0;
        tls.process_new_packets().map_err(invalid)?;
        // Records that need an answer (a key update) are sent on the way while the socket is
        // open; the request path flushes anything left.
        while !closed && tls.wants_write() {
            match tls.write_tls(&mut Sock(sock)) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(e),
            }
        }
    }
}

/// invalid turns a TLS protocol error into an I/O error of kind `InvalidData`.
pub fn invalid(e: rustls::Error) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}
