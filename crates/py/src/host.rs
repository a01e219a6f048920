//! `PyHost`: the engine's [`Host`] for a scenario's Python steps (`u.python`).
//!
//! One thread of its own calls the functions, holding the GIL while it drains the calls
//! queued (up to [`BATCH`] at a time, then it lets the GIL go, so the user's main thread
//! still runs). The engine's lanes only queue a call and await its oneshot: no tokio thread
//! ever waits for the GIL. The thread ends when the run drops the host (the channel closes).

use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use pyo3::prelude::*;
use pyo3::types::PyList;
use redline_engine::scenario::host::{Answer, Call, Host, HostUsage};
use redline_engine::usage::CpuTimes;

/// BATCH bounds the calls run under one hold of the GIL.
const BATCH: usize = 64;

/// MAX_REASONS bounds the distinct failure reasons kept (the rest count under "other").
const MAX_REASONS: usize = 32;

/// PyHost calls a run's Python step functions on its thread.
pub(crate) struct PyHost {
    names: Vec<String>,
    tx: Sender<Call>,
    usage: Arc<Mutex<HostUsage>>,
}

impl PyHost {
    /// start takes the functions (`PythonCall`s: `list[str] -> list[str]`) and starts the
    /// thread that calls them.
    pub(crate) fn start(py: Python<'_>, functions: Vec<PyObject>) -> PyResult<PyHost> {
        let mut names = Vec::new();
        for f in &functions {
            let name = f
                .bind(py)
                .getattr("name")
                .and_then(|n| n.extract::<String>())
                .unwrap_or_else(|_| "python".to_string());
            names.push(name);
        }
        let n = functions.len();
        let usage = Arc::new(Mutex::new(HostUsage {
            calls: vec![0; n],
            errors: vec![0; n],
            busy: vec![std::time::Duration::ZERO; n],
            ..HostUsage::default()
        }));
        let (tx, rx) = mpsc::channel();
        let book = Arc::clone(&usage);
        std::thread::Builder::new()
            .name("redline-python".into())
            .spawn(move || serve(functions, rx, book))
            .map_err(|e| {
                crate::errors::RedlineError::new_err(format!(
                    "cannot start the Python step thread: {e}"
                ))
            })?;
        Ok(PyHost { names, tx, usage })
    }
}

impl Host for PyHost {
    fn functions(&self) -> Vec<String> {
        self.names.clone()
    }

    fn submit(&self, call: Call) {
        // A closed channel drops the call: the lane reads the dropped answer as a failure.
        let _ = self.tx.send(call);
    }

    fn usage(&self) -> HostUsage {
        self.usage
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// serve is the thread's loop: wait for a call without the GIL, then run the queued ones.
fn serve(functions: Vec<PyObject>, rx: Receiver<Call>, usage: Arc<Mutex<HostUsage>>) {
    let cpu0 = CpuTimes::thread();
    while let Ok(first) = rx.recv() {
        Python::with_gil(|py| {
            let mut next = Some(first);
            let mut done = 0;
            while let Some(call) = next {
                let start = Instant::now();
                let answer = match functions.get(call.func) {
                    Some(f) => invoke(py, f, call.args),
                    None => Err(format!("no Python function {}", call.func)),
                };
                book(&usage, call.func, start, call.queued, &answer);
                // The lane may be gone (the run ended): nobody to answer.
                let _ = call.answer.send(answer);
                done += 1;
                next = if done < BATCH {
                    rx.try_recv().ok()
                } else {
                    None
                };
            }
        });
        let cpu = CpuTimes::thread().since(&cpu0);
        usage.lock().unwrap_or_else(PoisonError::into_inner).cpu = cpu.user + cpu.sys;
    }
    // The functions are Python objects: let them go with the GIL held.
    Python::with_gil(|_| drop(functions));
}

/// invoke calls `f(args)`; an exception is the answer's reason (`TypeError: ...`).
fn invoke(py: Python<'_>, f: &PyObject, args: Vec<String>) -> Answer {
    let list = PyList::new(py, args).map_err(|e| e.to_string())?;
    f.bind(py)
        .call1((list,))
        .and_then(|r| r.extract::<Vec<String>>())
        .map_err(|e| e.to_string())
}

/// book records one call's time and outcome.
fn book(usage: &Mutex<HostUsage>, func: usize, start: Instant, queued: Instant, answer: &Answer) {
    let took = start.elapsed();
    let mut u = usage.lock().unwrap_or_else(PoisonError::into_inner);
    u.queued += start.saturating_duration_since(queued);
    if func < u.calls.len() {
        u.calls[func] += 1;
        u.busy[func] += took;
    }
    if let Err(reason) = answer {
        if func < u.errors.len() {
            u.errors[func] += 1;
        }
        let known = u.reasons.iter().position(|(r, _)| r == reason);
        match known {
            Some(i) => u.reasons[i].1 += 1,
            None if u.reasons.len() < MAX_REASONS => u.reasons.push((reason.clone(), 1)),
            None => match u.reasons.iter().position(|(r, _)| r == "other reasons") {
                Some(i) => u.reasons[i].1 += 1,
                None => u.reasons.push(("other reasons".into(), 1)),
            },
        }
    }
}
