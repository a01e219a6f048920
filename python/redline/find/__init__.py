"""find: ``redline find``, the capacity search, and what it owns.

- :mod:`.finder`: :func:`find` as a function: one live engine run, the search over it, the
  confirmation at the answer, the four answers and the result document;
- :mod:`.search`: how the search moves (sweep, bisection, recovery) and measures each step;
- :mod:`.judge`: the named stop conditions that hold for a step, against the steps before it;
- :mod:`.rules`: the conditions' thresholds (with the figures behind them), the SLO, the
  one-step rules; :mod:`.step`: the search's step;
- :mod:`.steps`: a step's figures from its interval snapshots;
- :mod:`.command`, :mod:`.flags`, :mod:`.view`: the command line (``redline find`` and
  ``redline demo``'s parser), its flags as :func:`find`'s keywords, and the live view and
  outputs.

    >>> import redline.find
    >>> result = redline.find.find("http://127.0.0.1:8080/", model="closed", max_time=60)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from redline.find.finder import LiveRun, answers_text, find, steady_answer, write_json

__all__ = ["LiveRun", "answers_text", "find", "steady_answer", "write_json"]


def __getattr__(name: str) -> Any:
    # Loaded on first use: the search pulls in numpy, which `redline --help` and every
    # subcommand but find must not pay for at start-up (tests/test_startup.py).
    if name in __all__:
        from redline.find import finder

        return getattr(finder, name)
    raise AttributeError(f"module 'redline.find' has no attribute {name!r}")
