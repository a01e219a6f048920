"""The tree's shape (#18): no source file over 600 lines, no function over 80.

A longer file or function passes only with its reason written down:

- a function: a comment line ``# long: <reason>`` (Python) or ``// long: <reason>`` (Rust) in
  the block of comments, decorators, attributes and doc comments directly above its ``def`` or
  ``fn`` line, or as the first line of its body;
- a file: a line containing ``long file: <reason>`` in its first 20 lines.

A function's length runs from its ``def``/``fn`` line to its last line. Python functions are
found with ``ast`` (methods and nested functions included); Rust ones by a small scanner that
blanks out comments, strings and char literals and then matches braces.
"""

from __future__ import annotations

import ast
import bisect
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: The folders the check walks, relative to the repository root (globs allowed).
ROOTS = (
    "python/redline",
    "services/taskqueue/src",
    "services/taskqueue/tests",
    "tests",
    "bench",
    "examples",
    "crates/*/src",
    "crates/*/tests",
)

MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 80
#: How many of a file's first lines may carry its ``long file:`` reason.
FILE_REASON_LINES = 20

PY_REASON = re.compile(r"^\s*#\s*long:\s*\S")
RS_REASON = re.compile(r"^\s*//[/!]?\s*long:\s*\S")
FILE_REASON = re.compile(r"long file:\s*\S")


@dataclass(frozen=True)
class Function:
    """One function: its name, its first (``def``/``fn``) line and its last line, 1-based."""

    name: str
    line: int
    end: int
    reason: bool

    @property
    def lines(self) -> int:
        return self.end - self.line + 1


# --- Python -------------------------------------------------------------------------------


def _is_docstring(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    )


def _py_reason(lines: list[str], node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """_py_reason: a ``# long:`` comment above the def (among its decorators) or atop its body."""
    top = min([d.lineno for d in node.decorator_list] + [node.lineno])
    # decorators and comments between them, then the comment block directly above them
    candidates = list(range(top, node.lineno))
    i = top - 1
    while i >= 1 and lines[i - 1].lstrip().startswith("#"):
        candidates.append(i)
        i -= 1
    # the first lines of the body: before its first statement, or right after a docstring
    body = node.body
    candidates += range(node.lineno + 1, body[0].lineno)
    if _is_docstring(body[0]) and len(body) > 1:
        candidates += range((body[0].end_lineno or body[0].lineno) + 1, body[1].lineno)
    return any(PY_REASON.match(lines[n - 1]) for n in candidates)


def _defs(statements: list[ast.stmt]) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    """_defs: the defs among STATEMENTS and in their blocks (a def is a statement, so this
    walks statement lists only: several times faster than ast.walk)."""
    for s in statements:
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield s
        for block in ("body", "orelse", "finalbody"):
            yield from _defs(getattr(s, block, []))
        for part in getattr(s, "handlers", []) + getattr(s, "cases", []):
            yield from _defs(part.body)


def python_functions(source: str) -> list[Function]:
    """python_functions lists every def in SOURCE: functions, methods, nested ones."""
    lines = source.splitlines()
    found = []
    for node in _defs(ast.parse(source).body):
        end = node.end_lineno or node.lineno
        found.append(Function(node.name, node.lineno, end, _py_reason(lines, node)))
    return sorted(found, key=lambda f: f.line)


# --- Rust ---------------------------------------------------------------------------------

#: Where a stretch that is not code may start: a comment, a (raw, byte) string, a quote.
_RS_SPECIAL = re.compile(r"//|/\*|(?<![A-Za-z0-9_])b?r(#*)\"|\"|'")
_RS_STRING = re.compile(r'"(?:\\.|[^"\\])*"', re.S)
_RS_CHAR = re.compile(r"'(?:\\(?:u\{[0-9A-Fa-f]{1,6}\}|x[0-9A-Fa-f]{2}|.)|[^\\'\n])'")
_RS_BLOCK = re.compile(r"/\*|\*/")
_RS_FN = re.compile(r"\bfn\s+(?:r#)?([A-Za-z_][A-Za-z0-9_]*)")
_RS_HEAD = re.compile(r"[()\[\]{;]")


def _blank(text: str) -> str:
    """_blank: TEXT with everything but its newlines turned to spaces (offsets kept)."""
    return re.sub(r"[^\n]", " ", text)


def rust_code(source: str) -> str:
    """rust_code: SOURCE with its comments, strings and char literals blanked out.

    The result has the same length and the same line breaks, so offsets and line numbers in
    it are those of SOURCE. Block comments nest, as in Rust; a quote that starts no char
    literal is a lifetime or a label and stays.
    """
    out = []
    pos = 0
    n = len(source)
    while pos < n:
        m = _RS_SPECIAL.search(source, pos)
        if m is None:
            out.append(source[pos:])
            break
        out.append(source[pos : m.start()])
        start, token = m.start(), m.group(0)
        if token == "//":
            end = source.find("\n", start)
            end = n if end < 0 else end
        elif token == "/*":
            depth, end = 0, n
            for b in _RS_BLOCK.finditer(source, start):
                depth += 1 if b.group(0) == "/*" else -1
                if depth == 0:
                    end = b.end()
                    break
        elif token.endswith('"') and "r" in token:
            close = source.find('"' + m.group(1), m.end())
            end = n if close < 0 else close + 1 + len(m.group(1))
        elif token == '"':
            s = _RS_STRING.match(source, start)
            end = s.end() if s else n
        else:  # a quote: a char literal, or a lifetime or label that stays code
            c = _RS_CHAR.match(source, start)
            if c is None:
                out.append(token)
                pos = m.end()
                continue
            end = c.end()
        out.append(_blank(source[start:end]))
        pos = end
    return "".join(out)


def _rs_reason(lines: list[str], fn_line: int, body_line: int) -> bool:
    """_rs_reason: a ``// long:`` comment above the fn (among its attributes and doc comments)
    or atop its body. FN_LINE and BODY_LINE (its opening brace's) are 1-based."""
    candidates = []
    i = fn_line - 1
    while i >= 1:
        text = lines[i - 1].strip()
        if not text or (not text.startswith("//") and text.endswith(("{", "}", ";"))):
            break
        candidates.append(i)
        i -= 1
    i = body_line + 1
    while i <= len(lines) and lines[i - 1].lstrip().startswith("//"):
        candidates.append(i)
        i += 1
    return any(RS_REASON.match(lines[n - 1]) for n in candidates)


def rust_functions(source: str) -> list[Function]:
    """rust_functions lists every ``fn`` with a body in SOURCE (nested ones included)."""
    code = rust_code(source)
    lines = source.splitlines()
    breaks = [m.start() for m in re.finditer("\n", code)]

    def line_of(offset: int) -> int:
        return bisect.bisect_left(breaks, offset) + 1

    closing: dict[int, int] = {}
    stack: list[int] = []
    for b in re.finditer(r"[{}]", code):
        if b.group(0) == "{":
            stack.append(b.start())
        elif stack:
            closing[stack.pop()] = b.start()
    found = []
    for m in _RS_FN.finditer(code):
        depth, open_at = 0, None
        for s in _RS_HEAD.finditer(code, m.end()):
            c = s.group(0)
            if c in "([":
                depth += 1
            elif c in ")]":
                depth -= 1
            elif depth == 0:
                open_at = s.start() if c == "{" else None
                break
        if open_at is None or open_at not in closing:
            continue  # a declaration without a body, or braces that do not match
        first, body = line_of(m.start()), line_of(open_at)
        end = line_of(closing[open_at])
        found.append(Function(m.group(1), first, end, _rs_reason(lines, first, body)))
    return found


# --- the tree -----------------------------------------------------------------------------


def source_files() -> list[Path]:
    """source_files: every *.py and *.rs under ROOTS, each once."""
    files: set[Path] = set()
    for pattern in ROOTS:
        for folder in ROOT.glob(pattern):
            for suffix in ("*.py", "*.rs"):
                files.update(p for p in folder.rglob(suffix) if "__pycache__" not in p.parts)
    return sorted(files)


def offenders(path: Path, source: str) -> list[str]:
    """offenders: 'path:line name (N lines)' for the file and each function of it that is too
    long and says no reason."""
    shown = path.relative_to(ROOT) if path.is_absolute() else path
    lines = source.splitlines()
    found = []
    if len(lines) > MAX_FILE_LINES and not any(
        FILE_REASON.search(line) for line in lines[:FILE_REASON_LINES]
    ):
        found.append(f"{shown}:1 <file> ({len(lines)} lines)")
    functions = python_functions(source) if path.suffix == ".py" else rust_functions(source)
    for f in functions:
        if f.lines > MAX_FUNCTION_LINES and not f.reason:
            found.append(f"{shown}:{f.line} {f.name} ({f.lines} lines)")
    return found


def test_no_long_files_or_functions_without_a_reason() -> None:
    files = source_files()
    assert any(p.suffix == ".rs" for p in files) and any(p.suffix == ".py" for p in files)
    found = [o for p in files for o in offenders(p, p.read_text(encoding="utf-8"))]
    assert not found, (
        f"over {MAX_FILE_LINES} lines a file, or over {MAX_FUNCTION_LINES} a function, and no"
        " `long: <reason>` comment (tests/test_tree.py says where):\n" + "\n".join(found)
    )


# --- the scanners themselves --------------------------------------------------------------

RUST_SNIPPET = r"""
/// Doc with a brace { and fn fake() {
pub fn first(x: &str) -> usize {
    let s = "a } string { with fn inside() {";
    let r = r#"raw " } { "#;
    let c = '}';
    let o = '{';
    let q = '\'';
    let u = '\u{7d}';
    // a comment } {
    /* a block /* nested } */ { */
    x.len()
}

impl<'a> Thing<'a> {
    fn second<'b>(&'b self, a: [u8; 4]) -> &'a str where 'a: 'b {
        fn inner() -> u32 {
            'outer: loop { break 'outer; }
            1
        }
        self.0
    }

    fn declared(&self);
}

// long: a table of cases, best read whole
#[test]
fn third() {
    let b = b'}';
    let f: fn(u32) -> u32 = |x| x;
}
"""


def test_rust_scanner_ignores_braces_in_strings_comments_and_chars() -> None:
    code = rust_code(RUST_SNIPPET)
    assert len(code) == len(RUST_SNIPPET) and code.count("\n") == RUST_SNIPPET.count("\n")
    assert "string" not in code and "raw" not in code and "nested" not in code
    assert "'outer" in code  # a label, not a char literal
    got = {f.name: (f.line, f.end, f.reason) for f in rust_functions(RUST_SNIPPET)}
    assert got == {
        "first": (3, 13, False),
        "second": (16, 22, False),
        "inner": (17, 20, False),
        "third": (29, 32, True),
    }


def test_python_scanner_finds_methods_and_nested_functions() -> None:
    source = (
        "class A:\n"
        "    # long: a reason\n"
        "    @staticmethod\n"
        "    def m():\n"
        "        def inner():\n"
        "            # long: another\n"
        "            return 1\n"
        "        return inner\n"
        "\n"
        "async def top():\n"
        '    """Doc."""\n'
        "    # long:\n"
        "    pass\n"
    )
    got = {f.name: (f.line, f.end, f.reason) for f in python_functions(source)}
    assert got == {"m": (4, 8, True), "inner": (5, 7, True), "top": (10, 13, False)}


def test_offenders_are_listed_with_their_lengths() -> None:
    long_fn = "def f():\n" + "    x = 1\n" * MAX_FUNCTION_LINES
    assert offenders(Path("a.py"), long_fn) == [f"a.py:1 f ({MAX_FUNCTION_LINES + 1} lines)"]
    assert offenders(Path("a.py"), "# long: a table\n" + long_fn) == []
    many = "x = 1\n" * (MAX_FILE_LINES + 1)
    assert offenders(Path("b.py"), many) == [f"b.py:1 <file> ({MAX_FILE_LINES + 1} lines)"]
    assert offenders(Path("b.py"), "# long file: generated\n" + many) == []
    assert offenders(Path("b.py"), "# long file:\n" + many) != []
    rust = "fn g() {\n" + "    x();\n" * MAX_FUNCTION_LINES + "}\n"
    assert offenders(Path("c.rs"), rust) == [f"c.rs:1 g ({MAX_FUNCTION_LINES + 2} lines)"]
    assert offenders(Path("c.rs"), "/// Doc.\n// long: many steps\n" + rust) == []
