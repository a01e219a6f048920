//! When the next request goes out: one [`Pacer`] abstraction for every load model.
//!
//! Modelled on vegeta's `Pacer` (`Pace(elapsed, hits) -> (wait, stop)`): the worker loop asks
//! the pacer, after each request, what to do next. The closed model answers "now" (or "idle
//! until the ramp reaches you"); the open model answers "hit N is due at time T", and the loop
//! measures latency from T even when it could only send later. Ramps (k6-style stages) are a
//! piecewise-linear [`Profile`] shared by both models, so adding a new shape means adding a
//! profile, not another loop.
//!
//! Pacers are pure functions of (elapsed, hits, lane): the tests inject times, nothing sleeps.

use std::time::Duration;

use serde::Deserialize;

/// Stage is one leg of a ramp: move linearly to `target` over `duration_s`, like k6's stages.
/// The target is VUs in the closed model and requests per second in the open model.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Stage {
    /// duration_s: how long this leg lasts, in seconds (> 0).
    pub duration_s: f64,
    /// target: the VU count or rate reached at the end of the leg (>= 0).
    pub target: f64,
}

/// Pace is a pacer's answer to "what next?".
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pace {
    /// Now: send immediately; latency counts from the actual send (closed model).
    Now,
    /// Due: the hit is due at this offset from the start. Wait until then if it is in the
    /// future; if it is already past, send at once and still time it from this offset.
    Due(Duration),
    /// Idle: this lane has nothing to do until this offset (a closed-model ramp); ask again then.
    Idle(Duration),
    /// Stop: the schedule is over for this lane.
    Stop,
}

/// Pacer defines when the hits of one worker thread go out.
///
/// `hits` is how many hits this thread has already claimed; `lane` is the global index of the
/// asking VU/connection. Implementations must be cheap: this is called once per request.
pub trait Pacer {
    /// pace returns what the lane should do next, given the time since start and hits so far.
    fn pace(&self, elapsed: Duration, hits: u64, lane: u32) -> Pace;
}

/// Segment is one linear leg of a [`Profile`].
#[derive(Debug, Clone, Copy, PartialEq)]
struct Segment {
    start: f64,
    dur: f64,
    from: f64,
    to: f64,
    /// Integral of the profile up to `start` (hits before this leg, for rates).
    before: f64,
}

impl Segment {
    fn value_at(&self, t: f64) -> f64 {
        if self.dur.is_infinite() || self.from == self.to {
            return self.from;
        }
        self.from + (self.to - self.from) * ((t - self.start) / self.dur).clamp(0.0, 1.0)
    }

    /// Integral of the leg from its start to `start + tau`.
    fn area(&self, tau: f64) -> f64 {
        if self.dur.is_infinite() || self.from == self.to {
            return self.from * tau;
        }
        self.from * tau + (self.to - self.from) * tau * tau / (2.0 * self.dur)
    }

    fn end(&self) -> f64 {
        self.start + self.dur
    }
}

/// Profile is a piecewise-linear function of time: VUs for the closed model, requests per
/// second for the open one. Stages ramp from 0 at time 0, like k6's ramping executors.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    segments: Vec<Segment>,
}

impl Profile {
    /// constant is a flat profile at `value` that never ends by itself.
    pub fn constant(value: f64) -> Profile {
        Profile {
            segments: vec![Segment {
                start: 0.0,
                dur: f64::INFINITY,
                from: value,
                to: value,
                before: 0.0,
            }],
        }
    }

    /// from_stages ramps linearly from 0 through each stage's target; it ends with the last stage.
    pub fn from_stages(stages: &[Stage]) -> Profile {
        let mut segments = Vec::with_capacity(stages.len());
        let (mut start, mut from, mut before) = (0.0, 0.0, 0.0);
        for s in stages {
            let seg = Segment {
                start,
                dur: s.duration_s,
                from,
                to: s.target,
                before,
            };
            before += seg.area(seg.dur);
            start += s.duration_s;
            from = s.target;
            segments.push(seg);
        }
        Profile { segments }
    }

    /// end is when the profile stops (None when it runs until another limit stops it).
    pub fn end(&self) -> Option<Duration> {
        let e = self.segments.last().map_or(0.0, Segment::end);
        e.is_finite().then(|| Duration::from_secs_f64(e))
    }

    /// peak is the largest value the profile reaches.
    pub fn peak(&self) -> f64 {
        self.segments
            .iter()
            .map(|s| s.from.max(s.to))
            .fold(0.0, f64::max)
    }

    /// segment_at is the leg covering `t` (the last leg after the end). A binary search: a
    /// live profile grows a leg or two per retarget, and this runs once per request.
    fn segment_at(&self, t: f64) -> Option<&Segment> {
        let i = self.segments.partition_point(|s| s.end() <= t);
        self.segments.get(i).or(self.segments.last())
    }

    /// retarget cuts the profile at `at` seconds and continues from there: a linear ramp from
    /// the value at `at` to `to` over `ramp` seconds, then a hold at `to` that never ends by
    /// itself. Everything before `at` stays as it was, so the integral (the open model's count
    /// of hits due) is continuous across the change: no burst, no gap.
    pub fn retarget(&mut self, at: f64, to: f64, ramp: f64) {
        let at = at.max(0.0);
        let from = self.value(at);
        let before = self.cumulative(at);
        let end = self.segments.last().map_or(0.0, Segment::end);
        self.segments.retain(|s| s.start < at);
        if let Some(last) = self.segments.last_mut() {
            if last.end() > at {
                last.to = last.value_at(at);
                last.dur = at - last.start;
            }
        }
        let mut start = at;
        if end < at {
            // The profile had ended: nothing was due in between.
            self.segments.push(Segment {
                start: end,
                dur: at - end,
                from: 0.0,
                to: 0.0,
                before,
            });
        }
        let from = if end < at { 0.0 } else { from };
        let mut before = before;
        if ramp > 0.0 {
            let leg = Segment {
                start,
                dur: ramp,
                from,
                to,
                before,
            };
            before += leg.area(ramp);
            start += ramp;
            self.segments.push(leg);
        }
        self.segments.push(Segment {
            start,
            dur: f64::INFINITY,
            from: to,
            to,
            before,
        });
    }

    /// slope is the profile's rate of change at `t` (per second; 0 on a flat leg or after
    /// the end).
    pub fn slope(&self, t: f64) -> f64 {
        match self.segment_at(t) {
            Some(s) if t < s.end() && !s.dur.is_infinite() && s.dur > 0.0 => {
                (s.to - s.from) / s.dur
            }
            _ => 0.0,
        }
    }

    /// value is the profile at `t` seconds (the last target after the end).
    pub fn value(&self, t: f64) -> f64 {
        match self.segment_at(t) {
            Some(s) if t < s.end() => s.value_at(t),
            Some(s) => s.to,
            None => 0.0,
        }
    }

    /// cumulative is the integral from 0 to `t`: for a rate profile, the hits due by `t`.
    pub fn cumulative(&self, t: f64) -> f64 {
        match self.segment_at(t) {
            Some(s) => s.before + s.area((t.min(s.end()) - s.start).max(0.0)),
            None => 0.0,
        }
    }

    /// time_of is the first time the cumulative reaches `h` (when hit number `h` is due),
    /// or None if the profile ends first. It inverts the integral of each leg in closed form.
    pub fn time_of(&self, h: f64) -> Option<f64> {
        // Legs whose integral ends below `h` cannot hold it: skip them in one binary search.
        let first = self
            .segments
            .partition_point(|s| h > s.before + s.area(s.dur));
        for s in &self.segments[first..] {
            let total = s.area(s.dur);
            if h > s.before + total {
                continue;
            }
            let need = h - s.before;
            if need <= 0.0 {
                return Some(s.start);
            }
            let tau = if s.dur.is_infinite() || s.from == s.to {
                if s.from <= 0.0 {
                    continue;
                }
                need / s.from
            } else {
                // Solve from*tau + a*tau^2 = need with a = (to-from)/(2 dur); this form stays
                // stable when `a` is tiny or negative.
                let a = (s.to - s.from) / (2.0 * s.dur);
                let disc = (s.from * s.from + 4.0 * a * need).max(0.0);
                2.0 * need / (s.from + disc.sqrt())
            };
            return Some(s.start + tau.min(s.dur));
        }
        None
    }

    /// next_above is the first time at or after `t` when the profile exceeds `level`
    /// (when closed-model VU number `level` becomes active), or None if it never does.
    pub fn next_above(&self, level: f64, t: f64) -> Option<f64> {
        let first = self.segments.partition_point(|s| s.end() <= t);
        for s in &self.segments[first..] {
            let t0 = t.max(s.start);
            if s.value_at(t0) > level {
                return Some(t0);
            }
            if s.to > level && s.to > s.from && !s.dur.is_infinite() {
                let cross = s.start + (level - s.from) / (s.to - s.from) * s.dur;
                // Just past the crossing, where the value is strictly above `level`.
                let after = cross + s.dur * 1e-9 + 1e-9;
                return Some(after.max(t0).min(s.end()));
            }
        }
        None
    }
}

/// Stride maps a thread's local hit numbers onto the global schedule: thread `offset` of
/// `stride` owns global hits `offset, offset+stride, ...`, so threads interleave evenly and a
/// request limit splits exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stride {
    /// stride: the number of worker threads.
    pub stride: u64,
    /// offset: this thread's index.
    pub offset: u64,
}

impl Stride {
    fn global(&self, hits: u64) -> u64 {
        hits.saturating_mul(self.stride).saturating_add(self.offset)
    }
}

/// OpenPacer schedules hits by a rate profile: global hit `j` is due when the integral of the
/// rate reaches `j` (so a constant rate R sends hit j at j/R).
#[derive(Debug, Clone)]
pub struct OpenPacer {
    /// rate: requests per second over time.
    pub rate: Profile,
    /// end: no hit is due at or after this offset, in seconds.
    pub end: Option<f64>,
    /// limit: total requests over all threads.
    pub limit: Option<u64>,
    /// stride: this thread's share.
    pub stride: Stride,
    /// recheck: a live run (the rate may change later): a hit that the current rate puts
    /// at or after the end (a trickle, a rate of 0) idles its lane for this long and asks
    /// again, instead of stopping it for good. Without it a search's trickle between two
    /// steps ended every lane whose next hit fell past the run's planned end, and a thread
    /// left with none sent nothing for the rest of the run (seen: an immediate server's
    /// recovery check at 46,100 req/s got exactly half, read as "no-recovery").
    pub recheck: Option<f64>,
}

impl OpenPacer {
    /// due_by is how many of this thread's hits are due at or before `elapsed` (within the
    /// run's end and request limit): what the thread should have sent by then.
    pub fn due_by(&self, elapsed: Duration) -> u64 {
        // Global hit j is due by t when the integral of the rate has reached j; hits due at
        // or after the end are never sent (see `pace`).
        let t = elapsed.as_secs_f64();
        let mut last = match self.end {
            Some(e) if t >= e => self.rate.cumulative(e).ceil() - 1.0,
            _ => self.rate.cumulative(t).floor(),
        };
        if let Some(n) = self.limit {
            last = last.min(n as f64 - 1.0);
        }
        if last < 0.0 || (last as u64) < self.stride.offset {
            return 0;
        }
        (last as u64 - self.stride.offset) / self.stride.stride + 1
    }
}

impl Pacer for OpenPacer {
    fn pace(&self, elapsed: Duration, hits: u64, _lane: u32) -> Pace {
        let global = self.stride.global(hits);
        // Nothing leaves after the end, not even a backlog of hits that fell due before it:
        // the run is over, and the shortfall shows as achieved < intended.
        let over = self.end.is_some_and(|e| elapsed.as_secs_f64() >= e);
        if over || self.limit.is_some_and(|n| global >= n) {
            return Pace::Stop;
        }
        match self.rate.time_of(global as f64) {
            Some(t) if self.end.is_none_or(|e| t < e) => Pace::Due(Duration::from_secs_f64(t)),
            _ => match self.recheck.map(|r| elapsed.as_secs_f64() + r) {
                Some(at) if self.end.is_none_or(|e| at < e) => {
                    Pace::Idle(Duration::from_secs_f64(at))
                }
                _ => Pace::Stop,
            },
        }
    }
}

/// ClosedPacer runs VUs back to back: a VU whose index is below the VU profile sends now,
/// the others idle until the ramp reaches them.
#[derive(Debug, Clone)]
pub struct ClosedPacer {
    /// vus: the number of active VUs over time.
    pub vus: Profile,
    /// end: nothing is sent at or after this offset, in seconds.
    pub end: Option<f64>,
    /// limit: total requests over all threads.
    pub limit: Option<u64>,
    /// stride: this thread's share.
    pub stride: Stride,
    /// recheck: a live run (the target may rise later): a lane above the VU count idles for
    /// this long and asks again, instead of stopping for good.
    pub recheck: Option<f64>,
}

impl Pacer for ClosedPacer {
    fn pace(&self, elapsed: Duration, hits: u64, lane: u32) -> Pace {
        let t = elapsed.as_secs_f64();
        if self.limit.is_some_and(|n| self.stride.global(hits) >= n)
            || self.end.is_some_and(|e| t >= e)
        {
            return Pace::Stop;
        }
        let level = f64::from(lane);
        if self.vus.value(t) > level {
            return Pace::Now;
        }
        let next = self
            .vus
            .next_above(level, t)
            .or(self.recheck.map(|r| t + r));
        match next {
            Some(at) if self.end.is_none_or(|e| at < e) => Pace::Idle(Duration::from_secs_f64(at)),
            _ => Pace::Stop,
        }
    }
}

/// MAX_JOIN_GAP bounds the jitter of a VU joining a slow ramp (see [`AnyPacer::join_gap`]).
pub const MAX_JOIN_GAP: Duration = Duration::from_millis(100);

/// AnyPacer is the pacer a worker runs: one enum rather than a trait object, so the hot path
/// stays a direct call.
#[derive(Debug, Clone)]
pub enum AnyPacer {
    /// Closed: VUs back to back.
    Closed(ClosedPacer),
    /// Open: hits on a rate schedule.
    Open(OpenPacer),
}

impl AnyPacer {
    /// set_profile replaces the VU or rate profile (a live run's new target). Hits already
    /// claimed keep their numbers: with a profile continued by [`Profile::retarget`], the
    /// next hit's due time follows on from the last one.
    pub fn set_profile(&mut self, profile: Profile) {
        match self {
            AnyPacer::Closed(p) => p.vus = profile,
            AnyPacer::Open(p) => p.rate = profile,
        }
    }

    /// join_gap is, in the closed model, the time between two VUs joining on the ramp at
    /// `elapsed` (1 / the ramp's slope), at most [`MAX_JOIN_GAP`]; zero on a flat profile, a
    /// step, or in the open model. A joining VU's first iteration is jittered within it.
    pub fn join_gap(&self, elapsed: Duration) -> Duration {
        match self {
            AnyPacer::Closed(p) => {
                let slope = p.vus.slope(elapsed.as_secs_f64());
                if slope > 0.0 && slope.is_finite() {
                    Duration::from_secs_f64((1.0 / slope).min(MAX_JOIN_GAP.as_secs_f64()))
                } else {
                    Duration::ZERO
                }
            }
            AnyPacer::Open(_) => Duration::ZERO,
        }
    }

    /// due_by is, in the open model, how many of this thread's hits are due by `elapsed`.
    pub fn due_by(&self, elapsed: Duration) -> Option<u64> {
        match self {
            AnyPacer::Closed(_) => None,
            AnyPacer::Open(p) => Some(p.due_by(elapsed)),
        }
    }
}

impl Pacer for AnyPacer {
    fn pace(&self, elapsed: Duration, hits: u64, lane: u32) -> Pace {
        match self {
            AnyPacer::Closed(p) => p.pace(elapsed, hits, lane),
            AnyPacer::Open(p) => p.pace(elapsed, hits, lane),
        }
    }
}

#[cfg(test)]
#[path = "pacer_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "pacer_live_tests.rs"]
mod live_tests;
