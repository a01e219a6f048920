"""junit: a run's pass/fail as a JUnit XML report, the format CI systems (GitLab, Jenkins,
GitHub's test reporters) read into their test views: one test case per threshold, failed with
the value measured, and one for the run itself (aborted by a threshold, or stopped)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any


def write_junit(
    path: str,
    judged: list[tuple[bool, str]],
    aborted: str | None,
    result: dict[str, Any],
    name: str,
) -> None:
    """write_junit writes the report: ``judged`` is each threshold's (held, line), ``aborted``
    the abort line of a threshold that stopped the run, ``name`` what ran."""
    run_failure = aborted or ("the run was interrupted" if result.get("interrupted") else None)
    cases: list[tuple[str, str | None]] = [("run", run_failure)]
    for held, line in judged:
        text = line.removeprefix("✓ ")
        spec = text.removeprefix("threshold ").split(" ")[0]
        cases.append((f"threshold {spec}", None if held else text))
    suite = ET.Element(
        "testsuite",
        name=f"redline {name}",
        tests=str(len(cases)),
        failures=str(sum(1 for _, f in cases if f)),
        time=f"{float(result.get('duration_s') or 0.0):.3f}",
    )
    for case_name, failure in cases:
        case = ET.SubElement(suite, "testcase", classname="redline", name=case_name)
        if failure:
            ET.SubElement(case, "failure", message=failure).text = failure
    out = ET.SubElement(suite, "system-out")
    verdict = (result.get("generator") or {}).get("verdict", "")
    out.text = (
        f"{result.get('requests', 0)} requests, {float(result.get('rps') or 0):.1f} req/s, "
        f"errors {result.get('errors_total', 0)}; {verdict}"
    )
    root = ET.Element("testsuites")
    root.append(suite)
    ET.indent(root)
    Path(path).write_text(ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n")
