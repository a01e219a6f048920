//! Extractions: a variable's value taken from a response (a JSON path, a header, a regex
//! group). A failed extraction is a reason, counted under the request's name.

use std::fmt::Write as _;

use regex::bytes::{CaptureLocations, Regex};
use serde_json::Value;

use super::json::find;
use super::spec::PathSeg;
use crate::message::Response;

/// Source is where an extraction looks.
#[derive(Debug, Clone)]
pub enum Source {
    /// Json: the value at a JSON path of the body.
    Json {
        /// path: the parsed path.
        path: Vec<PathSeg>,
        /// text: the path as written.
        text: String,
    },
    /// Header: a response header.
    Header(String),
    /// Regex: a capture group of the first match in the body.
    Regex {
        /// re: the compiled expression.
        re: Regex,
        /// group: the capture group.
        group: usize,
    },
    /// Status: the status code.
    Status,
}

/// Extract sets variable `slot` from a response.
#[derive(Debug, Clone)]
pub struct Extract {
    /// slot: the variable set.
    pub slot: usize,
    /// source: where the value comes from.
    pub source: Source,
    /// default: the value taken when the response has none (else the request fails).
    pub default: Option<String>,
}

/// as_text renders a JSON value as a variable's text: strings without quotes, the rest as
/// JSON.
pub fn as_text(v: &Value, out: &mut String) {
    out.clear();
    match v {
        Value::String(s) => out.push_str(s),
        other => out.push_str(&other.to_string()),
    }
}

/// Miss is why a response holds no value for an extraction (worded only when it fails a
/// request: one with a default takes the default without writing a reason).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Miss {
    NotJson,
    NotFound,
    GroupUnmatched,
}

impl Extract {
    /// run writes the extracted value into `out`, or returns the reason it failed. `locs` is
    /// the caller's reusable capture storage for this extraction's regex (made on first use),
    /// so that a regex extraction allocates nothing per response.
    pub fn run(
        &self,
        resp: &Response,
        out: &mut String,
        locs: &mut Option<CaptureLocations>,
    ) -> Result<(), String> {
        match (self.find(resp, out, locs), &self.default) {
            (Ok(()), _) => Ok(()),
            (Err(_), Some(d)) => {
                out.clear();
                out.push_str(d);
                Ok(())
            }
            (Err(miss), None) => Err(self.reason(miss)),
        }
    }

    /// reason words a miss for the failures table.
    fn reason(&self, miss: Miss) -> String {
        match (&self.source, miss) {
            (Source::Json { text, .. }, Miss::NotJson) => {
                format!("extract {text}: body is not JSON")
            }
            (Source::Json { text, .. }, _) => format!("extract {text}: not found"),
            (Source::Header(name), _) => format!("extract header {name}: not found"),
            (Source::Regex { re, group }, Miss::GroupUnmatched) => {
                format!("extract regex {}: group {group} did not match", re.as_str())
            }
            (Source::Regex { re, .. }, _) => format!("extract regex {}: no match", re.as_str()),
            (Source::Status, _) => "extract status: none".to_string(),
        }
    }

    /// find writes the value found into `out`, or says why there is none.
    fn find(
        &self,
        resp: &Response,
        out: &mut String,
        locs: &mut Option<CaptureLocations>,
    ) -> Result<(), Miss> {
        match &self.source {
            Source::Status => {
                out.clear();
                let _ = write!(out, "{}", resp.status);
                Ok(())
            }
            Source::Json { path, .. } => {
                let v = find(&resp.body, path)
                    .map_err(|_| Miss::NotJson)?
                    .ok_or(Miss::NotFound)?;
                as_text(&v, out);
                Ok(())
            }
            Source::Header(name) => {
                let v = resp.first(name).ok_or(Miss::NotFound)?;
                out.clear();
                out.push_str(v);
                Ok(())
            }
            Source::Regex { re, group } => {
                let locs = locs.get_or_insert_with(|| re.capture_locations());
                re.captures_read(locs, &resp.body).ok_or(Miss::NotFound)?;
                let (start, end) = locs.get(*group).ok_or(Miss::GroupUnmatched)?;
                let text = &resp.body[start..end];
                out.clear();
                match std::str::from_utf8(text) {
                    Ok(s) => out.push_str(s),
                    Err(_) => out.push_str(&String::from_utf8_lossy(text)),
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(k: &str) -> PathSeg {
        PathSeg::Key(k.to_string())
    }

    #[test]
    fn extracts_from_each_source() {
        let raw: &[u8] =
            b"HTTP/1.1 200 OK\r\nLocation: /t/9\r\nContent-Length: 40\r\n\r\n{\"id\":\"ab\",\"n\":[1,2,3],\"o\":{\"k\":true}}";
        let resp = crate::http::read_whole(raw);
        let cases: Vec<(&str, Source, Result<&str, &str>)> = vec![
            (
                "json string",
                Source::Json {
                    path: vec![key("id")],
                    text: "$.id".into(),
                },
                Ok("ab"),
            ),
            (
                "json index from end",
                Source::Json {
                    path: vec![key("n"), PathSeg::Index(-1)],
                    text: "$.n[-1]".into(),
                },
                Ok("3"),
            ),
            (
                "json object",
                Source::Json {
                    path: vec![key("o")],
                    text: "$.o".into(),
                },
                Ok("{\"k\":true}"),
            ),
            (
                "json missing",
                Source::Json {
                    path: vec![key("zz")],
                    text: "$.zz".into(),
                },
                Err("extract $.zz: not found"),
            ),
            ("header", Source::Header("location".into()), Ok("/t/9")),
            (
                "header missing",
                Source::Header("x-nope".into()),
                Err("extract header x-nope: not found"),
            ),
            (
                "regex group",
                Source::Regex {
                    re: Regex::new("\"id\":\"(\\w+)\"").unwrap(),
                    group: 1,
                },
                Ok("ab"),
            ),
            (
                "regex no match",
                Source::Regex {
                    re: Regex::new("zzz").unwrap(),
                    group: 0,
                },
                Err("extract regex zzz: no match"),
            ),
        ];
        for (label, source, want) in cases {
            let mut out = String::new();
            let got = Extract {
                slot: 0,
                source,
                default: None,
            }
            .run(&resp, &mut out, &mut None);
            match want {
                Ok(v) => {
                    assert_eq!(got, Ok(()), "{label}");
                    assert_eq!(out, v, "{label}");
                }
                Err(e) => assert_eq!(got, Err(e.to_string()), "{label}"),
            }
        }
    }

    #[test]
    fn a_default_stands_for_a_missing_value_and_the_status_is_there() {
        let raw: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}";
        let resp = crate::http::read_whole(raw);
        let x = Extract {
            slot: 0,
            source: Source::Header("x-next".into()),
            default: Some("none".into()),
        };
        let mut out = "old".to_string();
        assert_eq!(x.run(&resp, &mut out, &mut None), Ok(()));
        assert_eq!(out, "none");
        // The status is always there.
        let x = Extract {
            slot: 0,
            source: Source::Status,
            default: None,
        };
        assert_eq!(x.run(&resp, &mut out, &mut None), Ok(()));
        assert_eq!(out, "200");
    }

    #[test]
    fn a_body_that_is_not_json_is_a_reason() {
        let raw: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc";
        let resp = crate::http::read_whole(raw);
        let x = Extract {
            slot: 0,
            source: Source::Json {
                path: vec![key("id")],
                text: "$.id".into(),
            },
            default: None,
        };
        let got = x.run(&resp, &mut String::new(), &mut None);
        assert_eq!(got, Err("extract $.id: body is not JSON".to_string()));
    }
}
