"""compare: did it regress? One result against a baseline, with the statistics to tell a
real difference from noise (``redline compare BASE.json NEW.json``).

From Python::

    from redline import compare
    base, new = compare.load("base.json"), compare.load("new.json")
    c = compare.compare(base, new)
    print(compare.render_text([c]))
    for line in compare.failures(compare.parse_rules(["p99:+10%"]), c):
        print(line)

Inside: :mod:`documents` reads results into stretches, :mod:`windows` cuts them into windows
and reads each window's figures (:mod:`outcomes` counts goodput and errors), :mod:`significance`
tests the two sides' windows, :mod:`comparison` puts rows together, :mod:`gate` is the CI
gate, :mod:`tables` and :mod:`page` show the result.
"""

from redline.compare.comparison import Comparison, Row, compare, compare_stretches
from redline.compare.documents import Document, Kind, load, read
from redline.compare.figures import Figure
from redline.compare.gate import Rule, failures, parse_rule, parse_rules
from redline.compare.outcomes import Outcomes, outcomes
from redline.compare.page import render_html
from redline.compare.significance import Verdict
from redline.compare.tables import render_markdown, render_text
from redline.compare.windows import Stretch

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
    "render_text",
    "render_markdown",
    "render_html",
]
