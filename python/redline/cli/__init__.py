"""cli: the ``redline`` command line, and nothing that measures: it parses arguments and calls
the same functions a Python user calls (:func:`redline.run`, :class:`redline.Target`,
:func:`redline.find.find`, ...).

- :mod:`.commands`: the top-level parser (:func:`build_parser`, every subcommand registered)
  and :func:`main` (the ``redline`` script, ``python -m redline``);
- :mod:`.run`, :mod:`.target`: ``redline run URL`` and ``redline target``;
- :mod:`.run_flags`: the run options' flags (:class:`redline.RunOptions`), each defined once,
  which ``redline run``, ``redline find`` and scenarios take;
- :mod:`.scenario`: ``redline run SCENARIO.py`` and ``redline inspect``;
- :mod:`.cluster`, :mod:`.live`: the ``--cluster`` and live flags, ``redline ui``;
- :mod:`.report`, :mod:`.compare`: ``redline report``, ``redline compare``;
- :mod:`.find`, :mod:`.find_flags`, :mod:`.experiment`: ``redline find`` and ``redline demo``,
  the search's flags as :func:`redline.find.finder.find`'s keywords, ``--vary``.

Every subcommand is here and registered by :mod:`.commands`; no feature imports the command
line (the features' library functions are what it calls).

:func:`main` and :func:`build_parser` are named here but loaded on first use (pyproject's entry
point is ``redline.cli:main``): :mod:`.find` and :mod:`.scenario` import
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
