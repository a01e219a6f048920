"""The CLI's start-up stays light: a command imports what it uses. `redline run URL` must not
import the numerics (numpy, scipy) that only `find` and `report` need (~90 MB of RSS and over
a second at start), nor the modules of the other commands and of scenarios: `import redline`
once loaded all of them, ~320 M instructions of a 419 M `-n 1` run (issue 35)."""

from __future__ import annotations

import subprocess
import sys

import redline

#: ELSEWHERE: modules a URL run has no use for (each a prefix: a package and its modules).
ELSEWHERE = (
    "numpy",
    "scipy",
    "kneed",
    "rich",
    "psutil",
    "shutil",  # argparse's formatter's, for the terminal's width (cli/commands.py reads it)
    "statistics",
    "redline.analysis",
    "redline.cluster.handle",
    "redline.compare.",
    "redline.experiment.",
    "redline.find.finder",
    "redline.find.result",
    "redline.live.",
    "redline.report.charts",
    "redline.report.render",
    "redline.scenario",
    "redline.sockets",
)

#: LOADED: a program that runs the redline command of its arguments and writes, last on its
#: stderr, the modules it had imported by then (``--help`` ends in SystemExit).
LOADED = (
    "import sys\n"
    "from redline.cli import main\n"
    "try:\n"
    "    sys.exit(main(sys.argv[1:]))\n"
    "finally:\n"
    "    print('loaded:', *sorted(sys.modules), file=sys.stderr)\n"
)


def loaded(*args: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """loaded runs ``redline ARGS`` in a fresh interpreter: its outcome and its modules."""
    out = subprocess.run(
        [sys.executable, "-c", LOADED, *args], capture_output=True, text=True, timeout=60
    )
    last = out.stderr.strip().splitlines()[-1] if out.stderr.strip() else ""
    assert last.startswith("loaded: "), out.stderr[-2000:]
    return out, last.split()[1:]


def elsewhere(modules: list[str]) -> list[str]:
    return [m for m in modules if m.startswith(ELSEWHERE)]


def printed(code: str) -> str:
    """printed: what ``code`` prints, run in a fresh interpreter."""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    return out.stdout.strip()


def test_cli_import_leaves_numerics_unloaded() -> None:
    heavy = printed(
        "import sys, redline.cli\n"
        "redline.cli.build_parser()\n"
        "print(','.join(sorted(m for m in ('numpy', 'scipy', 'kneed') if m in sys.modules)))\n"
    )
    assert heavy == "", f"redline.cli imports {heavy} at start-up"


def test_a_url_run_imports_only_what_it_uses(target: redline.Target) -> None:
    before = target.stats()["requests"]
    out, modules = loaded("run", "-n", "5", "-c", "1", "-q", target.url)
    assert out.returncode == 0, out.stderr[-2000:]
    assert target.stats()["requests"] - before == 5
    assert "5 requests" in out.stdout, out.stdout
    assert elsewhere(modules) == [], "redline run URL imports what it does not use"


def test_the_run_help_imports_no_other_command() -> None:
    out, modules = loaded("run", "--help")
    assert out.returncode == 0 and "--rate" in out.stdout
    assert elsewhere(modules) == []


def test_the_library_names_load_when_used() -> None:
    # `import redline` is light; each public name comes from its module on first use, and
    # the three named as their packages stay the functions once those are imported.
    out = printed(
        "import sys, redline\n"
        "light = 'redline.scenario.running' not in sys.modules\n"
        "import redline.find.plan, redline.compare.gate, redline.experiment.configurations\n"
        "named = all(map(callable, (redline.find, redline.compare, redline.experiment)))\n"
        "print(light, named, redline.Scenario.__module__, redline.run.__module__)\n"
    )
    assert out.split() == [
        "True",
        "True",
        "redline.scenario.running",
        "redline.scenario.running",
    ]
