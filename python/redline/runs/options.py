"""Parsing of run options: durations, stages, headers, bodies, and which options a run ignores.

The CLI and the Python API share these, so ``redline.run(duration="15s")`` and
``redline run -d 15s`` accept exactly the same spellings. Only the *spelling* is checked here
(is ``"15x"`` a duration, is ``"10s:5"`` a stage): whether a value is allowed (a rate above 0,
a method that is a token, a URL with a host) is the engine's rule alone
(``RunConfig::check``), and its one-line message reaches the user unchanged.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from redline.errors import ConfigError
from redline.runs.proxy import proxy_note

_DURATION = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*(us|µs|ms|s|m|h)?\s*$")
#: _COMPOUND: Go's and k6's spelling of a duration in parts, largest unit first: 2m30s, 1h30m,
#: 1s500ms (each part a number and its unit).
_COMPOUND = re.compile(r"^\s*(-?)((?:\d+(?:\.\d+)?(?:us|µs|ms|s|m|h))+)\s*$")
_PART = re.compile(r"(\d+(?:\.\d+)?)(us|µs|ms|s|m|h)")
#: UNIT_S: seconds per duration unit, the one table (durations, thresholds' and SLOs' bounds).
UNIT_S = {"us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


def parse_duration(value: str | float | int, what: str = "duration") -> float:
    """parse_duration turns ``"15s"``, ``"250ms"``, ``"2m"``, ``"2m30s"``, ``"1.5"`` (seconds) or
    a number into seconds, refusing malformed or infinite values (JSON cannot carry them) with
    a ConfigError naming ``what``. The sign is the engine's to judge."""
    if isinstance(value, bool):
        raise ConfigError(f"{what}: expected a duration like 15s, got {value!r}")
    if isinstance(value, (int, float)):
        seconds = float(value)
    else:
        m = _DURATION.match(str(value))
        if m:
            seconds = float(m.group(1)) * UNIT_S[m.group(2)]
        else:
            seconds = _compound(str(value), what)
    if not _finite(seconds):
        raise ConfigError(f"{what}: expected a finite duration, got {value!r}")
    return seconds


def _compound(value: str, what: str) -> float:
    """_compound reads a duration in parts (``2m30s``), each unit once and largest first."""
    m = _COMPOUND.match(value)
    parts = _PART.findall(m.group(2)) if m else []
    order = [_UNIT_ORDER.index(unit.replace("µ", "u")) for _, unit in parts]
    if not m or order != sorted(set(order)):
        raise ConfigError(
            f"{what}: expected a duration like 15s, 250ms, 2m or 2m30s, got {value!r}"
        )
    seconds = sum(float(n) * UNIT_S[unit] for n, unit in parts)
    return -seconds if m.group(1) else seconds


#: _UNIT_ORDER: the units largest first (µs is spelled us here).
_UNIT_ORDER = ["h", "m", "s", "ms", "us"]


def _finite(x: float) -> bool:
    return x == x and abs(x) != float("inf")


@dataclass(frozen=True)
class Stage:
    """Stage: ramp linearly to ``target`` (VUs in the closed model, req/s in the open one) over
    ``duration_s`` seconds, like k6's ramping executors."""

    duration_s: float
    target: float


def parse_stages(spec: str | Iterable[Any]) -> list[Stage]:
    """parse_stages reads ``"10s:100,30s:100,10s:0"`` (or a list of (duration, target) pairs)."""
    items = spec.split(",") if isinstance(spec, str) else list(spec)
    stages = []
    for item in items:
        if isinstance(item, str):
            dur, sep, target = item.strip().partition(":")
            if not sep:
                raise ConfigError(f"stages: expected DURATION:TARGET, got {item.strip()!r}")
        elif isinstance(item, Stage):
            stages.append(item)
            continue
        else:
            try:
                dur, target = item
            except (TypeError, ValueError):
                raise ConfigError(
                    f"stages: expected (duration, target) pairs, got {item!r}"
                ) from None
        try:
            t = float(target)
        except (TypeError, ValueError):
            raise ConfigError(f"stages: target must be a number, got {target!r}") from None
        if not _finite(t):
            raise ConfigError(f"stages: target must be a finite number, got {target!r}")
        stages.append(Stage(parse_duration(dur, "stages"), t))
    return stages


def parse_header(header: str | tuple[str, str]) -> tuple[str, str]:
    """parse_header splits ``"Name: value"`` (or takes a (name, value) pair) and strips both;
    the engine decides which names and values are allowed."""
    if isinstance(header, str):
        name, sep, value = header.partition(":")
        if not sep:
            raise ConfigError(f"header: expected 'Name: value', got {header!r}")
    else:
        name, value = header
    return name.strip(), value.strip()


def read_body(body: str | bytes | None) -> bytes | None:
    """read_body returns the request body: bytes as given, ``"@file"`` read from a file, or text."""
    if body is None or isinstance(body, bytes):
        return body
    if body.startswith("@"):
        path = Path(body[1:])
        try:
            return path.read_bytes()
        except OSError as e:
            raise ConfigError(f"body: cannot read {str(path)!r}: {e.strerror or e}") from None
    return body.encode()


def encode_body(body: bytes | None) -> str | None:
    """encode_body renders a body for the engine's JSON configuration."""
    return None if body is None else base64.b64encode(body).decode("ascii")


class IgnoredOption(UserWarning):
    """IgnoredOption: an option was given that the chosen load model or URL does not use."""


def ignored_options(
    url: str,
    *,
    connections: object = None,
    rate: object = None,
    stages: object = None,
    open_model: bool = False,
    max_connections: object = None,
    cacert: object = None,
    insecure: bool = False,
    send_ahead: object = None,
    proxy: str | None = None,
    scenario: bool = False,
    spell: Callable[[str], str] = str,
) -> list[str]:
    """ignored_options names each given option the run will not use, one line each. ``spell``
    renders an option's name (the CLI passes its flags: ``connections`` -> ``-c/--connections``).
    These are warnings, not errors: the run is still well defined."""
    open_run = rate is not None or open_model
    notes = []
    if connections is not None and open_run:
        notes.append(
            f"{spell('connections')} is ignored by the open model: its pool grows as the rate "
            f"needs, up to {spell('max_connections')}"
        )
    elif connections is not None and stages is not None:
        notes.append(f"{spell('connections')} is ignored: the stages set the number of VUs")
    if max_connections is not None and not open_run:
        notes.append(
            f"{spell('max_connections')} is ignored by the closed model "
            f"(it caps the open model's pool: give {spell('rate')})"
        )
    if send_ahead is not None and not open_run:
        notes.append(
            f"{spell('send_ahead')} is ignored by the closed model "
            f"(it paces the open model's sends: give {spell('rate')})"
        )
    # A scenario's absolute URLs may reach https:// and grpcs:// origins, trusted by these.
    if url.lower().startswith("http://") and not scenario:
        for name, value in (("cacert", cacert), ("insecure", insecure or None)):
            if value is not None:
                notes.append(f"{spell(name)} is ignored for an http:// URL")
    unused = proxy_note(url, proxy, scenario=scenario)
    if unused is not None:
        notes.append(unused)
    return notes
