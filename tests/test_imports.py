"""The tree's imports run one way: a check that fails on an import circle, in the Python
packages (redline, taskqueue) and in the Rust crates (engine, test server, bindings).

An import circle is a set of files each reachable from the others by imports (a strongly
connected component of the import graph, lazy imports inside functions included: they tie the
modules together just the same). The circles that exist today are listed in ``KNOWN`` with the
issue that removes them; the check fails on any other circle, and on a listed circle that is
gone (so the list only shrinks, and a file joining a listed circle is a new circle).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# KNOWN: circles allowed for now, each as the set of its files with the issue that removes it.
# None: the engine's last three (what to send; the run; error classes and metrics) went in
# #18, by moving Stage to the pacer, Target to its own file, idempotent to http, Job and
# the time bounds to job.rs, RunControl to control.rs, a thread's follow to worker.rs and
# the error classes to failure.rs.
KNOWN: dict[frozenset[str], str] = {}


def circles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """circles is the graph's strongly connected components of more than one node (Tarjan's
    algorithm, iterative so a deep graph cannot overflow the stack)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    part = set()
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        part.add(top)
                        if top == node:
                            break
                    if len(part) > 1:
                        found.append(frozenset(part))
    return found


def python_graph(package_dir: Path, root: Path = ROOT) -> dict[str, set[str]]:
    """python_graph maps each module file of the package to the package's module files it
    imports (``import a.b``, ``from a import b``, relative imports, inside functions too)."""
    base = package_dir.parent
    modules: dict[str, Path] = {}
    for path in package_dir.rglob("*.py"):
        parts = list(path.relative_to(base).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    anchor = package.split(".")
                    anchor = anchor[: len(anchor) - (node.level - 1)]
                    source = ".".join(anchor + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                targets.add(source)
                targets.update(f"{source}.{a.name}" for a in node.names)
        edges = {m for t in targets if (m := resolve(t)) is not None}
        edges.discard(name)
        # `from redline.a import b` names the package `redline.a` too, whose __init__ runs
        # first: an edge to it only where the module is not the package's own child, or the
        # package would be tied to every module that imports a sibling.
        graph[_rel(path, root)] = {
            _rel(modules[m], root) for m in edges if not name.startswith(m + ".")
        }
    return graph


RUST_PATH = re.compile(r"\b(crate|super|self)((?:::\w+)+)(::\{([^}]*)\})?")


def rust_graph(src: Path, root: Path = ROOT) -> dict[str, set[str]]:
    """rust_graph maps each source file of a crate to the crate's files it names by path
    (``crate::a::B``, ``super::B``, ``use crate::a::{b, c}``); test modules are left out."""
    files: dict[tuple[str, ...], Path] = {}
    for path in src.rglob("*.rs"):
        rel = path.relative_to(src).with_suffix("").parts
        if rel[-1] in ("lib", "main"):
            continue
        if rel[-1] == "tests" or rel[-1].endswith("_tests"):
            continue
        files[rel[:-1] if rel[-1] == "mod" else rel] = path

    def module_of(path: Path) -> tuple[str, ...]:
        rel = path.relative_to(src).with_suffix("").parts
        return rel[:-1] if rel[-1] == "mod" else rel

    def resolve(parts: Iterable[str]) -> Path | None:
        parts = tuple(parts)
        while parts and parts not in files:
            parts = parts[:-1]
        return files.get(parts)

    graph: dict[str, set[str]] = {}
    for mod, path in files.items():
        text = re.sub(r"//[^\n]*", "", path.read_text())
        edges: set[Path] = set()
        for m in RUST_PATH.finditer(text):
            head, tail, group = m.group(1), m.group(2), m.group(4)
            anchor = {"crate": (), "super": mod[:-1], "self": mod}[head]
            parts = anchor + tuple(tail.split("::")[1:])
            names = [g.strip().split("::")[0] for g in group.split(",")] if group else [""]
            for name in names:
                target = resolve(parts + ((name,) if name and name != "self" else ()))
                if target is not None:
                    edges.add(target)
        edges.discard(path)
        graph[_rel(path, root)] = {_rel(e, root) for e in edges if module_of(e) != mod}
    return graph


def _rel(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix()


def all_circles() -> list[frozenset[str]]:
    """all_circles is every import circle of the tree's packages and crates."""
    found: list[frozenset[str]] = []
    for package in (ROOT / "python/redline", ROOT / "services/taskqueue/src/taskqueue"):
        found += circles(python_graph(package))
    for crate in sorted((ROOT / "crates").glob("*/src")):
        found += circles(rust_graph(crate))
    return found


def test_no_import_circle_beyond_the_known_ones() -> None:
    found = all_circles()
    new = [sorted(c) for c in found if c not in KNOWN]
    assert not new, f"import circles: {new}"


def test_every_known_circle_still_exists() -> None:
    gone = [KNOWN[c] for c in KNOWN if c not in all_circles()]
    assert not gone, f"these circles are gone: take them off KNOWN: {gone}"


def test_the_check_sees_a_circle() -> None:
    # Two modules importing each other, one lazily inside a function: a circle; a third
    # importing one of them is not in it.
    graph = {"a": {"b"}, "b": {"a"}, "c": {"a"}}
    assert circles(graph) == [frozenset({"a", "b"})]
    assert circles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_python_imports_are_read(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from pkg.sub import b\n")
    (pkg / "sub" / "b.py").write_text("from .. import a\n")
    found = circles(python_graph(pkg, tmp_path))
    assert found == [frozenset({"pkg/a.py", "pkg/sub/b.py"})]


def test_rust_paths_are_read(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "s").mkdir(parents=True)
    (src / "lib.rs").write_text("mod a; mod s;")
    (src / "a.rs").write_text("use crate::s::{b::Thing, c};\n")
    (src / "s" / "mod.rs").write_text("pub mod b; pub mod c;\n")
    (src / "s" / "b.rs").write_text("// crate::a is only a comment\nfn f() {}\n")
    (src / "s" / "c.rs").write_text("fn g() { crate::a::h() }\n")
    graph = rust_graph(src, tmp_path)
    assert graph["src/a.rs"] == {"src/s/b.rs", "src/s/c.rs"}
    assert graph["src/s/b.rs"] == set()
    assert circles(graph) == [frozenset({"src/a.rs", "src/s/c.rs"})]
