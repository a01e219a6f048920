//! Streamed answers on a connection (`stream.rs` says what they carry and when): the head
//! goes out at once, then each piece as one chunk, flushed at its due time and counted as it
//! is handed to the socket.

use super::*;
use crate::stream::{self as probe, Stream};

impl<S: Io> Conn<S> {
    /// completion_ask reads what a completion's request body asks for into `stream` (its
    /// `max_tokens`) and says whether to stream; an SSE probe, or a completion without a
    /// body, streams as its query says.
    fn completion_ask(&self, stream: &mut Stream) -> Result<bool, String> {
        if !stream.is_completion() || self.body.is_empty() {
            return Ok(true);
        }
        if self.body_over {
            return Err("completion request too large".to_string());
        }
        let ask = probe::ask(&self.body)?;
        stream.count = ask.max_tokens.unwrap_or(stream.count);
        Ok(ask.stream)
    }

    /// answer_stream sends a streamed answer for a request that arrived at `read_at`: SSE
    /// events, or a completion's tokens (streamed when its body asks, else in one JSON body
    /// once the last token is due). An injected error status answers plainly, at once.
    pub(super) async fn answer_stream(
        &mut self,
        status: StatusCode,
        mut stream: Stream,
        read_at: Instant,
        behaviour: &Behaviour,
        request: &Request,
    ) -> io::Result<()> {
        if status != StatusCode::OK {
            return self
                .reply(
                    status,
                    "text/plain",
                    b"injected status\n",
                    behaviour,
                    request,
                )
                .await;
        }
        let streamed = match self.completion_ask(&mut stream) {
            Ok(streamed) => streamed,
            Err(reason) => {
                let body = format!("{reason}\n");
                let status = StatusCode::BAD_REQUEST;
                return self
                    .reply(status, "text/plain", body.as_bytes(), behaviour, request)
                    .await;
            }
        };
        let tokens = if stream.is_completion() {
            u64::from(stream.count)
        } else {
            0
        };
        if !streamed {
            let last = stream.count.saturating_sub(1);
            sleep::until(stream.due(read_at, last)).await?;
            let mut body = Vec::new();
            stream.whole(&mut body);
            self.shared.board.thread(self.thread).add_pieces(0, tokens);
            return self
                .reply(status, "application/json", &body, behaviour, request)
                .await;
        }
        let head = Head {
            status,
            content_type: "text/event-stream",
            body_len: 0,
            framing: Framing::Chunked,
            close: behaviour.close || !request.keep_alive,
        };
        response::encode_head_with(&mut self.out, &head, &[("cache-control", "no-cache")]);
        if request.head_only {
            return Ok(());
        }
        let shared = Arc::clone(&self.shared);
        let counters = shared.board.thread(self.thread);
        counters.add_stream();
        self.flush().await?;
        let token = u64::from(stream.is_completion());
        let mut piece = Vec::with_capacity(512);
        for k in 0..stream.count {
            sleep::until(stream.due(read_at, k)).await?;
            piece.clear();
            stream.piece(k, &mut piece);
            response::encode_piece(&mut self.out, &piece, Framing::Chunked);
            // Counted before the write, so a client that has read it finds it counted.
            counters.add_pieces(1, token);
            self.flush().await?;
        }
        piece.clear();
        let closing = stream.closing(&mut piece);
        response::encode_piece(&mut self.out, &piece, Framing::Chunked);
        response::encode_end(&mut self.out, Framing::Chunked);
        counters.add_pieces(closing, 0);
        self.flush().await
    }
}
