//! redline._engine: the thin PyO3 layer over `redline-engine` and `redline-target`.
//!
//! Only conversions live here: the run config in as the typed dict it is (one conversion,
//! `run::read_config`), reports and snapshots out as JSON, the GIL released while Rust works,
//! and engine errors mapped onto a small Python exception hierarchy. The typed API users see is
//! the Python package (`python/redline/`).

use pyo3::prelude::*;

mod errors;
mod grpc;
mod handle;
mod histogram;
mod host;
mod run;
mod socket;
mod target;

/// _engine: registers the functions, the `Target` class and the exception types.
#[pymodule]
fn _engine(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    // The latency buckets of the per-status figures, which the exporters' buckets are.
    m.add(
        "DURATION_BOUNDS_US",
        redline_engine::statuses::DURATION_BOUNDS_US.to_vec(),
    )?;
    // The error classes, in report order, by the keys the report counts them under; and the
    // reasons a scenario's table gives the transport failures (no response): Python reads
    // these, it keeps no copy.
    let classes = redline_engine::failure::ErrorClass::ALL;
    m.add(
        "ERROR_CLASSES",
        classes.iter().map(|c| c.key()).collect::<Vec<_>>(),
    )?;
    m.add(
        "TRANSPORT_REASONS",
        classes
            .iter()
            .filter(|c| !c.answered())
            .map(|c| c.reason())
            .collect::<Vec<_>>(),
    )?;
    errors::register(m)?;
    m.add_function(wrap_pyfunction!(run::run, m)?)?;
    m.add_function(wrap_pyfunction!(run::defaults, m)?)?;
    m.add_function(wrap_pyfunction!(socket::run_socket, m)?)?;
    m.add_function(wrap_pyfunction!(grpc::grpc_call, m)?)?;
    // gRPC's status codes by number, for the summary's names of a gRPC run's statuses.
    m.add("GRPC_CODES", redline_engine::grpc::CODES.to_vec())?;
    m.add_function(wrap_pyfunction!(handle::start_run, m)?)?;
    m.add_class::<handle::RunHandle>()?;
    m.add_function(wrap_pyfunction!(histogram::merge_histograms, m)?)?;
    m.add_function(wrap_pyfunction!(histogram::histogram_quantiles, m)?)?;
    m.add_function(wrap_pyfunction!(histogram::histogram_summary, m)?)?;
    m.add_class::<target::Target>()?;
    Ok(())
}
