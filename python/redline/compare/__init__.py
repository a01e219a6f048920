"""compare: did it regress? One result against a baseline, with the statistics to tell a
real difference from noise (``redline compare BASE.json NEW.json``).

From Python::

    from redline import compare
    base, new = compare.load("base.json"), compare.load("new.json")
    c = compare.compare(base, new)
    print(compare.render_text([c]))
    for line in compare.failures(compare.parse_rules(["p99:+10%"]), c):
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
#: CLI (which imports compare.command for its parser) starts without numpy and scipy.
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
]
