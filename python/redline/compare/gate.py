"""gate: the CI gate, ``--fail-on 'p99:+10%' --fail-on 'rps:-5%'``.

A rule trips when its figure came out *worse* (significantly, beyond the minimum effect) and
by more than its tolerance; a change within the noise never trips it, however large it looks.

Spelling: ``[NAME:]FIGURE:TOLERANCE``. FIGURE is ``rps`` (goodput), ``errors`` (error rate),
``p50``, ``p90``, ``p99`` or ``p99.9``; NAME a request name or a find answer (``steady
state``, ``optimal``, ``limit``), by default the run-wide (or steady-state) figures.
TOLERANCE is a percentage of the base (``+10%``), or for latency milliseconds (``+5ms``);
the error rate's is in percentage points (``errors:+1%`` trips when the error rate rose by
more than one point, 0.2 % -> 1.5 %). A sign, when given, must be the figure's worse
direction (``rps:-5%``, ``p99:+10%``). ``@FILE`` reads one rule a line (``#`` comments).

A rule whose figure cannot be judged (too few windows, and for a latency too few requests to
judge it from them; a request name without interval data) never passes silently: it is a
failure of its own, "cannot judge p99: 3+3 windows, need 4; ...", unless the caller allows
unjudged figures (``--allow-unjudged``). A smoke run too short to tell must not go green on a
large regression.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from redline.compare.comparison import Comparison, Row
from redline.compare.figures import Figure, parse_figure
from redline.compare.significance import MIN_WINDOWS, Verdict
from redline.errors import ConfigError

_TOLERANCE = re.compile(r"^([+-]?)(\d+(?:\.\d+)?|\.\d+)\s*(%|pp|ms)$")


@dataclass(frozen=True)
class Rule:
    """Rule is one ``--fail-on``: the figure (in ``group``, None for the headline stretch)
    that may get worse by at most ``tolerance`` in ``unit`` (``%``, ``pp`` or ``ms``)."""

    text: str
    figure: Figure
    tolerance: float
    unit: str
    group: str | None = None

    def exceeded(self, row: Row) -> bool:
        """exceeded: the row got worse, significantly, by more than the tolerance."""
        if row.verdict is not Verdict.WORSE or row.base is None or row.new is None:
            return False
        if self.unit == "ms":
            return abs(row.new - row.base) > self.tolerance
        if self.figure is Figure.ERRORS:
            return row.new - row.base > self.tolerance / 100.0
        return row.change is not None and abs(row.change) > self.tolerance / 100.0


def parse_rule(text: str) -> Rule:
    """parse_rule reads one ``[NAME:]FIGURE:TOLERANCE``; :class:`ConfigError` says what is
    wrong in one line."""
    head, sep, tol = text.strip().rpartition(":")
    if not sep or not head:
        raise ConfigError(f"--fail-on {text!r}: expected FIGURE:TOLERANCE, e.g. 'p99:+10%'")
    group, _, fig = head.rpartition(":")
    try:
        figure = parse_figure(fig)
    except ValueError as e:
        raise ConfigError(f"--fail-on {text!r}: {e}") from None
    m = _TOLERANCE.match(tol.strip())
    if m is None:
        raise ConfigError(f"--fail-on {text!r}: tolerance {tol!r} is not like +10%, -5% or +5ms")
    sign, number, unit = m.groups()
    worse = "+" if not figure.higher_is_better else "-"
    if sign and sign != worse:
        raise ConfigError(
            f"--fail-on {text!r}: {figure.value} gets worse as it "
            f"{'rises' if worse == '+' else 'falls'}; write {figure.value}:{worse}{number}{unit}"
        )
    if unit == "ms" and figure.quantile is None:
        raise ConfigError(f"--fail-on {text!r}: only a latency takes a tolerance in ms")
    if unit == "pp" and figure is not Figure.ERRORS:
        raise ConfigError(f"--fail-on {text!r}: only the error rate takes percentage points")
    return Rule(text.strip(), figure, float(number), unit, group.strip() or None)


def parse_rules(specs: Iterable[str]) -> list[Rule]:
    """parse_rules reads ``--fail-on`` values, expanding ``@FILE`` into its lines."""
    rules: list[Rule] = []
    for spec in specs:
        if spec.startswith("@"):
            try:
                lines = Path(spec[1:]).read_text().splitlines()
            except OSError as e:
                raise ConfigError(f"--fail-on {spec!r}: {e.strerror or e}") from e
            rules += [parse_rule(x) for x in (ln.split("#")[0].strip() for ln in lines) if x]
        else:
            rules.append(parse_rule(spec))
    return rules


def failures(
    rules: Iterable[Rule], comparison: Comparison, *, allow_unjudged: bool = False
) -> list[str]:
    """failures: a line for each rule the comparison trips, naming the figure, the change
    and the tolerance, then (unless ``allow_unjudged``) one for each rule whose figure could
    not be judged (:func:`unjudged`). A rule naming a stretch the results do not have raises
    :class:`ConfigError` (a typo must not pass the gate)."""
    rules = list(rules)
    out = [
        _line(rule, row, comparison) for rule, row in _rows(rules, comparison) if rule.exceeded(row)
    ]
    return out if allow_unjudged else out + unjudged(rules, comparison)


def unjudged(rules: Iterable[Rule], comparison: Comparison) -> list[str]:
    """unjudged: a line for each rule whose figure the comparison could not judge (verdict
    "?"), saying why and what would let it: "cannot judge p99: 3+3 windows, need 4; run
    longer or use --interval"."""
    return [
        _why(rule, row, comparison)
        for rule, row in _rows(list(rules), comparison)
        if row.verdict is Verdict.UNKNOWN
    ]


def _rows(rules: list[Rule], comparison: Comparison) -> list[tuple[Rule, Row]]:
    out = []
    for rule in rules:
        row = comparison.row(rule.figure, rule.group)
        if row is None:
            where = f" in {rule.group!r}" if rule.group else ""
            groups = ", ".join(sorted({r.group for r in comparison.rows}))
            raise ConfigError(
                f"--fail-on {rule.text!r}: no {rule.figure.value}{where} to judge"
                f" (compared: {groups})"
            )
        out.append((rule, row))
    return out


def _why(rule: Rule, row: Row, comparison: Comparison) -> str:
    from redline.compare.per_request import needed

    where = "" if row.group == comparison.headline_group else f" in {row.group!r}"
    head = f"cannot judge {rule.figure.value}{where}"
    if row.window_s is None:
        return (
            f"{head}: no interval data (the results keep it for the whole run only);"
            f" gate on the run-wide figure, --fail-on {rule.text!r} is not judged"
        )
    if row.base is None or row.new is None or row.change is None:
        return f"{head}: no change to judge (nothing answered on a side, or a base of 0)"
    a, b = row.evidence.n
    why = f"{head}: {a}+{b} windows, need {MIN_WINDOWS}"
    if rule.figure.quantile is not None:
        why += f" (or {needed(rule.figure)} requests a side with histograms)"
    return f"{why}; run longer or use --interval"


def _line(rule: Rule, row: Row, comparison: Comparison) -> str:
    from redline.compare.tables import shown, shown_change, shown_ci

    where = "" if row.group == comparison.headline_group else f"{row.group}: "
    p = f", p={row.p:.3g}" if row.p is not None else ""
    ci = f" {shown_ci(row)}" if row.ci is not None else ""
    return (
        f"{where}{row.figure.label} got worse by {shown_change(row)}{ci} "
        f"({shown(row.figure, row.base)} -> {shown(row.figure, row.new)}{p}) in "
        f"{comparison.new.label}, beyond --fail-on {rule.text}"
    )
