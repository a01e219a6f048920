//! `run_socket`: one WebSocket run (`redline_engine::socket`) from Python without holding the
//! GIL; Ctrl-C stops it and still returns the report of what ran.

use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pyo3::exceptions::PyKeyboardInterrupt;
use pyo3::prelude::*;
use redline_engine::socket::{self, SocketConfig};
use redline_engine::RunControl;

use crate::errors::{engine_err, RedlineError};
use crate::run::read_typed;

/// SIGNAL_POLL is how often the waiting thread wakes to notice Ctrl-C.
const SIGNAL_POLL: Duration = Duration::from_millis(100);

/// run_socket(config) -> report_json: runs the WebSocket load `config` describes (a dict, the
/// engine's SocketConfig, typed in Python as `redline.sockets.config.SocketConfig` and read in
/// the boundary's one conversion, [`read_typed`]) and returns its SocketReport as JSON.
#[pyfunction]
pub fn run_socket(py: Python<'_>, config: &Bound<'_, PyAny>) -> PyResult<String> {
    let config: SocketConfig = read_typed(config, "socket")?;
    let control = Arc::new(RunControl::new());
    let (tx, rx) = mpsc::channel();
    let engine_control = Arc::clone(&control);
    let worker = std::thread::Builder::new()
        .name("redline-ws".into())
        .spawn(move || {
            // A closed receiver only means Python stopped waiting.
            let _ = tx.send(socket::run(&config, engine_control));
        })
        .map_err(|e| RedlineError::new_err(format!("cannot start the engine thread: {e}")))?;
    // The receiver is only used from this thread; the Mutex makes it `Sync` for allow_threads.
    let rx = Mutex::new(rx);
    let mut pending: Option<PyErr> = None;
    let outcome = loop {
        let next = py.allow_threads(|| match rx.lock() {
            Ok(rx) => rx.recv_timeout(SIGNAL_POLL),
            Err(_) => Err(RecvTimeoutError::Disconnected),
        });
        match next {
            Ok(outcome) => break Some(outcome),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break None,
        }
        if let Err(e) = py.check_signals() {
            control.stop();
            // Ctrl-C is a request to stop, not a failure: the report of what ran comes back.
            if !e.is_instance_of::<PyKeyboardInterrupt>(py) && pending.is_none() {
                pending = Some(e);
            }
        }
    };
    let _ = py.allow_threads(|| worker.join());
    if let Some(e) = pending {
        return Err(e);
    }
    let report = outcome
        .ok_or_else(|| RedlineError::new_err("the socket engine thread panicked"))?
        .map_err(engine_err)?;
    serde_json::to_string(&report)
        .map_err(|e| RedlineError::new_err(format!("cannot serialise the report: {e}")))
}
