"""scenario: :class:`Scenario`, what a scenario file declares: its flows (weighted), a per-VU
setup, data sets, a load profile and thresholds. Nothing runs when the file is imported; the
compiler (:mod:`redline.scenario.compiler`) traces the flows into a plan.

    from redline.scenario import Scenario, between, json_in, json_eq

    s = Scenario(host="http://127.0.0.1:8000", users=50, duration="1m")

    @s.flow(weight=5)
    def browse(u):
        u.get("/", status=200)
        u.think(between(1, 2))
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from redline.scenario.user import ScenarioError, User, caller

FlowFn = Callable[[User], None]

#: PROFILE_KEYS: the load-profile options a scenario declares and the CLI overrides.
PROFILE_KEYS = (
    "users",
    "rate",
    "stages",
    "open",
    "duration",
    "threads",
    "iterations",
    "max_connections",
    "timeout",
    "pacing",
    "ramp_up",
    "loops",
)


@dataclass
class FlowDef:
    """FlowDef is a declared flow: its function, weight and the line it was declared on."""

    name: str
    fn: FlowFn
    weight: int
    line: int | None


class Scenario:
    """Scenario is what a scenario file declares. ``host`` is the base URL (overridden by
    ``--host``); the profile keywords (``users``, ``rate``, ``stages``, ``duration``,
    ``iterations`` per VU, JMeter-style ``ramp_up`` and ``loops``, ``pacing``...) are the
    defaults the command line overrides; ``thresholds`` are checked at the end."""

    def __init__(
        self, host: str | None = None, *, thresholds: list[str] | None = None, **profile: Any
    ) -> None:
        unknown = sorted(set(profile) - set(PROFILE_KEYS))
        file, line = caller()
        if unknown:
            raise ScenarioError(
                f"Scenario(): unknown option {unknown[0]!r} (options: {', '.join(PROFILE_KEYS)})",
                file,
                line,
            )
        self.host = host
        self.thresholds = list(thresholds or [])
        self.flows: list[FlowDef] = []
        self.setup_fn: FlowFn | None = None
        self.datasets: dict[str, dict[str, Any]] = {}
        self.profile = {k: v for k, v in profile.items() if v is not None}
        self.file, self.line = file, line

    def flow(self, fn: FlowFn | None = None, *, weight: int = 1, name: str | None = None) -> Any:
        """flow: ``@s.flow`` or ``@s.flow(weight=5)`` declares a flow; each iteration of a VU
        runs one flow, picked at random in proportion to the weights (Locust's ``@task(5)``)."""
        file, line = caller()

        def declare(f: FlowFn) -> FlowFn:
            if not isinstance(weight, int) or weight < 1:
                raise ScenarioError(
                    f"flow weight must be an integer >= 1, got {weight!r}", file, line
                )
            self.flows.append(FlowDef(name or f.__name__, f, weight, line))
            return f

        return declare(fn) if fn is not None else declare

    def setup(self, fn: FlowFn) -> FlowFn:
        """setup: ``@s.setup`` declares steps each VU runs once before its first iteration
        (log in). What the function returns (say ``{"token": resp.json("$.token")}``) is
        ``u.setup`` in every flow, and the values it extracted keep their value per VU."""
        self.setup_fn = fn
        return fn

    def data(
        self,
        name: str,
        path: str,
        *,
        per: str = "iteration",
        order: str = "sequential",
        unique: bool = False,
        on_exhausted: str | None = None,
    ) -> None:
        """data: a CSV (with a header row) or JSON (a list of objects) data file. Each
        iteration takes the next row (``per="iteration"``), or each VU keeps one row
        (``per="vu"``), like JMeter's CSV data set. ``order="random"`` picks a random row
        each time; ``unique=True`` uses each row at most once across the whole run (every VU,
        thread and injector); ``on_exhausted`` says what happens when the rows run out:
        ``"recycle"`` starts over (the default, refused with ``unique``), ``"stop"`` ends the
        run cleanly (the default with ``unique``), ``"error"`` fails each iteration that finds
        no row. A CSV file travels in the plan as its text, parsed once by the engine."""
        file, line = caller()
        err = _data_options(per, order, unique, on_exhausted)
        if err:
            raise ScenarioError(f"data({name!r}): {err}", file, line)
        base = os.path.dirname(os.path.abspath(file)) if file else os.getcwd()
        full = path if os.path.isabs(path) else os.path.join(base, path)
        try:
            columns, table = _read(full)
        except FileNotFoundError:
            raise ScenarioError(f"data file {path!r} not found", file, line) from None
        except _NoRows:
            raise ScenarioError(f"data file {path!r} has no rows", file, line) from None
        except (ValueError, csv.Error, UnicodeDecodeError) as e:
            raise ScenarioError(f"data file {path!r}: {e}", file, line) from None
        ds: dict[str, Any] = {
            "name": name,
            "per": per,
            "columns": columns,
            "order": order,
            "unique": unique,
            "line": line,
        }
        if on_exhausted is not None:
            ds["on_exhausted"] = on_exhausted
        ds.update(table)
        self.datasets[name] = ds


def _data_options(per: str, order: str, unique: bool, on_exhausted: str | None) -> str | None:
    """_data_options: what is wrong with a data set's options, or None."""
    if per not in ("iteration", "vu"):
        return f"per is 'iteration' or 'vu', got {per!r}"
    if order not in ("sequential", "random"):
        return f"order is 'sequential' or 'random', got {order!r}"
    if not isinstance(unique, bool):
        return f"unique is True or False, got {unique!r}"
    if on_exhausted not in (None, "stop", "recycle", "error"):
        return f"on_exhausted is 'stop', 'recycle' or 'error', got {on_exhausted!r}"
    if unique and on_exhausted == "recycle":
        return "unique=True uses each row once: on_exhausted is 'stop' or 'error'"
    if not unique and order == "random" and on_exhausted not in (None, "recycle"):
        return (
            "order='random' without unique draws rows with replacement and never runs out: "
            "give unique=True to use each row once"
        )
    return None


def _read(path: str) -> tuple[list[str], dict[str, Any]]:
    """_read: a data file's columns and its table for the plan: a JSON file's rows, or a CSV
    file's whole text (only its header and first row are parsed here; the engine parses the
    rest once, so a million-row file costs its size, not a Python object per cell)."""
    with open(path, newline="", encoding="utf-8") as f:
        if path.endswith(".json"):
            data = json.load(f)
            if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
                raise ValueError("expected a JSON list of objects")
            if not data:
                raise _NoRows
            columns = list(data[0])
            return columns, {"rows": [[str(r.get(c, "")) for c in columns] for r in data]}
        text = f.read()
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    if header is None or not any(reader):  # any() stops at the first row with a field
        raise _NoRows
    return header, {"csv": text}


class _NoRows(Exception):
    """_NoRows: the data file holds no row."""
