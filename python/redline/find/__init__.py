"""find: ``redline find``, the capacity search, and what it owns.

- :mod:`.result`: :func:`find`, the library's search (``redline.find(url)``), and its
  typed answers (:class:`~.result.FindResult`);
- :mod:`.finder`: the search as a function of the document: one live engine run, the search
  over it, the confirmation at the answer and which step is the steady answer;
- :mod:`.live_run`: the live engine run the search drives, with the generator's CPU and a
  monitor on its clock; :mod:`.throughput`: what ``--throughput`` counts;
- :mod:`.document`: the result document, its notes, the answers in sentences;
- :mod:`.search`: how the search moves (sweep, bisection, recovery) and holds each step;
  :mod:`.plan`: the settings it moves by; :mod:`.ending`: how it ends (the outcome, a
  collapse, the exceptions that stop it early);
- :mod:`.reader`: a step's snapshots read (steady, enough) into the :class:`.step.Step`
  they measured;
- :mod:`.judge`: the named stop conditions that hold for a step, against the steps before it;
- :mod:`.rules`: the conditions' thresholds (with the figures behind them), the SLO, the
  one-step rules; :mod:`.step`: the search's step;
- :mod:`.steps`: a step's figures from its interval snapshots;
- :mod:`.view`: the live view and the outputs (the command line, ``redline find`` and
  ``redline demo``'s parser and its flags as the search's keywords, is
  :mod:`redline.cli.find`'s); :mod:`.plan` also holds the run options whose default differs
  in a search;
- :mod:`.demo`: ``redline demo`` (``make demo``): a search of the bundled taskqueue, with the
  services it needs started (tethered, watched by :mod:`redline.service.monitor`) and stopped.

    >>> import redline
    >>> result = redline.find("http://127.0.0.1:8080/", model="closed", max_time=60)
    >>> result.answers.limit.capacity_rps
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from redline.find.finder import LiveRun, answers_text, steady_answer, write_json
    from redline.find.result import FindResult, find

__all__ = ["FindResult", "LiveRun", "answers_text", "find", "steady_answer", "write_json"]


def __getattr__(name: str) -> Any:
    # Loaded on first use: the search pulls in numpy, which `redline --help` and every
    # subcommand but find must not pay for at start-up (tests/test_startup.py).
    if name in ("find", "FindResult"):
        from redline.find import result

        return getattr(result, name)
    if name in __all__:
        from redline.find import finder

        return getattr(finder, name)
    raise AttributeError(f"module 'redline.find' has no attribute {name!r}")
