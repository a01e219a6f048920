//! [`LaneIo`]: a lane as a scenario's flow executor sees it.

use std::rc::Rc;
use std::time::{Duration, Instant};

use super::Lane;
use crate::scenario::executor::{Reply, Transport};
use crate::shared::Shared;

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
        bytes: &[u8],
        req: &crate::scenario::Request,
        hop: bool,
        intended: Instant,
        raw: &mut Vec<u8>,
    ) -> Reply {
        self.lane
            .exchange_captured(self.s, bytes, req, hop, intended, raw)
            .await
    }

    async fn pause(&mut self, d: Duration) {
        if d.is_zero() {
            return;
        }
        self.lane.pace.as_mut().reset((Instant::now() + d).into());
        self.lane.pace.as_mut().await;
        self.lane.clock = None;
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
