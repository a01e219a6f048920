//! Response encoding: status line, headers and body framing into a reusable byte buffer.

use std::io::Write;

use http::StatusCode;

/// FILLER is the repeating pattern of `size=N` bodies; large bodies are written in slices of it
/// so no buffer ever grows with N.
pub(crate) static FILLER: [u8; FILLER_LEN] = [b'x'; FILLER_LEN];
pub(crate) const FILLER_LEN: usize = 16 * 1024;

/// Framing is how the body's length is conveyed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    /// Length sends `Content-Length`.
    Length,
    /// Chunked sends `Transfer-Encoding: chunked`.
    Chunked,
}

/// Head describes a response before its body.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Head {
    pub(crate) status: StatusCode,
    pub(crate) content_type: &'static str,
    pub(crate) body_len: u64,
    pub(crate) framing: Framing,
    pub(crate) close: bool,
}

/// has_body is false for statuses that must not carry one (RFC 9110: 1xx, 204, 304).
pub(crate) fn has_body(status: StatusCode) -> bool {
    !(status.is_informational()
        || status == StatusCode::NO_CONTENT
        || status == StatusCode::NOT_MODIFIED)
}

/// encode_head appends the status line and headers.
pub(crate) fn encode_head(out: &mut Vec<u8>, head: &Head) {
    encode_head_with(out, head, &[]);
}

/// encode_head_with appends the status line, the headers, and `extra` headers (name, value).
pub(crate) fn encode_head_with(out: &mut Vec<u8>, head: &Head, extra: &[(&str, &str)]) {
    let reason = head.status.canonical_reason().unwrap_or("");
    // Writing into a Vec cannot fail.
    let _ = write!(out, "HTTP/1.1 {} {reason}\r\n", head.status.as_u16());
    if has_body(head.status) {
        match head.framing {
            Framing::Length => {
                let _ = write!(out, "content-length: {}\r\n", head.body_len);
            }
            Framing::Chunked => out.extend_from_slice(b"transfer-encoding: chunked\r\n"),
        }
        let _ = write!(out, "content-type: {}\r\n", head.content_type);
    }
    for (name, value) in extra {
        let _ = write!(out, "{name}: {value}\r\n");
    }
    if head.close {
        out.extend_from_slice(b"connection: close\r\n");
    }
    out.extend_from_slice(b"\r\n");
}

/// encode_piece appends one piece of body, framed as a chunk when chunked.
pub(crate) fn encode_piece(out: &mut Vec<u8>, piece: &[u8], framing: Framing) {
    match framing {
        Framing::Length => out.extend_from_slice(piece),
        Framing::Chunked if piece.is_empty() => {}
        Framing::Chunked => {
            let _ = write!(out, "{:x}\r\n", piece.len());
            out.extend_from_slice(piece);
            out.extend_from_slice(b"\r\n");
        }
    }
}

/// encode_end appends the last chunk of a chunked body (nothing otherwise).
pub(crate) fn encode_end(out: &mut Vec<u8>, framing: Framing) {
    if framing == Framing::Chunked {
        out.extend_from_slice(b"0\r\n\r\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(status: u16, framing: Framing, close: bool, len: u64) -> String {
        let mut out = Vec::new();
        let head = Head {
            status: StatusCode::from_u16(status).expect("valid"),
            content_type: "text/plain",
            body_len: len,
            framing,
            close,
        };
        encode_head(&mut out, &head);
        String::from_utf8(out).expect("ascii")
    }

    #[test]
    fn heads_encode() {
        let cases: &[(&str, String, &str)] = &[
            (
                "ok",
                head(200, Framing::Length, false, 3),
                "HTTP/1.1 200 OK\r\ncontent-length: 3\r\ncontent-type: text/plain\r\n\r\n",
            ),
            (
                "chunked close",
                head(500, Framing::Chunked, true, 3),
                "HTTP/1.1 500 Internal Server Error\r\ntransfer-encoding: chunked\r\n\
                 content-type: text/plain\r\nconnection: close\r\n\r\n",
            ),
            (
                "no content",
                head(204, Framing::Length, false, 3),
                "HTTP/1.1 204 No Content\r\n\r\n",
            ),
            (
                "unknown reason",
                head(599, Framing::Length, false, 0),
                "HTTP/1.1 599 \r\ncontent-length: 0\r\ncontent-type: text/plain\r\n\r\n",
            ),
        ];
        for (label, got, want) in cases {
            assert_eq!(got, want, "{label}");
        }
    }

    #[test]
    fn chunks_encode() {
        let mut out = Vec::new();
        encode_piece(&mut out, &FILLER[..26], Framing::Chunked);
        encode_piece(&mut out, b"", Framing::Chunked);
        encode_end(&mut out, Framing::Chunked);
        assert_eq!(out, b"1a\r\nxxxxxxxxxxxxxxxxxxxxxxxxxx\r\n0\r\n\r\n");
        let mut out = Vec::new();
        encode_piece(&mut out, b"ok\n", Framing::Length);
        encode_end(&mut out, Framing::Length);
        assert_eq!(out, b"ok\n");
    }
}
