//! The response head's fast path: a plain head read without httparse, and the last head a
//! reader framed, kept so that the same head again is recognised by one compare.

use super::Framing;
use crate::message::Response;

/// FAST_HEADERS is how many headers [`fast_head`] reads; a head with more takes httparse's path.
pub(super) const FAST_HEADERS: usize = 16;

/// FastHead is a head as [`fast_head`] read it.
pub(super) struct FastHead {
    /// len: the head's length, its last CRLF included.
    pub(super) len: usize,
    /// minor: the minor HTTP version (0 or 1).
    pub(super) minor: u8,
    /// code: the status code's three digits.
    pub(super) code: u16,
    /// headers: how many header lines it has.
    pub(super) headers: usize,
}

/// fast_head reads a complete response head in the form servers send (`HTTP/1.x NNN reason`,
/// then `name:value` lines, every line ending in CRLF, then CRLF), each header as (name start,
/// colon, line end) in `lines` (a head is at most [`super::MAX_HEAD`] bytes: its offsets fit 16 bits).
/// Anything else, incomplete heads included, is None, and httparse reads it: what this reads is
/// a subset of what httparse accepts (the same bytes allowed in names, values and reasons; no
/// bare LF, no leading empty line, no space before a colon, no line folding, at most
/// [`FAST_HEADERS`] headers) and it finds the same length, version, code and headers; a value
/// keeps the spaces around it, which the framing trims anyway. The tests hold it to httparse.
///
/// Hand-rolled because it runs on every response: with httparse, nginx's 5-header response
/// cost the worker about 2,350 instructions (a call per line into SIMD code set up for long
/// lines, and the checks for the lenient forms above), against about 1,500 on this path
/// (callgrind): the difference is a seventh of all the worker's user-space instructions.
pub(super) fn fast_head(
    buf: &[u8],
    lines: &mut [(u16, u16, u16); FAST_HEADERS],
) -> Option<FastHead> {
    let minor = match buf.get(..9)? {
        b"HTTP/1.1 " => 1,
        b"HTTP/1.0 " => 0,
        _ => return None,
    };
    let (code, space) = (buf.get(9..12)?, *buf.get(12)?);
    if !code.iter().all(u8::is_ascii_digit) || space != b' ' {
        return None;
    }
    let code = code.iter().fold(0, |n, &d| n * 10 + u16::from(d - b'0'));
    let mut i = line_end(buf, 13)?;
    let mut headers = 0;
    loop {
        if *buf.get(i)? == b'\r' {
            let len = (*buf.get(i + 1)? == b'\n').then_some(i + 2)?;
            return Some(FastHead {
                len,
                minor,
                code,
                headers,
            });
        }
        let name = i;
        let colon = find_colon(buf, name)?;
        let token = buf[name..colon]
            .iter()
            .fold(true, |ok, &b| ok & TOKEN[usize::from(b)]);
        if colon == name || !token {
            return None;
        }
        i = line_end(buf, colon + 1)?;
        let offset = |at: usize| u16::try_from(at).ok();
        *lines.get_mut(headers)? = (offset(name)?, offset(colon)?, offset(i - 2)?);
        headers += 1;
    }
}

/// ONES and HIGH: each byte of a word 0x01, and 0x80, for [`find_colon`]'s and
/// [`line_end`]'s eight-bytes-at-a-time tests (`(x - ONES) & !x & HIGH` flags the zero bytes
/// of `x`, the lowest one exactly).
const ONES: u64 = u64::from_le_bytes([0x01; 8]);
const HIGH: u64 = u64::from_le_bytes([0x80; 8]);

/// find_colon is the index of the first `:` from `i`, eight bytes at a time.
#[inline]
fn find_colon(buf: &[u8], mut i: usize) -> Option<usize> {
    while let Some(word) = buf.get(i..i + 8) {
        let x = u64::from_le_bytes(word.try_into().ok()?) ^ (ONES * u64::from(b':'));
        let flags = x.wrapping_sub(ONES) & !x & HIGH;
        if flags != 0 {
            return Some(i + (flags.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    Some(i + buf.get(i..)?.iter().position(|&b| b == b':')?)
}

/// line_end is the index after the CRLF that ends the line at `i`, when every byte before it
/// is one httparse allows in a header value or a reason phrase. Eight bytes at a time while
/// none of them is a control byte (below SP, or DEL): a control byte ends the line (CR), is a
/// tab, or makes the head one for httparse to judge.
#[inline]
fn line_end(buf: &[u8], mut i: usize) -> Option<usize> {
    while let Some(word) = buf.get(i..i + 8) {
        let x = u64::from_le_bytes(word.try_into().ok()?);
        // The lowest flagged byte of each test is exact (a borrow only flags bytes above it).
        let below_space = x.wrapping_sub(ONES * 0x20) & !x & HIGH;
        let del = x ^ (ONES * 0x7f);
        let del = del.wrapping_sub(ONES) & !del & HIGH;
        let flags = below_space | del;
        if flags == 0 {
            i += 8;
            continue;
        }
        i += (flags.trailing_zeros() / 8) as usize;
        match buf[i] {
            b'\r' => return (*buf.get(i + 1)? == b'\n').then_some(i + 2),
            b'\t' => i += 1,
            _ => return None,
        }
    }
    loop {
        let b = *buf.get(i)?;
        if b == b'\r' {
            return (*buf.get(i + 1)? == b'\n').then_some(i + 2);
        }
        if !VALUE[usize::from(b)] {
            return None;
        }
        i += 1;
    }
}

/// TOKEN: the bytes of a header name (RFC 9110's tchar), as httparse takes them.
static TOKEN: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        t[b] = c.is_ascii_alphanumeric()
            || matches!(
                c,
                b'!' | b'#' | b'$' | b'%' | b'&' | b'\'' | b'*' | b'+' | b'-' | b'.'
            )
            || matches!(c, b'^' | b'_' | b'`' | b'|' | b'~');
        b += 1;
    }
    t
};

/// VALUE: the bytes of a header value or reason phrase (HTAB, SP, VCHAR, obs-text), as httparse
/// takes them.
static VALUE: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = b == 0x09 || (b >= 0x20 && b != 0x7f);
        b += 1;
    }
    t
};

/// MEMO_MAX is the longest head a [`HeadMemo`] keeps: plain servers' heads are a few hundred
/// bytes; a longer one is framed afresh every time rather than held per connection.
const MEMO_MAX: usize = 1024;

/// HeadMemo is the last head a reader framed by the fast path, byte for byte, and its
/// framing. A server sends the same head over and over (its `Date` moves once a second), and
/// a head's framing is a function of its bytes alone: a head equal to the kept one frames as
/// it did, found by one compare instead of a parse.
///
/// Hand-rolled because it runs on every response: against nginx the parse cost the worker
/// about 1,500 instructions a response, the compare a few dozen (callgrind). A server whose
/// heads always differ (a request id in each) pays the compare, which stops at the first byte
/// that differs, and a copy of the head on top of the parse.
#[derive(Debug, Clone, Default)]
pub(super) struct HeadMemo {
    head: Vec<u8>,
    framing: Option<Framing>,
}

impl HeadMemo {
    /// get is the kept head's length and framing when `buf` starts with that head.
    #[inline]
    pub(super) fn get(&self, buf: &[u8]) -> Option<(usize, Framing)> {
        let framing = self.framing?;
        let n = self.head.len();
        (buf.get(..n)? == self.head.as_slice()).then_some((n, framing))
    }

    /// keep holds `head` and its `framing` in place of the last one (forgets it, for a head
    /// over [`MEMO_MAX`]).
    pub(super) fn keep(&mut self, head: &[u8], framing: Framing) {
        self.head.clear();
        self.framing = None;
        if head.len() <= MEMO_MAX {
            self.head.extend_from_slice(head);
            self.framing = Some(framing);
        }
    }
}

/// keep puts a complete head the reader has framed (so one httparse accepts: the fast path
/// and the memo read a subset of it) into a scenario's `into`: status `status` and every
/// header field, values without the spaces around them. Only a captured response pays for
/// this second look; the hot path keeps nothing.
pub(super) fn keep(head: &[u8], status: u16, into: &mut Response) {
    into.head(status);
    let mut inline = [httparse::EMPTY_HEADER; 64];
    let mut resp = httparse::Response::new(&mut inline);
    let mut many;
    if let Err(httparse::Error::TooManyHeaders) = resp.parse(head) {
        // As the reader's own fallback: the head's lines bound its headers.
        let lines = head.iter().filter(|&&b| b == b'\n').count();
        many = vec![httparse::EMPTY_HEADER; lines + 1];
        resp = httparse::Response::new(&mut many);
        let _ = resp.parse(head);
    }
    for h in resp.headers.iter().filter(|h| !h.name.is_empty()) {
        into.header(h.name.as_bytes(), h.value.trim_ascii());
    }
}
