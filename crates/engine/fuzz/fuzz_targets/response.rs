//! response: any bytes a server might send, read as one connection's responses.
//!
//! Besides not panicking, the reader must answer the same whatever the reads: the input fed
//! whole and fed in the pieces the fuzzer picked give the same responses, statuses, body
//! lengths and errors (see `fuzz_harness::walk` for the invariants checked on every call).

#![no_main]

use fuzz_harness::{walk, Input};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some(input) = Input::parse(data) else {
        return;
    };
    let whole = walk(&[input.bytes], input.head_request, input.eof);
    let split = walk(&input.pieces(), input.head_request, input.eof);
    assert_eq!(whole, split, "whole vs split");
});
