//! One worker thread: a current-thread tokio runtime running its share of the lanes.
//!
//! A lane is a VU (closed model) or a pooled connection (open model). Every lane runs the same
//! loop: ask the [`Pacer`] what to do, wait if told to, run the plan's flow, record. Lanes of a
//! thread share only `Rc`/`Cell` state (hit counter, recorder): the runtime is single-threaded,
//! so the request path takes no lock and touches no atomic. The thread ships its metrics to the
//! coordinator over a channel once per interval and once at the end.

use std::cell::{Cell, RefCell};
use std::net::SocketAddr;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Notify;
use tokio::time::Sleep;

use crate::config::{Checked, Model};
use crate::conn::{Conn, Deadline};
use crate::metrics::{IntervalData, Recorder, Response, Totals};
use crate::metronome::Metronome;
use crate::pacer::{AnyPacer, ClosedPacer, OpenPacer, Pace, Pacer, Stride};
use crate::plan::{Plan, RequestStep, Step};
use crate::run::RunControl;
use crate::usage::CpuTimes;

/// LATE_SLACK is how late an open-model send may be before it counts as late: tokio's timer
/// has millisecond resolution, so up to ~1 ms of lag is the timer, not a missed slot.
pub const LATE_SLACK: Duration = Duration::from_millis(2);

/// STOP_POLL is how often a worker checks the shared stop flag (the bound on stop latency).
pub const STOP_POLL: Duration = Duration::from_millis(10);

/// Job is what the coordinator hands one worker thread.
#[derive(Debug, Clone)]
pub struct Job {
    /// index: this thread's number, 0-based.
    pub index: u32,
    /// cfg: the checked configuration.
    pub cfg: Arc<Checked>,
    /// addr: the resolved target address.
    pub addr: SocketAddr,
    /// start: the common start instant of all threads.
    pub start: Instant,
    /// control: the shared stop handle.
    pub control: Arc<RunControl>,
}

/// Msg is what a worker thread sends the coordinator.
#[derive(Debug)]
pub enum Msg {
    /// Interval: this thread's data for interval `index`, which ended at `t_end_s`.
    Interval {
        /// thread: sender index.
        thread: u32,
        /// index: interval number, 0-based.
        index: u64,
        /// t_end_s: end of the interval, seconds since start.
        t_end_s: f64,
        /// data: the measurements.
        data: IntervalData,
    },
    /// Done: the thread finished; it sent intervals up to `last_index`.
    Done {
        /// thread: sender index.
        thread: u32,
        /// last_index: the last interval it sent, if any.
        last_index: Option<u64>,
        /// totals: its post-warmup totals.
        totals: Box<Totals>,
        /// cpu: CPU time this thread used.
        cpu: CpuTimes,
        /// ended: when it stopped.
        ended: Instant,
        /// stopped: whether it stopped because of the RunControl.
        stopped: bool,
    },
    /// Failed: the thread could not start its runtime.
    Failed {
        /// thread: sender index.
        thread: u32,
        /// error: why.
        error: String,
    },
}

/// Shared is the per-thread state every lane of the thread sees.
struct Shared {
    job: Job,
    plan: Plan,
    pacer: AnyPacer,
    rec: RefCell<Recorder>,
    hits: Cell<u64>,
    lanes: Cell<u32>,
    max_lanes: u32,
    next_lane: Cell<u32>,
    idle: Cell<u32>,
    live: Cell<u32>,
    all_done: Notify,
    open: bool,
    /// metronome: precise send timing for the open model (None: closed model, or no timerfd).
    metronome: Option<Metronome>,
}

/// lane_share is how many of `total` lanes thread `index` of `threads` owns (lane i belongs
/// to thread i % threads).
pub fn lane_share(total: u32, threads: u32, index: u32) -> u32 {
    total / threads + u32::from(index < total % threads)
}

/// run_thread is a worker thread's body: build the runtime, run the lanes until the schedule
/// ends, the deadline passes or the run is stopped, and report to `tx`.
pub fn run_thread(job: Job, tx: Sender<Msg>) {
    let thread = job.index;
    let cpu0 = CpuTimes::thread();
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            let _ = tx.send(Msg::Failed {
                thread,
                error: format!("cannot start a runtime: {e}"),
            });
            return;
        }
    };
    // Enter the runtime so the open model's timerfd can register with its reactor.
    let guard = rt.enter();
    let shared = Rc::new(build_shared(job));
    drop(guard);
    let local = tokio::task::LocalSet::new();
    let (last_index, stopped) = local.block_on(&rt, drive(shared.clone(), tx.clone()));
    drop(local);
    let ended = Instant::now();
    let rec = shared.rec.borrow();
    let cpu = CpuTimes::thread().since(&cpu0);
    let _ = tx.send(Msg::Done {
        thread,
        last_index,
        totals: Box::new(rec.totals.clone()),
        cpu,
        ended,
        stopped,
    });
}

fn build_shared(job: Job) -> Shared {
    let cfg = job.cfg.clone();
    let plan = Plan::single_request(&cfg);
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
        }),
        Model::Open => AnyPacer::Open(OpenPacer {
            rate: cfg.profile.clone(),
            end,
            limit: cfg.requests,
            stride,
        }),
    };
    let max_lanes = match cfg.model {
        Model::Closed => lane_share(
            cfg.profile.peak().ceil().max(1.0) as u32,
            cfg.threads,
            job.index,
        ),
        Model::Open => lane_share(cfg.max_connections, cfg.threads, job.index).max(1),
    };
    let highest_us = u64::try_from(cfg.timeout.as_micros())
        .unwrap_or(u64::MAX)
        .saturating_add(1_000_000);
    let rec = Recorder::new(job.start + cfg.warmup, highest_us, plan.names.len(), open);
    Shared {
        job,
        plan,
        pacer,
        rec: RefCell::new(rec),
        hits: Cell::new(0),
        lanes: Cell::new(0),
        max_lanes,
        next_lane: Cell::new(0),
        idle: Cell::new(0),
        live: Cell::new(0),
        all_done: Notify::new(),
        open,
        metronome: if open { Metronome::new().ok() } else { None },
    }
}

/// initial_lanes is how many lanes a thread starts: all its VUs (closed), or a small pool
/// sized for ~1 ms service time at the peak rate (open), which grows when sends run late.
fn initial_lanes(s: &Shared) -> u32 {
    if !s.open {
        return s.max_lanes;
    }
    let cfg = &s.job.cfg;
    let share = cfg.profile.peak() / f64::from(cfg.threads);
    ((share / 1000.0).ceil() as u32).clamp(1, s.max_lanes)
}

async fn drive(shared: Rc<Shared>, tx: Sender<Msg>) -> (Option<u64>, bool) {
    for _ in 0..initial_lanes(&shared) {
        spawn_lane(&shared);
    }
    if shared.metronome.is_some() {
        let s = shared.clone();
        tokio::task::spawn_local(async move {
            if let Some(m) = &s.metronome {
                m.run().await;
            }
        });
    }
    let last = Rc::new(Cell::new(None));
    let reporter =
        tokio::task::spawn_local(report_intervals(shared.clone(), tx.clone(), last.clone()));
    let job = &shared.job;
    let deadline = job.cfg.duration.map(|d| job.start + d);
    let stopped = tokio::select! {
        _ = all_lanes_done(&shared) => false,
        _ = wait_stop(&job.control) => true,
        _ = sleep_until_opt(deadline) => false,
    };
    reporter.abort();
    // Flush the last, partial interval unless the reporter just sent a full one.
    let next = last.get().map_or(0, |i: u64| i + 1);
    let elapsed = job.start.elapsed();
    let boundary = job.cfg.interval.mul_f64(next as f64);
    if elapsed > boundary + Duration::from_millis(1) || last.get().is_none() {
        let data = shared.rec.borrow_mut().take_interval();
        let _ = tx.send(Msg::Interval {
            thread: job.index,
            index: next,
            t_end_s: elapsed.as_secs_f64(),
            data,
        });
        last.set(Some(next));
    }
    (last.get(), stopped)
}

async fn sleep_until_opt(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d.into()).await,
        None => std::future::pending().await,
    }
}

async fn wait_stop(control: &RunControl) {
    let mut tick = tokio::time::interval(STOP_POLL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        if control.is_stopped() {
            return;
        }
    }
}

async fn all_lanes_done(shared: &Shared) {
    while shared.live.get() > 0 {
        shared.all_done.notified().await;
    }
}

async fn report_intervals(shared: Rc<Shared>, tx: Sender<Msg>, last: Rc<Cell<Option<u64>>>) {
    let job = &shared.job;
    for index in 0u64.. {
        let end = job.start + job.cfg.interval.mul_f64((index + 1) as f64);
        tokio::time::sleep_until(end.into()).await;
        let data = shared.rec.borrow_mut().take_interval();
        let t_end_s = end.duration_since(job.start).as_secs_f64();
        if tx
            .send(Msg::Interval {
                thread: job.index,
                index,
                t_end_s,
                data,
            })
            .is_err()
        {
            return;
        }
        last.set(Some(index));
    }
}

fn spawn_lane(shared: &Rc<Shared>) {
    let local = shared.next_lane.get();
    shared.next_lane.set(local + 1);
    // Global lane number: lane i of every thread interleaves, so ramps spread evenly.
    let lane = local * shared.job.cfg.threads + shared.job.index;
    shared.lanes.set(shared.lanes.get() + 1);
    shared.live.set(shared.live.get() + 1);
    let s = shared.clone();
    tokio::task::spawn_local(async move {
        let mut lane_state = Lane::new(&s, lane);
        lane_state.run(&s).await;
        lane_state.shutdown(&s);
        s.lanes.set(s.lanes.get() - 1);
        s.live.set(s.live.get() - 1);
        if s.live.get() == 0 {
            s.all_done.notify_one();
        }
    });
}

/// Lane is one VU/connection's loop state: its connection, its reusable timers, and the
/// time its last request completed (reused as "now" to save a clock read).
struct Lane {
    lane: u32,
    conn: Conn,
    timeout: Deadline,
    pace: Pin<Box<Sleep>>,
    clock: Option<Instant>,
}

impl Lane {
    fn new(s: &Shared, lane: u32) -> Self {
        let far = tokio::time::Instant::now() + Duration::from_secs(86_400);
        Lane {
            lane,
            conn: Conn::new(s.job.addr),
            timeout: Deadline::new(),
            pace: Box::pin(tokio::time::sleep_until(far)),
            clock: None,
        }
    }

    async fn run(&mut self, s: &Rc<Shared>) {
        let start = s.job.start;
        loop {
            let now = self.clock.take().unwrap_or_else(Instant::now);
            let hit = s.hits.get();
            let intended = match s
                .pacer
                .pace(now.saturating_duration_since(start), hit, self.lane)
            {
                Pace::Stop => return,
                Pace::Idle(at) => {
                    self.close(s);
                    self.pace.as_mut().reset((start + at).into());
                    self.pace.as_mut().await;
                    continue;
                }
                Pace::Now => {
                    s.hits.set(hit + 1);
                    self.clock = Some(now);
                    now
                }
                Pace::Due(at) => {
                    s.hits.set(hit + 1);
                    let due = start + at;
                    if due > now + crate::metronome::EARLY {
                        s.idle.set(s.idle.get() + 1);
                        match &s.metronome {
                            Some(m) => m.wait_until(due).await,
                            None => {
                                self.pace.as_mut().reset(due.into());
                                self.pace.as_mut().await;
                            }
                        }
                        s.idle.set(s.idle.get() - 1);
                    } else {
                        self.clock = Some(now);
                    }
                    due
                }
            };
            self.iteration(s, hit, intended).await;
        }
    }

    /// iteration runs one flow for hit `hit`, intended to start at `intended`.
    async fn iteration(&mut self, s: &Rc<Shared>, hit: u64, intended: Instant) {
        let Some(flow) = s.plan.flow(hit) else { return };
        for step in &flow.steps {
            match step {
                Step::Request(r) => self.request(s, r, intended).await,
            }
        }
    }

    async fn request(&mut self, s: &Rc<Shared>, r: &RequestStep, intended: Instant) {
        let now = self.clock.take().unwrap_or_else(Instant::now);
        let lag = now.saturating_duration_since(intended);
        let late = s.open && lag > LATE_SLACK;
        if late && s.idle.get() == 0 && s.lanes.get() < s.max_lanes {
            // Every connection is busy and the schedule is slipping: grow the pool.
            spawn_lane(s);
        }
        s.rec
            .borrow_mut()
            .send(now, r.bytes.len() as u64, lag, late);
        self.timeout.set(now + s.job.cfg.timeout);
        let was_open = self.conn.is_open();
        let result = self
            .conn
            .exchange(&r.bytes, r.head, &mut self.timeout, now)
            .await;
        let done = Instant::now();
        self.clock = Some(done);
        let mut rec = s.rec.borrow_mut();
        match result {
            Ok(x) => {
                rec.connections(x.connects, was_open, self.conn.is_open());
                // Open model: from the intended send, so time spent waiting for a free
                // connection or a behind-schedule generator counts against the server, as
                // wrk2 does (coordinated omission). Closed model: from the actual write.
                let from = if s.open {
                    intended.min(x.sent_at)
                } else {
                    x.sent_at
                };
                let resp = Response {
                    stat: r.stat,
                    status: x.status,
                    latency: done.saturating_duration_since(from),
                    service: done.saturating_duration_since(x.sent_at),
                    bytes_in: x.bytes_in,
                };
                rec.response(done, &resp);
            }
            Err(f) => {
                rec.connections(f.connects, was_open, self.conn.is_open());
                rec.error(done, r.stat, f.class);
            }
        }
    }

    fn close(&mut self, s: &Shared) {
        if self.conn.close() {
            s.rec.borrow_mut().connections(0, true, false);
        }
    }

    fn shutdown(&mut self, s: &Shared) {
        self.close(s);
    }
}
