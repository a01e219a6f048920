//! The builder's WebSocket step ([`crate::scenario::ws`]): its name a statistics index, its
//! URL and messages templates, its options checked once.

use std::time::Duration;

use super::Builder;
use crate::error::EngineError;
use crate::scenario::spec::{BodySpec, PartSpec, SocketSpec};
use crate::scenario::template::Escape;
use crate::scenario::ws::SocketStep;

impl Builder<'_> {
    /// socket resolves a WebSocket step into the script's sockets and gives its index.
    pub(super) fn socket(&mut self, w: &SocketSpec) -> Result<usize, EngineError> {
        let line = w.line;
        let first = match w.url.first() {
            Some(PartSpec::Lit(s)) => s.as_str(),
            _ => "",
        };
        let lower = first.to_ascii_lowercase();
        let path = first.starts_with('/') && !first.starts_with("//");
        if !(path || lower.starts_with("ws://") || lower.starts_with("wss://")) {
            let shown: String = w.url.iter().map(PartSpec::shown).collect();
            return Err(self.err(
                line,
                format!(
                    "a WebSocket URL is a path starting with '/' or a ws:// or wss:// URL, \
                     got {shown:?}"
                ),
            ));
        }
        let url = self.template(&w.url, Escape::Path, line)?;
        if w.messages.is_empty() {
            return Err(self.err(line, "websocket: give at least one message to send"));
        }
        let mut messages = Vec::with_capacity(w.messages.len());
        for m in &w.messages {
            messages.push(match m {
                BodySpec::Json { template } => self.template(template, Escape::Json, line)?,
                BodySpec::Text { template } => self.template(template, Escape::Raw, line)?,
                BodySpec::Form { .. } => {
                    return Err(self.err(line, "websocket: a message is text or JSON, not a form"))
                }
            });
        }
        let count = w.count.unwrap_or(1);
        if count == 0 {
            return Err(self.err(line, "websocket: count must be >= 1"));
        }
        if w.match_field.as_deref() == Some("") {
            return Err(self.err(line, "websocket: the field to match replies by is empty"));
        }
        let timeout = match w.timeout_s {
            None => None,
            Some(t) if t.is_finite() && t > 0.0 && t < 1e9 => Some(Duration::from_secs_f64(t)),
            Some(t) => return Err(self.err(line, format!("timeout must be > 0 s, got {t}"))),
        };
        let stat = Self::stat(&mut self.names, &w.name);
        self.sockets.push(SocketStep {
            stat,
            url,
            messages,
            count,
            field: w.match_field.clone(),
            timeout,
        });
        Ok(self.sockets.len() - 1)
    }
}
