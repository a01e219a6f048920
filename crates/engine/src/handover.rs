//! Which free connection each hit waited for: the open model's wait, kept apart from the lag.
//!
//! A hit due while every connection of its thread was busy waits for the first to come free:
//! the server's backpressure, charged to its latency. But a thread that was not running when
//! its connections came free (preempted, or busy with other lanes) serves them afterwards in
//! the runtime's order, not in the order they came free: the lane freed last may claim the
//! earliest overdue hit, and its own free time would charge the thread's delay to the server.
//! So the claims of one wake-up are matched afresh as each comes in: their free times,
//! sorted, go to their hits in due order (the earliest free connection serves the earliest
//! hit, as a thread that kept up would have had it), and each lane reads its hit's at the end.

use std::time::Instant;

/// MAX_BATCH bounds the claims matched together.
const MAX_BATCH: usize = 64;

/// Handover is one thread's matching of the claims of its current wake-up.
#[derive(Debug, Default)]
pub struct Handover {
    /// wake: the wake-up the claims belong to ([`crate::metronome::wake`]).
    wake: u64,
    /// claims: this wake-up's claims in due order: the lane's slot and its hit's due time.
    claims: Vec<(usize, Instant)>,
    /// frees: the free times of those claims' connections, ascending.
    frees: Vec<Instant>,
    /// free: by lane slot, the free time its current hit is matched with.
    free: Vec<Option<Instant>>,
}

impl Handover {
    /// claim books that the lane in `slot`, its connection free since `free`, claimed a hit
    /// due at `due` in wake-up `wake`, and matches the wake-up's claims again. Claims come in
    /// due order (a thread's hits are claimed in turn); the vectors keep their capacity, so a
    /// claim allocates nothing once the pool has grown.
    pub fn claim(&mut self, wake: u64, slot: usize, due: Instant, free: Instant) {
        // A thread that never parks (saturated) still matches within bounded batches.
        if wake != self.wake || self.claims.len() >= MAX_BATCH {
            self.wake = wake;
            self.claims.clear();
            self.frees.clear();
        }
        if self.free.len() <= slot {
            self.free.resize(slot + 1, None);
        }
        self.claims.push((slot, due));
        let at = self.frees.partition_point(|f| *f <= free);
        self.frees.insert(at, free);
        for (&(s, _), &f) in self.claims.iter().zip(self.frees.iter()) {
            self.free[s] = Some(f);
        }
    }

    /// free is the free time matched with the hit of the lane in `slot` (None before its
    /// first claim).
    pub fn free(&self, slot: usize) -> Option<Instant> {
        self.free.get(slot).copied().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// The case: after a stall, the lane freed at 7 ms is served first and claims
    /// the hit due at 6 ms; the lane freed at 4 ms, served next, claims the hit due at 8 ms.
    /// Matched, the hit due at 6 had a connection free since 4 (no wait), and the one due at
    /// 8 the one free since 7 (none either); unmatched, the first would wait 1 ms.
    #[test]
    fn the_earliest_free_connection_serves_the_earliest_hit() {
        let t0 = Instant::now();
        let ms = |n: u64| t0 + Duration::from_millis(n);
        let mut h = Handover::default();
        h.claim(1, 3, ms(6), ms(7));
        assert_eq!(h.free(3), Some(ms(7)));
        h.claim(1, 2, ms(8), ms(4));
        assert_eq!((h.free(3), h.free(2)), (Some(ms(4)), Some(ms(7))));
        // The next wake-up starts afresh: its claims keep their own free times.
        h.claim(2, 2, ms(12), ms(13));
        assert_eq!((h.free(3), h.free(2)), (Some(ms(4)), Some(ms(13))));
        assert_eq!(h.free(9), None);
    }
}
