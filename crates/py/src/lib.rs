//! redline._engine: the thin PyO3 layer over `redline-engine` and `redline-target`.
//!
//! Only conversions live here: JSON in, JSON out, the GIL released while Rust works, and
//! engine errors mapped onto a small Python exception hierarchy. The typed API users see is
//! the Python package (`python/redline/`).

use pyo3::prelude::*;

mod errors;
mod handle;
mod histogram;
mod host;
mod run;
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
    errors::register(m)?;
    m.add_function(wrap_pyfunction!(run::run, m)?)?;
    m.add_function(wrap_pyfunction!(run::defaults, m)?)?;
    m.add_function(wrap_pyfunction!(handle::start_run, m)?)?;
    m.add_class::<handle::RunHandle>()?;
    m.add_function(wrap_pyfunction!(histogram::merge_histograms, m)?)?;
    m.add_function(wrap_pyfunction!(histogram::histogram_quantiles, m)?)?;
    m.add_function(wrap_pyfunction!(histogram::histogram_summary, m)?)?;
    m.add_class::<target::Target>()?;
    Ok(())
}
