//! https for the target: a rustls server configuration from PEM files, and the one trait the
//! connection code needs to serve plain and TLS streams alike.

use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_rustls::TlsAcceptor;

use crate::config::TlsFiles;
use crate::error::TargetError;

/// acceptor loads the certificate chain and key and builds the TLS acceptor: ALPN http/1.1,
/// or `h2` first when the target serves HTTP/2 over TLS (`http2`).
pub(crate) fn acceptor(files: &TlsFiles, http2: bool) -> Result<TlsAcceptor, TargetError> {
    let shown = |p: &std::path::Path| p.display().to_string();
    let certs = CertificateDer::pem_file_iter(&files.cert)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|e| TargetError::Tls(format!("certificate {}: {e}", shown(&files.cert))))?;
    if certs.is_empty() {
        return Err(TargetError::Tls(format!(
            "certificate {}: no PEM certificate in the file",
            shown(&files.cert)
        )));
    }
    let key = PrivateKeyDer::from_pem_file(&files.key)
        .map_err(|e| TargetError::Tls(format!("key {}: {e}", shown(&files.key))))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| TargetError::Tls(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| TargetError::Tls(format!("certificate and key: {e}")))?;
    config.alpn_protocols = if http2 {
        vec![b"h2".to_vec(), b"http/1.1".to_vec()]
    } else {
        vec![b"http/1.1".to_vec()]
    };
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// Io is a served stream: plain TCP, TLS over TCP, or the in-memory pipe an HTTP/2 request
/// is answered through (`http2.rs`).
pub(crate) trait Io: AsyncRead + AsyncWrite + Unpin {
    /// tcp is the socket underneath (for socket options such as SO_LINGER), if any.
    fn tcp(&self) -> Option<&TcpStream>;
}

impl Io for TcpStream {
    fn tcp(&self) -> Option<&TcpStream> {
        Some(self)
    }
}

impl Io for tokio_rustls::server::TlsStream<TcpStream> {
    fn tcp(&self) -> Option<&TcpStream> {
        Some(self.get_ref().0)
    }
}

impl Io for tokio::io::DuplexStream {
    fn tcp(&self) -> Option<&TcpStream> {
        None
    }
}
