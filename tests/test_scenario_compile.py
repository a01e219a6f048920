"""Scenario files compiled to plans: the tracer's output, and every mistake as one
FILE:LINE message with exit status 2 before any load (nothing listens on the host used)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from conftest import run_cli
from redline.scenario import ScenarioError, load
from redline.scenario.jsonpath import parse_path
from redline.scenario.profile import merge, run_options, spike, step_load
from redline.scenario.thresholds import check, parse

HEADER = "from redline.scenario import *\n"


def write(tmp_path: Path, body: str, name: str = "s.py") -> Path:
    p = tmp_path / name
    p.write_text(HEADER + textwrap.dedent(body))
    return p


def test_seed000_example_compiles_to_the_documented_plan():
    c = load("examples/taskqueue.py", {"ORIGIN": "http://127.0.0.1:9/"})
    flows = {f["name"]: f for f in c.plan["flows"]}
    assert {n: f["weight"] for n, f in flows.items()} == {"fetch": 5, "factorial": 1}
    submit, poll, result, think = flows["fetch"]["steps"]
    assert submit["name"] == "submit" and submit["method"] == "POST"
    assert submit["body"]["template"] == [
        '{"type":"http-fetch","url":"',
        {"var": "var.ORIGIN"},
        '"}',
    ]
    (x,) = submit["extract"]
    assert x["from"] == "json" and x["path"] == ["id"]
    assert poll["step"] == "poll" and poll["interval_s"] == 1.0
    assert poll["request"]["path"] == ["/tasks/submissions/", {"var": x["var"]}]
    assert poll["until"][0]["values"] == ["SUCCEEDED", "FAILED"]
    assert poll["request"]["checks"] == [
        {
            "check": "json",
            "path": ["status"],
            "op": "in",
            "values": ["SUCCEEDED"],
            "text": "$.status",
        }
    ]
    assert result["name"] == "result" and think["dist"] == "uniform"
    assert c.plan["vars"] == {"var.ORIGIN": "http://127.0.0.1:9/"}


#: (label, scenario body, line the message must name, words in the message)
MISTAKES = [
    ("syntax error", "s = Scenario(\n", 2, "syntax error"),
    ("unknown option", "s = Scenario(usres=5)\n", 2, "unknown option 'usres'"),
    (
        "variable from another flow",
        """\
        s = Scenario()
        leak = []
        @s.flow
        def a(u):
            leak.append(u.get("/").json("$.id"))
        @s.flow
        def b(u):
            u.get(f"/x/{leak[0]}")
        """,
        9,
        "used before it is extracted",
    ),
    (
        "bad JSON path",
        """\
        s = Scenario()
        @s.flow
        def a(u):
            u.get("/").json("$.a[")
        """,
        5,
        "does not parse",
    ),
    (
        "bad tally path",
        """\
        s = Scenario()
        @s.flow
        def a(u):
            u.get("/", tally="$.status[")
        """,
        5,
        "tally: JSON path '$.status[' does not parse",
    ),
    (
        "missing data file",
        """\
        s = Scenario()
        s.data("users", "nope.csv")
        """,
        3,
        "data file 'nope.csv' not found",
    ),
    (
        "run variable not given",
        """\
        s = Scenario()
        @s.flow
        def a(u):
            u.get(f"/{u.var('HOST_ID')}")
        """,
        5,
        "--var HOST_ID=VALUE",
    ),
    (
        "branching on a run-time value",
        """\
        s = Scenario()
        @s.flow
        def a(u):
            if u.get("/").json("$.ok"):
                pass
        """,
        5,
        "known only during the run",
    ),
    (
        "bad regex",
        """\
        s = Scenario()
        @s.flow
        def a(u):
            u.get("/").regex("(")
        """,
        5,
        "bad regex",
    ),
]


@pytest.mark.parametrize("label,body,line,words", MISTAKES, ids=[m[0] for m in MISTAKES])
def test_mistakes_name_file_and_line(tmp_path, label, body, line, words):
    path = write(tmp_path, body)
    with pytest.raises(ScenarioError) as e:
        load(path)
    assert e.value.line == line, str(e.value)
    assert words in str(e.value)
    assert str(e.value).startswith(f"{path}:{line}: ")


def test_cli_mistake_is_one_line_exit_2_before_any_load(tmp_path, free_port):
    path = write(tmp_path, "s = Scenario(usres=5)\n")
    for argv in (
        ["run", str(path), "--host", f"http://127.0.0.1:{free_port}"],
        ["inspect", str(path)],
    ):
        p = run_cli(*argv)
        assert p.returncode == 2, p.stderr
        assert p.stderr.strip().splitlines() == [
            f"redline: error: {path}:2: Scenario(): unknown option 'usres' (options: "
            "users, rate, stages, open, duration, threads, iterations, max_connections, "
            "timeout, pacing, ramp_up, loops)"
        ]
        assert "Traceback" not in p.stderr


def test_inspect_prints_the_plan_and_options(tmp_path):
    p = run_cli(
        "inspect", "examples/taskqueue.py", "--var", "ORIGIN=http://o/", "--host", "http://h:1"
    )
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["host"] == "http://h:1"
    assert doc["options"] == {"connections": 20, "duration": "1m"}
    assert [f["name"] for f in doc["plan"]["flows"]] == ["fetch", "factorial"]


def test_inspect_prints_the_plan_without_a_host():
    """The plan does not depend on the host: inspect prints it without --host (it once
    insisted on one), with ``"host": null``, the same plan as with one."""
    bare = run_cli("inspect", "examples/survey.py")
    assert bare.returncode == 0, bare.stderr
    with_host = run_cli("inspect", "examples/survey.py", "--host", "http://h:1")
    doc, other = json.loads(bare.stdout), json.loads(with_host.stdout)
    assert doc["host"] is None and other["host"] == "http://h:1"
    assert doc["plan"] == other["plan"] and [f["name"] for f in doc["plan"]["flows"]] == ["survey"]


def test_data_rows_loops_groups_setup_and_choice(tmp_path):
    (tmp_path / "users.csv").write_text("name,pw\nann,1\nbob,2\n")
    path = write(
        tmp_path,
        """\
        s = Scenario()
        s.data("users", "users.csv", per="vu")
        @s.setup
        def login(u):
            row = u.row("users")
            tok = u.post("/login", form={"user": row["name"], "pw": row["pw"]}).header("X-Token")
            return {"token": tok}
        @s.flow(weight=3)
        def browse(u):
            with u.group("visit"):
                with u.loop(2):
                    u.get("/items", params={"page": u.iteration, "pick": u.choice(["a", "b"])},
                          headers={"X-Token": u.setup["token"]})
            u.think(exponential(2))
        """,
    )
    c = load(path)
    assert c.plan["data"] == [
        {
            "name": "users",
            "per": "vu",
            "columns": ["name", "pw"],
            "order": "sequential",
            "unique": False,
            "line": 3,
            "csv": "name,pw\nann,1\nbob,2\n",
        }
    ]
    (login,) = c.plan["setup"]
    assert login["body"] == {
        "type": "form",
        "fields": [["user", [{"var": "data.users.name"}]], ["pw", [{"var": "data.users.pw"}]]],
    }
    (group, think) = c.plan["flows"][0]["steps"]
    (loop,) = group["steps"]
    set_step, get = loop["steps"]
    assert set_step == {
        "step": "set",
        "var": set_step["var"],
        "choice": ["a", "b"],
        "line": set_step["line"],
    }
    assert get["query"] == [["page", [{"var": "iteration"}]], ["pick", [{"var": set_step["var"]}]]]
    assert get["headers"] == [["X-Token", [{"var": login["extract"][0]["var"]}]]]
    assert think == {"step": "think", "dist": "exponential", "mean_s": 2.0, "line": think["line"]}


def test_json_paths():
    cases = [
        ("$.id", ["id"]),
        ("id", ["id"]),
        ("$.a.b[0].c", ["a", "b", 0, "c"]),
        ("$['odd key'][-1]", ["odd key", -1]),
        ("$", []),
    ]
    for text, want in cases:
        assert parse_path(text) == want, text
    for bad in ("$.", "$[x]", "$..a", ""):
        with pytest.raises(ValueError):
            parse_path(bad)


def test_profiles_and_overrides():
    cases = [
        ("closed", {"users": 5, "duration": "10s"}, {}, {"connections": 5, "duration": "10s"}, {}),
        ("CLI users replace stages", {"stages": [("1s", 5)]}, {"users": 7}, {"connections": 7}, {}),
        (
            "CLI stages replace users and duration",
            {"users": 5, "duration": "1m"},
            {"stages": "2s:3"},
            {"stages": [(2.0, 3.0)]},
            {},
        ),
        (
            "CLI rate replaces users",
            {"users": 5, "duration": "1m"},
            {"rate": 20},
            {"rate": 20, "duration": "1m"},
            {},
        ),
        (
            "jmeter",
            {"users": 100, "ramp_up": "25s", "loops": 100},
            {},
            {"stages": [(25.0, 100), (86400.0, 100)]},
            {"iterations": 100},
        ),
        (
            "iterations per VU",
            {"users": 3, "iterations": 4},
            {},
            {"stages": [(0.001, 3), (86400.0, 3)]},
            {"iterations": 4},
        ),
        (
            "pacing",
            {"users": 1, "pacing": "2s", "duration": "5s"},
            {},
            {"connections": 1, "duration": "5s"},
            {"pacing_s": 2.0},
        ),
        (
            "open stages",
            {"stages": "10s:5", "open": True},
            {},
            {"stages": [(10.0, 5.0)], "open_model": True},
            {},
        ),
    ]
    for label, declared, given, want_kw, want_plan in cases:
        kw, plan = run_options(merge(declared, given))
        assert (kw, plan) == (want_kw, want_plan), label
    assert step_load(10, 10, "30s", 30) == [
        (1.0, 10),
        (29.0, 10),
        (1.0, 20),
        (29.0, 20),
        (1.0, 30),
        (29.0, 30),
    ]
    assert [t for _, t in spike(80, 200, 60)] == [80, 80, 200, 200, 60, 60]


DOC = {
    "requests": 990,
    "errors_total": 20,
    "errors": {"status": 5, "check": 5},
    "unfinished": 0,
    "unsent": 0,
    "rps": 99.0,
    "duration_s": 10.0,
    "latency_ms": {"p99": 450.0, "p99_9": 900.0, "mean": 20.0, "max": 1200.0},
    "per_name": {
        "submit": {
            "requests": 100,
            "errors": 3,
            "latency_ms": {"p95": 310.0},
            "failure_reasons": {"timeout": 1, "HTTP 500": 2},
        }
    },
}


def test_thresholds():
    cases = [
        ("p99<500ms", True),
        ("p99<0.4s", False),
        ("p99.9<=900", True),
        ("mean<20ms", False),
        ("errors<3%", True),  # (20 + 0) / (990 + 10 transport) = 2 %
        ("errors<1%", False),
        ("rps>100", False),
        ("submit:p95<300ms", False),
        ("submit:errors<3%", True),  # 3 / (100 + 1 timeout)
        ("submit:rps>=10", True),
    ]
    for text, holds in cases:
        assert (check([parse(text)], DOC) == []) is holds, text
    (line,) = check([parse("p99<0.4s")], DOC)
    assert line == "threshold p99<0.4s failed: p99 was 450.00ms"
    for bad in ("p99<", "p42<1ms", "errors<5ms", "lag>1", "tft_p99<1s", "submit:ttft_p99<1s"):
        with pytest.raises(Exception, match="bad threshold"):
            parse(bad)


def test_thresholds_on_stream_figures():
    """A stream figure (--stream) is judged over the whole run from its own table; a run
    that did not measure it says so in one line."""
    doc = {
        **DOC,
        "first_byte_ms": {"p99": 210.0},
        "chunk_gap_ms": {"p50": 20.0, "max": 45.0},
        "completion": {"ttft_ms": {"p99": 480.0, "mean": 300.0}, "itl_ms": {"p50": 21.0}},
    }
    cases = [
        ("ttft_p99<500ms", True),
        ("ttft_p99<0.4s", False),
        ("ttft_mean<=300", True),
        ("itl_p50<20ms", False),
        ("first_byte_p99<250ms", True),
        ("chunk_gap_max<40ms", False),
    ]
    for text, holds in cases:
        assert (check([parse(text)], doc) == []) is holds, text
    (line,) = check([parse("ttft_p99<0.4s")], doc)
    assert line == "threshold ttft_p99<0.4s failed: ttft_p99 was 480.00ms"
    with pytest.raises(Exception, match="measured no ttft") as e:
        check([parse("ttft_p99<1s")], DOC)
    assert "--stream" in str(e.value)


@pytest.mark.parametrize(("hedge", "field"), [(None, None), ("0", None), ("60", 60)])
def test_a_setting_shapes_the_request_at_compile_time(hedge, field):
    """examples/hedging.py: ``u.setting`` is the run variable's value when the scenario
    compiles: HEDGE_MS=60 sends ``hedge_after_ms`` as a JSON number (taskqueue refuses a
    string), and 0 or none leaves the field out."""
    given = {"ORIGIN": "http://127.0.0.1:9/"} | ({"HEDGE_MS": hedge} if hedge else {})
    c = load("examples/hedging.py", given)
    (flow,) = c.plan["flows"]
    template = flow["steps"][0]["body"]["template"]
    text = "".join(p if isinstance(p, str) else "ORIGIN" for p in template)
    body = json.loads(text)
    assert body.get("hedge_after_ms") == field and body["timeout_ms"] == 300, body
    assert c.plan["vars"]["var.HEDGE_MS"] == (hedge or "0")


def test_a_setting_not_given_is_a_compile_error(tmp_path):
    path = write(
        tmp_path,
        """\
        s = Scenario()
        @s.flow
        def a(u):
            u.get("/", params={"n": int(u.setting("N"))})
        """,
    )
    with pytest.raises(ScenarioError, match="give --var N=VALUE") as e:
        load(path)
    assert e.value.line == 5
