"""consistency: one check that a find result never contradicts itself, used by every test of
a probe's search and by the demo's test. A contradiction on one page is a bug (issues 13, 21):
a step both steady and growing a queue, an answer whose step breaks the run's own SLO, a
sentence that says "broke" where no limit fired, a knee the analysis and the answers place
differently, a model's prediction stated as fact against the steps."""

from __future__ import annotations

from typing import Any

from redline.find.rules import CONDITIONS, PERCENTILES, Slo

#: BROKEN: the kinds of limit where the service broke (errors, an SLO, a collapse).
BROKEN = {"errors", "slo", "collapse", "no-recovery", "shedding", "rate-limit"}


def _generator_consistent(result: dict[str, Any]) -> None:
    """_generator_consistent: where redline ran out of CPU no limit is laid on the service,
    and by the one generator rule the search stopped on the generator where, and only where,
    the bottleneck at its limit names it (unless the rule was switched off)."""
    lim = result["answers"]["limit"]
    if result.get("generator_limited"):
        kind = lim.get("kind")
        assert kind in ("generator", "none"), f"the generator named, yet a limit of kind {kind}"
    named = lim.get("bottleneck")
    if named is not None and result["config"].get("generator_busy") is not None:
        said = named.get("part") == "generator"
        assert said == bool(result.get("generator_limited")), (result["stop"], named)


def assert_consistent(result: dict[str, Any], markdown: str | None = None) -> None:
    """assert_consistent fails with the contradiction it finds in ``result`` (and in its
    Markdown report, when given)."""
    answers = result["answers"]
    text = answers["text"]
    lim = answers["limit"]
    steps = result["steps"]
    assert result["stop"]["condition"] in CONDITIONS, result["stop"]
    for key in ("throughput", "latency", "optimal", "limit"):
        assert isinstance(text.get(key), str) and len(text[key]) > 20, (key, text.get(key))
    for s in steps:
        assert not (s.get("steady") and "backlog" in s["fired"]), f"step {s['index']}: {s}"
        assert s["ok"] == (not s["fired"]), s
    kind = lim.get("kind")
    if "broke" in text["limit"]:
        assert kind in BROKEN, f"'broke' said for a limit of kind {kind}: {text['limit']}"
    _generator_consistent(result)
    if kind == "none":
        assert "No limit was found" in text["limit"], text["limit"]
    # No load whose confirmation broke a limit (or a heavier one) is called steady.
    failed = [s["load"] for s in steps if s["phase"] == "confirm" and not s["ok"]]
    at = answers.get("steady_state_load")
    if failed and at is not None:
        assert at < min(failed), f"steady at {at}, a confirmation broke a limit at {failed}"
    # The steady-state answer and the optimal point met every limit, the run's SLOs first.
    slos = result["config"].get("slos") or []
    steady = [s for s in steps if s["phase"] == "confirm" and s["ok"]]
    held = steady[-1] if steady else None
    opt = answers.get("optimal")
    for spec in slos:
        slo = Slo.parse(spec)
        field, name = PERCENTILES[slo.percentile], slo.percentile.replace(".", "_")
        if held is not None and held.get(field) is not None:
            assert not slo.breached(held[field]), f"steady state breaks {slo}: {held[field]}"
        if answers["latency_ms"].get(name) is not None:
            assert not slo.breached(answers["latency_ms"][name]), (slo, answers["latency_ms"])
    if opt is not None:
        step = next(s for s in steps if s["index"] == opt["step"])
        assert step["ok"], f"the optimal step broke a limit: {step}"
        assert result["knee"]["load"] == opt.get("users", opt.get("rate")), "two knees"
    # Little's law holds on a correct run: a warning here would teach users to ignore it.
    wrong = [c for c in (result.get("checks") or {}).get("little") or [] if c["ok"] is False]
    assert not wrong, f"Little's law flagged on a correct run: {wrong}"
    x = answers.get("steady_state_throughput_rps")
    cap = lim.get("capacity_rps")
    if x is not None and cap is not None:
        assert x <= 1.05 * cap + (lim.get("capacity_ci") or 0), (x, cap)
    if opt is not None and cap is not None:
        # The optimum's throughput, with its step's ±, agrees with the capacity, or the
        # page says why it reads more.
        low = opt["throughput_rps"] - (opt.get("throughput_ci") or 0)
        if low > 1.05 * cap + (lim.get("capacity_ci") or 0):
            assert "read more than" in text["optimal"], (opt, cap, text["optimal"])
    if x is not None and cap is not None and x - cap >= max(0.5, 0.005 * cap):
        # Answer 1 above "at its best": the page says how the two readings relate.
        assert "Answer 1's step alone read" in text["limit"], (x, cap, text["limit"])
    # A step that never became steady is never called a steady state (issue 36).
    by_index = {s["index"]: s for s in steps}
    behind = by_index.get(answers.get("steady_state_step"))
    if x is not None and behind is not None:
        unsteady = behind.get("steady") is False
        assert answers.get("steady_state_reached") is (not unsteady), (behind, answers)
        said = text["throughput"].startswith("No steady state was reached")
        assert said == unsteady, (behind.get("steady"), text["throughput"])
        assert ("In a steady state" in text["throughput"]) != unsteady, text["throughput"]
    if opt is not None and by_index.get(opt["step"], {}).get("steady") is False:
        assert "never became steady" in text["optimal"], text["optimal"]
    if markdown is not None:
        if x is not None and behind is not None and behind.get("steady") is False:
            assert f"Answers 1 and 2 rest on step {behind['index']}" in markdown, markdown
        for key in ("throughput", "latency", "optimal", "limit"):
            assert text[key] in markdown, key
        if result.get("usl", {}).get("agrees") is False:
            assert "predicted peak" not in markdown, "a contradicted USL peak stated as fact"


def consistency_of(result: dict[str, Any], markdown: str | None = None) -> str:
    """consistency_of is :func:`assert_consistent` for a table (the bench scripts): "yes", or "NO: "
    and the contradiction found, on one line without table pipes."""
    try:
        assert_consistent(result, markdown)
    except AssertionError as e:
        return "NO: " + " ".join(str(e).split())[:80].replace("|", "/")
    return "yes"
