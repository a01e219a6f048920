//! The executor's WebSocket step ([`crate::scenario::ws`]): its URL and messages rendered
//! with the VU's values, then handed to the transport, which opens the socket, exchanges the
//! messages and books them.

use std::time::Instant;

use bytes::Bytes;

use super::{Failed, Transport, Vu};
use crate::scenario::ws::{ws_base, SocketStep};
use crate::scenario::Script;

impl Vu {
    /// socket runs WebSocket step `step` meant to start at `intended`; a URL or a message
    /// that cannot be written as the flow says fails it, booked as a failed request of its
    /// name (nothing is sent).
    pub(super) async fn socket<T: Transport>(
        &mut self,
        script: &Script,
        step: &SocketStep,
        t: &mut T,
        intended: Instant,
    ) -> Result<(), Failed> {
        self.sent = intended;
        self.sent_any = true;
        self.stat = step.stat;
        let mut url = Vec::new();
        if step
            .url
            .render(&self.vars, &mut url, &mut self.scratch)
            .is_err()
        {
            t.nowhere();
            t.fail(
                intended,
                step.stat,
                "websocket: its URL could not be computed",
            );
            return Err(Failed);
        }
        // Templates write text: valid UTF-8.
        let mut url = String::from_utf8(url).unwrap_or_default();
        if url.starts_with('/') {
            url.insert_str(0, &ws_base(&script.base));
        }
        let mut messages = Vec::with_capacity(step.messages.len());
        for m in &step.messages {
            let mut text = Vec::new();
            if m.render(&self.vars, &mut text, &mut self.scratch).is_err() {
                t.nowhere();
                t.fail(
                    intended,
                    step.stat,
                    "websocket: a message could not be computed",
                );
                return Err(Failed);
            }
            messages.push(Bytes::from(text));
        }
        if t.socket(step, &url, &messages, intended).await {
            Ok(())
        } else {
            Err(Failed)
        }
    }
}
