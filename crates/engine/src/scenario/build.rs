//! The builder: [`Script::build`] resolves a parsed plan ([`PlanSpec`]) once into the
//! [`Script`] the VUs run: variable names become slots, request names statistics indexes,
//! templates are split with their escaping decided, regexes are compiled, and nested loops
//! and groups are flattened into one list of [`Op`]s with jumps.

use std::collections::HashMap;
use std::time::Duration;

use regex::bytes::Regex;

use super::check::Check;
use super::extract::{Extract, Source};
use super::generator::Generator;
use super::spec::{
    BodySpec, CheckSpec, DataSpec, ExtractSpec, FlowSpec, PlanSpec, RequestSpec, StepSpec,
};
use super::template::{BuildError, Escape, Template};
use super::*;
use crate::error::EngineError;

#[path = "build_control.rs"]
mod control;
#[path = "build_grpc.rs"]
mod grpc;
#[path = "build_socket.rs"]
mod socket;

/// Builder resolves names while a plan is built.
struct Builder<'a> {
    file: &'a str,
    slots: HashMap<String, usize>,
    initial: Vec<String>,
    names: Vec<String>,
    groups: Vec<String>,
    requests: Vec<Request>,
    depth: usize,
    python: Vec<PyStep>,
    functions: usize,
    sockets: Vec<ws::SocketStep>,
}

impl Builder<'_> {
    fn err(&self, line: Option<u32>, msg: impl std::fmt::Display) -> EngineError {
        match line {
            Some(l) => EngineError::config(format!("{}:{l}: {msg}", self.file)),
            None => EngineError::config(format!("{}: {msg}", self.file)),
        }
    }

    /// slot finds or makes a variable's slot.
    fn slot(&mut self, name: &str) -> usize {
        if let Some(&i) = self.slots.get(name) {
            return i;
        }
        let i = self.initial.len();
        self.initial.push(String::new());
        self.slots.insert(name.to_string(), i);
        i
    }

    fn stat(list: &mut Vec<String>, name: &str) -> usize {
        match list.iter().position(|n| n == name) {
            Some(i) => i,
            None => {
                list.push(name.to_string());
                list.len() - 1
            }
        }
    }

    fn template(
        &self,
        spec: &spec::TemplateSpec,
        escape: Escape,
        line: Option<u32>,
    ) -> Result<Template, EngineError> {
        Template::build(spec, escape, |n| self.slots.get(n).copied()).map_err(|e| match e {
            BuildError::Unknown(v) => {
                self.err(line, format!("variable {v:?} is used before it is set"))
            }
            BuildError::Call(reason) => self.err(line, reason),
        })
    }

    fn check(&self, c: &CheckSpec, line: Option<u32>) -> Result<Check, EngineError> {
        Ok(match c {
            CheckSpec::Status { codes } => Check::Status(codes.clone()),
            CheckSpec::Json {
                path,
                op,
                values,
                text,
            } => {
                let negate = match op.as_str() {
                    "in" => false,
                    "not_in" => true,
                    other => return Err(self.err(line, format!("unknown JSON check op {other:?}"))),
                };
                Check::Json {
                    path: path.clone(),
                    text: text.clone(),
                    values: values.clone(),
                    negate,
                }
            }
            CheckSpec::Contains { text } => Check::Contains(text.clone()),
            CheckSpec::Latency { max_ms } => {
                if !(max_ms.is_finite() && *max_ms > 0.0) {
                    return Err(self.err(line, format!("latency bound must be > 0, got {max_ms}")));
                }
                Check::Latency(Duration::from_secs_f64(max_ms / 1e3))
            }
        })
    }

    fn request(&mut self, r: &RequestSpec) -> Result<usize, EngineError> {
        let line = r.line;
        let method = self.method(r)?;
        let (lead, path) = self.url(r)?;
        let timeout = match r.timeout_s {
            None => None,
            Some(t) if t.is_finite() && t > 0.0 && t < 1e9 => Some(Duration::from_secs_f64(t)),
            Some(t) => return Err(self.err(line, format!("timeout must be > 0 s, got {t}"))),
        };
        let query = self.form_pairs(&r.query, line)?;
        let headers = self.headers(r)?;
        let given = |name: &str| r.headers.iter().any(|(k, _)| k.eq_ignore_ascii_case(name));
        let (body, ctype) = self.body(r)?;
        let mut checks = Vec::new();
        for c in &r.checks {
            checks.push(self.check(c, line)?);
        }
        // Extractions define their variables for the steps after this one.
        let mut extract = Vec::new();
        for x in &r.extract {
            let (var, source) = self.extract(x, r.line)?;
            let default = match x {
                ExtractSpec::Json { default, .. }
                | ExtractSpec::Header { default, .. }
                | ExtractSpec::Regex { default, .. } => default.clone(),
                ExtractSpec::Status { .. } => None,
            };
            extract.push(Extract {
                slot: self.slot(var),
                source,
                default,
            });
        }
        let stat = Self::stat(&mut self.names, &r.name);
        let hop_stat = if r.follow_redirects {
            Self::stat(&mut self.names, &format!("{} (redirect)", r.name))
        } else {
            stat
        };
        let expected_errors = super::check::expected_errors(&checks, r.grpc.is_some());
        self.requests.push(Request {
            stat,
            hop_stat,
            head: method == "HEAD",
            idempotent: crate::http::idempotent(&method),
            method,
            lead,
            path,
            timeout,
            query,
            headers,
            content_type: if given("content-type") { None } else { ctype },
            body,
            follow_redirects: r.follow_redirects,
            extract,
            checks,
            expected_errors,
            tally: r.tally.as_ref().map(|t| t.path.clone()),
            stream: r.stream,
            grpc: None,
        });
        self.grpc(r)?;
        Ok(self.requests.len() - 1)
    }

    /// url builds a request's URL: the variables (or functions) it starts with, written as
    /// URL text, and the rest, a path or an absolute URL whose variables are escaped as path
    /// text. A URL whose origin is written out is checked here; one that comes from
    /// variables is checked per request (a bad one fails that request with the reason).
    fn url(&self, r: &RequestSpec) -> Result<(Option<Template>, Template), EngineError> {
        let line = r.line;
        let n = r
            .path
            .iter()
            .take_while(|p| !matches!(p, spec::PartSpec::Lit(_)))
            .count();
        let lead = match n {
            0 => None,
            _ => Some(self.template(&r.path[..n].to_vec(), Escape::Url, line)?),
        };
        let path = self.template(&r.path[n..].to_vec(), Escape::Path, line)?;
        if lead.is_some() {
            return Ok((lead, path));
        }
        let first = match path.parts.first() {
            Some(template::Part::Lit(s)) => &**s,
            _ => "",
        };
        super::url::check(first, path.parts.len() == 1).map_err(|why| {
            let shown: String = r.path.iter().map(spec::PartSpec::shown).collect();
            self.err(line, format!("{why}, got {shown:?}"))
        })?;
        Ok((None, path))
    }

    /// method is the request's method, upper case.
    fn method(&self, r: &RequestSpec) -> Result<String, EngineError> {
        let method = r.method.to_ascii_uppercase();
        if method.is_empty()
            || !method
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err(self.err(r.line, format!("bad HTTP method {:?}", r.method)));
        }
        Ok(method)
    }

    /// form_pairs builds form-encoded pairs (a query or a form body): the keys escaped once
    /// here, the values templates escaped as they are filled.
    fn form_pairs(
        &self,
        pairs: &[(String, spec::TemplateSpec)],
        line: Option<u32>,
    ) -> Result<Vec<(String, Template)>, EngineError> {
        let mut out = Vec::new();
        for (k, v) in pairs {
            let mut key = Vec::new();
            template::write_escaped(&mut key, k, Escape::Form);
            out.push((
                String::from_utf8_lossy(&key).into_owned(),
                self.template(v, Escape::Form, line)?,
            ));
        }
        Ok(out)
    }

    /// headers checks the request's header names and builds their value templates.
    fn headers(&self, r: &RequestSpec) -> Result<Vec<(String, Template)>, EngineError> {
        let mut headers = Vec::new();
        for (k, v) in &r.headers {
            if k.is_empty()
                || !k
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
            {
                return Err(self.err(r.line, format!("bad header name {k:?}")));
            }
            headers.push((k.clone(), self.template(v, Escape::Header, r.line)?));
        }
        Ok(headers)
    }

    /// body is the request's body and the content type it implies (if any).
    fn body(&self, r: &RequestSpec) -> Result<(Body, Option<&'static str>), EngineError> {
        let line = r.line;
        Ok(match &r.body {
            None => (Body::None, None),
            Some(BodySpec::Json { template }) => (
                Body::Json(self.template(template, Escape::Json, line)?),
                Some("application/json"),
            ),
            Some(BodySpec::Form { fields }) => (
                Body::Form(self.form_pairs(fields, line)?),
                Some("application/x-www-form-urlencoded"),
            ),
            Some(BodySpec::Text { template }) => (
                Body::Text(self.template(template, Escape::Raw, line)?),
                None,
            ),
        })
    }

    /// extract is an extraction's variable and source (a regex compiled and its group
    /// checked); `request_line` places the errors of one without a line of its own.
    fn extract<'x>(
        &self,
        x: &'x ExtractSpec,
        request_line: Option<u32>,
    ) -> Result<(&'x String, Source), EngineError> {
        Ok(match x {
            ExtractSpec::Json {
                var, path, text, ..
            } => (
                var,
                Source::Json {
                    path: path.clone(),
                    text: text.clone(),
                },
            ),
            ExtractSpec::Header { var, name, .. } => (var, Source::Header(name.clone())),
            ExtractSpec::Status { var, .. } => (var, Source::Status),
            ExtractSpec::Regex {
                var,
                pattern,
                group,
                line,
                ..
            } => {
                let re = Regex::new(pattern).map_err(|e| {
                    self.err(line.or(request_line), format!("bad regex {pattern:?}: {e}"))
                })?;
                if *group > re.captures_len() - 1 {
                    return Err(self.err(
                        line.or(request_line),
                        format!("regex {pattern:?} has no group {group}"),
                    ));
                }
                (var, Source::Regex { re, group: *group })
            }
        })
    }

    // long: one arm per step kind, each resolving its spec in a few lines.
    fn steps(
        &mut self,
        steps: &[StepSpec],
        ops: &mut Vec<Op>,
        depth: usize,
    ) -> Result<(), EngineError> {
        for s in steps {
            match s {
                StepSpec::Request(r) => {
                    let i = self.request(r)?;
                    ops.push(Op::Request(i));
                }
                StepSpec::Poll {
                    request,
                    until,
                    interval_s,
                    timeout_s,
                    line,
                } => {
                    let ok = |v: f64| v.is_finite() && (0.0..1e9).contains(&v);
                    if !ok(*interval_s) || !ok(*timeout_s) || *timeout_s == 0.0 {
                        return Err(self.err(*line, "poll: every must be >= 0 s and timeout > 0 s"));
                    }
                    let mut conds = Vec::new();
                    for c in until {
                        conds.push(self.check(c, *line)?);
                    }
                    let req = self.request(request)?;
                    ops.push(Op::Poll {
                        req,
                        until: conds,
                        interval: Duration::from_secs_f64(*interval_s),
                        timeout: Duration::from_secs_f64(*timeout_s),
                    });
                }
                StepSpec::Think {
                    dist,
                    s,
                    min_s,
                    max_s,
                    mean_s,
                    line,
                } => {
                    let think = self.think(dist, *s, *min_s, *max_s, *mean_s, *line)?;
                    ops.push(Op::Think(think));
                }
                StepSpec::Set {
                    var,
                    choice,
                    func,
                    args,
                    line,
                } => {
                    let op = self.set(var, choice, func.as_deref(), args, *line)?;
                    ops.push(op);
                }
                StepSpec::Loop { .. }
                | StepSpec::Repeat { .. }
                | StepSpec::When { .. }
                | StepSpec::Until { .. }
                | StepSpec::Stop { .. } => self.control(s, ops, depth)?,
                StepSpec::Python {
                    func,
                    args,
                    outputs,
                    line,
                } => {
                    let i = self.python_step(*func, args, outputs, *line)?;
                    ops.push(Op::Python(i));
                }
                StepSpec::Socket(w) => {
                    let i = self.socket(w)?;
                    ops.push(Op::Socket(i));
                }
                StepSpec::Group { name, steps, .. } => {
                    let g = Self::stat(&mut self.groups, name);
                    ops.push(Op::GroupStart(g));
                    self.steps(steps, ops, depth)?;
                    ops.push(Op::GroupEnd);
                }
            }
        }
        Ok(())
    }

    /// set is a set step's op: a draw of a generator (`fn`), else a choice.
    fn set(
        &mut self,
        var: &str,
        choice: &[String],
        func: Option<&str>,
        args: &[serde_json::Value],
        line: Option<u32>,
    ) -> Result<Op, EngineError> {
        let slot = self.slot(var);
        if let Some(func) = func {
            let gen = Generator::parse(func, args).map_err(|e| self.err(line, e))?;
            return Ok(Op::Draw { slot, gen });
        }
        if choice.is_empty() {
            return Err(self.err(line, "choice needs at least one option"));
        }
        Ok(Op::Set {
            slot,
            choice: choice.to_vec(),
        })
    }

    /// python_step resolves a Python step: its function known, its arguments templates (sent
    /// as they are) and its outputs' slots.
    fn python_step(
        &mut self,
        func: usize,
        args: &[spec::TemplateSpec],
        outputs: &[String],
        line: Option<u32>,
    ) -> Result<usize, EngineError> {
        if func >= self.functions {
            return Err(self.err(line, format!("python step: no function {func} in the plan")));
        }
        let mut tpls = Vec::new();
        for a in args {
            tpls.push(self.template(a, Escape::Raw, line)?);
        }
        let outputs = outputs.iter().map(|o| self.slot(o)).collect();
        self.python.push(PyStep {
            func,
            args: tpls,
            outputs,
        });
        Ok(self.python.len() - 1)
    }

    /// think is a think step's time distribution.
    fn think(
        &self,
        dist: &str,
        s: f64,
        min_s: f64,
        max_s: f64,
        mean_s: f64,
        line: Option<u32>,
    ) -> Result<Think, EngineError> {
        let ok = |v: f64| v.is_finite() && (0.0..1e9).contains(&v);
        Ok(match dist {
            "constant" if ok(s) => Think::Constant(Duration::from_secs_f64(s)),
            "uniform" if ok(min_s) && ok(max_s) && min_s <= max_s => Think::Uniform(min_s, max_s),
            "exponential" if ok(mean_s) && mean_s > 0.0 => Think::Exponential(mean_s),
            _ => return Err(self.err(line, format!("bad think time ({dist})"))),
        })
    }

    /// data resolves a data set: its columns get slots `data.<set>.<column>`.
    fn data(&mut self, d: &DataSpec) -> Result<Data, EngineError> {
        let slots = d
            .columns
            .iter()
            .map(|c| self.slot(&format!("data.{}.{c}", d.name)))
            .collect();
        Data::build(d, slots).map_err(|e| self.err(d.line, format!("data set {:?}: {e}", d.name)))
    }

    /// flows builds the plan's flows (at least one, each weighted and with steps).
    fn flows(&mut self, specs: &[FlowSpec]) -> Result<Vec<Flow>, EngineError> {
        if specs.is_empty() {
            return Err(self.err(None, "the plan has no flow"));
        }
        let mut flows = Vec::new();
        for f in specs {
            if f.weight == 0 {
                return Err(self.err(f.line, format!("flow {:?}: weight must be >= 1", f.name)));
            }
            let mut ops = Vec::new();
            self.steps(&f.steps, &mut ops, 0)?;
            if ops.is_empty() {
                return Err(self.err(f.line, format!("flow {:?} has no steps", f.name)));
            }
            flows.push(Flow {
                name: f.name.clone(),
                weight: f.weight,
                ops,
            });
        }
        Ok(flows)
    }
}

impl Script {
    /// from_json parses and builds a plan; `authority` is the run's Host header (its `base`
    /// says http; the run sets https where it is).
    pub fn from_json(plan: &serde_json::Value, authority: &str) -> Result<Script, EngineError> {
        let spec: PlanSpec = serde_json::from_value(plan.clone())
            .map_err(|e| EngineError::config(format!("bad scenario plan: {e}")))?;
        Script::build(&spec, authority)
    }

    /// build resolves a parsed plan.
    pub fn build(spec: &PlanSpec, authority: &str) -> Result<Script, EngineError> {
        let file = if spec.file.is_empty() {
            "<plan>"
        } else {
            spec.file.as_str()
        };
        if spec.version != 1 {
            return Err(EngineError::config(format!(
                "{file}: plan version {} is not supported (this engine reads version 1)",
                spec.version
            )));
        }
        let mut b = Builder {
            file,
            slots: HashMap::new(),
            initial: Vec::new(),
            names: Vec::new(),
            groups: Vec::new(),
            requests: Vec::new(),
            depth: 0,
            python: Vec::new(),
            functions: spec.python.len(),
            sockets: Vec::new(),
        };
        b.slot("vu");
        b.slot("iteration");
        for (k, v) in &spec.vars {
            let i = b.slot(k);
            b.initial[i] = v.clone();
        }
        let mut data = Vec::new();
        for d in &spec.data {
            data.push(b.data(d)?);
        }
        b.declare(&spec.setup);
        for f in &spec.flows {
            b.declare(&f.steps);
        }
        let mut setup = Vec::new();
        b.steps(&spec.setup, &mut setup, 0)?;
        let flows = b.flows(&spec.flows)?;
        let pacing = match spec.pacing_s {
            None => None,
            Some(p) if p.is_finite() && p > 0.0 && p < 1e9 => Some(Duration::from_secs_f64(p)),
            Some(p) => return Err(b.err(None, format!("pacing must be > 0 s, got {p}"))),
        };
        if spec.iterations == Some(0) {
            return Err(b.err(None, "iterations per VU must be >= 1"));
        }
        Ok(Script {
            total_weight: flows.iter().map(|f| u64::from(f.weight)).sum(),
            names: b.names,
            groups: b.groups,
            requests: b.requests,
            setup,
            flows,
            initial: b.initial,
            data,
            authority: authority.to_string(),
            host: super::url::run_host(authority).to_string(),
            base: format!("http://{authority}"),
            pacing,
            iterations: spec.iterations,
            depth: b.depth,
            python: b.python,
            sockets: b.sockets,
            functions: spec.python.iter().map(|p| p.name.clone()).collect(),
            python_host: None,
        })
    }
}
