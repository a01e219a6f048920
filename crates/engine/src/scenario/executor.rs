//! The flow executor: one iteration of one VU, a loop over the flow's [`Op`]s.
//!
//! It talks to the network and to the books only through [`Transport`], which the lane
//! implements (send on its connection, record into its thread's recorder, sleep on its
//! timer) and tests fake. Every request goes through `Transport::exchange`, so a flow's
//! requests are counted exactly like plain ones (answered, failed, unfinished, unsent); a
//! failed check or extraction is then a failed request with a reason. The VU's buffers are
//! reused from request to request, so a warmed-up VU allocates only where values change
//! size (extracted strings, the one JSON value a check or extraction looks at: see
//! [`super::json`]).

use std::fmt::Write as _;
use std::time::{Duration, Instant, SystemTime};

use super::check::Seen;
use super::cookies::CookieJar;
use super::generator::entropy_seed;
use super::host::{ask, Answer, Host};
use super::render::{render, same_origin, write_url};
use super::rng::Rng;
use super::template::Scratch;
use super::url::{self, Origin};
use super::{Op, PyStep, Request, Script, Think, SLOT_ITERATION, SLOT_VU};
use crate::failure::ErrorClass;
use crate::message::{Request as Message, Response};
pub use control::rests;

/// MAX_REDIRECTS bounds the redirects one request follows.
pub const MAX_REDIRECTS: u32 = 5;

/// Reply is the outcome of one exchange: a response (its status and latency), or a failure
/// the transport has already counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply {
    /// Answered: a complete response.
    Answered {
        /// status: its status.
        status: u16,
        /// latency: how long it took, as recorded.
        latency: Duration,
    },
    /// Failed: no response (counted under its class).
    Failed(ErrorClass),
    /// Refused: not sent, for a reason the transport has counted with the failure (a host
    /// that does not resolve, one host too many).
    Refused,
}

/// Transport is what the executor needs from its lane.
#[allow(async_fn_in_trait)]
pub trait Transport {
    /// exchange sends `msg` (`req` as written, or with `hop` the GET of a redirect it
    /// follows) to `to` (None: the run's host) meant to start at `intended`, records it
    /// under the request's name (with `hop`, its redirect name: [`Request::hop_stat`]), and
    /// leaves the response in `resp` (its status, header fields and body, as the protocol
    /// read them).
    async fn exchange(
        &mut self,
        msg: &Message,
        req: &Request,
        hop: bool,
        to: Option<Origin<'_>>,
        intended: Instant,
        resp: &mut Response,
    ) -> Reply;
    /// pause waits `d` (think, poll interval); one that [`rests`] sheds widened read buffers.
    async fn pause(&mut self, d: Duration);
    /// now reads the clock.
    fn now(&mut self) -> Instant;
    /// fail counts an answered request of `stat` as failed, for `reason`.
    fn fail(&mut self, intended: Instant, stat: usize, reason: &str);
    /// reason adds the reason of a failure already counted (a transport error, a 4xx/5xx).
    fn reason(&mut self, intended: Instant, stat: usize, reason: &str);
    /// group records a pass through group `g` started at `start`.
    fn group(&mut self, start: Instant, g: usize, took: Duration, ok: bool);
    /// started counts an iteration meant to start at `intended` as begun.
    fn started(&mut self, intended: Instant);
    /// iteration records the end of an iteration meant to start at `intended`.
    fn iteration(&mut self, intended: Instant, took: Duration, ok: bool);
    /// tally counts an answer of `stat`, meant to start at `intended`, by `value` (the
    /// request's `tally`).
    fn tally(&mut self, intended: Instant, stat: usize, value: &str);
    /// yield_now lets the lane's thread run its other tasks: an iteration that fails before
    /// any request (no data row left) awaits nothing else, and a VU repeating it must not
    /// starve its thread.
    async fn yield_now(&mut self) {}
    /// nowhere says that the failure counted next is of a request that went to no host (its
    /// URL made none), so no host's figures take it.
    fn nowhere(&mut self) {}
    /// socket runs WebSocket step `step` on a socket of its own: opens `url` (ws:// or
    /// wss://), sends `messages` in order, `step.count` times, each when the last one's reply
    /// came (matched by the step's rule), books each message as a request of the step's name
    /// (its round trip the latency) and in the run's socket books, and closes the socket;
    /// false when the socket could not open or ended early (what it lost booked, with why).
    async fn socket(
        &mut self,
        step: &super::ws::SocketStep,
        url: &str,
        messages: &[bytes::Bytes],
        intended: Instant,
    ) -> bool;
    /// python runs function `func` of `host` on `args` and awaits its answer (the lane's
    /// thread runs its other lanes meanwhile).
    async fn python(&mut self, host: &dyn Host, func: usize, args: Vec<String>) -> Answer {
        ask(host, func, args).await
    }
}

/// Vu is one virtual user's state between requests and iterations.
#[derive(Debug)]
pub struct Vu {
    /// vars: the variables, by slot.
    pub vars: Vec<String>,
    /// jar: the cookie jar.
    pub jar: CookieJar,
    /// iterations: iterations run so far.
    pub iterations: u64,
    rng: Rng,
    /// entropy: the generator of UUIDs and random values, seeded by the system (unlike
    /// `rng`, whose sequence a VU's number fixes): no two VUs, even of two processes, alike.
    entropy: Rng,
    /// scratch: the buffers of function calls in templates.
    scratch: Scratch,
    /// broken: why the request being sent could not be written as the flow says (a
    /// function that could not be computed); it fails that request.
    broken: Option<&'static str>,
    /// req: the request being sent, as the flow wrote it.
    req: Message,
    /// resp: the last response, as its connection kept it.
    resp: Response,
    loops: Vec<u32>,
    groups: Vec<(usize, Instant)>,
    setup_done: bool,
    /// has_row: the VU holds its row of each per-VU data set.
    has_row: bool,
    /// out_of_rows: a data set that stops on running out had no row for this VU: it is done.
    out_of_rows: bool,
    /// url: the URL of the request being made (its redirects resolve against it).
    url: String,
    location: String,
    /// tallied: the value the last answer is tallied by (reused: no allocation per answer).
    tallied: String,
    /// locs: per variable slot, the capture storage of the regex extraction that sets it.
    locs: Vec<Option<regex::bytes::CaptureLocations>>,
    /// sent: when the last request was meant to start (its failures are booked by it, so
    /// warm-up and measured parts agree with the recorder's).
    sent: Instant,
    /// stat: the name the last request was recorded under (a followed redirect's has its
    /// own), where its failed checks go, so that each name's failures are its requests'.
    stat: usize,
    /// latency: the last response's, for conditions that check it (its status and body
    /// are in `resp`).
    latency: Duration,
    /// sent_any: a request was sent (a loop's failure is booked on the last one).
    sent_any: bool,
}

/// Failed: the iteration ended early (its reason is already counted).
struct Failed;

impl Vu {
    /// new makes VU number `vu` of a run of `script`.
    pub fn new(script: &Script, vu: u64) -> Vu {
        let mut vars = script.initial.clone();
        vars[SLOT_VU] = vu.to_string();
        Vu {
            vars,
            jar: CookieJar::default(),
            iterations: 0,
            rng: Rng::new(vu),
            entropy: Rng::new(entropy_seed(vu)),
            scratch: Scratch::default(),
            broken: None,
            // Buffers grow to what the flow needs on first use: ten thousand mostly idle VUs
            // must not each hold a page they never fill.
            req: Message::default(),
            resp: Response::default(),
            loops: vec![0; script.depth],
            groups: Vec::new(),
            setup_done: false,
            has_row: false,
            out_of_rows: false,
            url: String::new(),
            location: String::new(),
            tallied: String::new(),
            locs: Vec::new(),
            sent: Instant::now(),
            stat: 0,
            latency: Duration::ZERO,
            sent_any: false,
        }
    }

    /// done says whether this VU has run its share of iterations.
    pub fn done(&self, script: &Script) -> bool {
        self.out_of_rows || script.iterations.is_some_and(|n| self.iterations >= n)
    }

    /// iterate runs one iteration (the setup first, on a VU's first), meant to start at
    /// `intended`, with the data sets' next rows ([`super::data::Data::take`]). A set that
    /// has run out and stops leaves the VU [`Vu::done`] with no iteration begun; one that
    /// errs fails the iteration.
    pub async fn iterate<T: Transport>(
        &mut self,
        script: &Script,
        t: &mut T,
        intended: Instant,
    ) -> bool {
        let filled = super::data::fill(&script.data, &mut self.vars, &mut self.rng, !self.has_row);
        self.has_row |= filled.is_ok();
        if let Err(set) = filled {
            let d = &script.data[set];
            if d.on_exhausted == super::data::OnExhausted::Stop {
                self.out_of_rows = true;
                return false;
            }
            d.miss();
            t.started(intended);
            t.iteration(intended, Duration::ZERO, false);
            t.yield_now().await;
            return false;
        }
        self.vars[SLOT_ITERATION].clear();
        let _ = write!(self.vars[SLOT_ITERATION], "{}", self.iterations);
        self.iterations += 1;
        t.started(intended);
        let mut at = intended;
        let mut ok = true;
        if !self.setup_done {
            ok = self.run(script, &script.setup, t, &mut at).await.is_ok();
            // A setup that failed runs again on the next iteration.
            self.setup_done = ok;
        }
        if ok {
            let flow = script.pick(self.rng.below(script.total_weight));
            ok = self.run(script, &flow.ops, t, &mut at).await.is_ok();
        }
        let now = t.now();
        t.iteration(intended, now.saturating_duration_since(intended), ok);
        ok
    }

    /// run executes `ops`; `at` is when the next request is meant to start (the iteration's
    /// intended start for its first request, then when the flow reaches each later one).
    // long: one arm per op, read top to bottom; helpers would hand the program counter and
    // the failure back to match again.
    async fn run<T: Transport>(
        &mut self,
        script: &Script,
        ops: &[Op],
        t: &mut T,
        at: &mut Instant,
    ) -> Result<(), Failed> {
        self.groups.clear();
        let mut pc = 0;
        let result = loop {
            let Some(op) = ops.get(pc) else { break Ok(()) };
            pc += 1;
            match op {
                Op::Request(i) => {
                    let req = &script.requests[*i];
                    let r = self.request(script, req, t, *at).await;
                    *at = t.now();
                    let sent = self.sent;
                    if let Err(f) =
                        r.and_then(|(status, lat)| self.judge(req, t, sent, status, lat))
                    {
                        break Err(f);
                    }
                }
                Op::Poll {
                    req,
                    until,
                    interval,
                    timeout,
                } => {
                    let req = &script.requests[*req];
                    if let Err(f) = self
                        .poll(script, req, until, *interval, *timeout, t, at)
                        .await
                    {
                        break Err(f);
                    }
                }
                Op::Think(think) => {
                    let d = self.think(*think);
                    self.idle(t, d).await;
                    *at = t.now();
                }
                Op::Set { slot, choice } => {
                    let pick = self.rng.below(choice.len() as u64) as usize;
                    self.vars[*slot].clone_from(&choice[pick]);
                }
                Op::Draw { slot, gen } => {
                    gen.draw(&mut self.entropy, SystemTime::now(), &mut self.vars[*slot]);
                }
                Op::Python(i) => {
                    if self.python(script, &script.python[*i], t).await.is_err() {
                        break Err(Failed);
                    }
                    *at = t.now();
                }
                Op::Socket(i) => {
                    if self
                        .socket(script, &script.sockets[*i], t, *at)
                        .await
                        .is_err()
                    {
                        break Err(Failed);
                    }
                    *at = t.now();
                }
                Op::GroupStart(g) => self.groups.push((*g, t.now())),
                Op::GroupEnd => {
                    if let Some((g, start)) = self.groups.pop() {
                        let now = t.now();
                        t.group(start, g, now.saturating_duration_since(start), true);
                    }
                }
                // Loops, branches and stops: executor_control.rs.
                control => {
                    if let Some(end) = self.control(control, t, &mut pc) {
                        break end;
                    }
                }
            }
        };
        // Groups a failure cut short are failed passes; those a stop cut short, passes.
        if !self.groups.is_empty() {
            let now = t.now();
            while let Some((g, start)) = self.groups.pop() {
                t.group(
                    start,
                    g,
                    now.saturating_duration_since(start),
                    result.is_ok(),
                );
            }
        }
        result
    }

    /// python runs a Python step: its arguments rendered, the host's answer into its
    /// outputs. A call that raised fails the iteration (the host counts its reason).
    async fn python<T: Transport>(
        &mut self,
        s: &Script,
        step: &PyStep,
        t: &mut T,
    ) -> Result<(), Failed> {
        // Script::with_host refuses a plan with Python steps and no host before the run.
        let host = s.python_host.as_ref().ok_or(Failed)?;
        let args = step
            .render_args(&self.vars, &mut self.scratch)
            .ok_or(Failed)?;
        let values = t
            .python(host.0.as_ref(), step.func, args)
            .await
            .map_err(|_| Failed)?;
        if values.len() != step.outputs.len() {
            return Err(Failed);
        }
        for (slot, v) in step.outputs.iter().zip(values) {
            self.vars[*slot] = v;
        }
        Ok(())
    }

    fn think(&mut self, think: Think) -> Duration {
        let s = match think {
            Think::Constant(d) => return d,
            Think::Uniform(lo, hi) => lo + (hi - lo) * self.rng.unit(),
            Think::Exponential(mean) => -mean * (1.0 - self.rng.unit()).ln(),
        };
        Duration::try_from_secs_f64(s.min(1e9)).unwrap_or(Duration::ZERO)
    }

    /// poll repeats `req` until `until` holds, then judges its last response.
    #[allow(clippy::too_many_arguments)]
    async fn poll<T: Transport>(
        &mut self,
        script: &Script,
        req: &Request,
        until: &[super::check::Check],
        interval: Duration,
        timeout: Duration,
        t: &mut T,
        at: &mut Instant,
    ) -> Result<(), Failed> {
        let start = *at;
        loop {
            let (status, latency) = self.request(script, req, t, *at).await?;
            let now = t.now();
            *at = now;
            let seen = Seen {
                status,
                latency,
                resp: &self.resp,
            };
            let done = until.iter().all(|c| c.holds(&seen));
            if done {
                return self.judge(req, t, self.sent, status, latency);
            }
            if now.saturating_duration_since(start) + interval > timeout {
                let reason = format!("poll timed out after {} s", timeout.as_secs_f64());
                t.fail(self.sent, self.stat, &reason);
                return Err(Failed);
            }
            self.idle(t, interval).await;
            *at = t.now();
        }
    }

    /// judge runs a final response's checks and extractions.
    fn judge<T: Transport>(
        &mut self,
        req: &Request,
        t: &mut T,
        now: Instant,
        status: u16,
        latency: Duration,
    ) -> Result<(), Failed> {
        let seen = Seen {
            status,
            latency,
            resp: &self.resp,
        };
        for c in &req.checks {
            if let Some(reason) = c.eval(&seen) {
                t.fail(now, self.stat, &reason);
                return Err(Failed);
            }
        }
        for x in &req.extract {
            let mut value = std::mem::take(&mut self.vars[x.slot]);
            if self.locs.len() <= x.slot {
                self.locs.resize_with(x.slot + 1, || None);
            }
            let locs = &mut self.locs[x.slot];
            let r = x.run(&self.resp, &mut value, locs);
            self.vars[x.slot] = value;
            if let Err(reason) = r {
                t.fail(now, self.stat, &reason);
                return Err(Failed);
            }
        }
        Ok(())
    }

    /// request sends `req` (following redirects if it says so, to any host) and reads its
    /// response into `self.resp`; a transport failure, a URL that makes no request or a
    /// 4xx/5xx the request does not expect ends the iteration.
    // long: one loop over a request and the redirects it follows, read top to bottom; each
    // hop's URL, split in place (borrowed from `self.url`), lives across the exchange and the
    // next hop's resolution, which a helper borrowing all of `self` could not sit beside.
    async fn request<T: Transport>(
        &mut self,
        script: &Script,
        req: &Request,
        t: &mut T,
        intended: Instant,
    ) -> Result<(u16, Duration), Failed> {
        // A function of the URL that cannot be computed fails the request it makes.
        let mut url_done = write_url(&mut self.url, req, &self.vars, &mut self.scratch);
        let mut intended = intended;
        let mut hops = 0;
        // cross: a redirect left the request's origin (its credentials stay behind, as
        // browsers and curl do).
        let mut cross = false;
        loop {
            self.sent = intended;
            self.sent_any = true;
            let stat = if hops == 0 { req.stat } else { req.hop_stat };
            self.stat = stat;
            let split = match super::grpc::split(&self.url, req.grpc.is_some(), &script.base) {
                Ok(s) => s,
                Err(why) => {
                    let reason = format!("bad URL {:?}: {why}", self.url);
                    t.nowhere();
                    t.fail(intended, stat, &reason);
                    return Err(Failed);
                }
            };
            let done = render(
                &mut self.req,
                &self.vars,
                &mut self.scratch,
                &self.jar,
                script,
                req,
                (hops > 0, cross),
                &split,
            );
            self.broken = std::mem::replace(&mut url_done, Ok(())).and(done).err();
            let reply = t
                .exchange(
                    &self.req,
                    req,
                    hops > 0,
                    split.origin,
                    intended,
                    &mut self.resp,
                )
                .await;
            let (status, latency) = match reply {
                Reply::Failed(class) => {
                    t.reason(intended, stat, class.reason());
                    return Err(Failed);
                }
                Reply::Refused => return Err(Failed),
                Reply::Answered { status, latency } => (status, latency),
            };
            self.latency = latency;
            if let Some(call) = &req.grpc {
                call.reply(&mut self.resp, status);
            }
            let host = split.origin.map_or(script.host.as_str(), |o| o.host);
            for c in self.resp.headers_named("set-cookie") {
                self.jar.store(c, host);
            }
            if let Some(reason) = self.broken.take() {
                // Sent, and answered, but not as the flow says: a failed request. A 4xx/5xx
                // is counted as an error already: only its reason is this.
                self.tally(req, t, intended);
                if req.fails(status) {
                    t.reason(intended, stat, reason);
                } else {
                    t.fail(intended, stat, reason);
                }
                return Err(Failed);
            }
            if req.fails(status) {
                self.tally(req, t, intended);
                t.reason(intended, stat, &req.failure(status, &self.resp));
                return Err(Failed);
            }
            let redirect =
                req.follow_redirects && (300..400).contains(&status) && hops < MAX_REDIRECTS;
            let Some(location) = redirect.then(|| self.resp.first("location")).flatten() else {
                self.tally(req, t, intended);
                return Ok((status, latency));
            };
            if !url::resolve(&self.url, location, &script.base, &mut self.location) {
                t.fail(intended, stat, "redirect to a Location that makes no URL");
                return Err(Failed);
            }
            let next = url::split(&self.location).ok().and_then(|s| s.origin);
            cross |= !same_origin(split.origin, next, script);
            std::mem::swap(&mut self.url, &mut self.location);
            hops += 1;
            intended = t.now();
        }
    }

    /// tally counts the answer just parsed, which ends `req`, by the value at its `tally`
    /// path, under the request's own name (a redirect it followed included).
    fn tally<T: Transport>(&mut self, req: &Request, t: &mut T, intended: Instant) {
        if let Some(path) = &req.tally {
            super::tally::value_of(&self.resp.body, path, &mut self.tallied);
            t.tally(intended, req.stat, &self.tallied);
        }
    }
}

#[path = "executor_control.rs"]
mod control;
#[path = "executor_socket.rs"]
mod socket;

#[cfg(test)]
#[path = "executor_tests.rs"]
mod tests;
