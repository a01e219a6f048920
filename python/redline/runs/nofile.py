"""nofile: the open-file limit the command line runs under. Every connection is a file
descriptor, and a shell's soft limit (``ulimit -n``, often 1024) is far below its hard limit;
a load tester that keeps to the soft one leaves the rest of ``-c`` unopened. As Go's runtime
does at start, ``redline`` raises the soft limit to the hard one; beyond the hard limit the
engine counts the connects refused and its verdict names the limit and how to raise it."""

from __future__ import annotations

import resource

#: CEILING: how far an unlimited hard limit raises the soft one (select()-free code is
#: indifferent, and 2**20 is Linux's default nr_open).
CEILING = 1 << 20


def raise_open_file_limit() -> None:
    """raise_open_file_limit lifts this process's soft RLIMIT_NOFILE to its hard limit (or
    :data:`CEILING` when that is unlimited); it never lowers it, and says nothing when the
    system refuses (the engine's verdict will)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = CEILING if hard == resource.RLIM_INFINITY else hard
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError):
            pass
