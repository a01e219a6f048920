"""compare: did it regress? One result against a baseline, with the statistics to tell a
real difference from noise (``redline compare BASE.json NEW.json``).

From Python, :func:`redline.compare` is the one call (:func:`redline.compare.result.compare`,
a plain function: ``redline.compare`` names it, not this package)::

    import redline
    verdict = redline.compare("base.json", new_result, fail_on=["p99:+10%"])
    print(verdict.text(), verdict.passed, verdict.failures)

and the package's parts are there for finer work, imported by name::

    from redline.compare import compare, failures, load, parse_rules, render_text
    c = compare(load("base.json"), load("new.json"))
    print(render_text([c]))
    for line in failures(parse_rules(["p99:+10%"]), c):
        print(line)  # a rule tripped, or its figure could not be judged

Inside: :mod:`documents` reads results into stretches, :mod:`windows` cuts them into windows
and reads each window's figures (:mod:`counting` counts goodput and errors), :mod:`significance`
tests the two sides' windows, :mod:`comparison` puts rows together, :mod:`gate` is the CI
gate, :mod:`tables` and :mod:`page` show the result.
"""

from __future__ import annotations

from typing import Any

from redline.exports import lazy_attribute

#: _HOME: where each public name lives. The package loads a part on first use, so that the
#: CLI (whose redline.cli.compare imports this package) starts without numpy and scipy.
_HOME = {
    "Comparison": "comparison",
    "Row": "comparison",
    "compare": "comparison",
    "compare_stretches": "comparison",
    "Document": "documents",
    "Kind": "documents",
    "load": "documents",
    "read": "documents",
    "Figure": "figures",
    "Rule": "gate",
    "failures": "gate",
    "parse_rule": "gate",
    "parse_rules": "gate",
    "unjudged": "gate",
    "Outcomes": "counting",
    "outcomes": "counting",
    "render_html": "page",
    "Verdict": "significance",
    "render_markdown": "tables",
    "render_text": "tables",
    "Stretch": "windows",
    "CompareResult": "result",
}


def __getattr__(name: str) -> Any:
    return lazy_attribute(__name__, _HOME, name)


__all__ = [
    "compare",
    "compare_stretches",
    "Comparison",
    "Row",
    "Document",
    "Kind",
    "load",
    "read",
    "Figure",
    "Verdict",
    "Stretch",
    "Outcomes",
    "outcomes",
    "Rule",
    "parse_rule",
    "parse_rules",
    "failures",
    "unjudged",
    "render_text",
    "render_markdown",
    "render_html",
    "CompareResult",
]
