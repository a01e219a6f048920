//! The executor's control flow: the jumps of `when`, `repeat`, `until` and `stop` (see
//! [`Op`]), deciding conditions on the VU's variables and its last response in place.

use std::time::Duration;

use super::{Failed, Transport, Vu};
use crate::scenario::check::Seen;
use crate::scenario::cond::{Cond, Facts};
use crate::scenario::{Count, Op};

/// MAX_SHOWN: the longest run-time count shown in a reason (reasons group by their text).
const MAX_SHOWN: usize = 20;

impl Vu {
    /// control runs one control op; `pc` is already past it. Some ends the flow: Ok for a
    /// stop (the iteration is complete), Err for a failure (its reason counted).
    pub(super) fn control<T: Transport>(
        &mut self,
        op: &Op,
        t: &mut T,
        pc: &mut usize,
    ) -> Option<Result<(), Failed>> {
        match op {
            Op::LoopStart { count, depth, end } => match self.count(*count) {
                Ok(0) => *pc = *end,
                Ok(n) => self.loops[*depth] = n,
                Err(reason) => return Some(self.fail(t, &reason)),
            },
            Op::LoopEnd { start, depth } => {
                self.loops[*depth] -= 1;
                if self.loops[*depth] > 0 {
                    *pc = start + 1;
                }
            }
            Op::UntilStart { depth } => self.loops[*depth] = 0,
            Op::UntilEnd {
                start,
                depth,
                cond,
                limit,
                reason,
            } if !self.holds(cond) => {
                self.loops[*depth] += 1;
                if self.loops[*depth] >= *limit {
                    return Some(self.fail(t, reason));
                }
                *pc = start + 1;
            }
            Op::Unless { cond, to } if !self.holds(cond) => *pc = *to,
            Op::Jump(to) => *pc = *to,
            Op::Stop(cond) if cond.as_ref().is_none_or(|c| self.holds(c)) => return Some(Ok(())),
            // A condition that holds (an until done, a branch taken, a stop not taken) goes
            // on; the other ops are not control ops.
            _ => {}
        }
        None
    }

    /// holds decides `cond` on the variables and the last response.
    fn holds(&self, cond: &Cond) -> bool {
        cond.holds(&Facts {
            vars: &self.vars,
            seen: Seen {
                status: self.resp.status,
                latency: self.latency,
                resp: &self.resp,
            },
        })
    }

    /// count reads a repeat's count, or says why the variable holds none.
    fn count(&self, count: Count) -> Result<u32, String> {
        match count {
            Count::Fixed(n) => Ok(n),
            Count::Slot(i) => {
                let text = self.vars.get(i).map_or("", String::as_str);
                text.parse::<u32>().map_err(|_| {
                    let shown: String = text.chars().take(MAX_SHOWN).collect();
                    format!("repeat count {shown:?} is not a whole number")
                })
            }
        }
    }

    /// fail ends the flow for `reason`, booked on the last request sent (as a poll's
    /// timeout is); with none sent yet, the iteration fails with no request to book it on.
    fn fail<T: Transport>(&mut self, t: &mut T, reason: &str) -> Result<(), Failed> {
        if self.sent_any {
            t.fail(self.sent, self.stat, reason);
        }
        Err(Failed)
    }
}

/// FIELDS_KEEP: the most header bytes a VU keeps while it rests ([`Vu::let_go`]); the heads
/// of an API's flow fit, and are kept without allocating.
const FIELDS_KEEP: usize = 1024;

/// REST: the shortest wait in which a VU gives back what a large answer grew ([`rests`]).
/// Ten thousand VUs that think for seconds must not each hold their largest answer; a VU that
/// waits less is busy, and giving back after every request reallocated the read buffer and
/// the response copy on each one (a flow of 3 KB answers: 2-3 allocations a request).
const REST: Duration = Duration::from_millis(10);

/// rests says whether a wait of `d` is long enough for a VU to give back what a large answer
/// grew (at most one reallocation of each buffer per [`REST`] a VU).
pub fn rests(d: Duration) -> bool {
    d >= REST
}

impl Vu {
    /// let_go gives back the header fields of a head larger than [`FIELDS_KEEP`] (checks and
    /// extractions have read them; conditions read only the status and the body, which stay).
    /// The body's copy is the only one: no HTTP/1.1 text of the response is kept beside it,
    /// whatever the protocol. The lane calls it as its VU waits between iterations.
    pub fn let_go(&mut self) {
        self.resp.shed_fields(FIELDS_KEEP);
    }

    /// idle waits `d` (a think, a poll's interval) as a VU at rest: a wait that [`rests`]
    /// first lets go of the response copy (and the transport of its read buffers).
    pub(super) async fn idle<T: Transport>(&mut self, t: &mut T, d: Duration) {
        if rests(d) {
            self.let_go();
        }
        t.pause(d).await;
    }
}
