//! What to run: [`RunConfig`] as the Python package sends it, and its checked form [`Checked`].
//!
//! `RunConfig` is a flat, serde-friendly record (read from the Python dict, its flags strictly:
//! `strict.rs`); all the interpretation (load model, limits, ramps) happens once in
//! [`RunConfig::check`], so the workers only ever see consistent, typed settings.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use serde::Deserialize;

use crate::error::EngineError;
use crate::pacer::{Profile, Stage};
use crate::target::Target;
use crate::tls::TlsSettings;

#[path = "config_fields.rs"]
mod fields;
use fields::{check_grpc, check_headers, check_method, check_stages, check_warmup_fits};
use fields::{count, positive_secs};
pub use fields::{LatencyFrom, Protocol};

/// RunConfig is what to run, as the Python package gives it: omitted fields take the
/// defaults below; unknown fields, and flags that are not booleans, are refused.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RunConfig {
    /// url: `http://host:port/path?query` or `https://...`.
    pub url: String,
    /// method: the HTTP method, default `GET`.
    pub method: String,
    /// headers: extra request headers as `[name, value]` pairs.
    pub headers: Vec<(String, String)>,
    /// body_b64: the request body, base64 (standard alphabet).
    pub body_b64: Option<String>,
    /// connections: closed model VUs (one connection each); ignored by the open model. Signed,
    /// like every count here, so a negative value gets [`RunConfig::check`]'s message.
    pub connections: i64,
    /// rate: open model constant rate in requests per second (> 0).
    pub rate: Option<f64>,
    /// stages: ramping legs; VUs (closed) or req/s (open, when `open` is true).
    pub stages: Option<Vec<Stage>>,
    /// open: use the open model; implied by `rate`.
    #[serde(deserialize_with = "crate::strict::flag")]
    pub open: bool,
    /// max_connections: the open model's connection pool cap (default 1000).
    pub max_connections: Option<i64>,
    /// duration_s: total run time in seconds (or give `requests`, or `stages`); when none of
    /// the three is given the run lasts [`DEFAULT_DURATION_S`].
    pub duration_s: Option<f64>,
    /// requests: total number of requests to send (`-n`).
    pub requests: Option<i64>,
    /// threads: worker threads, default the available cores.
    pub threads: Option<i64>,
    /// timeout_s: per-request timeout in seconds, default 30.
    pub timeout_s: f64,
    /// warmup_s: seconds at the start excluded from the summary (still in the time series).
    pub warmup_s: f64,
    /// interval_s: reporting interval in seconds, default 1.
    pub interval_s: f64,
    /// send_ahead_s: open model: how far ahead of its due time a hit may go out with one
    /// due before it, default [`DEFAULT_SEND_AHEAD_S`] (at most [`MAX_SEND_AHEAD_S`]).
    pub send_ahead_s: f64,
    /// preflight: one TCP connect (and TLS handshake) before starting, default true.
    #[serde(deserialize_with = "crate::strict::flag")]
    pub preflight: bool,
    /// insecure: https without certificate verification (self-signed test servers).
    #[serde(deserialize_with = "crate::strict::flag")]
    pub insecure: bool,
    /// ca_file: a PEM file of CA certificates trusted for https, besides the system's.
    pub ca_file: Option<String>,
    /// live: the target (VUs or rate) may change during the run through
    /// [`crate::control::LoadControl`]; the run starts at `connections` or `rate` and lasts
    /// until stopped (or `duration_s`, its upper bound).
    #[serde(deserialize_with = "crate::strict::flag")]
    pub live: bool,
    /// max_vus: a live closed-model run's cap on VUs (default: `connections`).
    pub max_vus: Option<i64>,
    /// http2: `Some(true)` HTTP/2 (h2c with prior knowledge, or ALPN `h2` for https), `Some(false)`
    /// HTTP/1.1; `None` lets an https server choose by ALPN (plain http stays HTTP/1.1).
    #[serde(deserialize_with = "crate::strict::optional_flag")]
    pub http2: Option<bool>,
    /// streams: HTTP/2 requests in flight per connection (h2load's `-m`), default 1; the
    /// closed model then runs `connections × streams` VUs, the open model's pool holds
    /// `max_connections × streams` streams.
    pub streams: Option<i64>,
    /// plan: a scenario's compiled plan (docs/scenarios.md); each hit is then one iteration
    /// of a flow, and `url` gives only the host (its path is not used).
    pub plan: Option<serde_json::Value>,
    /// python_host: where a plan's Python steps run (the binding sets it; not in the JSON).
    #[serde(skip)]
    pub python_host: Option<crate::scenario::host::HostRef>,
    /// start_at_unix_s: the wall-clock instant (Unix seconds) the load starts at, so that
    /// several processes (a cluster's injectors) run one schedule; the run is built and
    /// waits for it. None: start at once. An instant already past starts at once.
    pub start_at_unix_s: Option<f64>,
    /// latency_from: where a request's latency starts (see [`LatencyFrom`]), default `sent`.
    pub latency_from: LatencyFrom,
    /// stream: time each response as it arrives (first byte, gaps: see [`crate::stream`]).
    #[serde(deserialize_with = "crate::strict::flag")]
    pub stream: bool,
    /// proxy: the forward proxy's URL (`http://[user:pass@]host:port`, see [`crate::proxy`]).
    pub proxy: Option<String>,
    /// grpc: requests are gRPC calls, their answers' `grpc-status` the status ([`crate::grpc`]).
    pub grpc: bool,
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            url: String::new(),
            method: "GET".to_string(),
            headers: Vec::new(),
            body_b64: None,
            connections: DEFAULT_CONNECTIONS,
            rate: None,
            stages: None,
            open: false,
            max_connections: None,
            duration_s: None,
            requests: None,
            threads: None,
            timeout_s: 30.0,
            warmup_s: 0.0,
            interval_s: 1.0,
            send_ahead_s: DEFAULT_SEND_AHEAD_S,
            preflight: true,
            insecure: false,
            ca_file: None,
            live: false,
            max_vus: None,
            http2: None,
            streams: None,
            plan: None,
            python_host: None,
            start_at_unix_s: None,
            latency_from: LatencyFrom::Sent,
            stream: false,
            proxy: None,
            grpc: false,
        }
    }
}

/// MAX_SECS bounds every time setting (about 31 years): beyond it durations overflow.
pub const MAX_SECS: f64 = 1e9;

/// DEFAULT_MAX_CONNECTIONS caps the open model's pool when the caller gives no cap.
pub const DEFAULT_MAX_CONNECTIONS: u32 = 1000;

/// DEFAULT_CONNECTIONS is the closed model's VU count when the caller gives none (wrk's
/// `-c` default is 10; 50 keeps a single-threaded server busy on loopback).
pub const DEFAULT_CONNECTIONS: i64 = 50;

/// DEFAULT_DURATION_S is how long a run lasts when it is given no duration, request count or
/// stages (wrk's default too).
pub const DEFAULT_DURATION_S: f64 = 10.0;

/// MIN_INTERVAL_S is the shortest reporting interval: each interval merges every thread's
/// histograms, and below ~50 ms that merging becomes a measurable share of the run.
pub const MIN_INTERVAL_S: f64 = 0.05;

/// DEFAULT_SEND_AHEAD_S is how far ahead of its due time an open-model hit goes out with
/// the ones due before it. Waking once per hit would cost a wake-up per request (the open
/// model's dominant CPU cost, measured at ~15 µs/request at 30k req/s); sending every hit due
/// within the next 200 µs together turns that into one wake-up per batch. Hits are never sent
/// *later* because of this, and a hit sent early is timed from its actual send, so no latency
/// is understated; what it changes is the arrival process, bunched within the window.
pub const DEFAULT_SEND_AHEAD_S: f64 = 0.0002;

/// MAX_SEND_AHEAD_S bounds `send_ahead_s`: past 10 ms the bursts are a different load, not
/// a cheaper way of sending the same one.
pub const MAX_SEND_AHEAD_S: f64 = 0.01;

/// MAX_START_WAIT_S bounds how far ahead `start_at_unix_s` may be: a start an hour away is a
/// wrong clock or a wrong unit (milliseconds), not a plan.
pub const MAX_START_WAIT_S: f64 = 3600.0;

/// MAX_COUNT bounds connections, the pool cap and threads: a million sockets is past what one
/// host can open, and the bound keeps the conversions to `u32` exact.
pub const MAX_COUNT: i64 = 1_000_000;

/// defaults: the defaults [`RunConfig::check`] applies, by option name, for the CLI's help
/// (`threads` is absent: it is the number of cores this process may run on).
pub fn defaults() -> serde_json::Value {
    let d = RunConfig::default();
    serde_json::json!({
        "method": d.method,
        "connections": d.connections,
        "max_connections": DEFAULT_MAX_CONNECTIONS,
        "duration_s": DEFAULT_DURATION_S,
        "timeout_s": d.timeout_s,
        "warmup_s": d.warmup_s,
        "interval_s": d.interval_s,
        "min_interval_s": MIN_INTERVAL_S,
        "send_ahead_s": d.send_ahead_s,
        "max_send_ahead_s": MAX_SEND_AHEAD_S,
    })
}

/// Model is the load model: who decides when the next request goes out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Model {
    /// Closed: each VU sends its next request when its last one completed.
    Closed,
    /// Open: requests arrive on a schedule whatever the server does.
    Open,
}

/// Checked is a validated configuration: typed, consistent, ready for the workers.
#[derive(Debug, Clone)]
pub struct Checked {
    /// url: the URL as given (for the report).
    pub url: String,
    /// target: where to connect and what to ask for.
    pub target: Target,
    /// method: the HTTP method, upper case.
    pub method: String,
    /// headers: extra headers, validated.
    pub headers: Vec<(String, String)>,
    /// body: the decoded request body.
    pub body: Vec<u8>,
    /// model: closed or open.
    pub model: Model,
    /// profile: VUs (closed) or req/s (open) over time.
    pub profile: Profile,
    /// max_connections: open model pool cap.
    pub max_connections: u32,
    /// duration: when the run ends, if time-bound.
    pub duration: Option<Duration>,
    /// requests: how many requests to send, if count-bound.
    pub requests: Option<u64>,
    /// threads: worker threads actually used.
    pub threads: u32,
    /// timeout: per-request timeout.
    pub timeout: Duration,
    /// warmup: the excluded start of the run.
    pub warmup: Duration,
    /// interval: the reporting interval.
    pub interval: Duration,
    /// send_ahead: the open model's window for sending hits together (see
    /// [`DEFAULT_SEND_AHEAD_S`]).
    pub send_ahead: Duration,
    /// preflight: connect once before starting.
    pub preflight: bool,
    /// tls: the TLS client settings of an https target.
    pub tls: Option<TlsSettings>,
    /// insecure: no certificate checks, for the https hosts a scenario reaches too.
    pub insecure: bool,
    /// ca_file: CA certificates trusted, for the https hosts a scenario reaches too.
    pub ca_file: Option<String>,
    /// live: the target may change during the run (see [`RunConfig::live`]).
    pub live: bool,
    /// max_vus: the most VUs the closed model can reach: the profile's peak, or a live run's cap.
    pub max_vus: u32,
    /// scenario: the resolved scenario plan, when the run executes one.
    pub scenario: Option<std::sync::Arc<crate::scenario::Script>>,
    /// start_at: the wall-clock instant the load starts at (see [`RunConfig::start_at_unix_s`]).
    pub start_at: Option<SystemTime>,
    /// protocol: the HTTP version; for an https target with `http2` unset, HTTP/1.1 until
    /// the preflight's ALPN says `h2` (see `negotiate`).
    pub protocol: Protocol,
    /// negotiate: let the server choose the protocol by ALPN in the preflight handshake.
    pub negotiate: bool,
    /// streams: requests in flight per connection (1 for HTTP/1.1).
    pub streams: u32,
    /// latency_from: where a request's latency starts.
    pub latency_from: LatencyFrom,
    /// stream: time responses as they arrive (see [`RunConfig::stream`]).
    pub stream: bool,
    /// proxy: the forward proxy the connections go through.
    pub proxy: Option<crate::proxy::Proxy>,
    /// grpc: the answers' statuses are gRPC's (see [`RunConfig::grpc`]).
    pub grpc: bool,
}

impl RunConfig {
    /// from_json parses a `RunConfig` from JSON; errors are one-line [`EngineError::Config`]s
    /// (serde's " at line 1 column 40" is left out: the JSON is built by a program, not typed).
    pub fn from_json(json: &str) -> Result<RunConfig, EngineError> {
        serde_json::from_str(json).map_err(|e| {
            let msg = e.to_string();
            let msg = match msg.rfind(" at line ") {
                Some(at) if e.line() > 0 => &msg[..at],
                _ => msg.as_str(),
            };
            EngineError::config(format!("bad run config: {msg}"))
        })
    }

    /// check validates the configuration and resolves it into [`Checked`] settings. The
    /// checks run in a fixed order, so that a config with several faults always gets the
    /// same message.
    pub fn check(&self) -> Result<Checked, EngineError> {
        let target = Target::parse(&self.url)?;
        let tls = self.tls(&target)?;
        let method = check_method(&self.method)?;
        check_headers(&self.headers)?;
        let body = self.body()?;
        let timeout = positive_secs("timeout", self.timeout_s)?;
        let interval = self.interval()?;
        let warmup = self.warmup()?;
        let send_ahead = self.send_ahead()?;
        let (protocol, negotiate, streams) = self.protocol(target.https)?;
        check_grpc(self.grpc, self.http2, self.plan.is_some())?;
        let (model, profile) = self.model_and_profile(streams)?;
        let duration = self.duration(&profile)?;
        check_warmup_fits(warmup, duration)?;
        let requests = self.requests()?;
        let max_connections = match self.max_connections {
            Some(n) => count("max_connections", n)?,
            None => DEFAULT_MAX_CONNECTIONS,
        };
        let start_at = self.start_at()?;
        let max_vus = self.vu_cap(&profile)?;
        let threads = self.threads(model, &profile, max_connections, streams)?;
        let scenario = match &self.plan {
            Some(p) => {
                let mut script = crate::scenario::Script::from_json(p, &target.authority)?
                    .with_host(self.python_host.clone())?;
                if target.https {
                    script.base = format!("https://{}", target.authority);
                }
                Some(std::sync::Arc::new(script))
            }
            None => None,
        };
        let proxy = self.proxy.as_deref().map(|p| {
            crate::proxy::Proxy::parse(p, &target, scenario.is_some(), protocol == Protocol::Http2)
        });
        let proxy = proxy.transpose()?;
        Ok(Checked {
            url: self.url.clone(),
            target,
            method,
            headers: self.headers.clone(),
            body,
            model,
            profile,
            max_connections,
            duration,
            requests,
            threads,
            timeout,
            warmup,
            interval,
            send_ahead,
            preflight: self.preflight,
            tls,
            insecure: self.insecure,
            ca_file: self.ca_file.clone(),
            live: self.live,
            max_vus,
            scenario,
            start_at,
            protocol,
            negotiate: negotiate && proxy.is_none(), // HTTP/1.1 through a proxy
            streams,
            latency_from: self.latency_from,
            stream: self.stream,
            proxy,
            grpc: self.grpc,
        })
    }

    /// tls is the TLS client settings of an https target (None for http).
    fn tls(&self, target: &Target) -> Result<Option<TlsSettings>, EngineError> {
        if !target.https {
            return Ok(None);
        }
        let tls = TlsSettings::new(&target.host, self.insecure, self.ca_file.as_deref())?;
        Ok(Some(tls))
    }

    /// body decodes `body_b64` (no body: empty).
    fn body(&self) -> Result<Vec<u8>, EngineError> {
        match &self.body_b64 {
            None => Ok(Vec::new()),
            Some(b) => base64::engine::general_purpose::STANDARD
                .decode(b)
                .map_err(|e| EngineError::config(format!("body_b64 is not valid base64: {e}"))),
        }
    }

    /// interval checks `interval_s`: positive and at least [`MIN_INTERVAL_S`].
    fn interval(&self) -> Result<Duration, EngineError> {
        let interval = positive_secs("interval", self.interval_s)?;
        if interval.as_secs_f64() < MIN_INTERVAL_S {
            return Err(EngineError::config(format!(
                "interval must be at least {}ms, got {}ms",
                MIN_INTERVAL_S * 1e3,
                self.interval_s * 1e3
            )));
        }
        Ok(interval)
    }

    /// warmup checks `warmup_s`: 0 or more (below [`MAX_SECS`]).
    fn warmup(&self) -> Result<Duration, EngineError> {
        match Duration::try_from_secs_f64(self.warmup_s) {
            Ok(w) if w.as_secs_f64() < MAX_SECS => Ok(w),
            _ => Err(EngineError::config(format!(
                "warmup must be >= 0 s, got {}",
                self.warmup_s
            ))),
        }
    }

    /// send_ahead checks `send_ahead_s`: from 0 to [`MAX_SEND_AHEAD_S`].
    fn send_ahead(&self) -> Result<Duration, EngineError> {
        match Duration::try_from_secs_f64(self.send_ahead_s) {
            Ok(d) if d.as_secs_f64() <= MAX_SEND_AHEAD_S => Ok(d),
            _ => Err(EngineError::config(format!(
                "send_ahead must be from 0 to {}ms, got {}ms",
                MAX_SEND_AHEAD_S * 1e3,
                self.send_ahead_s * 1e3
            ))),
        }
    }

    /// protocol is the HTTP version, whether the preflight negotiates it by ALPN, and the
    /// streams per connection (more than one only where HTTP/2 can carry them).
    fn protocol(&self, https: bool) -> Result<(Protocol, bool, u32), EngineError> {
        let streams = match self.streams {
            Some(n) => count("streams", n)?,
            None => 1,
        };
        let protocol = match self.http2 {
            Some(true) => Protocol::Http2,
            _ => Protocol::Http1,
        };
        let negotiate = self.http2.is_none() && https;
        if streams > 1 && self.http2 == Some(false) {
            return Err(EngineError::config(
                "streams > 1 needs HTTP/2: HTTP/1.1 sends one request at a time per connection",
            ));
        }
        if streams > 1 && self.http2.is_none() && !https {
            return Err(EngineError::config(
                "streams > 1 needs HTTP/2: add http2 (h2c with prior knowledge for http://)",
            ));
        }
        if streams > 1 && self.live {
            return Err(EngineError::config(
                "a live run does not multiplex yet: give streams 1",
            ));
        }
        Ok((protocol, negotiate, streams))
    }

    /// requests checks the request count (`-n`), when one is given.
    fn requests(&self) -> Result<Option<u64>, EngineError> {
        match self.requests {
            Some(n) if n < 1 => Err(EngineError::config(format!(
                "requests must be > 0, got {n}"
            ))),
            Some(n) => Ok(Some(n.unsigned_abs())),
            None => Ok(None),
        }
    }

    /// start_at checks `start_at_unix_s`: a finite Unix time at most [`MAX_START_WAIT_S`]
    /// ahead of this machine's clock.
    fn start_at(&self) -> Result<Option<SystemTime>, EngineError> {
        let Some(at) = self.start_at_unix_s else {
            return Ok(None);
        };
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        if !(at.is_finite() && at > 0.0) {
            return Err(EngineError::config(format!(
                "start_at_unix_s must be a Unix time in seconds, got {at}"
            )));
        }
        if at - now > MAX_START_WAIT_S {
            return Err(EngineError::config(format!(
                "start_at_unix_s is {:.0} s ahead of this machine's clock (at most {MAX_START_WAIT_S} s): \
                 is the clock or the unit wrong?",
                at - now
            )));
        }
        Ok(Some(UNIX_EPOCH + Duration::from_secs_f64(at)))
    }

    /// vu_cap is how many VUs the closed model may run: the profile's peak, or in a live run
    /// `max_vus` (lanes up to it are started as the target rises).
    fn vu_cap(&self, profile: &Profile) -> Result<u32, EngineError> {
        let peak = profile.peak().ceil().max(1.0) as u32;
        if self.live && self.stages.is_some() {
            return Err(EngineError::config(
                "a live run starts at one target: give connections or a rate, not stages",
            ));
        }
        match self.max_vus {
            None => Ok(peak),
            Some(_) if !self.live => Err(EngineError::config("max_vus needs a live run")),
            Some(n) => {
                let cap = u32::try_from(n).unwrap_or(0);
                if cap == 0 {
                    return Err(EngineError::config(format!(
                        "max_vus must be 1 to {}, got {n}",
                        u32::MAX
                    )));
                }
                if cap < peak {
                    return Err(EngineError::config(format!(
                        "max_vus ({cap}) must be at least the starting VUs ({peak})"
                    )));
                }
                Ok(cap)
            }
        }
    }

    /// model_and_profile is the load model and its profile; the closed model's VUs are
    /// `streams` per connection (a VU is one stream).
    fn model_and_profile(&self, streams: u32) -> Result<(Model, Profile), EngineError> {
        let mut stages = match &self.stages {
            Some(s) => Some(check_stages(s)?),
            None => None,
        };
        if !self.open {
            for s in stages.iter_mut().flatten() {
                s.target *= f64::from(streams);
            }
        }
        match (self.rate, stages) {
            (Some(_), Some(_)) => Err(EngineError::config("give either rate or stages, not both")),
            (Some(r), None) => {
                if !(r.is_finite() && r > 0.0) {
                    return Err(EngineError::config(format!(
                        "rate must be > 0 requests per second, got {r}"
                    )));
                }
                Ok((Model::Open, Profile::constant(r)))
            }
            (None, Some(st)) => {
                let model = if self.open {
                    Model::Open
                } else {
                    Model::Closed
                };
                Ok((model, Profile::from_stages(&st)))
            }
            (None, None) if self.open => {
                Err(EngineError::config("the open model needs a rate or stages"))
            }
            (None, None) => {
                let vus = count("connections", self.connections)?;
                let vus = f64::from(vus) * f64::from(streams);
                Ok((Model::Closed, Profile::constant(vus)))
            }
        }
    }

    fn duration(&self, profile: &Profile) -> Result<Option<Duration>, EngineError> {
        let staged = self.stages.is_some();
        match (self.duration_s, self.requests, staged) {
            (Some(_), _, true) => Err(EngineError::config(
                "stages set the duration; do not also give a duration",
            )),
            (_, Some(_), true) => Err(EngineError::config(
                "give either stages or a request count, not both",
            )),
            (Some(_), Some(_), false) => Err(EngineError::config(
                "give either a duration or a request count, not both",
            )),
            (None, None, false) => Ok(Some(Duration::from_secs_f64(DEFAULT_DURATION_S))),
            (Some(d), None, false) => Ok(Some(positive_secs("duration", d)?)),
            (None, Some(_), false) => Ok(None),
            (None, None, true) => Ok(profile.end()),
        }
    }

    fn threads(
        &self,
        model: Model,
        profile: &Profile,
        max_conn: u32,
        streams: u32,
    ) -> Result<u32, EngineError> {
        let wanted = match self.threads {
            Some(t) => count("threads", t)?,
            None => std::thread::available_parallelism()
                .map(|n| u32::try_from(n.get()).unwrap_or(1))
                .unwrap_or(1),
        };
        // More threads than connections would leave threads with nothing to do.
        let lanes = match model {
            Model::Closed => self.vu_cap(profile)?.div_ceil(streams),
            Model::Open => max_conn,
        };
        Ok(wanted.min(lanes).max(1))
    }
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
