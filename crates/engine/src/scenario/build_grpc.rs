//! The builder's gRPC call ([`crate::scenario::grpc`]): a request step with a `grpc` block,
//! built as a request, then given what a call is: gRPC's headers (the step's `timeout=` sent
//! as its deadline, `grpc-timeout`), its message encoded through the method's descriptor, its
//! answer streamed when the method streams it.

use super::Builder;
use crate::error::EngineError;
use crate::scenario::grpc::GrpcCall;
use crate::scenario::spec::RequestSpec;
use crate::scenario::template::{Escape, Part, Scratch, Template};
use crate::scenario::Body;

/// HEADERS: what every gRPC call carries (its content type, and that it reads trailers).
const HEADERS: [(&str, &str); 2] = [("content-type", "application/grpc"), ("te", "trailers")];

impl Builder<'_> {
    /// grpc makes the request just built from `r` a gRPC call when `r` has a `grpc` block.
    pub(super) fn grpc(&mut self, r: &RequestSpec) -> Result<(), EngineError> {
        let Some(spec) = &r.grpc else {
            return Ok(());
        };
        let line = r.line;
        if !r.method.eq_ignore_ascii_case("POST") || r.follow_redirects {
            return Err(self.err(line, "a gRPC call is a POST that follows no redirect"));
        }
        if let Some((k, _)) = r.headers.iter().find(|(k, _)| {
            let k = k.to_ascii_lowercase();
            HEADERS.iter().any(|(h, _)| *h == k) || k.starts_with("grpc-") || k.starts_with(':')
        }) {
            return Err(self.err(line, format!("gRPC metadata {k:?} is the call's own")));
        }
        let message = match self.requests.last().map(|q| &q.body) {
            Some(Body::Json(t)) => t.clone(),
            Some(Body::None) | None => Template::literal("{}", Escape::Json),
            Some(Body::Form(_) | Body::Text(_)) => {
                return Err(self.err(line, "a gRPC call's message is JSON (message=)"))
            }
        };
        // A message of literals alone is encoded once, here: nothing in it can fail to render.
        let mut fixed = Vec::new();
        let literal = message.parts.iter().all(|p| matches!(p, Part::Lit(_)));
        if literal {
            let _ = message.render(&[], &mut fixed, &mut Scratch::default());
        }
        let call =
            GrpcCall::new(spec, literal.then_some(&fixed[..])).map_err(|e| self.err(line, e))?;
        let Some(req) = self.requests.last_mut() else {
            return Ok(());
        };
        for (i, (k, v)) in HEADERS.iter().enumerate() {
            let value = Template::literal(v, Escape::Header);
            req.headers.insert(i, ((*k).to_string(), value));
        }
        // The step's timeout is the call's deadline, and the server is told it, as gRPC
        // clients tell theirs: it may give up at the deadline (DEADLINE_EXCEEDED) rather than
        // answer a caller that is gone.
        if let Some(t) = req.timeout {
            let value = Template::literal(&crate::grpc::timeout_header(t), Escape::Header);
            req.headers
                .insert(HEADERS.len(), ("grpc-timeout".to_string(), value));
        }
        req.content_type = None;
        req.body = Body::Json(message);
        req.stream |= call.streams();
        req.grpc = Some(Box::new(call));
        Ok(())
    }
}
