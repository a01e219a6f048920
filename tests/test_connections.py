"""Connections that never open, and a protocol the server does not speak: said in one place,
with the reason, and never read as the server's figures. Each case runs the CLI against a
server of known truth and compares what it said with what the server saw."""

from __future__ import annotations

import json
import resource
import subprocess
import sys

import pytest
import redline
from conftest import CLI_TIMEOUT_S


def run_limited(nofile: tuple[int, int], *argv: str) -> subprocess.CompletedProcess[str]:
    """run_limited runs ``python -m redline ARGV`` under an open-file limit (soft, hard),
    as ``ulimit -n`` in the shell that starts it would."""
    return subprocess.run(
        [sys.executable, "-m", "redline", *argv],
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, nofile),
    )


@pytest.mark.parametrize(
    "label, nofile, fix",
    [
        (
            "hard limit too low (the soft one raised to it)",
            (256, 512),
            "(ulimit -n 512, hard limit 512): 1000 connections need about 1100 files",
        ),
        (
            "soft and hard limit too low",
            (256, 256),
            "(ulimit -n 256, hard limit 256): 1000 connections need about 1100 files",
        ),
    ],
)
def test_connections_the_fd_limit_refused_are_counted_and_named(tmp_path, label, nofile, fix):
    out = tmp_path / "r.json"
    with redline.Target(threads=1) as t:
        before = t.stats()["connections"]
        p = run_limited(nofile, "run", t.url + "/", "-c", "1000", "-d", "2s", "--json", str(out))
        seen = t.stats()["connections"] - before
    assert p.returncode == 0, p.stderr
    gen = json.loads(out.read_text())["generator"]
    opened, refused = gen["connections_opened"], gen["fd_refused"]
    # The server saw the connections that were open at once (plus the preflight), and no
    # more than the hard limit lets the process hold.
    assert 0 < opened < seen <= nofile[1], (opened, seen)
    assert refused > 0 and gen["limit"] == "fd_limit", gen
    assert gen["fd_limit"] == {"soft": nofile[1], "hard": nofile[1]}
    said = f"only {opened} of 1000 connections opened: {refused} connects were refused"
    assert gen["verdict"].startswith(said), gen["verdict"]
    assert fix in gen["verdict"], (label, gen["verdict"])
    assert "the figures describe the server" not in p.stdout, p.stdout
    assert f"WARNING: O{said[1:]}" in p.stdout, p.stdout
    # The live lines say it as it happens (the count so far).
    assert "(the open-file limit refused " in p.stderr, p.stderr


def test_the_soft_limit_is_raised_to_the_hard_one(tmp_path):
    """``ulimit -n 256`` with a hard limit of 4096: redline raises its soft limit (as Go's
    runtime does), and all 1000 connections open: the server saw them."""
    out = tmp_path / "r.json"
    with redline.Target(threads=1) as t:
        before = t.stats()["connections"]
        p = run_limited(
            (256, 4096), "run", t.url + "/", "-c", "1000", "-d", "2s", "-q", "--json", str(out)
        )
        seen = t.stats()["connections"] - before
    assert p.returncode == 0, p.stderr
    gen = json.loads(out.read_text())["generator"]
    assert gen["fd_refused"] == 0 and gen["limit"] == "server", gen
    assert gen["connections_opened"] == 1000 and seen == 1000 + 1  # and the preflight


def test_a_run_within_the_fd_limit_names_no_limit(tmp_path):
    out = tmp_path / "r.json"
    with redline.Target(threads=1) as t:
        p = run_limited((256, 4096), "run", t.url + "/", "-c", "20", "-d", "1s", "--json", str(out))
    assert p.returncode == 0, p.stderr
    gen = json.loads(out.read_text())["generator"]
    assert gen["fd_refused"] == 0 and gen["limit"] == "server" and "fd_limit" not in gen
    assert gen["connections_opened"] == 20


def test_http2_against_a_server_without_h2c_is_one_line_and_no_load(http1_server):
    url, handler = http1_server.url, http1_server
    p = subprocess.run(
        [sys.executable, "-m", "redline", "run", url, "--http2", "-d", "2s"],
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
    )
    assert p.returncode == 2, (p.stdout, p.stderr)
    (line,) = p.stderr.strip().splitlines()
    assert "does not speak HTTP/2 without TLS (h2c)" in line, line
    # Python's server answers the preface with an HTML page and no status line.
    assert "is text, not an HTTP/2 frame (`<!DOCTYPE HTML>`)" in line and "--http2" in line
    assert handler.gets == 0 and p.stdout == "", "no load, no summary of an outage"
    # The same server over HTTP/1.1 answers: the line was about the protocol alone.
    ok = subprocess.run(
        [sys.executable, "-m", "redline", "run", url, "-n", "5", "-c", "1", "-q"],
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
    )
    assert ok.returncode == 0 and handler.gets == 5, ok.stderr


def test_http2_against_the_target_which_speaks_h2c_runs(target):
    before = target.stats()["requests"]
    p = subprocess.run(
        [sys.executable, "-m", "redline", "run", target.url + "/", "--http2", "-n", "50", "-q"],
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
    )
    assert p.returncode == 0, p.stderr
    assert "over h2" in p.stdout and target.stats()["requests"] - before == 50
