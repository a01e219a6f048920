//! gRPC's truth probe: the service `redline.probe.Probe` of `examples/grpc/probe.proto`,
//! served on the HTTP/2 port (h2c or TLS) to any request whose content type is gRPC's.
//!
//! - `Unary` answers once, `delay_ms` after the call arrived: a client reads a latency of
//!   `delay_ms`.
//! - `Stream` answers `count` messages (10 when 0), the first `first_ms` after the call arrived
//!   and message k at `first_ms + k * gap_ms`, on an absolute schedule (a late write does not
//!   move the next one): a client reads a first message at `first_ms` and gaps of `gap_ms`.
//! - `Collect` (client-streaming) reads every request message and answers once, `delay_ms`
//!   (of the first message) after the call arrived, its `seq` the number of messages read.
//! - `Chat` (bidirectional) answers each request message in turn, the first `first_ms` (of
//!   the first message) after the call arrived and then one every `gap_ms`, each with the
//!   payload of the message it answers: a client reads as many replies as it sent.
//! - All end with the status `status` (of the first message) asks for (0, OK, by default); a
//!   call that sends no reply and fails is answered with trailers only, as gRPC servers do,
//!   and a failure's trailers carry `grpc-message: probe status`.
//! - A call's deadline (its `grpc-timeout`, counted from its arrival) is kept as gRPC servers
//!   keep it: no reply due after it is sent, and at the deadline the call ends
//!   DEADLINE_EXCEEDED (`grpc-message: deadline exceeded`), counted in `grpc_deadline`.
//!
//! The request's messages are read once the call's whole body has arrived (a client that
//! waits for a reply before sending its next message is not served). Each reply is one
//! length-prefixed message in one DATA frame, and the server counts what it did in
//! `/__stats`: `grpc_calls` answered, `grpc_received` request messages read, `grpc_messages`
//! written, `grpc_failed` calls that ended with a status other than OK (`grpc_deadline` those
//! its deadline ended). A call of another
//! method is UNIMPLEMENTED, one whose body is not the probe's messages INTERNAL (both counted
//! as failed), as is a unary or server-streaming call of other than one message.

use std::time::{Duration, Instant};

use bytes::Bytes;
use h2::server::SendResponse;
use http::{HeaderMap, HeaderValue, Response};
use prost::Message;

use crate::stats::Counters;
use crate::stream::MAX_PIECES;

/// SERVICE is the probe's path prefix: `/package.Service/`.
const SERVICE: &str = "/redline.probe.Probe/";

/// DEFAULT_COUNT is a stream's messages when the request asks for none.
const DEFAULT_COUNT: u32 = 10;

/// UNIMPLEMENTED and INTERNAL are the gRPC codes of a method not served and of a request
/// that does not decode; DEADLINE_EXCEEDED that of a call whose deadline passed.
const UNIMPLEMENTED: u32 = 12;
const INTERNAL: u32 = 13;
const DEADLINE_EXCEEDED: u32 = 4;

/// Ended is how a call ended: the replies written, the status sent, and whether that status
/// was its deadline's.
type Ended = (u64, u32, bool);

/// ProbeRequest is `redline.probe.ProbeRequest`: how the call wants to be answered.
#[derive(Clone, PartialEq, Message)]
pub(crate) struct ProbeRequest {
    #[prost(uint32, tag = "1")]
    delay_ms: u32,
    #[prost(uint32, tag = "2")]
    first_ms: u32,
    #[prost(uint32, tag = "3")]
    gap_ms: u32,
    #[prost(uint32, tag = "4")]
    count: u32,
    #[prost(uint32, tag = "5")]
    status: u32,
    #[prost(string, tag = "6")]
    payload: String,
}

/// ProbeReply is `redline.probe.ProbeReply`: a reply's place in the stream and the payload.
#[derive(Clone, PartialEq, Message)]
pub(crate) struct ProbeReply {
    #[prost(uint64, tag = "1")]
    seq: u64,
    #[prost(string, tag = "2")]
    payload: String,
}

/// is_grpc says whether an HTTP/2 request is a gRPC call (its content type is gRPC's).
pub(crate) fn is_grpc(parts: &http::request::Parts) -> bool {
    parts
        .headers
        .get(http::header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/grpc"))
}

/// answer answers the call `parts` asks for, whose whole body `data` has just arrived.
pub(crate) async fn answer(
    parts: &http::request::Parts,
    data: &[u8],
    respond: SendResponse<Bytes>,
    counters: &Counters,
) {
    let (path, arrived) = (parts.uri.path(), Instant::now());
    counters.add_request();
    let limit = deadline(&parts.headers).and_then(|d| arrived.checked_add(d));
    let requests = decode(data);
    let read = requests.as_ref().map_or(0, Vec::len);
    let method = path.strip_prefix(SERVICE);
    let (sent, status, late) = match (method, requests.as_deref()) {
        (Some("Unary"), Some([req])) => {
            let due = arrived + ms(req.delay_ms);
            if req.status == 0 {
                reply(respond, req.status, [(due, req.payload.clone())], limit).await
            } else {
                let (at, late) = kept(due, limit);
                let _ = crate::sleep::until(at).await;
                let code = if late { DEADLINE_EXCEEDED } else { req.status };
                (0, only_status(respond, code), late)
            }
        }
        (Some("Stream"), Some([req])) => {
            let count = (if req.count == 0 {
                DEFAULT_COUNT
            } else {
                req.count
            })
            .min(MAX_PIECES);
            let (first, gap) = (arrived + ms(req.first_ms), ms(req.gap_ms));
            let schedule = (0..count).map(|k| (first + gap * k, req.payload.clone()));
            reply(respond, req.status, schedule, limit).await
        }
        (Some("Collect"), Some(reqs)) => {
            let head = reqs.first().cloned().unwrap_or_default();
            let due = arrived + ms(head.delay_ms);
            let seq = reqs.len() as u64;
            let schedule = [(due, head.payload)];
            reply_numbered(respond, (head.status, seq, limit), schedule).await
        }
        (Some("Chat"), Some(reqs)) => {
            let head = reqs.first().cloned().unwrap_or_default();
            let (first, gap) = (arrived + ms(head.first_ms), ms(head.gap_ms));
            let n = (reqs.len() as u32).min(MAX_PIECES);
            let schedule: Vec<_> = reqs
                .iter()
                .zip(0..n)
                .map(|(r, k)| (first + gap * k, r.payload.clone()))
                .collect();
            reply(respond, head.status, schedule, limit).await
        }
        (Some("Unary" | "Stream" | "Collect" | "Chat"), _) => {
            (0, only_status(respond, INTERNAL), false)
        }
        _ => (0, only_status(respond, UNIMPLEMENTED), false),
    };
    counters.add_grpc(read as u64, sent, status != 0, late);
}

/// deadline reads a call's `grpc-timeout` (PROTOCOL-HTTP2.md: 1 to 8 digits, then the unit
/// `H`, `M`, `S`, `m`, `u` or `n`); None when it has none or it does not read.
fn deadline(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get("grpc-timeout")?.to_str().ok()?;
    let (digits, unit) = value.split_at(value.len().checked_sub(1)?);
    if digits.is_empty() || digits.len() > 8 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = digits.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(n * 3600),
        "M" => Duration::from_secs(n * 60),
        "S" => Duration::from_secs(n),
        "m" => Duration::from_millis(n),
        "u" => Duration::from_micros(n),
        "n" => Duration::from_nanos(n),
        _ => return None,
    })
}

/// kept is when a step due at `due` happens under the call's deadline `limit`: at `due`, or
/// at the deadline when that comes first (then true: the call ends there, DEADLINE_EXCEEDED).
fn kept(due: Instant, limit: Option<Instant>) -> (Instant, bool) {
    match limit {
        Some(l) if l < due => (l, true),
        _ => (due, false),
    }
}

/// ms is `n` milliseconds.
fn ms(n: u32) -> Duration {
    Duration::from_millis(u64::from(n))
}

/// decode reads the request's messages (each a flag byte of 0, its length, the message),
/// which must fill the body exactly.
fn decode(mut data: &[u8]) -> Option<Vec<ProbeRequest>> {
    let mut out = Vec::new();
    while !data.is_empty() {
        let (&flag, rest) = data.split_first()?;
        let (len, rest) = rest.split_first_chunk::<4>()?;
        let len = u32::from_be_bytes(*len) as usize;
        if flag != 0 || rest.len() < len {
            return None;
        }
        out.push(ProbeRequest::decode(&rest[..len]).ok()?);
        data = &rest[len..];
    }
    Some(out)
}

/// reply writes one reply at each instant of `schedule`, numbered from 0, with its payload,
/// under the call's deadline `limit`; see [`reply_numbered`].
async fn reply(
    respond: SendResponse<Bytes>,
    status: u32,
    schedule: impl IntoIterator<Item = (Instant, String)>,
    limit: Option<Instant>,
) -> Ended {
    reply_numbered(respond, (status, 0, limit), schedule).await
}

/// reply_numbered writes one reply at each instant of `schedule` (the head with the first),
/// numbered from `seq`, then the trailers with `status`; gives the replies written and the
/// status sent. No reply due: the status alone, as trailers only. A reply due after the
/// deadline `limit` is not written: at the deadline the call ends DEADLINE_EXCEEDED.
async fn reply_numbered(
    mut respond: SendResponse<Bytes>,
    (status, seq, limit): (u32, u64, Option<Instant>),
    schedule: impl IntoIterator<Item = (Instant, String)>,
) -> Ended {
    let mut out = None;
    let mut sent = 0u64;
    let mut status = (status, false);
    for (due, payload) in schedule {
        let (at, late) = kept(due, limit);
        if crate::sleep::until(at).await.is_err() {
            return (sent, INTERNAL, false);
        }
        if late {
            status = (DEADLINE_EXCEEDED, true);
            break;
        }
        if out.is_none() {
            match respond.send_response(head(None), false) {
                Ok(o) => out = Some(o),
                Err(_) => return (sent, INTERNAL, false),
            }
        }
        let Some(o) = out.as_mut() else {
            return (sent, INTERNAL, false);
        };
        let message = ProbeReply {
            seq: seq + sent,
            payload,
        }
        .encode_to_vec();
        if o.send_data(frame(&message), false).is_err() {
            return (sent, INTERNAL, false);
        }
        sent += 1;
    }
    let (code, late) = status;
    match out {
        None => (sent, only_status(respond, code), late),
        Some(mut o) => {
            let _ = o.send_trailers(status_headers(code));
            (sent, code, late)
        }
    }
}

/// only_status answers with trailers only: a head carrying the status, ending the stream.
fn only_status(mut respond: SendResponse<Bytes>, code: u32) -> u32 {
    let _ = respond.send_response(head(Some(code)), true);
    code
}

/// head is the answer's head: 200, gRPC's content type, and with `status` its status too.
fn head(status: Option<u32>) -> Response<()> {
    let mut r = Response::new(());
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/grpc"),
    );
    if let Some(code) = status {
        r.headers_mut().extend(status_headers(code));
    }
    r
}

/// status_headers are `grpc-status` (and, for a failure, `grpc-message`: its deadline's, or
/// the status the call asked for).
fn status_headers(code: u32) -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert("grpc-status", HeaderValue::from(code));
    let message = match code {
        0 => return h,
        DEADLINE_EXCEEDED => "deadline exceeded",
        _ => "probe status",
    };
    h.insert("grpc-message", HeaderValue::from_static(message));
    h
}

/// frame is one message in gRPC's length-prefixed framing.
fn frame(message: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(5 + message.len());
    out.push(0);
    out.extend_from_slice(&(message.len() as u32).to_be_bytes());
    out.extend_from_slice(message);
    Bytes::from(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deadline_reads_in_each_unit_and_nothing_else_does() {
        let cases = [
            ("hours", "2H", Some(Duration::from_secs(7200))),
            ("minutes", "3M", Some(Duration::from_secs(180))),
            ("seconds", "1S", Some(Duration::from_secs(1))),
            ("milliseconds", "250m", Some(Duration::from_millis(250))),
            ("microseconds", "100000u", Some(Duration::from_millis(100))),
            (
                "nanoseconds",
                "99999999n",
                Some(Duration::from_nanos(99_999_999)),
            ),
            ("nine digits", "100000000n", None),
            ("no unit", "250", None),
            ("no digits", "m", None),
            ("a unit not gRPC's", "5s", None),
            ("signed", "-5m", None),
            ("empty", "", None),
        ];
        for (label, value, want) in cases {
            let mut h = HeaderMap::new();
            h.insert("grpc-timeout", HeaderValue::from_static(value));
            assert_eq!(deadline(&h), want, "{label}");
        }
        assert_eq!(deadline(&HeaderMap::new()), None, "none given");
        let now = Instant::now();
        let (soon, later) = (now + ms(10), now + ms(20));
        assert_eq!(kept(later, Some(soon)), (soon, true), "cut at the deadline");
        assert_eq!(kept(soon, Some(later)), (soon, false), "due first");
        assert_eq!(kept(soon, None), (soon, false), "no deadline");
    }

    #[test]
    fn requests_decode_only_when_framed_whole() {
        let req = ProbeRequest {
            delay_ms: 20,
            status: 14,
            ..ProbeRequest::default()
        };
        let framed = frame(&req.encode_to_vec());
        assert_eq!(decode(&framed), Some(vec![req.clone()]));
        assert_eq!(decode(&framed[..framed.len() - 1]), None, "short");
        let mut compressed = framed.to_vec();
        compressed[0] = 1;
        assert_eq!(decode(&compressed), None, "compressed");
        assert_eq!(decode(b""), Some(vec![]), "no message");
        assert_eq!(
            decode(&[0, 0, 0, 0, 0]),
            Some(vec![ProbeRequest::default()])
        );
        let two = [&framed[..], &framed[..]].concat();
        assert_eq!(decode(&two), Some(vec![req.clone(), req]), "two in a row");
        assert_eq!(decode(&two[..two.len() - 1]), None, "the second short");
    }
}
