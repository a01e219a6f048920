"""The boundary is typed once: redline.runs.config.RunConfig names the engine's RunConfig
fields (crates/engine/src/config.rs) field for field, and RunOptions builds it; a WebSocket
run's SocketConfig (crates/engine/src/socket/config.rs) crosses the same way."""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_type_hints

import pytest
from redline.runs.config import RunConfig, StageConfig
from redline.runs.run_options import RunOptions
from redline.sockets.config import SocketConfig

ENGINE = Path(__file__).resolve().parent.parent / "crates" / "engine" / "src"


def rust_fields(source: str, struct: str) -> set[str]:
    """rust_fields: the public fields of ``pub struct NAME { ... }`` in ``source`` that its
    JSON carries (not those marked ``#[serde(skip)]``, which the binding sets: the Python
    steps' host)."""
    body = re.search(rf"pub struct {struct} \{{(.*?)\n\}}", source, re.S)
    assert body is not None, f"no struct {struct}"
    skipped = set(re.findall(r"#\[serde\(skip\)\]\s*pub (\w+):", body.group(1)))
    return set(re.findall(r"^\s*pub (\w+):", body.group(1), re.M)) - skipped


def test_rust_fields_reads_a_struct():
    src = (
        "pub struct A {\n    /// doc\n    pub x: i64,\n    pub y: Option<f64>,\n    z: u8,\n"
        "    #[serde(skip)]\n    pub h: Option<H>,\n}\n"
    )
    assert rust_fields(src, "A") == {"x", "y"}


@pytest.mark.parametrize(
    ("py", "path", "struct"),
    [
        (RunConfig, "config.rs", "RunConfig"),
        (StageConfig, "pacer.rs", "Stage"),
        (SocketConfig, "socket/config.rs", "SocketConfig"),
    ],
)
def test_the_python_config_has_the_engines_fields(py, path, struct):
    """A field the engine gains and Python lacks (or the reverse) fails here by name."""
    rust = rust_fields((ENGINE / path).read_text(), struct)
    python = set(get_type_hints(py))
    assert not rust - python, f"{struct}: fields Python's {py.__name__} lacks: {rust - python}"
    assert not python - rust, f"{py.__name__}: fields the engine lacks: {python - rust}"


def test_run_options_build_the_config_with_what_callers_add():
    config = RunOptions(connections=3, duration="2s").config(
        "http://127.0.0.1:1/", plan={"flows": []}, live=True, max_vus=9
    )
    assert set(config) <= set(get_type_hints(RunConfig))
    assert (config["connections"], config["duration_s"], config["max_vus"]) == (3, 2.0, 9)
    assert config["live"] is True and config["plan"] == {"flows": []}
    assert "live" not in RunOptions().config("http://127.0.0.1:1/")


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"url": "http://127.0.0.1:9/", "conections": 5}, "unknown field `conections`"),
        ({"url": "http://127.0.0.1:9/", "rate": "fast"}, "bad run config: rate: .*real number"),
        ({"url": "http://127.0.0.1:9/", "connections": 2.5}, "config: connections: .*integer"),
        ({"url": "http://127.0.0.1:9/", "stages": [{"target": 5}]}, r"stages\[0\]: missing"),
        (
            {"url": "http://127.0.0.1:9/", "stages": [{"duration_s": 1, "target": "x"}]},
            r"bad run config: stages\[0\]\.target: .*real number",
        ),
        ({"url": "http://127.0.0.1:9/", "headers": [["a"]]}, r"headers\[0\]: .*length 2"),
        # A flag is a boolean, not a truthy value (pythonize alone would read 1 as true).
        ({"url": "http://127.0.0.1:9/", "open": 1}, "config: open: .*integer `1`, expected true"),
        ({"url": "http://127.0.0.1:9/", "http2": "no"}, 'http2: .*string "no", expected true'),
        ({"url": "http://127.0.0.1:9/", "insecure": None}, "config: insecure: .*expected true"),
        ('{"url": "http://127.0.0.1:9/"}', "bad run config: .*'str' object"),
    ],
)
def test_the_binding_reads_the_config_once_and_says_what_does_not_fit(config, message):
    """The config crosses as the dict it is; what does not fit the engine's RunConfig (a key
    it lacks, a value of the wrong type, a JSON string of the old boundary) is one
    ConfigError that names the field, raised before any load, never a TypeError or a
    panic."""
    from redline import _engine
    from redline.errors import ConfigError

    with pytest.raises(ConfigError, match=message):
        _engine.run(config)
    with pytest.raises(ConfigError, match=message):
        _engine.start_run(config)


def test_the_error_classes_are_the_engines():
    """ERROR_CLASSES names every class a report counts (the keys of its ``errors``), in the
    engine's order, and the modules that list them read it (no copy to drift)."""
    import redline
    from redline import _engine
    from redline.live.metrics import OUTCOMES
    from redline.report.charts import ERROR_CLASSES
    from redline.scenario.thresholds import TRANSPORT_REASONS

    with redline.Target() as target:
        result = redline.run(target.url + "/", connections=1, requests=5)
    assert list(result.data["errors"]) == _engine.ERROR_CLASSES
    assert ERROR_CLASSES == tuple(_engine.ERROR_CLASSES)
    assert OUTCOMES == ("ok", *_engine.ERROR_CLASSES)
    assert TRANSPORT_REASONS == frozenset(_engine.TRANSPORT_REASONS)
    assert "connect error" in TRANSPORT_REASONS and "HTTP error status" not in TRANSPORT_REASONS


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"url": "ws://127.0.0.1:9/ws", "socket": 5}, "unknown field `socket`"),
        ({"url": "ws://127.0.0.1:9/ws", "sockets": "many"}, "bad socket config: sockets: "),
        ({"url": "ws://127.0.0.1:9/ws", "rate": [1]}, "bad socket config: rate: "),
        ({"url": "ws://127.0.0.1:9/ws", "insecure": 1}, "config: insecure: .*expected true"),
        ({"sockets": 5}, "bad socket config: missing field `url`"),
        ('{"url": "ws://127.0.0.1:9/ws"}', "bad socket config: .*'str' object"),
    ],
)
def test_a_socket_config_crosses_the_same_boundary(config, message):
    """run_socket reads its dict in the same one conversion as run: a field that does not
    fit is one ConfigError naming it, before any socket opens."""
    from redline import _engine
    from redline.errors import ConfigError

    with pytest.raises(ConfigError, match=message):
        _engine.run_socket(config)
