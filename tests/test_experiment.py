"""Tests for redline.experiment: --vary specs and placeholders (table-driven), the ranking on
documents of known figures, and experiments against the target server started as the
monitored command with settings whose truth differs (2 and 8 slots of 10 ms: 200 and 800
req/s). Every service an experiment starts must be gone when it returns, Ctrl-C included."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
import pytest
from experiment_support import EXAMPLES, QUICK, TARGET, page_charts, targets_alive, valid
from redline import cli
from redline.compare import Stretch
from redline.errors import ConfigError
from redline.experiment import parse_vary
from redline.experiment.configurations import check_templates, configurations, fill
from redline.experiment.plan_file import merge_plan, read_plan
from redline.experiment.ranking import Ranked, best, comparison_record, end_to_end
from redline.experiment.runner import experiment

# -- --vary and the placeholders ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("specs", "message"),
    [
        (["workers"], "expected NAME=VALUE"),
        (["=1,2"], "must be a word"),
        (["two words=1"], "must be a word"),
        (["workers="], "empty value"),
        (["workers=1,,2"], "empty value"),
        (["workers=1,1"], "listed twice"),
        (["workers=1", "workers=2"], "varied twice"),
        (["port=1,2"], "filled by redline"),
        (["dir=a"], "filled by redline"),
    ],
)
def test_bad_vary_specs_say_what_is_wrong(specs, message):
    with pytest.raises(ConfigError, match=message):
        parse_vary(specs)


def test_vary_specs_multiply_in_order():
    names = parse_vary(["workers=1,2", "mode= fast ,slow"])
    assert names == {"workers": ["1", "2"], "mode": ["fast", "slow"]}
    labels = [c.label for c in configurations(names)]
    assert labels == [
        "workers=1 mode=fast",
        "workers=1 mode=slow",
        "workers=2 mode=fast",
        "workers=2 mode=slow",
    ]


@pytest.mark.parametrize(
    ("command", "url", "message"),
    [
        ("svc --port {port}", "http://h:{port}/", "no {workers} placeholder"),
        ("svc --port {port} -w {worker}", "http://h:{port}/", "unknown placeholder {worker}"),
        ("svc -w {workers}", "http://h:{port}/", "in the URL but not in the command"),
        ("svc --port {port} -w {workers}", "http://h:8080/", "in the command but not in the URL"),
        ("svc 'unclosed {workers}", "http://h/", "No closing quotation"),
        ("svc -w {workers}", "http://h/{oops}", "the URL: unknown placeholder {oops}"),
    ],
)
def test_bad_templates_say_what_is_wrong(command, url, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        check_templates(command, url, ["workers"])


def test_values_fill_whole_words_and_keep_other_braces():
    argv = check_templates(
        "svc --name {workers} --json '{\"a\": 1}' {port}", "u:{port}", ["workers"]
    )
    filled = [fill(w, {"workers": "two words", "port": "80"}) for w in argv]
    assert filled == ["svc", "--name", "two words", "--json", '{"a": 1}', "80"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--vary", "slots"], "--vary 'slots': expected NAME=VALUE"),
        (["--vary", "slots=2,2"], "listed twice"),
        (["--vary", "slots=2", "--vary", "nope=1,2"], "the command has no {nope} placeholder"),
        (["--vary", "slot=2"], "unknown placeholder {slots}"),
        (["--vary", "slots=2", "--repeat", "0"], "--repeat: a whole number from 1"),
        (["--repeat", "2"], "--repeat goes with --vary"),
        (["--vary", "slots=2", "--watch", "api=port:{slot}"], "unknown placeholder {slot}"),
    ],
)
def test_bad_vary_on_the_command_line_is_one_line_and_exit_2(argv, message, capsys):
    args = ["find", "http://127.0.0.1:{port}/", "--monitor-cmd", TARGET, *argv, "-q"]
    assert cli.main(args) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not targets_alive()


def test_vary_needs_the_service_command(capsys):
    assert cli.main(["find", "http://127.0.0.1:9/", "--vary", "slots=1,2", "-q"]) == 2
    assert "--vary needs --monitor-cmd" in capsys.readouterr().err


# -- --vary @FILE.toml: the experiment written down --------------------------------------------


def test_an_experiment_file_says_what_the_flags_say(tmp_path):
    f = tmp_path / "exp.toml"
    f.write_text(
        'monitor_cmd = "svc --port {port} -w {workers} -m {mode}"\nrepeat = 2\n'
        '[vary]\nworkers = [1, 2]\nmode = ["fast", "slow"]\ncache = true\n'
    )
    plan = read_plan(str(f))
    assert plan.vary == ("workers=1,2", "mode=fast,slow", "cache=true")
    assert (plan.monitor_cmd, plan.repeat) == ("svc --port {port} -w {workers} -m {mode}", 2)
    args = argparse.Namespace(vary=["x=a", f"@{f}"], monitor_cmd=None, repeat=None)
    merge_plan(args)
    assert args.vary == ["x=a", "workers=1,2", "mode=fast,slow", "cache=true"]
    assert (args.monitor_cmd, args.repeat) == (plan.monitor_cmd, 2)
    # The names keep the file's order, the first the slowest to change.
    labels = [c.label for c in configurations(parse_vary(args.vary[1:3]))]
    assert labels == [
        "workers=1 mode=fast",
        "workers=1 mode=slow",
        "workers=2 mode=fast",
        "workers=2 mode=slow",
    ]


def test_the_example_experiment_file_is_seed_002s(tmp_path):
    plan = read_plan(str(EXAMPLES / "workers.toml"))
    assert plan.vary == ("workers=1,2",) and plan.repeat is None
    argv = check_templates(plan.monitor_cmd or "", "http://127.0.0.1:{port}", ["workers"])
    assert argv[:2] == ["taskqueue", "serve"] and "{dir}" in argv


@pytest.mark.parametrize(
    ("text", "flags", "message"),
    [
        ("repat = 2\n[vary]\nslots = [2, 8]\n", [], "unknown key 'repat'"),
        ('monitor_cmd = "x"\n', [], "needs a [vary] table"),
        ("[vary\nslots = [2]\n", [], "not TOML"),
        ('[vary]\nslots = ["2,8"]\n', [], "may not hold a comma"),
        ("[vary]\nslots = [[2]]\n", [], "a string or a number"),
        ("[vary]\nslots = [2, 2]\n", [], "listed twice"),
        ('repeat = "2"\n[vary]\nslots = [2]\n', [], "repeat must be a whole number"),
        (
            f'monitor_cmd = "{TARGET}"\n[vary]\nslots = [2]\n',
            ["--monitor-cmd", TARGET],
            "--monitor-cmd is given twice",
        ),
        (
            "repeat = 2\n[vary]\nslots = [2]\n",
            ["--monitor-cmd", TARGET, "--repeat", "3"],
            "--repeat is given twice",
        ),
        (None, ["--monitor-cmd", TARGET], "No such file"),
    ],
)
def test_a_bad_experiment_file_is_one_line_and_exit_2(tmp_path, text, flags, message, capsys):
    f = tmp_path / "exp.toml"
    if text is not None:
        f.write_text(text)
    for verb in ("find", "run"):
        assert cli.main([verb, "http://127.0.0.1:{port}/", "--vary", f"@{f}", *flags, "-q"]) == 2
        err = capsys.readouterr().err.strip()
        assert message in err and "Traceback" not in err and len(err.splitlines()) == 1, err
    assert not targets_alive()


def test_a_service_that_exits_before_listening_is_one_line(capsys):
    command = f"{sys.executable} -c \"import sys; print('no config for {{slots}}'); sys.exit(3)\""
    argv = ["find", "http://127.0.0.1:{port}/", "--monitor-cmd", command + " {port}"]
    assert cli.main([*argv, "--vary", "slots=2", *QUICK, "-q"]) == 2
    err = capsys.readouterr().err.strip()
    assert "exited with status 3 before listening" in err and "no config for 2" in err, err
    assert "Traceback" not in err


# -- the ranking -------------------------------------------------------------------------------


def found(throughput: float | None, p99: float) -> dict[str, Any]:
    """found: a find result with just the figures the ranking reads (no interval data)."""
    answers = {
        "steady_state_throughput_rps": throughput,
        "latency_ms": {"p99": p99},
        "limit": {"throughput_rps": throughput},
    }
    return {"answers": answers, "steps": [], "timeseries": []}


def test_the_best_has_the_most_throughput_then_the_lower_p99():
    ranked = [
        Ranked("w=1", {"w": "1"}, [found(100.0, 5.0)]),
        Ranked("w=2", {"w": "2"}, [found(300.0, 9.0)]),
        Ranked("w=3", {"w": "3"}, [found(300.0, 7.0)]),
        Ranked("w=4", {"w": "4"}, [found(None, 1.0)]),  # no steady state: never the best
    ]
    b = best(ranked, 5.0)
    assert (b["label"], b["configuration"], b["runner_up"]) == ("w=3", 2, "w=2")
    assert b["verdict"] == "?", "no interval data: not judged"
    assert best([Ranked("w=4", {"w": "4"}, [found(None, 1.0)])], 5.0) is None


def open_ended(throughput: float, top_users: float) -> dict[str, Any]:
    """open_ended: a find result whose search ran out of time before any limit."""
    r = found(throughput, 3.0)
    r["stop"] = {"condition": "max-time"}
    r["steps"] = [{"load": u} for u in (top_users / 2, top_users)]
    return r


def test_a_search_that_found_no_limit_is_a_lower_bound_and_decides_no_best():
    """Seed 002's experiment with too little --max-time: one worker searched up to 8 users
    (39 tasks/s), two up to 4 (20 tasks/s), neither found a limit. Saying one worker runs
    best would be false: two may sustain far more than the load they were given."""
    one = Ranked("workers=1", {"workers": "1"}, [open_ended(39.0, 8)])
    two = Ranked("workers=2", {"workers": "2"}, [open_ended(20.0, 4)])
    assert two.unbounded == "it stopped on max-time at 4 users"
    b = best([one, two], 5.0)
    assert b is not None and b["decided"] is False and b["verdict"] == "?"
    assert b["text"].startswith("best: not decided: the search of workers=2 found no limit")
    # The best at the top of its search is still the best when the others found their limit:
    # it sustains at least its throughput, more than theirs at most.
    bounded = Ranked("workers=2", {"workers": "2"}, [found(20.0, 3.0)])
    b = best([one, bounded], 5.0)
    assert b is not None and b["decided"] is True and b["label"] == "workers=1"
    text = comparison_record(None, bounded, one)["text"]
    assert "not compared" in text and "workers=1 found no limit" in text


@pytest.mark.parametrize(
    "label, a, b, winner",
    [
        ("more throughput wins", (100.0, 5.0), (300.0, 9.0), "b"),
        ("a tie within 5 %: the lower p99", (300.0, 9.0), (290.0, 5.0), "b"),
        ("beyond 5 %: the throughput", (300.0, 9.0), (280.0, 5.0), "a"),
        ("an exact tie: the lower p99", (150.0, 19.0), (150.0, 14.0), "b"),
    ],
)
def test_the_best_treats_throughputs_within_the_minimum_effect_as_a_tie(label, a, b, winner):
    ranked = [Ranked("a", {"x": "a"}, [found(*a)]), Ranked("b", {"x": "b"}, [found(*b)])]
    got = best(ranked, 5.0)
    assert got is not None and got["label"] == winner, label


def test_repeats_give_the_median_and_the_spread():
    x = Ranked("w=1", {"w": "1"}, [found(90.0, 5.0), found(110.0, 6.0), found(100.0, 4.0)])
    assert x.representative == 2 and x.throughput == 100.0
    assert x.spread()["steady_state_throughput_rps"] == {"min": 90.0, "median": 100.0, "max": 110.0}


def test_repeats_are_laid_end_to_end_on_one_clock():
    a = Stretch([{"t_s": t, "requests": 1} for t in (10.5, 11.0, 11.5)])
    b = Stretch([{"t_s": t, "requests": 2} for t in (3.0, 3.5)])
    joined = end_to_end([a, b])
    assert [s["t_s"] for s in joined.snapshots] == [10.5, 11.0, 11.5, 12.0, 12.5]
    assert [s["requests"] for s in joined.snapshots] == [1, 1, 1, 2, 2]
    assert joined.interval_s == 0.5


# -- experiments against the target -------------------------------------------------------------


@pytest.fixture(scope="module")
def two_slots(tmp_path_factory) -> tuple[dict[str, Any], str, Path]:
    """two_slots: an experiment over the target with 2 and 8 slots, run once for the module
    from the command line: the document, what it printed, and where its files are."""
    tmp = tmp_path_factory.mktemp("experiment")
    # The service writes what it served to a log of its own (the target says so on SIGTERM).
    command = f"sh -c 'exec {TARGET} > {tmp}/served-{{slots}}.log'"
    argv = ["-m", "redline", "find", "http://127.0.0.1:{port}/", "--monitor-cmd", command]
    argv += ["--vary", "slots=2,8", *QUICK, "--json", str(tmp / "exp.json")]
    argv += ["--markdown", str(tmp / "exp.md"), "--report", str(tmp / "exp.html"), "-q"]
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    p = subprocess.run(
        [sys.executable, *argv], capture_output=True, text=True, env=env, timeout=150
    )
    assert p.returncode == 0, p.stderr
    return json.loads((tmp / "exp.json").read_text()), p.stdout, tmp


@pytest.mark.slow
def test_two_configurations_four_times_the_capacity_is_best(two_slots):
    """The experiment's answers, what the servers saw, and its page: it opens offline in
    headless Chromium with no console error and its charts drawn (one test, so that pytest
    workers do not each run the experiment)."""
    from browser import assert_drawn, open_in_chromium

    doc, text, tmp = two_slots
    assert not targets_alive(), "every service the experiment started is stopped"
    valid(doc)
    by = {c["label"]: c for c in doc["configurations"]}
    assert list(by) == ["slots=2", "slots=8"]
    for label, truth in (("slots=2", 200.0), ("slots=8", 800.0)):
        x = by[label]["answers"]["steady_state_throughput_rps"]
        assert 0.85 * truth <= x <= 1.03 * truth, (label, x)
        (run,) = by[label]["runs"]
        # What the server saw: it served what redline counted, give or take the requests in
        # flight when the search stopped (at most its users).
        result = run["result"]
        counted = sum(s["requests"] + s["errors"] for s in result["timeseries"])
        served = (tmp / f"served-{label.split('=')[1]}.log").read_text()
        n = int(re.search(r"served (\d+) requests", served).group(1))
        assert counted <= n <= counted + result["config"]["ceiling"], (label, counted, n)
        assert f"--capacity {label.split('=')[1]}" in run["command"] and "{" not in run["command"]
    (cmp,) = doc["comparisons"]
    assert (cmp["base"], cmp["new"], cmp["verdict"]) == ("slots=2", "slots=8", "better")
    assert 3.4 <= cmp["throughput_ratio"] <= 4.6, cmp
    b = doc["best"]
    assert (b["label"], b["runner_up"], b["verdict"]) == ("slots=8", "slots=2", "better")
    assert "slots=8: " in text and "the throughput of slots=2" in text and "significant" in text
    assert "| `slots=2` | `slots=8` |" in (tmp / "exp.md").read_text()
    charts = page_charts((tmp / "exp.html").read_text())
    for chart in ("tput-load", "p99-tput", "percentiles"):
        series = [x["label"] for x in charts[chart]["series"]]
        assert series == ["slots=2", "slots=8"], (chart, series)
        drawn = [sum(v is not None for v in col) for col in charts[chart]["data"][1:]]
        assert all(n >= 3 for n in drawn), (chart, drawn)
    # The ports were fresh and nothing listens on them any more.
    for c in doc["configurations"]:
        port = c["runs"][0]["port"]
        assert not any(
            x.laddr and x.laddr.port == port and x.status == psutil.CONN_LISTEN
            for x in psutil.net_connections("tcp")
        ), port
    seen = open_in_chromium((tmp / "exp.html").read_text(), "experiment")
    assert_drawn(seen, {"percentiles", "goodput-time", "p99-time", "tput-load", "p99-tput"})
    assert doc["best"]["text"] in seen["answers"]


def _interrupt_after(
    n: int, before: Callable[[], None] = lambda: None
) -> Callable[[dict[str, Any], float, str], None]:
    """_interrupt_after is a search's on_snapshot that presses Ctrl-C at its ``n``-th
    snapshot (after calling ``before``, to look at the processes as they stood)."""
    seen = 0

    def interrupt(snap: dict[str, Any], load: float, phase: str) -> None:
        nonlocal seen
        seen += 1
        if seen == n:
            before()
            raise KeyboardInterrupt

    return interrupt


def test_ctrl_c_in_a_search_stops_its_service_and_keeps_what_ran():
    started: list[int] = []
    interrupt = _interrupt_after(12)
    doc = experiment(
        "http://127.0.0.1:{port}/",
        TARGET,
        {"slots": [2, 8]},
        on_start=lambda c, r, s: started.append(s.monitor.pid),
        on_snapshot=interrupt,
        max_time=30.0,
        min_step=1.0,
        max_step=3.0,
        confirm=2.0,
    )
    assert doc["interrupted"] is True
    assert len(started) == 1, "no configuration starts after Ctrl-C"
    assert not psutil.pid_exists(started[0]) or psutil.Process(started[0]).status() == "zombie"
    assert not targets_alive()
    first, second = doc["configurations"]
    assert first["runs"][0]["result"]["interrupted"] is True and first["steps"]
    assert second["runs"] == [] and doc["best"] is None
    valid(doc)


def test_ctrl_c_in_a_taskqueue_search_stops_the_server_and_its_pool_workers():
    """Seed 002's experiment interrupted: Ctrl-C in the first configuration's search stops
    that taskqueue and its factorial worker processes (its whole tree, as it stood when the
    interrupt came), and no second configuration starts."""
    from redline.scenario.compiler import load

    taskqueue = Path(sys.executable).parent / "taskqueue"
    command = f"{taskqueue} serve --port {{port}} --data-dir {{dir}} --workers {{workers}}"
    compiled = load(EXAMPLES / "factorials.py")
    started: list[int] = []
    tree: list[psutil.Process] = []

    def keep_tree() -> None:
        server = psutil.Process(started[0])
        tree.extend([server, *server.children(recursive=True)])

    interrupt = _interrupt_after(8, keep_tree)
    doc = experiment(
        "http://127.0.0.1:{port}",
        command,
        {"workers": [1, 2]},
        plan=compiled.plan,
        throughput="submit=tasks",
        on_start=lambda c, r, s: started.append(s.monitor.pid),
        on_snapshot=interrupt,
        start=16,
        max_time=30.0,
        min_step=1.0,
        max_step=3.0,
        confirm=2.0,
    )
    assert doc["interrupted"] is True and len(started) == 1
    assert len(tree) >= 2, "the server and at least one pool worker"
    alive = [p for p in tree if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert not alive, [p.cmdline() for p in alive]
