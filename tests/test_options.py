"""Table-driven tests of option parsing (redline/options.py): spellings only. Whether a value
is allowed is the engine's rule; tests/test_cli.py shows its messages arriving unchanged."""

from __future__ import annotations

import argparse

import pytest
from redline.errors import ConfigError
from redline.options import (
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
    ],
)
def test_parse_duration_accepts(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize(
    "text", ["", "abc", "10 parsecs", "1s2", "s", "--1s", float("nan"), float("inf"), True]
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


F = {"connections": "-c", "max_connections": "--max-connections", "rate": "--rate"}


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
        ("cacert over http", "http://h/", {"cacert": "ca.pem"}, ["cacert is ignored for an http"]),
        ("insecure over http", "HTTP://h/", {"insecure": True}, ["insecure is ignored"]),
        ("https uses both", "https://h/", {"cacert": "ca.pem", "insecure": True}, []),
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
    from redline.run_options import FLAG_DESTS, RunOptions

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
    got = RunOptions.from_flags(args)
    assert got == RunOptions(
        connections=7, duration="2s", headers=["A: b"], http2=False, streams=3,
        max_connections=9, open_model=True, timeout="1s",
    )  # fmt: skip
    assert RunOptions.from_flags(argparse.Namespace()) == RunOptions()


def test_run_options_render_the_engines_config_leaving_out_what_was_not_given():
    from redline.run_options import RunOptions
    from redline.runner import build_config

    opts = RunOptions(connections=3, duration="1.5s", headers=[("X", "1")], open_model=True)
    config = opts.config("http://127.0.0.1:1/")
    assert config == build_config("http://127.0.0.1:1/", **opts.as_kwargs())
    assert config["duration_s"] == 1.5 and config["headers"] == [["X", "1"]]
    assert "rate" not in config and "timeout_s" not in config  # the engine's defaults
    assert (config["open"], config["preflight"], config["insecure"]) == (True, True, False)
