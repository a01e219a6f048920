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

import os
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
    queues = [
        (rqueue, wqueue)
        for _, sport, rqueue, wqueue, _ in dump(socket.IPPROTO_TCP, 1 << TCP_LISTEN, port)
        if sport == port
    ]
    if not queues:
        return None
    return AcceptQueue(sum(q[0] for q in queues), sum(q[1] for q in queues))


def dump(protocol: int, states: int, port: int = 0) -> list[tuple[int, int, int, int, int]]:
    """dump is this machine's sockets of ``protocol`` (IPv4 and IPv6) in ``states`` (a bit
    per state), over netlink: (state, local port, rqueue, wqueue, inode) each. ``port``
    (the local port, 0 for any) is passed on, though a kernel filters by state only. An
    OSError where netlink refuses."""
    out: list[tuple[int, int, int, int, int]] = []
    with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, NETLINK_SOCK_DIAG) as s:
        s.settimeout(1.0)
        for family in (socket.AF_INET, socket.AF_INET6):
            sockid = _SOCKID.pack(port, 0, bytes(16), bytes(16), 0, b"\xff" * 8)
            body = _REQ.pack(family, protocol, 0, 0, states) + sockid
            head = _NLMSGHDR.pack(
                _NLMSGHDR.size + len(body), SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST_DUMP, 1, 0
            )
            s.send(head + body)
            out += _replies(s)
    return out


def socket_inodes(pid: int) -> list[int]:
    """socket_inodes are the inodes of the sockets process ``pid`` has open (its
    ``/proc/PID/fd`` links ``socket:[INODE]``); none for a process that ended."""
    out: list[int] = []
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return out
    for fd in fds:
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue  # closed meanwhile
        if link.startswith("socket:["):
            out.append(int(link[8:-1]))
    return out


def listener_pid(port: int) -> int | None:
    """listener_pid is the process that holds the socket listening on TCP ``port`` (found
    by its inode among every process's open files: once, where psutil reads every socket of
    every process; 0.3 s on a busy box), None when nothing listens there or netlink refuses."""
    try:
        inodes = {
            i
            for _, sport, _, _, i in dump(socket.IPPROTO_TCP, 1 << TCP_LISTEN, port)
            if sport == port and i
        }
    except OSError:
        return None
    if not inodes:
        return None
    for entry in os.listdir("/proc"):
        if entry.isdigit() and inodes.intersection(socket_inodes(int(entry))):
            return int(entry)
    return None


def _replies(s: socket.socket) -> list[tuple[int, int, int, int, int]]:
    """_replies reads a dump's messages until NLMSG_DONE: (state, local port, rqueue,
    wqueue, inode) of each socket."""
    out: list[tuple[int, int, int, int, int]] = []
    for _ in range(100_000):  # bounded: a dump ends with NLMSG_DONE
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
            if length - _NLMSGHDR.size >= _MSG.size:
                _, state, _, _, sockid, _, rqueue, wqueue, _, inode = _MSG.unpack_from(
                    data, pos + _NLMSGHDR.size
                )
                out.append((state, (sockid[0] << 8) | sockid[1], rqueue, wqueue, inode))
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
