//! A flow's gRPC call (`u.grpc`, docs/protocols.md): a request step whose plan carries a
//! `grpc` block ([`GrpcSpec`]: the `.proto`, where its imports are, the method). It is a
//! request in every other way (its name, checks, extractions, timeout, tally, `when` and
//! `poll`), sent as an HTTP/2 POST of `/package.Service/Method` to a `grpc://` or `grpcs://`
//! origin (a path: the run's host, over gRPC), each VU on a connection of its own to it
//! (`lane_io.rs`), as k6's gRPC client connects per VU. What differs, resolved here:
//!
//! - the message is the step's JSON template, rendered per call and encoded through the
//!   method's descriptor ([`GrpcCall::encode`]); one without variables is encoded once, when
//!   the plan is built, and a mistake in it is the scenario's line;
//! - the step's status is the call's `grpc-status` (0 is OK), read from the answer's
//!   trailers or, for a Trailers-Only answer, its head: any other code the step does not list
//!   (`status=`) is an error of class `grpc` and ends the iteration, its reason the code's
//!   name and the answer's `grpc-message` ([`reason`]);
//! - the step's `timeout=` is the call's deadline, sent as `grpc-timeout` (`build_grpc.rs`);
//!   when it passes the call ends DEADLINE_EXCEEDED, as gRPC clients end it (`http2.rs`);
//! - the reply is read as JSON ([`GrpcCall::reply`]): one object, or for a method that
//!   streams its answer an array of its messages, each timed as it arrives (`stream`).
//!
//! Encoding and decoding a call allocate (prost-reflect's dynamic messages); the HTTP steps'
//! path, which allocates nothing per request (scenario_alloc.rs), does not go through here.

use std::path::{Path, PathBuf};

use prost_reflect::MethodDescriptor;
use serde::Deserialize;

use super::url::{self, Origin, Split};
use crate::message::Response;

/// GrpcSpec is a request step's `grpc` block in the plan.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GrpcSpec {
    /// proto: the `.proto` file that defines the method (absolute, or from the directory
    /// the run starts in).
    pub proto: String,
    /// import_paths: where its imports are looked up, after its own directory.
    #[serde(default)]
    pub import_paths: Vec<String>,
    /// method: `package.Service/Method`.
    pub method: String,
}

/// GrpcCall is a request step's gRPC side, resolved once for every VU.
#[derive(Debug, Clone)]
pub struct GrpcCall {
    /// method: the method's descriptor (its input and output messages, whether it streams).
    pub method: MethodDescriptor,
    /// fixed: the framed message of a step whose JSON has no variables, encoded once.
    pub fixed: Option<Vec<u8>>,
}

/// UNFIT is why a call whose rendered JSON does not fit the method's input fails: it is sent
/// with an empty message, and counted as a failed request of its step for this reason.
pub const UNFIT: &str = "the gRPC message does not fit the method's input (see docs/protocols.md)";

impl GrpcCall {
    /// new resolves `spec` for a step whose JSON message is `fixed` when it has no variables
    /// (encoded here, once); a mistake is one line.
    pub fn new(spec: &GrpcSpec, fixed: Option<&[u8]>) -> Result<GrpcCall, String> {
        let includes: Vec<PathBuf> = spec.import_paths.iter().map(PathBuf::from).collect();
        let method = crate::grpc::method_of(Path::new(&spec.proto), &includes, &spec.method)
            .map_err(|e| match e {
                crate::EngineError::Config(why) => why,
                other => other.to_string(),
            })?;
        let fixed = match fixed {
            Some(json) => {
                let mut body = Vec::new();
                crate::grpc::encode(&method, json, &mut body)?;
                Some(body)
            }
            None => None,
        };
        Ok(GrpcCall { method, fixed })
    }

    /// streams says whether the method answers with a stream of messages (timed as they
    /// arrive, read as a JSON array).
    pub fn streams(&self) -> bool {
        self.method.is_server_streaming()
    }

    /// encode turns the rendered JSON in `body` into the call's framed messages (the fixed
    /// ones when the step has no variables); JSON that does not fit leaves one empty message
    /// and is [`UNFIT`].
    pub fn encode(&self, body: &mut Vec<u8>) -> Result<(), &'static str> {
        if let Some(fixed) = &self.fixed {
            body.clear();
            body.extend_from_slice(fixed);
            return Ok(());
        }
        let json = std::mem::take(body);
        if crate::grpc::encode(&self.method, &json, body).is_ok() {
            return Ok(());
        }
        body.clear();
        body.extend_from_slice(&crate::grpc::frame(&[]));
        Err(UNFIT)
    }

    /// reply makes the kept answer `resp` the call's, for the step's checks and extractions:
    /// its status the call's `status` (its HTTP one is 200 whatever the call's), its framed
    /// reply messages their JSON (see [`crate::grpc::reply_json`]).
    pub fn reply(&self, resp: &mut Response, status: u16) {
        resp.status = status;
        let mut json = Vec::with_capacity(resp.body.len() * 2 + 2);
        let output = self.method.output();
        crate::grpc::reply_json(&output, self.streams(), &resp.body, &mut json);
        resp.body = json;
    }
}

/// split cuts a request's URL (see [`url::split`]) and routes it by protocol: a gRPC call
/// (`grpc`) goes to its `grpc://` or `grpcs://` origin, or, written as a path, to the run's
/// host (`base`) called by gRPC; an HTTP request never goes to a gRPC origin.
pub fn split<'a>(url: &'a str, grpc: bool, base: &'a str) -> Result<Split<'a>, &'static str> {
    let s = url::split(url)?;
    match (grpc, s.origin) {
        (false, Some(o)) if o.grpc => {
            Err("a grpc:// or grpcs:// URL is a gRPC call's (u.grpc), not an HTTP request's")
        }
        (true, Some(o)) if !o.grpc => Err("a gRPC call's URL is grpc://, grpcs:// or a path"),
        (true, None) => {
            let run = url::split(base)?.origin.ok_or("the run has no origin")?;
            Ok(Split {
                origin: Some(Origin { grpc: true, ..run }),
                target: s.target,
            })
        }
        _ => Ok(s),
    }
}

/// reason is a non-OK status's reason among the step's failures: its name, and the answer's
/// `grpc-message` (from its trailers, or its head when it was trailers only) when it has one,
/// decoded and bounded (see [`crate::grpc::message_text`]): `gRPC UNAVAILABLE: no backend`.
pub fn reason(status: u16, resp: &Response) -> String {
    let name = match crate::grpc::CODES.get(usize::from(status)) {
        Some(name) => format!("gRPC {name}"),
        None => format!("gRPC status {status}"),
    };
    let message = resp
        .first("grpc-message")
        .map(|m| crate::grpc::message_text(m.as_bytes()))
        .filter(|m| !m.is_empty());
    match message {
        Some(m) => format!("{name}: {m}"),
        None => name,
    }
}

#[cfg(test)]
#[path = "grpc_tests.rs"]
mod tests;
