//! Lanes: the one paced loop every VU (closed model) or pooled connection (open model) runs.
//!
//! Each lane asks the [`Pacer`] what to do, waits if told to, runs the plan's flow and
//! records. Lanes of a thread share only `Rc`/`Cell` state ([`crate::shared::Shared`]: hit
//! counter, pool size, recorder): the runtime is single-threaded, so the request path takes
//! no lock and touches no atomic.

use std::pin::Pin;
use std::rc::Rc;
use std::time::{Duration, Instant};

use tokio::time::Sleep;

use crate::backoff::Turn;
use crate::config::Protocol;
use crate::conn::{Conn, Deadline, Exchange, Failure, Stamps};
use crate::failure::ErrorClass;
use crate::flight::{Flight, Sent};
use crate::http2::{Link, Stream};
use crate::job::LATE_SLACK;
use crate::metrics::Response;
use crate::pacer::{Pace, Pacer};
use crate::parts::Parts;
use crate::plan::{RequestStep, Step};
use crate::scenario::executor::{rests, Reply, Vu};
use crate::scenario::rng::Rng;
use crate::shared::{lane_share, Shared};
use crate::wire::{Outgoing, What, Wire};

#[path = "lane_io.rs"]
mod scenario_io;
use scenario_io::LaneIo;
#[path = "lane_socket.rs"]
mod socket_io;

/// initial_lanes is how many lanes a thread starts: all its VUs (closed), or a small pool
/// sized for ~1 ms service time plus the send-ahead window at the peak rate (open), which
/// grows when sends run late.
pub(crate) fn initial_lanes(s: &Shared) -> u32 {
    let cfg = &s.job.cfg;
    if !s.open {
        // The starting VUs; a live run starts more as its target rises (up to max_lanes).
        let vus = cfg.profile.peak().ceil().max(1.0) as u32;
        let groups = lane_share(vus.div_ceil(cfg.streams), cfg.threads, s.job.index);
        return groups.saturating_mul(cfg.streams).min(s.max_lanes);
    }
    // A lane a hit due within the send-ahead window of a batch, besides the ones at work.
    let share = cfg.profile.peak() / f64::from(cfg.threads);
    let span = 0.001 + cfg.send_ahead.as_secs_f64();
    ((share * span).ceil() as u32).clamp(1, s.max_lanes)
}

/// grow_pool adds connections when hits fall due with no lane free to claim them (all are
/// busy with requests or waiting on earlier hits), up to the thread's share of
/// `max_connections`. It watches the clock rather than waiting for a lane to finish, so a
/// stalled server grows the pool instead of silently delaying the schedule. A hit must stay
/// unclaimed for [`LATE_SLACK`] *while this thread runs* before a lane is added for it: after
/// the thread itself was descheduled, the existing lanes get that long to catch up first.
pub(crate) async fn grow_pool(s: Rc<Shared>) {
    if !s.open {
        return;
    }
    let start = s.job.start;
    loop {
        if s.plan.scenario.as_ref().is_some_and(|sc| sc.data_stopped()) {
            return; // The data ran out: no lane starts again.
        }
        let pace = s.pacer.borrow().pace(start.elapsed(), s.hits.get(), 0);
        let at = match pace {
            Pace::Due(at) => start + at,
            Pace::Idle(at) => {
                // A live run's trickle or pause: nothing falls due before the end at this
                // rate; look again when the rate changes (or at the recheck).
                s.retarget_or(tokio::time::sleep_until((start + at).into()))
                    .await;
                continue;
            }
            _ => return,
        };
        let check = at.max(Instant::now()) + LATE_SLACK;
        tokio::time::sleep_until(check.into()).await;
        let now = Instant::now();
        if now > check + LATE_SLACK {
            continue; // We were not running: give the lanes their slack first.
        }
        let due_by = s
            .pacer
            .borrow()
            .due_by(now.saturating_duration_since(start + LATE_SLACK));
        let Some(overdue) = due_by else { return };
        let missing = overdue.saturating_sub(s.hits.get());
        let room = u64::from(s.max_lanes.saturating_sub(s.lanes.get()));
        for _ in 0..missing.min(room) {
            spawn_lane(&s);
        }
        if missing > room {
            // Pool full: the hits wait for a lane (the verdict names the cap as the limit);
            // look again a little later.
            s.rec.borrow_mut().totals.cap_reached = true;
            tokio::time::sleep(LATE_SLACK).await;
        } else if missing > 0 {
            // Let the new lanes claim the overdue hits before counting again.
            tokio::task::yield_now().await;
        }
    }
}

/// spawn_lane starts one more lane on this thread.
pub(crate) fn spawn_lane(shared: &Rc<Shared>) {
    let local = shared.next_lane.get();
    shared.next_lane.set(local + 1);
    // Global lane number: lane i of every thread interleaves, so ramps spread evenly; with
    // HTTP/2 whole groups interleave (a group's streams are numbered together), so that the
    // lanes of every thread together number 0..VUs whatever the split.
    let cfg = &shared.job.cfg;
    let (group, stream) = (local / cfg.streams, local % cfg.streams);
    let lane = (group * cfg.threads + shared.job.index) * cfg.streams + stream;
    shared.lanes.set(shared.lanes.get() + 1);
    shared.flights.add_lane(local as usize);
    let s = shared.clone();
    tokio::task::spawn_local(async move {
        let _count = LaneCount(s.clone());
        let mut lane_state = Lane::new(&s, lane, local as usize);
        lane_state.run(&s).await;
        lane_state.shutdown(&s);
    });
}

/// LaneCount takes a lane off the count when its task ends, however it ends (a panic in a
/// lane must not leave a count-bound run waiting forever).
struct LaneCount(Rc<Shared>);

impl Drop for LaneCount {
    fn drop(&mut self) {
        let s = &self.0;
        s.lanes.set(s.lanes.get().saturating_sub(1));
        if s.lanes.get() == 0 {
            s.all_done.notify_one();
        }
    }
}

/// Lane is one VU/connection's loop state: its connection, its reusable timers, and the
/// time its last request completed (reused as "now" to save a clock read).
struct Lane {
    lane: u32,
    /// slot: this lane's local number, its slot in [`Shared::flights`].
    slot: usize,
    /// conn: the lane's connection to the run's host, behind the protocol seam.
    conn: Wire,
    /// others: a scenario's connections to other origins (HTTP/1.1, kept alive), by their
    /// index in [`Shared::origins`], opened as the flow first reaches each.
    others: Vec<(usize, Wire)>,
    /// host: the origin of the lane's last request (where a failed check is booked).
    host: usize,
    timeout: Deadline,
    pace: Pin<Box<Sleep>>,
    clock: Option<Instant>,
    /// vu: the scenario state of this lane's VU (None on the single-request path).
    vu: Option<Box<Vu>>,
    /// probe: this lane holds its thread's connect probe (see [`crate::backoff`]).
    probe: bool,
    /// joining: the lane was idle and may be joining a ramp (its first iteration is jittered).
    joining: bool,
    /// jitter: this lane's random numbers for that jitter.
    jitter: Rng,
    /// free_at: when this lane's connection last came free (its last response ended); a hit
    /// due before then waited for it, which is the server's doing, not the generator's.
    free_at: Option<Instant>,
}

impl Lane {
    fn new(s: &Shared, lane: u32, slot: usize) -> Self {
        let far = tokio::time::Instant::now() + Duration::from_secs(86_400);
        Lane {
            lane,
            slot,
            conn: wire(s, slot),
            others: Vec::new(),
            host: 0,
            timeout: Deadline::new(),
            pace: Box::pin(tokio::time::sleep_until(far)),
            clock: None,
            vu: s
                .plan
                .scenario
                .as_ref()
                .map(|script| Box::new(Vu::new(script, u64::from(lane)))),
            probe: false,
            joining: false,
            jitter: Rng::new(u64::from(lane) ^ 0x7a11),
            free_at: None,
        }
    }

    /// run is the lane's loop: wait out the target's backoff, ask the pacer, wait for the
    /// hit's time, run it; until the pacer says stop.
    // long: one state machine on the hot path, read top to bottom: most arms `continue` or
    // `return` the loop, so helpers would hand back a control enum to match again, and each
    // async helper would nest its future in the lane's (and add an await per request).
    async fn run(&mut self, s: &Rc<Shared>) {
        let start = s.job.start;
        loop {
            if !s.open && !self.conn.is_open() && s.backoff.failing() {
                // The target refuses connects: wait for this lane's turn (crate::backoff).
                self.clock = None;
                match s.backoff.turn(&mut self.pace).await {
                    Turn::Go => {}
                    Turn::Probe => self.probe = true,
                    Turn::Wait => {
                        let at = start.elapsed();
                        if s.pacer.borrow().pace(at, s.hits.get(), self.lane) == Pace::Stop {
                            return;
                        }
                        continue;
                    }
                }
            }
            let now = self.clock.take().unwrap_or_else(Instant::now);
            let hit = s.hits.get();
            let pace = s
                .pacer
                .borrow()
                .pace(now.saturating_duration_since(start), hit, self.lane);
            if self.probe && matches!(pace, Pace::Stop | Pace::Idle(_)) {
                self.probe = false;
                s.backoff.release();
            }
            let intended = match pace {
                Pace::Stop => return,
                Pace::Idle(at) => {
                    self.close(s);
                    self.rest();
                    self.pace.as_mut().reset((start + at).into());
                    s.retarget_or(self.pace.as_mut()).await;
                    self.joining = true;
                    continue;
                }
                Pace::Now if self.joining => {
                    // A VU joining on a ramp: its first iteration starts at a random point
                    // of its slot on the ramp (the time between two VUs joining), so the
                    // VUs of a ramp arrive spread, not on a lattice shared by the threads.
                    self.joining = false;
                    let t = now.saturating_duration_since(start);
                    let gap = s.pacer.borrow().join_gap(t);
                    if !gap.is_zero() {
                        let wait = gap.mul_f64(self.jitter.unit());
                        self.pace.as_mut().reset((now + wait).into());
                        self.pace.as_mut().await;
                        self.clock = None;
                        continue;
                    }
                    s.hits.set(hit + 1);
                    self.clock = Some(now);
                    now
                }
                Pace::Now => {
                    s.hits.set(hit + 1);
                    self.clock = Some(now);
                    now
                }
                Pace::Due(at) => {
                    s.hits.set(hit + 1);
                    let due = start + at;
                    s.handover.borrow_mut().claim(
                        crate::metronome::wake(),
                        self.slot,
                        due,
                        self.free_at.unwrap_or(now),
                    );
                    if let Some(m) = s.metronome.as_ref().filter(|m| m.naps()) {
                        // The nap's hint, for when every lane is busy: the next hit's time.
                        let elapsed = now.saturating_duration_since(start);
                        let next = s.pacer.borrow().pace(elapsed, hit + 1, self.lane);
                        if let Pace::Due(next) = next {
                            m.expect(start + next);
                        }
                    }
                    if due > now + s.job.cfg.send_ahead {
                        if self.vu.is_some() && rests(due.saturating_duration_since(now)) {
                            self.rest();
                        }
                        // Claimed but not sent: if the run ends meanwhile, it is unsent.
                        s.flights.depart(self.slot, Flight::Due(due));
                        self.timeout.set(now + s.job.cfg.timeout);
                        if self.conn.open(&mut self.timeout).await {
                            s.rec.borrow_mut().connections(1, false, true);
                        }
                        self.wait_due(s, hit, due).await
                    } else {
                        self.clock = Some(now);
                        due
                    }
                }
            };
            if let Some(script) = s.plan.scenario.clone() {
                if !self.scenario_iteration(s, &script, intended).await {
                    return;
                }
                continue;
            }
            self.iteration(s, hit, intended).await;
            s.flights.land(self.slot);
        }
    }

    /// wait_due sleeps until claimed hit `hit` falls due and returns its due instant. A live
    /// run's new profile moves the hit's due time: the lane wakes on [`Shared::retarget`],
    /// asks the pacer again for the same hit and waits for the new time (earlier or later).
    async fn wait_due(&mut self, s: &Rc<Shared>, hit: u64, mut due: Instant) -> Instant {
        let start = s.job.start;
        loop {
            let moved = match &s.metronome {
                Some(m) => s.retarget_or(m.wait_until(due)).await,
                None => {
                    self.pace.as_mut().reset(due.into());
                    s.retarget_or(self.pace.as_mut()).await
                }
            };
            if !moved {
                return due;
            }
            let now = Instant::now();
            let pace = s
                .pacer
                .borrow()
                .pace(now.saturating_duration_since(start), hit, self.lane);
            let Pace::Due(at) = pace else {
                return due;
            };
            due = start + at;
            s.flights.depart(self.slot, Flight::Due(due));
            if due <= now + s.job.cfg.send_ahead {
                return due;
            }
        }
    }

    /// scenario_iteration runs one scenario iteration; false when this VU has run its
    /// share of iterations or its data set has run out (its lane ends). With pacing, the
    /// next iteration of this VU starts no earlier than `pacing` after this one was meant to.
    async fn scenario_iteration(
        &mut self,
        s: &Rc<Shared>,
        script: &crate::scenario::Script,
        intended: Instant,
    ) -> bool {
        let Some(mut vu) = self.vu.take() else {
            return false;
        };
        s.iterating.set(s.iterating.get() + 1);
        vu.iterate(script, &mut LaneIo { lane: self, s }, intended)
            .await;
        s.iterating.set(s.iterating.get() - 1);
        s.flights.land(self.slot);
        let more = !vu.done(script);
        self.vu = Some(vu);
        if let Some(p) = script.pacing {
            let next = intended + p;
            let now = Instant::now();
            if next > now {
                if rests(next - now) {
                    self.rest();
                }
                self.pace.as_mut().reset(next.into());
                self.pace.as_mut().await;
            }
            self.clock = None;
        }
        more
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
        let out = Outgoing {
            what: What::Prepared(&r.request),
            head: r.head,
            idempotent: r.idempotent,
            stream: s.job.cfg.stream,
            grpc: s.job.cfg.grpc,
        };
        self.send(s, out, r.stat, 0, s.job.cfg.timeout, &[], intended)
            .await;
    }

    /// send sends one request (`out`, under name `stat`) to origin `host` (0: the run's,
    /// on [`Lane::conn`]; another: on its connection in [`Lane::others`]) meant to start at
    /// `intended`, failing as a timeout after `timeout`; reads its response and records the
    /// outcome; a 4xx/5xx listed in `expected` (a scenario's `status=404`) is not an error.
    #[allow(clippy::too_many_arguments)]
    async fn send(
        &mut self,
        s: &Rc<Shared>,
        out: Outgoing<'_>,
        stat: usize,
        host: usize,
        timeout: Duration,
        expected: &[u16],
        intended: Instant,
    ) -> Reply {
        let now = self.clock.take().unwrap_or_else(Instant::now);
        let late = s.open && now.saturating_duration_since(intended) > LATE_SLACK;
        let at_cap = s.lanes.get() >= s.max_lanes;
        let size = on(&mut self.conn, &mut self.others, host).size_at_send(out.what);
        s.rec.borrow_mut().send(now, intended, size, late, at_cap);
        // Open model: from the intended send, so time spent waiting for a free connection or
        // a behind-schedule generator counts against the server, as wrk2 does (coordinated
        // omission); a hit sent a little early (see config::DEFAULT_SEND_AHEAD_S) counts from
        // its send.
        // Closed model: from the actual write.
        let from = if s.open { intended.min(now) } else { now };
        let sent = Sent {
            intended,
            from,
            sent_at: now,
            stat,
        };
        s.flights.depart(self.slot, Flight::Out(sent));
        self.timeout.set(now + timeout);
        let conn = on(&mut self.conn, &mut self.others, host);
        if s.stream.is_some() {
            conn.watch_next(out.stream && s.rec.borrow().measured(intended), now);
        }
        let was_open = conn.is_open();
        let result = conn.exchange(out, &mut self.timeout, now).await;
        let is_open = conn.is_open();
        s.rec.borrow_mut().wrote(intended, conn.wrote());
        s.flights.land(self.slot);
        let judge = (expected, out.grpc);
        self.record(s, result, &sent, (was_open, is_open), host, judge)
    }

    /// record books the outcome of request `sent` to origin `host` (`result`; `open`: whether
    /// its connection was open before and after it; its status judged by the statuses the
    /// flow `expected` and whether it is a `grpc` call's) with the thread's recorder, and
    /// with the target's backoff when it went to the run's host (0). It is the tail of
    /// [`Lane::send`], on the hot path: inlined, it allocates nothing and does not await.
    #[inline]
    fn record(
        &mut self,
        s: &Shared,
        result: Result<Exchange, Failure>,
        sent: &Sent,
        (was_open, is_open): (bool, bool),
        host: usize,
        (expected, grpc): (&[u16], bool),
    ) -> Reply {
        let (primary, Sent { intended, stat, .. }) = (host == 0, *sent);
        let done = Instant::now();
        self.clock = Some(done);
        let probe = std::mem::take(&mut self.probe);
        let connects = match &result {
            Ok(x) => x.connects,
            Err(f) => f.connects,
        };
        // Another host's connects say nothing of the run's target.
        if primary && connects > 0 {
            s.backoff.connected();
        } else if primary && !s.open && matches!(&result, Err(f) if f.class == ErrorClass::Connect)
        {
            s.backoff.failed(done, probe);
        }
        let mut rec = s.rec.borrow_mut();
        match result {
            Ok(x) => {
                rec.connections(x.connects, was_open, is_open);
                if x.retries > 0 {
                    rec.retried(intended, x.retries);
                }
                // The free time matched with this hit among its wake-up's claims.
                let free = s.handover.borrow().free(self.slot);
                let at_cap = s.lanes.get() >= s.max_lanes;
                let p = Parts::of(
                    s.open,
                    s.job.cfg.latency_from,
                    intended,
                    free,
                    at_cap,
                    sent.sent_at,
                    &x,
                    done,
                );
                self.free_at = Some(p.end);
                rec.lag(intended, p.lag, x.left.is_some());
                let (latency, server, end) = (p.latency, p.server, p.end);
                let resp = Response {
                    intended,
                    stat,
                    status: x.status,
                    latency,
                    service: server,
                    bytes_in: x.bytes_in,
                    expected: (grpc || x.status >= 400) && expected.contains(&x.status),
                    grpc,
                    at: done,
                    ended: end,
                };
                rec.response(&resp);
                if rec.measured(intended) {
                    // From where the latency starts (its end less it), as the latency is.
                    self.streamed(s, host, end.checked_sub(latency), x.sent_at, end);
                }
                Reply::Answered {
                    status: x.status,
                    latency: resp.latency,
                }
            }
            Err(f) => {
                rec.connections(f.connects, was_open, is_open);
                if f.retries > 0 {
                    rec.retried(intended, f.retries);
                }
                self.free_at = Some(done);
                rec.error(sent, f.class, done);
                Reply::Failed(f.class)
            }
        }
    }

    fn close(&mut self, s: &Shared) {
        if self.conn.close() {
            s.rec.borrow_mut().connections(0, true, false);
        }
        for (_, c) in &mut self.others {
            if c.close() {
                s.rec.borrow_mut().connections(0, true, false);
            }
        }
    }

    fn shutdown(&mut self, s: &Shared) {
        self.close(s);
    }
}

/// stamps is which kernel stamps a plain-http connection asks for: receive stamps always
/// (when its answer arrived), transmit stamps in the open model only, whose requests have an
/// intended time to lag behind (see [`crate::conn::Stamps`]).
fn stamps(s: &Shared) -> Stamps {
    let plain = s.job.cfg.tls.is_none();
    Stamps {
        receive: plain,
        transmit: plain && s.open,
    }
}

/// on is the connection to origin `host`: `conn` for the run's (0), else its connection in
/// `others` (which [`Lane::exchange_captured`] opened before sending there).
#[inline]
fn on<'a>(conn: &'a mut Wire, others: &'a mut [(usize, Wire)], host: usize) -> &'a mut Wire {
    if host == 0 {
        return conn;
    }
    match others.iter_mut().find(|(i, _)| *i == host) {
        Some((_, w)) => w,
        None => conn,
    }
}

/// wire makes the connection of lane `slot`: its own HTTP/1.1 connection, or a stream on its
/// group's HTTP/2 connection (the group's first lane leads it).
fn wire(s: &Shared, slot: usize) -> Wire {
    let job = &s.job;
    match job.cfg.protocol {
        Protocol::Http1 => {
            let mut conn = Conn::new(job.addr, job.cfg.tls.clone(), stamps(s), job.gauge.clone())
                .watched(s.stream.clone());
            conn.tunnel = job.cfg.proxy.as_ref().and_then(|p| p.tunnel.clone());
            Wire::H1(conn)
        }
        Protocol::Http2 => {
            let streams = job.cfg.streams as usize;
            let group = slot / streams;
            let mut links = s.links.borrow_mut();
            while links.len() <= group {
                links.push(Link::new(job.addr, job.cfg.tls.clone(), job.gauge.clone()));
            }
            Wire::H2(
                Stream::new(links[group].clone(), slot.is_multiple_of(streams))
                    .watched(s.stream.clone())
                    .calling(job.cfg.grpc),
            )
        }
    }
}
