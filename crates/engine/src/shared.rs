//! A worker thread's state, shared by the lanes it runs ([`Shared`]): the plan, the pacer,
//! the recorder, the flights under way and the pool's counts, behind `Rc`/`Cell` (the
//! runtime is single-threaded: no lock, no atomic on the request path), and how a thread
//! closes its books at the end (`settle`).

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use crate::backoff::Backoff;
use crate::config::{Model, Protocol};
use crate::flight::{Flight, Flights};
use crate::hosts::Origins;
use crate::http2::Link;
use crate::job::{latency_ceiling, Job};
use crate::metrics::Recorder;
use crate::metronome::Metronome;
use crate::pacer::{AnyPacer, ClosedPacer, OpenPacer, Pace, Pacer, Stride};
use crate::plan::{Plan, Step};
use crate::stream::{Sink, StreamBooks, Watch};

/// MAX_UNSENT_RECORDS bounds the histogram records of the hits never sent at the end of a
/// run: past it they are recorded in batches, each at its latest due time (a lower bound).
const MAX_UNSENT_RECORDS: u64 = 100_000;

/// Shared is the per-thread state every lane of the thread sees.
pub(crate) struct Shared {
    /// job: what this thread runs.
    pub(crate) job: Job,
    /// plan: the flows, rendered once.
    pub(crate) plan: Plan,
    /// pacer: when the next hit goes out. A RefCell because a live run's new target is
    /// installed by `worker::follow`; never borrowed across an await.
    pub(crate) pacer: RefCell<AnyPacer>,
    /// rec: this thread's measurements.
    pub(crate) rec: RefCell<Recorder>,
    /// flights: what each lane has under way, for the end-of-run books ([`Shared::settle`]).
    pub(crate) flights: Flights,
    /// hits: hits claimed so far (the next unclaimed hit's number).
    pub(crate) hits: Cell<u64>,
    /// lanes: lanes still running their loop (each owns at most one connection).
    pub(crate) lanes: Cell<u32>,
    /// iterating: lanes in the middle of a scenario iteration (a run whose data ran out
    /// ends when none is; see `worker::data_used_up`).
    pub(crate) iterating: Cell<u32>,
    /// max_lanes: this thread's share of the VUs or of max_connections.
    pub(crate) max_lanes: u32,
    /// next_lane: local number of the next lane to spawn.
    pub(crate) next_lane: Cell<u32>,
    /// all_done: signalled when the last lane ends.
    pub(crate) all_done: Notify,
    /// retarget: signalled when a live run installs a new profile, so that a lane waiting
    /// for a hit it claimed under the old one re-reads that hit's due time (a rate raised
    /// after a trickle would otherwise find its lanes asleep until the trickle's times), and
    /// an idle lane looks at the new profile at once.
    pub(crate) retarget: Notify,
    /// open: open model (latency from the intended send).
    pub(crate) open: bool,
    /// metronome: precise send timing for the open model (None: closed model, or no timerfd).
    pub(crate) metronome: Option<Rc<Metronome>>,
    /// backoff: closed model: the thread's lanes back off a target that refuses connects.
    pub(crate) backoff: Backoff,
    /// links: HTTP/2: this thread's connections, one per group of `streams` lanes (lane
    /// `local` rides on link `local / streams`); empty for HTTP/1.1.
    pub(crate) links: RefCell<Vec<Rc<Link>>>,
    /// handover: the open model's matching of claimed hits to the connections they waited
    /// for ([`crate::handover`]).
    pub(crate) handover: RefCell<crate::handover::Handover>,
    /// stream: with `--stream`, this thread's figures of streamed answers, which its
    /// connections' watches fill (see [`crate::stream`]).
    pub(crate) stream: Option<Sink>,
    /// origins: the hosts this thread's lanes talk to (the run's, and those a scenario's
    /// absolute URLs reach), indexed like `rec.totals.per_host`.
    pub(crate) origins: RefCell<Origins>,
}

impl Shared {
    /// new prepares a thread's plan, pacer and recorder; call it inside the runtime (the
    /// open model's timerfd registers with its reactor).
    // long: one thread's whole state, each part built once, in order, then one struct literal.
    pub(crate) fn new(job: Job) -> Shared {
        let cfg = job.cfg.clone();
        let job_index = job.index;
        let plan = Plan::for_run(&cfg);
        let open = cfg.model == Model::Open;
        let stride = Stride {
            stride: u64::from(cfg.threads),
            offset: u64::from(job.index),
        };
        let end = cfg.duration.map(|d| d.as_secs_f64());
        let pacer = match cfg.model {
            Model::Closed => AnyPacer::Closed(ClosedPacer {
                vus: cfg.profile.clone(),
                end,
                limit: cfg.requests,
                stride,
                recheck: cfg.live.then_some(crate::control::RECHECK_S),
            }),
            Model::Open => AnyPacer::Open(OpenPacer {
                rate: cfg.profile.clone(),
                end,
                limit: cfg.requests,
                stride,
                recheck: cfg.live.then_some(crate::control::OPEN_RECHECK_S),
            }),
        };
        // Lanes come in groups of `streams` (one connection each), shared out by connection.
        let streams = cfg.streams;
        let max_lanes = match cfg.model {
            Model::Closed => lane_share(cfg.max_vus.div_ceil(streams), cfg.threads, job.index),
            Model::Open => lane_share(cfg.max_connections, cfg.threads, job.index).max(1),
        }
        .saturating_mul(streams);
        let highest_us = u64::try_from(latency_ceiling(&cfg).as_micros()).unwrap_or(u64::MAX);
        // TLS reads go through rustls, and HTTP/2 reads through h2: neither has a way to hand
        // back the kernel's stamps.
        let plain = cfg.tls.is_none() && cfg.protocol == Protocol::Http1;
        let metronome = if open {
            Metronome::install(plain, cfg.send_ahead).ok()
        } else {
            None
        };
        let mut rec = Recorder::new(
            job.start,
            job.start + cfg.warmup,
            highest_us,
            plan.names.len(),
            open,
        );
        rec.send_end = cfg.duration.map(|d| job.start + d);
        // The first interval ends one interval in (the reporter moves the boundary on).
        rec.bound_interval(job.start + cfg.interval);
        let origins = Origins::new(&cfg, job.addr);
        if plan.scenario.is_some() {
            rec.track_scenario(plan.names.len(), origins.name(0));
        }
        // Without the timerfd, sends wake on the runtime's millisecond timer: say so.
        rec.totals.coarse_timer = open && metronome.is_none();
        let streamed = cfg.stream || plan.scenario.as_ref().is_some_and(|s| s.streams());
        Shared {
            job,
            plan,
            pacer: RefCell::new(pacer),
            rec: RefCell::new(rec),
            flights: Flights::with_capacity(max_lanes.min(4096) as usize),
            hits: Cell::new(0),
            lanes: Cell::new(0),
            iterating: Cell::new(0),
            max_lanes,
            next_lane: Cell::new(0),
            all_done: Notify::new(),
            retarget: Notify::new(),
            open,
            metronome,
            backoff: Backoff::new(u64::from(job_index) ^ 0x5eed),
            links: RefCell::new(Vec::new()),
            handover: RefCell::new(crate::handover::Handover::default()),
            stream: streamed.then(|| Rc::new(RefCell::new(StreamBooks::new(highest_us)))),
            origins: RefCell::new(origins),
        }
    }
}

impl Shared {
    /// stream_answered books a measured response its connection watched (`--stream`): its
    /// first byte timed from `from`, where its latency starts.
    pub(crate) fn stream_answered(&self, w: &Watch, from: Instant, sent_at: Instant, end: Instant) {
        if let Some(sink) = &self.stream {
            sink.borrow_mut().answered(w, from, sent_at, end);
        }
    }

    /// totals is this thread's totals to ship: the recorder's, with the streamed answers'.
    pub(crate) fn totals(&self) -> crate::totals::Totals {
        let mut totals = self.rec.borrow().totals.clone();
        totals.stream = self.stream.as_ref().map(|s| s.borrow().run.clone());
        totals
    }

    /// stream_interval takes the streamed answers' figures (`--stream`) since it was last
    /// called, to ship with the recorder's interval; None without `--stream`.
    pub(crate) fn stream_interval(&self) -> Option<Box<crate::stream::StreamTotals>> {
        let sink = self.stream.as_ref()?;
        let taken = sink.borrow_mut().take_interval();
        Some(Box::new(taken))
    }

    /// retarget_or waits for `wait` or for a new target ([`Shared::retarget`]), whichever
    /// comes first, and says whether the target changed. It registers for the change before
    /// `wait` is first polled, so a change made in between is not missed.
    pub(crate) async fn retarget_or(&self, wait: impl std::future::Future<Output = ()>) -> bool {
        if !self.job.cfg.live {
            // Only a live run's target moves; the others spare the waiter list a hit.
            wait.await;
            return false;
        }
        let changed = self.retarget.notified();
        tokio::pin!(changed);
        changed.as_mut().enable();
        tokio::select! {
            () = wait => false,
            () = &mut changed => true,
        }
    }

    /// settle closes this thread's books at `cutoff`, when it stops running its lanes (the
    /// grace period is over, the run was stopped, or every lane finished): a request still
    /// out is `unfinished`, and an open-model hit due by then that never went out (claimed
    /// and waiting, or never claimed because every lane was busy or the send window closed
    /// first) is `unsent`. Each goes into the latency histogram at its age at `cutoff`, a
    /// lower bound of what it would have measured.
    pub(crate) fn settle(&self, cutoff: Instant) {
        let mut rec = self.rec.borrow_mut();
        for f in self.flights.take_all() {
            match f {
                Flight::Out(sent) => rec.unfinished(cutoff, &sent),
                Flight::Due(due) if due <= cutoff => rec.unsent(cutoff, due, 1, None),
                // Not due yet when the run was stopped: never part of the schedule.
                Flight::Due(_) => {}
            }
        }
        let start = self.job.start;
        let pacer = self.pacer.borrow();
        // Hits are claimed in order: the ones from `hits` up to what was due are unclaimed.
        let Some(due) = pacer.due_by(cutoff.saturating_duration_since(start)) else {
            return;
        };
        let first = self.hits.get();
        let batch = due
            .saturating_sub(first)
            .div_ceil(MAX_UNSENT_RECORDS)
            .max(1);
        let mut hit = first;
        while hit < due {
            let last = (hit + batch).min(due) - 1;
            if let Pace::Due(at) = pacer.pace(Duration::ZERO, last, 0) {
                // The per-name statistics of the flow's first step, the one never sent.
                let stat = self.plan.flow(last).and_then(|f| {
                    f.steps.first().map(|s| match s {
                        Step::Request(r) => r.stat,
                    })
                });
                rec.unsent(cutoff, start + at, last - hit + 1, stat);
            }
            hit = last + 1;
        }
    }
}

/// lane_share is how many of `total` lanes thread `index` of `threads` owns (lane i belongs
/// to thread i % threads).
pub fn lane_share(total: u32, threads: u32, index: u32) -> u32 {
    total / threads + u32::from(index < total % threads)
}
