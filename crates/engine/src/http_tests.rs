use super::*;

/// Outcome of feeding a whole response: status, body bytes, close flag, bytes consumed.
type Parsed = Result<(u16, u64, bool, usize), ParseError>;

/// feed offers `chunks` one after another the way a connection does: unconsumed bytes stay
/// in the buffer and new bytes are appended; `eof` calls `finish` at the end.
fn feed(chunks: &[&[u8]], head_request: bool, eof: bool) -> Parsed {
    feed_on(&mut ResponseReader::new(head_request), chunks, eof)
}

/// feed_on is [`feed`] on reader `r` as it stands (started for the response).
fn feed_on(r: &mut ResponseReader, chunks: &[&[u8]], eof: bool) -> Parsed {
    let mut buf: Vec<u8> = Vec::new();
    let mut total = 0;
    for c in chunks {
        buf.extend_from_slice(c);
        let p = r.advance(&buf)?;
        buf.drain(..p.consumed);
        total += p.consumed;
        if p.complete {
            return Ok((r.status, r.body_bytes, r.close, total));
        }
    }
    if eof {
        r.finish()?;
        return Ok((r.status, r.body_bytes, r.close, total));
    }
    Err(ParseError::Truncated)
}

struct Case {
    label: &'static str,
    input: &'static [u8],
    head_request: bool,
    eof: bool,
    /// status, body bytes, close; a complete response consumes the whole input.
    want: Result<(u16, u64, bool), ParseError>,
}

impl Case {
    fn expected(&self) -> Parsed {
        self.want.map(|(s, b, c)| (s, b, c, self.input.len()))
    }
}

// long: a table of cases, one response each.
fn cases() -> Vec<Case> {
    let ok = |status, body, close| Ok((status, body, close));
    vec![
        Case {
            label: "content-length",
            input: b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
            head_request: false,
            eof: false,
            want: ok(200, 5, false),
        },
        Case {
            label: "zero length",
            input: b"HTTP/1.1 204 No Content\r\n\r\n",
            head_request: false,
            eof: false,
            want: ok(204, 0, false),
        },
        Case {
            label: "head request ignores content-length",
            input: b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n",
            head_request: true,
            eof: false,
            want: ok(200, 0, false),
        },
        Case {
            label: "connection close",
            input: b"HTTP/1.1 503 Busy\r\nConnection: close\r\nContent-Length: 2\r\n\r\nno",
            head_request: false,
            eof: false,
            want: ok(503, 2, true),
        },
        Case {
            label: "http/1.0 closes by default",
            input: b"HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nx",
            head_request: false,
            eof: false,
            want: ok(200, 1, true),
        },
        Case {
            label: "chunked with extension and trailer",
            input: b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4;name=v\r\nwiki\r\n5\r\npedia\r\n0\r\nX-Trailer: 1\r\n\r\n",
            head_request: false,
            eof: false,
            want: ok(200, 9, false),
        },
        Case {
            label: "chunked, hex size, no trailer",
            input: b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nA\r\n0123456789\r\n0\r\n\r\n",
            head_request: false,
            eof: false,
            want: ok(200, 10, false),
        },
        Case {
            label: "body until eof",
            input: b"HTTP/1.1 200 OK\r\n\r\nabc",
            head_request: false,
            eof: true,
            want: ok(200, 3, true),
        },
        Case {
            label: "interim 100 continue then the response",
            input: b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n",
            head_request: false,
            eof: false,
            want: ok(201, 0, false),
        },
        Case {
            label: "garbage",
            input: b"SSH-2.0-OpenSSH_9.6\r\n\r\n",
            head_request: false,
            eof: false,
            want: Err(ParseError::Head),
        },
        Case {
            label: "status below 100",
            input: b"HTTP/1.1 099 Odd\r\nContent-Length: 0\r\n\r\n",
            head_request: false,
            eof: false,
            want: Err(ParseError::Head),
        },
        Case {
            label: "bad content-length",
            input: b"HTTP/1.1 200 OK\r\nContent-Length: abc\r\n\r\n",
            head_request: false,
            eof: false,
            want: Err(ParseError::Framing),
        },
        Case {
            label: "conflicting content-lengths",
            input: b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nxx",
            head_request: false,
            eof: false,
            want: Err(ParseError::Framing),
        },
        Case {
            label: "bad chunk size",
            input: b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            head_request: false,
            eof: false,
            want: Err(ParseError::Chunk),
        },
        Case {
            label: "missing chunk terminator",
            input: b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nxyz",
            head_request: false,
            eof: false,
            want: Err(ParseError::Chunk),
        },
        Case {
            label: "signed content-length",
            input: b"HTTP/1.1 200 OK\r\nContent-Length: +1\r\n\r\nx",
            head_request: false,
            eof: false,
            want: Err(ParseError::Framing),
        },
        Case {
            label: "overflowing content-length",
            input: b"HTTP/1.1 200 OK\r\nContent-Length: 18446744073709551616\r\n\r\n",
            head_request: false,
            eof: false,
            want: Err(ParseError::Framing),
        },
        Case {
            label: "largest content-length, cut short",
            input: b"HTTP/1.1 200 OK\r\nContent-Length: 18446744073709551615\r\n\r\nab",
            head_request: false,
            eof: true,
            want: Err(ParseError::Truncated),
        },
        Case {
            label: "chunk-size line without digits",
            input: b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\r\n\r\n",
            head_request: false,
            eof: false,
            want: Err(ParseError::Chunk),
        },
        Case {
            // From the fuzzer (chunked target, with the digit check undone): the reader waited
            // for more where the line can no longer be valid.
            label: "chunk-size line starting with CR",
            input: b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\r",
            head_request: false,
            eof: false,
            want: Err(ParseError::Chunk),
        },
        Case {
            label: "chunk-size line with only an extension",
            input: b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n;a=b\r\n\r\n",
            head_request: false,
            eof: false,
            want: Err(ParseError::Chunk),
        },
        Case {
            label: "truncated body at eof",
            input: b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc",
            head_request: false,
            eof: true,
            want: Err(ParseError::Truncated),
        },
    ]
}

#[test]
fn parses_whole_responses() {
    for c in cases() {
        assert_eq!(
            feed(&[c.input], c.head_request, c.eof),
            c.expected(),
            "case {:?}",
            c.label
        );
    }
}

#[test]
fn parses_responses_split_at_every_byte_boundary() {
    for c in cases() {
        for at in 0..=c.input.len() {
            let (a, b) = c.input.split_at(at);
            let got = feed(&[a, b], c.head_request, c.eof);
            assert_eq!(got, c.expected(), "case {:?} split at {at}", c.label);
        }
    }
}

#[test]
fn parses_responses_fed_one_byte_at_a_time() {
    for c in cases() {
        let bytes: Vec<&[u8]> = c.input.chunks(1).collect();
        assert_eq!(
            feed(&bytes, c.head_request, c.eof),
            c.expected(),
            "case {:?}",
            c.label
        );
    }
}

#[test]
fn pipelined_responses_leave_the_next_one_untouched() {
    let first = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi".as_slice();
    let second =
        b"HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"
            .as_slice();
    let both = [first, second].concat();
    let mut r = ResponseReader::new(false);
    let p = r.advance(&both).expect("first parses");
    assert!(p.complete);
    assert_eq!((p.consumed, r.status, r.body_bytes), (first.len(), 200, 2));
    r.reset();
    let p = r.advance(&both[p.consumed..]).expect("second parses");
    assert!(p.complete);
    assert_eq!((p.consumed, r.status, r.body_bytes), (second.len(), 404, 3));
}

/// head builds a response head: the status line, `headers`, then `Content-Length: 0`.
fn head(headers: &[String]) -> Vec<u8> {
    let mut out = b"HTTP/1.1 200 OK\r\n".to_vec();
    for h in headers {
        out.extend_from_slice(h.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"Content-Length: 0\r\n\r\n");
    out
}

/// padded is a head of exactly `len` bytes (one long `X-Pad` header).
fn padded(len: usize) -> Vec<u8> {
    let base = head(&["X-Pad: ".to_string()]).len();
    head(&[format!("X-Pad: {}", "a".repeat(len - base))])
}

/// assert_every_split feeds `input` whole, then split in two at `stride` steps, and checks
/// every feed gives `want`.
fn assert_every_split(label: &str, input: &[u8], stride: usize, want: Parsed) {
    assert_eq!(feed(&[input], false, false), want, "case {label:?} whole");
    for at in (0..=input.len()).step_by(stride) {
        let (a, b) = input.split_at(at);
        assert_eq!(
            feed(&[a, b], false, false),
            want,
            "case {label:?} split at {at}"
        );
    }
}

#[test]
fn many_headers_parse_as_long_as_the_head_fits() {
    // label, header count; the stack array holds INLINE_HEADERS, more go to the heap.
    let cases = [
        ("inline exactly", INLINE_HEADERS - 1), // plus Content-Length
        ("one past inline", INLINE_HEADERS),
        ("200 set-cookie lines", 200),
        ("2000 short headers", 2000),
    ];
    for (label, count) in cases {
        let cookies: Vec<String> = (0..count)
            .map(|i| format!("Set-Cookie: c{i}=v; Path=/"))
            .collect();
        let input = head(&cookies);
        assert!(input.len() <= MAX_HEAD, "case {label:?} fits");
        let want = Ok((200, 0, false, input.len()));
        assert_every_split(label, &input, 97, want);
    }
}

#[test]
fn a_head_over_the_size_bound_is_a_protocol_error() {
    let fits = padded(MAX_HEAD);
    assert_eq!(fits.len(), MAX_HEAD);
    assert_every_split(
        "exactly MAX_HEAD",
        &fits,
        4099,
        Ok((200, 0, false, MAX_HEAD)),
    );
    let over = padded(MAX_HEAD + 1);
    let too_large = Err(ParseError::HeadTooLarge);
    assert_every_split("MAX_HEAD + 1", &over, 4099, too_large);
    // Many small headers over the bound fail the same way (no header-count limit first).
    let lines: Vec<String> = (0..MAX_HEAD / 8).map(|i| format!("A{i}: 1")).collect();
    assert_every_split("many headers", &head(&lines), 4099, too_large);
    // An endless head fails once MAX_HEAD bytes arrived, whatever follows.
    let endless = [
        b"HTTP/1.1 200 OK\r\n".as_slice(),
        &b"a: b\r\n".repeat(MAX_HEAD),
    ]
    .concat();
    assert_eq!(
        feed(&[&endless[..MAX_HEAD - 1]], false, false),
        Err(ParseError::Truncated)
    );
    assert_eq!(feed(&[&endless[..MAX_HEAD]], false, false), too_large);
}

#[test]
fn long_chunk_and_trailer_lines_fail_however_they_are_split() {
    let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".as_slice();
    let line = |len: usize, prefix: &[u8], end: &[u8]| {
        let mut body = prefix.to_vec();
        body.resize(len - 2, b'x');
        body.extend_from_slice(b"\r\n");
        [chunked, &body, end].concat()
    };
    // label, input, outcome; a line of MAX_LINE bytes (CRLF included) is the longest accepted
    // ("0\r\n" before the trailer line is 3 bytes).
    let cases = [
        (
            "longest chunk-size line",
            line(MAX_LINE, b"0;", b"\r\n"),
            Ok((200, 0, false, 0)),
        ),
        (
            "chunk-size line too long",
            line(MAX_LINE + 1, b"0;", b"\r\n"),
            Err(ParseError::Chunk),
        ),
        (
            "longest trailer line",
            line(MAX_LINE + 3, b"0\r\nX-T: ", b"\r\n"),
            Ok((200, 0, false, 0)),
        ),
        (
            "trailer line too long",
            line(MAX_LINE + 4, b"0\r\nX-T: ", b"\r\n"),
            Err(ParseError::Chunk),
        ),
    ];
    for (label, input, want) in cases {
        let want = want.map(|(s, b, c, _)| (s, b, c, input.len()));
        assert_every_split(label, &input, 7, want);
    }
}

/// HEADS are response heads of the forms servers send, and odd ones next to them.
const HEADS: &[&[u8]] = &[
    b"HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Fri, 27 Nov 2026 13:25:46 GMT\r\nContent-Type: text/plain\r\nContent-Length: 3\r\nConnection: keep-alive\r\n\r\nok\n",
    b"HTTP/1.0 404 Not Found\r\ncontent-length:  12 \r\nCONNECTION: Keep-Alive, Upgrade\r\n\r\n",
    b"HTTP/1.1 200 \r\nTransfer-Encoding: gzip, chunked\r\nX-Empty:\r\nX-Tab:\tv\t\r\n\r\n",
    b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n",
    b"HTTP/1.1 301 Moved \xc3\xa9\r\nLocation: /x\r\nX-Obs: caf\xc3\xa9\r\nContent-Length: 0\r\n\r\n",
    // Read, then refused by the framing (no status below 100), as httparse's read is.
    b"HTTP/1.1 099 Low\r\nContent-Length: 0\r\n\r\n",
    b"HTTP/1.1 200 OK\nContent-Length: 0\n\n",
    b"\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nX-Fold: a\r\n b\r\nContent-Length: 0\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nBad Name: x\r\nContent-Length: 0\r\n\r\n",
    b"HTTP/1.1 200 OK\r\n: empty\r\nContent-Length: 0\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nX-Ctl: a\x01b\r\nContent-Length: 0\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nX-Del: a\x7fb\r\nContent-Length: 0\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nX-Cr: a\rb\r\nContent-Length: 0\r\n\r\n",
    b"HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n",
    b"HTTP/2.0 200 OK\r\nContent-Length: 0\r\n\r\n",
    b"http/1.1 200 OK\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\nE: 5\r\nF: 6\r\nG: 7\r\nH: 8\r\nI: 9\r\nJ: 10\r\nK: 11\r\nL: 12\r\nM: 13\r\nN: 14\r\nO: 15\r\nP: 16\r\nQ: 17\r\n\r\n",
];

/// agree checks that whatever fast_head reads of `buf`, httparse reads the same: length,
/// version, code and headers (values up to the spaces around them).
fn agree(buf: &[u8]) -> bool {
    let buf = &buf[..buf.len().min(MAX_HEAD)];
    let mut lines = [(0, 0, 0); FAST_HEADERS];
    let Some(fast) = fast_head(buf, &mut lines) else {
        return false;
    };
    let mut many = vec![httparse::EMPTY_HEADER; 64];
    let mut resp = httparse::Response::new(&mut many);
    let parsed = resp.parse(buf);
    assert_eq!(parsed, Ok(httparse::Status::Complete(fast.len)), "{buf:?}");
    assert_eq!(
        (resp.version, resp.code),
        (Some(fast.minor), Some(fast.code))
    );
    assert_eq!(resp.headers.len(), fast.headers, "{buf:?}");
    let trim = |v: &[u8]| {
        let v = v.trim_ascii_start();
        v[..v.len()
            - v.iter()
                .rev()
                .take_while(|b| b.is_ascii_whitespace())
                .count()]
            .to_vec()
    };
    for (h, &(name, colon, end)) in resp.headers.iter().zip(lines.iter()) {
        let (name, colon, end) = (usize::from(name), usize::from(colon), usize::from(end));
        assert_eq!(h.name.as_bytes(), &buf[name..colon], "{buf:?}");
        assert_eq!(trim(h.value), trim(&buf[colon + 1..end]), "{buf:?}");
    }
    true
}

#[test]
fn the_fast_head_reads_what_httparse_reads() {
    let mut fast = 0;
    for head in HEADS {
        // Every prefix (incomplete heads are httparse's to judge), and every byte changed
        // to one that ends, splits or breaks a line or a token.
        for end in 0..=head.len() {
            fast += usize::from(agree(&head[..end]));
        }
        for at in 0..head.len() {
            for b in [
                b' ', b'\t', b'\r', b'\n', b':', b',', 0, 0x7f, 0x80, b'A', b'0',
            ] {
                let mut m = head.to_vec();
                m[at] = b;
                fast += usize::from(agree(&m));
            }
        }
    }
    assert!(fast > 1000, "the fast path read only {fast} heads");
    // The plain heads take it; the odd ones are httparse's.
    let takes = |h: &[u8]| fast_head(h, &mut [(0, 0, 0); FAST_HEADERS]).is_some();
    let taken: Vec<bool> = HEADS.iter().map(|h| takes(h)).collect();
    let mut want = vec![true; 6];
    want.resize(HEADS.len(), false);
    assert_eq!(taken, want);
}

#[test]
fn a_fast_head_frames_as_httparse_does() {
    // The fast path's answer against httparse's for whole responses (status, body, close).
    let cases: [(&[u8], Parsed); 4] = [
        (HEADS[0], Ok((200, 3, false, HEADS[0].len()))),
        (HEADS[1], Ok((404, 12, false, HEADS[1].len() + 12))),
        (HEADS[3], Ok((204, 0, true, HEADS[3].len()))),
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            Err(ParseError::Framing),
        ),
    ];
    for (input, want) in cases {
        let mut full = input.to_vec();
        if input == HEADS[1] {
            full.extend_from_slice(b"hello world!");
        }
        assert_eq!(feed(&[&full], false, false), want, "{input:?}");
    }
}

#[test]
fn a_reader_that_knows_the_last_head_frames_as_a_fresh_one() {
    // Every response after every other on one reader (the kept head from the first), whole
    // and split at every byte, against a fresh reader's outcome; and the plain head with each
    // byte changed, after the plain head itself.
    let mut inputs: Vec<(Vec<u8>, bool, bool)> = cases()
        .iter()
        .map(|c| (c.input.to_vec(), c.head_request, c.eof))
        .collect();
    inputs.extend(HEADS.iter().map(|h| (h.to_vec(), false, true)));
    inputs.extend(HEADS.iter().map(|h| (h.to_vec(), true, true)));
    for at in 0..HEADS[0].len() {
        for b in [b' ', b'\r', b'\n', b':', 0, b'A', b'4'] {
            let mut m = HEADS[0].to_vec();
            m[at] = b;
            inputs.push((m, false, true));
        }
    }
    for (first, first_head, first_eof) in &inputs[..cases().len() + HEADS.len()] {
        for (input, head_request, eof) in &inputs {
            let want = feed(&[input], *head_request, *eof);
            let splits = [0, input.len() / 2, input.len()];
            for at in splits.into_iter().chain(1..input.len().min(40)) {
                let mut r = ResponseReader::new(*first_head);
                let _ = feed_on(&mut r, &[first], *first_eof);
                r.start(*head_request);
                let (a, b) = input.split_at(at);
                let got = feed_on(&mut r, &[a, b], *eof);
                assert_eq!(got, want, "{input:?} after {first:?}, split at {at}");
            }
        }
    }
    // The plain head is kept, and found again at the start of the next response.
    let mut r = ResponseReader::new(false);
    assert!(feed_on(&mut r, &[HEADS[0]], false).is_ok());
    assert!(r.memo.get(HEADS[0]).is_some());
}

/// A scenario's response as the reader keeps it, whatever the split of the reads: the fields
/// of the final head (an interim 100's dropped), every value of a repeated name, and the
/// payload without chunk framing, extensions or trailers.
#[test]
fn kept_responses_whatever_the_split() {
    // (label, response, status, body, X-A)
    type Case<'a> = (&'a str, &'a [u8], u16, &'a str, Option<&'a str>);
    let cases: &[Case] = &[
        ("length", b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A:  1 \r\n\r\nhello", 200, "hello", Some("1")),
        ("chunked", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nx-a: 2\r\n\r\n3;e=1\r\nhel\r\n2\r\nlo\r\n0\r\nT: 1\r\n\r\n", 200, "hello", Some("2")),
        ("interim", b"HTTP/1.1 100 Continue\r\nX-A: 0\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n", 204, "", None),
    ];
    for (label, raw, status, body, xa) in cases {
        for split in 1..raw.len() {
            let mut kept = Response::default();
            let mut r = ResponseReader::new(false);
            let (mut buf, mut done) = (Vec::new(), false);
            for piece in raw.chunks(split) {
                buf.extend_from_slice(piece);
                let p = r.advance_into(&buf, Some(&mut kept)).expect(label);
                buf.drain(..p.consumed);
                done = p.complete;
            }
            let got = (done, kept.status, kept.body.as_slice(), kept.first("x-a"));
            let want = (true, *status, body.as_bytes(), *xa);
            assert_eq!(got, want, "{label} /{split}");
        }
    }
    let kept = read_whole(b"HTTP/1.1 200 OK\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\n\r\n");
    let cookies: Vec<_> = kept.headers_named("set-cookie").collect();
    assert_eq!(cookies, ["a=1", "b=2"]);
    // A head that does not parse keeps nothing.
    assert_eq!(read_whole(b"nonsense").status, 0);
}
