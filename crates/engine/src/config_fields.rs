//! The checks of single fields (and of the warmup against the run) that
//! [`RunConfig::check`](super::RunConfig::check) applies, each with its one-line error.

use std::time::Duration;

use serde::Deserialize;

use super::MAX_COUNT;
use super::MAX_SECS;
use crate::error::EngineError;
use crate::pacer::Stage;

/// check_warmup_fits: the warmup must end before a time-bound run does.
pub(super) fn check_warmup_fits(
    warmup: Duration,
    duration: Option<Duration>,
) -> Result<(), EngineError> {
    match duration {
        Some(d) if warmup >= d => Err(EngineError::config(format!(
            "warmup ({:.3}s) must be shorter than the run ({:.3}s)",
            warmup.as_secs_f64(),
            d.as_secs_f64()
        ))),
        _ => Ok(()),
    }
}

pub(super) fn positive_secs(name: &str, v: f64) -> Result<Duration, EngineError> {
    if v.is_finite() && v > 0.0 && v < MAX_SECS {
        Ok(Duration::from_secs_f64(v))
    } else {
        Err(EngineError::config(format!(
            "{name} must be > 0 s, got {v}"
        )))
    }
}

/// check_grpc: a gRPC run (`grpc`) is a URL's, over HTTP/2 said outright.
pub(super) fn check_grpc(grpc: bool, http2: Option<bool>, plan: bool) -> Result<(), EngineError> {
    match (grpc, http2, plan) {
        (true, _, true) => Err(EngineError::config(
            "a scenario does not make gRPC calls yet",
        )),
        (true, Some(true), false) | (false, _, _) => Ok(()),
        (true, _, false) => Err(EngineError::config("grpc needs HTTP/2: set http2")),
    }
}

/// count checks a count option (connections, threads, the pool cap): 1 to [`MAX_COUNT`].
pub(super) fn count(name: &str, v: i64) -> Result<u32, EngineError> {
    match u32::try_from(v) {
        Ok(n) if (1..=MAX_COUNT).contains(&v) => Ok(n),
        _ if v < 1 => Err(EngineError::config(format!("{name} must be > 0, got {v}"))),
        _ => Err(EngineError::config(format!(
            "{name} must be at most {MAX_COUNT}, got {v}"
        ))),
    }
}

pub(super) fn check_stages(stages: &[Stage]) -> Result<Vec<Stage>, EngineError> {
    if stages.is_empty() {
        return Err(EngineError::config("stages must not be empty"));
    }
    for (i, s) in stages.iter().enumerate() {
        if !(s.duration_s.is_finite() && s.duration_s > 0.0 && s.duration_s < MAX_SECS) {
            return Err(EngineError::config(format!(
                "stage {}: duration must be > 0, got {}",
                i + 1,
                s.duration_s
            )));
        }
        if !(s.target.is_finite() && s.target >= 0.0) {
            return Err(EngineError::config(format!(
                "stage {}: target must be >= 0, got {}",
                i + 1,
                s.target
            )));
        }
    }
    if stages.iter().all(|s| s.target == 0.0) {
        return Err(EngineError::config(
            "stages: at least one target must be > 0",
        ));
    }
    Ok(stages.to_vec())
}

/// check_method accepts any RFC 9110 token (`M-SEARCH`, `PROPFIND`) and sends it upper case.
pub(super) fn check_method(m: &str) -> Result<String, EngineError> {
    if m.is_empty() || !m.bytes().all(is_token) {
        return Err(EngineError::config(format!(
            "bad HTTP method {m:?}: expected a token like GET or M-SEARCH"
        )));
    }
    Ok(m.to_ascii_uppercase())
}

fn is_token(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

pub(super) fn check_headers(headers: &[(String, String)]) -> Result<(), EngineError> {
    for (k, v) in headers {
        if k.is_empty() || !k.bytes().all(is_token) {
            return Err(EngineError::config(format!("bad header name {k:?}")));
        }
        if v.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
            return Err(EngineError::config(format!(
                "bad value for header {k:?}: no line breaks allowed"
            )));
        }
    }
    Ok(())
}

/// LatencyFrom is where a request's latency starts. Either way it ends when the response's
/// last bytes arrived, and the open model charges the wait for a free connection to the
/// server (coordinated omission).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LatencyFrom {
    /// Sent: the wait for a free connection plus the server's time from the moment the
    /// request left (the kernel's transmit stamp): free of the generator's own lag, which is
    /// measured apart.
    #[default]
    Sent,
    /// Intended: from the intended send time (wrk2's definition): the generator's lag is in
    /// the figure too.
    Intended,
}

impl LatencyFrom {
    /// name is the choice as the report and `--latency-from` spell it.
    pub fn name(self) -> &'static str {
        match self {
            LatencyFrom::Sent => "sent",
            LatencyFrom::Intended => "intended",
        }
    }
}

/// Protocol is the HTTP version a run speaks on its connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// Http1: HTTP/1.1, one request at a time per connection.
    Http1,
    /// Http2: HTTP/2, `streams` requests at a time per connection.
    Http2,
}

impl Protocol {
    /// name is the protocol as the report and ALPN name it.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Http1 => "http/1.1",
            Protocol::Http2 => "h2",
        }
    }
}
