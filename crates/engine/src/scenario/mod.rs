//! Scenarios: user flows compiled by Python (`redline.scenario`) into a plan, executed here
//! with no Python call per request.
//!
//! The plan arrives as JSON ([`spec::PlanSpec`]); [`Script::build`] resolves it once into
//! what the VUs run: variable names become slots, templates are split with their escaping
//! decided, regexes are compiled, nested loops and groups are flattened into one list of
//! [`Op`]s with jumps (so the executor is a plain loop over a program counter, without
//! recursion or boxed futures). Modules, in dependency order: `spec` (the JSON), `function`
//! (what a template computes per request), `generator` (what a set step draws), `template`,
//! `response`, `extract`, `check`, `cond` (conditions of `when`, `until` and `stop`),
//! `cookies`, `rng`, `url`, `render` (a request's text), the script's types here and `build`
//! (the builder), `ws` (a WebSocket step), `grpc` (a gRPC call's own parts), then `executor` (one
//! iteration of one VU over a [`executor::Transport`]), `stats` (what it records) and `tally`
//! (the values a request counts of its answers).

pub mod check;
pub mod cond;
pub mod cookies;
pub mod data;
pub mod executor;
pub mod extract;
pub mod function;
pub mod generator;
pub mod grpc;
pub mod host;
pub mod json;
pub mod render;
pub mod rng;
pub mod spec;
pub mod stats;
pub mod summary;
pub mod tally;
pub mod template;
pub mod url;
pub mod ws;

mod build;

use std::time::Duration;

use check::Check;
use cond::Cond;
pub use data::Data;
use extract::Extract;
use template::Template;

/// SLOT_VU and SLOT_ITERATION are the builtin variables `vu` and `iteration`.
pub const SLOT_VU: usize = 0;
/// SLOT_ITERATION: the VU's iteration number.
pub const SLOT_ITERATION: usize = 1;

/// Body is a request's templated body.
#[derive(Debug, Clone)]
pub enum Body {
    /// None: no body.
    None,
    /// Json: a JSON document (`Content-Type: application/json` unless given).
    Json(Template),
    /// Form: form fields, encoded (`application/x-www-form-urlencoded` unless given).
    Form(Vec<(String, Template)>),
    /// Text: as written.
    Text(Template),
}

/// Request is a request step, resolved.
#[derive(Debug, Clone)]
pub struct Request {
    /// stat: index of its name in [`Script::names`].
    pub stat: usize,
    /// hop_stat: where the GETs of the redirects it follows are recorded: `NAME (redirect)`,
    /// so that the name's own figures are those of the request as written (== `stat` when it
    /// follows none).
    pub hop_stat: usize,
    /// method: upper case.
    pub method: String,
    /// head: a HEAD request (no response body).
    pub head: bool,
    /// idempotent: may be resent after a stale keep-alive connection.
    pub idempotent: bool,
    /// lead: the variables a URL starts with (`{location}`, `{base}/x`), written as URL text
    /// ([`template::Escape::Url`]); `path` is the rest.
    pub lead: Option<Template>,
    /// path: the templated URL (after `lead`): a path, or an absolute URL.
    pub path: Template,
    /// timeout: this request's own timeout (the run's when None).
    pub timeout: Option<Duration>,
    /// query: encoded names and templated values.
    pub query: Vec<(String, Template)>,
    /// headers: names and templated values.
    pub headers: Vec<(String, Template)>,
    /// content_type: the Content-Type to add (None when given or there is no body).
    pub content_type: Option<&'static str>,
    /// body: the templated body.
    pub body: Body,
    /// follow_redirects: follow 3xx with a Location.
    pub follow_redirects: bool,
    /// extract: variables set from the final response.
    pub extract: Vec<Extract>,
    /// checks: conditions on the final response.
    pub checks: Vec<Check>,
    /// expected_errors: the 4xx/5xx statuses (a gRPC call's: the codes other than OK) its
    /// status check lists (`status=404`): such a response is what the flow wants, not an
    /// error (the others stay errors).
    pub expected_errors: Vec<u16>,
    /// tally: the JSON path whose value each answer that ends the request is counted by
    /// (`tally="$.status"`; see [`tally`]).
    pub tally: Option<Vec<spec::PathSeg>>,
    /// stream: time its answer as it arrives (`stream=True`; see [`crate::stream`]).
    pub stream: bool,
    /// grpc: a gRPC call's own parts (`u.grpc`; see [`grpc`]): its status is the call's
    /// `grpc-status`, its body the message encoded, its reply read as JSON.
    pub grpc: Option<Box<grpc::GrpcCall>>,
}

impl Request {
    /// fails says whether an answer of `status` is an error the request does not expect: a
    /// 4xx/5xx, or a gRPC call's status other than OK (0), not in its status check.
    pub fn fails(&self, status: u16) -> bool {
        let error = match self.grpc {
            Some(_) => status != 0,
            None => status >= 400,
        };
        error && !self.expected_errors.contains(&status)
    }

    /// failure is the reason of an answer `resp` of `status` that [`Request::fails`]:
    /// `HTTP 503`, or a gRPC call's `gRPC UNAVAILABLE` with its `grpc-message` if any.
    pub fn failure(&self, status: u16, resp: &crate::message::Response) -> String {
        match self.grpc {
            Some(_) => grpc::reason(status, resp),
            None => format!("HTTP {status}"),
        }
    }
}

/// Think is a pause's distribution.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Think {
    /// Constant: always this long.
    Constant(Duration),
    /// Uniform: between the two bounds.
    Uniform(f64, f64),
    /// Exponential: exponentially distributed with this mean, in seconds.
    Exponential(f64),
}

/// Op is one instruction of a flattened flow.
#[derive(Debug, Clone)]
pub enum Op {
    /// Request: send request `0` (an index into [`Script::requests`]).
    Request(usize),
    /// Poll: send the request every `interval` until `until` holds or `timeout` passes.
    Poll {
        /// req: the request.
        req: usize,
        /// until: the conditions that end polling.
        until: Vec<Check>,
        /// interval: the pause between polls.
        interval: Duration,
        /// timeout: the most polling may take.
        timeout: Duration,
    },
    /// Think: pause.
    Think(Think),
    /// Set: set `slot` to one of `choice` at random.
    Set {
        /// slot: the variable.
        slot: usize,
        /// choice: the options.
        choice: Vec<String>,
    },
    /// Draw: set `slot` to what `gen` draws (a UUID, a random value, the time).
    Draw {
        /// slot: the variable.
        slot: usize,
        /// gen: what draws the value.
        gen: generator::Generator,
    },
    /// LoopStart: enter a loop of `count` rounds at nesting `depth` (none: go to `end`).
    LoopStart {
        /// count: rounds.
        count: Count,
        /// depth: the loop counter's index.
        depth: usize,
        /// end: the op after the matching LoopEnd.
        end: usize,
    },
    /// LoopEnd: another round from `start + 1`, or go on.
    LoopEnd {
        /// start: the index of the matching LoopStart.
        start: usize,
        /// depth: the loop counter's index.
        depth: usize,
    },
    /// UntilStart: enter an until loop at nesting `depth` (its round counter from 0).
    UntilStart {
        /// depth: the round counter's index.
        depth: usize,
    },
    /// UntilEnd: go on when `cond` holds; else another round from `start + 1`, or, after
    /// `limit` rounds, fail the iteration for `reason`.
    UntilEnd {
        /// start: the index of the matching UntilStart.
        start: usize,
        /// depth: the round counter's index.
        depth: usize,
        /// cond: the condition that ends the loop.
        cond: Cond,
        /// limit: the most rounds.
        limit: u32,
        /// reason: the failure at the limit (`until (line 12) still false after 20 rounds`).
        reason: String,
    },
    /// Unless: go on when `cond` holds, else go to `to` (a branch of a `when`).
    Unless {
        /// cond: the branch's condition.
        cond: Cond,
        /// to: the op after the branch.
        to: usize,
    },
    /// Jump: go to op `0` (past the other branches of a `when`).
    Jump(usize),
    /// Stop: end the iteration, as completed, when the condition holds (None: always).
    Stop(Option<Cond>),
    /// Python: run Python step `0` (an index into [`Script::python`]).
    Python(usize),
    /// Socket: run WebSocket step `0` (an index into [`Script::sockets`]).
    Socket(usize),
    /// GroupStart: start timing group `0`.
    GroupStart(usize),
    /// GroupEnd: stop timing the innermost group.
    GroupEnd,
}

/// Count is a repeat's count: fixed, or a variable's value read when the loop starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Count {
    /// Fixed: this many rounds.
    Fixed(u32),
    /// Slot: the whole number in this variable.
    Slot(usize),
}

/// Flow is a weighted, flattened flow.
#[derive(Debug, Clone)]
pub struct Flow {
    /// name: the flow's name.
    pub name: String,
    /// weight: its share of iterations.
    pub weight: u32,
    /// ops: what it does.
    pub ops: Vec<Op>,
}

/// PyStep is a Python step, resolved: its function, argument templates and output slots.
#[derive(Debug, Clone)]
pub struct PyStep {
    /// func: the function's index in [`Script::functions`].
    pub func: usize,
    /// args: the arguments, rendered as they are (no escaping).
    pub args: Vec<Template>,
    /// outputs: the slots its answer fills, in order.
    pub outputs: Vec<usize>,
}

/// Script is a resolved plan, shared (read-only) by every VU of the run.
#[derive(Debug, Clone)]
pub struct Script {
    /// names: request statistics names.
    pub names: Vec<String>,
    /// groups: group statistics names.
    pub groups: Vec<String>,
    /// requests: every request step.
    pub requests: Vec<Request>,
    /// setup: what each VU runs once first.
    pub setup: Vec<Op>,
    /// flows: the weighted flows.
    pub flows: Vec<Flow>,
    /// total_weight: the sum of the weights.
    pub total_weight: u64,
    /// initial: each variable's value before the first iteration (run variables set).
    pub initial: Vec<String>,
    /// data: the data sets.
    pub data: Vec<Data>,
    /// authority: the Host header of a path's request.
    pub authority: String,
    /// host: the run's host (the cookie domain of a path's request).
    pub host: String,
    /// base: the run's origin (`http://host:port`), on which a path's relative redirects
    /// resolve.
    pub base: String,
    /// pacing: an iteration starts at most every this long.
    pub pacing: Option<Duration>,
    /// iterations: each VU stops after this many iterations.
    pub iterations: Option<u64>,
    /// depth: the deepest loop nesting (loop counters per VU).
    pub depth: usize,
    /// python: the Python steps.
    pub python: Vec<PyStep>,
    /// sockets: the WebSocket steps.
    pub sockets: Vec<ws::SocketStep>,
    /// functions: the Python steps' function names.
    pub functions: Vec<String>,
    /// python_host: where the Python steps run (set by [`Script::with_host`]).
    pub python_host: Option<host::HostRef>,
}

impl Script {
    /// data_stopped says whether a data set has run out and stops the run
    /// (`on_exhausted="stop"`): no VU starts another iteration.
    pub fn data_stopped(&self) -> bool {
        self.data.iter().any(Data::stopped)
    }

    /// streams says whether any request asks for its answer to be timed as it arrives.
    pub fn streams(&self) -> bool {
        self.requests.iter().any(|r| r.stream)
    }

    /// longest_timeout is the longest of the requests' own timeouts, if any has one.
    pub fn longest_timeout(&self) -> Option<Duration> {
        self.requests.iter().filter_map(|r| r.timeout).max()
    }

    /// with_host gives the script the host its Python steps run on; a script with Python
    /// steps and no host (a plan run from Rust alone, or on a cluster injector) is refused.
    pub fn with_host(mut self, host: Option<host::HostRef>) -> Result<Script, crate::EngineError> {
        let need = self.functions.len();
        match &host {
            _ if need == 0 => {}
            None => {
                return Err(crate::EngineError::config(
                    "the plan has Python steps (u.python): run it from redline's Python \
                     package, which calls them",
                ))
            }
            Some(h) if h.0.functions().len() < need => {
                return Err(crate::EngineError::config(format!(
                    "the plan has {need} Python step functions, the host {}",
                    h.0.functions().len()
                )))
            }
            Some(_) => {}
        }
        self.python_host = host;
        Ok(self)
    }

    /// python_report is what the Python steps cost over a run of `wall_s` seconds that took
    /// `process_cpu_s` of CPU (None without Python steps).
    pub fn python_report(&self, wall_s: f64, process_cpu_s: f64) -> Option<host::PythonReport> {
        let h = self
            .python_host
            .as_ref()
            .filter(|_| !self.functions.is_empty())?;
        let usage = h.0.usage();
        Some(host::PythonReport::from_usage(
            &self.functions,
            &usage,
            wall_s,
            process_cpu_s,
        ))
    }

    /// pick chooses a flow for a draw in `0..total_weight`.
    pub fn pick(&self, draw: u64) -> &Flow {
        let mut left = draw;
        for f in &self.flows {
            if left < u64::from(f.weight) {
                return f;
            }
            left -= u64::from(f.weight);
        }
        &self.flows[self.flows.len() - 1]
    }
}

#[cfg(test)]
#[path = "script_tests.rs"]
mod tests;
