//! The server: listeners, serving threads, start and stop.
//!
//! Thread per core, like the engine: each thread runs its own current-thread tokio runtime and
//! accepts on its own `SO_REUSEPORT` listener, so the kernel spreads connections and nothing is
//! shared or locked on the request path (each thread owns its counters).
//!
//! Requests are parsed with `httparse` by a hand-written loop (`conn.rs`), not hyper's server,
//! chosen by measurement: `wrk -t1 -c50 -d5s` pinned to core 1 against one server thread pinned
//! to core 0 cost 5.7-5.8 µs of server CPU per request here and ~6.0 µs for a minimal hyper 1.x
//! `http1` server, so speed is a wash (either serves ~170k req/s a core, over twice what wrk
//! can send from one); the hand-written loop wins because the target must misbehave on purpose
//! (RST instead of an answer, hang, pipelined delays measured from each request's arrival) in
//! ways hyper's service model hides.

use std::io;
use std::net::{SocketAddr, TcpListener as StdListener, ToSocketAddrs};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use socket2::{Domain, Protocol, Socket, Type};
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Runtime;
use tokio::sync::watch;

use crate::bucket::Bucket;
use crate::capacity::Queue;
use crate::config::TargetConfig;
use crate::contention::Crowd;
use crate::error::TargetError;
use crate::form::Sessions;
use crate::shared::Shared;
use crate::stats::{Board, TargetStats};
use crate::task::{Failing, Ids};
use tokio_rustls::TlsAcceptor;

/// MAX_THREADS bounds `TargetConfig::threads`.
const MAX_THREADS: usize = 1024;
/// BACKLOG is the listen queue length: large, since benchmarks open many connections at once.
const BACKLOG: i32 = 4096;

/// Target is a running target server; stop it with [`Target::stop`] or by dropping it (both
/// join its threads, within milliseconds).
#[derive(Debug)]
pub struct Target {
    addr: SocketAddr,
    https: bool,
    shared: Arc<Shared>,
    shutdown: watch::Sender<bool>,
    threads: Vec<JoinHandle<()>>,
}

impl Target {
    /// start binds the address, starts the serving threads and returns once every thread is
    /// accepting, so a client may connect as soon as it returns.
    pub fn start(cfg: TargetConfig) -> Result<Target, TargetError> {
        let count = thread_count(cfg.threads)?;
        cfg.validate()?;
        let tls = cfg
            .tls
            .as_ref()
            .map(|files| crate::tls::acceptor(files, cfg.http2))
            .transpose()?;
        let addr = resolve(&cfg.host, cfg.port)?;
        let listeners = bind_listeners(addr, count).map_err(|source| TargetError::Bind {
            addr: addr.to_string(),
            source,
        })?;
        let local = listeners[0]
            .local_addr()
            .map_err(|source| TargetError::Bind {
                addr: addr.to_string(),
                source,
            })?;
        let (shutdown, watcher) = watch::channel(false);
        // From here on an error drops `target`, which stops the threads already started.
        let mut target = Target {
            addr: local,
            https: tls.is_some(),
            shared: Arc::new(shared_state(&cfg, count)),
            shutdown,
            threads: Vec::with_capacity(count),
        };
        let (ready_tx, ready_rx) = mpsc::channel();
        for (index, listener) in listeners.into_iter().enumerate() {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|source| TargetError::Runtime { source })?;
            let job = Job {
                runtime,
                listener,
                shared: Arc::clone(&target.shared),
                index,
                shutdown: watcher.clone(),
                ready: ready_tx.clone(),
                tls: tls.clone(),
            };
            let handle = std::thread::Builder::new()
                .name(format!("redline-target-{index}"))
                .spawn(move || job.run())
                .map_err(|source| TargetError::Runtime { source })?;
            target.threads.push(handle);
        }
        drop(ready_tx);
        for _ in 0..count {
            match ready_rx.recv() {
                Ok(Ok(())) => {}
                Ok(Err(source)) => return Err(TargetError::Runtime { source }),
                Err(_) => {
                    let source = io::Error::other("serving thread exited during start");
                    return Err(TargetError::Runtime { source });
                }
            }
        }
        Ok(target)
    }

    /// local_addr is the bound address, with the real port when port 0 was asked for.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// url is the base URL clients should use, e.g. "http://127.0.0.1:40123".
    pub fn url(&self) -> String {
        let scheme = if self.https { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }

    /// stats sums the serving threads' counters (the same figures `/__stats` serves).
    pub fn stats(&self) -> TargetStats {
        self.shared.stats()
    }

    /// stop closes the listeners and every connection, and joins the threads.
    pub fn stop(self) {
        drop(self);
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        let _ = self.shutdown.send(true);
        for handle in self.threads.drain(..) {
            let _ = handle.join();
        }
    }
}

/// Job is one serving thread's work: accept until shutdown, then drop the runtime, which
/// cancels (and so closes) all of the thread's connections.
/// HANDSHAKE bounds a TLS handshake.
const HANDSHAKE: Duration = Duration::from_secs(10);

struct Job {
    runtime: Runtime,
    listener: StdListener,
    shared: Arc<Shared>,
    index: usize,
    shutdown: watch::Receiver<bool>,
    ready: mpsc::Sender<io::Result<()>>,
    tls: Option<TlsAcceptor>,
}

impl Job {
    fn run(self) {
        let Job {
            runtime,
            listener,
            shared,
            index,
            mut shutdown,
            ready,
            tls,
        } = self;
        runtime.block_on(async move {
            let listener = match TcpListener::from_std(listener) {
                Ok(listener) => listener,
                Err(err) => {
                    let _ = ready.send(Err(err));
                    return;
                }
            };
            let mut timers = crate::sleep::Driver::install();
            let _ = ready.send(Ok(()));
            drop(ready);
            loop {
                tokio::select! {
                    biased;
                    _ = shutdown.changed() => break,
                    fired = crate::sleep::drive(&timers) => {
                        // A timerfd that fails once would fail forever: drop precise timing
                        // (later delays use tokio's timer) rather than spin.
                        if fired.is_err() {
                            crate::sleep::uninstall();
                            timers = None;
                        }
                    }
                    accepted = listener.accept() => match accepted {
                        Ok((stream, _)) => spawn_connection(stream, &shared, index, tls.as_ref()),
                        // Out of file descriptors and the like: back off instead of spinning.
                        Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
                    },
                }
            }
            // Release the timer wheel (it holds wakers and a registered descriptor) while the
            // runtime still exists.
            crate::sleep::uninstall();
        });
        drop(runtime);
    }
}

/// spawn_connection serves an accepted connection in a task of its own: HTTP/1.1, or
/// HTTP/2 (h2c by prior knowledge, or h2 chosen by ALPN), over TLS with an acceptor.
fn spawn_connection(
    stream: TcpStream,
    shared: &Arc<Shared>,
    index: usize,
    tls: Option<&TlsAcceptor>,
) {
    // No Nagle, whatever the protocol: a small write (an SSE event, an HTTP/2 DATA frame)
    // behind one not yet acknowledged would wait for the client's ACK. conn.rs set it on
    // HTTP/1.1 connections alone: HTTP/2's (h2c and TLS) went out with Nagle on.
    let _ = stream.set_nodelay(true);
    shared.board.thread(index).add_connection();
    let shared = Arc::clone(shared);
    match tls {
        None => {
            tokio::spawn(async move {
                // Prior knowledge: h2c opens with the HTTP/2 preface.
                if crate::http2::is_h2c(&stream).await {
                    let faults = shared.h2;
                    crate::http2::serve(stream, shared, index, faults).await;
                } else {
                    crate::conn::serve(stream, shared, index).await;
                }
            });
        }
        Some(acceptor) => {
            let handshake = acceptor.accept(stream);
            tokio::spawn(async move {
                // A client that fails or stalls the handshake is dropped.
                let handshake = tokio::time::timeout(HANDSHAKE, handshake);
                let Ok(Ok(tls)) = handshake.await else {
                    return;
                };
                if tls.get_ref().1.alpn_protocol() == Some(b"h2") {
                    let faults = shared.h2;
                    crate::http2::serve(tls, shared, index, faults).await;
                } else {
                    crate::conn::serve(tls, shared, index).await;
                }
            });
        }
    }
}

fn resolve(host: &str, port: u16) -> Result<SocketAddr, TargetError> {
    let resolve_error = |source| TargetError::Resolve {
        host: host.to_string(),
        source,
    };
    (host, port)
        .to_socket_addrs()
        .map_err(resolve_error)?
        .next()
        .ok_or_else(|| resolve_error(io::Error::other("no address")))
}

/// bind_listeners binds `count` listeners on one port. A plain probe bind comes first so that a
/// port already served by someone else (even with `SO_REUSEPORT`) is an error rather than
/// silently shared, and so that port 0 picks one port for all threads. Between the probe and
/// the real binds another process may take that ephemeral port; then a fresh one is tried.
/// thread_count is the serving threads asked for (default: the available cores), checked.
fn thread_count(threads: Option<usize>) -> Result<usize, TargetError> {
    let count = match threads {
        Some(n) => n,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    if !(1..=MAX_THREADS).contains(&count) {
        return Err(TargetError::InvalidThreads {
            got: count,
            max: MAX_THREADS,
        });
    }
    Ok(count)
}

/// shared_state is what the `count` serving threads share: their counters, and the
/// queue, crowd or token bucket `cfg` asks for, all timed from now.
fn shared_state(cfg: &TargetConfig, count: usize) -> Shared {
    let started = Instant::now();
    Shared {
        board: Board::new(count),
        started,
        queue: cfg
            .capacity
            .map(|capacity| Queue::new(capacity, cfg.queue_limit, cfg.pause, started)),
        crowd: cfg.contention.map(Crowd::new),
        bucket: cfg.rate_limit.map(|limit| Bucket::new(limit, started)),
        sessions: Sessions::new(),
        tasks: Ids::new(),
        failing: cfg.fail_every.map(Failing::new),
        h2: cfg.h2_faults,
        idle_timeout: cfg.idle_timeout,
    }
}

fn bind_listeners(addr: SocketAddr, count: usize) -> io::Result<Vec<StdListener>> {
    let mut attempts = 0;
    loop {
        let probe = bind_one(addr, false)?;
        if count == 1 {
            return Ok(vec![probe]);
        }
        let port = probe.local_addr()?;
        drop(probe);
        match (0..count).map(|_| bind_one(port, true)).collect() {
            Err(err) if err.kind() == io::ErrorKind::AddrInUse && addr.port() == 0 => {
                attempts += 1;
                if attempts == 5 {
                    return Err(err);
                }
            }
            bound => return bound,
        }
    }
}

fn bind_one(addr: SocketAddr, reuse_port: bool) -> io::Result<StdListener> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    #[cfg(unix)]
    socket.set_reuse_port(reuse_port)?;
    #[cfg(not(unix))]
    let _ = reuse_port;
    socket.set_nonblocking(true)?;
    socket.bind(&addr.into())?;
    socket.listen(BACKLOG)?;
    Ok(socket.into())
}
