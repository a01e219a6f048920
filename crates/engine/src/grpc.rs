//! gRPC calls from a `.proto` read at run time, as ghz and grpcurl make them: the file is
//! compiled by protox (pure Rust, no protoc) into prost-reflect's descriptors, the method's
//! input message is read from the caller's JSON (proto3's JSON mapping, unknown fields
//! refused) into a `DynamicMessage`, and encoded once. A client-streaming or bidirectional
//! method takes a JSON array of messages, as ghz does: the call sends them one after another
//! (one body of framed messages) and then half-closes.
//!
//! A gRPC call is an HTTP/2 POST to `/package.Service/Method` whose body is length-prefixed
//! messages and whose answer ends with a `grpc-status` trailer; the run sends it through the
//! engine's own HTTP/2 lanes (`http2.rs`), so that a call is timed, paced, counted and
//! reported exactly as a request is (open and closed model, stages, find, the live page).
//! What is gRPC's own lives here: the call prepared from the `.proto` ([`prepare`]), the
//! message framing ([`frame`], and [`crate::stream`]'s counting of streamed messages), the
//! status codes ([`status`], [`from_http`], [`CODES`]) and the call's deadline and status
//! message as their headers write them ([`timeout_header`], [`message_text`]).

use std::path::{Path, PathBuf};
use std::time::Duration;

use miette::Diagnostic as _;
use prost::Message as _;
use prost_reflect::{
    DescriptorPool, DynamicMessage, MessageDescriptor, MethodDescriptor, SerializeOptions,
};

use crate::error::EngineError;

/// CODES names gRPC's status codes by number (grpc/doc/statuscodes.md); a code past them
/// is named by its number.
pub const CODES: [&str; 17] = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
];

/// DEADLINE_EXCEEDED is the code of a call whose deadline passed before its answer ended,
/// whichever side saw it pass first: the server told by `grpc-timeout`, or the client.
pub const DEADLINE_EXCEEDED: u16 = 4;

/// MAX_MESSAGE bounds the characters of a `grpc-message` kept in a failure's reason: a
/// reason is a key of the run's table of reasons, and a server may write a page there.
pub const MAX_MESSAGE: usize = 120;

/// MAX_CODE bounds a `grpc-status` value read as a code: gRPC's are 0-16, and anything at
/// 100 or past would read as an HTTP status in the run's table of answers.
const MAX_CODE: u16 = 99;

/// Call is one method's request, ready to go as the body of an HTTP/2 POST.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    /// path: `/package.Service/Method`, the request's `:path`.
    pub path: String,
    /// body: the request message, framed (see [`frame`]).
    pub body: Vec<u8>,
    /// server_streaming: the method answers with a stream of messages.
    pub server_streaming: bool,
    /// client_streaming: the method reads a stream of messages (bidirectional when
    /// `server_streaming` too).
    pub client_streaming: bool,
    /// messages: the request messages the body holds (one, unless the client streams).
    pub messages: usize,
    /// input: the request message's full name (`package.Message`).
    pub input: String,
}

/// prepare compiles `proto` (its imports looked up beside it, then in `includes`, then among
/// protobuf's well-known files), finds `method` (`package.Service/Method`) and encodes
/// `json` as its input message: for a client-streaming or bidirectional method, a JSON array
/// as that many messages (an object as one). Each mistake is one line naming what does not
/// fit.
pub fn prepare(
    proto: &Path,
    includes: &[PathBuf],
    method: &str,
    json: &str,
) -> Result<Call, EngineError> {
    let found = method_of(proto, includes, method)?;
    let input = found.input();
    let client = found.is_client_streaming();
    let mut body = Vec::new();
    let messages = encode(&found, json.as_bytes(), &mut body).map_err(EngineError::config)?;
    Ok(Call {
        path: format!("/{}/{}", found.parent_service().full_name(), found.name()),
        body,
        server_streaming: found.is_server_streaming(),
        client_streaming: client,
        messages,
        input: input.full_name().to_string(),
    })
}

/// method_of compiles `proto` (its imports looked up beside it, then in `includes`, then
/// among protobuf's well-known files) and finds `method` (`package.Service/Method`) in it.
pub fn method_of(
    proto: &Path,
    includes: &[PathBuf],
    method: &str,
) -> Result<MethodDescriptor, EngineError> {
    let pool = compile(proto, includes)?;
    find_method(&pool, proto, method)
}

/// encode appends `json` to `out` as `method`'s input, framed: for a client-streaming or
/// bidirectional method a JSON array as that many messages (an object as one). It gives the
/// messages written, or one line naming what does not fit.
pub fn encode(method: &MethodDescriptor, json: &[u8], out: &mut Vec<u8>) -> Result<usize, String> {
    let input = method.input();
    let unfit = |e: &dyn std::fmt::Display, at: String| {
        format!(
            "the request data does not fit {}{at}: {e}",
            input.full_name()
        )
    };
    let value: serde_json::Value =
        serde_json::from_slice(json).map_err(|e| unfit(&e, String::new()))?;
    let client = method.is_client_streaming();
    let values = match value {
        serde_json::Value::Array(items) if client => items,
        serde_json::Value::Array(_) => {
            return Err(format!(
                "gRPC method {} takes one message: a JSON array of messages goes with a \
                 client-streaming or bidirectional method",
                method.full_name()
            ))
        }
        one => vec![one],
    };
    for (i, v) in values.iter().enumerate() {
        let message = DynamicMessage::deserialize(input.clone(), v).map_err(|e| {
            let at = if client {
                format!(" (message {} of {})", i + 1, values.len())
            } else {
                String::new()
            };
            unfit(&e, at)
        })?;
        out.extend_from_slice(&frame(&message.encode_to_vec()));
    }
    Ok(values.len())
}

/// reply_json writes the framed reply messages in `body` to `out` as JSON (proto3's JSON
/// mapping, with the .proto's field names and every field, defaults included, so that a
/// path to a field finds it): one object, or for a method that streams its answer
/// (`stream`) an array of one object a message. A message that does not decode (compressed,
/// cut at the capture bound, not of `output`) ends what is written: what came before stays.
pub fn reply_json(output: &MessageDescriptor, stream: bool, body: &[u8], out: &mut Vec<u8>) {
    let options = SerializeOptions::new()
        .use_proto_field_name(true)
        .skip_default_fields(false);
    let mut rest = body;
    let mut n = 0;
    if stream {
        out.push(b'[');
    }
    while let Some((message, after)) = unframe(rest) {
        let Ok(m) = DynamicMessage::decode(output.clone(), message) else {
            break;
        };
        if n > 0 {
            out.push(b',');
        }
        let mut ser = serde_json::Serializer::new(&mut *out);
        if m.serialize_with_options(&mut ser, &options).is_err() {
            break;
        }
        n += 1;
        rest = after;
        if !stream {
            break;
        }
    }
    if stream {
        out.push(b']');
    }
}

/// unframe splits the first uncompressed message off `data` (see [`frame`]), None when
/// there is no whole one.
fn unframe(data: &[u8]) -> Option<(&[u8], &[u8])> {
    let (&flag, rest) = data.split_first()?;
    let (len, rest) = rest.split_first_chunk::<4>()?;
    let len = u32::from_be_bytes(*len) as usize;
    (flag == 0 && rest.len() >= len).then(|| rest.split_at(len))
}

/// frame puts one message in gRPC's length-prefixed framing: a flag byte (0: not
/// compressed) and the message's length as four big-endian bytes, then the message.
pub fn frame(message: &[u8]) -> Vec<u8> {
    let len = u32::try_from(message.len()).unwrap_or(u32::MAX);
    let mut out = Vec::with_capacity(5 + message.len());
    out.push(0);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(message);
    out
}

/// status reads a `grpc-status` value: its code, or None when it is not a number (or is
/// past [`MAX_CODE`]).
pub fn status(value: &[u8]) -> Option<u16> {
    let text = std::str::from_utf8(value).ok()?;
    text.trim()
        .parse::<u16>()
        .ok()
        .filter(|code| *code <= MAX_CODE)
}

/// timeout_header is `timeout` as gRPC's `grpc-timeout` header writes it (PROTOCOL-HTTP2.md:
/// at most 8 digits, then the unit): in the finest unit of nanoseconds, microseconds,
/// milliseconds, seconds, minutes and hours that holds it, rounded up, so that the server's
/// deadline is never before the client's (grpc-go picks its unit the same way).
pub fn timeout_header(timeout: Duration) -> String {
    const UNITS: [(u128, char); 6] = [
        (1, 'n'),
        (1_000, 'u'),
        (1_000_000, 'm'),
        (1_000_000_000, 'S'),
        (60_000_000_000, 'M'),
        (3_600_000_000_000, 'H'),
    ];
    let nanos = timeout.as_nanos();
    for (per, unit) in UNITS {
        let n = nanos.div_ceil(per);
        if n <= 99_999_999 {
            return format!("{n}{unit}");
        }
    }
    "99999999H".to_string()
}

/// message_text is a `grpc-message` value as text: gRPC percent-encodes it (PROTOCOL-HTTP2.md),
/// so `%XX` is decoded and the bytes read as UTF-8 (lossily), cut at [`MAX_MESSAGE`]
/// characters (then ending in `...`).
pub fn message_text(raw: &[u8]) -> String {
    let hex = |b: u8| char::from(b).to_digit(16);
    let mut bytes = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let pair = raw.get(i + 1..i + 3).map(|p| (hex(p[0]), hex(p[1])));
        match (raw[i], pair) {
            (b'%', Some((Some(hi), Some(lo)))) => {
                bytes.push(u8::try_from(hi * 16 + lo).unwrap_or(b'?'));
                i += 3;
            }
            (b, _) => {
                bytes.push(b);
                i += 1;
            }
        }
    }
    let text = String::from_utf8_lossy(&bytes);
    let text = text.trim();
    match text.char_indices().nth(MAX_MESSAGE) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.to_string(),
    }
}

/// from_http is the code a gRPC client gives an answer whose HTTP status is not 200
/// (grpc/doc/http-grpc-status-mapping.md): a proxy's 503 is UNAVAILABLE, a 404 UNIMPLEMENTED.
pub fn from_http(status: u16) -> u16 {
    match status {
        400 => 13,
        401 => 16,
        403 => 7,
        404 => 12,
        429 | 502..=504 => 14,
        _ => 2,
    }
}

/// compile reads `proto` and what it imports into a pool of descriptors.
fn compile(proto: &Path, includes: &[PathBuf]) -> Result<DescriptorPool, EngineError> {
    if !proto.is_file() {
        return Err(EngineError::config(format!(
            "--proto {}: no such file",
            proto.display()
        )));
    }
    let beside = match proto.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let mut roots = vec![beside];
    roots.extend(includes.iter().cloned());
    let mut compiler = protox::Compiler::new(&roots)
        .map_err(|e| EngineError::config(format!("--proto {}: {e}", proto.display())))?;
    compiler.include_imports(true);
    let name = proto
        .file_name()
        .map_or_else(|| proto.into(), PathBuf::from);
    compiler
        .open_file(&name)
        .map_err(|e| EngineError::config(located(&e, &roots)))?;
    Ok(compiler.descriptor_pool())
}

/// located says a compile error in one line, with the file and line it is at when protox
/// knows them (`probe.proto:7: expected ';'`).
fn located(e: &protox::Error, roots: &[PathBuf]) -> String {
    let Some(file) = e.file() else {
        return e.to_string();
    };
    let offset = e.labels().and_then(|mut l| l.next()).map(|l| l.offset());
    let text = roots
        .iter()
        .find_map(|root| std::fs::read_to_string(root.join(file)).ok());
    match (offset, text) {
        (Some(at), Some(text)) => {
            let line = 1 + text
                .as_bytes()
                .iter()
                .take(at)
                .filter(|b| **b == b'\n')
                .count();
            format!("{file}:{line}: {e}")
        }
        _ => format!("{file}: {e}"),
    }
}

/// find_method finds `Service/Method` (or `Service.Method`, as grpcurl takes it) in `pool`.
fn find_method(
    pool: &DescriptorPool,
    proto: &Path,
    method: &str,
) -> Result<MethodDescriptor, EngineError> {
    let split = method
        .trim_start_matches('/')
        .rsplit_once('/')
        .or_else(|| method.rsplit_once('.'));
    let Some((service, name)) = split.filter(|(s, n)| !s.is_empty() && !n.is_empty()) else {
        return Err(EngineError::config(format!(
            "gRPC method {method:?}: expected package.Service/Method"
        )));
    };
    let Some(svc) = pool.get_service_by_name(service) else {
        let known: Vec<String> = pool.services().map(|s| s.full_name().to_string()).collect();
        return Err(EngineError::config(format!(
            "{}: no service {service} (it has: {})",
            proto.display(),
            if known.is_empty() {
                "none".to_string()
            } else {
                known.join(", ")
            }
        )));
    };
    let found = svc.methods().find(|m| m.name() == name);
    found.ok_or_else(|| {
        let known: Vec<String> = svc.methods().map(|m| m.name().to_string()).collect();
        EngineError::config(format!(
            "service {service} has no method {name} (it has: {})",
            known.join(", ")
        ))
    })
}

#[cfg(test)]
#[path = "grpc_tests.rs"]
mod tests;
