//! Python exception types raised by the native layer; `redline.errors` re-exports them.

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use redline_engine::EngineError;

create_exception!(
    _engine,
    RedlineError,
    PyException,
    "RedlineError: base of every redline error."
);
create_exception!(
    _engine,
    ConfigError,
    RedlineError,
    "ConfigError: the run or server configuration is invalid."
);
create_exception!(
    _engine,
    UnreachableError,
    RedlineError,
    "UnreachableError: the target cannot be resolved or connected to."
);

/// register adds the exception types to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("RedlineError", py.get_type::<RedlineError>())?;
    m.add("ConfigError", py.get_type::<ConfigError>())?;
    m.add("UnreachableError", py.get_type::<UnreachableError>())?;
    Ok(())
}

/// engine_err maps an engine error onto the Python hierarchy, keeping its one-line message.
pub fn engine_err(e: EngineError) -> PyErr {
    match e {
        EngineError::Config(_) => ConfigError::new_err(e.to_string()),
        EngineError::Unreachable(_) => UnreachableError::new_err(e.to_string()),
        other => RedlineError::new_err(other.to_string()),
    }
}
