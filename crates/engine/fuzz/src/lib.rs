//! The harness the fuzz targets share: feeding a [`ResponseReader`] the way a connection does,
//! the invariants every feed must keep, and a reference chunked decoder to compare against.
//!
//! A fuzzer that only waits for panics finds little in a parser that returns errors for
//! everything odd; these targets find wrong answers too: the same bytes must give the same
//! responses however they are split into reads, and a chunked body must decode as an
//! independent whole-input decoder says it does.

use redline_engine::http::{ParseError, ResponseReader, MAX_HEAD, MAX_LINE};

/// Outcome is what one response on the connection came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Complete: a whole response of `len` bytes on the wire.
    Complete {
        status: u16,
        body: u64,
        close: bool,
        len: usize,
    },
    /// Failed: the reader rejected the response (the connection would be dropped).
    Failed(ParseError),
    /// Pending: the input ended, without EOF, in the middle of a response.
    Pending,
}

/// Input is a fuzzer input read as flags, split points and the bytes the server sent.
///
/// Layout: byte 0 holds the flags (bit 0: the request was HEAD; bit 1: the server closes
/// after the last byte); byte 1 (mod 16) is how many split points follow, one byte each
/// giving the length of a read; the rest are the bytes.
pub struct Input<'a> {
    /// head_request: the responses answer HEAD requests (no bodies).
    pub head_request: bool,
    /// eof: the connection closes after the last byte.
    pub eof: bool,
    reads: &'a [u8],
    /// bytes: what the server sent.
    pub bytes: &'a [u8],
}

impl<'a> Input<'a> {
    /// parse splits a fuzzer input; `None` when it is too short to hold the header.
    pub fn parse(data: &'a [u8]) -> Option<Self> {
        let (&flags, rest) = data.split_first()?;
        let (&count, rest) = rest.split_first()?;
        let count = usize::from(count % 16).min(rest.len());
        let (reads, bytes) = rest.split_at(count);
        Some(Input {
            head_request: flags & 1 != 0,
            eof: flags & 2 != 0,
            reads,
            bytes,
        })
    }

    /// pieces is `bytes` cut into the reads the input asks for (the last read takes the rest).
    pub fn pieces(&self) -> Vec<&'a [u8]> {
        let mut rest = self.bytes;
        let mut out = Vec::with_capacity(self.reads.len() + 1);
        for &n in self.reads {
            let (piece, tail) = rest.split_at(usize::from(n).min(rest.len()));
            out.push(piece);
            rest = tail;
        }
        out.push(rest);
        out
    }
}

/// walk feeds `reads` to one connection's reader as `conn.rs` does: unconsumed bytes stay
/// buffered and the next read is appended; a complete response resets the reader for the next
/// (pipelined) one; with `eof` the server closes after the last read. It returns each
/// response's outcome in order, and panics when an invariant breaks.
pub fn walk(reads: &[&[u8]], head_request: bool, eof: bool) -> Vec<Outcome> {
    let mut reader = ResponseReader::new(head_request);
    let mut buf: Vec<u8> = Vec::new();
    let mut out = Vec::new();
    // len: bytes the current response consumed so far.
    let mut len = 0;
    for read in reads {
        buf.extend_from_slice(read);
        loop {
            let p = match reader.advance(&buf) {
                Ok(p) => p,
                Err(e) => {
                    out.push(Outcome::Failed(e));
                    return out;
                }
            };
            assert!(p.consumed <= buf.len(), "consumed {p:?} of {}", buf.len());
            buf.drain(..p.consumed);
            len += p.consumed;
            if !p.complete {
                // The connection keeps what is left in a buffer of at most MAX_HEAD bytes.
                assert!(buf.len() < MAX_HEAD, "{} bytes left unconsumed", buf.len());
                break;
            }
            out.push(complete(&reader, len));
            reader.reset();
            len = 0;
            if buf.is_empty() {
                break;
            }
        }
    }
    let underway = len > 0 || !buf.is_empty();
    if eof && underway {
        out.push(match reader.finish() {
            Ok(()) => complete(&reader, len + buf.len()),
            Err(e) => Outcome::Failed(e),
        });
    } else if underway {
        out.push(Outcome::Pending);
    }
    out
}

/// complete records a finished response after checking what any finished response must be.
fn complete(reader: &ResponseReader, len: usize) -> Outcome {
    assert!(len > 0, "a response completed on no bytes");
    assert!(
        (100..=999).contains(&reader.status),
        "status {}",
        reader.status
    );
    assert!(
        !(100..200).contains(&reader.status) || reader.status == 101,
        "interim status {} completed a response",
        reader.status
    );
    assert!(
        reader.body_bytes <= len as u64,
        "body {} in {len} bytes",
        reader.body_bytes
    );
    Outcome::Complete {
        status: reader.status,
        body: reader.body_bytes,
        close: reader.close,
        len,
    }
}

/// Reference is what the reference decoder makes of a chunked body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reference {
    /// Complete: `body` payload bytes in a chunked body of `len` bytes (trailers included).
    Complete { body: u64, len: usize },
    /// Invalid: the body breaks the grammar or a line limit.
    Invalid,
    /// Incomplete: the bytes end before the body does.
    Incomplete,
}

/// reference_chunked decodes a whole chunked body with the grammar the reader promises, written
/// independently of it (no httparse, no incremental state): a chunk-size line is 1 to 16
/// hex digits, optional spaces or tabs, an optional `;` extension (any bytes but CR), CRLF,
/// and at most [`MAX_LINE`] bytes; chunk data is followed by CRLF; after the last (zero)
/// chunk come trailer lines up to an empty one, each at most [`MAX_LINE`] bytes with its LF.
pub fn reference_chunked(b: &[u8]) -> Reference {
    let mut at = 0;
    let mut body = 0u64;
    loop {
        let (size, line) = match size_line(&b[at..]) {
            Ok(found) => found,
            Err(r) => return r,
        };
        at += line;
        if size == 0 {
            break;
        }
        let left = (b.len() - at) as u64;
        if left < size {
            return Reference::Incomplete;
        }
        at += size as usize;
        body += size;
        match &b[at..] {
            [b'\r', b'\n', ..] => at += 2,
            [] | [b'\r'] => return Reference::Incomplete,
            _ => return Reference::Invalid,
        }
    }
    loop {
        let window = &b[at..b.len().min(at + MAX_LINE)];
        let Some(lf) = window.iter().position(|&c| c == b'\n') else {
            return if window.len() == MAX_LINE {
                Reference::Invalid
            } else {
                Reference::Incomplete
            };
        };
        at += lf + 1;
        if lf == 0 || (lf == 1 && b[at - 2] == b'\r') {
            return Reference::Complete { body, len: at };
        }
    }
}

/// size_line reads a chunk-size line: its size and length, or how it fails.
fn size_line(b: &[u8]) -> Result<(u64, usize), Reference> {
    #[derive(PartialEq)]
    enum Part {
        Digits,
        Space,
        Extension,
    }
    let mut part = Part::Digits;
    let (mut size, mut digits) = (0u64, 0);
    for (i, &c) in b.iter().enumerate().take(MAX_LINE) {
        if i == 0 && !c.is_ascii_hexdigit() {
            return Err(Reference::Invalid);
        }
        match c {
            b'\r' => {
                return match b.get(i + 1) {
                    // The line ends at i + 1 and must fit in MAX_LINE bytes.
                    Some(b'\n') if i + 1 < MAX_LINE => Ok((size, i + 2)),
                    None if i + 1 < MAX_LINE => Err(Reference::Incomplete),
                    _ => Err(Reference::Invalid),
                };
            }
            _ if part == Part::Extension => {}
            b';' => part = Part::Extension,
            b' ' | b'\t' if digits > 0 => part = Part::Space,
            _ if part == Part::Digits && c.is_ascii_hexdigit() && digits < 16 => {
                let d = (c as char).to_digit(16).unwrap_or(0);
                size = size * 16 + u64::from(d);
                digits += 1;
            }
            _ => return Err(Reference::Invalid),
        }
    }
    if b.len() >= MAX_LINE {
        Err(Reference::Invalid)
    } else {
        Err(Reference::Incomplete)
    }
}
