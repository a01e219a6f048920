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

/// Load is what closed-loop clients measured inside the counted window: answers 200 (`ok`)
/// and their mean latency, other answers (`refused`), and over the whole run (warm-up
/// included) every answer by kind, to compare with the server's counters.
#[derive(Debug, Default)]
pub struct Load {
    pub ok: u64,
    pub refused: u64,
    pub ok_latency: Duration,
    pub refused_latency: Duration,
    pub max_latency: Duration,
    pub window: Duration,
    pub total_ok: u64,
    pub total_refused: u64,
    /// refusal is the first non-200 answer seen (its status and headers).
    pub refusal: Option<Response>,
}

impl Load {
    /// per_second is the rate of 200s inside the window.
    pub fn per_second(&self) -> f64 {
        self.ok as f64 / self.window.as_secs_f64()
    }

    /// mean is the mean latency of the 200s inside the window.
    pub fn mean(&self) -> Duration {
        self.ok_latency / u32::try_from(self.ok.max(1)).expect("count fits")
    }

    fn add(mut self, other: Load) -> Load {
        self.ok += other.ok;
        self.refused += other.refused;
        self.ok_latency += other.ok_latency;
        self.refused_latency += other.refused_latency;
        self.max_latency = self.max_latency.max(other.max_latency);
        self.total_ok += other.total_ok;
        self.total_refused += other.total_refused;
        self.refusal = self.refusal.or(other.refusal);
        self
    }
}

/// closed_loop runs `clients` keep-alive connections, each sending its next `GET path` as soon
/// as the last answer arrives, for `run` after a `warm` period that is not counted (queues
/// fill, buckets empty). Answers count in the window when they arrive inside it, whenever
/// sent. Bounded: every client stops sending at the window's end.
pub fn closed_loop(
    target: &Target,
    clients: usize,
    warm: Duration,
    run: Duration,
    path: &'static str,
) -> Load {
    let addr = target.local_addr();
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(clients));
    let handles: Vec<_> = (0..clients)
        .map(|_| {
            let barrier = std::sync::Arc::clone(&barrier);
            std::thread::spawn(move || {
                let mut client = Client::connect(addr);
                barrier.wait();
                let start = std::time::Instant::now();
                let (from, to) = (start + warm, start + warm + run);
                let mut load = Load::default();
                loop {
                    let sent = std::time::Instant::now();
                    if sent >= to {
                        break;
                    }
                    let resp = client.get(path);
                    let got = std::time::Instant::now();
                    let took = got - sent;
                    let counted = got >= from && got < to;
                    if resp.status == 200 {
                        load.total_ok += 1;
                        if counted {
                            load.ok += 1;
                            load.ok_latency += took;
                        }
                    } else {
                        load.total_refused += 1;
                        if counted {
                            load.refused += 1;
                            load.refused_latency += took;
                        }
                        if load.refusal.is_none() {
                            load.refusal = Some(resp);
                        }
                    }
                    if counted {
                        load.max_latency = load.max_latency.max(took);
                    }
                }
                load
            })
        })
        .collect();
    let load = handles
        .into_iter()
        .map(|h| h.join().expect("client thread"))
        .fold(Load::default(), Load::add);
    Load {
        window: run,
        ..load
    }
}

/// within: `got` is within `tolerance` (a share) of `want`.
pub fn within(got: f64, want: f64, tolerance: f64) -> bool {
    (got - want).abs() <= want.abs() * tolerance
}
