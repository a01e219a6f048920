"""Run-time values used by ordinary Python at compile time: every way of turning one into a
constant (the four silent cases of issue 33 among them) is refused before the run, one line
naming the file and line of the step and the field; what is legitimate still compiles."""

from __future__ import annotations

import glob
import textwrap
from pathlib import Path

import pytest
from conftest import run_cli
from redline.scenario import ScenarioError, load

HEADER = """\
import base64, hashlib, hmac, random, time
from redline.scenario import *
s = Scenario()
s.data("users", "users.csv")
@s.flow
def f(u):
    row = u.row("users")
    name = u.var("NAME", "ann")
"""
#: FIRST: the line of the first statement a case adds to the flow.
FIRST = HEADER.count("\n") + 1


def write(tmp_path: Path, body: str) -> Path:
    (tmp_path / "users.csv").write_text("username,password\nalice,pw1\nbob,pw2\n")
    p = tmp_path / "s.py"
    p.write_text(HEADER + textwrap.indent(textwrap.dedent(body), "    "))
    return p


#: (label, the flow's statements (the last one is the line named), words in the message)
REFUSED = [
    (
        "basic auth: base64 of an f-string of CSV columns",
        """\
        tok = base64.b64encode(f"{row['username']}:{row['password']}".encode()).decode()
        u.get("/", headers={"Authorization": f"Basic {tok}"})
        """,
        "header 'Authorization' is computed by Python from a run-time value",
    ),
    (
        "hmac over a body holding {u.vu}",
        """\
        body = f'{{"vu": "{u.vu}"}}'
        sig = hmac.new(b"key", body.encode(), hashlib.sha256).hexdigest()
        u.post("/", body=body, headers={"X-Sig": sig})
        """,
        "header 'X-Sig' is computed by Python from a run-time value",
    ),
    (
        "len of an f-string",
        """\
        u.get("/", headers={"X-Len": str(len(f"{name}"))})
        """,
        "header 'X-Len' is computed by Python from a run-time value",
    ),
    ("upper on the value", 'u.get("/", headers={"X-Up": name.upper()})\n', ".upper() would"),
    ("upper on an f-string", 'u.get("/", params={"q": f"{name}".upper()})\n', ".upper()"),
    ("slicing an f-string", 'u.get(f"/x/{str(name)[:4]}")\n', "cut apart"),
    (
        "replace on an f-string",
        'u.get("/", params={"q": f"{name}".replace(" ", "+")})\n',
        "Python string code over it",
    ),
    ("split on an f-string", "u.get(f\"/x/{f'{name}'.split(':')[0]}\")\n", "cut apart"),
    ("len of the value", 'u.get("/", headers={"X-Len": str(len(name))})\n', "len() would"),
    ("zfill", 'u.get(f"/{u.vu.zfill(6)}")\n', "use u.pad(value, width)"),
    ("encode", 'u.post("/", body=name.encode())\n', ".encode() would"),
    ("indexing", 'u.get(f"/{name[0]}")\n', "indexing"),
    ("int", 'u.post("/", json={"n": int(u.vu)})\n', "int() would"),
    ("format spec", 'u.get(f"/x/{u.vu:08d}")\n', "format spec ':08d'"),
    (
        "json body hashed",
        'u.post("/", json={"h": hashlib.sha1(str(name).encode()).hexdigest()})\n',
        "the JSON body is computed",
    ),
    ("form field", 'u.post("/", form={"n": str(len(f"{name}"))})\n', "form field 'n'"),
    ("repr in an f-string", 'u.get(f"/x/{name!r}")\n', "the path is computed by Python"),
    ("in a name", 'u.get("/", name=f"get {name}")\n', "request's name cannot hold"),
    ("in choice", 'u.choice([name, "x"])\n', "options of u.choice cannot hold"),
    (
        "random at compile time",
        'u.get(f"/x/{random.randint(1, 10**9)}")\n',
        "the path differs from one compilation to the next",
    ),
    (
        "the clock at compile time",
        'u.get("/", headers={"X-T": str(time.time_ns())})\n',
        "header 'X-T' differs from one compilation to the next",
    ),
]


@pytest.mark.parametrize("label,body,words", REFUSED, ids=[r[0] for r in REFUSED])
def test_a_constant_computed_from_a_run_time_value_is_refused(tmp_path, label, body, words):
    path = write(tmp_path, body)
    line = FIRST + body.strip().count("\n")
    with pytest.raises(ScenarioError) as e:
        load(path)
    assert str(e.value).startswith(f"{path}:{line}: "), str(e.value)
    assert words in str(e.value), str(e.value)
    assert "used before it is extracted" not in str(e.value)


def test_the_cli_refuses_it_in_one_line_exit_2(tmp_path, free_port):
    body = REFUSED[0][1]
    path = write(tmp_path, body)
    p = run_cli("run", str(path), "--host", f"http://127.0.0.1:{free_port}", "-d", "1s")
    assert p.returncode == 2, p.stderr
    (line,) = p.stderr.strip().splitlines()
    assert line.startswith(f"redline: error: {path}:{FIRST + 1}: header 'Authorization'")
    assert "Traceback" not in p.stderr


def test_what_is_legitimate_still_compiles(tmp_path):
    path = write(
        tmp_path,
        """\
        key = base64.b64encode(b"svc:secret").decode()        # a compile-time constant
        n = int(u.setting("N", "3"))                            # a setting, read at compile time
        tok = u.get("/login").json("$.token")
        u.post(f"/items/{row['username']}", params={"n": n, "who": "%s-%s" % (name, u.vu)},
               headers={"Authorization": f"Basic {key}", "X-Tok": "Bearer " + tok},
               json={"user": row["username"], "pw": row["password"], "n": n, "tags": [tok]},
               name="post")
        """,
    )
    c = load(path)
    login, post = c.plan["flows"][0]["steps"]
    assert post["headers"][0] == ["Authorization", ["Basic c3ZjOnNlY3JldA=="]]
    assert post["query"][1] == ["who", [{"var": "var.NAME"}, "-", {"var": "vu"}]]
    assert post["body"]["template"][0] == '{"user":"'


#: SHIPPED: every scenario file of the repository.
SHIPPED = sorted(
    p
    for p in glob.glob("examples/*.py") + glob.glob("bench/scenarios/*.py")
    if "Scenario(" in Path(p).read_text()
)


@pytest.mark.parametrize("path", SHIPPED)
def test_every_shipped_scenario_still_compiles(path):
    c = load(path, {"ORIGIN": "http://127.0.0.1:9/"})
    assert c.plan["flows"]
