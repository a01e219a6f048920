"""The suite's own guards: a hung test is stopped, and a process left behind fails the run."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

TESTS = Path(__file__).parent


def test_every_test_has_a_timeout(request: pytest.FixtureRequest) -> None:
    # pytest-timeout is loaded and pyproject.toml gives every test a default bound.
    assert request.config.pluginmanager.hasplugin("timeout")
    assert float(request.config.getini("timeout")) > 0


def test_leftovers_is_loaded(request: pytest.FixtureRequest) -> None:
    assert request.config.pluginmanager.hasplugin("leftovers")


def _inner_pytest(tmp_path: Path, body: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_inner.py").write_text(textwrap.dedent(body))
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "leftovers",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(tmp_path),
            str(tmp_path / "test_inner.py"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env={"PYTHONPATH": str(TESTS), "PATH": "/usr/bin:/bin"},
    )


ORPHAN = """
    import subprocess, sys

    def test_leaves_an_orphan():
        # The child starts a grandchild and exits: the grandchild is an orphan.
        code = "import subprocess; subprocess.Popen(['sleep', '60'])"
        subprocess.run([sys.executable, "-c", code], check=True, timeout=30)
"""

CLEAN = """
    import subprocess

    def test_stops_what_it_starts():
        p = subprocess.Popen(["sleep", "60"])
        p.kill()
        p.wait(10)
"""


@pytest.mark.parametrize(("label", "body", "code"), [("orphan", ORPHAN, 1), ("clean", CLEAN, 0)])
def test_a_process_left_behind_fails_the_session(tmp_path, label, body, code) -> None:
    done = _inner_pytest(tmp_path, body)
    assert done.returncode == code, done.stdout + done.stderr
    said = "outlived the test session" in done.stdout
    assert said == (code == 1), done.stdout
    if code:
        assert "sleep 60" in done.stdout, done.stdout
