"""jsonpath: the small JSON path dialect extractions and checks use, parsed once at compile
time into a list of keys (str) and indices (int), which is all the engine sees.

    $.id          $.task.status        $.items[0].id        $['odd key']      id  (= $.id)
"""

from __future__ import annotations

import re

_TOKEN = re.compile(
    r"\.([A-Za-z_][A-Za-z0-9_\-]*)|\[(-?\d+)\]|\['((?:[^'\\]|\\.)*)'\]|\[\"((?:[^\"\\]|\\.)*)\"\]"
)


def parse_path(path: str) -> list[str | int]:
    """parse_path turns ``$.a.b[0]`` into ``["a", "b", 0]``; a bare ``a.b`` means ``$.a.b``.
    A path that does not parse raises ValueError naming the offending position."""
    if not isinstance(path, str) or not path:
        raise ValueError(f"JSON path must be a non-empty string, got {path!r}")
    text = path
    if text.startswith("$"):
        text = text[1:]
    elif not text.startswith(("[", ".")):
        text = "." + text
    out: list[str | int] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise ValueError(f"JSON path {path!r} does not parse at {text[pos:]!r}")
        key, index, single, double = m.groups()
        if key is not None:
            out.append(key)
        elif index is not None:
            out.append(int(index))
        else:
            out.append((single if single is not None else double).replace("\\", ""))
        pos = m.end()
    return out
