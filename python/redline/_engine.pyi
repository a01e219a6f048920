"""Type stubs for the native module (crates/py)."""

from collections.abc import Callable

from redline.runs.config import RunConfig
from redline.sockets.config import SocketConfig

__version__: str
#: ERROR_CLASSES: the engine's error classes, in report order, by the keys a report's
#: ``errors`` and ``errors_by_class`` count them under (``failure.rs``'s ``ErrorClass::key``).
ERROR_CLASSES: list[str]
#: TRANSPORT_REASONS: the reasons a scenario's per-name table gives the failures that got no
#: response (every class but ``status``, ``check`` and ``grpc``).
TRANSPORT_REASONS: list[str]
#: GRPC_CODES: gRPC's status codes' names by number (``OK``, ``CANCELLED``, ...).
GRPC_CODES: list[str]
#: DURATION_BOUNDS_US: the upper bounds (µs, inclusive) of the latency buckets of each
#: snapshot's ``statuses``, the exporters' buckets.
DURATION_BOUNDS_US: list[int]

class RedlineError(Exception): ...
class ConfigError(RedlineError): ...
class UnreachableError(RedlineError): ...

# config: the engine's RunConfig, typed in Python as redline.runs.config.RunConfig (field for
# field: tests/test_config.py) and read in Rust in one conversion (a key or value that does
# not fit: ConfigError); functions: the plan's Python steps (redline.scenario.pystep), called
# on the engine's host.
def run(
    config: RunConfig,
    progress: Callable[[str], None] | None = None,
    functions: list[Callable[[list[str]], list[str]]] | None = None,
) -> str: ...
def defaults() -> str: ...
# config: the engine's SocketConfig, typed in Python as redline.sockets.config.SocketConfig
# and read in the same one conversion as run's (a ConfigError naming the field).
def run_socket(config: SocketConfig) -> str: ...

# grpc_call: the request of a gRPC method (``package.Service/Method``) read from a .proto at
# run time, the JSON ``data`` encoded as its input message (a client stream's JSON array as its
# messages): (path, framed body, whether the method streams its answer, the input message's
# name, whether it streams its request, the messages in the body); a mistake is a ConfigError.
def grpc_call(
    proto: str, method: str, data: str, includes: list[str] = ...
) -> tuple[str, bytes, bool, str, bool, int]: ...
def merge_histograms(histograms: list[str]) -> str: ...
def histogram_quantiles(histogram: str, quantiles: list[float]) -> tuple[int, list[int]]: ...
def histogram_summary(histogram: str) -> str: ...

class Target:
    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        threads: int | None = None,
        tls_cert: str | None = None,
        tls_key: str | None = None,
        capacity: int | None = None,
        service_time: float | None = None,
        queue_limit: int | None = None,
        pause: str | None = None,
        contention: float | None = None,
        serial: float | None = None,
        rate_limit: float | None = None,
        burst: int | None = None,
        refuse_status: int | None = None,
        fail_every: int | None = None,
        idle_timeout: float | None = None,
        http2: bool = False,
    ) -> None: ...
    @property
    def url(self) -> str: ...
    @property
    def port(self) -> int: ...
    @property
    def running(self) -> bool: ...
    def stats(self) -> dict[str, int]: ...
    def stop(self) -> None: ...

def start_run(
    config: RunConfig, functions: list[Callable[[list[str]], list[str]]] | None = None
) -> RunHandle: ...

class RunHandle:
    def set_target(self, value: float, ramp_s: float = 0.0) -> float: ...
    def target(self) -> float | None: ...
    def stop(self) -> None: ...
    @property
    def done(self) -> bool: ...
    def next_snapshot(self, timeout_s: float) -> str | None: ...
    def report(self) -> str: ...
