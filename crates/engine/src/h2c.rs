//! h2c: the preflight's question to a plain-http server before an `--http2` run: does it
//! speak HTTP/2 without TLS (prior knowledge, RFC 9113 §3.3)? A server that does not reads
//! the connection preface as a broken HTTP/1.1 request and answers 400 or closes; the run
//! would then fail every request as a protocol error and reconnect as fast as it can, which
//! reads as an outage of the server. Asked once here, the answer is one line before any load.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// PREFACE is the client connection preface followed by an empty SETTINGS frame.
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00";

/// SETTINGS is the frame type a server's own preface starts with.
const SETTINGS: u8 = 0x4;

/// speaks_h2c sends the preface on `stream` and reads the server's first frame header:
/// Ok when it is a SETTINGS frame, else what the server did instead, in words.
pub fn speaks_h2c(mut stream: TcpStream, wait: Duration) -> Result<(), String> {
    let _ = stream.set_read_timeout(Some(wait));
    let _ = stream.set_write_timeout(Some(wait));
    stream
        .write_all(PREFACE)
        .map_err(|e| format!("it did not take the HTTP/2 preface ({e})"))?;
    let mut head = [0u8; 64];
    let mut got = 0;
    while got < 9 {
        match stream.read(&mut head[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(_) if got > 0 => break,
            Err(e) => return Err(format!("it did not answer the HTTP/2 preface ({e})")),
        }
    }
    judge(&head[..got])
}

/// judge reads the first bytes a server sent back after the preface.
fn judge(head: &[u8]) -> Result<(), String> {
    if head.len() >= 9 && head[3] == SETTINGS {
        return Ok(());
    }
    if head.starts_with(b"HTTP/") {
        let line = head
            .split(|&b| b == b'\r' || b == b'\n')
            .next()
            .unwrap_or(head);
        return Err(format!(
            "it answered the HTTP/2 preface in HTTP/1 (`{}`)",
            String::from_utf8_lossy(line)
        ));
    }
    if head.is_empty() {
        return Err("it closed the connection on the HTTP/2 preface".to_string());
    }
    let text: String = String::from_utf8_lossy(head)
        .lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(40)
        .collect();
    if !text.is_empty() && text.chars().all(|c| c.is_ascii_graphic() || c == ' ') {
        return Err(format!(
            "its answer to the HTTP/2 preface is text, not an HTTP/2 frame (`{text}`)"
        ));
    }
    Err(format!(
        "its answer to the HTTP/2 preface is not an HTTP/2 frame ({} bytes)",
        head.len()
    ))
}

#[cfg(test)]
mod tests {
    use super::judge;

    #[test]
    fn what_a_server_answered_the_preface() {
        let settings = b"\x00\x00\x06\x04\x00\x00\x00\x00\x00\x00\x03\x00\x00\x00\x64";
        let cases: [(&str, &[u8], Result<(), &str>); 5] = [
            ("a SETTINGS frame: h2c", settings, Ok(())),
            (
                "an HTTP/1.1 server",
                b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n",
                Err("it answered the HTTP/2 preface in HTTP/1 (`HTTP/1.1 400 Bad Request`)"),
            ),
            (
                "closed",
                b"",
                Err("it closed the connection on the HTTP/2 preface"),
            ),
            (
                "bytes",
                b"\x00\x01\x02",
                Err("is not an HTTP/2 frame (3 bytes)"),
            ),
            (
                "text",
                b"<!DOCTYPE HTML>\n<html>",
                Err("is text, not an HTTP/2 frame (`<!DOCTYPE HTML>`)"),
            ),
        ];
        for (label, head, want) in cases {
            match (judge(head), want) {
                (Ok(()), Ok(())) => {}
                (Err(got), Err(w)) => assert!(got.contains(w), "{label}: {got}"),
                (got, w) => panic!("{label}: {got:?} vs {w:?}"),
            }
        }
    }
}
