//! What flows add to a thread's totals: failure reasons per request name, iterations
//! (started, completed, failed, and their duration), groups timed as a whole, and each
//! WebSocket step's books ([`SocketBooks`]). It merges across threads with the rest of
//! [`crate::totals::Totals`]; plain runs leave it empty.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;

use crate::hdr::new_histogram;
use crate::socket::books::SocketBooks;

/// MAX_REASONS bounds the distinct failure reasons kept per name (a reason quoting a value
/// that changes every time must not grow memory without end); the rest count as "other".
pub const MAX_REASONS: usize = 64;

/// OTHER is the reason counted when a name already has [`MAX_REASONS`] distinct ones.
pub const OTHER: &str = "other reasons";

/// GroupStats is one group's tally: each pass through the group is one sample.
#[derive(Debug, Clone)]
pub struct GroupStats {
    /// count: passes that ended (completed or failed).
    pub count: u64,
    /// errors: passes that failed.
    pub errors: u64,
    /// latency: how long each pass took, µs.
    pub latency: Histogram<u64>,
}

/// FlowTotals is a thread's (or, merged, the run's) flow statistics.
#[derive(Debug, Clone, Default)]
pub struct FlowTotals {
    /// reasons: per request name, failure reason -> count.
    pub reasons: Vec<BTreeMap<String, u64>>,
    /// iterations_started: iterations begun.
    pub iterations_started: u64,
    /// iterations_completed: iterations that ran every step with no failure.
    pub iterations_completed: u64,
    /// iterations_failed: iterations ended by a failure.
    pub iterations_failed: u64,
    /// iteration_latency: iteration durations from their intended start, µs.
    pub iteration_latency: Option<Histogram<u64>>,
    /// groups: per group.
    pub groups: Vec<Option<GroupStats>>,
    /// sockets: per request name, a WebSocket step's books (None: not a socket step's name).
    pub sockets: Vec<Option<SocketBooks>>,
}

impl FlowTotals {
    /// reason counts one failure of name `stat` for `reason`.
    pub fn reason(&mut self, stat: usize, reason: &str) {
        if self.reasons.len() <= stat {
            self.reasons.resize_with(stat + 1, BTreeMap::new);
        }
        let map = &mut self.reasons[stat];
        if let Some(n) = map.get_mut(reason) {
            *n += 1;
        } else if map.len() < MAX_REASONS {
            map.insert(reason.to_string(), 1);
        } else {
            *map.entry(OTHER.to_string()).or_insert(0) += 1;
        }
    }

    /// socket is the books of the WebSocket step named `stat`.
    pub fn socket(&mut self, stat: usize) -> &mut SocketBooks {
        if self.sockets.len() <= stat {
            self.sockets.resize_with(stat + 1, || None);
        }
        self.sockets[stat].get_or_insert_with(SocketBooks::default)
    }

    /// started counts an iteration begun.
    pub fn started(&mut self) {
        self.iterations_started += 1;
    }

    /// iteration records an iteration that ended after `us` microseconds.
    pub fn iteration(&mut self, us: u64, ok: bool, highest_us: u64) {
        if ok {
            self.iterations_completed += 1;
        } else {
            self.iterations_failed += 1;
        }
        self.iteration_latency
            .get_or_insert_with(|| new_histogram(highest_us))
            .saturating_record(us);
    }

    /// group records a pass through group `g` that took `us` microseconds.
    pub fn group(&mut self, g: usize, us: u64, ok: bool, highest_us: u64) {
        if self.groups.len() <= g {
            self.groups.resize_with(g + 1, || None);
        }
        let s = self.groups[g].get_or_insert_with(|| GroupStats {
            count: 0,
            errors: 0,
            latency: new_histogram(highest_us),
        });
        s.count += 1;
        s.errors += u64::from(!ok);
        s.latency.saturating_record(us);
    }

    /// merge folds another thread's flow statistics into these.
    pub fn merge(&mut self, o: &FlowTotals) {
        for (stat, map) in o.reasons.iter().enumerate() {
            for (reason, n) in map {
                if self.reasons.len() <= stat {
                    self.reasons.resize_with(stat + 1, BTreeMap::new);
                }
                let mine = &mut self.reasons[stat];
                let key = if mine.contains_key(reason) || mine.len() < MAX_REASONS {
                    reason.as_str()
                } else {
                    OTHER
                };
                *mine.entry(key.to_string()).or_insert(0) += n;
            }
        }
        self.iterations_started += o.iterations_started;
        self.iterations_completed += o.iterations_completed;
        self.iterations_failed += o.iterations_failed;
        if let Some(h) = &o.iteration_latency {
            match &mut self.iteration_latency {
                Some(mine) => {
                    let _ = mine.add(h);
                }
                None => self.iteration_latency = Some(h.clone()),
            }
        }
        if self.groups.len() < o.groups.len() {
            self.groups.resize_with(o.groups.len(), || None);
        }
        for (stat, theirs) in o.sockets.iter().enumerate() {
            if let Some(t) = theirs {
                self.socket(stat).merge(t);
            }
        }
        for (mine, theirs) in self.groups.iter_mut().zip(o.groups.iter()) {
            match (mine.as_mut(), theirs) {
                (_, None) => {}
                (None, Some(t)) => *mine = Some(t.clone()),
                (Some(m), Some(t)) => {
                    m.count += t.count;
                    m.errors += t.errors;
                    let _ = m.latency.add(&t.latency);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_are_bounded_and_merge() {
        let mut a = FlowTotals::default();
        for i in 0..(MAX_REASONS + 10) {
            a.reason(1, &format!("r{i}"));
        }
        assert_eq!(a.reasons[1].len(), MAX_REASONS + 1);
        assert_eq!(a.reasons[1][OTHER], 10);
        let mut b = FlowTotals::default();
        b.reason(1, "r0");
        b.reason(0, "x");
        b.started();
        b.iteration(5, true, 1_000_000);
        b.group(2, 7, false, 1_000_000);
        a.merge(&b);
        assert_eq!(a.reasons[1]["r0"], 2);
        assert_eq!(a.reasons[0]["x"], 1);
        let total: u64 = a.reasons[1].values().sum();
        assert_eq!(total, (MAX_REASONS + 10 + 1) as u64);
        assert_eq!((a.iterations_started, a.iterations_completed), (1, 1));
        let g = a.groups[2].as_ref().unwrap();
        assert_eq!((g.count, g.errors), (1, 1));
    }

    #[test]
    fn socket_books_merge_and_balance() {
        let mut a = FlowTotals::default();
        let s = &mut a.socket(2).messages;
        s.sent += 3;
        s.answered += 2;
        s.lose("close_1011", 1);
        let mut b = FlowTotals::default();
        b.socket(2).messages.sent += 1;
        b.socket(2).messages.lose("dropped", 1);
        b.socket(0).messages.read(false);
        a.merge(&b);
        let s = &a.sockets[2].as_ref().unwrap().messages;
        assert_eq!((s.sent, s.answered, s.lost_total), (4, 2, 2));
        assert_eq!(s.sent, s.answered + s.lost_total);
        assert_eq!(s.lost.len(), 2);
        assert!(a.sockets[1].is_none());
        assert_eq!(a.sockets[0].as_ref().unwrap().messages.received, 1);
    }
}
