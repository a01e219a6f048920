//! A run's totals: what a worker thread ships at the end, over the measured part of the run
//! (warm-up excluded), whole and per request name.

use hdrhistogram::Histogram;

use crate::failure::ErrorCounts;
use crate::hdr::new_histogram;
use crate::hosts::HostStats;
use crate::scenario::stats::FlowTotals;
use crate::scenario::tally::Tally;
use crate::stream::StreamTotals;

/// NameStats is the summary of one request name.
#[derive(Debug, Clone)]
pub struct NameStats {
    /// requests: responses received.
    pub requests: u64,
    /// errors: failed requests.
    pub errors: u64,
    /// latency: corrected latency, µs.
    pub latency: Histogram<u64>,
    /// tally: its answers counted by the value at its `tally` path (empty without one).
    pub tally: Tally,
}

/// Totals is one thread's (or, merged, the run's) post-warmup summary.
///
/// A request belongs to the measured part of the run when it was *meant* to start after the
/// warm-up (the open model's due time, the closed model's send), whatever its outcome, so the
/// books balance: `requests + transport failures + unfinished + unsent = started + unsent`,
/// each started request ending as exactly one of the first three.
#[derive(Debug, Clone)]
pub struct Totals {
    /// requests: responses received (HTTP error statuses included).
    pub requests: u64,
    /// started: requests that went out (each ends answered, failed or unfinished).
    pub started: u64,
    /// unfinished: requests still out when the run cut them off (grace over, or stopped);
    /// in the latency histograms at their age at the cut-off, a lower bound.
    pub unfinished: u64,
    /// unsent: open-model hits due before the end that never went out (pool full, generator
    /// behind); in the latency histogram at their age at the end, a lower bound.
    pub unsent: u64,
    /// retries: requests sent again on a fresh connection after a reused one failed.
    pub retries: u64,
    /// clamped: latencies above the histograms' range, recorded at its top.
    pub clamped: u64,
    /// late_at_cap: open-model hits sent late while the thread's pool was at its cap (the
    /// hit waited for a busy connection, and no new one could be opened).
    pub late_at_cap: u64,
    /// cap_reached: hits fell due while every connection the cap allows was busy.
    pub cap_reached: bool,
    /// coarse_timer: the open model's precise timer (timerfd) could not be made and sends
    /// were timed by the runtime's millisecond timer.
    pub coarse_timer: bool,
    /// sends: hits sent within the send window.
    pub sends: u64,
    /// after_end: requests sent after the send window (a scenario's iterations under way at
    /// the end, an open model's late hits due before it).
    pub after_end: u64,
    /// after_end_us: how long after the send window's end the last of them went out, µs.
    pub after_end_us: u64,
    /// bytes_in: bytes read.
    pub bytes_in: u64,
    /// bytes_out: bytes written.
    pub bytes_out: u64,
    /// errors: failures by class.
    pub errors: ErrorCounts,
    /// status: response counts by status code (index = code, 0..1000).
    pub status: Box<[u64]>,
    /// connects: TCP connects made over the whole run, warmup included.
    pub connects: u64,
    /// late_sends: open-model hits sent later than their intended time.
    pub late_sends: u64,
    /// max_send_lag_us: the worst send lag.
    pub max_send_lag_us: u64,
    /// peak_connections: the most connections open at once (one thread's; merged totals
    /// hold the sum of thread peaks until the run puts the [`ConnectionGauge`] peak here).
    pub peak_connections: u64,
    /// fd_refused: connects the open-file limit refused (put here by the run, from the
    /// [`ConnectionGauge`]).
    pub fd_refused: u64,
    /// latency: corrected latency (from the intended send in the open model), µs.
    pub latency: Histogram<u64>,
    /// uncorrected: the server's time, from the request leaving (open model only), µs.
    pub uncorrected: Option<Histogram<u64>>,
    /// lag: the generator's own lag, from when a request could go (its intended time, or
    /// when its connection came free) to when it left, µs; it is in no latency figure but
    /// `--latency-from intended`'s.
    pub lag: Histogram<u64>,
    /// unstamped: answered requests whose send time came from user space, the kernel giving
    /// no transmit stamp (HTTP/2, https, or a kernel that refused them).
    pub unstamped: u64,
    /// per_name: statistics per request name, indexed like `Plan::names`.
    pub per_name: Vec<NameStats>,
    /// flow: scenario statistics (failure reasons, iterations, groups); empty otherwise.
    pub flow: FlowTotals,
    /// stream: with `--stream`, the figures of streamed answers (see [`crate::stream`]).
    pub stream: Option<StreamTotals>,
    /// per_host: scenario runs: figures per origin, indexed like the thread's
    /// [`crate::hosts::Origins`] (merged: by origin name); empty otherwise.
    pub per_host: Vec<HostStats>,
}

impl Totals {
    /// new makes empty totals for `names` request names.
    pub fn new(highest_us: u64, names: usize, open: bool) -> Self {
        Totals {
            requests: 0,
            started: 0,
            unfinished: 0,
            unsent: 0,
            retries: 0,
            clamped: 0,
            late_at_cap: 0,
            cap_reached: false,
            coarse_timer: false,
            sends: 0,
            after_end: 0,
            after_end_us: 0,
            bytes_in: 0,
            bytes_out: 0,
            errors: ErrorCounts::default(),
            status: vec![0; 1000].into_boxed_slice(),
            connects: 0,
            late_sends: 0,
            max_send_lag_us: 0,
            peak_connections: 0,
            fd_refused: 0,
            latency: new_histogram(highest_us),
            uncorrected: open.then(|| new_histogram(highest_us)),
            lag: new_histogram(highest_us),
            unstamped: 0,
            per_name: (0..names)
                .map(|_| NameStats {
                    requests: 0,
                    errors: 0,
                    latency: new_histogram(highest_us),
                    tally: Tally::default(),
                })
                .collect(),
            flow: FlowTotals::default(),
            stream: None,
            per_host: Vec::new(),
        }
    }

    /// merge folds another thread's totals into these.
    pub fn merge(&mut self, o: &Totals) {
        self.requests += o.requests;
        self.started += o.started;
        self.unfinished += o.unfinished;
        self.unsent += o.unsent;
        self.retries += o.retries;
        self.clamped += o.clamped;
        self.late_at_cap += o.late_at_cap;
        self.cap_reached |= o.cap_reached;
        self.coarse_timer |= o.coarse_timer;
        self.sends += o.sends;
        self.after_end += o.after_end;
        self.after_end_us = self.after_end_us.max(o.after_end_us);
        self.bytes_in += o.bytes_in;
        self.bytes_out += o.bytes_out;
        self.errors.merge(&o.errors);
        for (a, b) in self.status.iter_mut().zip(o.status.iter()) {
            *a += b;
        }
        self.connects += o.connects;
        self.late_sends += o.late_sends;
        self.max_send_lag_us = self.max_send_lag_us.max(o.max_send_lag_us);
        // A sum of per-thread peaks, an upper bound; the run reports the gauge's peak.
        self.peak_connections += o.peak_connections;
        self.fd_refused += o.fd_refused;
        let _ = self.latency.add(&o.latency);
        if let (Some(a), Some(b)) = (self.uncorrected.as_mut(), o.uncorrected.as_ref()) {
            let _ = a.add(b);
        }
        let _ = self.lag.add(&o.lag);
        self.unstamped += o.unstamped;
        for (a, b) in self.per_name.iter_mut().zip(o.per_name.iter()) {
            a.requests += b.requests;
            a.errors += b.errors;
            let _ = a.latency.add(&b.latency);
            a.tally.merge(&b.tally);
        }
        self.flow.merge(&o.flow);
        match (self.stream.as_mut(), o.stream.as_ref()) {
            (Some(a), Some(b)) => a.merge(b),
            (None, Some(b)) => self.stream = Some(b.clone()),
            _ => {}
        }
        crate::hosts::merge(&mut self.per_host, &o.per_host);
    }
}
