"""configurations: what ``--vary`` asks for, and each configuration's command and URL.

``--vary workers=1,2,4`` names a placeholder and its values; several ``--vary`` multiply (two
names of two values each are four configurations). The service's command and the URL carry
the placeholders in braces: ``{workers}`` takes the configuration's value, ``{port}`` a free
port chosen when the configuration starts, ``{dir}`` a fresh, empty directory for its data.
The command is split into its words *before* the values go in, so a value is always one
word, whatever it contains.
"""

from __future__ import annotations

import itertools
import re
import shlex
import socket
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from redline.errors import ConfigError

#: PORT and DIR are the placeholders the experiment fills itself.
PORT, DIR = "port", "dir"

#: MAX_CONFIGURATIONS bounds an experiment: each configuration is a whole search.
MAX_CONFIGURATIONS = 64

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True)
class Configuration:
    """Configuration is one setting of every varied name: ``values`` maps each name to its
    value, in the order the names were given."""

    values: tuple[tuple[str, str], ...]

    @property
    def vary(self) -> dict[str, str]:
        """vary: the values as a dict (the JSON's ``vary``)."""
        return dict(self.values)

    @property
    def label(self) -> str:
        """label: how tables name the configuration, e.g. ``workers=2 threads=4``."""
        return " ".join(f"{k}={v}" for k, v in self.values)


def parse_vary(specs: Iterable[str]) -> dict[str, list[str]]:
    """parse_vary reads ``NAME=V1,V2,...`` specs into names and their values, in order;
    :class:`ConfigError` says what is wrong with a spec in one line."""
    out: dict[str, list[str]] = {}
    for spec in specs:
        name, sep, rest = spec.partition("=")
        name = name.strip()
        if not sep:
            raise ConfigError(f"--vary {spec!r}: expected NAME=VALUE,VALUE,... e.g. workers=1,2,4")
        if not _NAME.match(name):
            raise ConfigError(f"--vary {spec!r}: the name must be a word (letters, digits, _)")
        if name in (PORT, DIR):
            raise ConfigError(f"--vary {spec!r}: {{{name}}} is filled by redline itself")
        if name in out:
            raise ConfigError(f"--vary {spec!r}: {name} is varied twice")
        values = [v.strip() for v in rest.split(",")]
        if not rest.strip() or any(not v for v in values):
            raise ConfigError(f"--vary {spec!r}: an empty value (expected e.g. {name}=1,2,4)")
        if len(set(values)) != len(values):
            raise ConfigError(f"--vary {spec!r}: a value is listed twice")
        out[name] = values
    return out


def configurations(vary: Mapping[str, Sequence[str]]) -> list[Configuration]:
    """configurations: every combination of the varied values, the first name slowest."""
    if not vary:
        raise ConfigError("--vary: give at least one NAME=VALUE,VALUE,...")
    names = list(vary)
    combos = list(itertools.product(*(vary[n] for n in names)))
    if len(combos) > MAX_CONFIGURATIONS:
        raise ConfigError(
            f"--vary: {len(combos)} configurations, at most {MAX_CONFIGURATIONS} (each is a search)"
        )
    return [Configuration(tuple(zip(names, (str(v) for v in c), strict=True))) for c in combos]


def placeholders(text: str) -> set[str]:
    """placeholders: the ``{name}`` placeholders in ``text``."""
    return set(_PLACEHOLDER.findall(text))


def check_templates(command: str, url: str, names: Iterable[str]) -> list[str]:
    """check_templates checks the command and the URL against the varied names and returns
    the command's words: each varied name must be a placeholder of the command (else every
    configuration would run the same service), the command may hold no unknown placeholder
    (a typo), and ``{port}`` is in both or in neither (the load must reach the service)."""
    try:
        argv = shlex.split(command)
    except ValueError as e:
        raise ConfigError(f"--monitor-cmd: {e} in {command!r}") from None
    if not argv:
        raise ConfigError("--monitor-cmd: the command is empty")
    known = {*names, PORT, DIR}
    in_command = placeholders(command)
    missing = [name for name in names if name not in in_command]
    for where, found in (("--monitor-cmd", in_command), ("the URL", placeholders(url))):
        unknown = sorted(found - known)
        if unknown:
            raise ConfigError(
                f"{where}: unknown placeholder {{{unknown[0]}}} (known: "
                + ", ".join(f"{{{k}}}" for k in sorted(known))
                + ")"
            )
    if missing:
        raise ConfigError(
            f"--vary {missing[0]}: the command has no {{{missing[0]}}} placeholder: {command!r}"
        )
    if (PORT in in_command) != (PORT in placeholders(url)):
        has, lacks = (
            ("the command", "the URL") if PORT in in_command else ("the URL", "the command")
        )
        raise ConfigError(f"{{port}} is in {has} but not in {lacks}: the load would miss it")
    return argv


def check_watches(watch: Sequence[str], names: Iterable[str]) -> list[str]:
    """check_watches checks the ``--watch`` specs of an experiment before any service
    starts: a placeholder each may hold is a varied name, ``{port}`` or ``{dir}`` (filled per
    configuration, as in the command: ``api=port:{port}``, ``db=cmd:pg --data {dir}``), and
    each spec, filled, must be one :class:`~redline.service.parts.Watch` can read. Returns
    the specs, a list."""
    from redline.service.parts import Watch

    known = {*names, PORT, DIR}
    for spec in watch:
        unknown = sorted(placeholders(spec) - known)
        if unknown:
            raise ConfigError(
                f"--watch {spec}: unknown placeholder {{{unknown[0]}}} (known: "
                + ", ".join(f"{{{k}}}" for k in sorted(known))
                + ")"
            )
        # A spec of a number (port:{port}) is read as it will be: with a number in it.
        Watch.parse(fill(spec, dict.fromkeys(known, "1")))
    return list(watch)


def fill(text: str, values: Mapping[str, str]) -> str:
    """fill puts the values into their ``{name}`` placeholders (others are left as they are)."""
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), text)


def free_port(host: str = "127.0.0.1") -> int:
    """free_port is a port nothing listens on now (bound to 0 and released): the service
    started next binds it."""
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])
