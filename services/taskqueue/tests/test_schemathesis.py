"""schemathesis against the service's own /openapi.json: no input may produce a 5xx."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path


def test_no_server_errors_from_generated_requests(server, tmp_path: Path) -> None:
    beside = Path(sys.executable).with_name("schemathesis")
    exe = str(beside) if beside.exists() else shutil.which("schemathesis") or "schemathesis"
    proc = subprocess.run(
        [
            exe,
            "run",
            f"{server.url}/openapi.json",
            "--checks",
            "not_a_server_error",
            "--max-examples",
            "30",
            "--seed",
            "1",
            "--request-timeout",
            "10",
            "--phases",
            "examples,coverage,fuzzing,stateful",
            "--generation-database",
            "none",
        ],
        cwd=tmp_path,  # schemathesis leaves a .schemathesis/ cache in its working directory
        capture_output=True,
        text=True,
        timeout=170,
    )
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
