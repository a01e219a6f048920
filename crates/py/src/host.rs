//! `PyHost`: the engine's [`Host`] for a scenario's Python steps (`u.python`).
//!
//! One thread of its own calls the functions, holding the GIL while it drains the calls
//! queued (up to [`BATCH`] at a time, then it lets the GIL go, so the user's main thread
//! still runs). The engine's lanes only queue a call and await its oneshot: no tokio thread
//! ever waits for the GIL. The thread ends when the run drops the host (the channel closes).

use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use pyo3::prelude::*;
use pyo3::types::PyList;
use redline_engine::scenario::host::{Answer, Call, Host, HostUsage};

/// BATCH bounds the calls run under one hold of the GIL.
const BATCH: usize = 64;

/// EXIT_WAIT bounds the wait for the thread to end after a run (a call under way finishes
/// first).
const EXIT_WAIT: Duration = Duration::from_secs(10);

/// MAX_REASONS bounds the distinct failure reasons kept (the rest count under "other").
const MAX_REASONS: usize = 32;

/// PyHost calls a run's Python step functions on its thread.
pub(crate) struct PyHost {
    names: Vec<String>,
    tx: Sender<Call>,
    usage: Arc<Mutex<HostUsage>>,
    /// clock: the thread's CPU clock, read when the usage is asked for (so the thread makes
    /// no system call of its own to book it).
    clock: Option<libc::clockid_t>,
}

impl PyHost {
    /// start takes the functions (`PythonCall`s: `list[str] -> list[str]`) and starts the
    /// thread that calls them; the [`HostExit`] is for waiting for its end after the run.
    pub(crate) fn start(py: Python<'_>, functions: Vec<PyObject>) -> PyResult<(PyHost, HostExit)> {
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
        let (ended, exit) = mpsc::channel::<()>();
        let book = Arc::clone(&usage);
        let thread = std::thread::Builder::new()
            .name("redline-python".into())
            .spawn(move || {
                serve(functions, rx, book);
                drop(ended);
            })
            .map_err(|e| {
                crate::errors::RedlineError::new_err(format!(
                    "cannot start the Python step thread: {e}"
                ))
            })?;
        let clock = thread_clock(&thread);
        let host = PyHost {
            names,
            tx,
            usage,
            clock,
        };
        Ok((host, HostExit(exit)))
    }
}

/// HostExit is the end of a host's thread. The run waits for it (the engine has dropped the
/// host by then, which ends the thread's loop), so the thread has let the GIL and its thread
/// state go before Python may finalize: a thread that asks for the GIL while the interpreter
/// finalizes is ended by `pthread_exit`, which aborts the process through Rust's frames.
pub(crate) struct HostExit(Receiver<()>);

impl HostExit {
    /// wait waits, without the GIL, for the thread to end (at most [`EXIT_WAIT`]).
    pub(crate) fn wait(self, py: Python<'_>) {
        let HostExit(ended) = self;
        py.allow_threads(move || {
            // Disconnected is the end; a timeout leaves the thread to end by itself.
            let _ = ended.recv_timeout(EXIT_WAIT);
        });
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
        let mut u = self
            .usage
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        u.cpu = self.clock.and_then(cpu_time).unwrap_or_default();
        u
    }
}

/// serve is the thread's loop: wait for a call without the GIL, then run the queued ones.
///
/// The thread takes the GIL once, for its life, and lets it go while it waits
/// (`allow_threads`): a `with_gil` per wake-up would make and free a Python thread state
/// each time (PyGILState_Release frees it, and its frame stack with it).
fn serve(functions: Vec<PyObject>, rx: Receiver<Call>, usage: Arc<Mutex<HostUsage>>) {
    Python::with_gil(|py| {
        let mut rx = rx;
        loop {
            // The receiver goes into the closure and back: `allow_threads` asks that what it
            // borrows be Sync, which a Receiver is not.
            let (back, first) = py.allow_threads(move || {
                let first = rx.recv();
                (rx, first)
            });
            rx = back;
            let Ok(first) = first else { break };
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
        }
        // The functions are Python objects: let them go with the GIL held.
        drop(functions);
    });
}

/// thread_clock is the CPU clock of `thread` (None where the OS has none to give).
fn thread_clock<T>(thread: &std::thread::JoinHandle<T>) -> Option<libc::clockid_t> {
    use std::os::unix::thread::JoinHandleExt;
    let mut clock: libc::clockid_t = 0;
    // SAFETY: the thread has not ended (it runs until `tx`, which the caller still holds, is
    // dropped), so its pthread_t is valid; `clock` is a valid out pointer.
    let rc = unsafe { libc::pthread_getcpuclockid(thread.as_pthread_t(), &mut clock) };
    (rc == 0).then_some(clock)
}

/// cpu_time reads a thread's CPU clock (None once the thread has ended).
fn cpu_time(clock: libc::clockid_t) -> Option<std::time::Duration> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec.
    let rc = unsafe { libc::clock_gettime(clock, &mut ts) };
    (rc == 0).then(|| {
        std::time::Duration::new(
            ts.tv_sec.max(0) as u64,
            ts.tv_nsec.clamp(0, 999_999_999) as u32,
        )
    })
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
