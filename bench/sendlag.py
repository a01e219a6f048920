"""The send lag of any generator, as the wire saw it: how far its requests left behind an even
schedule at the rate it was asked for.

No tool times its own lateness the same way (wrk2 reports none; redline its own split), so the
benches measure it outside both: a packet socket on the loopback keeps the kernel's stamp of
every request leaving for the server's port (the capture's tap runs in the sender's write, so
a capture that reads late moves no stamp), and the stamps are set against the schedule the
tool was given. The run is cut into 100 ms windows (the first and last tenth left out: start-up
and end); in each, the k-th request was due k/R after the window's schedule start, placed so
that no request in the window left early. A request's lag is how long after its due time it
left: 0 for a perfectly even stream, up to the tick for one sent on a timer's ticks (wrk2's 1 ms
event loop), and the shortfall accrues within a window for a generator that cannot keep up.

    with Capture(port) as cap:
        ... run a generator at R req/s against 127.0.0.1:port ...
    cap.lag(R)   # SendLag(p50_ms, p99_ms, requests)

The capture runs as its own process (`python bench/sendlag.py PORT FILE`) on the server's core,
so that reading the stamps costs the generator's core nothing.
"""

from __future__ import annotations

import contextlib
import ctypes
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

#: WINDOW_NS: the span over which a schedule is aligned to the stream.
WINDOW_NS = 100_000_000

SO_ATTACH_FILTER = 26
SO_RCVBUFFORCE = 33
SO_TIMESTAMPNS = 35
ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4


def program(port: int, *, source: bool = False, snap: int = 64) -> list[tuple[int, int, int, int]]:
    """program is the classic BPF filter that keeps an outgoing IPv4 TCP segment to ``port``
    (from it, with ``source``: an answer, as bench/wiregap.py reads them) that carries data (a
    request's bytes, not an ACK), its first ``snap`` bytes: (code, jt, jf, k) a line."""
    drop, keep = 19, 18

    def j(i: int, code: int, k: int, yes: int, no: int) -> tuple[int, int, int, int]:
        return (code, yes - i - 1 if yes else 0, no - i - 1 if no else 0, k)

    return [
        (0x20, 0, 0, 0xFFFFF004),  # 0: A = skb->pkt_type
        j(1, 0x15, PACKET_OUTGOING, 2, drop),  # 1: outgoing?
        (0x28, 0, 0, 12),  # 2: A = ethertype (lo's header is ethernet's)
        j(3, 0x15, 0x0800, 4, drop),  # 3: IPv4?
        (0x30, 0, 0, 23),  # 4: A = IP protocol
        j(5, 0x15, 6, 6, drop),  # 5: TCP?
        (0xB1, 0, 0, 14),  # 6: X = IP header length
        (0x48, 0, 0, 14 if source else 16),  # 7: A = TCP source (destination) port
        j(8, 0x15, port, 9, drop),  # 8: the server's?
        (0x50, 0, 0, 26),  # 9: A = TCP data offset byte
        (0x74, 0, 0, 4),  # 10: A >>= 4
        (0x64, 0, 0, 2),  # 11: A <<= 2 (TCP header length)
        (0x02, 0, 0, 0),  # 12: M[0] = A
        (0x28, 0, 0, 16),  # 13: A = IP total length
        (0x1C, 0, 0, 0),  # 14: A -= X (the TCP segment's length)
        (0x07, 0, 0, 0),  # 15: X = A
        (0x60, 0, 0, 0),  # 16: A = M[0]
        j(17, 0x3D, 0, drop, keep),  # 17: header >= segment: no data
        (0x06, 0, 0, snap),  # 18: keep (its first snap bytes)
        (0x06, 0, 0, 0),  # 19: drop
    ]


def tap(prog: list[tuple[int, int, int, int]]) -> socket.socket:
    """tap is a packet socket on the loopback that keeps what the BPF ``prog`` keeps, each
    packet with the kernel's stamp of its passing (SO_TIMESTAMPNS); reads time out at 0.2 s."""
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    code = b"".join(struct.pack("HBBI", *insn) for insn in prog)
    buf = ctypes.create_string_buffer(code)
    fprog = struct.pack("HL", len(code) // 8, ctypes.addressof(buf))
    s.setsockopt(socket.SOL_SOCKET, SO_ATTACH_FILTER, fprog)
    s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 256 << 20)
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    s.bind(("lo", 0))
    s.settimeout(0.2)
    return s


def listen(s: socket.socket, size: int, keep: Callable[[int, bytes], object]) -> None:
    """listen is a capture process's loop: it hands ``keep`` each packet ``s`` reads (up to
    ``size`` bytes) with the kernel's stamp of its passing (ns, CLOCK_REALTIME) until SIGTERM;
    it prints "ready" once it reads, which :class:`Recorder` waits for."""
    stop = False

    def on_term(*_: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_term)
    space = socket.CMSG_SPACE(16)
    print("ready", flush=True)
    while True:
        try:
            data, anc, _, _ = s.recvmsg(size, space)
        except TimeoutError:
            if stop:
                break
            continue
        except InterruptedError:
            continue
        for level, kind, cmsg in anc:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                sec, nsec = struct.unpack("qq", cmsg[:16])
                keep(sec * 1_000_000_000 + nsec, data)


def capture(port: int, out: Path) -> None:
    """capture records the kernel stamp (ns, CLOCK_REALTIME) of every request leaving for
    ``port`` until SIGTERM, then writes them to ``out`` (native int64s); prints "ready" once
    the filter is in place."""
    stamps = array("q")
    listen(tap(program(port)), 64, lambda stamp, _: stamps.append(stamp))
    out.write_bytes(stamps.tobytes())


@dataclass
class SendLag:
    """SendLag is a run's lag behind an even schedule: its median and 99th percentile (ms),
    over how many requests."""

    p50_ms: float
    p99_ms: float
    requests: int

    def __str__(self) -> str:
        return f"{self.p50_ms:.3f} / {self.p99_ms:.3f}"


def lag(stamps: list[int], rate: float) -> SendLag:
    """lag measures ``stamps`` (ns, any order) against a stream of ``rate`` a second, aligned
    per window (see the module's doc)."""
    t = sorted(stamps)
    if len(t) < 10 or rate <= 0:
        return SendLag(float("nan"), float("nan"), len(t))
    period = 1e9 / rate
    first, last = t[0], t[-1]
    skip = (last - first) // 10
    lags: list[float] = []
    window: list[int] = []
    edge = first + skip + WINDOW_NS

    def close() -> None:
        if not window:
            return
        offsets = [x - k * period for k, x in enumerate(window)]
        start = min(offsets)
        lags.extend(o - start for o in offsets)
        window.clear()

    for x in t:
        if x < first + skip or x > last - skip:
            continue
        while x >= edge:
            close()
            edge += WINDOW_NS
        window.append(x)
    close()
    if not lags:
        return SendLag(float("nan"), float("nan"), len(t))
    lags.sort()

    def pct(q: float) -> float:
        return lags[min(len(lags) - 1, int(q * len(lags)))] / 1e6

    return SendLag(pct(0.50), pct(0.99), len(t))


#: R: a Recorder of any kind (its block gets what it entered).
R = TypeVar("R", bound="Recorder")


class Recorder:
    """Recorder runs a capture script (``python SCRIPT PORT FILE``, pinned to ``core`` when
    one is given) as its own process while its block runs: it starts when the script says
    "ready", and at the block's end it is stopped (SIGTERM) and what it wrote is kept in
    ``raw``. The capture processes of this module and bench/wiregap.py are its scripts."""

    def __init__(self, script: str, port: int, core: str | None = None) -> None:
        self.script, self.port, self.core = script, port, core
        self.raw = b""

    def __enter__(self: R) -> R:
        self._dir = tempfile.TemporaryDirectory()
        self._out = Path(self._dir.name) / "capture"
        pin = ["taskset", "-c", self.core] if self.core is not None else []
        self._proc = subprocess.Popen(
            [*pin, sys.executable, self.script, str(self.port), str(self._out)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._proc.stdout is not None
        if self._proc.stdout.readline().strip() != "ready":
            self._proc.kill()
            self._proc.wait()
            name = Path(self.script).stem
            raise RuntimeError(f"{name}: the capture did not start (needs root: AF_PACKET)")
        return self

    def __exit__(self, *exc: object) -> None:
        time.sleep(0.05)  # the last packets queued before the stop is seen
        self._proc.send_signal(signal.SIGTERM)
        self._proc.wait(timeout=10)
        if self._out.exists():
            self.raw = self._out.read_bytes()
        self._dir.cleanup()


class Capture(Recorder):
    """Capture stamps the requests leaving for ``port`` while its block runs (see
    :func:`capture`), from the server's ``core``; :meth:`lag` measures them afterwards."""

    def __init__(self, port: int, core: str = "0") -> None:
        super().__init__(__file__, port, core)

    @property
    def stamps(self) -> list[int]:
        """stamps: the requests' kernel stamps (ns), as the capture wrote them."""
        a = array("q")
        a.frombytes(self.raw)
        return list(a)

    def lag(self, rate: float) -> SendLag:
        return lag(self.stamps, rate)


@contextlib.contextmanager
def maybe(port: int | None) -> Iterator[Capture | None]:
    """maybe captures when a port is given (an open-model row), else yields None."""
    if port is None:
        yield None
    else:
        with Capture(port) as cap:
            yield cap


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: sendlag.py PORT FILE")
    capture(int(sys.argv[1]), Path(sys.argv[2]))
