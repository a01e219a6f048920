"""comparison: one result against a baseline, figure by figure, with a verdict on each."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from redline.compare import bootstrap, per_request, significance
from redline.compare.documents import LIMIT, OPTIMAL, STEADY, WHOLE_RUN, Document, Kind
from redline.compare.figures import ALL, Figure
from redline.compare.significance import Evidence, Verdict
from redline.compare.windows import WINDOW_S, Stretch, cut, whole, window_length

#: FIND_FIGURES: what each of a find result's answers is compared on.
FIND_FIGURES = {
    STEADY: ALL,
    OPTIMAL: (Figure.RPS, Figure.ERRORS, Figure.P99),
    LIMIT: (Figure.RPS, Figure.ERRORS, Figure.P99),
}


@dataclass
class Row:
    """Row is one figure of one stretch (``group``: "all", a request name, or a find
    answer) in both results: the values, the change (a ratio minus one, percentage points
    for the error rate), the windows' test and the verdict. ``p`` is Holm-adjusted; ``ci``
    is the change's 95 % bootstrap interval on the windows, in the change's units (with too
    few windows: a latency's on the requests, :mod:`redline.compare.per_request`; None for
    the others)."""

    group: str
    figure: Figure
    base: float | None
    new: float | None
    change: float | None
    evidence: Evidence
    p: float | None
    verdict: Verdict
    window_s: float | None
    ci: tuple[float, float] | None = None


@dataclass
class Comparison:
    """Comparison is ``new`` against ``base``: a row per figure and stretch, in table order,
    and the search facts (loads, stop reasons) of find results side by side."""

    base: Document
    new: Document
    rows: list[Row]
    facts: list[tuple[str, str, str]] = field(default_factory=list)

    def row(self, figure: Figure, group: str | None = None) -> Row | None:
        """row: the row of ``figure`` in ``group`` (default: the run-wide or steady-state
        stretch), None when the comparison has none."""
        g = group or self.headline_group
        return next((r for r in self.rows if r.figure is figure and r.group == g), None)

    @property
    def headline_group(self) -> str:
        """headline_group: the stretch a figure without a group means."""
        return self.rows[0].group if self.rows else ""

    @property
    def changed(self) -> list[Row]:
        """changed: the rows judged better or worse."""
        return [r for r in self.rows if r.verdict in (Verdict.BETTER, Verdict.WORSE)]


def compare(base: Document, new: Document, window_s: float = WINDOW_S) -> Comparison:
    """compare judges ``new`` against ``base`` (both results of the same kind: runs, or
    finds) on the windows of their stretches; :class:`RedlineError` if the kinds differ."""
    from redline.errors import RedlineError

    if base.kind is not new.kind:
        raise RedlineError(
            f"cannot compare a {base.kind.value} result ({base.label}) with a "
            f"{new.kind.value} result ({new.label})"
        )
    plan = FIND_FIGURES if base.kind is Kind.FIND else None
    # A run's request names are tested together (Holm across them); the run-wide stretch is
    # one question of its own, and so is each of a find's answers.
    family = [g for g in base.stretches if g != WHOLE_RUN] if base.kind is Kind.RUN else []
    rows = compare_stretches(base.stretches, new.stretches, window_s, plan=plan, family=family)
    facts = [(k, v, new.facts.get(k, "–")) for k, v in base.facts.items()]
    return Comparison(base, new, rows, facts)


def compare_stretches(
    base: Mapping[str, Stretch],
    new: Mapping[str, Stretch],
    window_s: float = WINDOW_S,
    plan: Mapping[str, tuple[Figure, ...]] | None = None,
    family: Collection[str] | None = None,
) -> list[Row]:
    """compare_stretches compares the stretches the two results share, by name, on the
    figures ``plan`` lists for each (default: all). The p-values of one figure are
    Holm-corrected across the stretches in ``family`` (request names tested together;
    default: every stretch, empty: none); the others keep their own."""
    rows: list[Row] = []
    for group in [g for g in base if g in new]:
        a, b = base[group], new[group]
        wanted = (plan or {}).get(group, ALL)
        w = window_length(a, b, window_s) if a.snapshots and b.snapshots else None
        ca = cut(a, w) if w else []
        cb = cut(b, w) if w else []
        wa = [x.figures() for x in ca]
        wb = [x.figures() for x in cb]
        ha, hb = whole(a), whole(b)
        changes = {f: significance.change(f, ha.get(f), hb.get(f)) for f in wanted}
        cis = bootstrap.intervals(ca, cb, centres=changes)
        few = w is not None and min(len(ca), len(cb)) < significance.MIN_WINDOWS
        ra, rb = (per_request.requests(a), per_request.requests(b)) if few else (None, None)
        for f in wanted:
            if f not in ha and f not in hb:
                continue
            sa, sb = _sample(wa, f), _sample(wb, f)
            ev = significance.mann_whitney(sa, sb)
            ci = cis[f]
            judged = per_request.judge(f, ra, rb) if few and changes[f] is not None else None
            if judged is not None:
                ev = Evidence(judged.p, judged.shift, ev.n, judged.requests)
                ci = judged.ci
            rows.append(
                Row(group, f, ha.get(f), hb.get(f), changes[f], ev, ev.p, Verdict.UNKNOWN, w, ci)
            )
    together = set(base if family is None else family)
    for f in ALL:
        mine = [r for r in rows if r.figure is f and r.group in together]
        for r, p in zip(mine, significance.holm([r.evidence.p for r in mine]), strict=True):
            r.p = p
        for r in rows:
            if r.figure is f:
                r.verdict = significance.verdict(f, r.change, r.evidence, r.p, r.ci)
    return rows


def _sample(ws: list[dict[Figure, float | None]], f: Figure) -> list[float]:
    return [float(v) for w in ws if (v := w.get(f)) is not None]
