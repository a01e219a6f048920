//! What a run produced: the [`Report`] (the `--json` document); its per-interval snapshots
//! are [`crate::snapshot`]'s.
//!
//! The JSON shape is a contract with the Python package (docs/schema/result.schema.json);
//! fields may be added, never renamed or removed.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::config::{Checked, LatencyFrom, Model};
use crate::failure::ErrorCounts;
use crate::hdr::{encode_histogram, LatencySummary};
use crate::snapshot::IntervalSnapshot;
use crate::totals::Totals;
use crate::usage::CpuTimes;

#[path = "report_lag.rs"]
mod lag;
use lag::lag_note;

/// REPORT_VERSION is the version of the report document's shape.
pub const REPORT_VERSION: u32 = 1;

/// SATURATED_ACHIEVED is the share of the intended rate below which the generator is called
/// saturated.
pub const SATURATED_ACHIEVED: f64 = 0.95;

/// SATURATED_BUSY is the worker CPU busy ratio above which the generator is called saturated.
pub const SATURATED_BUSY: f64 = 0.9;

#[path = "report_names.rs"]
mod names;
use names::per_name;
pub use names::NameReport;

/// Limit is what held the run's load back, as measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Limit {
    /// Server: the generator kept to its schedule (or, closed model, was not the
    /// bottleneck): the figures describe the server.
    Server,
    /// Pool: open model: every connection `max_connections` allows was busy while hits fell
    /// due; the hits waited or were never sent (a slow server against too small a cap).
    Pool,
    /// Generator: redline itself fell behind (busy worker threads, or threads not scheduled
    /// in time): the figures may describe redline.
    Generator,
    /// FdLimit: the open-file limit (`ulimit -n`) refused connects, so fewer connections
    /// opened than the run asked for: the figures describe the ones that did.
    #[serde(rename = "fd_limit")]
    FdLimit,
    /// Python: a scenario's Python step held the iterations back: its one thread (the GIL)
    /// was in calls most of the run.
    Python,
}

/// Generator is the self-check: did redline keep up, or do the numbers describe redline?
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Generator {
    /// cpu_s: process CPU time during the run (user + sys).
    pub cpu_s: f64,
    /// user_s: process user CPU time.
    pub user_s: f64,
    /// sys_s: process system CPU time.
    pub sys_s: f64,
    /// worker_cpu_s: CPU time of the worker threads alone.
    pub worker_cpu_s: f64,
    /// busy_ratio: worker CPU / (threads x wall time).
    pub busy_ratio: f64,
    /// intended_rate: open model: the schedule's average rate after warmup.
    pub intended_rate: Option<f64>,
    /// achieved_rate: open model: requests actually sent per second after warmup.
    pub achieved_rate: Option<f64>,
    /// late_sends: open model: requests sent later than their intended time.
    pub late_sends: u64,
    /// max_send_lag_ms: open model: the worst lag between a hit's due time and its send
    /// (None in the closed model, which has no intended send time).
    pub max_send_lag_ms: Option<f64>,
    /// timer: open model: what timed the sends, "timerfd" (sub-millisecond) or "runtime_ms"
    /// (tokio's millisecond timer, when no timerfd could be made).
    pub timer: Option<&'static str>,
    /// send_ahead_ms: open model: how far ahead of its due time a hit could go out with the
    /// ones due before it (the run's `send_ahead_s`, in ms).
    pub send_ahead_ms: Option<f64>,
    /// cpu_us_per_request: process CPU per completed request, microseconds.
    pub cpu_us_per_request: Option<f64>,
    /// connections_opened: the most connections open at once over the run.
    pub connections_opened: u64,
    /// fd_refused: connects the open-file limit refused (EMFILE/ENFILE); when any were,
    /// `limit` is `fd_limit` and `fd_limit` says what the limit was.
    pub fd_refused: u64,
    /// fd_limit: the open-file limit, when it refused connects.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fd_limit: Option<crate::nofile::FdLimit>,
    /// send_stamps: where the send times came from: "kernel" (transmit stamps: the open
    /// model), "write" (the closed model: each write's narrow clock bracket), "user" (user
    /// space, before the write: HTTP/2, https, or a kernel that refused them), or "mixed".
    pub send_stamps: &'static str,
    /// latency_from: where the latency figures start: "sent" or "intended".
    pub latency_from: &'static str,
    /// limit: what held the load back, as measured (see [`Limit`]).
    pub limit: Limit,
    /// saturated: the generator was the limit (`limit == "generator"`): achieved < 95% of
    /// intended with neither the pool cap to blame, or busy_ratio > 0.9.
    pub saturated: bool,
    /// verdict: the self-check in words.
    pub verdict: String,
}

/// Histograms are the final latency histograms, base64 HdrHistogram V2 (deflate), µs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Histograms {
    /// latency: corrected latency.
    pub latency: String,
    /// uncorrected: open model service time.
    pub uncorrected: Option<String>,
    /// lag: the generator's own send lag.
    pub lag: String,
    /// stream: with `--stream`, `first_byte` and `chunk_gap`.
    #[serde(flatten)]
    pub stream: Option<crate::stream::StreamHistograms>,
}

/// Report is the full result of a run: the summary, the time series and the self-check.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// version: the document's shape version.
    pub version: u32,
    /// url: the target URL.
    pub url: String,
    /// method: the HTTP method.
    pub method: String,
    /// model: "closed" or "open".
    pub model: &'static str,
    /// threads: worker threads used.
    pub threads: u32,
    /// connections: closed: peak VUs (connections, with HTTP/2); open: peak pool size.
    pub connections: u64,
    /// protocol: the HTTP version spoken, "http/1.1" or "h2".
    pub protocol: &'static str,
    /// streams: requests in flight per connection (HTTP/2), 1 for HTTP/1.1; the run's
    /// concurrency is `connections × streams`.
    pub streams: u32,
    /// interrupted: the run was stopped before its end.
    pub interrupted: bool,
    /// duration_s: the time the counted requests went out in, after warmup, in seconds: the
    /// send window, and for a scenario the time past it its iterations under way at the end
    /// went on sending (`after_end`).
    pub duration_s: f64,
    /// after_end: a scenario's requests sent after the send window by the iterations under
    /// way at its end (in `requests`, and `duration_s` covers them); absent when none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after_end: Option<AfterEnd>,
    /// requests: responses received after warmup (HTTP error statuses included).
    pub requests: u64,
    /// intended: requests the run meant to make after warm-up: every request started, and in
    /// the open model every hit due before the end. The books balance (a failed check is an
    /// answered request, like an error status):
    /// `requests + (errors_total - status - check - grpc errors) + unfinished + unsent == intended`.
    pub intended: u64,
    /// unfinished: requests still out when the run cut them off (after the grace period, or
    /// on a stop); in the latency figures at their age then, a lower bound.
    pub unfinished: u64,
    /// unsent: open model: hits due before the end that never went out (every connection
    /// busy, or the generator behind); in the latency figures at their age at the end.
    pub unsent: u64,
    /// retries: requests sent again on a fresh connection after a kept-alive one closed under
    /// them (only when that cannot repeat their effect; see `conn::Conn::exchange`).
    pub retries: u64,
    /// clamped: latencies beyond the histograms' range, recorded at its top.
    pub clamped: u64,
    /// rps: requests per second.
    pub rps: f64,
    /// bytes_in: bytes received.
    pub bytes_in: u64,
    /// bytes_out: bytes sent.
    pub bytes_out: u64,
    /// transfer_in_per_s: bytes received per second.
    pub transfer_in_per_s: f64,
    /// status_codes: responses by status code.
    pub status_codes: BTreeMap<String, u64>,
    /// non_2xx: responses whose status is not 2xx (nor a gRPC call's OK, 0).
    pub non_2xx: u64,
    /// errors: failures by class.
    pub errors: ErrorCounts,
    /// errors_total: sum of `errors`.
    pub errors_total: u64,
    /// connects: TCP connects made over the run, reconnects included.
    pub connects: u64,
    /// latency_ms: corrected latency (from the intended send in the open model).
    pub latency_ms: LatencySummary,
    /// uncorrected_latency_ms: open model service time: the server's, from the request
    /// leaving (the kernel's transmit stamp) to its response arriving.
    pub uncorrected_latency_ms: Option<LatencySummary>,
    /// lag_ms: the generator's own send lag: from when a request could go (its intended
    /// time, or when its connection came free) to when it left; in no latency figure but
    /// `latency_from: intended`'s.
    pub lag_ms: LatencySummary,
    /// stream: with `--stream`, `first_byte_ms`, `chunk_gap_ms` and `stream` (the counts).
    #[serde(flatten)]
    pub stream: Option<crate::stream::StreamReport>,
    /// per_name: statistics per request name.
    pub per_name: BTreeMap<String, NameReport>,
    /// per_host: statistics per origin (`http://host:port`): the run's host alone, or each
    /// host a scenario's URLs reached.
    pub per_host: BTreeMap<String, crate::hosts::HostReport>,
    /// scenario: a scenario run's iterations and groups.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scenario: Option<crate::scenario::summary::ScenarioReport>,
    /// timeseries: one snapshot per interval, warmup included.
    pub timeseries: Vec<IntervalSnapshot>,
    /// outages: spans during which the target answered nothing and every attempt failed
    /// (connect refused, reset, timed out), in order; warm-up included.
    pub outages: Vec<crate::outage::Outage>,
    /// generator: the self-check.
    pub generator: Generator,
    /// histograms: mergeable final histograms.
    pub histograms: Histograms,
}

/// AfterEnd is what a scenario's iterations under way at the end of the send window sent
/// after it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AfterEnd {
    /// requests: requests sent after the window's end.
    pub requests: u64,
    /// s: how long after it the last of them went out, in seconds.
    pub s: f64,
}

/// RunFacts is everything the coordinator gathered, from which the report is built.
#[derive(Debug)]
pub struct RunFacts<'a> {
    /// cfg: the checked configuration.
    pub cfg: &'a Checked,
    /// names: request names, indexed like the per-name totals.
    pub names: &'a [String],
    /// totals: merged totals of all threads.
    pub totals: Totals,
    /// process_cpu: process CPU during the run.
    pub process_cpu: CpuTimes,
    /// worker_cpu: CPU of the worker threads.
    pub worker_cpu: CpuTimes,
    /// wall_s: whole run wall time.
    pub wall_s: f64,
    /// measured_s: the send window after warmup (excludes the end-of-run grace).
    pub measured_s: f64,
    /// after_end_s: how long past the send window a scenario's iterations under way at its
    /// end went on sending (0 otherwise): the report's rates cover it.
    pub after_end_s: f64,
    /// intended_hits: open model: hits the schedule wanted after warmup.
    pub intended_hits: Option<f64>,
    /// interrupted: stopped by the RunControl.
    pub interrupted: bool,
    /// timeseries: the snapshots.
    pub timeseries: Vec<IntervalSnapshot>,
    /// outages: when the target answered nothing.
    pub outages: Vec<crate::outage::Outage>,
}

fn per_second(n: f64, secs: f64) -> f64 {
    if secs > 0.0 {
        n / secs
    } else {
        0.0
    }
}

/// build_report turns the gathered facts into the report.
pub fn build_report(f: RunFacts<'_>) -> Report {
    let t = &f.totals;
    let status_codes = t
        .status
        .iter()
        .enumerate()
        .filter(|(_, &n)| n > 0)
        .map(|(code, &n)| (code.to_string(), n))
        .collect();
    let ok = |c: usize| c == 0 || (200..300).contains(&c); // a gRPC call's OK is 0
    let non_2xx = t
        .status
        .iter()
        .enumerate()
        .filter(|(c, _)| !ok(*c))
        .map(|(_, &n)| n)
        .sum();
    let per_name = per_name(&f);
    // The time the counted requests went out in: a scenario's sends after the window too.
    let covered_s = f.measured_s + f.after_end_s;
    let connections = match f.cfg.model {
        Model::Closed => wanted_connections(&f),
        Model::Open => t.peak_connections,
    };
    Report {
        version: REPORT_VERSION,
        url: f.cfg.url.clone(),
        method: f.cfg.method.clone(),
        model: match f.cfg.model {
            Model::Closed => "closed",
            Model::Open => "open",
        },
        threads: f.cfg.threads,
        connections,
        protocol: f.cfg.protocol.name(),
        streams: f.cfg.streams,
        interrupted: f.interrupted,
        duration_s: covered_s,
        after_end: (f.after_end_s > 0.0).then_some(AfterEnd {
            requests: t.after_end,
            s: f.after_end_s,
        }),
        requests: t.requests,
        intended: t.started + t.unsent,
        unfinished: t.unfinished,
        unsent: t.unsent,
        retries: t.retries,
        clamped: t.clamped,
        rps: per_second(t.requests as f64, covered_s),
        bytes_in: t.bytes_in,
        bytes_out: t.bytes_out,
        transfer_in_per_s: per_second(t.bytes_in as f64, covered_s),
        status_codes,
        non_2xx,
        errors: t.errors,
        errors_total: t.errors.total(),
        connects: t.connects,
        latency_ms: LatencySummary::from_histogram(&t.latency),
        uncorrected_latency_ms: t.uncorrected.as_ref().map(LatencySummary::from_histogram),
        lag_ms: LatencySummary::from_histogram(&t.lag),
        stream: (t.stream.as_ref()).map(|st| crate::stream::StreamReport::new(st, f.measured_s)),
        per_name,
        per_host: per_host(&f),
        scenario: f.cfg.scenario.as_ref().map(|s| {
            let mut r = crate::scenario::summary::summarize(&t.flow, s, covered_s);
            r.python = s.python_report(f.wall_s, f.process_cpu.total_s());
            r
        }),
        generator: generator(&f),
        histograms: Histograms {
            latency: encode_histogram(&t.latency),
            uncorrected: t.uncorrected.as_ref().map(encode_histogram),
            lag: encode_histogram(&t.lag),
            stream: t.stream.as_ref().map(crate::stream::StreamHistograms::new),
        },
        timeseries: f.timeseries,
        outages: f.outages,
    }
}

/// wanted_connections: the connections the run asked for: the closed model's peak VUs (over
/// the streams of a connection), the open model's pool cap.
fn wanted_connections(f: &RunFacts<'_>) -> u64 {
    match f.cfg.model {
        Model::Closed => (f.cfg.profile.peak().ceil() as u64).div_ceil(u64::from(f.cfg.streams)),
        Model::Open => u64::from(f.cfg.max_connections),
    }
}

/// per_host is each origin's figures: a scenario's as its threads kept them, or the whole
/// run's under its one host.
fn per_host(f: &RunFacts<'_>) -> BTreeMap<String, crate::hosts::HostReport> {
    let t = &f.totals;
    if !t.per_host.is_empty() {
        return crate::hosts::report(&t.per_host);
    }
    let target = &f.cfg.target;
    let one = crate::hosts::HostStats {
        origin: crate::hosts::name(target.https, &target.host, target.port),
        requests: t.requests,
        errors: t.errors.total(),
        latency: t.latency.clone(),
    };
    crate::hosts::report(&[one])
}

// long: each limit is judged, then worded, in one place, in the order they take precedence.
fn generator(f: &RunFacts<'_>) -> Generator {
    let t = &f.totals;
    let fd_limit = (t.fd_refused > 0)
        .then(crate::nofile::open_file_limit)
        .flatten();
    let open = f.cfg.model == Model::Open;
    let busy = per_second(f.worker_cpu.total_s(), f64::from(f.cfg.threads) * f.wall_s);
    let intended = f.intended_hits.map(|h| per_second(h, f.measured_s));
    let achieved = intended.map(|_| per_second(t.sends as f64, f.measured_s));
    let short =
        matches!((intended, achieved), (Some(i), Some(a)) if i > 0.0 && a < SATURATED_ACHIEVED * i);
    let busy_hot = busy > SATURATED_BUSY;
    // The schedule was not kept when too few hits went out, or any fell due and never did.
    let behind = open && (short || t.unsent > 0);
    // The pool is to blame when hits fell due with every allowed connection busy, and the
    // late or missing ones waited at the cap.
    let capped = t.cap_reached && (t.late_at_cap > 0 || t.unsent > 0);
    let python = (f.cfg.scenario.as_ref())
        .and_then(|s| s.python_report(f.wall_s, f.process_cpu.total_s()))
        .filter(crate::scenario::host::PythonReport::limits);
    let limit = if t.fd_refused > 0 {
        Limit::FdLimit
    } else if python.is_some() {
        Limit::Python
    } else if busy_hot || (behind && !capped) {
        Limit::Generator
    } else if behind {
        Limit::Pool
    } else {
        Limit::Server
    };
    let sent = match (intended, achieved) {
        (Some(i), Some(a)) if i > 0.0 => {
            format!(
                "sent {a:.1} req/s of {i:.1} intended ({:.0}%)",
                100.0 * a / i
            )
        }
        _ => String::new(),
    };
    let mut verdict = match limit {
        Limit::Server => kept_up(f, busy),
        Limit::Pool => format!(
            "limited by the connection pool, not the generator: all {} connections were busy \
             while hits fell due; {sent}{}",
            f.cfg.max_connections,
            pool_capacity(f)
        ),
        Limit::Generator => saturated(busy, busy_hot, behind, &sent),
        Limit::FdLimit => crate::nofile::verdict(
            wanted_connections(f),
            t.peak_connections,
            t.fd_refused,
            fd_limit,
        ),
        Limit::Python => python.map(|p| p.verdict()).unwrap_or_default(),
    };
    verdict.push_str(&notes(f, limit));
    Generator {
        cpu_s: f.process_cpu.total_s(),
        user_s: f.process_cpu.user.as_secs_f64(),
        sys_s: f.process_cpu.sys.as_secs_f64(),
        worker_cpu_s: f.worker_cpu.total_s(),
        busy_ratio: busy,
        intended_rate: intended,
        achieved_rate: achieved,
        late_sends: t.late_sends,
        max_send_lag_ms: open.then(|| t.max_send_lag_us as f64 / 1000.0),
        timer: open.then_some(if t.coarse_timer {
            "runtime_ms"
        } else {
            "timerfd"
        }),
        send_ahead_ms: open.then_some(f.cfg.send_ahead.as_secs_f64() * 1e3),
        cpu_us_per_request: (t.requests > 0)
            .then(|| f.process_cpu.total_s() * 1e6 / t.requests as f64),
        connections_opened: t.peak_connections,
        fd_refused: t.fd_refused,
        fd_limit,
        send_stamps: lag::send_stamps(t, f.cfg),
        latency_from: f.cfg.latency_from.name(),
        limit,
        saturated: limit == Limit::Generator,
        verdict,
    }
}

/// kept_up is the verdict of a run the generator kept up with (`busy`: the workers' busy
/// ratio).
fn kept_up(f: &RunFacts<'_>, busy: f64) -> String {
    let lag = if f.cfg.model == Model::Open {
        format!(
            ", worst send lag {:.1} ms",
            f.totals.max_send_lag_us as f64 / 1000.0
        )
    } else {
        String::new()
    };
    let (opened, wanted) = (f.totals.peak_connections, wanted_connections(f));
    let what = match f.outages.len() {
        0 if f.cfg.model == Model::Closed && opened < wanted => format!(
            "the figures describe the server at the {opened} connections that opened, not \
             the {wanted} asked for (the rest never connected during the run)"
        ),
        0 => "the figures describe the server".to_string(),
        n => format!(
            "the figures describe the server, except that it stopped answering \
             ({n} outage{}): see outages",
            if n == 1 { "" } else { "s" }
        ),
    };
    format!(
        "generator kept up: workers {:.0}% busy{lag}; {what}",
        100.0 * busy
    )
}

/// saturated is the verdict of a run that saturated the generator: it fell `behind` the
/// schedule (`sent` says by how much) and/or its workers were `busy_hot`.
fn saturated(busy: f64, busy_hot: bool, behind: bool, sent: &str) -> String {
    let mut reasons = Vec::new();
    if behind {
        reasons.push(format!("{sent}: the generator fell behind"));
    }
    if busy_hot {
        reasons.push(format!(
            "worker threads were {:.0}% busy: the numbers may describe redline, not the server (add threads or move the generator)",
            100.0 * busy
        ));
    } else {
        reasons.push(format!(
            "its worker threads were only {:.0}% busy, so they were not run in time (is the machine busy with other work?)",
            100.0 * busy
        ));
    }
    format!("generator saturated: {}", reasons.join("; "))
}

/// pool_capacity is, for a pool-limited verdict, what the pool could carry at the service
/// time measured: `max_connections / mean service time`.
fn pool_capacity(f: &RunFacts<'_>) -> String {
    let mean_ms = f
        .totals
        .uncorrected
        .as_ref()
        .filter(|h| !h.is_empty())
        .map_or(0.0, |h| h.mean() / 1000.0);
    if mean_ms <= 0.0 {
        return String::new();
    }
    let carry = f64::from(f.cfg.max_connections) * 1000.0 / mean_ms;
    format!(
        ". At {mean_ms:.2} ms a response (mean service time), {} connections carry about {carry:.0} req/s: \
         raise max_connections, or lower the rate",
        f.cfg.max_connections
    )
}

/// notes are what the verdict adds whatever the limit: late sends, requests never sent or
/// never finished, clamped latencies, a coarse timer.
fn notes(f: &RunFacts<'_>, limit: Limit) -> String {
    let t = &f.totals;
    let mut out = String::new();
    let late_share = per_second(t.late_sends as f64, t.sends.max(1) as f64);
    if f.intended_hits.is_some() && late_share > 0.01 && limit == Limit::Server {
        out.push_str(&format!(
            "; {:.0}% of requests left late (worst {:.0} ms{}), {}",
            100.0 * late_share,
            t.max_send_lag_us as f64 / 1000.0,
            if t.late_at_cap > 0 {
                ", all connections busy"
            } else {
                ""
            },
            match f.cfg.latency_from {
                LatencyFrom::Sent => {
                    "any wait for a busy connection is in the latency, the generator's own lag is not (lag_ms)"
                }
                LatencyFrom::Intended => "timed from their intended start",
            }
        ));
    }
    out.push_str(&lag_note(f));
    if t.unsent > 0 {
        out.push_str(&format!(
            "; {} hits due before the end were never sent (in the latency figures at their age at the end, a lower bound)",
            t.unsent
        ));
    }
    if t.unfinished > 0 {
        out.push_str(&format!(
            "; {} requests were unfinished at the cut-off (in the latency figures at their age then: the tail is a lower bound)",
            t.unfinished
        ));
    }
    if t.clamped > 0 {
        out.push_str(&format!(
            "; {} latencies exceeded the histogram's {:.0} s range and count as {:.0} s",
            t.clamped,
            t.latency.high() as f64 / 1e6,
            t.latency.high() as f64 / 1e6
        ));
    }
    let ahead = f.cfg.send_ahead.as_secs_f64();
    if f.cfg.model == Model::Open && ahead > crate::config::DEFAULT_SEND_AHEAD_S {
        out.push_str(&format!(
            "; hits due within {} ms of one another went out together (send-ahead), so the server saw them in bursts",
            ahead * 1e3
        ));
    }
    if t.coarse_timer {
        out.push_str(
            "; no timerfd: sends were timed by the runtime's 1 ms timer, so up to ~1 ms of send lag counts against the server",
        );
    }
    out
}

#[cfg(test)]
#[path = "report_tests.rs"]
mod tests;
