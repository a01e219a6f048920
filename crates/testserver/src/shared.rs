//! shared: what every connection of every serving thread reads (below the server that makes
//! it and the connections, HTTP/1.1 and HTTP/2, that read it).

use std::time::{Duration, Instant};

use crate::bucket::Bucket;
use crate::capacity::Queue;
use crate::config::H2Faults;
use crate::contention::Crowd;
use crate::form::Sessions;
use crate::stats::{Board, TargetStats};
use crate::task::{Failing, Ids};

/// Shared is what every connection of every thread reads: the counters, the start time that
/// stall windows and pauses are aligned to, and the server-wide modes (the only things threads
/// contend on, and only when their mode is on).
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) board: Board,
    pub(crate) started: Instant,
    pub(crate) queue: Option<Queue>,
    /// crowd: the contention model.
    pub(crate) crowd: Option<Crowd>,
    /// bucket: the rate limit in front of everything.
    pub(crate) bucket: Option<Bucket>,
    pub(crate) sessions: Sessions,
    /// tasks: the task app's ids (`task.rs`).
    pub(crate) tasks: Ids,
    /// failing: the task app's every N-th failing task (`TargetConfig::fail_every`).
    pub(crate) failing: Option<Failing>,
    /// h2: the HTTP/2 faults the target misbehaves with (`http2.rs`).
    pub(crate) h2: H2Faults,
    /// idle_timeout: an HTTP/1.1 connection waiting this long for a request is closed
    /// (`TargetConfig::idle_timeout`).
    pub(crate) idle_timeout: Option<Duration>,
}

impl Shared {
    /// stats sums the threads' counters and adds the queue's.
    pub(crate) fn stats(&self) -> TargetStats {
        let mut stats = self.board.snapshot();
        if let Some(queue) = &self.queue {
            let q = queue.stats();
            stats.queue_waiting = q.waiting;
            stats.queue_busy = q.busy;
            stats.queue_peak = q.peak;
            stats.queue_served = q.served;
            stats.queue_refused = q.refused;
        }
        if let Some(crowd) = &self.crowd {
            let c = crowd.stats();
            stats.contention_busy = c.busy;
            stats.contention_peak = c.peak;
            stats.contention_served = c.served;
        }
        if let Some(bucket) = &self.bucket {
            (stats.rate_accepted, stats.rate_refused) = bucket.counts();
        }
        stats
    }
}
