"""redline: HTTP load testing that answers, truthfully, what throughput a service sustains,
how its latency is distributed, where it runs best and how it fails.

The engine is Rust (``redline._engine``); this package is its typed Python face and CLI.
"""

from redline._engine import __version__
from redline.errors import ConfigError, RedlineError, UnreachableError
from redline.runs.options import IgnoredOption, Stage
from redline.runs.result import Latency, Result, merge_histograms
from redline.runs.run_options import RunOptions
from redline.runs.runner import defaults, run
from redline.runs.target import Target

__all__ = [
    "RunOptions",
    "__version__",
    "run",
    "defaults",
    "Result",
    "Latency",
    "Stage",
    "IgnoredOption",
    "Target",
    "merge_histograms",
    "RedlineError",
    "ConfigError",
    "UnreachableError",
]
