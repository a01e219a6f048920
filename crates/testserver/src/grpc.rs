//! gRPC's truth probe: the service `redline.probe.Probe` of `examples/grpc/probe.proto`,
//! served on the HTTP/2 port (h2c or TLS) to any request whose content type is gRPC's.
//!
//! - `Unary` answers once, `delay_ms` after the call arrived: a client reads a latency of
//!   `delay_ms`.
//! - `Stream` answers `count` messages (10 when 0), the first `first_ms` after the call arrived
//!   and message k at `first_ms + k * gap_ms`, on an absolute schedule (a late write does not
//!   move the next one): a client reads a first message at `first_ms` and gaps of `gap_ms`.
//! - Both end with the status `status` asks for (0, OK, by default); a unary call, or a stream
//!   of no messages, that fails is answered with trailers only, as gRPC servers do.
//!
//! Each reply is one length-prefixed message in one DATA frame, and the server counts what it
//! did in `/__stats`: `grpc_calls` answered, `grpc_messages` written, `grpc_failed` calls that
//! ended with a status other than OK. A call of another method is UNIMPLEMENTED, one whose
//! body is not a message of the probe INTERNAL (both counted as failed).

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
/// that does not decode.
const UNIMPLEMENTED: u32 = 12;
const INTERNAL: u32 = 13;

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
    let request = decode(data);
    let (sent, status) = match (path.strip_prefix(SERVICE), request) {
        (Some("Unary"), Some(req)) => {
            let due = arrived + ms(req.delay_ms);
            if req.status == 0 {
                reply(respond, &req, std::iter::once(due)).await
            } else {
                let _ = crate::sleep::until(due).await;
                (0, only_status(respond, req.status))
            }
        }
        (Some("Stream"), Some(req)) => {
            let count = (if req.count == 0 {
                DEFAULT_COUNT
            } else {
                req.count
            })
            .min(MAX_PIECES);
            let (first, gap) = (arrived + ms(req.first_ms), ms(req.gap_ms));
            let schedule = (0..count).map(|k| first + gap * k);
            reply(respond, &req, schedule).await
        }
        (Some("Unary" | "Stream"), None) => (0, only_status(respond, INTERNAL)),
        _ => (0, only_status(respond, UNIMPLEMENTED)),
    };
    counters.add_grpc(sent, status != 0);
}

/// ms is `n` milliseconds.
fn ms(n: u32) -> Duration {
    Duration::from_millis(u64::from(n))
}

/// decode reads the request's one message (a flag byte of 0, its length, the message).
fn decode(data: &[u8]) -> Option<ProbeRequest> {
    let (&flag, rest) = data.split_first()?;
    let (len, message) = rest.split_first_chunk::<4>()?;
    if flag != 0 || u32::from_be_bytes(*len) as usize != message.len() {
        return None;
    }
    ProbeRequest::decode(message).ok()
}

/// reply writes one reply at each instant of `schedule` (the head with the first), then the
/// trailers with the request's status; gives the replies written and the status sent. No
/// reply due: the status alone, as trailers only.
async fn reply(
    mut respond: SendResponse<Bytes>,
    req: &ProbeRequest,
    schedule: impl Iterator<Item = Instant>,
) -> (u64, u32) {
    let mut out = None;
    let mut sent = 0u64;
    for (seq, due) in schedule.enumerate() {
        if crate::sleep::until(due).await.is_err() {
            return (sent, INTERNAL);
        }
        if out.is_none() {
            match respond.send_response(head(None), false) {
                Ok(o) => out = Some(o),
                Err(_) => return (sent, INTERNAL),
            }
        }
        let Some(o) = out.as_mut() else {
            return (sent, INTERNAL);
        };
        let message = ProbeReply {
            seq: seq as u64,
            payload: req.payload.clone(),
        }
        .encode_to_vec();
        if o.send_data(frame(&message), false).is_err() {
            return (sent, INTERNAL);
        }
        sent += 1;
    }
    match out {
        None => (sent, only_status(respond, req.status)),
        Some(mut o) => {
            let _ = o.send_trailers(status_headers(req.status));
            (sent, req.status)
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

/// status_headers are `grpc-status` (and, for a failure, `grpc-message`).
fn status_headers(code: u32) -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert("grpc-status", HeaderValue::from(code));
    if code != 0 {
        h.insert("grpc-message", HeaderValue::from_static("probe status"));
    }
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
    fn requests_decode_only_when_framed_whole() {
        let req = ProbeRequest {
            delay_ms: 20,
            status: 14,
            ..ProbeRequest::default()
        };
        let framed = frame(&req.encode_to_vec());
        assert_eq!(decode(&framed), Some(req));
        assert_eq!(decode(&framed[..framed.len() - 1]), None, "short");
        let mut compressed = framed.to_vec();
        compressed[0] = 1;
        assert_eq!(decode(&compressed), None, "compressed");
        assert_eq!(decode(b""), None);
        assert_eq!(decode(&[0, 0, 0, 0, 0]), Some(ProbeRequest::default()));
    }
}
