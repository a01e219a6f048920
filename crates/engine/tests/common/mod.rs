//! A tiny HTTP/1.1 server for the engine's integration tests: 127.0.0.1, port 0, its own
//! thread and runtime, counting what it saw so tests can compare with what the engine reported.

#![allow(dead_code)]

pub mod certs;
pub mod counting;
pub mod runs;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Mode is how the test server answers.
#[derive(Debug, Clone, Copy)]
pub enum Mode {
    /// Ok answers 200 after `delay`.
    Ok { delay: Duration },
    /// Body answers 200 with this body at once (a JSON document for the tally tests).
    Body(&'static str),
    /// Stall holds requests arriving in [from, to) after the first request until `to`.
    Stall { from: Duration, to: Duration },
    /// Silent reads requests and never answers.
    Silent,
    /// Reset resets the connection (RST) after reading a request.
    Reset,
    /// Status answers every request with this status.
    Status(u16),
    /// ResetReused answers the first request of a connection and resets on the second.
    ResetReused,
    /// Close answers with `Connection: close` and closes after each response.
    Close,
    /// Drop answers the first request of a connection, then closes it without warning
    /// (no `Connection: close`), as a server timing out an idle keep-alive connection does.
    Drop,
    /// HangAfter answers the first `n` requests the server receives and holds every later
    /// one without answering (a server that stalls at the end of a run).
    HangAfter(u64),
    /// IdleClose closes a kept-alive connection that stays idle for `after` once it has
    /// answered a request (FIN, as servers' keep-alive timeouts do); a request that arrives
    /// after the FIN is counted in `Seen::stale` and never answered.
    IdleClose { after: Duration },
    /// CloseReused answers the first request of a connection; on the second it closes (FIN)
    /// without answering, as a keep-alive timeout firing as a request arrives does: that
    /// request is counted in `Seen::stale`, not in `requests`.
    CloseReused,
}

/// Seen is what the server observed.
#[derive(Debug, Default)]
pub struct Seen {
    pub requests: AtomicU64,
    pub connections: AtomicU64,
    /// stale: requests that arrived on a connection the server had already closed (IdleClose).
    pub stale: AtomicU64,
    /// idle_closed: connections the server closed for idleness (IdleClose).
    pub idle_closed: AtomicU64,
    /// firsts: when each connection's first request arrived, if asked for ([`Seen::tracking`]);
    /// None otherwise, so the other tests' servers allocate nothing for it.
    pub firsts: std::sync::Mutex<Option<Vec<Instant>>>,
}

impl Seen {
    /// tracking is a Seen that stamps each connection's first request.
    pub fn tracking() -> Self {
        Seen {
            firsts: std::sync::Mutex::new(Some(Vec::with_capacity(4096))),
            ..Seen::default()
        }
    }

    /// first_requests are the stamps so far (empty unless tracking).
    pub fn first_requests(&self) -> Vec<Instant> {
        let firsts = self.firsts.lock().unwrap_or_else(|e| e.into_inner());
        firsts.clone().unwrap_or_default()
    }
}

/// Server is a running test server; it stops when the test process ends.
pub struct Server {
    pub addr: SocketAddr,
    pub seen: Arc<Seen>,
}

impl Server {
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub fn requests(&self) -> u64 {
        self.seen.requests.load(Ordering::SeqCst)
    }

    pub fn connections(&self) -> u64 {
        self.seen.connections.load(Ordering::SeqCst)
    }

    pub fn stale(&self) -> u64 {
        self.seen.stale.load(Ordering::SeqCst)
    }

    pub fn idle_closed(&self) -> u64 {
        self.seen.idle_closed.load(Ordering::SeqCst)
    }
}

/// Killable is a server that can be killed (every socket closed, the port free) and started
/// again on the same port, counting into one `Seen` across its lives.
pub struct Killable {
    pub addr: SocketAddr,
    pub seen: Arc<Seen>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Killable {
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// kill closes the listener and every connection, and returns once they are closed.
    pub fn kill(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Killable {
    fn drop(&mut self) {
        self.kill();
    }
}

/// start_killable runs a server in `mode` on `port` (0: any), counting into `seen`.
pub fn start_killable(port: u16, mode: Mode, seen: Arc<Seen>) -> Killable {
    let (tx, rx) = std::sync::mpsc::channel();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let s2 = seen.clone();
    let thread = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async move {
            // The port may still be held by the last life's sockets for a moment: bounded retry.
            let mut listener = None;
            for _ in 0..50 {
                match TcpListener::bind(("127.0.0.1", port)).await {
                    Ok(l) => {
                        listener = Some(l);
                        break;
                    }
                    Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
                }
            }
            let listener = listener.expect("bind");
            tx.send(listener.local_addr().expect("addr"))
                .expect("send addr");
            let first: Arc<std::sync::OnceLock<Instant>> = Arc::new(std::sync::OnceLock::new());
            let accept = async {
                loop {
                    let Ok((sock, _)) = listener.accept().await else {
                        continue;
                    };
                    s2.connections.fetch_add(1, Ordering::SeqCst);
                    tokio::spawn(serve(sock, mode, s2.clone(), first.clone()));
                }
            };
            tokio::select! {
                _ = accept => {}
                _ = stopped => {}
            }
        });
        // Dropping the runtime drops every connection's task, closing its socket.
        drop(rt);
    });
    let addr = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("server started");
    Killable {
        addr,
        seen,
        stop: Some(stop),
        thread: Some(thread),
    }
}

/// start runs a server in `mode` on its own thread.
pub fn start(mode: Mode) -> Server {
    let (tx, rx) = std::sync::mpsc::channel();
    let seen = Arc::new(Seen::default());
    let s2 = seen.clone();
    std::thread::spawn(move || {
        // The server's memory is not the engine's (the memory tests count the engine's).
        counting::uncounted();
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .on_thread_start(counting::uncounted)
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async move {
            let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
            tx.send(listener.local_addr().expect("addr"))
                .expect("send addr");
            let first: Arc<std::sync::OnceLock<Instant>> = Arc::new(std::sync::OnceLock::new());
            loop {
                let Ok((sock, _)) = listener.accept().await else {
                    continue;
                };
                s2.connections.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(serve(sock, mode, s2.clone(), first.clone()));
            }
        });
    });
    let addr = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("server started");
    Server { addr, seen }
}

async fn serve(
    mut sock: TcpStream,
    mode: Mode,
    seen: Arc<Seen>,
    first: Arc<std::sync::OnceLock<Instant>>,
) {
    let _ = sock.set_nodelay(true);
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    // Rendered once per connection so the server allocates nothing per request (the
    // allocation test shares this process).
    let resp = response(mode);
    let mut served = 0u32;
    loop {
        // One request head (the engine sends GETs without bodies here).
        let end = loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            let read = match mode {
                Mode::IdleClose { after } if served > 0 => {
                    match tokio::time::timeout(after, sock.read(&mut chunk)).await {
                        Ok(read) => read,
                        Err(_) => return idle_close(sock, &seen).await,
                    }
                }
                _ => sock.read(&mut chunk).await,
            };
            match read {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        };
        buf.drain(..end);
        if matches!(mode, Mode::CloseReused) && served > 0 {
            seen.stale.fetch_add(1, Ordering::SeqCst);
            return drain_closed(sock).await;
        }
        let number = seen.requests.fetch_add(1, Ordering::SeqCst) + 1;
        if served == 0 {
            let mut firsts = seen.firsts.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(f) = firsts.as_mut() {
                f.push(Instant::now());
            }
        }
        let t0 = *first.get_or_init(Instant::now);
        if !hold(mode, &sock, served, number, t0).await {
            return;
        }
        served += 1;
        if sock.write_all(resp.as_bytes()).await.is_err() || matches!(mode, Mode::Close) {
            return;
        }
        if matches!(mode, Mode::Drop) {
            // FIN, then discard whatever arrives (a request racing the close) until the
            // client hangs up, so the close is a clean EOF for the client, never a reset.
            let _ = sock.shutdown().await;
            while let Ok(n) = sock.read(&mut chunk).await {
                if n == 0 {
                    break;
                }
            }
            return;
        }
    }
}

/// response is the answer a connection of `mode` gives every request it answers.
fn response(mode: Mode) -> String {
    let status = match mode {
        Mode::Status(s) => s,
        _ => 200,
    };
    let close = if matches!(mode, Mode::Close) {
        "Connection: close\r\n"
    } else {
        ""
    };
    let body = match mode {
        Mode::Body(b) => b,
        _ => "ok",
    };
    format!(
        "HTTP/1.1 {status} X\r\n{close}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// hold does what `mode` does before answering request `number` of the server (the
/// connection's request `served` + 1; `t0`: the server's first request): wait, or end the
/// connection unanswered (false).
async fn hold(mode: Mode, sock: &TcpStream, served: u32, number: u64, t0: Instant) -> bool {
    match mode {
        Mode::Ok { delay } => {
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
        }
        Mode::Stall { from, to } => {
            let since = t0.elapsed();
            if since >= from && since < to {
                tokio::time::sleep_until((t0 + to).into()).await;
            }
        }
        Mode::Silent => {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            return false;
        }
        Mode::Reset => {
            reset(sock);
            return false;
        }
        Mode::ResetReused if served > 0 => {
            reset(sock);
            return false;
        }
        Mode::HangAfter(n) if number > n => {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            return false;
        }
        Mode::Status(_)
        | Mode::Body(_)
        | Mode::Close
        | Mode::Drop
        | Mode::ResetReused
        | Mode::HangAfter(_)
        | Mode::IdleClose { .. }
        | Mode::CloseReused => {}
    }
    true
}

/// idle_close is a keep-alive timeout: FIN, then count every request that still arrives
/// (the client sent it on a connection it did not know was closed) until the client hangs up.
async fn idle_close(mut sock: TcpStream, seen: &Seen) {
    seen.idle_closed.fetch_add(1, Ordering::SeqCst);
    let _ = sock.shutdown().await;
    let mut chunk = [0u8; 4096];
    let mut tail = 0usize; // bytes of "\r\n\r\n" matched so far, across reads
    while let Ok(n) = sock.read(&mut chunk).await {
        if n == 0 {
            return;
        }
        for &b in &chunk[..n] {
            let want = b"\r\n\r\n"[tail];
            tail = if b == want {
                tail + 1
            } else {
                usize::from(b == b'\r')
            };
            if tail == 4 {
                seen.stale.fetch_add(1, Ordering::SeqCst);
                tail = 0;
            }
        }
    }
}

/// drain_closed sends FIN and discards what still arrives until the client hangs up, so the
/// close is a clean end of stream for the client, never a reset.
async fn drain_closed(mut sock: TcpStream) {
    let _ = sock.shutdown().await;
    let mut chunk = [0u8; 4096];
    while let Ok(n) = sock.read(&mut chunk).await {
        if n == 0 {
            return;
        }
    }
}

/// reset arranges for close to send an RST (SO_LINGER with a zero timeout).
fn reset(sock: &TcpStream) {
    use std::os::fd::AsRawFd;
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: valid socket and a correctly sized linger struct.
    unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        );
    }
}

/// free_port returns a port nothing listens on (bound, then released).
pub fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}
