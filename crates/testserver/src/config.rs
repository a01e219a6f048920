//! Configuration and start-up errors of the target server.

use std::io;
use std::path::PathBuf;

use crate::capacity::Capacity;

/// TargetConfig says where the target server listens and how many threads serve it; the
/// defaults (loopback, ephemeral port, one thread per core) suit tests and benchmarks, which
/// must never bind a fixed port or reach beyond 127.0.0.1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetConfig {
    /// host is the address or name to bind; "127.0.0.1" by default so nothing is exposed.
    pub host: String,
    /// port to bind; 0 asks the kernel for a free one (read it back with `Target::local_addr`).
    pub port: u16,
    /// threads is the number of serving threads; `None` means one per available core.
    pub threads: Option<usize>,
    /// tls serves https with this certificate chain and private key (PEM files).
    pub tls: Option<TlsFiles>,
    /// capacity makes the whole server a queue of known throughput (see [`Capacity`]); `None`
    /// serves every request at once.
    pub capacity: Option<Capacity>,
}

/// TlsFiles names the PEM files of an https target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// cert: the certificate chain, leaf first.
    pub cert: PathBuf,
    /// key: the private key (PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
}

impl Default for TargetConfig {
    fn default() -> Self {
        TargetConfig {
            host: "127.0.0.1".to_string(),
            port: 0,
            threads: None,
            tls: None,
            capacity: None,
        }
    }
}

/// TargetError is why the target server could not start; each variant renders as one line
/// fit for a CLI's stderr, e.g. "cannot bind 127.0.0.1:80: permission denied".
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    /// InvalidThreads: zero threads, or more than the server is willing to start.
    #[error("threads must be between 1 and {max}, got {got}")]
    InvalidThreads {
        /// got is the requested thread count.
        got: usize,
        /// max is the largest accepted thread count.
        max: usize,
    },
    /// Resolve: the host did not resolve to any address.
    #[error("cannot resolve host {host}: {}", reason(.source))]
    Resolve {
        /// host as given in the configuration.
        host: String,
        /// source is the resolver's error.
        source: io::Error,
    },
    /// Bind: the address is taken, not ours, or not allowed.
    #[error("cannot bind {addr}: {}", reason(.source))]
    Bind {
        /// addr is the address we tried to bind, as text.
        addr: String,
        /// source is the operating system's error.
        source: io::Error,
    },
    /// Capacity: a slot count or service time out of range, or a service time not understood.
    #[error("capacity: {0}")]
    Capacity(String),
    /// Tls: the certificate or key could not be loaded or do not match.
    #[error("TLS: {0}")]
    Tls(String),
    /// Runtime: a serving thread or its event loop could not be created.
    #[error("cannot start server thread: {}", reason(.source))]
    Runtime {
        /// source is the operating system's error.
        source: io::Error,
    },
}

/// reason turns an `io::Error` into a short lowercase phrase ("permission denied"): the OS text
/// without its "(os error N)" suffix, so the whole error stays one readable line.
fn reason(err: &io::Error) -> String {
    let text = err.to_string();
    let text = match text.find(" (os error") {
        Some(at) => &text[..at],
        None => text.as_str(),
    };
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}
