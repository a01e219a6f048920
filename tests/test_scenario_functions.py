"""The functions the engine computes per request (u.b64encode, u.hmac_sha256, u.uuid4, u.now,
u.length, u.upper, ...): compiled into the plan, then run against a server that checks every
request (tests/verifier.py). The issue's four silent cases, written with them, send the right
bytes on every request: the server counts 0 wrong, and as many right as redline counted."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from conftest import run_cli
from redline.scenario import ScenarioError, load
from verifier import KEY, Verifier

ROWS = {"alice": "pw1", "bob": "s3cret-pw", "zoë": "ünï:cödé", "x": "a b&c=d"}

FLOWS = f"""\
from redline.scenario import *
s = Scenario()
s.data("users", "users.csv")
KEY = {KEY!r}

@s.flow
def basic(u):
    row = u.row("users")
    auth = u.b64encode(f"{{row['username']}}:{{row['password']}}")
    u.get("/basic", params={{"user": row["username"]}},
          headers={{"Authorization": "Basic " + auth}}, name="basic")

@s.flow
def signed(u):
    with u.loop(2):                                   # a new UUID each round
        rid, ts = u.uuid4(), u.now()
        body = u.json_encode({{"vu": u.vu, "iteration": u.iteration, "id": rid, "ts": ts}})
        u.post("/signed", body=body, name="signed",
               headers={{"Content-Type": "application/json", "X-Request-Id": rid,
                        "X-Timestamp": ts, "X-Signature": u.hmac_sha256(KEY, body)}})

@s.flow
def length(u):
    name = u.row("users")["username"]
    u.get("/len", headers={{"X-Name": name, "X-Len": u.length(name), "X-Upper": u.upper(name)}},
          name="len")
"""


def write(tmp_path: Path, text: str) -> Path:
    lines = "".join(f"{u},{p}\n" for u, p in ROWS.items())
    (tmp_path / "users.csv").write_text("username,password\n" + lines, encoding="utf-8")
    path = tmp_path / "flows.py"
    path.write_text(text, encoding="utf-8")
    return path


def run(tmp_path: Path, path: Path, url: str, *argv: str) -> dict:
    out = tmp_path / "r.json"
    p = run_cli("run", str(path), "--host", url, "-q", "--json", str(out), *argv)
    assert p.returncode == 0, p.stderr
    return json.loads(out.read_text())


def test_the_four_cases_send_the_right_bytes_on_every_request(tmp_path):
    path = write(tmp_path, FLOWS)
    with Verifier(ROWS) as v:
        doc = run(tmp_path, path, v.url, "-u", "4", "--iterations", "150")
    assert sum(v.wrong.values()) == 0, v.reasons
    per_name = doc["per_name"]
    routes = {"basic": "/basic", "signed": "/signed", "len": "/len"}
    for name, route in routes.items():
        assert per_name[name]["requests"] == v.right[route] > 0, (name, v.right)
        assert per_name[name]["errors"] == 0
    # 4 VUs x 150 iterations (one request each, two for the signed flow): every one reached
    # the server and was judged right, every UUID new.
    assert doc["scenario"]["iterations"]["completed"] == 600
    assert sum(v.right.values()) == doc["requests"] == 600 + v.right["/signed"] // 2
    assert len(v.ids) == v.right["/signed"], "every UUID was new"


def test_a_value_that_cannot_be_computed_fails_its_request_with_the_reason(tmp_path):
    path = write(
        tmp_path,
        textwrap.dedent("""\
        from redline.scenario import *
        s = Scenario()
        @s.flow
        def f(u):
            u.get("/plain", headers={"X-Key": u.b64decode(u.var("B64"))}, name="decode")
        """),
    )
    with Verifier() as v:
        bad = run(tmp_path, path, v.url, "-u", "2", "--iterations", "5", "--var", "B64=!!x")
        good = run(tmp_path, path, v.url, "-u", "2", "--iterations", "5", "--var", "B64=YWI=")
    assert v.right["/plain"] == 20, "sent, all of them"
    assert bad["per_name"]["decode"]["errors"] == 10
    assert bad["per_name"]["decode"]["failure_reasons"] == {"base64_decode: not base64": 10}
    assert good["per_name"]["decode"]["errors"] == 0


def test_functions_and_draws_in_the_plan(tmp_path):
    path = write(tmp_path, FLOWS)
    flows = {f["name"]: f["steps"] for f in load(path).plan["flows"]}
    (get,) = flows["basic"]
    assert get["headers"] == [
        [
            "Authorization",
            [
                "Basic ",
                {
                    "fn": "base64",
                    "args": [[{"var": "data.users.username"}, ":", {"var": "data.users.password"}]],
                },
            ],
        ]
    ]
    (loop,) = flows["signed"]
    uuid, now, post = loop["steps"]
    assert (uuid["fn"], uuid["args"], now["fn"], now["args"]) == ("uuid4", [], "now", ["unix"])
    sig = dict(post["headers"])["X-Signature"]
    assert sig == [
        {"fn": "hmac_sha256", "args": [[KEY], post["body"]["template"]], "encoding": "hex"}
    ]


#: (label, the call, words of the one-line error)
MISUSED = [
    ("encoding", 'u.get("/", headers={"S": u.sha256("x", encoding="b32")})', "'hex' or 'base64'"),
    ("pad width", 'u.get(f"/{u.pad(u.vu, -1)}")', "pad: width"),
    ("random bounds", 'u.get(f"/{u.random_int(5, 1)}")', "low <= high"),
    ("time format", "u.get(f\"/{u.now('iso')}\")", "format must be one of"),
    ("binary key", 'u.get("/", headers={"S": u.hmac_sha256(b"\\xff", "x")})', "must be text"),
    ("before extraction", 'u.get("/", headers={"S": u.sha1(u.var("Q"))})', "not set"),
]


@pytest.mark.parametrize("label,call,words", MISUSED, ids=[m[0] for m in MISUSED])
def test_a_misused_function_is_one_line_with_its_line(tmp_path, label, call, words):
    path = write(
        tmp_path,
        f"from redline.scenario import *\ns = Scenario()\n@s.flow\ndef f(u):\n    {call}\n",
    )
    with pytest.raises(ScenarioError) as e:
        load(path)
    assert str(e.value).startswith(f"{path}:5: "), str(e.value)
    assert words in str(e.value)


def test_the_refusal_names_the_function_to_use_instead(tmp_path):
    path = write(
        tmp_path,
        textwrap.dedent("""\
        import base64
        from redline.scenario import *
        s = Scenario()
        @s.flow
        def f(u):
            name = u.var("N", "ann")
            u.get("/", headers={"A": base64.b64encode(f"{name}".encode()).decode()})
        """),
    )
    with pytest.raises(ScenarioError) as e:
        load(path)
    assert "u.b64encode(...)" in str(e.value) and str(e.value).startswith(f"{path}:7: ")
    with pytest.raises(ScenarioError, match=r"use u\.upper\(value\)"):
        path.write_text(
            path.read_text().replace(
                'base64.b64encode(f"{name}".encode()).decode()', "name.upper()"
            )
        )
        load(path)
