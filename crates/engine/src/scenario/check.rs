//! Checks: conditions a response must meet (status in a set, a JSON value in or not in a
//! set, the body containing a text, latency under a bound). A failed check fails its
//! request with a reason, counted under the request's name; the same conditions end polls.

use std::time::Duration;

use serde_json::Value;

use super::json::find;
use super::spec::PathSeg;
use crate::message::Response;

/// Check is one condition on a response.
#[derive(Debug, Clone, PartialEq)]
pub enum Check {
    /// Status: the status is one of these.
    Status(Vec<u16>),
    /// Json: the value at `path` is (`negate` false) or is not (true) one of `values`.
    Json {
        /// path: the parsed path.
        path: Vec<PathSeg>,
        /// text: the path as written.
        text: String,
        /// values: the set.
        values: Vec<Value>,
        /// negate: "not in" rather than "in".
        negate: bool,
    },
    /// Contains: the body contains these bytes.
    Contains(String),
    /// Latency: the response took at most this long.
    Latency(Duration),
}

/// Seen is what a check looks at.
pub struct Seen<'a> {
    /// status: the response status.
    pub status: u16,
    /// latency: how long the response took.
    pub latency: Duration,
    /// resp: the response, as its protocol read it.
    pub resp: &'a Response,
}

fn show(values: &[Value]) -> String {
    match values {
        [one] => one.to_string(),
        many => Value::Array(many.to_vec()).to_string(),
    }
}

impl Check {
    /// holds says whether the check holds, without the reason (nothing is written when it
    /// does not: a condition that is false is no failure).
    pub fn holds(&self, seen: &Seen<'_>) -> bool {
        match self {
            Check::Status(codes) => codes.contains(&seen.status),
            Check::Json {
                path,
                values,
                negate,
                ..
            } => match find(&seen.resp.body, path) {
                Ok(Some(v)) => values.contains(&v) != *negate,
                _ => false,
            },
            Check::Contains(text) => {
                let body = &seen.resp.body;
                !text.is_empty() && body.windows(text.len()).any(|w| w == text.as_bytes())
            }
            Check::Latency(max) => seen.latency <= *max,
        }
    }

    /// eval returns None when the check holds, else the reason it failed. Reasons name what
    /// was wanted and, for short JSON values, what came, so that they group well.
    pub fn eval(&self, seen: &Seen<'_>) -> Option<String> {
        // One judgement (holds); what follows only words the reason.
        if self.holds(seen) {
            return None;
        }
        match self {
            Check::Status(codes) => (!codes.contains(&seen.status)).then(|| {
                let want: Vec<String> = codes.iter().map(u16::to_string).collect();
                format!("status {} not in [{}]", seen.status, want.join(", "))
            }),
            Check::Json {
                path,
                text,
                values,
                negate,
            } => {
                let v = match find(&seen.resp.body, path) {
                    Err(_) => return Some(format!("{text}: body is not JSON")),
                    Ok(None) => return Some(format!("{text}: not found")),
                    Ok(Some(v)) => v,
                };
                let found = values.contains(&v);
                if found != *negate {
                    return None;
                }
                let mut got = v.to_string();
                if got.len() > 40 {
                    got = "(a long value)".to_string();
                }
                Some(if *negate {
                    format!("{text} is {got}, expected none of {}", show(values))
                } else {
                    format!("{text} is {got}, expected {}", show(values))
                })
            }
            Check::Contains(text) => {
                let body = &seen.resp.body;
                let hit =
                    !text.is_empty() && body.windows(text.len()).any(|w| w == text.as_bytes());
                (!hit).then(|| format!("body does not contain {text:?}"))
            }
            Check::Latency(max) => (seen.latency > *max)
                .then(|| format!("latency over {} ms", max.as_secs_f64() * 1e3)),
        }
    }
}

/// expected_errors is the error statuses a request's status checks accept, sorted: those
/// of 400 or more, or for a gRPC call (`grpc`) the codes other than OK.
pub fn expected_errors(checks: &[Check], grpc: bool) -> Vec<u16> {
    let error = |c: &u16| if grpc { *c != 0 } else { *c >= 400 };
    let mut expected: Vec<u16> = checks
        .iter()
        .filter_map(|c| match c {
            Check::Status(codes) => Some(codes.iter().copied().filter(error)),
            _ => None,
        })
        .flatten()
        .collect();
    expected.sort_unstable();
    expected.dedup();
    expected
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_or_names_why_not() {
        let raw: &[u8] =
            b"HTTP/1.1 202 Accepted\r\nContent-Length: 19\r\n\r\n{\"status\":\"FAILED\"}";
        let resp = crate::http::read_whole(raw);
        let st = |op_not: bool, vals: &[&str]| Check::Json {
            path: vec![PathSeg::Key("status".into())],
            text: "$.status".into(),
            values: vals.iter().map(|v| Value::String(v.to_string())).collect(),
            negate: op_not,
        };
        let cases: Vec<(&str, Check, Option<&str>)> = vec![
            ("status in set", Check::Status(vec![200, 202]), None),
            (
                "status not in set",
                Check::Status(vec![200]),
                Some("status 202 not in [200]"),
            ),
            (
                "json eq fails",
                st(false, &["SUCCEEDED"]),
                Some("$.status is \"FAILED\", expected \"SUCCEEDED\""),
            ),
            ("json in", st(false, &["SUCCEEDED", "FAILED"]), None),
            (
                "json not in",
                st(true, &["FAILED"]),
                Some("$.status is \"FAILED\", expected none of \"FAILED\""),
            ),
            ("json not in holds", st(true, &["X"]), None),
            ("contains", Check::Contains("FAIL".into()), None),
            (
                "contains fails",
                Check::Contains("nope".into()),
                Some("body does not contain \"nope\""),
            ),
            (
                "latency ok",
                Check::Latency(Duration::from_millis(10)),
                None,
            ),
            (
                "latency over",
                Check::Latency(Duration::from_millis(1)),
                Some("latency over 1 ms"),
            ),
        ];
        for (label, check, want) in cases {
            let seen = Seen {
                status: 202,
                latency: Duration::from_millis(5),
                resp: &resp,
            };
            let got = check.eval(&seen);
            assert_eq!(got.as_deref(), want, "{label}");
            assert_eq!(check.holds(&seen), want.is_none(), "{label}: holds agrees");
        }
    }
}
