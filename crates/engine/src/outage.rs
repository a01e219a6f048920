//! Outages: spans during which the target answered nothing and every attempt failed.
//!
//! A killed server shows as thousands of connect errors; without a word about *when* it
//! stopped answering, the summary's figures read as if they described a working server. Each
//! worker thread keeps a [`Watch`]: the span of failures since its last answer (any HTTP
//! status is an answer; a transport failure, a connect refused, reset or timed out, is not).
//! Once per interval the thread ships what its watch saw ([`ThreadWatch`], a few words, no
//! allocation), and the coordinator's [`Tracker`] judges the run as a whole: the target is
//! down at an interval's end when every thread that did anything in the interval has had
//! only failures since its last answer, and it is back at the first answer any thread gets.
//!
//! The evidence is judged at interval ends, so an outage shorter than an interval may go
//! unnoticed (its failures still count as errors); its start and end are the events' own
//! times, not the interval's.

use std::time::Instant;

use serde::Serialize;

use crate::failure::{ErrorClass, ErrorCounts};

/// MIN_ERRORS is how many failures, with no answer among them, make an outage: fewer are a
/// blip (one reset between two answers of a slow server), not a target that stopped.
pub const MIN_ERRORS: u64 = 3;

/// Span is one thread's run of failures since its last answer.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Span {
    /// start_s: when the target stopped answering, as this thread saw it (seconds since the
    /// run's start): its last answer, or the send of its first failed request, if later.
    pub start_s: f64,
    /// errors: the failures in the span, by class.
    pub errors: ErrorCounts,
}

/// ThreadWatch is what one thread's watch saw over one interval.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ThreadWatch {
    /// thread: the worker thread's index.
    pub thread: u32,
    /// active: the thread sent, was answered or failed in the interval (a thread whose lanes
    /// all idle is no evidence either way).
    pub active: bool,
    /// first_answer_s: the first answer in the interval (seconds since the start).
    pub first_answer_s: Option<f64>,
    /// closed: the first span an answer closed in the interval (its failures' final count).
    pub closed: Option<Span>,
    /// open: the span still open at the interval's end (only failures since the last answer).
    pub open: Option<Span>,
}

/// Watch is one thread's outage evidence (see the module doc).
#[derive(Debug, Clone, Copy)]
pub struct Watch {
    start: Instant,
    last_answer: Option<Instant>,
    seen: ThreadWatch,
}

impl Watch {
    /// new makes a watch for a run whose clock started at `start`.
    pub fn new(start: Instant) -> Self {
        Watch {
            start,
            last_answer: None,
            seen: ThreadWatch::default(),
        }
    }

    fn secs(&self, at: Instant) -> f64 {
        at.saturating_duration_since(self.start).as_secs_f64()
    }

    /// answered records an answer seen at `at`: it ends the thread's span of failures.
    /// On the request path: a branch and a store.
    pub fn answered(&mut self, at: Instant) {
        if self.seen.first_answer_s.is_none() {
            self.seen.first_answer_s = Some(self.secs(at));
        }
        if let Some(span) = self.seen.open.take() {
            self.seen.closed.get_or_insert(span);
        }
        self.last_answer = Some(at);
    }

    /// failed records a request sent at `sent_at` that failed with `class`; an HTTP error
    /// status or a failed check is an answer, not a failure (the caller says which).
    pub fn failed(&mut self, sent_at: Instant, class: ErrorClass) {
        let from = self.last_answer.map_or(sent_at, |a| a.max(sent_at));
        let start_s = self.secs(from);
        self.seen
            .open
            .get_or_insert(Span {
                start_s,
                errors: ErrorCounts::default(),
            })
            .errors
            .add(class);
    }

    /// take returns what the watch saw in the interval that ends now; an open span stays open.
    pub fn take(&mut self) -> ThreadWatch {
        let out = self.seen;
        self.seen.first_answer_s = None;
        self.seen.closed = None;
        out
    }
}

/// Outage is one span during which the target answered nothing and every attempt failed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Outage {
    /// start_s: when the target stopped answering, seconds since the start.
    pub start_s: f64,
    /// end_s: when it answered again (None: still down when the run ended).
    pub end_s: Option<f64>,
    /// error_class: the most frequent failure in the span ("connect", "reset", "timeout",
    /// "read", "write", "protocol", "goaway" or "rst_stream").
    pub error_class: &'static str,
    /// errors: failed attempts in the span, all classes.
    pub errors: u64,
    /// errors_by_class: the same, by class.
    pub errors_by_class: ErrorCounts,
}

/// Tracker judges the run's threads together, one interval at a time (see the module doc).
#[derive(Debug, Default)]
pub struct Tracker {
    /// spans: per thread, its open span as last reported.
    spans: Vec<Option<Span>>,
    /// current: when the outage under way began (confirmed once its threads' spans hold
    /// [`MIN_ERRORS`] failures).
    current: Option<f64>,
    done: Vec<Outage>,
}

/// worst is the most frequent class in `e`, by its report name.
fn worst(e: &ErrorCounts) -> &'static str {
    let classes = [
        ("connect", e.connect),
        ("reset", e.reset),
        ("timeout", e.timeout),
        ("read", e.read),
        ("write", e.write),
        ("protocol", e.protocol),
        ("goaway", e.goaway),
        ("rst_stream", e.rst_stream),
    ];
    let mut best = classes[0];
    for c in classes {
        if c.1 > best.1 {
            best = c;
        }
    }
    best.0
}

impl Tracker {
    /// interval takes every thread's watch for one interval and says whether the target is
    /// down at its end: some thread that did anything has only failed since its last answer,
    /// and none was answered last. The outage under way ends at the first answer any thread
    /// got after it began; a thread that sent and heard nothing yet (requests in flight) is
    /// evidence neither way.
    pub fn interval(&mut self, watches: &[ThreadWatch]) -> bool {
        for w in watches {
            let t = w.thread as usize;
            if self.spans.len() <= t {
                self.spans.resize(t + 1, None);
            }
        }
        if let Some(start) = self.current {
            let back = watches
                .iter()
                .filter_map(|w| w.first_answer_s)
                .filter(|&a| a >= start)
                .min_by(f64::total_cmp);
            if let Some(end) = back {
                // Each thread's span as an answer closed it, or as it stands.
                let mut errors = ErrorCounts::default();
                for (t, known) in self.spans.iter().enumerate() {
                    let w = watches.iter().find(|w| w.thread as usize == t);
                    let span = w.and_then(|w| w.closed.or(w.open)).or(*known);
                    if let Some(s) = span {
                        errors.merge(&s.errors);
                    }
                }
                self.close(Some(end), errors);
            }
        }
        for w in watches {
            self.spans[w.thread as usize] = w.open;
        }
        let up = watches
            .iter()
            .any(|w| w.active && w.open.is_none() && w.first_answer_s.is_some());
        let down = !up && watches.iter().any(|w| w.active && w.open.is_some());
        if down && self.current.is_none() {
            // It stopped answering at the latest evidence of an answer over the threads.
            let start = watches
                .iter()
                .filter(|w| w.active)
                .filter_map(|w| w.open.map(|s| s.start_s))
                .fold(0.0, f64::max);
            self.current = Some(start);
        }
        self.down_since().is_some()
    }

    fn errors(&self) -> ErrorCounts {
        let mut e = ErrorCounts::default();
        for s in self.spans.iter().flatten() {
            e.merge(&s.errors);
        }
        e
    }

    fn close(&mut self, end: Option<f64>, errors: ErrorCounts) {
        if let Some(start) = self.current.take() {
            if errors.total() >= MIN_ERRORS {
                self.done.push(Outage {
                    start_s: start,
                    end_s: end,
                    error_class: worst(&errors),
                    errors: errors.total(),
                    errors_by_class: errors,
                });
            }
        }
    }

    /// down_since is when the outage under way began, once confirmed ([`MIN_ERRORS`]).
    pub fn down_since(&self) -> Option<f64> {
        self.current.filter(|_| self.errors().total() >= MIN_ERRORS)
    }

    /// so_far is the outages ended so far.
    pub fn so_far(&self) -> &[Outage] {
        &self.done
    }

    /// finish returns the outages, the one under way at the end with no end.
    pub fn finish(mut self) -> Vec<Outage> {
        let errors = self.errors();
        self.close(None, errors);
        self.done
    }
}

#[cfg(test)]
#[path = "outage_tests.rs"]
mod tests;
