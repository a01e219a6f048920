//! Capacity mode: the whole server as one queue with a known throughput.
//!
//! Tests of capacity search need a server whose limit is known exactly. With `--capacity N
//! --service-time S` at most N requests are in service at once, each holds its slot for exactly
//! S, and the rest wait in arrival (FIFO) order, so the server completes at most N / S requests
//! a second and, below that, a client with C requests in flight gets C / S. The slots are one
//! schedule shared by every serving thread ([`Queue`]), so the limit holds across connections
//! and threads; waits and service times are slept on the thread's precise timer (`sleep.rs`).
//!
//! Two options build probes on it (see [`Queue`] for the exact rules): a queue limit Q sheds
//! load (503 beyond Q waiting; accepted throughput stays N / S, refused share 1 − (N / S) / λ
//! at an offered λ above it), and periodic pauses (`pause.rs`) lower capacity to
//! (N / S)·(1 − D / P).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::error::TargetError;
use crate::latency::{parse_duration, MAX_DELAY};
use crate::pause::Pause;

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
///
/// Two options change the schedule, each exactly:
///
/// - **Queue limit** (load shedding, `--queue-limit Q`): a request that would wait (its start
///   is in the future) when Q booked requests are already waiting is refused at once (503,
///   `Retry-After: 1`) and books nothing. "Waiting" is read from the schedule itself (booked
///   starts still ahead of now), not from woken tasks, so a late wake-up cannot let an extra
///   request in. Under overload the slots never idle (with Q ≥ 1 a booked request is always
///   ready to start when one falls free), so the accepted throughput stays exactly N / S and
///   the refused share of an offered rate λ > N / S is 1 − (N / S) / λ. With Q = 0 the server
///   is a loss system (Erlang B): under random arrivals slots can idle and less than N / S is
///   accepted.
/// - **Pause** (`--pause D/P`, `pause.rs`): starts and ends are moved out of the pauses, so
///   capacity is (N / S)·(1 − D / P).
#[derive(Debug)]
pub(crate) struct Queue {
    schedule: Mutex<Schedule>,
    slots: usize,
    service: Duration,
    limit: Option<usize>,
    pause: Option<Pause>,
    /// origin: the server's start, which pauses are aligned to.
    origin: Instant,
    waiting: AtomicU64,
    busy: AtomicU64,
    peak: AtomicU64,
    served: AtomicU64,
    refused: AtomicU64,
}

/// Schedule is the state behind the queue's lock.
#[derive(Debug)]
struct Schedule {
    /// free_at: when each booked slot falls free (earliest first); fewer than `slots` entries
    /// means some slot has never been used.
    free_at: BinaryHeap<Reverse<Instant>>,
    /// ahead: the starts of booked requests that had to wait, oldest first; only kept with a
    /// queue limit. Starts are booked in non-decreasing order (each is `max(now, earliest
    /// free)`, both non-decreasing under the lock), so the ones already begun are at the front.
    ahead: VecDeque<Instant>,
}

/// Booking is a request's place in the schedule: when its service starts and ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Booking {
    start: Instant,
    end: Instant,
}

/// Admission is what the queue did with a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admission {
    /// Served: the request waited for its slot and held it for the service time, which ended
    /// at the instant it carries (on the schedule, however late the thread woke).
    Served(Instant),
    /// Shed: the queue limit was reached; answer 503 at once.
    Shed,
}

/// QueueStats is what the queue saw: requests waiting now, in service now, the most ever
/// waiting at once, requests that completed their service, and requests shed by the limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct QueueStats {
    pub(crate) waiting: u64,
    pub(crate) busy: u64,
    pub(crate) peak: u64,
    pub(crate) served: u64,
    pub(crate) refused: u64,
}

impl Queue {
    pub(crate) fn new(
        capacity: Capacity,
        limit: Option<usize>,
        pause: Option<Pause>,
        origin: Instant,
    ) -> Queue {
        Queue {
            schedule: Mutex::new(Schedule {
                free_at: BinaryHeap::with_capacity(capacity.slots.min(4096)),
                ahead: VecDeque::new(),
            }),
            slots: capacity.slots,
            service: capacity.service,
            limit,
            pause,
            origin,
            waiting: AtomicU64::new(0),
            busy: AtomicU64::new(0),
            peak: AtomicU64::new(0),
            served: AtomicU64::new(0),
            refused: AtomicU64::new(0),
        }
    }

    /// book reserves the slot that falls free first (first come, first served), or `None` when
    /// the request would wait and the queue limit is reached. `now` is read under the lock, so
    /// bookings are in time order.
    fn book(&self) -> Option<Booking> {
        // Nothing panics while the lock is held, but a poisoned schedule is still valid.
        let mut schedule = self.schedule.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        self.book_at(&mut schedule, now)
    }

    /// book_at is `book` at a given time (tests inject it).
    fn book_at(&self, schedule: &mut Schedule, now: Instant) -> Option<Booking> {
        let free = if schedule.free_at.len() < self.slots {
            now
        } else {
            schedule.free_at.peek().map_or(now, |Reverse(free)| *free)
        };
        let start = self.start_at(free.max(now));
        if let Some(limit) = self.limit {
            while schedule.ahead.front().is_some_and(|begun| *begun <= now) {
                schedule.ahead.pop_front();
            }
            if start > now {
                if schedule.ahead.len() >= limit {
                    return None;
                }
                schedule.ahead.push_back(start);
            }
        }
        if schedule.free_at.len() >= self.slots {
            schedule.free_at.pop();
        }
        let end = self.end_of(start);
        schedule.free_at.push(Reverse(end));
        Some(Booking { start, end })
    }

    /// start_at moves a start out of a pause.
    fn start_at(&self, at: Instant) -> Instant {
        match &self.pause {
            None => at,
            Some(pause) => self.instant(pause.start_at(self.nanos(at))),
        }
    }

    /// end_of is when a service started at `start` completes (later by any pauses it spans).
    fn end_of(&self, start: Instant) -> Instant {
        match &self.pause {
            None => start + self.service,
            Some(pause) => self.instant(pause.finish(self.nanos(start), self.service.as_nanos())),
        }
    }

    fn nanos(&self, at: Instant) -> u128 {
        at.saturating_duration_since(self.origin).as_nanos()
    }

    fn instant(&self, nanos: u128) -> Instant {
        // u64 nanoseconds reach 584 years past the server's start.
        let since = Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX));
        self.origin
            .checked_add(since)
            .unwrap_or(self.origin + MAX_DELAY)
    }

    /// serve waits for a slot, then holds it for the service time; or sheds the request.
    pub(crate) async fn serve(&self) -> io::Result<Admission> {
        let Some(Booking { start, end }) = self.book() else {
            self.refused.fetch_add(1, Ordering::Relaxed);
            return Ok(Admission::Shed);
        };
        if start > Instant::now() {
            let _waiting = Gauge::enter(&self.waiting, Some(&self.peak));
            crate::sleep::until(start).await?;
        }
        let busy = Gauge::enter(&self.busy, None);
        crate::sleep::until(end).await?;
        drop(busy);
        self.served.fetch_add(1, Ordering::Relaxed);
        Ok(Admission::Served(end))
    }

    pub(crate) fn stats(&self) -> QueueStats {
        QueueStats {
            waiting: self.waiting.load(Ordering::Relaxed),
            busy: self.busy.load(Ordering::Relaxed),
            peak: self.peak.load(Ordering::Relaxed),
            served: self.served.load(Ordering::Relaxed),
            refused: self.refused.load(Ordering::Relaxed),
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

    /// The queue limit reads waiting requests from the schedule: with 2 slots of 10 ms and
    /// Q = 2, arrivals at one instant get 2 services, 2 waits, then refusals; once the first
    /// services end, the waiting ones start and room opens for two more.
    #[test]
    fn queue_limit_sheds_beyond_q_waiting() {
        let ms = Duration::from_millis;
        let origin = Instant::now();
        let cap = Capacity {
            slots: 2,
            service: ms(10),
        };
        let queue = Queue::new(cap, Some(2), None, origin);
        let mut schedule = queue.schedule.lock().expect("lock");
        // (arrival after origin, want start after origin or None for shed)
        let cases: &[(Duration, Option<Duration>)] = &[
            (ms(0), Some(ms(0))),
            (ms(0), Some(ms(0))),
            (ms(0), Some(ms(10))),
            (ms(0), Some(ms(10))),
            (ms(0), None),
            (ms(5), None),
            // At 10 ms the two waiting ones have started: two may wait again.
            (ms(10), Some(ms(20))),
            (ms(10), Some(ms(20))),
            (ms(10), None),
        ];
        for (i, (at, want)) in cases.iter().enumerate() {
            let got = queue.book_at(&mut schedule, origin + *at);
            assert_eq!(
                got.map(|b| b.start - origin),
                *want,
                "arrival {i} at {at:?}"
            );
            if let Some(booking) = got {
                assert_eq!(booking.end - booking.start, ms(10));
            }
        }
    }

    /// Q = 0 is a loss system: a request is served only if a slot is free on arrival.
    #[test]
    fn queue_limit_zero_never_waits() {
        let ms = Duration::from_millis;
        let origin = Instant::now();
        let cap = Capacity {
            slots: 1,
            service: ms(10),
        };
        let queue = Queue::new(cap, Some(0), None, origin);
        let mut schedule = queue.schedule.lock().expect("lock");
        let arrivals = [(0, true), (9, false), (10, true), (15, false), (20, true)];
        for (at, served) in arrivals {
            let got = queue.book_at(&mut schedule, origin + ms(at));
            assert_eq!(got.is_some(), served, "arrival at {at} ms");
        }
    }

    /// With a pause, bookings move out of it and services stretch over it (exact instants).
    #[test]
    fn pauses_move_bookings() {
        let ms = Duration::from_millis;
        let origin = Instant::now();
        let cap = Capacity {
            slots: 1,
            service: ms(30),
        };
        let pause = Pause {
            hold: ms(50),
            every: ms(100),
        };
        let queue = Queue::new(cap, None, Some(pause), origin);
        let mut schedule = queue.schedule.lock().expect("lock");
        // (arrival, start, end): serving 50..100, 150..200, 250..: 50-80, 80-160 (paused 100-150),
        // 160-190, 190-270 (paused 200-250)
        let cases = [(0, 50, 80), (0, 80, 160), (0, 160, 190), (0, 190, 270)];
        for (at, start, end) in cases {
            let got = queue
                .book_at(&mut schedule, origin + ms(at))
                .expect("no limit");
            assert_eq!(
                (got.start - origin, got.end - origin),
                (ms(start), ms(end)),
                "arrival at {at} ms"
            );
        }
    }
}
