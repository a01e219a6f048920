"""Python steps (``u.python``) in scenario runs: a signed-request flow whose timestamp, UUID
and HMAC are computed in Python per request, verified by a server (0 wrong); the cost per
call in the report; an exception failing its iteration with the reason counted; a slow step
named by the generator's verdict; and the mistakes refused before the run."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import jsonschema
import pytest
from conftest import run_cli
from verifier import Verifier

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = json.loads((ROOT / "docs/schema/result.schema.json").read_text())


def run_json(tmp_path: Path, *argv: str) -> tuple[object, dict]:
    out = tmp_path / "r.json"
    p = run_cli("run", *argv, "--json", str(out), timeout=120)
    doc = json.loads(out.read_text()) if out.exists() else {}
    if doc:
        jsonschema.validate(doc, SCHEMA)
    return p, doc


def write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "s.py"
    path.write_text(textwrap.dedent(body))
    return path


def test_signed_requests_computed_in_python_are_all_right(tmp_path):
    with Verifier() as server:
        p, doc = run_json(
            tmp_path, str(ROOT / "bench/scenarios/signed_python_flow.py"), "--host", server.url,
            "-u", "8", "-t", "1", "-n", "3000",
        )  # fmt: skip
        right, wrong = server.right["/signed"], sum(server.wrong.values())
    assert p.returncode == 0, p.stderr
    assert (right, wrong) == (3000, 0), server.reasons
    assert doc["per_name"]["signed"]["requests"] == 3000 and doc["errors_total"] == 0
    py = doc["scenario"]["python"]
    assert py["calls"] == 3000 and py["errors"] == 0, py
    assert py["functions"]["sign"]["calls"] == 3000, py
    # A call of sign() (hmac, uuid4, time) costs microseconds, not nothing and not a second.
    assert 1 < py["us_per_call"] < 100_000, py
    assert 0 < py["cpu_share"] <= 1 and py["cpu_s"] > 0, py
    assert "Python steps" in p.stdout and "sign: 3000 calls" in p.stdout, p.stdout


def test_an_exception_fails_the_iteration_with_its_reason(tmp_path):
    path = write(
        tmp_path,
        """
        from redline.scenario import Scenario
        s = Scenario()
        def pick(n):
            if int(n) % 2:
                raise ValueError("odd " + n)
            return n
        @s.flow
        def f(u):
            u.get("/plain?n=" + u.python(pick, u.iteration), name="row")
        """,
    )
    with Verifier() as server:
        p, doc = run_json(tmp_path, str(path), "--host", server.url, "-u", "1", "-n", "10")
    py = doc["scenario"]["python"]
    it = doc["scenario"]["iterations"]
    assert (py["calls"], py["errors"]) == (10, 5), py
    assert it["failed"] == 5 and doc["per_name"]["row"]["requests"] == 5, it
    assert py["reasons"] == {
        "ValueError: odd 1": 1, "ValueError: odd 3": 1, "ValueError: odd 5": 1,
        "ValueError: odd 7": 1, "ValueError: odd 9": 1,
    }  # fmt: skip


def test_a_slow_python_step_is_named_by_the_verdict(tmp_path):
    path = write(
        tmp_path,
        """
        import time
        from redline.scenario import Scenario
        s = Scenario()
        def spin(n):
            end = time.perf_counter() + 0.002
            while time.perf_counter() < end:
                pass
            return n
        @s.flow
        def f(u):
            u.get("/plain?n=" + u.python(spin, u.vu), name="row")
        """,
    )
    with Verifier() as server:
        p, doc = run_json(tmp_path, str(path), "--host", server.url, "-u", "16", "-d", "2s")
    gen = doc["generator"]
    assert gen["limit"] == "python", gen["verdict"]
    assert "limited by the Python step spin" in gen["verdict"]
    py = doc["scenario"]["python"]
    # 16 VUs queue for one thread whose calls take 2 ms: each waits behind the others.
    assert py["busy_ratio"] > 0.5 and py["queue_us_per_call"] > py["us_per_call"], py


@pytest.mark.parametrize(
    ("call", "want"),
    [
        ("u.python(3)", "python(fn, ...): fn must be callable, got 3"),
        ('u.python(len, "x", returns="a")', "python(returns=...) is a tuple of key names"),
    ],
)
def test_mistakes_name_the_line(tmp_path, call, want):
    path = write(
        tmp_path,
        f"""
        from redline.scenario import Scenario
        s = Scenario()
        @s.flow
        def f(u):
            {call}
        """,
    )
    p = run_cli("inspect", str(path))
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert f"s.py:6: {want}" in p.stderr, p.stderr


def test_a_cluster_run_refuses_python_steps(tmp_path):
    from redline.cluster.split import split_config
    from redline.errors import ClusterError

    config = {"url": "http://h/", "connections": 4, "plan": {"python": [{"name": "f"}]}}
    with pytest.raises(ClusterError, match="Python steps"):
        split_config(config, [1, 1], 1.0)


def joined(*args: object, **kwargs: object) -> str:
    return "|".join(map(str, args)) + "|" + ",".join(f"{k}={v}" for k, v in kwargs.items())


#: (label, args, kwargs, returns, fn, values, the outputs or the error's words)
CALLS = [
    ("run-time values in order", ["a", "b"], {}, None, joined, ["1", "2"], ["1|2|"]),
    ("a constant among them", ["a", 7, "b"], {}, None, joined, ["1", "2"], ["1|7|2|"]),
    ("a value twice", ["a", "a"], {}, None, joined, ["1", "1"], ["1|1|"]),
    ("a keyword", ["a"], {"k": "b", "c": 3}, None, joined, ["1", "2"], ["1|k=2,c=3"]),
    (
        "bytes and int results",
        ["a"],
        {},
        ("x", "y"),
        lambda a: {"x": b"by", "y": 4},
        ["1"],
        ["by", "4"],
    ),
    ("not a dict", ["a"], {}, ("x",), lambda a: [a], ["1"], "returned list, not a dict"),
    ("a key missing", ["a"], {}, ("x", "y"), lambda a: {"x": a}, ["1"], "returned no 'y'"),
]


@pytest.mark.parametrize("label,args,kwargs,returns,fn,values,want", CALLS,
                         ids=[c[0] for c in CALLS])  # fmt: skip
def test_a_call_rebuilds_the_arguments_and_reads_the_outputs(
    label, args, kwargs, returns, fn, values, want
):
    """PythonCall, as the binding calls it: the run-time values (here of Vars a and b, one
    for each place the step uses one, in order) put back among the constants, the outputs as
    str; a step of run-time values alone is called with them as they come."""
    from redline.scenario.pystep import PythonCall
    from redline.scenario.template import Var

    def var(v: object) -> object:
        return Var(v) if v in ("a", "b") else v

    call = PythonCall(fn, [var(a) for a in args], {k: var(v) for k, v in kwargs.items()},
                      returns)  # fmt: skip
    if isinstance(want, str):
        with pytest.raises((TypeError, KeyError), match=want):
            call(values)
    else:
        assert call(values) == want
