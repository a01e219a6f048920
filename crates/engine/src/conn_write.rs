//! [`write_all`]: a request's writes on a plain socket, their syscalls bracketed for the send
//! time (see [`crate::sendstamp`]).

use std::io;
use std::time::Instant;

use tokio::net::TcpStream;

use super::{writable, write_failed, Deadline, Trip};

/// write_all writes the whole request, counting each write in `sends` (stamped when its
/// request is one that asks, see [`crate::sendstamp`]); returns when its write syscalls began
/// (after the last wait for room in the socket): the bracket's start. A write error before
/// any byte left is `Unsent`.
pub(super) async fn write_all(
    stream: &TcpStream,
    mut data: &[u8],
    deadline: &mut Deadline,
    mut sends: Option<&mut crate::sendstamp::Sends>,
) -> Result<Instant, Trip> {
    let mut stamped = sends.as_deref_mut().is_some_and(|s| s.begin());
    let mut sent_any = false;
    let mut from = Instant::now();
    while !data.is_empty() {
        let wrote = if stamped {
            crate::sendstamp::send_stamped(stream, data)
        } else {
            stream.try_write(data)
        };
        match wrote {
            Ok(n) => {
                data = &data[n..];
                sent_any |= n > 0;
                if let Some(s) = sends.as_deref_mut() {
                    s.wrote(n);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                writable(stream, deadline).await?;
                from = Instant::now();
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            // A kernel that refuses the stamp's control message: write without it.
            Err(e) if stamped && e.kind() == io::ErrorKind::InvalidInput => {
                stamped = false;
                if let Some(s) = sends.as_deref_mut() {
                    s.refuse();
                }
            }
            Err(e) => return Err(write_failed(&e, sent_any)),
        }
    }
    Ok(from)
}
