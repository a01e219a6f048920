//! Histogram helpers for Python: merge serialised HdrHistograms and read quantiles from them,
//! so reports and the capacity search can combine runs without a Python HdrHistogram library.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use pyo3::prelude::*;
use redline_engine::hdr::LatencySummary;

use crate::errors::ConfigError;

fn decode(b64: &str) -> PyResult<Histogram<u64>> {
    let bytes = STANDARD
        .decode(b64.trim())
        .map_err(|e| ConfigError::new_err(format!("histogram is not base64: {e}")))?;
    Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| ConfigError::new_err(format!("not a serialised HdrHistogram: {e:?}")))
}

/// merge_histograms(list_of_b64) -> b64: adds serialised histograms (same units) into one.
#[pyfunction]
pub fn merge_histograms(histograms: Vec<String>) -> PyResult<String> {
    let mut iter = histograms.iter();
    let first = iter
        .next()
        .ok_or_else(|| ConfigError::new_err("merge_histograms needs at least one histogram"))?;
    let mut total = decode(first)?;
    total.auto(true);
    for h in iter {
        total
            .add(decode(h)?)
            .map_err(|e| ConfigError::new_err(format!("cannot merge histograms: {e:?}")))?;
    }
    let mut out = Vec::new();
    V2DeflateSerializer::new()
        .serialize(&total, &mut out)
        .map_err(|e| ConfigError::new_err(format!("cannot serialise histogram: {e:?}")))?;
    Ok(STANDARD.encode(out))
}

/// histogram_quantiles(b64, quantiles) -> (count, [values]): values at the given quantiles
/// (0..=1), in the histogram's unit (microseconds for redline's latency histograms).
#[pyfunction]
pub fn histogram_quantiles(histogram: &str, quantiles: Vec<f64>) -> PyResult<(u64, Vec<u64>)> {
    let h = decode(histogram)?;
    if let Some(q) = quantiles.iter().find(|q| !(0.0..=1.0).contains(*q)) {
        return Err(ConfigError::new_err(format!(
            "quantile {q} is outside 0..=1"
        )));
    }
    Ok((
        h.len(),
        quantiles.iter().map(|q| h.value_at_quantile(*q)).collect(),
    ))
}

/// histogram_summary(b64) -> json: the report's latency summary (min, mean, stdev,
/// percentiles, max; ms) of a serialised µs histogram, so a report merged from several runs
/// reads as one run's (the engine's own LatencySummary, no second copy in Python).
#[pyfunction]
pub fn histogram_summary(histogram: &str) -> PyResult<String> {
    let h = decode(histogram)?;
    serde_json::to_string(&LatencySummary::from_histogram(&h))
        .map_err(|e| ConfigError::new_err(format!("cannot serialise the summary: {e}")))
}
