"""A newcomer's pass over the CLI's values: each bad one is one line and exit 2 (never a
traceback), each flag acts, warns or is refused with its reason, and the spellings a k6 or Go
user types are understood."""

from __future__ import annotations

import json

import pytest
from conftest import run_cli


@pytest.mark.parametrize(
    "argv, said",
    [
        (["run", "http://[::1"], "'http://[::1' is not a URL (Invalid IPv6 URL)"),
        (["find", "http://[::1"], "'http://[::1' is not a URL (Invalid IPv6 URL)"),
        (["run", "http://127.0.0.1:9/", "-d", "-5s"], "duration must be > 0"),
        (["run", "http://127.0.0.1:9/", "--timeout", "-1s"], "timeout"),
        (["run", "http://127.0.0.1:9/", "-u", "3"], "-u/--users is a scenario's option"),
        (["run", "http://127.0.0.1:9/", "--iterations", "5"], "--iterations is a scenario's"),
        (["run", "http://127.0.0.1:9/", "--var", "A=1"], "--var is a scenario's option"),
        (["run", "http://127.0.0.1:9/", "--host", "x"], "--host is a scenario's option"),
        (
            ["find", "http://127.0.0.1:9/", "--max-time", "15s"],
            "--max-time: at least 17s, to hold two steps of --min-step 3s and the --confirm "
            "step of 10s",
        ),
        # Each ran a whole search (-1%: no error stopped it; 200%: the same; -3s: no confirm).
        (["find", "http://127.0.0.1:9/", "--max-errors", "-1%"], "--max-errors: a share from 0"),
        (["find", "http://127.0.0.1:9/", "--max-errors", "200%"], "to 100%, got 200%"),
        (["find", "http://127.0.0.1:9/", "--max-errors", "1.5"], "to 100%, got 150%"),
        (["find", "http://127.0.0.1:9/", "--confirm", "-3s"], "--confirm: 0s or more, got -3s"),
        (["find", "http://127.0.0.1:9/", "--soak", "-1s"], "--soak: 0s or more, got -1s"),
    ],
)
def test_a_bad_value_is_one_line_and_exit_2(argv, said):
    p = run_cli(*argv)
    assert p.returncode == 2, (argv, p.stdout, p.stderr)
    assert said in p.stderr and "Traceback" not in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr


def test_a_duration_in_parts_is_read_as_go_and_k6_write_it(target):
    before = target.stats()["requests"]
    p = run_cli("run", target.url + "/", "-c", "2", "-d", "0m1s500ms", "-q", "--json", "-")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)  # --json -: the document alone on stdout
    assert doc["duration_s"] == pytest.approx(1.5, abs=0.1)
    served = target.stats()["requests"] - before
    assert 0 < doc["requests"] <= served <= doc["requests"] + 2, (doc["requests"], served)
    assert "Requests/sec:" in p.stderr, "the summary moves to stderr"


def test_threads_beyond_the_cores_are_warned_of(target):
    import os

    before = target.stats()["requests"]
    p = run_cli("run", target.url + "/", "-n", "20", "-c", "2", "-t", "1000", "-q")
    assert p.returncode == 0, p.stderr
    cores = os.cpu_count()
    assert f"warning: -t/--threads 1000 is more than this machine's {cores} cores" in p.stderr
    assert target.stats()["requests"] - before == 20
    assert "2 threads and 2 connections" in p.stdout, "one thread per connection at most"


def test_a_passed_threshold_is_shown_with_its_value(target):
    """k6 shows ✓ beside a threshold that held; a CI log that lists only failures cannot tell
    a passed gate from one that was never given."""
    before = target.stats()["requests"]
    p = run_cli(
        "run", target.url + "/", "-n", "50", "-c", "2", "-q",
        "--threshold", "p99<60s", "--threshold", "rps>100000000",
    )  # fmt: skip
    assert p.returncode == 1, p.stderr
    assert "redline: ✓ threshold p99<60s held: p99 was " in p.stderr, p.stderr
    assert "redline: threshold rps>100000000 failed: rps was " in p.stderr
    assert target.stats()["requests"] - before == 50
