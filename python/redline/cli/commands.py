"""commands: the ``redline`` command: the top-level parser with every subcommand registered
(each defined in its own module: :mod:`.run`, :mod:`.target`, :mod:`.find`, ...) and
:func:`main`, the console entry point. Nothing here measures anything."""

from __future__ import annotations

import argparse
import os
import re
import sys
from typing import Any

from redline import __version__
from redline.cli.compare import add_compare_parser
from redline.cli.find import add_demo_parser, add_find_parser
from redline.cli.live import add_ui_parser, cmd_ui
from redline.cli.report import add_report_parser
from redline.cli.run import add_run_parser, cmd_run
from redline.cli.scenario import add_inspect_parser
from redline.cli.target import add_target_parser
from redline.cli.termination import Termination
from redline.errors import RedlineError
from redline.runs.nofile import raise_open_file_limit

EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line on stderr and exit code 2, and whose
    options take a negative value as written (``-d -5s``: argparse reads ``-5s`` as an option
    and says only "expected one argument"; here the value reaches the check that says what
    is wrong with it)."""

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:  # type: ignore[override]
        words = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(_negatives_joined(self, words), namespace)

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")

    def _get_formatter(self) -> argparse.HelpFormatter:
        # argparse's formatter, made for every argument added, imports shutil (with bz2 and
        # lzma) to read the terminal's width: ~9 M instructions of every start. The same width,
        # read as shutil.get_terminal_size reads it.
        return self.formatter_class(prog=self.prog, width=_columns() - 2)  # type: ignore[call-arg]


def _columns() -> int:
    """_columns: the terminal's width as shutil.get_terminal_size gives it: $COLUMNS, else
    stdout's terminal, else 80."""
    try:
        columns = int(os.environ.get("COLUMNS", 0))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


#: _NEGATIVE: a word that is a negative number, with a unit or not (-5, -5s, -0.5).
_NEGATIVE = re.compile(r"^-\.?\d")


def _negatives_joined(parser: argparse.ArgumentParser, words: list[str]) -> list[str]:
    """_negatives_joined writes each option's negative value into the option's word
    (``-d -5s`` -> ``--duration=-5s``), so argparse takes it as the value."""
    out: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        action = parser._option_string_actions.get(word)  # noqa: SLF001  (argparse's own table)
        takes_one = action is not None and action.nargs is None and action.option_strings
        if takes_one and i + 1 < len(words) and _NEGATIVE.match(words[i + 1]):
            out.append(f"{action.option_strings[-1]}={words[i + 1]}")  # type: ignore[union-attr]
            i += 2
            continue
        if word == "--":
            return out + words[i:]
        out.append(word)
        i += 1
    return out


def build_parser() -> argparse.ArgumentParser:
    """build_parser defines every subcommand and flag; each subcommand adds its own parser."""
    p = _Parser(prog="redline", description="HTTP load testing that tells the truth.")
    p.add_argument("--version", action="version", version=f"redline {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    add_run_parser(sub)
    add_target_parser(sub)
    add_report_parser(sub)
    add_find_parser(sub)
    add_demo_parser(sub)
    add_inspect_parser(sub)
    add_compare_parser(sub)
    add_ui_parser(sub).set_defaults(func=lambda args: cmd_ui(args, run_command))
    return p


def run_command(argv: list[str], live: Any) -> int:
    """run_command runs ``redline run ARGV`` watched by ``live`` (the runs ``redline ui``
    starts: the command line it shows is the one parsed here)."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit:
        raise RedlineError(f"redline {' '.join(argv)}: refused (the reason is on stderr)") from None
    return cmd_run(args, live)


def main(argv: list[str] | None = None) -> int:
    """main is the console entry point; user errors become one line and exit code 2, and a
    SIGTERM ends the command as Ctrl-C does, then exits 143 (:mod:`.termination`)."""
    args = build_parser().parse_args(argv)
    raise_open_file_limit()  # the connections -c asks for, as far as the hard limit allows
    with Termination() as term:
        try:
            return term.status(int(args.func(args)))
        except RedlineError as e:
            print(f"redline: error: {e}", file=sys.stderr)
            return EXIT_USAGE
        except KeyboardInterrupt:
            print("redline: " + ("terminated" if term.received else "interrupted"), file=sys.stderr)
            return term.status(130)
        except BrokenPipeError:
            # Whoever read the output went away (`redline ... | head`, a supervisor that closed
            # the pipe): nothing more can be said there. Point stdout at /dev/null so that the
            # interpreter's last flush does not fail again on the way out.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            return 1


if __name__ == "__main__":
    sys.exit(main())
