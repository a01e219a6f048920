//! HTTP/2 for the target, with the `h2` crate: h2c with prior knowledge on the plain port (a
//! connection that opens with the HTTP/2 preface), and over TLS when ALPN chose `h2`.
//!
//! Each HTTP/2 request is answered by the HTTP/1.1 code (`conn.rs`) through an in-memory
//! pipe: the request is written to it as HTTP/1.1 (with `Connection: close`), and the answer
//! read back and sent as HTTP/2 frames. Every route, fault and server-wide mode therefore
//! behaves and counts alike over both protocols, at the price of a copy per request, which a
//! test server can pay. An HTTP/1.1 answer that never comes (`hang=1`) leaves the stream
//! unanswered; a reset (`reset=P`) becomes RST_STREAM.
//!
//! Two faults belong to HTTP/2 alone ([`H2Faults`], in the config): a GOAWAY after a number of requests on a
//! connection, and a flow-control window that never opens (the client can send no body).

use std::sync::Arc;

use bytes::Bytes;
use h2::server::SendResponse;
use h2::{Reason, RecvStream};
use http::{HeaderName, HeaderValue, Request, Response, StatusCode};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::config::H2Faults;
use crate::shared::Shared;

/// PREFACE is how an HTTP/2 client with prior knowledge opens a connection (RFC 9113 3.4).
pub(crate) const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// PIPE is the in-memory pipe's buffer.
const PIPE: usize = 64 * 1024;

/// is_h2c reads ahead (without consuming) whether a plain connection opens with the HTTP/2
/// preface; false as soon as the first bytes differ, or when the client closes first.
pub(crate) async fn is_h2c(stream: &TcpStream) -> bool {
    let mut buf = [0u8; PREFACE.len()];
    loop {
        let n = match stream.peek(&mut buf).await {
            Ok(0) | Err(_) => return false,
            Ok(n) => n,
        };
        if buf[..n] != PREFACE[..n] {
            return false;
        }
        if n == PREFACE.len() {
            return true;
        }
        // A partial preface: wait for more bytes (peek returns at once while data is queued).
        if stream.readable().await.is_err() {
            return false;
        }
        tokio::task::yield_now().await;
    }
}

/// serve runs one HTTP/2 connection until the client leaves or a fault ends it.
pub(crate) async fn serve<S>(io: S, shared: Arc<Shared>, thread: usize, faults: H2Faults)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let mut builder = h2::server::Builder::new();
    if let Some(w) = faults.window {
        builder.initial_window_size(w);
    }
    let Ok(mut conn) = builder.handshake::<_, Bytes>(Drained(Some(io))).await else {
        return;
    };
    let mut received = 0u64;
    while let Some(accepted) = conn.accept().await {
        let Ok((request, respond)) = accepted else {
            break;
        };
        received += 1;
        tokio::spawn(answer(request, respond, Arc::clone(&shared), thread));
        if faults.goaway_after == Some(received) {
            // Abrupt: the requests in flight are cut, the client must count them.
            conn.abrupt_shutdown(Reason::INTERNAL_ERROR);
        }
    }
}

/// Drained is a served stream that, once h2 lets go of it, is closed in order: FIN, then the
/// client's last frames read and dropped (for up to [`DRAIN`]). Closing a socket with unread
/// bytes sends RST, and a client that meets RST may lose the GOAWAY frame before it.
struct Drained<S: AsyncRead + AsyncWrite + Unpin + Send + 'static>(Option<S>);

/// DRAIN bounds how long a closed connection waits for the client's last bytes.
const DRAIN: std::time::Duration = std::time::Duration::from_secs(1);

impl<S: AsyncRead + AsyncWrite + Unpin + Send + 'static> Drop for Drained<S> {
    fn drop(&mut self) {
        let Some(mut io) = self.0.take() else { return };
        if tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        tokio::spawn(async move {
            let _ = io.shutdown().await;
            let mut sink = [0u8; 4096];
            let drain = async {
                while let Ok(n) = io.read(&mut sink).await {
                    if n == 0 {
                        break;
                    }
                }
            };
            let _ = tokio::time::timeout(DRAIN, drain).await;
        });
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send + 'static> AsyncRead for Drained<S> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        match self.0.as_mut() {
            Some(io) => std::pin::Pin::new(io).poll_read(cx, buf),
            None => std::task::Poll::Ready(Ok(())),
        }
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send + 'static> AsyncWrite for Drained<S> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        match self.0.as_mut() {
            Some(io) => std::pin::Pin::new(io).poll_write(cx, buf),
            None => std::task::Poll::Ready(Err(std::io::ErrorKind::NotConnected.into())),
        }
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        match self.0.as_mut() {
            Some(io) => std::pin::Pin::new(io).poll_flush(cx),
            None => std::task::Poll::Ready(Ok(())),
        }
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        match self.0.as_mut() {
            Some(io) => std::pin::Pin::new(io).poll_shutdown(cx),
            None => std::task::Poll::Ready(Ok(())),
        }
    }
}

/// answer has one request answered by the HTTP/1.1 code and sends the answer back.
async fn answer(
    request: Request<RecvStream>,
    mut respond: SendResponse<Bytes>,
    shared: Arc<Shared>,
    thread: usize,
) {
    let (parts, mut body) = request.into_parts();
    let mut data = Vec::new();
    while let Some(chunk) = body.data().await {
        let Ok(chunk) = chunk else { return };
        let _ = body.flow_control().release_capacity(chunk.len());
        data.extend_from_slice(&chunk);
    }
    if crate::grpc::is_grpc(&parts) {
        return crate::grpc::answer(&parts, &data, respond, shared.board.thread(thread)).await;
    }
    let wire = http1_request(&parts, &data);

    let (mut near, far) = tokio::io::duplex(PIPE);
    tokio::spawn(crate::conn::serve(far, shared, thread));
    if near.write_all(&wire).await.is_err() {
        respond.send_reset(Reason::INTERNAL_ERROR);
        return;
    }
    let mut raw = Vec::with_capacity(1024);
    let mut buf = vec![0u8; 8 * 1024];
    let (head, len, chunked) = loop {
        if let Some(parsed) = reframe_head(&raw) {
            break parsed;
        }
        match near.read(&mut buf).await {
            Ok(n) if n > 0 => raw.extend_from_slice(&buf[..n]),
            // The HTTP/1.1 side reset, dropped or cut the connection before a whole head.
            _ => return respond.send_reset(Reason::INTERNAL_ERROR),
        }
    };
    if !chunked {
        // A body of a known length (or none): sent whole once read, with its length.
        if near.read_to_end(&mut raw).await.is_err() {
            return respond.send_reset(Reason::INTERNAL_ERROR);
        }
        let body = raw.split_off(len);
        let end = body.is_empty();
        let Ok(mut out) = respond.send_response(head, end) else {
            return;
        };
        if !end {
            let _ = out.send_data(Bytes::from(body), true);
        }
        return;
    }
    // A chunked answer is a stream (`stream.rs`'s probes): each chunk goes out as a DATA frame
    // as soon as it is read, so an HTTP/2 client sees the pace an HTTP/1.1 one does.
    let Ok(mut out) = respond.send_response(head, false) else {
        return;
    };
    let mut dechunk = Dechunk::default();
    let mut payload = Vec::new();
    let mut fresh = raw.split_off(len);
    loop {
        let done = dechunk.feed(&fresh, &mut payload);
        if !payload.is_empty()
            && out
                .send_data(Bytes::from(std::mem::take(&mut payload)), false)
                .is_err()
        {
            return;
        }
        if done {
            break;
        }
        match near.read(&mut buf).await {
            // Cut short: what came is sent, and the stream ends as an HTTP/1.1 close would.
            Ok(0) => break,
            Ok(n) => fresh = buf[..n].to_vec(),
            Err(_) => return out.send_reset(Reason::INTERNAL_ERROR),
        }
    }
    let _ = out.send_data(Bytes::new(), true);
}

/// http1_request writes an HTTP/2 request (its head's `parts` and whole body `data`) as the
/// HTTP/1.1 request the answering code reads: one request, then the connection closes.
fn http1_request(parts: &http::request::Parts, data: &[u8]) -> Vec<u8> {
    let mut wire = Vec::with_capacity(256 + data.len());
    let target = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    wire.extend_from_slice(format!("{} {target} HTTP/1.1\r\n", parts.method).as_bytes());
    if let Some(authority) = parts.uri.authority() {
        wire.extend_from_slice(format!("host: {authority}\r\n").as_bytes());
    }
    for (name, value) in &parts.headers {
        if matches!(name.as_str(), "host" | "connection" | "content-length") {
            continue;
        }
        wire.extend_from_slice(name.as_str().as_bytes());
        wire.extend_from_slice(b": ");
        wire.extend_from_slice(value.as_bytes());
        wire.extend_from_slice(b"\r\n");
    }
    wire.extend_from_slice(format!("content-length: {}\r\n", data.len()).as_bytes());
    wire.extend_from_slice(b"connection: close\r\n\r\n");
    wire.extend_from_slice(data);
    wire
}

/// reframe_head reads an HTTP/1.1 answer's head, once whole, as an HTTP/2 response head: the
/// head, its length in `raw`, and whether its body is chunked.
fn reframe_head(raw: &[u8]) -> Option<(Response<()>, usize, bool)> {
    let mut inline = [httparse::EMPTY_HEADER; 64];
    let mut parsed = httparse::Response::new(&mut inline);
    let httparse::Status::Complete(len) = parsed.parse(raw).ok()? else {
        return None;
    };
    let status = StatusCode::from_u16(parsed.code?).ok()?;
    let mut response = Response::new(());
    *response.status_mut() = status;
    let mut chunked = false;
    for h in parsed.headers.iter() {
        let name = h.name.to_ascii_lowercase();
        if name == "transfer-encoding" {
            chunked = true;
            continue;
        }
        if matches!(name.as_str(), "connection" | "keep-alive") {
            continue;
        }
        let name = HeaderName::from_bytes(name.as_bytes()).ok()?;
        let value = HeaderValue::from_bytes(h.value).ok()?;
        response.headers_mut().append(name, value);
    }
    Some((response, len, chunked))
}

/// Dechunk reads a chunked body's payload as its bytes come, a whole chunk at a time.
#[derive(Debug, Default)]
struct Dechunk {
    /// pending: bytes read that do not yet make a whole chunk.
    pending: Vec<u8>,
    /// done: the last chunk (size 0) came, or framing that does not parse.
    done: bool,
}

impl Dechunk {
    /// feed takes the bytes read next and appends the payload of the chunks they completed to
    /// `out`; true once the body has ended.
    fn feed(&mut self, bytes: &[u8], out: &mut Vec<u8>) -> bool {
        self.pending.extend_from_slice(bytes);
        let mut at = 0;
        while !self.done {
            let rest = &self.pending[at..];
            let Some(eol) = rest.windows(2).position(|w| w == b"\r\n") else {
                break;
            };
            let size = std::str::from_utf8(&rest[..eol]).ok().and_then(|s| {
                usize::from_str_radix(s.split(';').next().unwrap_or("").trim(), 16).ok()
            });
            match size {
                None | Some(0) => self.done = true,
                Some(size) if rest.len() >= eol + 2 + size + 2 => {
                    out.extend_from_slice(&rest[eol + 2..eol + 2 + size]);
                    at += eol + 2 + size + 2;
                }
                Some(_) => break,
            }
        }
        self.pending.drain(..at);
        self.done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http1_heads_reframe() {
        // (label, HTTP/1.1 answer, status, head length, chunked, content-length)
        type Case<'a> = (&'a str, &'a [u8], u16, usize, bool, Option<&'a str>);
        let cases: &[Case] = &[
            (
                "length",
                b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n",
                200,
                57,
                false,
                Some("3"),
            ),
            (
                "chunked",
                b"HTTP/1.1 503 Service Unavailable\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n",
                503,
                64,
                true,
                None,
            ),
        ];
        for (label, raw, status, len, chunked, length) in cases {
            let (head, got_len, got_chunked) = reframe_head(raw).expect(label);
            assert_eq!(head.status().as_u16(), *status, "{label}");
            assert_eq!((got_len, got_chunked), (*len, *chunked), "{label}");
            assert!(head.headers().get("connection").is_none(), "{label}");
            assert!(head.headers().get("transfer-encoding").is_none(), "{label}");
            assert_eq!(
                head.headers()
                    .get("content-length")
                    .and_then(|v| v.to_str().ok()),
                *length,
                "{label}"
            );
        }
        assert!(reframe_head(b"garbage").is_none());
        assert!(reframe_head(b"HTTP/1.1 200 OK\r\n").is_none(), "a cut head");
    }

    #[test]
    fn chunks_come_out_as_they_complete() {
        let body = b"2\r\nab\r\n3;x=1\r\ncde\r\n0\r\n\r\n";
        // (label, read sizes, payload after each read, ended after each read)
        type Case<'a> = (&'a str, &'a [usize], &'a [&'a [u8]], &'a [bool]);
        let cases: &[Case] = &[
            ("one read", &[24], &[b"abcde"], &[true]),
            (
                "a read a chunk",
                &[7, 12, 5],
                &[b"ab", b"cde", b""],
                &[false, false, true],
            ),
            (
                "split inside a chunk",
                &[5, 19],
                &[b"", b"abcde"],
                &[false, true],
            ),
        ];
        for (label, sizes, payloads, ends) in cases {
            let mut d = Dechunk::default();
            let mut at = 0;
            for (k, n) in sizes.iter().enumerate() {
                let mut out = Vec::new();
                let done = d.feed(&body[at..at + n], &mut out);
                at += n;
                assert_eq!(&out[..], payloads[k], "{label} read {k}");
                assert_eq!(done, ends[k], "{label} read {k}");
            }
        }
        let mut out = Vec::new();
        assert!(
            Dechunk::default().feed(b"zz\r\n", &mut out),
            "garbage ends it"
        );
        assert!(out.is_empty());
    }
}
