"""result: :func:`compare`, the library's comparison of a result with a baseline, and what it
returns (:class:`CompareResult`): the figures side by side with a verdict on each, and the
gate's ``fail_on`` rules judged as ``redline compare --fail-on`` judges them.

    >>> from redline import compare
    >>> verdict = compare("base.json", new_result, fail_on=["p99:+10%"])
    >>> verdict.passed, verdict.failures

This module imports nothing heavy (numpy and scipy load when :func:`compare` runs), so that
``import redline`` stays light.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from redline.compare.comparison import Comparison, Row
    from redline.compare.documents import Document

#: Side: what :func:`compare` takes for each side: a result of :func:`redline.run`,
#: :func:`redline.find` or a scenario's run, a result document (a dict), or the path of one
#: (``--json``'s file).
Side = Any


@dataclass(frozen=True)
class CompareResult:
    """CompareResult: ``new`` against ``base`` (``comparison``: a row per figure and stretch,
    each with the change, the windows' test and a verdict: better, worse or ~), and the
    ``fail_on`` rules judged: ``failures``, a line per rule tripped, and ``unjudged``, a line
    per rule whose figure could not be judged (too few windows). ``passed`` is the gate's
    verdict (``redline compare`` exits 0 on it)."""

    comparison: Comparison
    failures: tuple[str, ...]
    unjudged: tuple[str, ...]

    @property
    def passed(self) -> bool:
        """passed: no rule tripped and every gated figure could be judged."""
        return not self.failures and not self.unjudged

    @property
    def rows(self) -> list[Row]:
        """rows: the comparison's rows, in table order."""
        return list(self.comparison.rows)

    def text(self) -> str:
        """text: the table ``redline compare`` prints."""
        from redline.compare.tables import render_text

        return render_text([self.comparison])

    def markdown(self) -> str:
        """markdown: the table as GitHub-flavoured Markdown (``--markdown``)."""
        from redline.compare.tables import render_markdown

        return render_markdown([self.comparison])

    def html(self) -> str:
        """html: the page with the charts (``--report``)."""
        from redline.compare.page import render_html

        return render_html([self.comparison])


def compare(
    base: Side,
    new: Side,
    *,
    fail_on: Iterable[str] = (),
    window_s: float | None = None,
    allow_unjudged: bool = False,
) -> CompareResult:
    """compare judges ``new`` against the baseline ``base`` (each a result, a result document
    or its file: :data:`Side`) window by window: goodput, error rate and latency
    percentiles, per request name for a scenario and per answer for a search. ``fail_on``
    rules (``"p99:+10%"``, ``"rps:-5%"``; ``@FILE`` reads one a line) fail the gate when
    their figure got significantly worse by more than the tolerance; a figure that cannot
    be judged fails it too unless ``allow_unjudged``. ``window_s``: the window length aimed
    at (default 5 s). A side that is no redline result, or a bad rule, raises RedlineError."""
    from redline.compare.comparison import compare as compare_documents
    from redline.compare.gate import failures, parse_rules, unjudged
    from redline.compare.windows import WINDOW_S

    rules = parse_rules(list(fail_on))
    c = compare_documents(
        _document(base, "base"), _document(new, "new"), WINDOW_S if window_s is None else window_s
    )
    tripped = failures(rules, c, allow_unjudged=True)
    cannot = [] if allow_unjudged else unjudged(rules, c)
    return CompareResult(c, tuple(tripped), tuple(cannot))


def _document(side: Side, name: str) -> Document:
    """_document reads one side: a file by its path, a document, or a typed result by the
    document it keeps."""
    from redline.compare.documents import load, read

    if isinstance(side, (str, os.PathLike)):
        return load(os.fspath(side))
    if isinstance(side, Mapping):
        return read(dict(side), name)
    for attr in ("document", "data"):  # FindResult, Result
        data = getattr(side, attr, None)
        if isinstance(data, dict):
            return read(data, name)
    result = getattr(side, "result", None)  # ScenarioResult
    if result is not None:
        return _document(result, name)
    return read(side, name)  # refused with one line: not a redline result
