"""analysis: the numerics behind ``redline find``'s answers. Pure functions of the steps and
series a search measured (numpy/scipy/kneed), no engine and no I/O:

- :mod:`.steady`: MSER-5 warm-up cut and the steadiness verdict for a step;
- :mod:`.usl`: the Universal Scalability Law fit and its predicted peak;
- :mod:`.knee`: the knee of throughput against load, Kleinrock's power;
- :mod:`.checks`: Little's law per step, the leak check on resource series;
- :mod:`.step` and :mod:`.answers`: the step record and the four answers.
"""

from redline.analysis.answers import (
    analyse,
    answer_sentences,
    build_answers,
    concurrency,
    fit_steps,
    fmt_load,
    limit_step,
    load_key,
    optimal_step,
)
from redline.analysis.checks import LittleCheck, Trend, leak_check, leak_checks, little_check
from redline.analysis.knee import Knee, best_power, find_knee, power
from redline.analysis.steady import (
    Steadiness,
    SteadyPolicy,
    is_steady,
    judge_steadiness,
    mser5_cut,
    mser_cut,
)
from redline.analysis.step import StepResult
from redline.analysis.usl import UslFit, fit_usl, usl_throughput

__all__ = [
    "Knee",
    "LittleCheck",
    "Steadiness",
    "SteadyPolicy",
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
    "is_steady",
    "judge_steadiness",
    "leak_check",
    "leak_checks",
    "limit_step",
    "little_check",
    "load_key",
    "mser5_cut",
    "mser_cut",
    "optimal_step",
    "power",
    "usl_throughput",
]
