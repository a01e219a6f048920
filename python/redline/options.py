"""Parsing and validation of run options: durations, stages, headers, bodies.

The CLI and the Python API share these, so ``redline.run(duration="15s")`` and
``redline run -d 15s`` accept exactly the same spellings and fail with the same one-line errors.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from redline.errors import ConfigError

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(us|µs|ms|s|m|h)?\s*$")
_UNIT_S = {"us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


def parse_duration(value: str | float | int, what: str = "duration") -> float:
    """parse_duration turns ``"15s"``, ``"250ms"``, ``"2m"``, ``"1.5"`` (seconds) or a number into
    seconds, refusing negative or malformed values with a ConfigError naming ``what``."""
    if isinstance(value, bool):
        raise ConfigError(f"{what}: expected a duration like 15s, got {value!r}")
    if isinstance(value, (int, float)):
        seconds = float(value)
    else:
        m = _DURATION.match(str(value))
        if not m:
            raise ConfigError(f"{what}: expected a duration like 15s, 250ms or 2m, got {value!r}")
        seconds = float(m.group(1)) * _UNIT_S[m.group(2)]
    if not seconds >= 0 or seconds == float("inf"):
        raise ConfigError(f"{what}: must be a finite duration >= 0, got {value!r}")
    return seconds


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
        if not t >= 0 or t == float("inf"):
            raise ConfigError(f"stages: target must be >= 0, got {target!r}")
        stages.append(Stage(parse_duration(dur, "stages"), t))
    if not stages or all(s.duration_s == 0 for s in stages):
        raise ConfigError("stages: need at least one stage with a duration > 0")
    return stages


def parse_header(header: str | tuple[str, str]) -> tuple[str, str]:
    """parse_header reads ``"Name: value"`` (or a (name, value) pair) into a checked pair."""
    if isinstance(header, str):
        name, sep, value = header.partition(":")
        if not sep:
            raise ConfigError(f"header: expected 'Name: value', got {header!r}")
    else:
        name, value = header
    name, value = name.strip(), value.strip()
    if not name or not re.fullmatch(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+", name):
        raise ConfigError(f"header: invalid header name {name!r}")
    if "\r" in value or "\n" in value:
        raise ConfigError(f"header {name}: value must not contain line breaks")
    return name, value


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


def check_url(url: str) -> str:
    """check_url accepts ``http(s)://host[:port]/path`` and refuses anything else in one line."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as e:
        raise ConfigError(f"url: malformed URL {url!r}: {e}") from None
    if parts.scheme not in ("http", "https"):
        shown = parts.scheme or "missing"
        raise ConfigError(f"url: unsupported scheme {shown!r} in {url!r} (use http:// or https://)")
    if not parts.hostname:
        raise ConfigError(f"url: no host in {url!r}")
    if port == 0:
        raise ConfigError(f"url: port 0 is not a valid destination in {url!r}")
    return url


def encode_body(body: bytes | None) -> str | None:
    """encode_body renders a body for the engine's JSON configuration."""
    return None if body is None else base64.b64encode(body).decode("ascii")
