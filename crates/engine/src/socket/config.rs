//! What a WebSocket run is asked to do ([`SocketConfig`], JSON from Python) and the checked
//! [`Plan`] the sockets follow: every rule about the options lives here, once.

use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

use serde::Deserialize;

use crate::error::EngineError;
use crate::socket::matcher::Rule;

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
    /// url: `ws://host:port/path?query`.
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
}

impl SocketConfig {
    /// from_json parses a configuration (a malformed one is a [`EngineError::Config`]).
    pub fn from_json(json: &str) -> Result<Self, EngineError> {
        serde_json::from_str(json).map_err(|e| EngineError::config(format!("socket run: {e}")))
    }

    /// check validates every option, resolves the host once and gives the plan.
    pub(crate) fn check(&self) -> Result<Plan, EngineError> {
        let (uri, addr) = target(&self.url)?;
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
        let seconds = |name: &str, v: f64| {
            if v.is_finite() && v > 0.0 && v < 1e9 {
                Ok(Duration::from_secs_f64(v))
            } else {
                Err(EngineError::config(format!(
                    "{name} must be a positive number of seconds, got {v}"
                )))
            }
        };
        let duration = match (self.duration_s, messages) {
            (Some(d), _) => Some(seconds("duration", d)?),
            (None, Some(_)) => None,
            (None, None) => Some(Duration::from_secs_f64(DEFAULT_DURATION_S)),
        };
        let timeout = seconds("timeout", self.timeout_s.unwrap_or(DEFAULT_TIMEOUT_S))?;
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
        })
    }
}

/// target parses a `ws://` URL and resolves its host once (wss:// is refused for now).
fn target(url: &str) -> Result<(http::Uri, SocketAddr), EngineError> {
    let uri: http::Uri = url
        .parse()
        .map_err(|e| EngineError::config(format!("{url:?}: {e}")))?;
    match uri.scheme_str() {
        Some("ws") => {}
        Some("wss") => {
            return Err(EngineError::config(
                "wss:// is not supported yet: redline's WebSocket runs speak ws:// only",
            ))
        }
        _ => {
            return Err(EngineError::config(format!(
                "{url:?}: a WebSocket URL starts with ws://"
            )))
        }
    }
    let host = uri
        .host()
        .ok_or_else(|| EngineError::config(format!("{url:?}: no host")))?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let port = uri.port_u16().unwrap_or(80);
    let addr = (host, port)
        .to_socket_addrs()
        .map_err(|e| EngineError::Unreachable(format!("{host}: {e}")))?
        .next()
        .ok_or_else(|| EngineError::Unreachable(format!("{host}: no address")))?;
    Ok((uri, addr))
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
    fn bad_options_are_one_line_each() {
        let cases: Vec<(&str, SocketConfig, &str)> = vec![
            (
                "http",
                config(|c| c.url = "http://h/".into()),
                "starts with ws://",
            ),
            (
                "wss",
                config(|c| c.url = "wss://h/".into()),
                "wss:// is not supported",
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
