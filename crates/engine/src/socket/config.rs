//! What a WebSocket run is asked to do ([`SocketConfig`], the dict Python gives, read in one
//! conversion by the binding) and the checked [`Plan`] the sockets follow: every rule about
//! the options lives here, once.

use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

use serde::Deserialize;

use crate::error::EngineError;
use crate::socket::matcher::Rule;
use crate::tls::TlsSettings;

/// DEFAULT_SOCKETS is the closed model's sockets when none are given (the HTTP run's 50
/// connections).
const DEFAULT_SOCKETS: u64 = 50;
/// DEFAULT_DURATION_S is how long a run sends when neither a duration nor a count is given.
const DEFAULT_DURATION_S: f64 = 10.0;
/// DEFAULT_TIMEOUT_S is how long a message waits for its reply, and a socket for its opening.
const DEFAULT_TIMEOUT_S: f64 = 30.0;
/// DEFAULT_MESSAGE is the text sent when none is given.
const DEFAULT_MESSAGE: &str = "redline";
/// MAX_SOCKETS bounds the sockets of one run (each is a file descriptor and a task).
const MAX_SOCKETS: i64 = 1_000_000;

/// SocketConfig is a WebSocket run's options as the caller gives them (absent: the default).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SocketConfig {
    /// url: `ws://host:port/path?query`, or `wss://` (TLS).
    pub url: String,
    /// sockets: sockets open at once (default 50).
    pub sockets: Option<i64>,
    /// rate: messages a second across all sockets (the open model); absent, each socket sends
    /// its next message when the last one's reply came (the closed model).
    pub rate: Option<f64>,
    /// duration_s: how long to send (default 10 s, or until `messages` without a duration).
    pub duration_s: Option<f64>,
    /// messages: stop after sending this many, all sockets together.
    pub messages: Option<i64>,
    /// message: the text sent (default "redline"); with `match_field`, a JSON object.
    pub message: Option<String>,
    /// match_field: a reply answers the message whose field of this name it carries (the
    /// field is set to a number unique on the socket); absent, the next message answers.
    pub match_field: Option<String>,
    /// timeout_s: the longest wait for a reply or for a socket to open (default 30 s).
    pub timeout_s: Option<f64>,
    /// threads: threads the sockets are spread over (default the cores, at most the sockets).
    pub threads: Option<i64>,
    /// stagger_s: the closed model's sockets send their first messages spread evenly over
    /// this long, not all at once (absent: all at once, as the HTTP closed model starts).
    pub stagger_s: Option<f64>,
    /// insecure: wss:// without certificate verification (self-signed test servers).
    #[serde(default, deserialize_with = "crate::strict::flag")]
    pub insecure: bool,
    /// ca_file: a PEM file of CA certificates trusted for wss://, besides the system's.
    pub ca_file: Option<String>,
}

/// Plan is a checked [`SocketConfig`]: what each socket follows.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    pub(crate) url: String,
    pub(crate) uri: http::Uri,
    pub(crate) addr: SocketAddr,
    pub(crate) sockets: u64,
    pub(crate) rate: Option<f64>,
    pub(crate) duration: Option<Duration>,
    pub(crate) messages: Option<u64>,
    pub(crate) rule: Rule,
    pub(crate) timeout: Duration,
    pub(crate) threads: usize,
    /// stagger: the window the closed model's first messages are spread over.
    pub(crate) stagger: Option<Duration>,
    /// tls: the TLS client settings of a `wss://` target (ALPN http/1.1: the upgrade's).
    pub(crate) tls: Option<TlsSettings>,
}

impl SocketConfig {
    /// check validates every option, resolves the host once and gives the plan.
    pub(crate) fn check(&self) -> Result<Plan, EngineError> {
        let (uri, addr, tls) = target(&self.url)?;
        let tls = match tls {
            Some(host) => Some(TlsSettings::new(
                &host,
                self.insecure,
                self.ca_file.as_deref(),
            )?),
            None => None,
        };
        let sockets = match self.sockets {
            None => DEFAULT_SOCKETS,
            Some(n) if (1..=MAX_SOCKETS).contains(&n) => n as u64,
            Some(n) => {
                return Err(EngineError::config(format!(
                    "sockets must be 1 to {MAX_SOCKETS}, got {n}"
                )))
            }
        };
        if let Some(rate) = self.rate.filter(|r| !(r.is_finite() && *r > 0.0)) {
            return Err(EngineError::config(format!(
                "rate must be a positive number of messages a second, got {rate}"
            )));
        }
        let messages = match self.messages {
            None => None,
            Some(n) if n > 0 => Some(n as u64),
            Some(n) => {
                return Err(EngineError::config(format!(
                    "messages must be at least 1, got {n}"
                )))
            }
        };
        let duration = match (self.duration_s, messages) {
            (Some(d), _) => Some(seconds("duration", d)?),
            (None, Some(_)) => None,
            (None, None) => Some(Duration::from_secs_f64(DEFAULT_DURATION_S)),
        };
        let timeout = seconds("timeout", self.timeout_s.unwrap_or(DEFAULT_TIMEOUT_S))?;
        let stagger = self.stagger()?;
        let message = self.message.as_deref().unwrap_or(DEFAULT_MESSAGE);
        let rule = Rule::new(message, self.match_field.as_deref())?;
        let wanted = match self.threads {
            None => std::thread::available_parallelism().map_or(1, |n| n.get()),
            Some(t) if (1..=1024).contains(&t) => t as usize,
            Some(t) => {
                return Err(EngineError::config(format!(
                    "threads must be 1 to 1024, got {t}"
                )))
            }
        };
        let threads = wanted
            .min(usize::try_from(sockets).unwrap_or(usize::MAX))
            .max(1);
        Ok(Plan {
            url: self.url.clone(),
            uri,
            addr,
            sockets,
            rate: self.rate,
            duration,
            messages,
            rule,
            timeout,
            threads,
            stagger,
            tls,
        })
    }

    /// stagger is the closed model's window for its first messages (the open model's are
    /// spread by its rate).
    fn stagger(&self) -> Result<Option<Duration>, EngineError> {
        match (self.stagger_s, self.rate) {
            (None, _) => Ok(None),
            (Some(_), Some(_)) => Err(EngineError::config(
                "stagger is the closed model's: the open model (rate) spreads its sends already",
            )),
            (Some(s), None) => Ok(Some(seconds("stagger", s)?)),
        }
    }
}

/// seconds reads option `name`, a positive number of seconds.
fn seconds(name: &str, v: f64) -> Result<Duration, EngineError> {
    if v.is_finite() && v > 0.0 && v < 1e9 {
        Ok(Duration::from_secs_f64(v))
    } else {
        Err(EngineError::config(format!(
            "{name} must be a positive number of seconds, got {v}"
        )))
    }
}

/// target parses a `ws://` or `wss://` URL and resolves its host once; for wss, the host name
/// TLS is to verify.
fn target(url: &str) -> Result<(http::Uri, SocketAddr, Option<String>), EngineError> {
    let uri: http::Uri = url
        .parse()
        .map_err(|e| EngineError::config(format!("{url:?}: {e}")))?;
    let (secure, default_port) = match uri.scheme_str() {
        Some("ws") => (false, 80),
        Some("wss") => (true, 443),
        _ => {
            return Err(EngineError::config(format!(
                "{url:?}: a WebSocket URL starts with ws:// or wss://"
            )))
        }
    };
    let host = uri
        .host()
        .ok_or_else(|| EngineError::config(format!("{url:?}: no host")))?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let port = uri.port_u16().unwrap_or(default_port);
    let addr = (host, port)
        .to_socket_addrs()
        .map_err(|e| EngineError::Unreachable(format!("{host}: {e}")))?
        .next()
        .ok_or_else(|| EngineError::Unreachable(format!("{host}: no address")))?;
    let name = secure.then(|| host.to_string());
    Ok((uri, addr, name))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(edit: impl FnOnce(&mut SocketConfig)) -> SocketConfig {
        let mut c = SocketConfig {
            url: "ws://127.0.0.1:9/ws".into(),
            ..SocketConfig::default()
        };
        edit(&mut c);
        c
    }

    #[test]
    fn defaults_fill_what_is_left_out() {
        let plan = config(|_| {}).check().expect("valid");
        assert_eq!(plan.sockets, 50);
        assert_eq!(plan.duration, Some(Duration::from_secs(10)));
        assert_eq!(plan.timeout, Duration::from_secs(30));
        assert_eq!(plan.rate, None);
        // A count alone runs until it is sent.
        let plan = config(|c| c.messages = Some(5)).check().expect("valid");
        assert_eq!((plan.duration, plan.messages), (None, Some(5)));
    }

    #[test]
    fn wss_speaks_tls_on_443_unless_a_port_is_given() {
        let plan = config(|c| c.url = "wss://127.0.0.1/ws".into())
            .check()
            .expect("valid");
        assert!(plan.tls.is_some());
        assert_eq!(plan.addr.port(), 443);
        let plan = config(|c| {
            c.url = "wss://127.0.0.1:8443/ws".into();
            c.insecure = true
        })
        .check()
        .expect("valid");
        assert_eq!(plan.addr.port(), 8443);
        assert!(config(|_| {}).check().expect("valid").tls.is_none());
    }

    #[test]
    fn bad_options_are_one_line_each() {
        let cases: Vec<(&str, SocketConfig, &str)> = vec![
            (
                "http",
                config(|c| c.url = "http://h/".into()),
                "starts with ws:// or wss://",
            ),
            (
                "stagger in the open model",
                config(|c| {
                    c.rate = Some(10.0);
                    c.stagger_s = Some(1.0)
                }),
                "stagger is the closed model's",
            ),
            (
                "stagger",
                config(|c| c.stagger_s = Some(0.0)),
                "stagger must be",
            ),
            (
                "sockets",
                config(|c| c.sockets = Some(0)),
                "sockets must be",
            ),
            ("rate", config(|c| c.rate = Some(0.0)), "rate must be"),
            (
                "messages",
                config(|c| c.messages = Some(0)),
                "messages must be",
            ),
            (
                "duration",
                config(|c| c.duration_s = Some(-1.0)),
                "duration must be",
            ),
            (
                "threads",
                config(|c| c.threads = Some(0)),
                "threads must be",
            ),
            (
                "field on text",
                config(|c| c.match_field = Some("id".into())),
                "a JSON object",
            ),
        ];
        for (label, c, want) in cases {
            let err = c.check().expect_err(label).to_string();
            assert!(err.contains(want), "{label}: {err}");
        }
    }
}
