//! [`LaneIo`]: a lane as a scenario's flow executor sees it, and how a lane reaches the
//! other origins a flow's absolute URLs name (each on its own kept-alive connection: HTTP/1.1,
//! or HTTP/2 for a `grpc://` origin's calls).

use std::rc::Rc;
use std::time::{Duration, Instant};

use super::Lane;
use crate::conn::Conn;
use crate::failure::ErrorClass;
use crate::flight::Sent;
use crate::hosts::HostStats;
use crate::http2::{Link, Stream};
use crate::message::{Request, Response};
use crate::scenario::executor::{rests, Reply, Transport};
use crate::scenario::url::Origin;
use crate::shared::Shared;
use crate::wire::{Outgoing, What, Wire};

impl Lane {
    /// exchange_captured is [`Lane::send`] of a scenario's request to `to` (None: the run's
    /// host), with the response kept in `resp` (its body up to
    /// [`crate::message::MAX_CAPTURE`] bytes) for the flow's checks and extractions; `hop`:
    /// `msg` is the GET of a redirect `req` follows.
    /// The response (or failure) is booked in its origin's figures too.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn exchange_captured(
        &mut self,
        s: &Rc<Shared>,
        msg: &Request,
        req: &crate::scenario::Request,
        hop: bool,
        to: Option<Origin<'_>>,
        intended: Instant,
        resp: &mut Response,
    ) -> Reply {
        let (stat, head, idempotent) = if hop {
            (req.hop_stat, false, true)
        } else {
            (req.stat, req.head, req.idempotent)
        };
        let timeout = req.timeout.unwrap_or(s.job.cfg.timeout);
        let host = match to {
            None => 0,
            Some(o) => match self.origin(s, o, timeout).await {
                Ok(h) => h,
                Err(why) => {
                    self.refuse(s, stat, intended, &why);
                    return Reply::Refused;
                }
            },
        };
        self.host = host;
        resp.clear();
        super::on(&mut self.conn, &mut self.others, host).capture(std::mem::take(resp));
        let out = Outgoing {
            what: What::Message(msg),
            head,
            idempotent,
            stream: req.stream || s.job.cfg.stream,
            grpc: req.grpc.is_some(),
        };
        let expected = &req.expected_errors;
        let reply = self
            .send(s, out, stat, host, timeout, expected, intended)
            .await;
        if let Some(kept) = super::on(&mut self.conn, &mut self.others, host).captured() {
            *resp = kept;
        }
        let mut rec = s.rec.borrow_mut();
        match reply {
            Reply::Answered { status, latency } => {
                rec.host_answered(host, intended, latency, req.fails(status));
            }
            Reply::Failed(_) | Reply::Refused => rec.host_failed(host, intended),
        }
        reply
    }

    /// rest gives back what large answers grew as the lane's VU goes idle (a think, a poll's
    /// interval, the wait for its next iteration: see [`rests`]): each connection's widened
    /// read buffer and the VU's response copy, when it is not iterating. A VU mostly thinks:
    /// it then keeps 1 KiB of read buffer, not the 8 KiB one large answer widened it to
    /// (10,000 VUs: 179 MB against 94 at 1,100-byte answers); a VU that does not wait keeps
    /// its buffers from request to request (scenario_alloc.rs).
    pub(super) fn rest(&mut self) {
        self.conn.shed();
        for (_, w) in &mut self.others {
            w.shed();
        }
        if let Some(vu) = self.vu.as_mut() {
            vu.let_go();
        }
    }

    /// origin is the index of origin `o` in the thread's table, added (resolved within
    /// `timeout`) the first time any lane of the thread reaches it, with a connection of
    /// this lane's opened to it on first use; an error says why it cannot be reached.
    async fn origin(
        &mut self,
        s: &Rc<Shared>,
        o: Origin<'_>,
        timeout: Duration,
    ) -> Result<usize, String> {
        let found = s.origins.borrow().find(&o);
        let host = match found {
            Some(h) => h,
            None => {
                if s.origins.borrow().full() {
                    // Say so without a lookup (add says the same).
                    let addr = std::net::SocketAddr::from(([0, 0, 0, 0], 0));
                    return s.origins.borrow_mut().add(&o, addr);
                }
                let looked =
                    tokio::time::timeout(timeout, tokio::net::lookup_host((o.host, o.port)));
                let addr = match looked.await {
                    Ok(Ok(mut addrs)) => addrs.next(),
                    _ => None,
                }
                .ok_or_else(|| format!("cannot resolve {}", o.host))?;
                let mut origins = s.origins.borrow_mut();
                let known = origins.find(&o);
                let h = origins.add(&o, addr)?;
                if known.is_none() {
                    let high = s.rec.borrow().totals.latency.high();
                    let mut rec = s.rec.borrow_mut();
                    rec.totals
                        .per_host
                        .push(HostStats::new(origins.name(h), high));
                }
                h
            }
        };
        if host > 0 && !self.others.iter().any(|(i, _)| *i == host) {
            let origins = s.origins.borrow();
            let Some(e) = origins.get(host) else {
                return Err("no such host".to_string());
            };
            // Kernel stamps as on the run's connection (lane.rs, stamps): plain http only.
            let plain = e.tls.is_none();
            let stamps = crate::conn::Stamps {
                receive: plain,
                transmit: plain && s.open,
            };
            // --stream times every origin's answers, not the run's host's alone.
            let wire = if e.grpc {
                // A flow's gRPC calls: this lane's own HTTP/2 connection to the origin.
                let link = Link::new(e.addr, e.tls.clone(), s.job.gauge.clone());
                let stream = Stream::new(link, true).watched(s.stream.clone());
                Wire::H2(stream.calling(true))
            } else {
                let conn = Conn::new(e.addr, e.tls.clone(), stamps, s.job.gauge.clone());
                Wire::H1(conn.watched(s.stream.clone()))
            };
            self.others.push((host, wire));
        }
        Ok(host)
    }

    /// streamed books a streamed answer (`--stream`) from origin `host` whose latency starts
    /// at `from` (else at `sent_at`), as the watch of the connection it came on saw it
    /// (another origin's connection has its own).
    #[inline]
    pub(super) fn streamed(
        &mut self,
        s: &Shared,
        host: usize,
        from: Option<Instant>,
        sent_at: Instant,
        end: Instant,
    ) {
        // A request that did not ask to be streamed left its watch unmeasured.
        let watch = super::on(&mut self.conn, &mut self.others, host).watch();
        if let Some(w) = watch.filter(|w| w.is_measured()) {
            s.stream_answered(w, from.unwrap_or(sent_at), sent_at, end);
        }
    }

    /// refuse books a request that could not be sent (its host unknown or one too many) as a
    /// connect error of name `stat`, with `why` as its reason.
    fn refuse(&mut self, s: &Shared, stat: usize, intended: Instant, why: &str) {
        let now = Instant::now();
        self.clock = Some(now);
        let sent = Sent {
            intended,
            from: now,
            sent_at: now,
            stat,
        };
        let mut rec = s.rec.borrow_mut();
        rec.send(now, intended, 0, false, false);
        rec.error(&sent, ErrorClass::Connect, now);
        if rec.measured(intended) {
            rec.totals.flow.reason(stat, why);
        }
    }
}

/// LaneIo is a lane as the flow executor sees it: each request goes out on the lane's
/// connection and is recorded exactly as the single-request path records it; think times
/// sleep on the lane's timer; failed checks and reasons go to the thread's recorder.
pub(super) struct LaneIo<'a> {
    pub(super) lane: &'a mut Lane,
    pub(super) s: &'a Rc<Shared>,
}

impl Transport for LaneIo<'_> {
    async fn exchange(
        &mut self,
        msg: &Request,
        req: &crate::scenario::Request,
        hop: bool,
        to: Option<Origin<'_>>,
        intended: Instant,
        resp: &mut Response,
    ) -> Reply {
        self.lane
            .exchange_captured(self.s, msg, req, hop, to, intended, resp)
            .await
    }

    async fn socket(
        &mut self,
        step: &crate::scenario::ws::SocketStep,
        url: &str,
        messages: &[bytes::Bytes],
        intended: Instant,
    ) -> bool {
        // Boxed: a socket's handshake and message loop would otherwise sit inline in every
        // VU's iteration future, used or not (vu_memory.rs: +5 KB a VU); a flow's socket step
        // pays one allocation when it runs instead.
        let ok = Box::pin(self.lane.socket_step(self.s, step, url, messages, intended)).await;
        self.lane.clock = None; // The socket took time: read the clock again.
        ok
    }

    async fn pause(&mut self, d: Duration) {
        if d.is_zero() {
            return;
        }
        if rests(d) {
            self.lane.rest();
        }
        self.lane.pace.as_mut().reset((Instant::now() + d).into());
        self.lane.pace.as_mut().await;
        self.lane.clock = None;
    }

    async fn python(
        &mut self,
        host: &dyn crate::scenario::host::Host,
        func: usize,
        args: Vec<String>,
    ) -> crate::scenario::host::Answer {
        let answer = crate::scenario::host::ask(host, func, args).await;
        self.lane.clock = None; // The wait took time: read the clock again.
        answer
    }

    async fn yield_now(&mut self) {
        tokio::task::yield_now().await;
    }

    fn now(&mut self) -> Instant {
        // The lane's last completion time stands for "now" until it sleeps (one clock read
        // less per request, as on the single-request path).
        *self.lane.clock.get_or_insert_with(Instant::now)
    }

    fn fail(&mut self, intended: Instant, stat: usize, reason: &str) {
        let mut rec = self.s.rec.borrow_mut();
        rec.check_failed(intended, stat);
        rec.host_failed(self.lane.host, intended);
        if rec.measured(intended) {
            rec.totals.flow.reason(stat, reason);
        }
    }

    fn reason(&mut self, intended: Instant, stat: usize, reason: &str) {
        let mut rec = self.s.rec.borrow_mut();
        if rec.measured(intended) {
            rec.totals.flow.reason(stat, reason);
        }
    }

    fn group(&mut self, start: Instant, g: usize, took: Duration, ok: bool) {
        let mut rec = self.s.rec.borrow_mut();
        if rec.measured(start) {
            let high = rec.totals.latency.high();
            let us = crate::hdr::micros(took);
            rec.totals.flow.group(g, us, ok, high);
        }
    }

    fn started(&mut self, intended: Instant) {
        let mut rec = self.s.rec.borrow_mut();
        rec.iteration_started();
        if rec.measured(intended) {
            rec.totals.flow.started();
        }
    }

    fn nowhere(&mut self) {
        // Out of the table's range: no host's figures.
        self.lane.host = usize::MAX;
    }

    fn tally(&mut self, intended: Instant, stat: usize, value: &str) {
        self.s.rec.borrow_mut().tally(intended, stat, value);
    }

    fn iteration(&mut self, intended: Instant, took: Duration, ok: bool) {
        let mut rec = self.s.rec.borrow_mut();
        rec.iteration_ended(ok);
        if rec.measured(intended) {
            let high = rec.totals.latency.high();
            let us = crate::hdr::micros(took);
            rec.totals.flow.iteration(us, ok, high);
        }
    }
}
