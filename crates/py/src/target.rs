//! `Target`: the bundled test server (`redline-target`) as a Python object.

use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::time::Duration;

use redline_target::{Capacity, Contention, Pause, RateLimit, TargetConfig, TargetError, TlsFiles};

use crate::errors::{ConfigError, RedlineError};

/// Target(host="127.0.0.1", port=0, threads=None, tls_cert=None, tls_key=None, capacity=None,
/// service_time=None, queue_limit=None, pause=None, contention=None, serial=None,
/// rate_limit=None, burst=None, refuse_status=None, fail_every=None, idle_timeout=None,
/// http2=False): starts redline's target server in
/// background threads (https with the PEM certificate and key, offering h2 by ALPN too with
/// `http2`, as gRPC over TLS needs; h2c is always answered; a queue of `capacity` slots of
/// `service_time` seconds each, shedding beyond `queue_limit` waiting and stopping for
/// `pause` ("D/P"); or USL `contention` (κ) and `serial` (σ) over `service_time`; a token
/// bucket of `rate_limit` a second and `burst` in front, refusing with `refuse_status`; the
/// task app failing every `fail_every`-th fresh task; HTTP/1.1 connections closed after
/// `idle_timeout` seconds without a request);
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
    #[pyo3(signature = (host="127.0.0.1".to_string(), port=0, threads=None, tls_cert=None, tls_key=None, capacity=None, service_time=None, queue_limit=None, pause=None, contention=None, serial=None, rate_limit=None, burst=None, refuse_status=None, fail_every=None, idle_timeout=None, http2=false))]
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
        queue_limit: Option<usize>,
        pause: Option<String>,
        contention: Option<f64>,
        serial: Option<f64>,
        rate_limit: Option<f64>,
        burst: Option<u32>,
        refuse_status: Option<u32>,
        fail_every: Option<u64>,
        idle_timeout: Option<f64>,
        http2: bool,
    ) -> PyResult<Self> {
        if threads == Some(0) {
            return Err(ConfigError::new_err("threads must be at least 1"));
        }
        let tls = tls_files(tls_cert, tls_key)?;
        if http2 && tls.is_none() {
            return Err(ConfigError::new_err(
                "http2 offers h2 by ALPN over TLS: give tls_cert and tls_key (h2c is always answered)",
            ));
        }
        let (capacity, contention) = service_model(capacity, service_time, contention, serial)?;
        let rate_limit = token_bucket(rate_limit, burst, refuse_status)?;
        let pause = pause
            .as_deref()
            .map(Pause::parse)
            .transpose()
            .map_err(|e| ConfigError::new_err(e.to_string()))?;
        let idle_timeout = idle_timeout
            .map(|seconds| {
                Duration::try_from_secs_f64(seconds).map_err(|_| {
                    ConfigError::new_err(format!("idle_timeout: bad duration {seconds}"))
                })
            })
            .transpose()?;
        let cfg = TargetConfig {
            host,
            port,
            threads,
            tls,
            capacity,
            queue_limit,
            pause,
            contention,
            rate_limit,
            fail_every,
            idle_timeout,
            http2,
            ..TargetConfig::default()
        };
        let inner = py
            .allow_threads(|| redline_target::Target::start(cfg))
            .map_err(|e| match e {
                TargetError::Capacity(_)
                | TargetError::Pause(_)
                | TargetError::Contention(_)
                | TargetError::RateLimit(_)
                | TargetError::Tasks(_)
                | TargetError::Idle(_) => ConfigError::new_err(e.to_string()),
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

/// tls_files: the certificate and key, given both or neither.
fn tls_files(
    cert: Option<std::path::PathBuf>,
    key: Option<std::path::PathBuf>,
) -> PyResult<Option<TlsFiles>> {
    match (cert, key) {
        (Some(cert), Some(key)) => Ok(Some(TlsFiles { cert, key })),
        (None, None) => Ok(None),
        _ => Err(ConfigError::new_err("tls_cert and tls_key go together")),
    }
}

/// service_model: the queue of `capacity` slots or the USL contention, whichever the
/// arguments give, each over `service_time`.
fn service_model(
    capacity: Option<usize>,
    service_time: Option<f64>,
    contention: Option<f64>,
    serial: Option<f64>,
) -> PyResult<(Option<Capacity>, Option<Contention>)> {
    let service = service_time
        .map(|seconds| {
            Duration::try_from_secs_f64(seconds)
                .map_err(|_| ConfigError::new_err(format!("service_time: bad duration {seconds}")))
        })
        .transpose()?;
    let capacity = match (capacity, service, contention) {
        (Some(slots), Some(service), _) => Some(Capacity { slots, service }),
        (None, None, _) | (None, Some(_), Some(_)) => None,
        (Some(_), None, _) => {
            return Err(ConfigError::new_err(
                "capacity and service_time go together",
            ))
        }
        (None, Some(_), None) => {
            return Err(ConfigError::new_err(
                "service_time and capacity (or contention) go together",
            ))
        }
    };
    let contention = match (contention, service) {
        (Some(crosstalk), Some(service)) => Some(Contention {
            service,
            crosstalk,
            serial: serial.unwrap_or(0.0),
        }),
        (Some(_), None) => return Err(ConfigError::new_err("contention needs service_time")),
        (None, _) if serial.is_some() => {
            return Err(ConfigError::new_err("serial needs contention"))
        }
        (None, _) => None,
    };
    Ok((capacity, contention))
}

/// token_bucket: the rate limit in front, when `rate_limit` is given (`burst` 1 and
/// `refuse_status` 503 by default).
fn token_bucket(
    rate_limit: Option<f64>,
    burst: Option<u32>,
    refuse_status: Option<u32>,
) -> PyResult<Option<RateLimit>> {
    if rate_limit.is_none() && (burst.is_some() || refuse_status.is_some()) {
        return Err(ConfigError::new_err(
            "burst and refuse_status need rate_limit",
        ));
    }
    // A status past u16 is refused in the words `RateLimit::validate` uses for the rest.
    let status = match refuse_status.map(u16::try_from) {
        None => 503,
        Some(Ok(status)) => status,
        Some(Err(_)) => {
            let got = refuse_status.unwrap_or_default();
            return Err(ConfigError::new_err(format!(
                "rate limit: refuse status must be a 4xx or 5xx code, got {got}"
            )));
        }
    };
    Ok(rate_limit.map(|rate| RateLimit {
        rate,
        burst: burst.unwrap_or(1),
        status,
    }))
}
