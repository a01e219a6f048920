"""address: where a distributed run's injectors live, parsed from ``--cluster``.

``ray://HOST:PORT`` is an existing Ray cluster reached through Ray Client (a laptop's, a VM
group's, KubeRay's head service); ``local:N`` starts a Ray on this machine with N injectors,
for trying a distributed run out (and for the tests).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from redline.errors import ClusterError

#: MAX_INJECTORS bounds ``--injectors`` and ``local:N``: seed 003 needed 250 Locust workers;
#: ten times that is past any cluster this was measured on (bench/cluster.py merges 250).
MAX_INJECTORS = 2500


class Kind(enum.Enum):
    """Kind is how the cluster is reached."""

    #: LOCAL: a Ray started here (or the one this process already runs).
    LOCAL = "local"
    #: RAY: an existing cluster through Ray Client (``ray://``).
    RAY = "ray"


@dataclass(frozen=True)
class Address:
    """Address is a parsed ``--cluster`` value: the kind, where (RAY) and how many injectors
    the address itself asks for (LOCAL's N; None for RAY: ``--injectors`` or one per node)."""

    kind: Kind
    text: str
    host: str | None = None
    port: int | None = None
    injectors: int | None = None

    @property
    def ray_address(self) -> str | None:
        """ray_address is what ``ray.init(address=...)`` takes (None: start a local Ray)."""
        return self.text if self.kind is Kind.RAY else None


def parse_address(text: str) -> Address:
    """parse_address reads ``ray://HOST:PORT`` or ``local:N``; anything else is a one-line
    ClusterError saying what is accepted."""
    usage = "give ray://HOST:PORT or local:N"
    if text.startswith("local:"):
        n = _count(text[len("local:") :], text)
        return Address(Kind.LOCAL, text, injectors=n)
    if text.startswith("ray://"):
        rest = text[len("ray://") :]
        host, sep, port_text = rest.rpartition(":")
        host = host.strip("[]")
        if not sep or not host or "/" in rest:
            raise ClusterError(f"bad cluster address {text!r}: {usage}")
        if not port_text.isdigit() or not 0 < int(port_text) < 65536:
            raise ClusterError(f"bad cluster address {text!r}: the port must be 1 to 65535")
        return Address(Kind.RAY, text, host=host, port=int(port_text))
    raise ClusterError(f"bad cluster address {text!r}: {usage}")


def check_injectors(n: int | None, address: Address) -> int | None:
    """check_injectors settles ``--injectors``: it must be 1 to MAX_INJECTORS, and agree with
    ``local:N`` (which already says how many)."""
    if n is None:
        return address.injectors
    if not 1 <= n <= MAX_INJECTORS:
        raise ClusterError(f"--injectors must be 1 to {MAX_INJECTORS}, got {n}")
    if address.injectors is not None and n != address.injectors:
        raise ClusterError(
            f"--injectors {n} disagrees with {address.text!r} (local:N starts N injectors)"
        )
    return n


def _count(digits: str, text: str) -> int:
    if not digits.isdigit() or not 1 <= int(digits) <= MAX_INJECTORS:
        raise ClusterError(
            f"bad cluster address {text!r}: local:N needs N from 1 to {MAX_INJECTORS}"
        )
    return int(digits)
