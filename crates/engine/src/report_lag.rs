//! The verdict's note on the generator's own send lag (see [`crate::parts`]).

use super::{LatencyFrom, RunFacts, Totals};
use crate::config::{Checked, Model, Protocol};

/// transmit says whether the run's connections asked for transmit stamps: plain HTTP/1.1
/// in the open model (see [`crate::conn::Stamps`]).
fn transmit(cfg: &Checked) -> bool {
    cfg.model == Model::Open && cfg.protocol == Protocol::Http1 && cfg.tls.is_none()
}

/// send_stamps says where the run's send times came from: "kernel" (transmit stamps),
/// "write" (a write's narrow clock bracket, the closed model, which asks for none), "user"
/// or "mixed" (some were user space's, taken before a write that was interrupted and had no
/// stamp asked: the open model asks for one request in 16, see [`crate::sendstamp`]).
pub(super) fn send_stamps(t: &Totals, cfg: &Checked) -> &'static str {
    match (t.unstamped, t.requests) {
        (0, _) if transmit(cfg) => "kernel",
        (0, _) => "write",
        (u, r) if u >= r => "user",
        _ => "mixed",
    }
}

/// LAG_SHARE: a generator lag whose p99 exceeds this share of the latency's p99 is named in
/// the verdict: the generator, not the server, then limits how precisely load was applied.
const LAG_SHARE: f64 = 0.1;

/// lag_note names the generator's own send lag when it is large against the latency, and
/// send times that came from user space.
pub(super) fn lag_note(f: &RunFacts<'_>) -> String {
    let t = &f.totals;
    let (lag, lat) = (
        t.lag.value_at_quantile(0.99),
        t.latency.value_at_quantile(0.99),
    );
    let mut out = String::new();
    if t.requests > 0 && lag >= 100 && lag as f64 > LAG_SHARE * lat as f64 {
        out.push_str(&format!(
            "; the generator's own send lag was large against the latency (p99 {:.2} ms against {:.2} ms): \
             the generator, not the server, limits the load's precision ({})",
            lag as f64 / 1000.0,
            lat as f64 / 1000.0,
            match f.cfg.latency_from {
                LatencyFrom::Sent => "the lag is measured apart, not in the latency",
                LatencyFrom::Intended => "the lag is in the latency (--latency-from intended)",
            }
        ));
    }
    let plain = f.cfg.protocol == Protocol::Http1 && f.cfg.tls.is_none();
    if t.unstamped > 0 && transmit(f.cfg) {
        out.push_str(&format!(
            "; {} requests' writes were interrupted with no transmit stamp asked to correct them (one request in 16 asks), or the kernel gave none: their send times are user space's, taken before the write",
            t.unstamped
        ));
    } else if t.unstamped > 0 && plain {
        out.push_str(&format!(
            "; {} requests' writes were interrupted (the closed model asks for no transmit stamps): their send times are user space's, taken before the write",
            t.unstamped
        ));
    }
    out
}
