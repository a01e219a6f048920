//! `grpc_call`: a gRPC method's request prepared from a `.proto` read at run time
//! (`redline_engine::grpc::prepare`), for the run config the Python package then builds.

use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::errors::engine_err;

/// grpc_call(proto, method, data, includes) -> (path, body, server_streaming, input,
/// client_streaming, messages): compiles `proto` (imports beside it, then in `includes`),
/// finds `method` (`package.Service/Method`) and encodes the JSON `data` as its input message
/// (a client stream's array as its messages), framed. A mistake is a ConfigError of one line.
#[pyfunction]
#[pyo3(signature = (proto, method, data, includes = Vec::new()))]
pub fn grpc_call<'py>(
    py: Python<'py>,
    proto: PathBuf,
    method: &str,
    data: &str,
    includes: Vec<PathBuf>,
) -> PyResult<(String, Bound<'py, PyBytes>, bool, String, bool, usize)> {
    let call =
        redline_engine::grpc::prepare(&proto, &includes, method, data).map_err(engine_err)?;
    Ok((
        call.path,
        PyBytes::new(py, &call.body),
        call.server_streaming,
        call.input,
        call.client_streaming,
        call.messages,
    ))
}
