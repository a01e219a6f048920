"""sockets: a listening TCP socket's accept queue, read the way ``ss -lnt`` reads it.

A server whose workers cannot keep up leaves connections waiting in its listening socket's
accept queue, whatever its CPU says: the queue's length and its limit are the evidence. The
kernel gives both to ``ss`` over netlink (``NETLINK_SOCK_DIAG``, ``inet_diag``: for a
listener ``rqueue`` is the queue's length, ``wqueue`` its limit); ``/proc/net/tcp`` has the
length only. :func:`accept_queue` asks netlink (a few dozen bytes each way, no dependency:
pyroute2 would be the library, but one fixed request does not justify it) and falls back to
``/proc/net/tcp`` for the length.
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass

#: NETLINK_SOCK_DIAG and SOCK_DIAG_BY_FAMILY: linux/sock_diag.h; NLM_F_REQUEST|NLM_F_DUMP.
NETLINK_SOCK_DIAG = 4
SOCK_DIAG_BY_FAMILY = 20
NLM_F_REQUEST_DUMP = 0x1 | 0x300
NLMSG_DONE = 3
NLMSG_ERROR = 2
TCP_LISTEN = 10

_NLMSGHDR = struct.Struct("=IHHII")
# inet_diag_req_v2: family, protocol, ext, pad, states; then inet_diag_sockid.
_REQ = struct.Struct("=BBBBI")
_SOCKID = struct.Struct("!HH16s16sI8s")
# inet_diag_msg: family, state, timer, retrans, sockid (48 bytes), expires, rqueue, wqueue,
# uid, inode.
_MSG = struct.Struct("=BBBB48sIIIII")


@dataclass(frozen=True)
class AcceptQueue:
    """AcceptQueue is a listening socket's queue: connections waiting to be accepted
    (``length``) and how many it may hold (``limit``, None where only /proc was read)."""

    length: int
    limit: int | None


def accept_queue(port: int) -> AcceptQueue | None:
    """accept_queue is the queue of whatever listens on TCP ``port`` (IPv4 and IPv6 summed:
    a server may listen on both), or None when nothing listens there."""
    try:
        found = _netlink(port)
    except OSError:
        found = None
    if found is not None:
        return found
    return _proc(port)


def _netlink(port: int) -> AcceptQueue | None:
    queues = []
    with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, NETLINK_SOCK_DIAG) as s:
        s.settimeout(1.0)
        for family in (socket.AF_INET, socket.AF_INET6):
            sockid = _SOCKID.pack(port, 0, bytes(16), bytes(16), 0, b"\xff" * 8)
            body = _REQ.pack(family, socket.IPPROTO_TCP, 0, 0, 1 << TCP_LISTEN) + sockid
            head = _NLMSGHDR.pack(
                _NLMSGHDR.size + len(body), SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST_DUMP, 1, 0
            )
            s.send(head + body)
            queues += _replies(s, port)
    if not queues:
        return None
    return AcceptQueue(sum(q[0] for q in queues), sum(q[1] for q in queues))


def _replies(s: socket.socket, port: int) -> list[tuple[int, int]]:
    """_replies reads a dump's messages until NLMSG_DONE: (rqueue, wqueue) of the listeners
    on ``port`` (the dump filters by state only; the port is matched here)."""
    out: list[tuple[int, int]] = []
    for _ in range(10_000):  # bounded: a dump ends with NLMSG_DONE
        data = s.recv(65536)
        pos = 0
        while pos + _NLMSGHDR.size <= len(data):
            length, kind, _, _, _ = _NLMSGHDR.unpack_from(data, pos)
            if length < _NLMSGHDR.size:
                return out
            if kind == NLMSG_DONE:
                return out
            if kind == NLMSG_ERROR:
                raise OSError("sock_diag refused the request")
            msg = data[pos + _NLMSGHDR.size : pos + length]
            if len(msg) >= _MSG.size:
                _, state, _, _, sockid, _, rqueue, wqueue, _, _ = _MSG.unpack_from(msg)
                sport = struct.unpack("!H", sockid[:2])[0]
                if state == TCP_LISTEN and sport == port:
                    out.append((rqueue, wqueue))
            pos += (length + 3) & ~3
    return out


def _proc(port: int) -> AcceptQueue | None:
    """_proc reads the length from /proc/net/tcp{,6}: for a listener its rx_queue is the
    accept queue's length (the limit is not there)."""
    total, seen = 0, False
    for path in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(path) as f:
                lines = f.readlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 5 or int(fields[3], 16) != TCP_LISTEN:
                continue
            if int(fields[1].rsplit(":", 1)[1], 16) != port:
                continue
            seen = True
            total += int(fields[4].split(":")[1], 16)
    return AcceptQueue(total, None) if seen else None
