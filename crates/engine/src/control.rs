//! Steering a run from outside: [`RunControl`] stops it (Ctrl-C) and, in a live run, holds
//! the [`LoadControl`] through which its load changes. [`LoadControl`] holds the run's VU or
//! rate [`Profile`]; each worker thread follows it (`worker::follow`).
//!
//! The capacity search runs one engine run for all its steps, so connections stay warm and a
//! step lasts as long as steadiness takes. The caller decides the next target; the engine only
//! obeys: [`LoadControl::set_target`] cuts the profile at "now" and appends "ramp to X over R
//! seconds, then hold" ([`Profile::retarget`]). The pacer stays a pure function of time; what
//! changes is the profile it is handed. Workers look at a version number once per
//! [`FOLLOW_TICK`], never per request, and take the lock only when it moved.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use crate::error::EngineError;
use crate::pacer::Profile;

/// FOLLOW_TICK is how often a worker thread checks for a new target: the bound on how late a
/// change starts on that thread.
pub const FOLLOW_TICK: Duration = Duration::from_millis(10);

/// CHANGE_LEAD is how far ahead of a [`LoadControl::set_target`] call its change starts: two
/// [`FOLLOW_TICK`]s, so a worker thread whose tick came a little late has installed it too.
pub const CHANGE_LEAD: Duration = Duration::from_millis(20);

/// RECHECK_S is how often, in a live closed-model run, a VU above the current count wakes to
/// see whether the count has risen (a lowered target leaves VUs idle, not gone). A new
/// target wakes them at once as well (`Shared::retarget`), so a VU joining a ramp starts at
/// its own instant on it, not at its next recheck.
pub const RECHECK_S: f64 = 0.1;

/// OPEN_RECHECK_S is how long, in a live open-model run, a lane whose next hit the current
/// rate puts past the run's end (a trickle, a rate of 0) idles before asking again. The rate
/// changes only by a new target, which wakes idle lanes at once, so this is a backstop, long
/// enough that a thousand idle lanes cost nothing.
pub const OPEN_RECHECK_S: f64 = 1.0;

/// RunControl is a shared handle to stop a run early (Ctrl-C) and, in a live run, to change
/// its load ([`RunControl::load`]); share it in an `Arc`.
#[derive(Debug, Default)]
pub struct RunControl {
    stopped: Arc<AtomicBool>,
    /// outer: the caller's flag, for a run's own handle ([`RunControl::linked`]): stopping
    /// the caller's handle stops the run, not the other way round.
    outer: Option<Arc<AtomicBool>>,
    /// signal wakes whoever waits in [`RunControl::stopped`] (shared with linked handles).
    signal: Arc<Notify>,
    load: Arc<LoadControl>,
}

impl RunControl {
    /// new makes a handle that has not been stopped.
    pub fn new() -> Self {
        RunControl::default()
    }

    /// linked is a fresh stop flag that shares this handle's load control: the run stops its
    /// workers through its own flag, while the caller's target changes reach them.
    pub(crate) fn linked(&self) -> Self {
        RunControl {
            stopped: Arc::default(),
            outer: Some(self.stopped.clone()),
            signal: self.signal.clone(),
            load: self.load.clone(),
        }
    }

    /// load is the live run's load control: `control.load().set_target(..)` changes the VUs
    /// or the rate while the run goes on (the configuration must set `live`).
    pub fn load(&self) -> &Arc<LoadControl> {
        &self.load
    }

    /// stop asks the run to stop; its workers are woken at once and the report of what ran
    /// still comes back (with `interrupted: true`).
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        self.signal.notify_waiters();
    }

    /// is_stopped says whether `stop` was called (on this handle or the one it is linked to).
    pub fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::SeqCst)
            || self
                .outer
                .as_ref()
                .is_some_and(|o| o.load(Ordering::SeqCst))
    }

    /// stopped resolves when the run is stopped: a wake-up, not a poll, so an idle worker
    /// thread sleeps until its next send.
    pub async fn stopped(&self) {
        loop {
            let signal = self.signal.notified();
            tokio::pin!(signal);
            // Registered before the flag is read, so a stop in between is not missed.
            signal.as_mut().enable();
            if self.is_stopped() {
                return;
            }
            signal.await;
        }
    }
}

/// LoadControl is the live profile of a run, shared by the caller and the worker threads.
#[derive(Debug, Default)]
pub struct LoadControl {
    /// version: bumped on every change; 0 means "the profile of the configuration".
    version: AtomicU64,
    state: Mutex<Live>,
}

/// Live is what the lock guards: the current profile and the run's start instant.
#[derive(Debug, Default)]
struct Live {
    profile: Option<Profile>,
    start: Option<Instant>,
}

impl LoadControl {
    /// new makes a control with no run behind it (set_target fails until the run begins).
    pub fn new() -> Self {
        Self::default()
    }

    fn live(&self) -> std::sync::MutexGuard<'_, Live> {
        // A panic while holding this lock cannot leave the profile half-written (retarget
        // only pushes whole legs), so a poisoned lock is still usable.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// begin makes the control live with the run's starting profile. The run calls it; a
    /// caller that starts the run on another thread may call it first, so that set_target
    /// works at once. Only the first call counts: a target set in between is kept.
    pub fn begin(&self, profile: Profile) {
        let mut live = self.live();
        if live.profile.is_none() {
            live.profile = Some(profile);
        }
    }

    /// started records the instant the run's clock started (called by the run).
    pub(crate) fn started(&self, start: Instant) {
        self.live().start = Some(start);
    }

    /// set_target moves the load to `value` (VUs in the closed model, requests per second in
    /// the open one), ramping linearly over `ramp` from the load at the moment of the call,
    /// then holding, from [`CHANGE_LEAD`] after the call. It returns the moment of the change,
    /// in seconds since the run's start, so the caller can line the per-interval snapshots
    /// up with its steps.
    pub fn set_target(&self, value: f64, ramp: Duration) -> Result<f64, EngineError> {
        if !(value.is_finite() && value > 0.0) {
            return Err(EngineError::config(format!(
                "target must be > 0, got {value}"
            )));
        }
        let ramp_s = ramp.as_secs_f64();
        if ramp_s > crate::config::MAX_SECS {
            return Err(EngineError::config(format!(
                "ramp must be under {} s",
                crate::config::MAX_SECS
            )));
        }
        let mut live = self.live();
        // The change starts CHANGE_LEAD from now, by when every worker thread has installed
        // it (each looks once per FOLLOW_TICK); until then the old profile holds, for the
        // threads and in the new profile alike. Starting it at once let the threads send
        // the old rate's hits for up to a tick past the change, and a drop to a trickle then
        // found them ahead of its schedule and sent nothing until it caught up (46,100 to
        // 5 req/s: one tick's 461 hits, over 90 s of silence).
        let at = live.start.map_or(0.0, |s| {
            s.elapsed().as_secs_f64() + CHANGE_LEAD.as_secs_f64()
        });
        let profile = live.profile.as_mut().ok_or_else(|| {
            EngineError::config("this run is not live: start it with live set to change its load")
        })?;
        profile.retarget(at, value, ramp_s);
        self.version.fetch_add(1, Ordering::Release);
        Ok(at)
    }

    /// target is the load the profile asks for now (None before a live run begins).
    pub fn target(&self) -> Option<f64> {
        let live = self.live();
        let t = live.start.map_or(0.0, |s| s.elapsed().as_secs_f64());
        live.profile.as_ref().map(|p| p.value(t))
    }

    /// version counts the changes so far; a worker compares it with the last one it applied.
    pub fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }

    /// profile is a copy of the current profile and its version (None unless live).
    pub fn profile(&self) -> Option<(u64, Profile)> {
        let live = self.live();
        // Read under the lock: set_target bumps the version while holding it.
        let v = self.version();
        live.profile.clone().map(|p| (v, p))
    }
}
