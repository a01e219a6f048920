//! TLS for `https://` targets: rustls (ring provider), driven by hand over the same
//! non-blocking socket and `try_read`/`try_write` calls as plain HTTP.
//!
//! tokio-rustls would wrap the socket in an `AsyncRead`/`AsyncWrite` stream; the connection
//! loop in [`crate::conn`] works on readiness and `try_*` calls instead (see its header), so
//! this module feeds rustls' `read_tls`/`write_tls` from those calls directly. The engine
//! parses plaintext exactly as it does for http; TLS adds only the record layer.
//!
//! Certificates are verified against the system's trust store (as curl does) plus any
//! `--cacert` file; `--insecure` skips verification (self-signed test servers) but still
//! checks the handshake signatures. TLS handshake failures during a run count as `connect`
//! errors; the preflight reports the first one in words.

use std::io::{self, Read, Write};
use std::net::TcpStream as StdTcpStream;
use std::sync::Arc;
use std::time::Duration;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
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
    config: Arc<ClientConfig>,
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
            builder
                .with_root_certificates(roots(ca_file)?)
                .with_no_client_auth()
        };
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let name = ServerName::try_from(host.to_string())
            .map_err(|e| EngineError::config(format!("TLS: bad server name {host:?}: {e}")))?;
        Ok(TlsSettings {
            config: Arc::new(config),
            name,
        })
    }

    /// session starts a client session (no I/O yet).
    pub fn session(&self) -> Result<ClientConnection, rustls::Error> {
        ClientConnection::new(self.config.clone(), self.name.clone())
    }

    /// preflight completes one blocking handshake on `stream`, so a bad certificate or a
    /// server that does not speak TLS is reported in words before the run starts.
    pub fn preflight(&self, stream: StdTcpStream, wait: Duration) -> Result<(), String> {
        let _ = stream.set_read_timeout(Some(wait));
        let _ = stream.set_write_timeout(Some(wait));
        let mut sock = stream;
        let mut tls = self.session().map_err(|e| e.to_string())?;
        while tls.is_handshaking() {
            tls.complete_io(&mut sock).map_err(|e| match e.kind() {
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => {
                    "no TLS handshake within the timeout (is it an https server?)".to_string()
                }
                io::ErrorKind::UnexpectedEof => {
                    "the server closed the connection during the TLS handshake".to_string()
                }
                _ => e.to_string(),
            })?;
        }
        tls.send_close_notify();
        let _ = tls.complete_io(&mut sock);
        Ok(())
    }
}

/// roots is the trust store: the system's certificates, plus those of `ca_file`.
fn roots(ca_file: Option<&str>) -> Result<RootCertStore, EngineError> {
    let mut store = RootCertStore::empty();
    let system = rustls_native_certs::load_native_certs();
    store.add_parsable_certificates(system.certs);
    if let Some(path) = ca_file {
        let mut added = 0;
        for cert in CertificateDer::pem_file_iter(path)
            .map_err(|e| EngineError::config(format!("cacert {path:?}: {e}")))?
        {
            let cert = cert.map_err(|e| EngineError::config(format!("cacert {path:?}: {e}")))?;
            store
                .add(cert)
                .map_err(|e| EngineError::config(format!("cacert {path:?}: {e}")))?;
            added += 1;
        }
        if added == 0 {
            return Err(EngineError::config(format!(
                "cacert {path:?}: no PEM certificate in the file"
            )));
        }
    }
    Ok(store)
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
