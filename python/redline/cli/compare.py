"""compare: the ``redline compare`` subcommand (parsing and printing; the work is
:mod:`redline.compare`'s parts; :func:`redline.compare` is the library's one call)."""

from __future__ import annotations

import argparse
from pathlib import Path

from redline.errors import RedlineError

EXIT_FAILED = 1

#: EXIT_UNJUDGED: no rule tripped, but a gated figure could not be judged (too few windows):
#: a gate that cannot tell must not pass (``--allow-unjudged`` lets it).
EXIT_UNJUDGED = 3

COMPARE_DESCRIPTION = """\
Compare redline results (of `redline run --json` or `redline find --json`) with the first,
the baseline: goodput, error rate and latency percentiles (per request name for a scenario;
each of the four answers for a find), with a verdict: better, worse or ~ (no significant
change). The verdict rests on the runs' interval data: each run is cut into windows of about
5 s, and the two runs' window figures are compared with a Mann-Whitney test (Holm-corrected
across request names); a change also has to be at least 5 % (0.1 points for the error rate).
With too few windows (fewer than 4 a side), a latency is judged from the requests instead
(a bootstrap over the histograms' requests, when each side has enough beyond the percentile).
Exit status: 0, or 1 when a --fail-on rule trips; 3 when none trips but a gated figure could
not be judged (unless --allow-unjudged); 2 on bad input."""

COMPARE_EXAMPLES = """\
examples:
  redline compare base.json new.json
  redline compare base.json new.json --fail-on 'p99:+10%' --fail-on 'rps:-5%'
  redline compare 1-worker.json 2-workers.json 4-workers.json --report workers.html
  redline compare base.json new.json --markdown "$GITHUB_STEP_SUMMARY\""""


def add_compare_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:  # type: ignore[type-arg]
    """add_compare_parser defines ``redline compare``."""
    c = sub.add_parser(
        "compare",
        help="compare results with a baseline: better, worse or no significant change",
        description=COMPARE_DESCRIPTION,
        epilog=COMPARE_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    c.add_argument("base", metavar="BASE.json", help="the baseline result")
    c.add_argument("new", metavar="NEW.json", nargs="+", help="results to compare with it")
    c.add_argument(
        "--fail-on",
        action="append",
        default=[],
        metavar="[NAME:]FIGURE:TOL",
        help="exit 1 when FIGURE got significantly worse by more than TOL: 'p99:+10%%',"
        " 'rps:-5%%', 'p99.9:+20ms', 'errors:+1%%' (points); @FILE reads one rule a line",
    )
    c.add_argument(
        "--allow-unjudged",
        action="store_true",
        help="let a --fail-on figure that cannot be judged (too few windows) pass; by default"
        " it fails the gate with exit status 3",
    )
    c.add_argument(
        "--window",
        metavar="SECONDS",
        type=float,
        default=None,
        help="window length aimed at (default 5; shorter runs get shorter windows)",
    )
    c.add_argument("--markdown", metavar="FILE", help="write a GitHub-flavoured Markdown table")
    c.add_argument("--report", metavar="FILE.html", help="write an HTML page with the charts")
    c.set_defaults(func=cmd_compare)
    return c


def cmd_compare(args: argparse.Namespace) -> int:
    """cmd_compare loads the results, prints the comparison, writes the files asked for and
    applies the --fail-on rules."""
    from redline.compare import compare as compare_documents
    from redline.compare import (
        failures,
        load,
        parse_rules,
        render_html,
        render_markdown,
        render_text,
        unjudged,
    )
    from redline.compare.windows import WINDOW_S

    rules = parse_rules(args.fail_on)
    window = WINDOW_S if args.window is None else args.window
    if not window > 0:
        raise RedlineError(f"--window: expected seconds > 0, got {args.window:g}")
    for flag, path in (("--markdown", args.markdown), ("--report", args.report)):
        if path and not Path(path).resolve().parent.is_dir():
            raise RedlineError(
                f"{flag}: directory {str(Path(path).resolve().parent)!r} does not exist"
            )
    base = load(args.base)
    comparisons = [compare_documents(base, load(p), window) for p in args.new]
    failed = [ln for c in comparisons for ln in failures(rules, c, allow_unjudged=True)]
    open_rules = [ln for c in comparisons for ln in unjudged(rules, c)]
    if args.allow_unjudged:
        open_rules = []
    print(render_text(comparisons), end="")
    if args.markdown:
        Path(args.markdown).write_text(render_markdown(comparisons))
    if args.report:
        Path(args.report).write_text(render_html(comparisons))
    for line in failed:
        print(f"FAIL: {line}")
    for line in open_rules:
        print(f"FAIL: {line}")
    if failed:
        return EXIT_FAILED
    return EXIT_UNJUDGED if open_rules else 0
