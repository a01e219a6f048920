"""Branches and loops as the tracer compiles them (redline.scenario.control and
condition): the plan's steps and conditions, and every misuse as one FILE:LINE message."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from redline.scenario import ScenarioError, load

HEADER = "from redline.scenario import *\n"


def write(tmp_path: Path, body: str) -> Path:
    p = tmp_path / "s.py"
    p.write_text(HEADER + textwrap.dedent(body))
    return p


def flow_steps(tmp_path: Path, body: str, run_vars: dict[str, str] | None = None) -> list:
    return load(write(tmp_path, body), run_vars).plan["flows"][0]["steps"]


def test_when_otherwise_when_otherwise_compile_to_one_step(tmp_path):
    steps = flow_steps(
        tmp_path,
        """\
        s = Scenario()
        @s.flow
        def f(u):
            r = u.get("/", name="a")
            st = r.json("$.status")
            with u.when(st == "SUCCEEDED"):
                u.get("/ok", name="ok")
            with u.otherwise_when((r.status >= 500) | ~status(200, 404)):
                u.get("/bad", name="bad")
            with u.otherwise():
                u.get("/other", name="other")
        """,
    )
    _, when = steps
    assert when["step"] == "when" and when["line"] == 7
    first, second = when["branches"]
    st = {"var": steps[0]["extract"][0]["var"]}
    assert first["if"] == {"cond": "cmp", "left": st, "op": "==", "right": {"value": "SUCCEEDED"}}
    assert [s["name"] for s in first["steps"]] == ["ok"]
    code = steps[0]["extract"][1]
    assert code["from"] == "status"
    assert second["if"] == {
        "cond": "any",
        "of": [
            {"cond": "cmp", "left": {"var": code["var"]}, "op": ">=", "right": {"value": 500}},
            {
                "cond": "not",
                "of": {"cond": "check", "check": {"check": "status", "in": [200, 404]}},
            },
        ],
    }
    assert second["line"] == 9
    assert [s["name"] for s in when["else"]] == ["other"]


def test_comparisons_both_ways_sets_regexes_and_defaults(tmp_path):
    steps = flow_steps(
        tmp_path,
        """\
        s = Scenario()
        @s.flow
        def f(u):
            r = u.get("/")
            n = r.json("$.n", default="0")
            x = r.header("X")
            with u.when(all_of(3 < n, n.is_in([1, "x"]), u.vu.not_in([0]), x.matches("^a"))):
                u.stop_iteration()
        """,
    )
    (x_n, x_h) = steps[0]["extract"]
    assert x_n["default"] == "0" and x_h["from"] == "header" and "default" not in x_h
    cond = steps[1]["branches"][0]["if"]
    n = {"var": x_n["var"]}
    assert cond["of"] == [
        {"cond": "cmp", "left": n, "op": ">", "right": {"value": 3}},
        {"cond": "in", "left": n, "values": [1, "x"], "negate": False},
        {"cond": "in", "left": {"var": "vu"}, "values": [0], "negate": True},
        {"cond": "match", "var": x_h["var"], "pattern": "^a"},
    ]
    assert steps[1]["branches"][0]["steps"] == [{"step": "stop", "cond": None, "line": 9}]


def test_repeat_until_and_stop(tmp_path):
    (tmp_path / "d.csv").write_text("n\n2\n0\n")
    steps = flow_steps(
        tmp_path,
        """\
        s = Scenario()
        s.data("d", "d.csv")
        @s.flow
        def f(u):
            with u.repeat(u.var("N")):
                u.get("/a")
            with u.loop(u.row("d")["n"]):
                u.get("/b")
            with u.until(json_eq("$.s", "DONE"), limit=5):
                u.get("/c")
            with u.until(lambda: r.json("$.s") == "DONE", limit=2):
                r = u.get("/d")
            u.stop_iteration(u.iteration >= 9)
        """,
        {"N": "4"},
    )
    rep, loop, until, lazy, stop = steps
    assert rep["step"] == "repeat" and rep["count"] == {"var": "var.N"}
    assert loop["count"] == {"var": "data.d.n"}
    assert until["limit"] == 5 and until["cond"]["cond"] == "check"
    assert lazy["cond"]["left"] == {"var": lazy["steps"][0]["extract"][0]["var"]}
    assert stop["cond"]["right"] == {"value": 9}


#: (label, flow body, line the message must name, words in it)
MISUSES = [
    (
        "if on a condition",
        """\
        r = u.get("/")
        if r.json("$.s") == "X":
            pass
        """,
        6,
        "write `with u.when(condition):`",
    ),
    (
        "and between conditions",
        """\
        r = u.get("/")
        with u.when(r.status == 200 and r.json("$.s") == "X"):
            pass
        """,
        6,
        "not with and/or/not",
    ),
    (
        "loop of a run variable that is no number",
        "with u.loop(u.var('N')):\n    u.get('/')\n",
        5,
        "repeat count var.N is 'x'",
    ),
    ("repeat of a string", "with u.repeat('3'):\n    u.get('/')\n", 5, "repeat count must be"),
    (
        "otherwise without when",
        "u.get('/')\nwith u.otherwise():\n    pass\n",
        6,
        "must come right after",
    ),
    (
        "otherwise after another step",
        """\
        r = u.get("/")
        with u.when(r.status == 200):
            u.get("/a")
        u.get("/b")
        with u.otherwise():
            pass
        """,
        9,
        "must come right after",
    ),
    (
        "two otherwise",
        """\
        r = u.get("/")
        with u.when(r.status == 200):
            pass
        with u.otherwise():
            pass
        with u.otherwise():
            pass
        """,
        10,
        "already has its else",
    ),
    ("when of a bool", "u.get('/')\nwith u.when(True):\n    pass\n", 6, "takes a condition"),
    (
        "check before any request",
        "with u.when(status(200)):\n    u.get('/')\n",
        5,
        "no request comes before",
    ),
    (
        "until without a limit",
        "with u.until(status(200), limit=0):\n    u.get('/')\n",
        5,
        "limit must be",
    ),
    (
        "until with no request",
        "u.get('/')\nwith u.until(status(200), limit=3):\n    u.think(1)\n",
        6,
        "sends no request",
    ),
    (
        "a variable set in one branch only",
        """\
        r = u.get("/")
        with u.when(r.status == 200):
            tok = u.get("/login").header("X-Token")
        u.get(f"/use/{tok}")
        """,
        8,
        "set only in some branches of the when (or in a repeat that may run no round) at line 6",
    ),
    (
        "a variable set in the when but not its otherwise",
        """\
        r = u.get("/")
        tok = u.variable()
        with u.when(r.status == 200):
            u.get("/a").header("X-Token", into=tok)
        with u.otherwise():
            u.get("/b")
        u.get(f"/use/{tok}")
        """,
        11,
        "at line 7",
    ),
    (
        "a variable never set",
        "tok = u.variable()\nu.get(f'/use/{tok}')\n",
        6,
        "used before it is extracted",
    ),
    (
        "a variable set in a repeat of a run-time count",
        """\
        with u.repeat(u.iteration):
            tok = u.get("/login").header("X-Token")
        u.get(f"/use/{tok}")
        """,
        7,
        "set only in some branches",
    ),
    (
        "compare with text built from a value",
        "r = u.get('/')\nwith u.when(r.status == f'{u.vu}x'):\n    pass\n",
        6,
        "not with text built from one",
    ),
]


def in_a_flow(body: str) -> str:
    """in_a_flow: a scenario whose one flow's body is `body` (its first line is line 4)."""
    return "s = Scenario()\n@s.flow\ndef f(u):\n" + textwrap.indent(textwrap.dedent(body), "    ")


#: (label, whole scenario, line, words): misuses outside a flow's body.
SCENARIO_MISUSES = [
    (
        "stop in the setup",
        """\
        s = Scenario()
        @s.setup
        def login(u):
            u.stop_iteration()
        @s.flow
        def f(u):
            u.get("/")
        """,
        5,
        "stop_iteration() belongs in a flow",
    ),
]

CASES = [(label, in_a_flow(body), line, words) for label, body, line, words in MISUSES]
CASES += SCENARIO_MISUSES


@pytest.mark.parametrize("label,text,line,words", CASES, ids=[c[0] for c in CASES])
def test_misuses_name_file_and_line(tmp_path, label, text, line, words):
    path = write(tmp_path, text)
    with pytest.raises(ScenarioError) as e:
        load(path, {"N": "x"})
    assert words in str(e.value), str(e.value)
    assert e.value.line == line, str(e.value)
    assert str(e.value).startswith(f"{path}:{line}: ")


def test_a_variable_set_in_every_branch_is_usable_after(tmp_path):
    steps = flow_steps(
        tmp_path,
        """\
        s = Scenario()
        @s.flow
        def f(u):
            r = u.get("/")
            tok = u.variable()
            with u.when(r.status == 200):
                u.get("/a").header("X-Token", into=tok)
            with u.otherwise_when(r.status == 201):
                u.get("/b").json("$.token", into=tok)
            with u.otherwise():
                u.get("/c").regex("t=(.*)", into=tok)
            with u.repeat(2):
                n = u.get("/d").json("$.n")
            u.get(f"/use/{tok}/{n}")
        """,
    )
    when = steps[1]
    sets = [b["steps"][0]["extract"][0]["var"] for b in when["branches"]]
    sets.append(when["else"][0]["extract"][0]["var"])
    assert sets == [tok := sets[0]] * 3
    assert steps[-1]["path"][:2] == ["/use/", {"var": tok}]
