//! Failures: why a request failed, by class, and the counts of each.
//!
//! A per-request failure is data, never an error returned: every class is counted (per
//! thread, per interval, per request name) in fixed fields, so nothing grows with the number
//! of failures. [`crate::metrics`] records them; [`crate::outage`] reads them to tell an
//! outage from scattered failures.

use serde::Serialize;

/// ErrorClass is why a request failed; per-request failures are counted, never raised.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// Connect: the TCP connect (or, for https, the TLS handshake) failed or timed out.
    Connect,
    /// Timeout: no complete response within the request timeout.
    Timeout,
    /// Read: reading the response failed or the connection closed mid-response.
    Read,
    /// Write: sending the request failed.
    Write,
    /// Reset: the peer reset the connection (ECONNRESET, EPIPE).
    Reset,
    /// Protocol: the response was not valid HTTP (HTTP/2: the server broke the protocol, e.g.
    /// a frame it may not send, and h2 closed the connection or reset the stream).
    Protocol,
    /// GoAway: HTTP/2: the server's GOAWAY caught the request (a stream it will not answer,
    /// or a connection it closed with an error).
    GoAway,
    /// RstStream: HTTP/2: the server reset the request's stream (RST_STREAM).
    RstStream,
    /// Status: the response status was >= 400.
    Status,
    /// Check: a scenario request was answered but failed a check or an extraction (its
    /// reason is counted under the request's name).
    Check,
    /// Grpc: a gRPC call answered with a status other than OK (its code is counted among the
    /// run's statuses).
    Grpc,
}

impl ErrorClass {
    /// ALL lists the classes in report order.
    pub const ALL: [ErrorClass; 11] = [
        ErrorClass::Connect,
        ErrorClass::Timeout,
        ErrorClass::Read,
        ErrorClass::Write,
        ErrorClass::Reset,
        ErrorClass::Protocol,
        ErrorClass::GoAway,
        ErrorClass::RstStream,
        ErrorClass::Status,
        ErrorClass::Check,
        ErrorClass::Grpc,
    ];

    /// key is the class's name in a report's `errors` and `errors_by_class` (the field of
    /// [`ErrorCounts`] that counts it): the one spelling Python reads
    /// (`redline._engine.ERROR_CLASSES`), never copies.
    pub fn key(self) -> &'static str {
        match self {
            ErrorClass::Connect => "connect",
            ErrorClass::Timeout => "timeout",
            ErrorClass::Read => "read",
            ErrorClass::Write => "write",
            ErrorClass::Reset => "reset",
            ErrorClass::Protocol => "protocol",
            ErrorClass::GoAway => "goaway",
            ErrorClass::RstStream => "rst_stream",
            ErrorClass::Status => "status",
            ErrorClass::Check => "check",
            ErrorClass::Grpc => "grpc",
        }
    }

    /// reason is the class as a scenario's per-name reasons table names a failure of it.
    pub fn reason(self) -> &'static str {
        match self {
            ErrorClass::Connect => "connect error",
            ErrorClass::Timeout => "timeout",
            ErrorClass::Read => "read error",
            ErrorClass::Write => "write error",
            ErrorClass::Reset => "connection reset",
            ErrorClass::Protocol => "protocol error",
            ErrorClass::GoAway => "goaway",
            ErrorClass::RstStream => "stream reset",
            ErrorClass::Status => "HTTP error status",
            // A check's failures are counted under the check's own reason; this is the rest.
            ErrorClass::Check => "error",
            ErrorClass::Grpc => "gRPC status not OK",
        }
    }

    /// answered: a failure of this class got a response (an error status, a failed check);
    /// the others are transport failures, requests that got none.
    pub fn answered(self) -> bool {
        matches!(
            self,
            ErrorClass::Status | ErrorClass::Check | ErrorClass::Grpc
        )
    }
}

/// ErrorCounts counts errors by class.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ErrorCounts {
    /// connect: failed TCP connects.
    pub connect: u64,
    /// timeout: requests that timed out.
    pub timeout: u64,
    /// read: read failures and truncated responses.
    pub read: u64,
    /// write: write failures.
    pub write: u64,
    /// reset: connection resets.
    pub reset: u64,
    /// protocol: unparseable responses.
    pub protocol: u64,
    /// goaway: HTTP/2 requests caught by the server's GOAWAY.
    pub goaway: u64,
    /// rst_stream: HTTP/2 requests whose stream the server reset.
    pub rst_stream: u64,
    /// status: responses with status >= 400.
    pub status: u64,
    /// check: scenario responses that failed a check or an extraction.
    pub check: u64,
    /// grpc: gRPC calls answered with a status other than OK.
    pub grpc: u64,
}

impl ErrorCounts {
    /// add counts one error of `class`.
    pub fn add(&mut self, class: ErrorClass) {
        match class {
            ErrorClass::Connect => self.connect += 1,
            ErrorClass::Timeout => self.timeout += 1,
            ErrorClass::Read => self.read += 1,
            ErrorClass::Write => self.write += 1,
            ErrorClass::Reset => self.reset += 1,
            ErrorClass::Protocol => self.protocol += 1,
            ErrorClass::GoAway => self.goaway += 1,
            ErrorClass::RstStream => self.rst_stream += 1,
            ErrorClass::Status => self.status += 1,
            ErrorClass::Check => self.check += 1,
            ErrorClass::Grpc => self.grpc += 1,
        }
    }

    /// merge adds another set of counts.
    pub fn merge(&mut self, o: &ErrorCounts) {
        self.connect += o.connect;
        self.timeout += o.timeout;
        self.read += o.read;
        self.write += o.write;
        self.reset += o.reset;
        self.protocol += o.protocol;
        self.goaway += o.goaway;
        self.rst_stream += o.rst_stream;
        self.status += o.status;
        self.check += o.check;
        self.grpc += o.grpc;
    }

    /// total is the sum over all classes.
    pub fn total(&self) -> u64 {
        self.connect
            + self.timeout
            + self.read
            + self.write
            + self.reset
            + self.protocol
            + self.goaway
            + self.rst_stream
            + self.status
            + self.check
            + self.grpc
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each class's key is the field of ErrorCounts that counts it, as the report spells it.
    #[test]
    fn keys_are_the_report_fields() {
        for class in ErrorClass::ALL {
            let mut counts = ErrorCounts::default();
            counts.add(class);
            let json = serde_json::to_value(counts).expect("counts serialise");
            let fields = json.as_object().expect("an object");
            let counted: Vec<&String> = fields
                .iter()
                .filter(|(_, v)| **v == 1)
                .map(|(k, _)| k)
                .collect();
            assert_eq!(counted, vec![class.key()], "{class:?}");
        }
        assert_eq!(
            serde_json::to_value(ErrorCounts::default())
                .expect("counts serialise")
                .as_object()
                .map(|o| o.len()),
            Some(ErrorClass::ALL.len())
        );
    }
}
