//! Configuration and start-up errors of the target server.

use std::io;
use std::path::PathBuf;

use crate::bucket::RateLimit;
use crate::capacity::Capacity;
use crate::contention::Contention;
use crate::http2::H2Faults;
use crate::pause::Pause;

/// TargetConfig says where the target server listens and how many threads serve it; the
/// defaults (loopback, ephemeral port, one thread per core) suit tests and benchmarks, which
/// must never bind a fixed port or reach beyond 127.0.0.1.
///
/// The server-wide modes make probes of known truth (each module derives its own): `capacity`
/// (with `queue_limit` and `pause`), or `contention`; and `rate_limit` in front of either or of
/// the plain immediate answer.
#[derive(Debug, Clone, PartialEq)]
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
    /// queue_limit sheds load in capacity mode: a request that would wait when this many are
    /// already waiting is answered 503 at once (see `capacity.rs`).
    pub queue_limit: Option<usize>,
    /// pause stops capacity mode's slots for D out of every P (see [`Pause`]).
    pub pause: Option<Pause>,
    /// contention makes requests slow each other down, USL-style (see [`Contention`]); not
    /// with `capacity`.
    pub contention: Option<Contention>,
    /// rate_limit puts a token bucket in front of the server (see [`RateLimit`]).
    pub rate_limit: Option<RateLimit>,
    /// http2 offers HTTP/2 by ALPN (`h2`, then `http/1.1`) over TLS; h2c with prior knowledge
    /// is always answered on the plain port.
    pub http2: bool,
    /// h2_faults: the HTTP/2 misbehaviours (GOAWAY after N requests, a closed window).
    pub h2_faults: H2Faults,
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
            queue_limit: None,
            pause: None,
            contention: None,
            rate_limit: None,
            http2: false,
            h2_faults: H2Faults::default(),
        }
    }
}

impl TargetConfig {
    /// validate checks each mode's values and that the modes combine (queue limit and pause
    /// need capacity mode; capacity and contention exclude each other).
    pub fn validate(&self) -> Result<(), TargetError> {
        if let Some(capacity) = &self.capacity {
            capacity.validate()?;
        }
        if self.capacity.is_none() {
            if self.queue_limit.is_some() {
                return Err(TargetError::Capacity(
                    "a queue limit needs capacity mode (slots and a service time)".to_string(),
                ));
            }
            if self.pause.is_some() {
                return Err(TargetError::Pause(
                    "pauses need capacity mode (slots and a service time)".to_string(),
                ));
            }
        }
        if let Some(limit) = self.queue_limit {
            if limit > MAX_QUEUE_LIMIT {
                return Err(TargetError::Capacity(format!(
                    "queue limit must be at most {MAX_QUEUE_LIMIT}, got {limit}"
                )));
            }
        }
        if let Some(pause) = &self.pause {
            pause.validate()?;
        }
        if let Some(contention) = &self.contention {
            if self.capacity.is_some() {
                return Err(TargetError::Contention(
                    "choose capacity mode or contention, not both".to_string(),
                ));
            }
            contention.validate()?;
        }
        if let Some(limit) = &self.rate_limit {
            limit.validate()?;
        }
        Ok(())
    }
}

/// MAX_QUEUE_LIMIT bounds `TargetConfig::queue_limit`.
pub const MAX_QUEUE_LIMIT: usize = 10_000_000;

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
    /// Capacity: a slot count, service time or queue limit out of range, or a service time not
    /// understood.
    #[error("capacity: {0}")]
    Capacity(String),
    /// Pause: a pause not understood, out of range, or without capacity mode.
    #[error("pause: {0}")]
    Pause(String),
    /// Contention: a coefficient or service time out of range, or combined with capacity.
    #[error("contention: {0}")]
    Contention(String),
    /// RateLimit: a rate, burst or refuse status out of range.
    #[error("rate limit: {0}")]
    RateLimit(String),
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
