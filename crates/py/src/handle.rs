//! `start_run`: a live engine run driven step by step from Python (the capacity search).
//!
//! The run goes on in its own thread; the handle hands its snapshots out one at a time
//! (`next_snapshot`, waiting with the GIL released), changes its load (`set_target`), and
//! stops it (`stop`, or Ctrl-C while waiting, or dropping the handle). `report()` waits for the
//! end and returns the report of what ran.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use pyo3::prelude::*;
use redline_engine::{EngineError, Report, RunControl};

use crate::errors::{engine_err, ConfigError, RedlineError};
use crate::host::HostExit;
use crate::run::spawn_engine;

/// How long one wait without the GIL lasts before looking at signals (Ctrl-C).
const SIGNAL_POLL: Duration = Duration::from_millis(100);

type Outcome = Result<Report, EngineError>;

/// RunHandle is a live run: its snapshots, its load control and, at the end, its report.
#[pyclass(module = "redline._engine")]
pub struct RunHandle {
    control: Arc<RunControl>,
    rx: Mutex<Receiver<String>>,
    ended: AtomicBool,
    worker: Mutex<Option<JoinHandle<Outcome>>>,
    report: Mutex<Option<String>>,
    /// host_exit: the Python step thread's end, waited for after the engine's (see
    /// [`HostExit`]).
    host_exit: Mutex<Option<HostExit>>,
}

/// start_run(config, functions=None) -> RunHandle: starts the run described by `config` (a
/// dict, the engine's RunConfig: [`crate::run::read_config`]; set `live` to change its load)
/// and returns at once; `functions` are the plan's Python steps.
#[pyfunction]
#[pyo3(signature = (config, functions=None))]
pub fn start_run(
    py: Python<'_>,
    config: &Bound<'_, PyAny>,
    functions: Option<Vec<PyObject>>,
) -> PyResult<RunHandle> {
    let (config, host_exit) = crate::run::with_host(py, config, functions)?;
    // Check here too, so a bad configuration raises from start_run, not from report().
    let checked = config.check().map_err(engine_err)?;
    let control = Arc::new(RunControl::new());
    if checked.live {
        // Live from here on: a set_target right after start_run must not race the thread.
        control.load().begin(checked.profile.clone());
    }
    let (rx, worker) = spawn_engine("redline-live", config, Arc::clone(&control))?;
    Ok(RunHandle {
        control,
        rx: Mutex::new(rx),
        ended: AtomicBool::new(false),
        worker: Mutex::new(Some(worker)),
        report: Mutex::new(None),
        host_exit: Mutex::new(host_exit),
    })
}

#[pymethods]
impl RunHandle {
    /// set_target(value, ramp_s=0.0) -> float: moves the load (VUs, or req/s in the open
    /// model) to `value` over `ramp_s` seconds; returns when the change began, in seconds
    /// since the run's start (line snapshots up with it by their `t_s`).
    #[pyo3(signature = (value, ramp_s=0.0))]
    fn set_target(&self, value: f64, ramp_s: f64) -> PyResult<f64> {
        let ramp = Duration::try_from_secs_f64(ramp_s)
            .map_err(|_| ConfigError::new_err(format!("ramp must be >= 0 s, got {ramp_s}")))?;
        self.control
            .load()
            .set_target(value, ramp)
            .map_err(engine_err)
    }

    /// target() -> float | None: the load the run is asked for now.
    fn target(&self) -> Option<f64> {
        self.control.load().target()
    }

    /// stop(): asks the run to end; the report of what ran still comes from report().
    fn stop(&self) {
        self.control.stop();
    }

    /// done: the run has ended and every snapshot has been handed out.
    #[getter]
    fn done(&self) -> bool {
        self.ended.load(Ordering::Relaxed)
    }

    /// next_snapshot(timeout_s) -> str | None: the next interval's snapshot (JSON), or None
    /// when none came within `timeout_s` or the run is over (see `done`). Ctrl-C while
    /// waiting stops the run and raises KeyboardInterrupt.
    fn next_snapshot(&self, py: Python<'_>, timeout_s: f64) -> PyResult<Option<String>> {
        let wait = Duration::try_from_secs_f64(timeout_s.max(0.0)).unwrap_or(Duration::MAX);
        let give_up = Instant::now().checked_add(wait);
        loop {
            let left = give_up.map_or(SIGNAL_POLL, |g| g.saturating_duration_since(Instant::now()));
            let slice = left.min(SIGNAL_POLL);
            let next = py.allow_threads(|| match self.rx.lock() {
                Ok(rx) => rx.recv_timeout(slice),
                Err(_) => Err(RecvTimeoutError::Disconnected),
            });
            match next {
                Ok(s) => return Ok(Some(s)),
                Err(RecvTimeoutError::Disconnected) => {
                    self.ended.store(true, Ordering::Relaxed);
                    return Ok(None);
                }
                Err(RecvTimeoutError::Timeout) => {}
            }
            if let Err(e) = py.check_signals() {
                self.control.stop();
                return Err(e);
            }
            if left <= slice {
                return Ok(None);
            }
        }
    }

    /// report() -> str: waits for the run to end (call stop() first to end it now) and
    /// returns its report (JSON); Ctrl-C while waiting stops the run. Repeatable.
    fn report(&self, py: Python<'_>) -> PyResult<String> {
        if let Some(r) = self.lock_report().as_ref() {
            return Ok(r.clone());
        }
        let handle = self.worker.lock().ok().and_then(|mut w| w.take());
        let Some(handle) = handle else {
            return Err(RedlineError::new_err("the run's report was already taken"));
        };
        while !handle.is_finished() {
            py.allow_threads(|| std::thread::sleep(Duration::from_millis(20)));
            if py.check_signals().is_err() {
                // Ctrl-C: stop now and still return what ran.
                self.control.stop();
            }
        }
        let outcome = handle
            .join()
            .map_err(|_| RedlineError::new_err("the engine thread panicked"))?;
        let exit = self.host_exit.lock().ok().and_then(|mut e| e.take());
        if let Some(exit) = exit {
            exit.wait(py);
        }
        let report = outcome.map_err(engine_err)?;
        let json = serde_json::to_string(&report)
            .map_err(|e| RedlineError::new_err(format!("cannot serialise the report: {e}")))?;
        *self.lock_report() = Some(json.clone());
        Ok(json)
    }
}

impl RunHandle {
    fn lock_report(&self) -> std::sync::MutexGuard<'_, Option<String>> {
        self.report.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for RunHandle {
    /// A handle dropped without stop() must not leave load running behind Python's back.
    fn drop(&mut self) {
        self.control.stop();
    }
}
