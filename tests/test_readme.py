"""The README's sample output is what the command it shows prints today: a real run of the same
command (shorter, on a port of its own) has the same lines, in the same order, with the same
words; only the figures differ (and the verdict's, which describes this machine's load)."""

from __future__ import annotations

import re
from pathlib import Path

import redline
from conftest import run_cli

README = Path(__file__).resolve().parent.parent / "README.md"

#: _FIGURE: a number with its unit, as the summary prints one (22.73ms, 4.40k, 2.82MB, 4%).
_FIGURE = re.compile(r"\d[\d,]*(?:\.\d+)?(?:µs|us|ms|MB|KB|GB|B|s|k|M|%)?")


def shape(line: str) -> str:
    """shape: the line with its figures replaced by '#' and its spacing collapsed."""
    return " ".join(_FIGURE.sub("#", line).split())


def sample() -> tuple[str, list[str]]:
    """sample: the README's sample command and the output it shows."""
    text = README.read_text()
    m = re.search(r"```text\n\$ (redline run [^\n]+)\n(.*?)```", text, re.S)
    assert m, "the README shows a sample run"
    return m.group(1), m.group(2).splitlines()


def test_the_readmes_sample_output_is_what_a_run_prints():
    command, shown = sample()
    argv = command.split()[2:]
    url = next(a for a in argv if a.startswith("'http"))
    rest = [a for a in argv if a != url]
    assert rest[rest.index("-d") + 1] == "10s"
    rest[rest.index("-d") + 1] = "2s"  # the same run, shorter
    with redline.Target(threads=1) as t:
        real_url = url.strip("'").replace("http://127.0.0.1:8080", t.url)
        before = t.stats()["requests"]
        p = run_cli("run", real_url, *rest, "-q")
        served = t.stats()["requests"] - before
    assert p.returncode == 0, p.stderr
    printed = p.stdout.splitlines()
    assert len(printed) == len(shown), (printed, shown)
    for mine, theirs in zip(printed[:-1], shown[:-1], strict=True):
        assert shape(mine.replace(t.url, "http://127.0.0.1:8080")) == shape(theirs), (mine, theirs)
    # The verdict: the README's kept up; a busy machine may not, but it is the verdict line.
    assert shown[-1].startswith("Generator kept up: ") and "(CPU " in printed[-1], printed[-1]
    count = int(re.search(r"(\d+) requests in", p.stdout).group(1))
    assert count <= served <= count + 100, (count, served)
