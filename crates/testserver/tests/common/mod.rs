//! A plain blocking HTTP/1.1 client for the integration tests: raw bytes in, parsed responses
//! out, so the tests see exactly what the server put on the wire.

#![allow(dead_code)]

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use redline_target::{Target, TargetConfig};

/// READ_TIMEOUT bounds every read, so a broken server fails a test instead of hanging it.
pub const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// start runs a target on 127.0.0.1 with an ephemeral port.
pub fn start(threads: usize) -> Target {
    Target::start(TargetConfig {
        threads: Some(threads),
        ..TargetConfig::default()
    })
    .expect("target starts")
}

/// wait_until polls `done` every millisecond until it holds or `limit` passes; for server-side
/// events the client cannot observe directly (a request was read).
pub fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + limit;
    while std::time::Instant::now() < deadline {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    done()
}

/// Response is one parsed response.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// raw_body is the body as framed on the wire (chunk headers included).
    pub raw_body: Vec<u8>,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Client is one keep-alive connection.
pub struct Client {
    pub stream: TcpStream,
    buf: Vec<u8>,
}

impl Client {
    pub fn connect(addr: SocketAddr) -> Client {
        let stream = TcpStream::connect(addr).expect("connect");
        stream
            .set_read_timeout(Some(READ_TIMEOUT))
            .expect("timeout");
        stream.set_nodelay(true).expect("nodelay");
        Client {
            stream,
            buf: Vec::new(),
        }
    }

    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).expect("write");
    }

    pub fn send_get(&mut self, target: &str) {
        let req = format!("GET {target} HTTP/1.1\r\nHost: t\r\n\r\n");
        self.send_raw(req.as_bytes());
    }

    pub fn get(&mut self, target: &str) -> Response {
        self.send_get(target);
        self.read_response().expect("response")
    }

    fn fill(&mut self) -> io::Result<()> {
        let mut chunk = [0u8; 64 * 1024];
        let n = self.stream.read(&mut chunk)?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        self.buf.extend_from_slice(&chunk[..n]);
        Ok(())
    }

    fn take(&mut self, n: usize) -> io::Result<Vec<u8>> {
        while self.buf.len() < n {
            self.fill()?;
        }
        Ok(self.buf.drain(..n).collect())
    }

    /// read_response reads one response (Content-Length or chunked; HEAD not supported).
    pub fn read_response(&mut self) -> io::Result<Response> {
        let (status, headers, used) = loop {
            let mut slots = [httparse::EMPTY_HEADER; 32];
            let mut resp = httparse::Response::new(&mut slots);
            match resp.parse(&self.buf) {
                Ok(httparse::Status::Complete(used)) => {
                    let headers = resp
                        .headers
                        .iter()
                        .map(|h| {
                            let value = String::from_utf8_lossy(h.value).into_owned();
                            (h.name.to_string(), value)
                        })
                        .collect::<Vec<_>>();
                    break (resp.code.unwrap_or(0), headers, used);
                }
                Ok(httparse::Status::Partial) => self.fill()?,
                Err(e) => return Err(io::Error::new(io::ErrorKind::InvalidData, e)),
            }
        };
        self.buf.drain(..used);
        let mut response = Response {
            status,
            headers,
            body: Vec::new(),
            raw_body: Vec::new(),
        };
        if let Some(len) = response.header("content-length") {
            let len: usize = len.parse().expect("numeric content-length");
            response.body = self.take(len)?;
            response.raw_body = response.body.clone();
        } else if response.header("transfer-encoding") == Some("chunked") {
            self.read_chunks(&mut response)?;
        }
        Ok(response)
    }

    fn read_chunks(&mut self, response: &mut Response) -> io::Result<()> {
        loop {
            let (used, size) = loop {
                match httparse::parse_chunk_size(&self.buf) {
                    Ok(httparse::Status::Complete(found)) => break found,
                    Ok(httparse::Status::Partial) => self.fill()?,
                    Err(_) => return Err(io::ErrorKind::InvalidData.into()),
                }
            };
            response.raw_body.extend(self.take(used)?);
            let size = usize::try_from(size).expect("small chunk");
            let data = self.take(size)?;
            response.body.extend_from_slice(&data);
            response.raw_body.extend(data);
            let crlf = self.take(2)?;
            if crlf != b"\r\n" {
                return Err(io::ErrorKind::InvalidData.into());
            }
            response.raw_body.extend(crlf);
            if size == 0 {
                return Ok(());
            }
        }
    }

    /// at_eof is true when the server has closed its side (nothing buffered, read returns 0).
    pub fn at_eof(&mut self) -> bool {
        let mut byte = [0u8; 1];
        self.buf.is_empty() && matches!(self.stream.read(&mut byte), Ok(0))
    }
}
