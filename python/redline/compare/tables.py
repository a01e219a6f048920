"""tables: a comparison as text for the terminal and as a GitHub-flavoured Markdown table.

Columns as benchstat prints them: base, new, the change with its 95 % confidence interval,
and the verdict with its evidence (the Holm-adjusted p-value and the windows on each side);
"~" is no significant change.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from redline.compare.comparison import Comparison, Row
from redline.compare.figures import Figure
from redline.compare.significance import Verdict


def shown(figure: Figure, v: float | None) -> str:
    """shown writes a figure's value with its unit."""
    if v is None or not math.isfinite(v):
        return "–"
    if figure is Figure.ERRORS:
        return f"{100 * v:.2f}%"
    if figure is Figure.RPS:
        return f"{v:,.0f}/s" if v >= 100 else f"{v:.3g}/s"
    return f"{v:.3g} ms" if v < 1000 else f"{v:,.0f} ms"


def shown_change(row: Row) -> str:
    """shown_change writes the change: a signed percentage, points for the error rate."""
    if row.change is None:
        return "–"
    if not row.figure.relative:
        return f"{100 * row.change:+.2f}pp"
    return f"{100 * row.change:+.1f}%"


def shown_ci(row: Row) -> str:
    """shown_ci writes the change's confidence interval in the change's units, e.g.
    ``[+8.1, +16.2]`` (percent) or ``[-0.05, +0.30]`` (points); "" without one."""
    if row.ci is None:
        return ""
    lo, hi = (100 * x for x in row.ci)
    if not row.figure.relative:
        return f"[{lo:+.2f}, {hi:+.2f}]"
    return f"[{lo:+.1f}, {hi:+.1f}]"


def evidence(row: Row) -> str:
    """evidence: what the verdict rests on, e.g. ``p=0.002 n=12+12``."""
    n = f"n={row.evidence.n[0]}+{row.evidence.n[1]}"
    if row.window_s is None:
        return "no interval data"
    if row.p is None:
        return f"too few windows ({n})"
    if row.evidence.requests is not None:
        a, b = row.evidence.requests
        return f"p={row.p:.2g} requests={a}+{b} ({n} windows)"
    return f"p={row.p:.2g} {n}"


def verdict_word(row: Row) -> str:
    """verdict_word: the verdict as the table says it."""
    return row.verdict.value


def render_text(comparisons: Sequence[Comparison]) -> str:
    """render_text is the terminal's table: one block per result compared with the base."""
    if not comparisons:
        return ""
    base = comparisons[0].base
    out = [f"base: {base.label}: {base.description}"]
    for c in comparisons:
        out.append("")
        out.append(f"new:  {c.new.label}: {c.new.description}")
        out += _text_block(c)
    notes = _notes(comparisons)
    if notes:
        out.append("")
        out += notes
    return "\n".join(out) + "\n"


def _text_block(c: Comparison) -> list[str]:
    out: list[str] = []
    widths = (12, 12, 10, 18)
    group = None
    for r in c.rows:
        if r.group != group:
            group = r.group
            w = f", windows of {r.window_s:.3g} s" if r.window_s else ""
            out.append(f"  {group}{w}")
            out.append(
                f"    {'':<11}{'base':>{widths[0]}}{'new':>{widths[1]}}"
                f"{'change':>{widths[2]}}{'95% CI':>{widths[3]}}  verdict"
            )
        mark = "" if r.verdict in (Verdict.SAME, Verdict.UNKNOWN) else "  <--"
        out.append(
            f"    {r.figure.label:<11}{shown(r.figure, r.base):>{widths[0]}}"
            f"{shown(r.figure, r.new):>{widths[1]}}{shown_change(r):>{widths[2]}}"
            f"{shown_ci(r):>{widths[3]}}  {verdict_word(r):<7} ({evidence(r)}){mark}"
        )
    if c.facts:
        out.append("  search")
        for name, a, b in c.facts:
            same = "" if a == b else "  (changed)"
            out.append(f"    {name:<18}{a:>14}{b:>14}{same}")
    return out


def _notes(comparisons: Sequence[Comparison]) -> list[str]:
    rows = [r for c in comparisons for r in c.rows]
    notes = []
    if any(r.window_s is None for r in rows):
        notes.append(
            "Request names have whole-run figures only (the engine's interval snapshots are"
            " run-wide), so they are shown, not judged."
        )
    if any(r.p is None and r.window_s is not None for r in rows):
        notes.append("A figure with fewer than 4 windows a side is not judged: run longer.")
    notes.append(
        "~: no significant change (Mann–Whitney on per-window figures, p<0.05 after Holm"
        " across request names, a change of at least 5 %, 0.1 points for errors, and a 95%"
        " CI without 0). 95% CI: the change's bootstrap interval, resampling the windows"
        " (seeded)."
    )
    return notes


def render_markdown(comparisons: Sequence[Comparison]) -> str:
    """render_markdown is a GitHub-flavoured Markdown table per compared result (for a pull
    request comment or ``$GITHUB_STEP_SUMMARY``)."""
    if not comparisons:
        return ""
    base = comparisons[0].base
    out = ["## redline compare", "", f"Base: `{_md(base.label)}`, {_md(base.description)}."]
    for c in comparisons:
        worse = sum(r.verdict is Verdict.WORSE for r in c.rows)
        better = sum(r.verdict is Verdict.BETTER for r in c.rows)
        out += ["", f"### `{_md(c.new.label)}`: {worse} worse, {better} better", ""]
        out.append("| | figure | base | new | change | 95% CI | verdict | evidence |")
        out.append("| --- | --- | ---: | ---: | ---: | ---: | :---: | --- |")
        for r in c.rows:
            v = verdict_word(r)
            v = f"**{v}**" if r.verdict in (Verdict.BETTER, Verdict.WORSE) else v
            out.append(
                f"| {_md(r.group)} | {r.figure.label} | {shown(r.figure, r.base)} | "
                f"{shown(r.figure, r.new)} | {shown_change(r)} | {shown_ci(r)} | {v} |"
                f" {evidence(r)} |"
            )
        if c.facts:
            out += ["", "| search | base | new |", "| --- | ---: | ---: |"]
            out += [f"| {k} | {_md(a)} | {_md(b)} |" for k, a, b in c.facts]
    out += ["", *(f"_{n}_" for n in _notes(comparisons))]
    return "\n".join(out) + "\n"


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
