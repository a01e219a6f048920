"""Helpers shared by the experiment tests (test_experiment*.py): the bundled target as the
monitored service, the quick search settings, the schema check of an experiment document,
the charts a page embeds, and the target servers still alive."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import jsonschema
import psutil
from referencing import Registry, Resource

SCHEMAS = Path(__file__).resolve().parent.parent / "docs/schema"

#: EXAMPLES: seed 002's experiment as the examples ship it (factorials.py, workers.toml).
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

#: TARGET: the bundled target as the service: {slots} slots of 10 ms each, capacity slots/10ms.
TARGET = f"{sys.executable} -m redline target --port {{port}} --capacity {{slots}}"
TARGET += " --service-time 10ms --threads 1"

#: QUICK: the search settings of every experiment here (a search well under 30 s).
QUICK = ["--max-time", "30s", "--min-step", "1s", "--max-step", "3s", "--confirm", "2s"]


def valid(doc: dict[str, Any]) -> dict[str, Any]:
    """valid checks an experiment document against its schema, which takes each run's
    result from find.schema.json (or result.schema.json, for runs)."""
    schemas = [
        json.loads((SCHEMAS / f"{n}.schema.json").read_text())
        for n in ("find", "result", "experiment")
    ]
    registry = Registry().with_resources([(s["$id"], Resource.from_contents(s)) for s in schemas])
    jsonschema.Draft202012Validator(schemas[-1], registry=registry).validate(doc)
    return doc


def page_charts(page: str) -> dict[str, dict[str, Any]]:
    """page_charts: the charts an HTML report embeds for its renderer, by id."""
    m = re.search(r'<script type="application/json" id="redline-charts">(.*?)</script>', page)
    assert m, "the page embeds its charts"
    return {c["id"]: c for c in json.loads(m.group(1))}


def targets_alive() -> list[psutil.Process]:
    """targets_alive: this process's descendants that are target servers."""
    out = []
    for p in psutil.Process().children(recursive=True):
        try:
            if "target" in p.cmdline() and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
        except psutil.Error:
            continue
    return out
