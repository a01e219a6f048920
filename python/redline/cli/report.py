"""report: the ``redline report`` subcommand (parsing only; the work is
:func:`redline.report.render.write_reports`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from redline.errors import RedlineError

REPORT_EXAMPLES = """\
examples:
  redline report find.json --html report.html --markdown report.md
  redline report run.json --html run.html --markdown run.md"""


def add_report_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:  # type: ignore[type-arg]
    """add_report_parser defines ``redline report``."""
    r = sub.add_parser(
        "report",
        help="render the HTML and Markdown reports again from a --json result",
        description=(
            "Render a `redline find --json` result as a self-contained HTML report (opens"
            " offline) and a Markdown summary, or a `redline run --json` result (a URL run or"
            " a scenario) as HTML and Markdown."
        ),
        epilog=REPORT_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    r.add_argument("result", metavar="RESULT.json", help="a find or run result (--json)")
    r.add_argument("--html", metavar="FILE", help="write the HTML report here")
    r.add_argument("--markdown", metavar="FILE", help="write the Markdown report here")
    r.set_defaults(func=cmd_report)
    return r


def cmd_report(args: argparse.Namespace) -> int:
    """cmd_report reads the result and writes the reports asked for."""
    # Imported here: the report pulls in numpy/scipy, which `redline run` must not pay for.
    from redline.report.render import load_result, write_reports

    if not args.html and not args.markdown:
        raise RedlineError("report: give --html and/or --markdown")
    for flag, path in (("--html", args.html), ("--markdown", args.markdown)):
        if path and not Path(path).resolve().parent.is_dir():
            raise RedlineError(
                f"{flag}: directory {str(Path(path).resolve().parent)!r} does not exist"
            )
    result = load_result(args.result)
    write_reports(result, args.html, args.markdown)
    for path in (args.html, args.markdown):
        if path:
            print(f"wrote {path}")
    return 0


def write_run_report(path: str | None, data: dict[str, Any]) -> None:
    """write_run_report writes ``redline run --report``'s HTML page (the report module, and the
    numerics it brings, load only when asked for)."""
    if path:
        from redline.report.render import render_run_html

        Path(path).write_text(render_run_html(data))
        print(f"wrote {path}", file=sys.stderr)
