"""running: a scenario run as a library call. :meth:`Scenario.run` and ``redline run
SCENARIO.py`` both come here: the scenario's declared profile with the caller's options
merged over it (:func:`prepare`), the plan run by the engine (watched live when a threshold
may abort it), and every threshold judged on the result (:class:`ScenarioResult`).

    result = scenario.run(users=5, duration="2s")
    result.passed, result.result.rps, [t.line for t in result.thresholds]
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, fields
from typing import Any, overload

from redline.errors import ConfigError
from redline.runs.result import Result
from redline.runs.run_options import RunOptions
from redline.scenario.compiler import Compiled, compile_scenario
from redline.scenario.profile import merge, run_options
from redline.scenario.scenario import PROFILE_KEYS
from redline.scenario.scenario import Scenario as Declared
from redline.scenario.thresholds import Threshold, verdicts
from redline.scenario.watch import Watch, split

#: PROFILED: the run options a scenario's profile declares too (its key there): one given by
#: the caller is merged over the file's (:func:`redline.scenario.profile.merge`).
PROFILED = {
    "connections": "users",
    "rate": "rate",
    "stages": "stages",
    "open_model": "open",
    "duration": "duration",
    "threads": "threads",
    "timeout": "timeout",
    "max_connections": "max_connections",
}

#: URL_ONLY: the run options of a URL run's single request (a scenario's requests are in its
#: file), with their flags.
URL_ONLY = {"method": "-m/--method", "headers": "-H/--header", "body": "--body"}


def plan_and_options(
    compiled: Compiled, given: dict[str, Any], host: str | None
) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """plan_and_options: the host URL, the plan and the run options (:func:`redline.run`'s
    keywords) of a compiled scenario with the caller's profile (``given``, profile keys; None:
    not given) merged over the file's."""
    url = host or compiled.host
    if not url:
        raise ConfigError(f"{compiled.file}: no host: give --host URL or Scenario(host=...)")
    return (url, *plan_only(compiled, given))


def plan_only(compiled: Compiled, given: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """plan_only: the plan and the run options of a compiled scenario (no host needed)."""
    profile = merge(compiled.profile, given)
    kw, plan_extra = run_options(profile, compiled.file)
    return {**compiled.plan, **plan_extra}, kw


def prepare(
    compiled: Compiled,
    host: str | None,
    given: dict[str, Any],
    options: RunOptions,
    spell: Callable[[str], str] = str,
) -> tuple[str, dict[str, Any], RunOptions]:
    """prepare: the host URL, the plan and the :class:`RunOptions` of a compiled scenario.
    ``given`` is the caller's profile (profile keys), merged over the file's; ``options`` the
    caller's other run options, passed through (``--http2``, TLS, ``interval`` …: a scenario
    speaks and reports as a URL run does); ``requests`` there is that many iterations in all,
    instead of the file's duration. A request option (``method``, ``headers``, ``body``) is a
    ConfigError, named by ``spell``: a scenario's requests are in its file."""
    url, plan, kw = plan_and_options(compiled, given, host)
    for name in URL_ONLY:
        if getattr(options, name):
            raise ConfigError(
                f"{spell(name)} applies to a URL run; a scenario's requests are in its file"
            )
    if options.requests:
        kw["requests"] = options.requests
        if given.get("duration") is None:
            kw.pop("duration", None)
    rest = {
        f.name: getattr(options, f.name)
        for f in fields(RunOptions)
        if f.name not in PROFILED and f.name not in URL_ONLY and f.name != "requests"
    }
    return url, plan, RunOptions(**{**rest, **kw})


def parse_thresholds(specs: Iterable[str]) -> tuple[list[Threshold], list[Watch]]:
    """parse_thresholds reads threshold specs (``SPEC`` or ``SPEC;abort=WINDOW``) into the
    thresholds judged at the end and the watches judged live; bad ones raise ConfigError
    before any load."""
    pairs = [split(t) for t in specs]
    return [t for t, _ in pairs], [w for _, w in pairs if w is not None]


def run_watched(
    url: str,
    plan: dict[str, Any] | None,
    opts: dict[str, Any],
    watches: list[Watch],
    progress: Any = None,
    cluster: Any = None,
    parts: Sequence[str] = (),
) -> tuple[Result, str | None]:
    """run_watched runs ``url`` (with the scenario ``plan``, or none for a URL run) with a
    live handle (``cluster``: a runner.ClusterOptions to run on injectors), feeding each
    interval snapshot to the watches and stopping the run when one fires; returns the
    result and the abort line. ``parts``: the deployment's parts watched beside it
    (``--watch`` specs, :mod:`redline.runs.watching`)."""
    from redline.runs.runner import build_config, drive, start_handle
    from redline.runs.watching import start_parts, with_parts

    config = build_config(url, plan, **opts)
    interval_s = float(config.get("interval_s", 1.0))
    watched = start_parts(parts)
    try:
        handle = start_handle(config, cluster)
        result, aborted = drive(handle, progress, watches, interval_s)
    finally:
        if watched is not None:
            watched.stop()
    return with_parts(result, watched), aborted


@dataclass(frozen=True)
class ThresholdVerdict:
    """ThresholdVerdict: one threshold as written (``p99<500ms``), whether it held, and its
    line with the value measured (``threshold p99<500ms failed: p99 was 612.00ms``)."""

    threshold: str
    held: bool
    line: str


@dataclass(frozen=True)
class ScenarioResult:
    """ScenarioResult: what a scenario run measured (``result``, the run's
    :class:`~redline.runs.result.Result`, its ``scenario`` part naming the file), each
    threshold judged on it, and the line of a threshold that aborted the run (None when none
    did). ``passed`` is the verdict ``redline run`` exits 0 on."""

    file: str
    host: str
    result: Result
    thresholds: tuple[ThresholdVerdict, ...]
    aborted: str | None = None

    @property
    def passed(self) -> bool:
        """passed: every threshold held and none aborted the run."""
        return self.aborted is None and all(t.held for t in self.thresholds)

    @property
    def failures(self) -> list[str]:
        """failures: the abort line, then one line per failed threshold."""
        lines = [t.line for t in self.thresholds if not t.held]
        return [self.aborted, *lines] if self.aborted else lines

    def to_json(self, indent: int | None = 2) -> str:
        """to_json renders the run's result document (``redline run SCENARIO.py --json``)."""
        return self.result.to_json(indent)


def judged(thresholds: list[Threshold], data: dict[str, Any]) -> tuple[ThresholdVerdict, ...]:
    """judged: each threshold's verdict on a result document."""
    return tuple(
        ThresholdVerdict(t.text, held, line)
        for t, (held, line) in zip(thresholds, verdicts(thresholds, data), strict=True)
    )


def run_compiled(
    compiled: Compiled,
    *,
    host: str | None = None,
    thresholds: Iterable[str] = (),
    progress: Callable[[dict[str, Any]], None] | None = None,
    watch: Sequence[str] = (),
    **overrides: Any,
) -> ScenarioResult:
    """run_compiled runs a compiled scenario against ``host`` (default: its own) with its
    profile and ``overrides`` merged over it: a profile key (``users``, ``rate``,
    ``duration``, ``stages``, ``iterations`` …; a load shape given replaces the declared one
    whole) or any other of :func:`redline.run`'s options (``http2``, ``interval``,
    ``requests`` …). Its thresholds and ``thresholds`` are judged on the result; one with
    ``;abort=WINDOW`` stops the run when it fails live. ``progress`` hears each interval's
    snapshot; ``watch``: the deployment's parts watched beside it (``--watch`` specs). A bad
    option is a ConfigError before any load."""
    given, passed = _split_overrides(overrides)
    url, plan, options = prepare(compiled, host, given, RunOptions(**passed))
    ends, watches = parse_thresholds([*thresholds, *compiled.thresholds])
    aborted = None
    if watches:
        result, aborted = run_watched(
            url, plan, options.as_kwargs(), watches, progress, None, watch
        )
    else:
        from redline.runs.runner import run

        result = run(url, options, progress=progress, plan=plan, watch=watch)
    if result.data.get("scenario") is not None:
        # The report names what ran (the engine knows the plan, not the file it came from).
        result.data["scenario"]["file"] = compiled.file
    return ScenarioResult(compiled.file, url, result, judged(ends, result.data), aborted)


def scenario_options(
    compiled: Compiled, host: str | None, overrides: dict[str, Any]
) -> tuple[str, dict[str, Any]]:
    """scenario_options: the host URL and :func:`redline.run`'s keywords (the ``plan`` among
    them) of a compiled scenario with ``overrides`` merged over its profile, as
    :func:`run_compiled` reads them (an experiment runs each configuration with them)."""
    given, passed = _split_overrides(overrides)
    url, plan, options = prepare(compiled, host, given, RunOptions(**passed))
    return url, {**options.as_kwargs(), "plan": plan}


#: _ALIASES: run options that a profile spells its own way, taken in either spelling.
_ALIASES = {"connections": "users", "open_model": "open"}


def _split_overrides(overrides: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """_split_overrides: the profile keys among ``overrides`` and the run options passed
    through; an option that is neither is a ConfigError naming both lists."""
    run_fields = {f.name for f in fields(RunOptions)}
    given: dict[str, Any] = {}
    passed: dict[str, Any] = {}
    for key, value in overrides.items():
        key = _ALIASES.get(key, key)
        if key in PROFILE_KEYS:
            given[key] = value
        elif key in run_fields and key not in PROFILED:
            passed[key] = value
        else:
            known = sorted(set(PROFILE_KEYS) | (run_fields - set(PROFILED)))
            raise ConfigError(f"unknown option {key!r} (options: {', '.join(known)})")
    return given, passed


class Scenario(Declared):
    """Scenario is what a scenario file declares (:class:`redline.scenario.scenario.Scenario`:
    flows, setup, data, profile, thresholds) that also runs itself, from a script as from a
    file: ``scenario.run(users=5)``. The declaration is kept apart so that the compiler,
    which reads it, does not depend on the runner."""

    def run(
        self,
        *,
        host: str | None = None,
        vars: dict[str, str] | None = None,
        thresholds: Iterable[str] = (),
        progress: Callable[[dict[str, Any]], None] | None = None,
        **overrides: Any,
    ) -> ScenarioResult:
        """run compiles the scenario (with the run variables ``vars``; a mistake is one
        ScenarioError naming the file and line) and runs it as :func:`run_compiled` does:
        against ``host`` (default: its own), its profile with ``overrides`` merged over it,
        its thresholds and ``thresholds`` judged."""
        compiled = compile_scenario(self, dict(vars or {}))
        return run_compiled(
            compiled, host=host, thresholds=thresholds, progress=progress, **overrides
        )


@overload
def run(
    target: str,
    options: RunOptions | None = None,
    *,
    progress: Callable[[dict[str, Any]], None] | None = None,
    plan: dict[str, Any] | None = None,
    cluster: str | None = None,
    injectors: int | None = None,
    on_injector_loss: str = "fail",
    **option: Any,
) -> Result: ...


@overload
def run(
    target: Declared | os.PathLike[str],
    options: None = None,
    *,
    host: str | None = None,
    vars: dict[str, str] | None = None,
    thresholds: Iterable[str] = (),
    progress: Callable[[dict[str, Any]], None] | None = None,
    **overrides: Any,
) -> ScenarioResult: ...


def run(target: Any, options: RunOptions | None = None, **keywords: Any) -> Any:
    """run is the library's one run: a URL (a ``str``) runs as
    :func:`redline.runs.runner.run` says and gives its :class:`~redline.Result`; a
    :class:`Scenario` or the path of a scenario file (an ``os.PathLike``: ``Path("f.py")``)
    runs as :meth:`Scenario.run` does (its profile with the keywords merged over it, its
    thresholds judged, against ``host``, default its own) and gives a
    :class:`ScenarioResult`, whose ``result`` is the run's Result."""
    if isinstance(target, str):
        from redline.runs.runner import run as run_url

        return run_url(target, options, **keywords)
    if options is not None:
        raise ConfigError(
            "a scenario takes its run options as keywords (users=5, duration='10s'), "
            "not a RunOptions"
        )
    from redline.scenario.compiler import compile_scenario, load

    vars = keywords.pop("vars", None)
    if isinstance(target, Declared):
        compiled = compile_scenario(target, dict(vars or {}))
    elif isinstance(target, os.PathLike):
        compiled = load(target, vars)
    else:
        raise ConfigError(
            f"run: a URL (str), a Scenario or a scenario file's path, got {type(target).__name__}"
        )
    return run_compiled(compiled, **keywords)
