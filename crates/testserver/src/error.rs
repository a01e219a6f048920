//! error: why the target server could not start (its one error type, below the probes and
//! the config that name it).

use std::io;

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
    /// Tasks: a task app setting out of range (`fail_every` 0).
    #[error("tasks: {0}")]
    Tasks(String),
    /// Idle: an idle timeout of zero.
    #[error("idle timeout: {0}")]
    Idle(String),
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
