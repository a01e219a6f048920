//! The plan as Python's compiler writes it (docs/scenarios.md): serde types mirroring the
//! JSON, nothing resolved yet. [`super::build`] turns a [`PlanSpec`] into the executable
//! [`super::Script`].

use serde::Deserialize;

/// PartSpec is one piece of a template: literal text, or a variable reference.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum PartSpec {
    /// Lit: literal text, sent as written.
    Lit(String),
    /// Var: a variable, escaped for where it lands.
    Var {
        /// var: the variable's name.
        var: String,
    },
    /// Call: a function the engine computes per request over its arguments (rendered as
    /// is), its result escaped for where it lands.
    Call(CallSpec),
}

/// CallSpec is a function part of a template: `{"fn": "hmac_sha256", "args": [KEY, TEXT],
/// "encoding": "hex"}` (docs/scenarios.md, Functions).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallSpec {
    /// func: the function's name.
    #[serde(rename = "fn")]
    pub func: String,
    /// args: its arguments, each a template.
    #[serde(default)]
    pub args: Vec<TemplateSpec>,
    /// encoding: `hex` or `base64`, for a digest or a signature.
    #[serde(default)]
    pub encoding: Option<String>,
    /// width: the width `pad` pads to.
    #[serde(default)]
    pub width: Option<usize>,
    /// fill: the character `pad` pads with.
    #[serde(default)]
    pub fill: Option<String>,
}

impl PartSpec {
    /// shown is the part as messages show it: text, `{name}`, or `{fn(...)}`.
    pub fn shown(&self) -> String {
        match self {
            PartSpec::Lit(s) => s.clone(),
            PartSpec::Var { var } => format!("{{{var}}}"),
            PartSpec::Call(c) => format!("{{{}(...)}}", c.func),
        }
    }
}

/// TemplateSpec is a templated string.
pub type TemplateSpec = Vec<PartSpec>;

/// PathSeg is one step of a parsed JSON path: an object key or an array index.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum PathSeg {
    /// Index: an array index (negative counts from the end).
    Index(i64),
    /// Key: an object key.
    Key(String),
}

/// BodySpec is a request body.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum BodySpec {
    /// Json: a JSON document; variables are escaped as JSON string content.
    Json {
        /// template: the document.
        template: TemplateSpec,
    },
    /// Form: `application/x-www-form-urlencoded` fields.
    Form {
        /// fields: name and templated value.
        fields: Vec<(String, TemplateSpec)>,
    },
    /// Text: a body sent as written.
    Text {
        /// template: the body.
        template: TemplateSpec,
    },
}

/// ExtractSpec says where a variable's value comes from in a response.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "from", rename_all = "lowercase")]
pub enum ExtractSpec {
    /// Json: the value at a JSON path of the body.
    Json {
        /// var: the variable set.
        var: String,
        /// path: the parsed path.
        path: Vec<PathSeg>,
        /// text: the path as written, for messages.
        #[serde(default)]
        text: String,
        /// default: the value when there is none (else the request fails).
        #[serde(default)]
        default: Option<String>,
        /// line: the scenario line.
        #[serde(default)]
        line: Option<u32>,
    },
    /// Header: a response header's value.
    Header {
        /// var: the variable set.
        var: String,
        /// name: the header name (case-insensitive).
        name: String,
        /// default: the value when there is none (else the request fails).
        #[serde(default)]
        default: Option<String>,
        /// line: the scenario line.
        #[serde(default)]
        line: Option<u32>,
    },
    /// Regex: a capture group of the first match in the body.
    Regex {
        /// var: the variable set.
        var: String,
        /// pattern: the regular expression.
        pattern: String,
        /// group: the capture group (0: the whole match).
        group: usize,
        /// default: the value when there is none (else the request fails).
        #[serde(default)]
        default: Option<String>,
        /// line: the scenario line.
        #[serde(default)]
        line: Option<u32>,
    },
    /// Status: the response's status code (every response has one).
    Status {
        /// var: the variable set.
        var: String,
        /// line: the scenario line.
        #[serde(default)]
        line: Option<u32>,
    },
}

/// CheckSpec is a condition on a response.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "check", rename_all = "lowercase")]
pub enum CheckSpec {
    /// Status: the status is one of `in`.
    Status {
        /// in: the accepted codes.
        #[serde(rename = "in")]
        codes: Vec<u16>,
    },
    /// Json: the value at `path` is (`op: "in"`) or is not (`"not_in"`) one of `values`.
    Json {
        /// path: the parsed path.
        path: Vec<PathSeg>,
        /// op: `in` or `not_in`.
        op: String,
        /// values: the set compared with.
        values: Vec<serde_json::Value>,
        /// text: the path as written.
        #[serde(default)]
        text: String,
    },
    /// Contains: the body contains `text`.
    Contains {
        /// text: the text looked for.
        text: String,
    },
    /// Latency: the response took at most `max_ms`.
    Latency {
        /// max_ms: the bound in milliseconds.
        max_ms: f64,
    },
}

/// RequestSpec is one request step.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct RequestSpec {
    /// name: the statistics label.
    pub name: String,
    /// method: the HTTP method.
    pub method: String,
    /// path: the templated URL: a path on the run's host (`/x`), or an absolute `http://` or
    /// `https://` URL, either of which may start with variables (`{location}`).
    pub path: TemplateSpec,
    /// timeout_s: this request's timeout, in seconds (the run's when absent).
    #[serde(default)]
    pub timeout_s: Option<f64>,
    /// query: templated query parameters.
    #[serde(default)]
    pub query: Vec<(String, TemplateSpec)>,
    /// headers: templated headers.
    #[serde(default)]
    pub headers: Vec<(String, TemplateSpec)>,
    /// body: the body, if any.
    #[serde(default)]
    pub body: Option<BodySpec>,
    /// follow_redirects: follow 3xx responses with a Location (a GET, to any host).
    #[serde(default)]
    pub follow_redirects: bool,
    /// extract: variables taken from the response.
    #[serde(default)]
    pub extract: Vec<ExtractSpec>,
    /// checks: conditions the response must meet.
    #[serde(default)]
    pub checks: Vec<CheckSpec>,
    /// tally: count each answer by the value at this JSON path.
    #[serde(default)]
    pub tally: Option<TallySpec>,
    /// stream: time the answer as it arrives (`stream=True`; see [`crate::stream`]).
    #[serde(default)]
    pub stream: bool,
    /// grpc: a gRPC call's `.proto` and method (`u.grpc`; see [`super::grpc`]).
    #[serde(default)]
    pub grpc: Option<super::grpc::GrpcSpec>,
    /// line: the scenario line.
    #[serde(default)]
    pub line: Option<u32>,
}

/// TallySpec is a request's `tally="$.status"`: the path, parsed, and as written.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct TallySpec {
    /// path: the parsed path.
    pub path: Vec<PathSeg>,
    /// text: the path as written.
    #[serde(default)]
    pub text: String,
}

/// SocketSpec is a WebSocket step (`u.websocket`; see [`super::ws`]).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SocketSpec {
    /// name: the statistics label of its messages.
    pub name: String,
    /// url: a path on the run's host, or a `ws://` or `wss://` URL.
    pub url: TemplateSpec,
    /// messages: what is sent, in order: JSON or text (a form is refused).
    pub messages: Vec<BodySpec>,
    /// count: how many times the messages are sent (absent: once).
    #[serde(default)]
    pub count: Option<u32>,
    /// match_field: replies match by this JSON field (absent: the next message answers).
    #[serde(default)]
    pub match_field: Option<String>,
    /// timeout_s: the longest wait for a reply or an opening (the run's when absent).
    #[serde(default)]
    pub timeout_s: Option<f64>,
    /// line: the scenario line.
    #[serde(default)]
    pub line: Option<u32>,
}

/// StepSpec is one step of a flow.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "step", rename_all = "lowercase")]
pub enum StepSpec {
    /// Request: one request.
    Request(RequestSpec),
    /// Poll: repeat a request until conditions hold or a timeout passes.
    Poll {
        /// request: the request repeated.
        request: RequestSpec,
        /// until: the conditions that end the polling.
        until: Vec<CheckSpec>,
        /// interval_s: the pause between polls.
        interval_s: f64,
        /// timeout_s: the most time polling may take.
        timeout_s: f64,
        /// line: the scenario line.
        #[serde(default)]
        line: Option<u32>,
    },
    /// Think: a pause.
    Think {
        /// dist: `constant`, `uniform` or `exponential`.
        dist: String,
        /// s: the constant pause.
        #[serde(default)]
        s: f64,
        /// min_s: the uniform lower bound.
        #[serde(default)]
        min_s: f64,
        /// max_s: the uniform upper bound.
        #[serde(default)]
        max_s: f64,
        /// mean_s: the exponential mean.
        #[serde(default)]
        mean_s: f64,
        /// line: the scenario line.
        #[serde(default)]
        line: Option<u32>,
    },
    /// Set: set a variable to a random choice, or to what a generator draws when the flow
    /// reaches the step (`fn`: `uuid4`, `random_int`, `random_string`, `now`), so that every
    /// use of the value within the iteration sees the same one.
    Set {
        /// var: the variable set.
        var: String,
        /// choice: the options.
        #[serde(default)]
        choice: Vec<String>,
        /// func: the generator, instead of a choice.
        #[serde(default, rename = "fn")]
        func: Option<String>,
        /// args: the generator's arguments (bounds, a length and an alphabet, a format).
        #[serde(default)]
        args: Vec<serde_json::Value>,
        /// line: the scenario line.
        #[serde(default)]
        line: Option<u32>,
    },
    /// Loop: run `steps` `count` times.
    Loop {
        /// count: how many times.
        count: u32,
        /// steps: the body.
        steps: Vec<StepSpec>,
        /// line: the scenario line.
        #[serde(default)]
        line: Option<u32>,
    },
    /// Python: call a Python step's function (`u.python`) on the run's host.
    Python {
        /// func: the function's index in the plan's `python` list.
        #[serde(rename = "fn")]
        func: usize,
        /// args: the templated arguments, rendered and passed as strings.
        #[serde(default)]
        args: Vec<TemplateSpec>,
        /// outputs: the variables its answer sets, in order.
        outputs: Vec<String>,
        /// line: the scenario line.
        #[serde(default)]
        line: Option<u32>,
    },
    /// Socket: a WebSocket step (`u.websocket`): messages sent and answered on a socket.
    Socket(SocketSpec),
    /// Group: run `steps`, timed as a whole under `name`.
    Group {
        /// name: the group's statistics label.
        name: String,
        /// steps: the body.
        steps: Vec<StepSpec>,
        /// line: the scenario line.
        #[serde(default)]
        line: Option<u32>,
    },
    /// When: run the steps of the first branch whose condition holds, else `otherwise`.
    When {
        /// branches: `when` then each `otherwise_when`, in order.
        branches: Vec<BranchSpec>,
        /// otherwise: the steps run when no branch's condition holds.
        #[serde(default, rename = "else")]
        otherwise: Option<Vec<StepSpec>>,
        /// line: the scenario line.
        #[serde(default)]
        line: Option<u32>,
    },
    /// Repeat: run `steps` `count` times (a number, or a variable's value read when the
    /// repeat starts: 0 runs them not at all).
    Repeat {
        /// count: how many times.
        count: CountSpec,
        /// steps: the body.
        steps: Vec<StepSpec>,
        /// line: the scenario line.
        #[serde(default)]
        line: Option<u32>,
    },
    /// Until: run `steps`, then again until `cond` holds after a round; after `limit`
    /// rounds without it the iteration fails.
    Until {
        /// cond: the condition that ends the loop, judged after each round.
        cond: CondSpec,
        /// limit: the most rounds.
        limit: u32,
        /// steps: the body.
        steps: Vec<StepSpec>,
        /// line: the scenario line.
        #[serde(default)]
        line: Option<u32>,
    },
    /// Stop: end the iteration here, as completed, when `cond` holds (always without one).
    Stop {
        /// cond: the condition, if any.
        #[serde(default)]
        cond: Option<CondSpec>,
        /// line: the scenario line.
        #[serde(default)]
        line: Option<u32>,
    },
}

/// BranchSpec is one branch of a `when`: its condition and its steps.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct BranchSpec {
    /// cond: the branch runs when this holds (and no branch before it ran).
    #[serde(rename = "if")]
    pub cond: CondSpec,
    /// steps: the body.
    pub steps: Vec<StepSpec>,
    /// line: the scenario line.
    #[serde(default)]
    pub line: Option<u32>,
}

/// CountSpec is a repeat's count: a number, or a variable holding one.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum CountSpec {
    /// Fixed: this many times.
    Fixed(u32),
    /// Var: the value of a variable, a whole number, read when the repeat starts.
    Var {
        /// var: the variable's name.
        var: String,
    },
}

/// OperandSpec is one side of a comparison: a variable's value or a constant.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum OperandSpec {
    /// Var: a variable's value, as text.
    Var {
        /// var: the variable's name.
        var: String,
    },
    /// Value: a JSON constant (a string as itself, another value as its JSON text).
    Value {
        /// value: the constant.
        value: serde_json::Value,
    },
}

/// CondSpec is a condition decided during the run: on variables, on the last response, or
/// a combination.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "cond", rename_all = "lowercase")]
pub enum CondSpec {
    /// Cmp: `left op right`, `op` one of `== != < <= > >=` (numbers compared as numbers
    /// where both sides are numbers, else text).
    Cmp {
        /// left: the left side.
        left: OperandSpec,
        /// op: the comparison.
        op: String,
        /// right: the right side.
        right: OperandSpec,
    },
    /// In: `left` equals one of `values` (`negate`: none of them).
    In {
        /// left: the value tested.
        left: OperandSpec,
        /// values: the set.
        values: Vec<serde_json::Value>,
        /// negate: "not in".
        #[serde(default)]
        negate: bool,
    },
    /// Match: a variable's value matches a regular expression (Rust `regex` syntax).
    Match {
        /// var: the variable.
        var: String,
        /// pattern: the expression.
        pattern: String,
    },
    /// Check: a check holds on the response the VU received last.
    Check {
        /// check: the check.
        check: CheckSpec,
    },
    /// All: every condition holds (true when there are none).
    All {
        /// of: the conditions.
        of: Vec<CondSpec>,
    },
    /// Any: at least one condition holds.
    Any {
        /// of: the conditions.
        of: Vec<CondSpec>,
    },
    /// Not: the condition does not hold.
    Not {
        /// of: the condition.
        of: Box<CondSpec>,
    },
}

/// FlowSpec is a weighted flow.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct FlowSpec {
    /// name: the flow's name.
    pub name: String,
    /// weight: its share of iterations.
    #[serde(default = "one")]
    pub weight: u32,
    /// steps: what it does.
    pub steps: Vec<StepSpec>,
    /// line: the scenario line.
    #[serde(default)]
    pub line: Option<u32>,
}

fn one() -> u32 {
    1
}

/// DataSpec is a data set: rows of string columns.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct DataSpec {
    /// name: the data set's name (its columns are the variables `data.NAME.COLUMN`).
    pub name: String,
    /// per: `iteration` (the next row each iteration) or `vu` (one row per VU).
    pub per: String,
    /// columns: the column names.
    pub columns: Vec<String>,
    /// rows: the rows, each as long as `columns` (a JSON data file; empty with `csv`).
    #[serde(default)]
    pub rows: Vec<Vec<String>>,
    /// csv: a CSV data file's text, header first, parsed by the engine (see
    /// [`super::data`]): the plan carries a large file once, in its own compact form.
    #[serde(default)]
    pub csv: Option<String>,
    /// order: `sequential` (the default) or `random`.
    #[serde(default = "sequential")]
    pub order: String,
    /// unique: each row is used at most once in the run.
    #[serde(default)]
    pub unique: bool,
    /// on_exhausted: `recycle`, `stop` or `error` (default: `stop` when unique, else
    /// `recycle`).
    #[serde(default)]
    pub on_exhausted: Option<String>,
    /// slice: `[index, count]`: this injector keeps rows `index`, `index + count`, ... (a
    /// cluster deals each row to one injector).
    #[serde(default)]
    pub slice: Option<[u32; 2]>,
    /// line: the scenario line that declared the set.
    #[serde(default)]
    pub line: Option<u32>,
}

fn sequential() -> String {
    "sequential".into()
}

/// PythonSpec names a Python step's function.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct PythonSpec {
    /// name: the function's name, for the report.
    pub name: String,
    /// key: where the Python package keeps it (read by Python, not here).
    #[serde(default)]
    pub key: String,
}

/// PlanSpec is a whole plan.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct PlanSpec {
    /// version: the plan format version.
    #[serde(default = "one")]
    pub version: u32,
    /// file: the scenario file, for messages.
    #[serde(default)]
    pub file: String,
    /// vars: run variables and their values.
    #[serde(default)]
    pub vars: std::collections::BTreeMap<String, String>,
    /// data: data sets.
    #[serde(default)]
    pub data: Vec<DataSpec>,
    /// python: the functions of the Python steps (their names; the binding calls them).
    #[serde(default)]
    pub python: Vec<PythonSpec>,
    /// setup: steps each VU runs once before its first iteration.
    #[serde(default)]
    pub setup: Vec<StepSpec>,
    /// flows: the weighted flows.
    pub flows: Vec<FlowSpec>,
    /// pacing_s: an iteration starts at most every `pacing_s` (closed model).
    #[serde(default)]
    pub pacing_s: Option<f64>,
    /// iterations: each VU stops after this many iterations.
    #[serde(default)]
    pub iterations: Option<u64>,
}
