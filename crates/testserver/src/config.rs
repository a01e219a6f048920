//! Configuration and start-up errors of the target server.

use std::path::PathBuf;
use std::time::Duration;

use crate::bucket::RateLimit;
use crate::capacity::Capacity;
use crate::contention::Contention;
use crate::error::TargetError;
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
    /// fail_every: the task app runs every N-th fresh submission as a failing task (its
    /// status ends FAILED), counted across threads (see `task.rs`).
    pub fail_every: Option<u64>,
    /// idle_timeout closes an HTTP/1.1 connection that waits this long for its next request
    /// (FIN, then the socket is gone: a request sent after it meets a reset), as a server's
    /// keep-alive timeout does (uvicorn's 5 s); counted in `idle_closed`. None keeps idle
    /// connections open.
    pub idle_timeout: Option<Duration>,
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
            fail_every: None,
            idle_timeout: None,
        }
    }
}

impl TargetConfig {
    /// parse_idle_timeout reads an idle timeout such as "200ms" or "5s".
    pub fn parse_idle_timeout(text: &str) -> Result<Duration, TargetError> {
        crate::latency::parse_duration(text).map_err(TargetError::Idle)
    }

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
        if self.idle_timeout.is_some_and(|t| t.is_zero()) {
            return Err(TargetError::Idle(
                "must be above zero (leave it out to keep idle connections open)".to_string(),
            ));
        }
        if self.fail_every == Some(0) {
            return Err(TargetError::Tasks(
                "fail_every must be at least 1 (every N-th task fails)".to_string(),
            ));
        }
        Ok(())
    }
}

/// MAX_QUEUE_LIMIT bounds `TargetConfig::queue_limit`.
pub const MAX_QUEUE_LIMIT: usize = 10_000_000;

/// H2Faults are the HTTP/2 misbehaviours a target can be started with: `Default` is none.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct H2Faults {
    /// goaway_after: a connection sends GOAWAY (INTERNAL_ERROR, at once) once it has received this
    /// many requests, and closes: the requests it has in flight are cut.
    pub goaway_after: Option<u64>,
    /// window: the initial stream window the server grants (0: a window that never opens,
    /// so no request body can be sent).
    pub window: Option<u32>,
}
