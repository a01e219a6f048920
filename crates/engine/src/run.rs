//! Running a load test: [`run`] starts the worker threads, merges their per-interval metrics,
//! hands each merged snapshot to the caller, and builds the [`Report`] at the end.
//!
//! The coordinator is the only place where threads meet, and only once per interval: workers
//! send their interval data over a channel (the seam between measuring and showing), the
//! coordinator merges and calls `on_interval` on the caller's thread.

use std::collections::BTreeMap;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use crate::config::{Checked, Model, Protocol, RunConfig};
use crate::control::{LoadControl, RunControl};
use crate::error::EngineError;
use crate::interval::IntervalData;
use crate::job::{latency_ceiling, Job};
use crate::metrics::ConnectionGauge;
use crate::outage::{ThreadWatch, Tracker};
use crate::plan::Plan;
use crate::report::{build_report, Report, RunFacts};
use crate::snapshot::IntervalSnapshot;
use crate::target::Target;
use crate::tls::Alpn;
use crate::totals::Totals;
use crate::usage::CpuTimes;
use crate::worker::{run_thread, Msg, StartGate};

/// PREFLIGHT_TIMEOUT bounds the preflight connect.
pub const PREFLIGHT_TIMEOUT: Duration = Duration::from_secs(5);

/// run is a blocking load test: it spawns the worker threads, calls `on_interval` from the
/// calling thread once per interval with the merged snapshot, and returns the report when
/// the run ends (duration or count reached, or stopped through `control`).
pub fn run(
    config: RunConfig,
    control: Arc<RunControl>,
    on_interval: &mut dyn FnMut(&IntervalSnapshot),
) -> Result<Report, EngineError> {
    let mut cfg = config.check()?;
    let addr = resolve(&mut cfg)?;
    let cfg = Arc::new(cfg);
    let internal = Arc::new(control.linked());
    if cfg.live {
        control.load().begin(cfg.profile.clone());
    }
    let (tx, rx) = mpsc::channel();
    let cpu0 = CpuTimes::process();
    let gate = Arc::new(StartGate::new());
    let gauge = Arc::new(ConnectionGauge::default());
    let mut handles = Vec::new();
    for index in 0..cfg.threads {
        let job = Job {
            index,
            cfg: cfg.clone(),
            addr,
            start: Instant::now(),
            control: internal.clone(),
            gauge: gauge.clone(),
        };
        let tx = tx.clone();
        let g = gate.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("redline-w{index}"))
            .spawn(move || run_thread(job, g, tx));
        match spawned {
            Ok(h) => handles.push(h),
            Err(e) => {
                internal.stop();
                gate.open(0);
                return Err(EngineError::Io(format!(
                    "cannot start worker thread {index}: {e}"
                )));
            }
        }
    }
    drop(tx);
    if let Some(at) = cfg.start_at {
        wait_until(at, &control);
    }
    let start = gate.open(cfg.threads);
    control.load().started(start);
    let mut c = Coordinator::new(&cfg, start, control.load().clone(), gauge.clone());
    c.collect(&rx, &handles, &internal, on_interval)?;
    for h in handles {
        let _ = h.join();
    }
    let process_cpu = CpuTimes::process().since(&cpu0);
    Ok(c.finish(process_cpu, &gauge))
}

/// WATCH is how often the coordinator, between the workers' messages, looks for a worker
/// thread that died without a word (a stop reaches the workers by itself, see
/// [`RunControl::stopped`]).
const WATCH: Duration = Duration::from_millis(100);

/// START_POLL is how often a wait for the start instant looks at the stop flag.
const START_POLL: Duration = Duration::from_millis(20);

/// wait_until sleeps until the wall clock reads `at` (the shared start instant of several
/// injectors), or the run is stopped; the worker threads wait at the gate meanwhile, built.
/// The last slice is slept to the instant, so the start is as close to it as the sleep is.
fn wait_until(at: SystemTime, control: &RunControl) {
    while !control.is_stopped() {
        let Ok(left) = at.duration_since(SystemTime::now()) else {
            return;
        };
        if left.is_zero() {
            return;
        }
        std::thread::sleep(left.min(START_POLL));
    }
}

/// resolve looks the host up and, when asked, proves it reachable with one TCP connect (and
/// TLS handshake, whose ALPN settles the protocol when the run leaves it to the server).
fn resolve(cfg: &mut Checked) -> Result<SocketAddr, EngineError> {
    let t = &cfg.target;
    // Through a proxy, the proxy is what is resolved and connected to (it resolves the target).
    let (host, port, via) = match &cfg.proxy {
        Some(p) => (p.host.as_str(), p.port, "proxy "),
        None => (t.host.as_str(), t.port, ""),
    };
    let addrs: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .map_err(|e| EngineError::Unreachable(format!("cannot resolve {via}{host}: {e}")))?
        .collect();
    let first = *addrs
        .first()
        .ok_or_else(|| EngineError::Unreachable(format!("{via}{host} has no address")))?;
    let wait = cfg.timeout.min(PREFLIGHT_TIMEOUT);
    if !cfg.preflight {
        // No reachability check; but a plain-http server that is up and does not speak
        // HTTP/2 would fail every request as a protocol error, reconnecting as fast as it
        // can, which reads as an outage: asked once, it is one line instead.
        if cfg.protocol == Protocol::Http2 && cfg.tls.is_none() {
            if let Ok(stream) = TcpStream::connect_timeout(&first, wait) {
                crate::h2c::speaks_h2c(stream, wait).map_err(|why| no_h2c(t, &why))?;
            }
        }
        return Ok(first);
    }
    let mut last = None;
    for a in &addrs {
        match TcpStream::connect_timeout(a, wait) {
            Ok(mut stream) => {
                if let Some(proxy) = &cfg.proxy {
                    proxy.preflight(&mut stream, wait, t)?;
                }
                if let Some(tls) = &cfg.tls {
                    let offer = match (cfg.negotiate, cfg.protocol) {
                        (true, _) => Alpn::Either,
                        (false, Protocol::Http2) => Alpn::H2,
                        (false, Protocol::Http1) => Alpn::Http1,
                    };
                    let h2 = tls.preflight(stream, wait, offer).map_err(|why| {
                        EngineError::Unreachable(format!(
                            "TLS handshake with {}:{} failed: {why}{}",
                            t.host,
                            t.port,
                            crate::tls::hint(&why)
                        ))
                    })?;
                    if offer == Alpn::H2 && !h2 {
                        return Err(EngineError::Unreachable(format!(
                            "{}:{} does not speak HTTP/2 (its TLS handshake chose no h2 by ALPN)",
                            t.host, t.port
                        )));
                    }
                    if cfg.negotiate && h2 {
                        cfg.protocol = Protocol::Http2;
                    }
                    if cfg.negotiate && !h2 && cfg.streams > 1 {
                        return Err(EngineError::config(format!(
                            "streams > 1 needs HTTP/2, and {}:{} chose HTTP/1.1 by ALPN",
                            t.host, t.port
                        )));
                    }
                } else if cfg.protocol == Protocol::Http2 {
                    crate::h2c::speaks_h2c(stream, wait).map_err(|why| no_h2c(t, &why))?;
                }
                return Ok(*a);
            }
            Err(e) => last = Some(e),
        }
    }
    let why = last.map_or_else(|| "no address".to_string(), |e| e.to_string());
    Err(EngineError::Unreachable(format!(
        "cannot connect to {via}{host}:{port}: {why}"
    )))
}

/// no_h2c is the error of a plain-http target that does not speak HTTP/2 (h2c), `why` being
/// what it did with the preface.
fn no_h2c(t: &Target, why: &str) -> EngineError {
    EngineError::Unreachable(format!(
        "{}:{} does not speak HTTP/2 without TLS (h2c): {why}; leave out --http2 to speak \
         HTTP/1.1 (or use https://, where a server offers HTTP/2 by ALPN)",
        t.host, t.port
    ))
}

/// Pending is an interval being merged: how many threads reported it, and their sum.
struct Pending {
    got: u32,
    t_end_s: f64,
    data: IntervalData,
    /// watches: each thread's outage evidence (kept apart: see [`crate::outage`]).
    watches: Vec<ThreadWatch>,
}

/// Coordinator merges worker messages into snapshots and totals.
struct Coordinator<'a> {
    cfg: &'a Checked,
    names: Vec<String>,
    start: Instant,
    pending: BTreeMap<u64, Pending>,
    /// Per thread: None while running, Some(last interval index) once done.
    done: Vec<Option<Option<u64>>>,
    totals: Option<Totals>,
    worker_cpu: CpuTimes,
    ended: Instant,
    interrupted: bool,
    timeseries: Vec<IntervalSnapshot>,
    /// load: the live profile, for the intended rate of a live open-model run.
    load: Arc<LoadControl>,
    /// outages: spans when the target answered nothing.
    outages: Tracker,
    /// gauge: the connections open across threads, and the connects the fd limit refused.
    gauge: Arc<ConnectionGauge>,
}

impl<'a> Coordinator<'a> {
    fn new(
        cfg: &'a Checked,
        start: Instant,
        load: Arc<LoadControl>,
        gauge: Arc<ConnectionGauge>,
    ) -> Self {
        Coordinator {
            cfg,
            names: Plan::for_run(cfg).names,
            start,
            pending: BTreeMap::new(),
            done: vec![None; cfg.threads as usize],
            totals: None,
            worker_cpu: CpuTimes::default(),
            ended: start,
            interrupted: false,
            timeseries: Vec::new(),
            load,
            outages: Tracker::default(),
            gauge,
        }
    }

    fn collect(
        &mut self,
        rx: &Receiver<Msg>,
        handles: &[JoinHandle<()>],
        internal: &RunControl,
        on_interval: &mut dyn FnMut(&IntervalSnapshot),
    ) -> Result<(), EngineError> {
        // The caller's stop needs no relaying: `internal` is linked to its handle.
        while self.done.iter().any(Option::is_none) {
            match rx.recv_timeout(WATCH) {
                Ok(msg) => self.handle(msg, internal)?,
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            self.emit_ready(on_interval);
            for (i, h) in handles.iter().enumerate() {
                if h.is_finished() && self.done[i].is_none() {
                    // Drain what it sent before deciding it died.
                    while let Ok(msg) = rx.try_recv() {
                        self.handle(msg, internal)?;
                    }
                    if self.done[i].is_none() {
                        internal.stop();
                        return Err(EngineError::Internal(format!("worker thread {i} died")));
                    }
                }
            }
        }
        self.emit_ready(on_interval);
        let rest: Vec<u64> = self.pending.keys().copied().collect();
        for k in rest {
            self.emit(k, on_interval);
        }
        Ok(())
    }

    fn handle(&mut self, msg: Msg, internal: &RunControl) -> Result<(), EngineError> {
        match msg {
            Msg::Interval {
                index,
                t_end_s,
                data,
            } => match self.pending.get_mut(&index) {
                Some(p) => {
                    p.got += 1;
                    p.t_end_s = p.t_end_s.max(t_end_s);
                    p.data.merge(&data);
                    p.watches.push(data.watch);
                }
                None => {
                    let watches = vec![data.watch];
                    self.pending.insert(
                        index,
                        Pending {
                            got: 1,
                            t_end_s,
                            data: *data,
                            watches,
                        },
                    );
                }
            },
            Msg::Done {
                thread,
                last_index,
                totals,
                cpu,
                ended,
                stopped,
            } => {
                self.done[thread as usize] = Some(last_index);
                match self.totals.as_mut() {
                    Some(t) => t.merge(&totals),
                    None => self.totals = Some(*totals),
                }
                self.worker_cpu = self.worker_cpu.add(&cpu);
                self.ended = self.ended.max(ended);
                self.interrupted |= stopped;
            }
            Msg::Failed { thread, error } => {
                internal.stop();
                return Err(EngineError::Io(format!("worker thread {thread}: {error}")));
            }
        }
        Ok(())
    }

    /// expected is how many threads will report interval `k`: the running ones, and the
    /// finished ones that got that far.
    fn expected(&self, k: u64) -> u32 {
        let reports = |d: &&Option<Option<u64>>| match d {
            None => true,
            Some(last) => last.is_some_and(|l| l >= k),
        };
        self.done.iter().filter(reports).count() as u32
    }

    fn emit_ready(&mut self, on_interval: &mut dyn FnMut(&IntervalSnapshot)) {
        while let Some((&k, p)) = self.pending.first_key_value() {
            if p.got < self.expected(k) {
                break;
            }
            self.emit(k, on_interval);
        }
    }

    fn emit(&mut self, k: u64, on_interval: &mut dyn FnMut(&IntervalSnapshot)) {
        let Some(p) = self.pending.remove(&k) else {
            return;
        };
        let step = self.cfg.interval.as_secs_f64();
        let t0 = step * k as f64;
        let t1 = p.t_end_s.max(t0);
        let warmup = t0 < self.cfg.warmup.as_secs_f64();
        let intended = self.intended_hits(t0, t1).map(|h| h / (t1 - t0).max(1e-9));
        let mut snap = IntervalSnapshot::from_data(&p.data, t0, t1, warmup, intended)
            .with_scenario(&p.data, &self.names);
        // The gauge counts a connection from its connect; a thread counts it only once an
        // exchange on it ends, so thousands of connections waiting on a slow server read as 0.
        snap.active_connections = self.gauge.open();
        snap.fd_refused = self.gauge.fd_refused();
        snap.down = self.outages.interval(&p.watches);
        snap.down_since_s = self.outages.down_since();
        on_interval(&snap);
        self.timeseries.push(snap);
    }

    /// intended_hits is, in the open model, how many hits the schedule wanted in [t0, t1].
    fn intended_hits(&self, t0: f64, t1: f64) -> Option<f64> {
        if self.cfg.model != Model::Open {
            return None;
        }
        let end = self.cfg.duration.map_or(f64::INFINITY, |d| d.as_secs_f64());
        let limit = self.cfg.requests.map_or(f64::INFINITY, |n| n as f64);
        // A live run's schedule is the profile as the caller changed it.
        let live = self.cfg.live.then(|| self.load.profile()).flatten();
        let profile = live.as_ref().map_or(&self.cfg.profile, |(_, p)| p);
        let c = |t: f64| profile.cumulative(t.min(end)).min(limit);
        Some((c(t1) - c(t0)).max(0.0))
    }

    /// finish builds the report; `gauge` holds the most connections open at once over all
    /// threads (the sum of per-thread peaks overstates it) and the connects the open-file
    /// limit refused.
    fn finish(self, process_cpu: CpuTimes, gauge: &ConnectionGauge) -> Report {
        let wall_s = self.ended.duration_since(self.start).as_secs_f64();
        let warm = self.cfg.warmup.as_secs_f64();
        // Rates are over the send window: the grace period for the last responses (timed
        // runs) adds responses, not time in which requests could have been sent.
        let send_end = self
            .cfg
            .duration
            .map_or(wall_s, |d| d.as_secs_f64().min(wall_s));
        let measured_s = (send_end - warm).max(0.0);
        let intended_hits = self.intended_hits(warm, send_end);
        let highest = u64::try_from(latency_ceiling(self.cfg).as_micros()).unwrap_or(u64::MAX);
        let open = self.cfg.model == Model::Open;
        let mut totals = self
            .totals
            .unwrap_or_else(|| Totals::new(highest, self.names.len(), open));
        totals.peak_connections = gauge.peak();
        totals.fd_refused = gauge.fd_refused();
        // A scenario's iterations under way at the end send their remaining requests: those
        // are counted, so the rates cover the time they went out in too (dividing them by
        // the window alone overstated every rate). An open URL run's late hits were due in
        // the window: its rates stay over the window.
        let after_end_s = if self.cfg.scenario.is_some() && totals.after_end > 0 {
            (totals.after_end_us as f64 / 1e6).min((wall_s - send_end).max(0.0))
        } else {
            0.0
        };
        build_report(RunFacts {
            cfg: self.cfg,
            names: &self.names,
            totals,
            process_cpu,
            worker_cpu: self.worker_cpu,
            wall_s,
            measured_s,
            after_end_s,
            intended_hits,
            interrupted: self.interrupted,
            timeseries: self.timeseries,
            outages: self.outages.finish(),
        })
    }
}
