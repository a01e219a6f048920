"""compare: did it regress? One result against a baseline, with the statistics to tell a
real difference from noise (``redline compare BASE.json NEW.json``).

From Python, the package itself is the comparison (:func:`redline.compare.result.compare`)::

    import redline
    verdict = redline.compare("base.json", new_result, fail_on=["p99:+10%"])
    print(verdict.text(), verdict.passed, verdict.failures)

and its parts are there for finer work::

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

import sys
import types
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from redline.exports import lazy_attribute

if TYPE_CHECKING:
    from redline.compare.result import CompareResult

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


class _Package(types.ModuleType):
    """_Package makes ``redline.compare`` callable: ``redline.compare(base, new)`` is the
    library's comparison, as ``redline.run`` and ``redline.find`` are functions. A package
    and not a function because ``from redline import compare`` gives this package to the
    code that uses its parts (``compare.compare_stretches``, ``compare.parse_rules``)."""

    def __call__(
        self,
        base: Any,
        new: Any,
        *,
        fail_on: Iterable[str] = (),
        window_s: float | None = None,
        allow_unjudged: bool = False,
    ) -> CompareResult:
        """__call__ is :func:`redline.compare.result.compare`."""
        from redline.compare.result import compare

        return compare(base, new, fail_on=fail_on, window_s=window_s, allow_unjudged=allow_unjudged)


sys.modules[__name__].__class__ = _Package
