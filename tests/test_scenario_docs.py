"""docs/scenarios.md's flows for users coming from Locust and from k6: every redline flow
shown beside theirs compiles (a document's example that does not is a lie), and the two
redline versions of the signed request (the engine's functions, Locust's code as a Python
step) send the same request."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from redline.scenario import load

DOC = Path(__file__).resolve().parents[1] / "docs" / "scenarios.md"

#: PRELUDE: what the document's fragments take as given (their imports, KEY, a scenario).
PRELUDE = """\
import base64, hashlib, hmac, json, time, uuid
from redline.scenario import *
KEY = "k3y"
"""


def sections() -> str:
    """sections: the text of the "Coming from Locust" and "Coming from k6" sections."""
    text = DOC.read_text()
    start = text.index("\n## Coming from Locust\n")
    end = text.index("\n## ", text.index("\n## Coming from k6\n") + 1)
    return text[start:end]


def redline_blocks() -> list[tuple[str, str]]:
    """redline_blocks: (first line, code) of each python block headed `# redline...`."""
    blocks = re.findall(r"```python\n(# redline[^\n]*)\n(.*?)```", sections(), re.S)
    assert len(blocks) >= 4, blocks
    return blocks


def compile_block(tmp_path: Path, code: str) -> dict:
    (tmp_path / "users.csv").write_text("username,password\nann,pw1\nbob,pw2\n")
    head = PRELUDE
    if "Scenario(" not in code:
        head += "scenario = Scenario()\n"
    if "@scenario.flow" in code and "scenario.data(" not in code and "u.row(" in code:
        head += 'scenario.data("users", "users.csv")\n'
    path = tmp_path / "flow.py"
    path.write_text(head + code)
    return load(path).plan


@pytest.mark.parametrize("title,code", redline_blocks(), ids=lambda v: v[:40])
def test_each_redline_flow_beside_locust_and_k6_compiles(tmp_path, title, code):
    plan = compile_block(tmp_path, code)
    assert plan["flows"], title


def test_both_sides_name_the_other_tool():
    text = sections()
    assert text.count("# Locust") >= 2 and text.count("// k6") >= 2


def test_the_signed_request_is_the_same_with_functions_and_with_a_python_step(tmp_path):
    blocks = dict(redline_blocks())
    engine = compile_block(tmp_path, blocks["# redline, the engine's functions"])
    python = compile_block(tmp_path, blocks["# redline, Locust's code as a Python step"])

    def request(plan: dict) -> dict:
        return next(s for s in plan["flows"][0]["steps"] if s["step"] == "request")

    a, b = request(engine), request(python)
    assert [h[0] for h in a["headers"]] == [h[0] for h in b["headers"]]
    assert (a["method"], a["path"]) == (b["method"], b["path"]) == ("POST", ["/orders"])
    assert python["python"][0]["name"] == "sign"
