//! An HTTP/2 response's body, read as its DATA frames arrive: counted, kept for a scenario's
//! checks, and with `--stream` timed frame by frame (see [`crate::stream`]); and how a round
//! trip fails ([`Trip`]) and is bounded in time ([`within`]), which the connection's code
//! (`http2.rs`) shares.

use std::future::{poll_fn, Future};
use std::task::Poll;
use std::time::Instant;

use h2::RecvStream;

use crate::conn::{classify, Deadline};
use crate::failure::ErrorClass;
use crate::http2_stamp::{Clock, Part};
use crate::message::Response;
use crate::stream::Watch;

/// RELEASE_AT is how much of a response's body a stream reads before it hands the window
/// back to h2 (the rest goes back when the stream is done): far below the window the client
/// grants, so the streams of a connection never hold it all, and far above a typical
/// response, which then costs no release call.
const RELEASE_AT: usize = 1 << 20;

/// read_body reads `body` until h2 says it ended, or fails once `deadline` passes. Each
/// frame's payload is kept in `capture` (up to its bound) and, with a `watch`, timed by
/// `clock` (its arrival's kernel stamp, where the link notes them).
///
/// Until h2 says there is no more data: the stream ended, or its trailers came, and they end
/// it (END_STREAM rides on them), so the response is whole either way: h2 answers None only
/// once the stream is closed for receiving or its trailers are in hand, and an error (a
/// reset) instead. The trailers are not read here (only a gRPC call's are, by
/// [`grpc_status`]): dropping the stream clears them, one call into h2 fewer per response.
///
/// The window the body used is handed back in bulk: h2 releases what a closed stream still
/// holds when its last handle goes (as `body` drops after this), so a response under
/// RELEASE_AT costs no release call; a longer one releases each RELEASE_AT as it goes, so
/// that streams reading long bodies never run the connection's window dry.
pub(crate) async fn read_body(
    body: &mut RecvStream,
    deadline: &mut Deadline,
    capture: &mut Option<Response>,
    mut watch: Option<&mut Watch>,
    clock: Clock<'_>,
) -> Result<(), Trip> {
    let mut held = 0usize;
    let mut bytes = 0u64;
    while let Some(chunk) = within(
        poll_fn(|cx| body.poll_data(cx)),
        deadline,
        ErrorClass::Timeout,
    )
    .await
    .map_err(Trip::stream)?
    {
        let chunk = chunk.map_err(|e| Trip::from_h2(&e, ErrorClass::Read))?;
        held += chunk.len();
        if held >= RELEASE_AT {
            let _ = body.flow_control().release_capacity(held);
            held = 0;
        }
        bytes += chunk.len() as u64;
        if let Some(w) = watch.as_deref_mut() {
            // An empty frame (END_STREAM alone) was noted by nobody: it claims nothing.
            let at = if chunk.is_empty() {
                Instant::now()
            } else {
                clock.at(Part::Data)
            };
            w.frame(&chunk, at, bytes);
        }
        if let Some(c) = capture.as_mut() {
            c.payload(&chunk);
        }
    }
    if let Some(w) = watch {
        w.end(Instant::now());
    }
    Ok(())
}

/// grpc_status is a gRPC call's status, once its body is read: the `grpc-status` of its
/// trailers, or of its head (`in_head`) when the answer was trailers only; for an HTTP
/// status other than 200, the code a gRPC client gives it.
/// An answer with no status is not gRPC's (a plain HTTP server's 200): a protocol error.
/// The trailers join the head's fields in `capture`, so that a scenario reads the call's
/// `grpc-message` wherever the server wrote it.
pub(crate) async fn grpc_status(
    body: &mut RecvStream,
    (status, in_head): (u16, Option<u16>),
    deadline: &mut Deadline,
    capture: &mut Option<Response>,
) -> Result<u16, Trip> {
    if status != 200 {
        return Ok(crate::grpc::from_http(status));
    }
    if let Some(code) = in_head {
        return Ok(code);
    }
    let trailers = within(
        poll_fn(|cx| body.poll_trailers(cx)),
        deadline,
        ErrorClass::Timeout,
    )
    .await
    .map_err(Trip::stream)?
    .map_err(|e| Trip::from_h2(&e, ErrorClass::Read))?
    .ok_or(Trip::stream(ErrorClass::Protocol))?;
    if let Some(c) = capture.as_mut() {
        for (n, v) in &trailers {
            c.header(n.as_str().as_bytes(), v.as_bytes());
        }
    }
    trailers
        .get("grpc-status")
        .and_then(|v| crate::grpc::status(v.as_bytes()))
        .ok_or(Trip::stream(ErrorClass::Protocol))
}

/// Trip is a failed round trip: its class, and whether the connection itself is gone.
pub(crate) struct Trip {
    /// class: what failed.
    pub(crate) class: ErrorClass,
    /// connection: the connection itself is gone, not only the stream.
    pub(crate) connection: bool,
}

impl Trip {
    /// stream is a failure of this stream alone (a timeout).
    pub(crate) fn stream(class: ErrorClass) -> Trip {
        Trip {
            class,
            connection: false,
        }
    }

    /// from_h2 classes an h2 error; `other` is the class for the phase. A GOAWAY or
    /// RST_STREAM that h2 sent itself, on seeing the server break the protocol (a frame not
    /// allowed, one over the maximum size, a header block that does not decode), is a
    /// protocol error; the server's own are its GOAWAY and its resets.
    pub(crate) fn from_h2(e: &h2::Error, other: ErrorClass) -> Trip {
        if e.is_library() {
            return Trip {
                class: ErrorClass::Protocol,
                connection: e.is_go_away(),
            };
        }
        if e.is_go_away() {
            return Trip {
                class: ErrorClass::GoAway,
                connection: true,
            };
        }
        if e.is_reset() {
            return Trip {
                class: ErrorClass::RstStream,
                connection: false,
            };
        }
        let class = match e.get_io() {
            Some(io) => classify(io, other),
            None => ErrorClass::Protocol,
        };
        Trip {
            class,
            connection: true,
        }
    }
}

/// within runs `fut` until it ends or `deadline` passes (then `class`).
pub(crate) async fn within<F: Future>(
    fut: F,
    deadline: &mut Deadline,
    class: ErrorClass,
) -> Result<F::Output, ErrorClass> {
    let mut fut = std::pin::pin!(fut);
    poll_fn(|cx| {
        if let Poll::Ready(out) = fut.as_mut().poll(cx) {
            return Poll::Ready(Ok(out));
        }
        if deadline.poll_expired(cx) {
            return Poll::Ready(Err(class));
        }
        Poll::Pending
    })
    .await
}
