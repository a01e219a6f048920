"""CLI: config from flags and environment, one-line errors (exit 2), start/stop lines."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest
from taskqueue.cli import build_parser, config_from
from taskqueue.config import ConfigError


@pytest.mark.parametrize(
    "args,env,field,value",
    [
        ([], {}, "port", 8000),
        (["--port", "0"], {}, "port", 0),
        ([], {"TASKQUEUE_PORT": "9001"}, "port", 9001),
        (["--port", "9002"], {"TASKQUEUE_PORT": "9001"}, "port", 9002),
        ([], {"TASKQUEUE_MAX_QUEUE": "7"}, "max_queue", 7),
        (
            [],
            {"TASKQUEUE_ALLOW_FETCH_CIDR": "127.0.0.0/8, 10.0.0.0/8"},
            "allow_fetch_cidrs",
            ["127.0.0.0/8", "10.0.0.0/8"],
        ),
        (
            ["--allow-fetch-cidr", "127.0.0.0/8", "--allow-fetch-cidr", "::1/128"],
            {},
            "allow_fetch_cidrs",
            ["127.0.0.0/8", "::1/128"],
        ),
        (
            [],
            {"TASKQUEUE_DATA_DIR": "/nonexistent/taskqueue"},
            "data_dir",
            Path("/nonexistent/taskqueue"),
        ),
        ([], {}, "fast_path", True),
        (["--fast-path", "off"], {}, "fast_path", False),
        ([], {"TASKQUEUE_FAST_PATH": "OFF"}, "fast_path", False),
        (["--fast-path", "on"], {"TASKQUEUE_FAST_PATH": "off"}, "fast_path", True),
    ],
)
def test_config_sources(args: list[str], env: dict, field: str, value: object) -> None:
    config = config_from(build_parser().parse_args(["serve", *args]), env)
    assert getattr(config, field) == value


@pytest.mark.parametrize(
    "args,env,fragment",
    [
        (["--port", "70000"], {}, "port"),
        (["--port", "x"], {}, "--port"),
        ([], {"TASKQUEUE_WORKERS": "many"}, "TASKQUEUE_WORKERS"),
        (["--workers", "0"], {}, "workers"),
        (["--max-queue", "-1"], {}, "max-queue"),
        (["--allow-fetch-cidr", "not-a-cidr"], {}, "allow-fetch-cidr"),
        (["--fast-path", "maybe"], {}, "--fast-path"),
    ],
)
def test_bad_config_raises(args: list[str], env: dict, fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment):
        config_from(build_parser().parse_args(["serve", *args]), env)


@pytest.mark.parametrize(
    "args",
    [
        ["serve", "--port", "-5"],
        ["serve", "--bogus"],
        [],
        ["serve", "--allow-fetch-cidr", "300.1.1.1/8"],
    ],
)
def test_cli_bad_config_is_one_line_exit_2(args: list[str], tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "taskqueue", *args],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=tmp_path,
    )
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("taskqueue: error:"), proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout


@pytest.mark.sqlite_only("the data-dir lock is SQLite's; a database takes any number of servers")
def test_data_dir_in_use_is_one_line_exit_2(server_factory) -> None:
    srv = server_factory()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "taskqueue",
            "serve",
            "--port",
            "0",
            "--data-dir",
            str(srv.data_dir),
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 2 and "in use" in proc.stderr and proc.stderr.count("\n") == 1, (
        proc.stderr
    )


def test_start_line_has_real_port_and_stop_line(server_factory) -> None:
    srv = server_factory()
    assert srv.url.startswith("http://127.0.0.1:") and not srv.url.endswith(":0")
    with srv.client() as c:
        assert c.get("/healthz").status_code == 200
    assert srv.stop() == 0
    out = "".join(srv.lines)
    assert out.count("listening on") == 1 and f"stopped {srv.url}" in out, out


def test_port_in_use_is_one_line_exit_2(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "taskqueue",
                "serve",
                "--port",
                port,
                "--data-dir",
                str(tmp_path),
            ],
            capture_output=True,
            text=True,
            timeout=30,
        )
    assert proc.returncode == 2 and "cannot listen" in proc.stderr, proc.stderr
    assert proc.stderr.count("\n") == 1
