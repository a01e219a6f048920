"""Table-driven tests of option parsing (redline/runs/options.py): spellings only. Whether a value
is allowed is the engine's rule; tests/test_cli.py shows its messages arriving unchanged."""

from __future__ import annotations

import argparse

import pytest
from redline.errors import ConfigError
from redline.runs.options import (
    Stage,
    ignored_options,
    parse_duration,
    parse_header,
    parse_stages,
    read_body,
)


@pytest.mark.parametrize(
    "text, seconds",
    [
        ("15s", 15.0),
        ("250ms", 0.25),
        ("2m", 120.0),
        ("1h", 3600.0),
        ("1.5", 1.5),
        ("500us", 0.0005),
        (" 3s ", 3.0),
        (10, 10.0),
        (0.5, 0.5),
        ("0s", 0.0),
        ("-1s", -1.0),  # the sign is the engine's to refuse, with its message
        (-3, -3.0),
        ("2m30s", 150.0),  # Go's and k6's spelling in parts
        ("1h30m", 5400.0),
        ("1s500ms", 1.5),
        ("1m0.5s", 60.5),
        ("-2m30s", -150.0),
    ],
)
def test_parse_duration_accepts(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize(
    "text",
    [
        *("", "abc", "10 parsecs", "1s2", "s", "--1s", float("nan"), float("inf"), True),
        *("30s2m", "1s1s", "2m 30s", "2m30", "1ms500us500us"),  # parts out of order, twice, loose
    ],
)
def test_parse_duration_refuses_with_one_line(text):
    with pytest.raises(ConfigError) as e:
        parse_duration(text, "duration")
    assert "\n" not in str(e.value) and str(e.value).startswith("duration")


def test_parse_stages():
    assert parse_stages("10s:100,30s:100,10s:0") == [
        Stage(10.0, 100.0),
        Stage(30.0, 100.0),
        Stage(10.0, 0.0),
    ]
    assert parse_stages([("1s", 5), (2, 7)]) == [Stage(1.0, 5.0), Stage(2.0, 7.0)]


@pytest.mark.parametrize("spec", ["10s", "10s:x", "x:10", "10s:inf", ""])
def test_parse_stages_refuses_bad_spellings(spec):
    with pytest.raises(ConfigError):
        parse_stages(spec)


@pytest.mark.parametrize(
    "header, pair",
    [("X-A: b", ("X-A", "b")), ("Authorization:Bearer t:k", ("Authorization", "Bearer t:k"))],
)
def test_parse_header(header, pair):
    assert parse_header(header) == pair


def test_parse_header_refuses_a_header_without_a_colon():
    with pytest.raises(ConfigError, match="expected 'Name: value'"):
        parse_header("novalue")


def test_parse_header_leaves_judging_names_to_the_engine():
    assert parse_header("Bad Name: v") == ("Bad Name", "v")


F = {
    "connections": "-c",
    "max_connections": "--max-connections",
    "rate": "--rate",
    "send_ahead": "--send-ahead",
}


@pytest.mark.parametrize(
    "label, url, given, says",
    [
        ("closed, nothing ignored", "http://h/", {"connections": 5}, []),
        ("open, nothing ignored", "http://h/", {"rate": 9, "max_connections": 5}, []),
        (
            "-c with --rate",
            "http://h/",
            {"connections": 5, "rate": 9},
            ["-c is ignored by the open model"],
        ),
        (
            "-c with open stages",
            "http://h/",
            {"connections": 5, "stages": "1s:5", "open_model": True},
            ["-c is ignored by the open model"],
        ),
        (
            "-c with closed stages",
            "http://h/",
            {"connections": 5, "stages": "1s:5"},
            ["-c is ignored: the stages set the number of VUs"],
        ),
        (
            "pool cap, closed",
            "http://h/",
            {"max_connections": 5},
            ["--max-connections is ignored by the closed model"],
        ),
        (
            "send-ahead, closed",
            "http://h/",
            {"connections": 5, "send_ahead": "1ms"},
            ["--send-ahead is ignored by the closed model"],
        ),
        ("send-ahead, open", "http://h/", {"rate": 9, "send_ahead": "1ms"}, []),
        ("cacert over http", "http://h/", {"cacert": "ca.pem"}, ["cacert is ignored for an http"]),
        ("insecure over http", "HTTP://h/", {"insecure": True}, ["insecure is ignored"]),
        ("https uses both", "https://h/", {"cacert": "ca.pem", "insecure": True}, []),
        # Its absolute URLs may be https:// or grpcs://: the run's TLS options are theirs.
        ("a scenario on http", "http://h", {"cacert": "ca.pem", "scenario": True}, []),
    ],
)
def test_ignored_options(label, url, given, says):
    notes = ignored_options(url, spell=lambda n: F.get(n, n), **given)
    assert len(notes) == len(says), (label, notes)
    for note, words in zip(notes, says, strict=True):
        assert note.startswith(words), (label, note)


def test_read_body(tmp_path):
    f = tmp_path / "body.json"
    f.write_bytes(b'{"a": 1}')
    assert read_body("@" + str(f)) == b'{"a": 1}'
    assert read_body("text") == b"text"
    assert read_body(b"\x00raw") == b"\x00raw"
    with pytest.raises(ConfigError, match="cannot read"):
        read_body("@" + str(tmp_path / "missing"))


def test_every_run_option_has_its_flag_and_the_flags_read_back():
    """RunOptions is spelled once: each field is a flag of ``redline run`` (dest = the
    field's name or its FLAG_DESTS alias; ``preflight`` is the Python API's only), and the
    parsed flags read back into the same options."""
    import dataclasses

    from redline.cli import build_parser
    from redline.cli.run_flags import FLAG_DESTS, run_options
    from redline.runs.run_options import RunOptions

    run_parser = next(
        a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)
    ).choices["run"]
    dests = {a.dest for a in run_parser._actions}
    missing = [
        f.name
        for f in dataclasses.fields(RunOptions)
        if FLAG_DESTS.get(f.name, f.name) not in dests and f.name != "preflight"
    ]
    assert not missing, f"run options without a flag: {missing}"
    args = build_parser().parse_args(
        ["run", "http://127.0.0.1:1/", "-c", "7", "-d", "2s", "-H", "A: b", "--http1",
         "--streams", "3", "--max-connections", "9", "--open", "--timeout", "1s"]
    )  # fmt: skip
    got = run_options(args)
    assert got == RunOptions(
        connections=7, duration="2s", headers=["A: b"], http2=False, streams=3,
        max_connections=9, open_model=True, timeout="1s",
    )  # fmt: skip
    assert run_options(argparse.Namespace()) == RunOptions()


def test_run_options_render_the_engines_config_leaving_out_what_was_not_given():
    from redline.runs.run_options import RunOptions
    from redline.runs.runner import build_config

    opts = RunOptions(connections=3, duration="1.5s", headers=[("X", "1")], open_model=True)
    config = opts.config("http://127.0.0.1:1/")
    assert config == build_config("http://127.0.0.1:1/", **opts.as_kwargs())
    assert config["duration_s"] == 1.5 and config["headers"] == [["X", "1"]]
    assert "rate" not in config and "timeout_s" not in config  # the engine's defaults
    assert (config["open"], config["preflight"], config["insecure"]) == (True, True, False)


def _subparser(name):
    from redline.cli import build_parser

    return next(
        a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)
    ).choices[name]


def test_find_takes_every_run_option_but_the_load_shape_by_the_same_flags():
    """Adding a run option is its field, the engine's config and its flag (cli/run_flags.py):
    ``redline find`` then has it too, unless it shapes the load (the search sets that), and
    reads it back into the same RunOptions."""
    import dataclasses

    from redline.cli.find_flags import find_options
    from redline.cli.run_flags import FLAG_DESTS
    from redline.runs.run_options import LOAD_SHAPE, RunOptions

    dests = {a.dest for a in _subparser("find")._actions}
    fields = {f.name for f in dataclasses.fields(RunOptions)}
    assert set(LOAD_SHAPE) <= fields
    missing = [
        name
        for name in sorted(fields - set(LOAD_SHAPE) - {"preflight"})
        if FLAG_DESTS.get(name, name) not in dests
    ]
    assert not missing, f"run options redline find has no flag for: {missing}"
    shaped = [name for name in LOAD_SHAPE if FLAG_DESTS.get(name, name) in dests]
    assert not shaped, f"redline find takes load-shape flags: {shaped}"
    from redline.cli import build_parser

    args = build_parser().parse_args(
        ["find", "http://127.0.0.1:1/", "-t", "2", "-m", "POST", "-H", "A: b", "--body", "x",
         "--timeout", "3s", "--interval", "250ms", "--http2", "--streams", "4", "-k",
         "--send-ahead", "1ms"]
    )  # fmt: skip
    assert find_options(args)["options"] == RunOptions(
        threads=2, method="POST", headers=["A: b"], body="x", timeout="3s",
        interval="250ms", http2=True, streams=4, insecure=True, send_ahead="1ms",
    )  # fmt: skip


def test_a_search_has_its_own_timeout_and_interval_shown_in_its_help_and_given_way_to():
    from redline.find.finder import search_run
    from redline.find.plan import SEARCH_DEFAULTS
    from redline.runs.run_options import RunOptions

    assert SEARCH_DEFAULTS == {"timeout": 10.0, "interval": 0.5}
    text = _subparser("find").format_help()
    assert "--timeout 10s (redline run: 30s)" in " ".join(text.split())
    assert "(default: 10s)" in text and "(default: 500ms" in text
    config = search_run(None, {}, "closed", 1.0, 60.0).config("http://127.0.0.1:1/")
    assert (config["timeout_s"], config["interval_s"]) == (10.0, 0.5)
    assert (config["connections"], config["duration_s"], config["warmup_s"]) == (1, 60.0, 0.0)
    given = search_run(RunOptions(timeout="2s"), {"interval": 1.0}, "open", 50.0, 60.0)
    config = given.config("http://127.0.0.1:1/")
    assert (config["timeout_s"], config["interval_s"], config["rate"]) == (2.0, 1.0, 50.0)
    assert config["open"] is True and "connections" not in config
    with pytest.raises(ConfigError, match="the search sets the load itself, not duration"):
        search_run(None, {"duration": "5s"}, "closed", 1.0, 60.0)


def test_the_search_defaults_are_spelled_once_in_its_plan():
    """find's step and time bounds are find/plan.py's: the function's defaults and the help
    text read them there (they were spelled in three files)."""
    import inspect

    from redline.find.finder import find
    from redline.find.plan import CONFIRM_S, MAX_TIME_S, Plan

    given = {k: p.default for k, p in inspect.signature(find).parameters.items()}
    assert (given["max_time"], given["confirm"]) == (MAX_TIME_S, CONFIRM_S)
    assert (given["min_step"], given["max_step"]) == (Plan().min_step_s, Plan().max_step_s)
    args = _subparser("find").parse_args(["http://127.0.0.1:1/"])
    assert (args.max_time, args.min_step, args.max_step, args.confirm) == (
        "120s",
        "3s",
        "15s",
        "10s",
    )


def test_a_scenario_reads_its_run_options_from_the_flags_by_name(tmp_path):
    """The command line's load shape merges over the file's; every other run option (TLS,
    the protocol, warm-up, interval …) passes through as a URL run takes it."""
    import textwrap

    from redline.cli.scenario import build_run_parser_args, scenario_run

    path = tmp_path / "s.py"
    path.write_text(
        textwrap.dedent("""\
        from redline.scenario import Scenario
        s = Scenario(host="http://127.0.0.1:1", users=2, duration="30s", timeout="5s")
        @s.flow
        def f(u):
            u.get("/", name="home")
        """)
    )
    argv = [str(path), "-c", "3", "--http2", "--streams", "4", "--warmup", "1s", "-k",
            "--interval", "2s", "--cacert", "ca.pem"]  # fmt: skip
    _, url, opts = scenario_run(build_run_parser_args(argv))
    assert url == "http://127.0.0.1:1" and "plan" in opts
    assert (opts["connections"], opts["duration"], opts["timeout"]) == (3, "30s", "5s")
    assert (opts["http2"], opts["streams"], opts["warmup"]) == (True, 4, "1s")
    assert (opts["insecure"], opts["interval"], opts["cacert"]) == (True, "2s", "ca.pem")
    _, _, opts = scenario_run(build_run_parser_args([str(path), "-n", "10", "--timeout", "1s"]))
    assert opts["requests"] == 10 and opts["duration"] is None and opts["timeout"] == "1s"
    with pytest.raises(ConfigError, match="-H/--header applies to a URL run"):
        scenario_run(build_run_parser_args([str(path), "-H", "A: b"]))
