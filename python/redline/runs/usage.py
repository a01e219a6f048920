"""usage: what this process's engine worker threads took of the CPU, read from Linux's
per-thread scheduler statistics (the engine's own figure is per run; this one is read at any
instant, so a search can judge each step, and an injector can report it)."""

from __future__ import annotations

import os


def worker_cpu_s() -> tuple[float, float, int] | None:
    """worker_cpu_s is how much CPU this process's engine worker threads (named
    ``redline-w*``) wanted so far, in seconds: the time they ran and the time they sat
    runnable waiting for a CPU (``/proc/.../schedstat``), and how many there are. A generator
    held to too little CPU waits where a busy one runs; both mean the load is redline's limit.
    The target server or Python in the same process are not counted. None off Linux."""
    ran, waited, threads = 0.0, 0.0, 0
    try:
        for tid in os.listdir("/proc/self/task"):
            base = f"/proc/self/task/{tid}"
            try:
                with open(f"{base}/comm") as f:
                    if not f.read().startswith("redline-w"):
                        continue
                with open(f"{base}/schedstat") as f:
                    ran_ns, waited_ns = (int(x) for x in f.read().split()[:2])
            except (OSError, ValueError):
                continue  # the thread ended meanwhile
            ran += ran_ns / 1e9
            waited += waited_ns / 1e9
            threads += 1
    except OSError:
        return None
    return ran, waited, threads


def machine_cpu_s() -> tuple[float, float] | None:
    """machine_cpu_s is the CPU time of the whole machine so far, in seconds summed over its
    CPUs: the time they were busy (any process, the kernel, a hypervisor's steal) and their
    total. Over a span, busy ÷ total is how saturated the machine was, and redline's
    workers' run time ÷ total their share of it. None where it cannot be read."""
    try:
        import psutil

        t = psutil.cpu_times()
    except (ImportError, OSError):
        return None
    # Linux counts a guest's time inside user and nice as well: counted once.
    total = float(sum(t)) - float(getattr(t, "guest", 0.0)) - float(getattr(t, "guest_nice", 0.0))
    idle = float(t.idle) + float(getattr(t, "iowait", 0.0))
    return total - idle, total
