//! chunked: any bytes as the body of a chunked response, checked against a reference decoder.
//!
//! The reader, fed the body in the pieces the fuzzer picked, must agree with
//! `fuzz_harness::reference_chunked` (a whole-input decoder written without httparse): the
//! same payload length and end of body, an error exactly where the reference finds the body
//! invalid, and still waiting exactly where it finds the body incomplete.

#![no_main]

use fuzz_harness::{reference_chunked, walk, Input, Outcome, Reference};
use libfuzzer_sys::fuzz_target;
use redline_engine::http::ParseError;

const HEAD: &[u8] = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";

fuzz_target!(|data: &[u8]| {
    let Some(input) = Input::parse(data) else {
        return;
    };
    let mut reads = input.pieces();
    reads.insert(0, HEAD);
    let got = walk(&reads, false, input.eof);
    let want = match reference_chunked(input.bytes) {
        Reference::Complete { body, len } => Outcome::Complete {
            status: 200,
            body,
            close: false,
            len: HEAD.len() + len,
        },
        Reference::Invalid => Outcome::Failed(ParseError::Chunk),
        Reference::Incomplete if input.eof => Outcome::Failed(ParseError::Truncated),
        Reference::Incomplete => Outcome::Pending,
    };
    assert_eq!(got.first(), Some(&want), "reader vs reference");
});
