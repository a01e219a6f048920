"""When a streamed answer's events left the server, as the wire saw it: the gaps between the
events of each response, timed by the loopback, not by the client that reads them.

A client's gap figure (redline's `chunk_gap_ms`) is the wire's gap plus how late the client
stamped each event; the server's schedule is exact by construction (crates/testserver's
precise timers), so a gap p99 above the probe's pace is either the server sending late or the
client stamping late. This capture tells them apart: a packet socket on the loopback keeps
every segment leaving the server's port with the kernel's stamp of its passing (the tap runs
in the sender's write, as bench/sendlag.py's does), and the answers are read back from the
segments: HTTP/1.1 responses (an event ends with a blank line; a new status line starts the
next response) or HTTP/2 frames (each stream's DATA payload; a stream is one response). An
event's time is the stamp of the segment that brought its last byte.

    with Capture(port) as cap:
        ... a client reads streamed answers from 127.0.0.1:port ...
    cap.gaps()   # WireGaps(p50_ms, p99_ms, events, gaps)

The capture runs as its own process (`python bench/wiregap.py PORT FILE`).
"""

from __future__ import annotations

import struct
import sys
from dataclasses import dataclass
from pathlib import Path

import sendlag

#: SNAP: how much of a segment is kept (the loopback's MTU: all of it).
SNAP = 65_536

#: RECORD: a kept segment's header in the capture's file: its stamp (ns) and length.
RECORD = struct.Struct("qI")


def capture(port: int, out: Path) -> None:
    """capture keeps every data segment leaving ``port`` on the loopback, with its kernel
    stamp, until SIGTERM, then writes them to ``out``; prints "ready" once in place."""
    kept: list[bytes] = []

    def keep(stamp: int, data: bytes) -> None:
        kept.append(RECORD.pack(stamp, len(data)) + data)

    sendlag.listen(sendlag.tap(sendlag.program(port, source=True, snap=SNAP)), SNAP + 64, keep)
    out.write_bytes(b"".join(kept))


def segments(raw: bytes) -> dict[int, list[tuple[int, bytes]]]:
    """segments reads a capture's file back: per client port, its answers' TCP payloads in
    order of sequence, each with its stamp (a resent byte is kept once)."""
    flows: dict[int, list[tuple[int, bytes]]] = {}
    next_seq: dict[int, int] = {}
    at = 0
    while at + RECORD.size <= len(raw):
        stamp, n = RECORD.unpack_from(raw, at)
        pkt = raw[at + RECORD.size : at + RECORD.size + n]
        at += RECORD.size + n
        ip = pkt[14:]
        ihl = (ip[0] & 0x0F) * 4
        total = struct.unpack_from("!H", ip, 2)[0]
        tcp = ip[ihl:total]
        dport, seq = struct.unpack_from("!HI", tcp, 2)
        payload = tcp[(tcp[12] >> 4) * 4 :]
        skip = (next_seq.get(dport, seq) - seq) % (1 << 32)
        if skip >= len(payload):
            continue
        next_seq[dport] = (seq + len(payload)) % (1 << 32)
        flows.setdefault(dport, []).append((stamp, payload[skip:]))
    return flows


def stream_of(segs: list[tuple[int, bytes]]) -> tuple[bytes, list[tuple[int, int]]]:
    """stream_of joins a flow's segments: its bytes, and (end offset, stamp) per segment."""
    ends: list[tuple[int, int]] = []
    end = 0
    for stamp, payload in segs:
        end += len(payload)
        ends.append((end, stamp))
    return b"".join(p for _, p in segs), ends


def stamp_at(ends: list[tuple[int, int]], offset: int) -> int:
    """stamp_at: the stamp of the segment that brought the byte at ``offset``."""
    lo, hi = 0, len(ends) - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if ends[mid][0] > offset:
            hi = mid
        else:
            lo = mid + 1
    return ends[lo][1]


def http1_events(data: bytes, ends: list[tuple[int, int]]) -> list[list[int]]:
    """http1_events: each HTTP/1.1 response's event times (an event ends with a blank line;
    chunk framing and heads hold no LF LF)."""
    responses: list[list[int]] = []
    at = 0
    while True:
        head = data.find(b"HTTP/1.1 ", at)
        nxt = data.find(b"HTTP/1.1 ", head + 1) if head >= 0 else -1
        if head < 0:
            return responses
        stop = nxt if nxt >= 0 else len(data)
        times = []
        i = data.find(b"\n\n", head, stop)
        while i >= 0:
            times.append(stamp_at(ends, i + 1))
            i = data.find(b"\n\n", i + 2, stop)
        responses.append(times)
        at = stop


def h2_events(data: bytes, ends: list[tuple[int, int]]) -> list[list[int]]:
    """h2_events: each HTTP/2 stream's event times, from its DATA frames' payloads (padding
    left out; an event may span frames)."""
    streams: dict[int, tuple[bytes, list[int]]] = {}
    at = 0
    while at + 9 <= len(data):
        length = int.from_bytes(data[at : at + 3], "big")
        kind, flags = data[at + 3], data[at + 4]
        sid = int.from_bytes(data[at + 5 : at + 9], "big") & 0x7FFF_FFFF
        body = data[at + 9 : at + 9 + length]
        end = at + 9 + length
        at = end
        if kind != 0 or len(body) < length:
            continue
        if flags & 0x8:  # PADDED
            body = body[1 : len(body) - body[0]] if body else b""
        tail, times = streams.get(sid, (b"", []))
        joined = tail + body
        stamp = stamp_at(ends, end - 1)
        times.extend(stamp for _ in range(joined.count(b"\n\n")))
        cut = joined.rfind(b"\n\n")
        streams[sid] = (joined[cut + 2 :] if cut >= 0 else joined, times)
    return [times for _, times in streams.values()]


@dataclass
class WireGaps:
    """WireGaps are the gaps between a capture's events in a row within one response: their
    median and 99th percentile (ms), over how many events and gaps."""

    p50_ms: float
    p99_ms: float
    events: int
    gaps: int


def gaps_of(raw: bytes) -> WireGaps:
    """gaps_of measures a capture's file (see the module's doc)."""
    gaps: list[int] = []
    events = 0
    for segs in segments(raw).values():
        data, ends = stream_of(segs)
        read = http1_events if data.startswith(b"HTTP/") else h2_events
        for times in read(data, ends):
            events += len(times)
            gaps.extend(b - a for a, b in zip(times, times[1:], strict=False))
    if not gaps:
        return WireGaps(float("nan"), float("nan"), events, 0)
    gaps.sort()

    def pct(q: float) -> float:
        return gaps[min(len(gaps) - 1, int(q * len(gaps)))] / 1e6

    return WireGaps(pct(0.50), pct(0.99), events, len(gaps))


class Capture(sendlag.Recorder):
    """Capture keeps the segments leaving ``port`` while its block runs (see
    :func:`capture`); :meth:`gaps` measures them afterwards."""

    def __init__(self, port: int) -> None:
        super().__init__(__file__, port)

    def gaps(self) -> WireGaps:
        return gaps_of(self.raw)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: wiregap.py PORT FILE")
    capture(int(sys.argv[1]), Path(sys.argv[2]))
