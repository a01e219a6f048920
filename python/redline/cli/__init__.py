"""cli: the ``redline`` command line, and nothing that measures: it parses arguments and calls
the same functions a Python user calls (:func:`redline.run`, :class:`redline.Target`,
:func:`redline.find.find`, ...).

- :mod:`.commands`: the top-level parser (:func:`build_parser`, every subcommand registered),
  :func:`main` (the ``redline`` script, ``python -m redline``), and the two subcommands that
  belong to no feature folder: ``redline run`` and ``redline target``;
- :mod:`.run_flags`: the run options' flags (:class:`redline.RunOptions`), each defined once,
  which ``redline run``, ``redline find`` and scenarios take;
- :mod:`.scenario`: ``redline run SCENARIO.py`` and ``redline inspect``;
- :mod:`.cluster`, :mod:`.live`: the ``--cluster`` and live flags, ``redline ui``;
- :mod:`.report`, :mod:`.compare`: ``redline report``, ``redline compare``.

The features' subcommands still in their folders (``find/command.py``,
``experiment/command.py``) are registered by :mod:`.commands`; they
move here one by one (issue 37), so that no feature imports the command line.

:func:`main` and :func:`build_parser` are named here but loaded on first use (pyproject's entry
point is ``redline.cli:main``): ``find/command.py`` and :mod:`.scenario` import
:mod:`.run_flags`, which runs this file first, and must not import the whole command line,
which imports them.
"""

from __future__ import annotations

from typing import Any

from redline.exports import lazy_attribute

_HOME = {"main": "commands", "build_parser": "commands"}


def __getattr__(name: str) -> Any:
    return lazy_attribute(__name__, _HOME, name)


__all__ = ["build_parser", "main"]
