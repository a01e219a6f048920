"""analysis: the numerics behind ``redline find``'s answers. Pure functions of the steps and
series a search measured (numpy/scipy/kneed), no engine and no I/O:

- :mod:`.steady`: the warm-up cut (MSER) and the steadiness verdict for a step, its one home;
- :mod:`.usl`: the Universal Scalability Law fit and its predicted peak;
- :mod:`.knee`: the knee of throughput against load, Kleinrock's power;
- :mod:`.checks`: Little's law per step, the leak check on resource series;
- :mod:`.step` and :mod:`.answers`: the step record and the four answers;
- :mod:`.sentences`: the four answers said in words.
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from redline.analysis.answers import (
        analyse,
        build_answers,
        concurrency,
        fit_steps,
        limit_step,
        optimal_step,
    )
    from redline.analysis.checks import LittleCheck, Trend, leak_check, leak_checks, little_check
    from redline.analysis.knee import Knee, best_power, find_knee, power
    from redline.analysis.sentences import answer_sentences, fmt_load, load_key
    from redline.analysis.steady import mser5_cut, mser_cut, steady_counts, steady_window
    from redline.analysis.step import StepResult
    from redline.analysis.usl import UslFit, fit_usl, usl_throughput

#: _HOME: the module each name of the package lives in. The package imports them when first
#: asked (PEP 562), so a module that needs one pure-Python piece (``outcome``, ``step``) does
#: not pay for scipy: ``redline compare`` spent 1.3 s of its 2 s importing scipy.stats and
#: scipy.optimize through this package's eager imports.
_HOME = {
    **dict.fromkeys(
        (
            "analyse",
            "build_answers",
            "concurrency",
            "fit_steps",
            "limit_step",
            "optimal_step",
        ),
        "answers",
    ),
    **dict.fromkeys(("answer_sentences", "fmt_load", "load_key"), "sentences"),
    **dict.fromkeys(
        ("LittleCheck", "Trend", "leak_check", "leak_checks", "little_check"), "checks"
    ),
    **dict.fromkeys(("Knee", "best_power", "find_knee", "power"), "knee"),
    **dict.fromkeys(
        ("mser5_cut", "mser_cut", "steady_counts", "steady_window"),
        "steady",
    ),
    "StepResult": "step",
    **dict.fromkeys(("UslFit", "fit_usl", "usl_throughput"), "usl"),
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'redline.analysis' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"redline.analysis.{home}"), name)
    globals()[name] = value
    return value


__all__ = [
    "Knee",
    "LittleCheck",
    "StepResult",
    "Trend",
    "UslFit",
    "analyse",
    "answer_sentences",
    "best_power",
    "build_answers",
    "concurrency",
    "find_knee",
    "fit_steps",
    "fit_usl",
    "fmt_load",
    "leak_check",
    "leak_checks",
    "limit_step",
    "little_check",
    "load_key",
    "mser5_cut",
    "mser_cut",
    "optimal_step",
    "power",
    "steady_counts",
    "steady_window",
    "usl_throughput",
]
