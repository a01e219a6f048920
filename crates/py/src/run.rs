//! `run`: drives one engine run from Python without holding the GIL.
//!
//! The engine is blocking, so it runs on its own thread and hands each interval's snapshot
//! over a channel. This thread waits on that channel with the GIL released, and takes the GIL
//! only briefly to call the progress callback and to notice Ctrl-C (which stops the engine and
//! still returns the report of what ran).

use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use pyo3::exceptions::PyKeyboardInterrupt;
use pyo3::prelude::*;
use redline_engine::scenario::host::HostRef;
use redline_engine::{EngineError, IntervalSnapshot, Report, RunConfig, RunControl};
use serde::de::DeserializeOwned;

use crate::errors::{engine_err, ConfigError, RedlineError};
use crate::host::HostExit;

/// How often the waiting thread wakes to check for signals when no snapshot arrives.
const SIGNAL_POLL: Duration = Duration::from_millis(100);

/// EngineThread is the thread an engine run goes on; joining it gives the run's outcome.
pub(crate) type EngineThread = JoinHandle<Result<Report, EngineError>>;

/// read_config is the one conversion of the boundary: the Python `config` (a dict typed as
/// `redline.runs.config.RunConfig`) read into the engine's [`RunConfig`] by its own serde
/// `Deserialize`, as pydantic-core validates a Python value against its schema in Rust. A
/// config that does not fit (an unknown key, a value of the wrong type) is a ConfigError
/// that names the field and says what is wrong, never a panic; its values are judged later,
/// by `RunConfig::check`.
pub(crate) fn read_config(config: &Bound<'_, PyAny>) -> PyResult<RunConfig> {
    read_typed(config, "run")
}

/// read_typed is [`read_config`] for any of the engine's configs (a WebSocket run's too):
/// `what` names it in the error (`bad socket config: sockets: ...`).
pub(crate) fn read_typed<T: DeserializeOwned>(
    config: &Bound<'_, PyAny>,
    what: &str,
) -> PyResult<T> {
    // The path names the field that did not fit (`rate: must be real number, not str`).
    let mut input = pythonize::Depythonizer::from_object(config);
    serde_path_to_error::deserialize::<_, T>(&mut input)
        .map_err(|e| ConfigError::new_err(format!("bad {what} config: {e}")))
}

/// with_host reads `config` ([`read_config`]) and gives it a host for `functions`, the plan's
/// Python steps; the host's [`HostExit`] is to be waited for once the engine's thread has
/// ended.
pub(crate) fn with_host(
    py: Python<'_>,
    config: &Bound<'_, PyAny>,
    functions: Option<Vec<PyObject>>,
) -> PyResult<(RunConfig, Option<HostExit>)> {
    let mut config = read_config(config)?;
    let mut exit = None;
    if let Some(functions) = functions.filter(|f| !f.is_empty()) {
        let (host, ended) = crate::host::PyHost::start(py, functions)?;
        config.python_host = Some(HostRef(Arc::new(host)));
        exit = Some(ended);
    }
    Ok((config, exit))
}

/// spawn_engine starts `config` on its own thread named `name`, forwarding each interval's
/// snapshot as JSON over the returned channel; shared by `run` and `start_run` so both drive
/// the engine the same way.
pub(crate) fn spawn_engine(
    name: &str,
    config: RunConfig,
    control: Arc<RunControl>,
) -> PyResult<(Receiver<String>, EngineThread)> {
    let (tx, rx) = mpsc::channel::<String>();
    let worker = std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            let mut forward = |snap: &IntervalSnapshot| {
                // A closed receiver only means Python stopped listening; the run goes on.
                if let Ok(json) = serde_json::to_string(snap) {
                    let _ = tx.send(json);
                }
            };
            redline_engine::run(config, control, &mut forward)
        })
        .map_err(|e| RedlineError::new_err(format!("cannot start the engine thread: {e}")))?;
    Ok((rx, worker))
}

/// run(config, progress=None, functions=None) -> report_json: runs the load described by
/// `config` (a dict, the engine's RunConfig: [`read_config`]), calling
/// `progress(snapshot_json)` once per interval; `functions` are the plan's Python steps (see
/// [`crate::host`]).
#[pyfunction]
#[pyo3(signature = (config, progress=None, functions=None))]
pub fn run(
    py: Python<'_>,
    config: &Bound<'_, PyAny>,
    progress: Option<PyObject>,
    functions: Option<Vec<PyObject>>,
) -> PyResult<String> {
    let (config, host_exit) = with_host(py, config, functions)?;
    let control = Arc::new(RunControl::new());
    let (rx, worker) = spawn_engine("redline-run", config, Arc::clone(&control))?;

    // The receiver is only ever used from this thread; the Mutex just makes it `Sync`, which
    // `allow_threads` asks of everything its closure borrows.
    let rx = Mutex::new(rx);
    let mut pending: Option<PyErr> = None;
    loop {
        let next = py.allow_threads(|| match rx.lock() {
            Ok(rx) => rx.recv_timeout(SIGNAL_POLL),
            Err(_) => Err(RecvTimeoutError::Disconnected),
        });
        match next {
            Ok(snapshot) => {
                if let (Some(cb), None) = (&progress, &pending) {
                    if let Err(e) = cb.call1(py, (snapshot,)) {
                        control.stop();
                        if !e.is_instance_of::<PyKeyboardInterrupt>(py) {
                            pending = Some(e);
                        }
                    }
                }
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
        if let Err(e) = py.check_signals() {
            control.stop();
            // Ctrl-C is a request to stop, not a failure: the report of what ran comes back.
            if !e.is_instance_of::<PyKeyboardInterrupt>(py) && pending.is_none() {
                pending = Some(e);
            }
        }
    }
    let outcome = py
        .allow_threads(|| worker.join())
        .map_err(|_| RedlineError::new_err("the engine thread panicked"))?;
    if let Some(exit) = host_exit {
        exit.wait(py);
    }
    if let Some(e) = pending {
        return Err(e);
    }
    let report = outcome.map_err(engine_err)?;
    serde_json::to_string(&report)
        .map_err(|e| RedlineError::new_err(format!("cannot serialise the report: {e}")))
}

/// defaults() -> json: the defaults the engine applies to options left out of a run's
/// configuration (the CLI's help shows them; Python keeps no copy).
#[pyfunction]
pub fn defaults() -> String {
    redline_engine::config::defaults().to_string()
}
