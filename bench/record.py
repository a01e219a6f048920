"""record: where a benchmark's figures go, with the context that makes them readable later.

Every bench script appends its tables to ``bench/results/<name>.md`` through :func:`append`,
with the date, the load average at its start and end, the commit (and whether the tree had
uncommitted changes) and the exact command. ``docs/benchmarks.md`` cites those entries instead of
figures typed by hand, so each figure there can be traced to the run that printed it.

    start = record.Context.now()
    ... run the benchmark ...
    record.append("peers", "redline vs its peers", start, table_text)
"""

from __future__ import annotations

import os
import platform
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"


@dataclass(frozen=True)
class Context:
    """Context: when and on what a benchmark started."""

    started: str
    load: str
    commit: str
    command: str

    @classmethod
    def now(cls, argv: list[str] | None = None) -> Context:
        """now captures the start: UTC time, load average, commit and the command line."""
        args = sys.argv if argv is None else argv
        script = os.path.relpath(args[0], ROOT) if args else "?"
        command = " ".join([".venv/bin/python", script, *(shlex.quote(a) for a in args[1:])])
        return cls(utc_now(), load_average(), commit(), command)


def utc_now() -> str:
    """utc_now is the time as the results files write it."""
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())


def load_average() -> str:
    """load_average is the 1/5/15-minute load (the box is shared: context for every figure)."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def commit() -> str:
    """commit is the short hash of HEAD, marked ``+dirty`` when the tree had uncommitted
    changes (then the figures describe HEAD plus whatever was being edited)."""

    def git(*args: str) -> str:
        try:
            out = subprocess.run(
                ["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=10
            )
        except (OSError, subprocess.TimeoutExpired):
            return ""
        return out.stdout.strip() if out.returncode == 0 else ""

    head = git("rev-parse", "--short", "HEAD") or "unknown"
    dirty = git("status", "--porcelain", "--untracked-files=no")
    return f"{head}+dirty" if dirty else head


def entry(title: str, ctx: Context, body: str) -> str:
    """entry renders one run: a heading, its context, then the body (tables, notes)."""
    return (
        f"## {ctx.started}: {title}\n\n"
        f"- command: `{ctx.command}`\n"
        f"- commit: {ctx.commit}\n"
        f"- load average: {ctx.load} at the start, {load_average()} at the end "
        f"({utc_now()})\n"
        f"- machine: {os.cpu_count()} cores, {platform.system()} {platform.release()}\n\n"
        f"{body.rstrip()}\n\n"
    )


def publish(name: str, title: str, ctx: Context, body: str, keep: bool = True) -> None:
    """publish prints a bench's table and, with ``keep`` (no ``--no-record``), appends it to
    ``bench/results/<name>.md`` and says where."""
    print()
    print(body)
    if keep:
        print(f"\nrecorded in {append(name, title, ctx, body)}")


def append(name: str, title: str, ctx: Context, body: str, path: Path | None = None) -> Path:
    """append adds one run to ``bench/results/<name>.md`` (or ``path``) and returns the file."""
    path = path or RESULTS / f"{name}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    new = not path.exists() or path.stat().st_size == 0
    with path.open("a", encoding="utf-8") as f:
        if new:
            f.write(
                f"# {name}: benchmark results\n\nAppended by the bench scripts "
                "(bench/record.py), newest last. Cite an entry by its heading.\n\n"
            )
        f.write(entry(title, ctx, body))
    return path
