"""config: a WebSocket run's config typed once in Python (:class:`SocketConfig`), as
:class:`redline.runs.config.RunConfig` types an HTTP run's: a TypedDict whose keys are the
fields of ``SocketConfig`` in ``crates/engine/src/socket/config.rs``, field for field
(``tests/test_config.py`` fails when either side gains a field the other lacks). A key left out
takes the engine's default. The dict crosses to the binding (``_engine.run_socket(config)``),
which reads it in the boundary's one conversion (``crates/py/src/run.rs``'s ``read_typed``: a
key or a value that does not fit is a ConfigError naming the field).
"""

from __future__ import annotations

from typing import TypedDict


class _Url(TypedDict):
    """_Url: the one key every socket config has."""

    url: str


class SocketConfig(_Url, total=False):
    """SocketConfig: what the engine's WebSocket run does (``redline_engine::socket::
    SocketConfig``): the target (``url``, ws:// or wss://, with ``insecure`` and ``ca_file``
    for TLS), the load (``sockets``; ``rate`` for the open model, ``stagger_s`` to spread the
    closed model's first messages), its length (``duration_s``, ``messages``), the message and
    how replies match it (``message``, ``match_field``), ``timeout_s`` and ``threads``. The Rust
    doc comments say what each means; ``SocketConfig::check`` judges them."""

    sockets: int
    rate: float
    duration_s: float
    messages: int
    message: str
    match_field: str
    timeout_s: float
    threads: int
    stagger_s: float
    insecure: bool
    ca_file: str
