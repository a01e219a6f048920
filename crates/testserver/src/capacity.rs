//! Capacity mode: the whole server as one queue with a known throughput.
//!
//! Tests of capacity search need a server whose limit is known exactly. With `--capacity N
//! --service-time S` at most N requests are in service at once, each holds its slot for exactly
//! S, and the rest wait in arrival (FIFO) order, so the server completes at most N / S requests
//! a second and, below that, a client with C requests in flight gets C / S. The slots are one
//! schedule shared by every serving thread ([`Queue`]), so the limit holds across connections
//! and threads; waits and service times are slept on the thread's precise timer (`sleep.rs`).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::config::TargetError;
use crate::latency::{parse_duration, MAX_DELAY};

/// MAX_SLOTS bounds `Capacity::slots` (a test server needs no more).
pub const MAX_SLOTS: usize = 1_000_000;

/// Capacity makes the server a queue: `slots` requests served at once, each for `service`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capacity {
    /// slots is how many requests are served at once (N).
    pub slots: usize,
    /// service is how long each request holds its slot (S); throughput is at most N / S.
    pub service: Duration,
}

impl Capacity {
    /// parse_service reads a service time such as "10ms", "250us" or "1.5s" (for CLIs).
    pub fn parse_service(text: &str) -> Result<Duration, TargetError> {
        parse_duration(text).map_err(TargetError::Capacity)
    }

    /// validate refuses zero or absurd slot counts and service times outside (0, 1 h].
    pub(crate) fn validate(&self) -> Result<(), TargetError> {
        if !(1..=MAX_SLOTS).contains(&self.slots) {
            return Err(TargetError::Capacity(format!(
                "slots must be between 1 and {MAX_SLOTS}, got {}",
                self.slots
            )));
        }
        if self.service.is_zero() || self.service > MAX_DELAY {
            return Err(TargetError::Capacity(format!(
                "service time must be more than 0 and at most 1h, got {:?}",
                self.service
            )));
        }
        Ok(())
    }

    /// per_second is the capacity in requests a second (N / S).
    pub fn per_second(&self) -> f64 {
        self.slots as f64 / self.service.as_secs_f64()
    }
}

/// Queue is a running capacity limit: when each slot next falls free, and what passed through.
///
/// A slot schedule rather than a semaphore: with `tokio::sync::Semaphore` every hand-off waited
/// for the releasing thread's timer and then the waiter's wake-up on another thread, and that
/// delay was added to every slot's timeline: 8 slots of 10 ms under 32 clients gave 773 req/s
/// instead of 800 on a loaded 2-core box. Here each arrival books the slot that falls free
/// first, under a short lock, at `max(now, free)`, so start and end times are exact and timer
/// jitter only delays the answer, never the next request's start.
#[derive(Debug)]
pub(crate) struct Queue {
    /// free_at: when each booked slot falls free (earliest first); fewer than `slots` entries
    /// means some slot has never been used.
    free_at: Mutex<BinaryHeap<Reverse<Instant>>>,
    slots: usize,
    service: Duration,
    waiting: AtomicU64,
    busy: AtomicU64,
    peak: AtomicU64,
    served: AtomicU64,
}

/// QueueStats is what the queue saw: requests waiting now, in service now, the most ever
/// waiting at once, and requests that completed their service.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct QueueStats {
    pub(crate) waiting: u64,
    pub(crate) busy: u64,
    pub(crate) peak: u64,
    pub(crate) served: u64,
}

impl Queue {
    pub(crate) fn new(capacity: Capacity) -> Queue {
        Queue {
            free_at: Mutex::new(BinaryHeap::with_capacity(capacity.slots.min(4096))),
            slots: capacity.slots,
            service: capacity.service,
            waiting: AtomicU64::new(0),
            busy: AtomicU64::new(0),
            peak: AtomicU64::new(0),
            served: AtomicU64::new(0),
        }
    }

    /// book reserves the slot that falls free first (first come, first served) and returns
    /// when this request's service starts.
    fn book(&self, now: Instant) -> Instant {
        // Nothing panics while the lock is held, but a poisoned heap is still a valid heap.
        let mut free_at = self.free_at.lock().unwrap_or_else(PoisonError::into_inner);
        let free = if free_at.len() < self.slots {
            now
        } else {
            free_at.pop().map_or(now, |Reverse(free)| free)
        };
        let start = free.max(now);
        free_at.push(Reverse(start + self.service));
        start
    }

    /// serve waits for a slot, then holds it for the service time.
    pub(crate) async fn serve(&self) -> io::Result<()> {
        let now = Instant::now();
        let start = self.book(now);
        if start > now {
            let _waiting = Gauge::enter(&self.waiting, Some(&self.peak));
            crate::sleep::until(start).await?;
        }
        let busy = Gauge::enter(&self.busy, None);
        crate::sleep::until(start + self.service).await?;
        drop(busy);
        self.served.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    pub(crate) fn stats(&self) -> QueueStats {
        QueueStats {
            waiting: self.waiting.load(Ordering::Relaxed),
            busy: self.busy.load(Ordering::Relaxed),
            peak: self.peak.load(Ordering::Relaxed),
            served: self.served.load(Ordering::Relaxed),
        }
    }
}

/// Gauge counts a request in a state (waiting, in service) while it lives, so a request whose
/// connection is torn down mid-wait (server stop) leaves the count right.
struct Gauge<'a> {
    count: &'a AtomicU64,
}

impl<'a> Gauge<'a> {
    fn enter(count: &'a AtomicU64, peak: Option<&AtomicU64>) -> Gauge<'a> {
        let now = count.fetch_add(1, Ordering::Relaxed) + 1;
        if let Some(peak) = peak {
            peak.fetch_max(now, Ordering::Relaxed);
        }
        Gauge { count }
    }
}

impl Drop for Gauge<'_> {
    fn drop(&mut self) {
        self.count.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capacities_validate() {
        let ms = Duration::from_millis;
        let cases: &[(usize, Duration, Option<&str>)] = &[
            (8, ms(10), None),
            (1, Duration::from_micros(1), None),
            (0, ms(10), Some("slots must be between 1")),
            (MAX_SLOTS + 1, ms(10), Some("slots must be between 1")),
            (8, Duration::ZERO, Some("service time must be more than 0")),
            (8, Duration::from_secs(3601), Some("at most 1h")),
        ];
        for (slots, service, want) in cases {
            let cap = Capacity {
                slots: *slots,
                service: *service,
            };
            match (cap.validate(), want) {
                (Ok(()), None) => {}
                (Err(err), Some(want)) => {
                    let text = err.to_string();
                    assert!(text.contains(want), "{slots}/{service:?}: {text}");
                    assert!(!text.contains('\n'));
                }
                (got, want) => panic!("{slots}/{service:?}: got {got:?}, want {want:?}"),
            }
        }
        let cap = Capacity {
            slots: 8,
            service: ms(10),
        };
        assert!((cap.per_second() - 800.0).abs() < 1e-9);
        assert_eq!(Capacity::parse_service("10ms").ok(), Some(ms(10)));
        assert!(Capacity::parse_service("10").is_err());
    }
}
