//! Requests in flight: what each lane of a worker thread has sent and not yet finished, so the
//! end of a run can account for every request it started.
//!
//! At the end of a timed run (after the grace period) or on a stop, the thread stops polling
//! its lanes; a request still on the wire then would appear neither as a response nor as an
//! error, and a server that stalls at the end would lose exactly its slowest requests. Each
//! lane owns one slot here (a lane has at most one request out at a time), written when the
//! request goes out and cleared when it ends: no allocation per request, one `RefCell` borrow.

use std::cell::RefCell;
use std::time::Instant;

/// Flight is what a lane has under way: an open-model hit it claimed and waits to send (for
/// its due time, or for its connection to open), or a request on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flight {
    /// Due: a claimed hit, due at this instant, not sent yet.
    Due(Instant),
    /// Out: a request sent and not yet answered.
    Out(Sent),
}

/// Sent is one request on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sent {
    /// intended: when the request was meant to start (the open model's due time; the
    /// closed model's send); it decides whether the request is measured or warm-up.
    pub intended: Instant,
    /// from: what its latency counts from (see [`crate::metrics::Response::latency`]).
    pub from: Instant,
    /// sent_at: when it was handed to the connection (service time counts from here).
    pub sent_at: Instant,
    /// stat: its per-name statistics index.
    pub stat: usize,
}

/// Flights holds one slot per lane of a thread, indexed by the lane's local number.
#[derive(Debug, Default)]
pub struct Flights {
    slots: RefCell<Vec<Option<Flight>>>,
}

impl Flights {
    /// with_capacity makes room for `lanes` lanes up front, so spawning them does not grow
    /// the table (it still grows, once per doubling, if more lanes come).
    pub fn with_capacity(lanes: usize) -> Self {
        Flights {
            slots: RefCell::new(Vec::with_capacity(lanes)),
        }
    }

    /// add_lane makes the slot for lane `slot` (a lane's local number, counted from 0).
    pub fn add_lane(&self, slot: usize) {
        let mut slots = self.slots.borrow_mut();
        if slots.len() <= slot {
            slots.resize(slot + 1, None);
        }
    }

    /// depart records what lane `slot` has under way now.
    pub fn depart(&self, slot: usize, flight: Flight) {
        if let Some(s) = self.slots.borrow_mut().get_mut(slot) {
            *s = Some(flight);
        }
    }

    /// land marks lane `slot` as having nothing under way (its request answered or failed).
    pub fn land(&self, slot: usize) {
        if let Some(s) = self.slots.borrow_mut().get_mut(slot) {
            *s = None;
        }
    }

    /// take_all empties every slot and returns what was still under way.
    pub fn take_all(&self) -> Vec<Flight> {
        self.slots
            .borrow_mut()
            .iter_mut()
            .filter_map(Option::take)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn only_requests_not_landed_are_taken() {
        let t = Instant::now();
        let f = |stat| {
            Flight::Out(Sent {
                intended: t,
                from: t,
                sent_at: t + Duration::from_millis(1),
                stat,
            })
        };
        let flights = Flights::with_capacity(1);
        for slot in 0..3 {
            flights.add_lane(slot);
        }
        flights.depart(0, Flight::Due(t));
        flights.depart(0, f(0));
        flights.depart(1, f(1));
        flights.depart(2, Flight::Due(t));
        flights.land(1);
        flights.depart(7, f(7)); // no such lane: ignored
        assert_eq!(flights.take_all(), vec![f(0), Flight::Due(t)]);
        assert!(flights.take_all().is_empty(), "taking empties the slots");
    }
}
