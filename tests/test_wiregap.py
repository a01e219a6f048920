"""bench/wiregap.py reads streamed answers back from loopback segments of known truth: the
events' gaps as the segments' stamps say, per response, over HTTP/1.1 and HTTP/2, however the
bytes were cut into segments."""

from __future__ import annotations

import importlib.util
import struct
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
MS = 1_000_000


def wiregap() -> ModuleType:
    path = list(sys.path)
    sys.path.insert(0, str(ROOT / "bench"))  # it imports bench/sendlag.py
    try:
        spec = importlib.util.spec_from_file_location("wiregap", ROOT / "bench" / "wiregap.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["wiregap"] = module  # its dataclasses look their module up there
        spec.loader.exec_module(module)
    finally:
        sys.path[:] = path
    return module


def segment(w: ModuleType, stamp: int, client: int, seq: int, payload: bytes) -> bytes:
    """segment is one kept record: a loopback frame (ethernet, IPv4, TCP) from port 8080."""
    tcp = struct.pack("!HHIIBBHHH", 8080, client, seq, 0, 5 << 4, 0x18, 65535, 0, 0) + payload
    ip = struct.pack(
        "!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 0, 0, 64, 6, 0, b"\x7f\0\0\1", b"\x7f\0\0\1"
    )
    pkt = b"\0" * 12 + b"\x08\x00" + ip + tcp
    return w.RECORD.pack(stamp, len(pkt)) + pkt


def h2_frame(kind: int, flags: int, stream: int, payload: bytes) -> bytes:
    return (
        len(payload).to_bytes(3, "big") + bytes([kind, flags]) + stream.to_bytes(4, "big") + payload
    )


def event(k: int) -> bytes:
    return f'id: {k}\ndata: {{"n":{k}}}\n\n'.encode()


def chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"

#: The truth: two responses on one connection, events at 200, 220, 241, 260 ms after each
#: head (the third 1 ms late), the second response 2 s after the first.
TIMES = [200, 220, 241, 260]


def http1_pieces() -> list[tuple[int, bytes]]:
    out = []
    for start in (0, 2000):
        out.append((start, HEAD))
        out += [(start + t, chunk(event(k))) for k, t in enumerate(TIMES)]
        out.append((start + TIMES[-1], b"0\r\n\r\n"))
    return out


def h2_pieces() -> list[tuple[int, bytes]]:
    # Two streams (1 and 3) on one connection, interleaved, a padded frame and an empty end.
    out = [(0, h2_frame(4, 0, 0, b""))]
    for sid, start in ((1, 0), (3, 5)):
        out.append((start, h2_frame(1, 4, sid, b"\x88")))
    for k, t in enumerate(TIMES):
        out.append((t, h2_frame(0, 0, 1, event(k))))
        out.append((5 + t, h2_frame(0, 8, 3, b"\x02" + event(k) + b"\0\0")))
    out += [(265, h2_frame(0, 1, 1, b"")), (265, h2_frame(0, 1, 3, b""))]
    return out


@pytest.mark.parametrize("protocol", ["http/1.1", "h2"])
@pytest.mark.parametrize(
    "cut", ["a segment a write", "each write split in two", "each segment sent twice"]
)
def test_gaps_are_the_stamps_of_the_segments_that_brought_each_events_end(protocol, cut):
    w = wiregap()
    pieces = http1_pieces() if protocol == "http/1.1" else h2_pieces()
    if cut == "each write split in two":
        pieces = [p for t, b in pieces for p in ((t, b[: len(b) // 2]), (t, b[len(b) // 2 :]))]
    raw, seq = b"", 1000
    for t, data in pieces:
        raw += segment(w, t * MS, 40000, seq, data)
        if cut == "each segment sent twice":  # a retransmission: kept once
            raw += segment(w, t * MS, 40000, seq, data)
        seq += len(data)
    got = w.gaps_of(raw)
    responses = 2
    assert got.events == responses * len(TIMES)
    assert got.gaps == responses * (len(TIMES) - 1)
    assert got.p50_ms == 20.0  # 20, 21, 19 ms a response: the median is 20
    assert got.p99_ms == 21.0


#: A capture script of known truth: "ready", then at SIGTERM its PORT written to its FILE.
FAKE_CAPTURE = """\
import signal, sys, time
stopped = []
signal.signal(signal.SIGTERM, lambda *_: stopped.append(1))
print("ready", flush=True)
while not stopped:
    time.sleep(0.01)
open(sys.argv[2], "w").write("wrote " + sys.argv[1])
"""


def test_a_recorder_runs_its_capture_for_its_block_and_keeps_what_it_wrote(tmp_path):
    """The capture process that bench/sendlag.py and bench/wiregap.py share: started before
    the block, stopped after it, its file read back; a script that never says "ready" is one
    clear error."""
    w = wiregap()
    script = tmp_path / "fake_capture.py"
    script.write_text(FAKE_CAPTURE)
    with w.sendlag.Recorder(str(script), 4321) as rec:
        assert rec._proc.poll() is None  # running while the block runs
    assert rec._proc.returncode == 0
    assert rec.raw == b"wrote 4321"
    mute = tmp_path / "mute_capture.py"
    mute.write_text("import sys\n")
    with pytest.raises(RuntimeError, match="^mute_capture: the capture did not start"):
        with w.sendlag.Recorder(str(mute), 4321):
            pass
