"""plan_file: an experiment written down, ``--vary @FILE.toml``.

The flags ``--monitor-cmd``, ``--vary`` and ``--repeat`` describe an experiment on the
command line; a small TOML file holds the same, to keep beside the service and in review::

    # workers.toml: one factorial worker process against two
    monitor_cmd = "taskqueue serve --port {port} --data-dir {dir} --workers {workers}"
    repeat = 2                      # optional

    [vary]
    workers = [1, 2]                # names in the order given multiply, the first slowest

``--vary @workers.toml`` reads it. A setting given both in the file and as a flag is an
error (which would win is a guess), and so is a key the file should not have (a typo would
otherwise be a silently ignored setting).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomllib

from redline.errors import ConfigError
from redline.experiment.configurations import parse_vary

#: KEYS: what an experiment file may hold.
KEYS = ("monitor_cmd", "repeat", "vary")


@dataclass(frozen=True)
class PlanFile:
    """PlanFile is what an experiment file says: ``vary`` as ``NAME=V1,V2`` specs (the
    flag's form, so both go through one check), and the command and the repeat count, when
    the file gives them."""

    path: str
    vary: tuple[str, ...]
    monitor_cmd: str | None = None
    repeat: int | None = None


def read_plan(path: str) -> PlanFile:
    """read_plan reads an experiment file; :class:`ConfigError` says in one line what is
    wrong with it."""
    where = f"--vary @{path}"
    try:
        doc = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as e:
        raise ConfigError(f"{where}: {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{where}: not a text file") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{where}: not TOML: {e}") from None
    unknown = sorted(set(doc) - set(KEYS))
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(KEYS)})")
    table = doc.get("vary")
    if not isinstance(table, dict) or not table:
        raise ConfigError(f"{where}: needs a [vary] table, e.g. workers = [1, 2]")
    specs = tuple(_spec(where, name, values) for name, values in table.items())
    try:
        parse_vary(specs)
    except ConfigError as e:
        raise ConfigError(f"{where}: {e}") from None
    command = doc.get("monitor_cmd")
    if command is not None and not (isinstance(command, str) and command.strip()):
        raise ConfigError(f"{where}: monitor_cmd must be the service's command, a string")
    repeat = doc.get("repeat")
    if repeat is not None and (isinstance(repeat, bool) or not isinstance(repeat, int)):
        raise ConfigError(f"{where}: repeat must be a whole number, got {repeat!r}")
    return PlanFile(path, specs, command, repeat)


def _spec(where: str, name: str, values: Any) -> str:
    """_spec writes one name's values as the flag's ``NAME=V1,V2`` (checked there)."""
    if not isinstance(values, list):
        values = [values]
    for v in values:
        if isinstance(v, (dict, list)) or not isinstance(v, (str, int, float, bool)):
            raise ConfigError(f"{where}: {name}: a value must be a string or a number, got {v!r}")
        if isinstance(v, str) and "," in v:
            raise ConfigError(f"{where}: {name}: a value may not hold a comma, got {v!r}")
    text = ",".join(str(v).lower() if isinstance(v, bool) else str(v) for v in values)
    return f"{name}={text}"


def merge_plan(args: Any) -> None:
    """merge_plan expands each ``--vary @FILE`` in ``args`` into the file's specs, and takes
    the file's ``monitor_cmd`` and ``repeat`` where the flags do not give them (both: an
    error)."""
    specs: list[str] = []
    for given in args.vary:
        if not given.startswith("@"):
            specs.append(given)
            continue
        plan = read_plan(given[1:])
        specs.extend(plan.vary)
        for key, flag in (("monitor_cmd", "--monitor-cmd"), ("repeat", "--repeat")):
            value = getattr(plan, key)
            if value is None:
                continue
            if getattr(args, key) is not None:
                raise ConfigError(f"{flag} is given twice: as a flag and in {plan.path} (keep one)")
            setattr(args, key, value)
    args.vary = specs
