//! `Target`: the bundled test server (`redline-target`) as a Python object.

use pyo3::prelude::*;
use pyo3::types::PyDict;
use redline_target::{Capacity, TargetConfig, TargetError, TlsFiles};

use crate::errors::{ConfigError, RedlineError};

/// Target(host="127.0.0.1", port=0, threads=None, tls_cert=None, tls_key=None, capacity=None,
/// service_time=None): starts redline's target server in background threads (https with the
/// PEM certificate and key; a queue of `capacity` slots of `service_time` seconds each);
/// `stop()` (or dropping it) shuts it down.
#[pyclass(module = "redline._engine")]
pub struct Target {
    inner: Option<redline_target::Target>,
    url: String,
    port: u16,
}

#[pymethods]
impl Target {
    #[new]
    #[pyo3(signature = (host="127.0.0.1".to_string(), port=0, threads=None, tls_cert=None, tls_key=None, capacity=None, service_time=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        host: String,
        port: u16,
        threads: Option<usize>,
        tls_cert: Option<std::path::PathBuf>,
        tls_key: Option<std::path::PathBuf>,
        capacity: Option<usize>,
        service_time: Option<f64>,
    ) -> PyResult<Self> {
        if threads == Some(0) {
            return Err(ConfigError::new_err("threads must be at least 1"));
        }
        let tls = match (tls_cert, tls_key) {
            (Some(cert), Some(key)) => Some(TlsFiles { cert, key }),
            (None, None) => None,
            _ => return Err(ConfigError::new_err("tls_cert and tls_key go together")),
        };
        let capacity = match (capacity, service_time) {
            (Some(slots), Some(seconds)) => {
                let service = std::time::Duration::try_from_secs_f64(seconds).map_err(|_| {
                    ConfigError::new_err(format!("service_time: bad duration {seconds}"))
                })?;
                Some(Capacity { slots, service })
            }
            (None, None) => None,
            _ => {
                return Err(ConfigError::new_err(
                    "capacity and service_time go together",
                ))
            }
        };
        let cfg = TargetConfig {
            host,
            port,
            threads,
            tls,
            capacity,
        };
        let inner = py
            .allow_threads(|| redline_target::Target::start(cfg))
            .map_err(|e| match e {
                TargetError::Capacity(_) => ConfigError::new_err(e.to_string()),
                _ => RedlineError::new_err(e.to_string()),
            })?;
        let url = inner.url();
        let port = inner.local_addr().port();
        Ok(Self {
            inner: Some(inner),
            url,
            port,
        })
    }

    /// url: "http://HOST:PORT" the server listens on.
    #[getter]
    fn url(&self) -> &str {
        &self.url
    }

    /// port: the port actually bound (useful with port=0).
    #[getter]
    fn port(&self) -> u16 {
        self.port
    }

    /// running: whether the server has not been stopped.
    #[getter]
    fn running(&self) -> bool {
        self.inner.is_some()
    }

    /// stats() -> {"requests", "connections", "queue_waiting", ...}: what the server has seen so
    /// far, the same fields as `/__stats`.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let inner = self
            .inner
            .as_ref()
            .ok_or_else(|| RedlineError::new_err("the target server is stopped"))?;
        let d = PyDict::new(py);
        for (name, value) in inner.stats().fields() {
            d.set_item(name, value)?;
        }
        Ok(d)
    }

    /// stop(): shuts the server down and joins its threads; idempotent.
    fn stop(&mut self, py: Python<'_>) {
        if let Some(inner) = self.inner.take() {
            py.allow_threads(|| inner.stop());
        }
    }
}
