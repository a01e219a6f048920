"""The redline CLI: summaries, --json validated against its schema, one-line errors (exit 2),
and Ctrl-C still printing and writing what ran."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import pytest
from conftest import run_cli

SCHEMA = json.loads((Path(__file__).parent.parent / "docs/schema/result.schema.json").read_text())


def test_run_prints_a_wrk_style_summary_and_valid_json(target, tmp_path):
    out = tmp_path / "r.json"
    before = target.stats()["requests"]
    p = run_cli("run", target.url + "/", "-c", "5", "-n", "500", "--json", str(out), "-q")
    assert p.returncode == 0, p.stderr
    for words in (
        "Latency Distribution",
        "99.99%",
        "Requests/sec:",
        "Transfer/sec:",
        "500 requests in",
    ):
        assert words in p.stdout
    doc = json.loads(out.read_text())
    jsonschema.validate(doc, SCHEMA)
    assert doc["requests"] == 500 == target.stats()["requests"] - before


def test_open_model_json_has_uncorrected_latency(target, tmp_path):
    out = tmp_path / "open.json"
    p = run_cli("run", target.url + "/", "--rate", "200", "-d", "1s", "--json", str(out), "-q")
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    jsonschema.validate(doc, SCHEMA)
    assert doc["model"] == "open" and doc["uncorrected_latency_ms"] is not None
    assert "(service time" in p.stdout


@pytest.mark.parametrize(
    "args, words",
    [
        (["run", "not a url"], "scheme"),
        (["run", "ftp://127.0.0.1/"], "unsupported scheme"),
        (["run", "http://127.0.0.1:1/", "-d", "1s"], "127.0.0.1:1"),
        (["run", "http://127.0.0.1:1/", "-d", "soon"], "duration"),
        (["run", "http://127.0.0.1:1/", "--rate", "0"], "rate"),
        (["run", "http://127.0.0.1:1/", "--rate", "-5"], "rate"),
        (["run", "http://127.0.0.1:1/", "--body", "@/nonexistent/body"], "body"),
        (["run", "http://127.0.0.1:1/", "-c", "lots"], "invalid int"),
        (["run", "http://127.0.0.1:1/", "--stages", "10s"], "stages"),
        (["bogus"], "invalid choice"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, words):
    p = run_cli(*args)
    assert p.returncode == 2, (p.stdout, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    assert words in lines[0]
    assert "Traceback" not in p.stderr


def test_ctrl_c_prints_the_summary_and_writes_json(target, tmp_path):
    out = tmp_path / "int.json"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "redline",
            "run",
            target.url + "/",
            "-c",
            "4",
            "-d",
            "30s",
            "--json",
            str(out),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # A suite started in the background by a non-interactive shell inherits SIGINT
        # ignored, and Python then never turns it into KeyboardInterrupt: give the child the
        # default disposition, as a terminal would.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    time.sleep(2.0)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=20)
    assert proc.returncode == 130, stderr
    assert "Requests/sec:" in stdout and "Interrupted" in stdout
    doc = json.loads(out.read_text())
    assert doc["interrupted"] is True and doc["requests"] > 0
    assert doc["duration_s"] < 10
