//! One worker thread: a current-thread tokio runtime running its share of the lanes
//! (see [`crate::lane`]). The thread ships its metrics to the coordinator over a channel once
//! per interval and once at the end; that channel is the only place threads meet.

use std::cell::Cell;
use std::rc::Rc;
use std::sync::mpsc::Sender;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::control::{LoadControl, FOLLOW_TICK};
use crate::interval::IntervalData;
use crate::job::{grace, Job};
use crate::lane::{grow_pool, initial_lanes, spawn_lane};
use crate::metrics::Recorder;
use crate::shared::{lane_share, Shared};
use crate::totals::Totals;
use crate::usage::CpuTimes;

/// Msg is what a worker thread sends the coordinator.
#[derive(Debug)]
pub enum Msg {
    /// Interval: this thread's data for interval `index`, which ended at `t_end_s`.
    Interval {
        /// index: interval number, 0-based.
        index: u64,
        /// t_end_s: end of the interval, seconds since start.
        t_end_s: f64,
        /// data: the measurements (boxed: an interval is far larger than the other messages).
        data: Box<IntervalData>,
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

/// StartGate holds the worker threads until all of them have built their runtimes, then
/// gives them one common start instant.
#[derive(Debug, Default)]
pub struct StartGate {
    state: Mutex<(u32, Option<Instant>)>,
    cv: Condvar,
}

/// GATE_WAIT bounds how long the coordinator waits for workers to get ready.
pub const GATE_WAIT: Duration = Duration::from_secs(10);

impl StartGate {
    /// new makes a closed gate.
    pub fn new() -> Self {
        Self::default()
    }

    /// ready_and_wait announces a ready worker and blocks until the gate opens.
    pub fn ready_and_wait(&self) -> Instant {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        st.0 += 1;
        self.cv.notify_all();
        loop {
            if let Some(start) = st.1 {
                return start;
            }
            st = self.cv.wait(st).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// open waits (at most [`GATE_WAIT`]) for `workers` ready threads, then starts them all.
    pub fn open(&self, workers: u32) -> Instant {
        let give_up = Instant::now() + GATE_WAIT;
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        while st.0 < workers {
            let left = give_up.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            st = self
                .cv
                .wait_timeout(st, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        let start = Instant::now();
        st.1 = Some(start);
        self.cv.notify_all();
        start
    }
}

/// run_thread is a worker thread's body: build the runtime, run the lanes until the schedule
/// ends, the deadline passes or the run is stopped, and report to `tx`.
pub fn run_thread(mut job: Job, gate: Arc<StartGate>, tx: Sender<Msg>) {
    let thread = job.index;
    let cpu0 = CpuTimes::thread();
    let built = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .on_thread_park(crate::metronome::on_park)
        .build();
    // Naps must end on time: 1 ns of timer slack instead of the default 50 us.
    // SAFETY: plain prctl on the calling thread.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
    // Start the clock only once every thread is ready, so the first hits are not born late.
    job.start = gate.ready_and_wait();
    let rt = match built {
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
    let shared = Rc::new(Shared::new(job));
    drop(guard);
    let local = tokio::task::LocalSet::new();
    let (last_index, stopped) = local.block_on(&rt, drive(shared.clone(), tx.clone()));
    drop(local);
    crate::metronome::uninstall();
    let ended = Instant::now();
    let cpu = CpuTimes::thread().since(&cpu0);
    let _ = tx.send(Msg::Done {
        thread,
        last_index,
        totals: Box::new(shared.totals()),
        cpu,
        ended,
        stopped,
    });
}

async fn drive(shared: Rc<Shared>, tx: Sender<Msg>) -> (Option<u64>, bool) {
    for _ in 0..initial_lanes(&shared) {
        spawn_lane(&shared);
    }
    if shared.open {
        tokio::task::spawn_local(grow_pool(shared.clone()));
    }
    if shared.job.cfg.live {
        let load = shared.job.control.load().clone();
        tokio::task::spawn_local(follow(shared.clone(), load));
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
    // After the send window, requests in flight get a grace period to complete; the ones
    // still out after it are counted and timed at their age then (see `Shared::settle`).
    let deadline = job.cfg.duration.map(|d| job.start + d + grace(&job.cfg));
    // A live run's thread may have no lane yet (its share of the starting VUs is zero):
    // it ends with the send window, not when its lanes are gone.
    let live = job.cfg.live;
    let stopped = tokio::select! {
        _ = all_lanes_done(&shared), if !live => false,
        _ = lanes_done_after_end(&shared), if live => false,
        () = data_used_up(&shared) => false,
        () = job.control.stopped() => true,
        _ = sleep_until_opt(deadline) => false,
    };
    // No lane runs from here on: close the books on what is still under way.
    shared.settle(Instant::now());
    reporter.abort();
    // The last interval takes everything since the last one taken, boundary or not.
    shared.rec.borrow_mut().unbound();
    // Flush the last, partial interval unless the reporter just sent a full one and nothing
    // came in since.
    let elapsed = job.start.elapsed();
    // Pieces of a stream that came since (a response still under way) are something too.
    let streamed = (shared.stream.as_ref()).is_some_and(|s| s.borrow().interval.chunks > 0);
    let flushed = last_interval(
        &mut shared.rec.borrow_mut(),
        Instant::now(),
        elapsed,
        job.cfg.interval,
        (last.get(), streamed),
    );
    if let Some((index, mut data)) = flushed {
        data.stream = shared.stream_interval();
        data.watch.thread = job.index;
        let _ = tx.send(Msg::Interval {
            index,
            t_end_s: elapsed.as_secs_f64(),
            data: Box::new(data),
        });
        last.set(Some(index));
    }
    (last.get(), stopped)
}

/// last_interval takes a thread's last, partial interval when it ends `elapsed` into the run
/// (at `at`), having sent the intervals up to `last`: always if it sent none, else if the run
/// went on past the end of the last one sent (by more than a millisecond) or anything was
/// recorded since the reporter took it (`streamed`: a stream's pieces came since). That reporter takes a full interval at its boundary,
/// but an answer can land in the instant after, with the thread's end in the same
/// millisecond: left out, it would be in the report's totals and in no interval, so the time
/// series, the live view and the Prometheus counters, which add the intervals up, would fall
/// short of the report and of the server (a tally's count short by its last answers, with
/// nothing unfinished).
fn last_interval(
    rec: &mut Recorder,
    at: Instant,
    elapsed: Duration,
    interval: Duration,
    (last, streamed): (Option<u64>, bool),
) -> Option<(u64, IntervalData)> {
    let next = last.map_or(0, |i| i + 1);
    let boundary = interval.mul_f64(next as f64);
    let due = last.is_none()
        || elapsed > boundary + Duration::from_millis(1)
        || rec.interval.recorded()
        || streamed;
    due.then(|| (next, rec.take_interval(at)))
}

async fn sleep_until_opt(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d.into()).await,
        None => std::future::pending().await,
    }
}

/// DATA_POLL: how often a thread looks whether a data set that stops the run has run out.
const DATA_POLL: Duration = Duration::from_millis(10);

/// data_used_up resolves once a data set with `on_exhausted="stop"` has run out and no lane
/// of this thread is in the middle of an iteration: the lanes still waiting (for a ramp to
/// reach them, a paced start, an open-model hit) would find no row, so the thread ends
/// there, cleanly, rather than when the last of them wakes. Never for other runs.
async fn data_used_up(shared: &Shared) {
    let stops = shared.plan.scenario.as_ref().is_some_and(|s| {
        s.data
            .iter()
            .any(|d| d.on_exhausted == crate::scenario::data::OnExhausted::Stop)
    });
    if !stops {
        return std::future::pending().await;
    }
    let script = shared.plan.scenario.clone();
    loop {
        tokio::time::sleep(DATA_POLL).await;
        if script.as_ref().is_some_and(|s| s.data_stopped()) && shared.iterating.get() == 0 {
            return;
        }
    }
}

async fn all_lanes_done(shared: &Shared) {
    while shared.lanes.get() > 0 {
        shared.all_done.notified().await;
    }
}

async fn report_intervals(shared: Rc<Shared>, tx: Sender<Msg>, last: Rc<Cell<Option<u64>>>) {
    let job = &shared.job;
    for index in 0u64.. {
        let end = job.start + job.cfg.interval.mul_f64((index + 1) as f64);
        tokio::time::sleep_until(end.into()).await;
        // The interval holds what happened before its boundary, however late this wakes:
        // what came after is already booked in the next one (see `Recorder::boundary`).
        let mut data = {
            let mut rec = shared.rec.borrow_mut();
            let data = rec.take_interval(Instant::now());
            rec.bound_interval(end + job.cfg.interval);
            data
        };
        data.stream = shared.stream_interval();
        data.watch.thread = job.index;
        let t_end_s = end.duration_since(job.start).as_secs_f64();
        if tx
            .send(Msg::Interval {
                index,
                t_end_s,
                data: Box::new(data),
            })
            .is_err()
        {
            return;
        }
        last.set(Some(index));
    }
}

/// follow keeps one worker thread's pacer on the live profile: once per [`FOLLOW_TICK`] it
/// compares the version, and on a change installs the new profile and, in the closed model,
/// starts the lanes the new peak needs (up to the thread's share of `max_vus`). It runs until
/// the thread's lanes are dropped with the runtime.
async fn follow(s: Rc<Shared>, control: Arc<LoadControl>) {
    let mut seen = 0;
    let mut tick = tokio::time::interval(FOLLOW_TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        if control.version() == seen {
            continue;
        }
        let Some((version, profile)) = control.profile() else {
            continue;
        };
        let peak = profile.peak();
        // No borrow of the pacer lives across an await, so this cannot collide with a lane.
        let Ok(mut pacer) = s.pacer.try_borrow_mut() else {
            continue;
        };
        pacer.set_profile(profile);
        drop(pacer);
        seen = version;
        // Lanes waiting on the old profile look at the new one now: idle VUs (each then waits
        // for its own instant) and hits claimed under the old rate (their due time moved).
        s.retarget.notify_waiters();
        if !s.open {
            let cfg = &s.job.cfg;
            let total = (peak.ceil() as u32).min(cfg.max_vus);
            let want = lane_share(total, cfg.threads, s.job.index).min(s.max_lanes);
            while s.next_lane.get() < want {
                spawn_lane(&s);
            }
        }
    }
}

/// lanes_done_after_end resolves when a live run's thread is finished: its send window is
/// over and its lanes have ended (a thread with no lanes must not end early, since a rising
/// target may give it some).
async fn lanes_done_after_end(s: &Shared) {
    match s.job.cfg.duration {
        Some(d) => tokio::time::sleep_until((s.job.start + d).into()).await,
        None => std::future::pending().await,
    }
    while s.lanes.get() > 0 {
        s.all_done.notified().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Response;

    /// A status poll answered 0.4 ms after the reporter took the last full interval, with the
    /// thread ending in the same millisecond, goes out in a last, partial interval, tally and
    /// all: the intervals add up to the totals (before, it was in the totals only).
    #[test]
    fn the_last_interval_carries_an_answer_that_came_after_the_last_full_one() {
        let us = Duration::from_micros;
        let interval = Duration::from_millis(250);
        let t0 = Instant::now();
        // Each case: whether a poll is answered after the reporter took interval 0 (at its
        // boundary), when the thread ends, and the last interval it sends: index, answers.
        type Case = (&'static str, bool, Duration, Option<(u64, u64)>);
        let cases: [Case; 4] = [
            ("an answer after the take", true, us(250_400), Some((1, 1))),
            ("nothing since, at once", false, us(250_400), None),
            ("nothing since, later", false, us(252_000), Some((1, 0))),
            ("an answer, later", true, us(251_500), Some((1, 1))),
        ];
        for (label, answered, end, want) in cases {
            let mut rec = Recorder::new(t0, t0, 0, 1, false);
            rec.track_names(1);
            let sent = t0 + us(249_700);
            rec.send(sent, sent, 10, false, false);
            let full = rec.take_interval(t0 + interval);
            if answered {
                let at = t0 + end - us(100);
                rec.response(&Response {
                    intended: sent,
                    stat: 0,
                    status: 200,
                    latency: at - sent,
                    service: at - sent,
                    bytes_in: 100,
                    expected: false,
                    grpc: false,
                    at,
                    ended: at,
                });
                rec.tally(sent, 0, "SUCCEEDED");
            }
            let last = last_interval(&mut rec, t0 + end, end, interval, (Some(0), false));
            assert_eq!(
                last.as_ref().map(|(i, d)| (*i, d.requests)),
                want,
                "{label}"
            );
            let series = full.requests + last.as_ref().map_or(0, |(_, d)| d.requests);
            assert_eq!(series, rec.totals.requests, "{label}: intervals and totals");
            let tallied = |d: &IntervalData| d.names[0].tally.total();
            assert_eq!(
                tallied(&full) + last.as_ref().map_or(0, |(_, d)| tallied(d)),
                rec.totals.per_name[0].tally.total(),
                "{label}: the tally too"
            );
        }
        // A thread that sent no interval sends one, empty or not.
        let mut rec = Recorder::new(t0, t0, 0, 1, false);
        let first = last_interval(&mut rec, t0 + us(100), us(100), interval, (None, false));
        assert_eq!(first.map(|(i, d)| (i, d.requests)), Some((0, 0)));
    }
}
