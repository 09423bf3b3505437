"""No import circle among refmem's modules: every import counts, at module level, in a function or for types.

A circle means two modules cannot be read (or loaded) one before the other; the kernel and its portable
fallback were one until their flags and handle protocol moved to `handles.py`.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, List, Optional, Set

import refmem

PACKAGE = Path(refmem.__file__).parent


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> Dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def resolve(importer: str, is_package: bool, level: int, target: Optional[str]) -> str:
    """The absolute name `from {level dots}{target} import ...` means inside `importer`."""
    base = importer.split(".") if is_package else importer.split(".")[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def imports_of(name: str, path: Path, known: Set[str]) -> Set[str]:
    """The refmem modules `path` imports, wherever in the file the import stands."""
    found: Set[str] = set()
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in known)
        elif isinstance(node, ast.ImportFrom):
            source = resolve(name, is_package, node.level, node.module) if node.level else (node.module or "")
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                found.add(submodule if submodule in known else source)
    return {target for target in found if target in known and target != name}


def import_graph() -> Dict[str, Set[str]]:
    known = modules()
    return {name: imports_of(name, path, set(known)) for name, path in known.items()}


def cycles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """Every strongly connected group of more than one module (Tarjan's algorithm, iterative)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    groups: List[List[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
    return groups


def test_no_import_circle_among_refmem_modules() -> None:
    graph = import_graph()
    assert "refmem._kernel" in graph and "refmem.handler" in graph
    assert cycles(graph) == []


def test_the_kernel_picks_its_fallback_and_the_fallback_never_imports_the_kernel() -> None:
    graph = import_graph()
    assert "refmem._portable" in graph["refmem._kernel"]
    assert "refmem._kernel" not in graph["refmem._portable"]
    assert {"refmem._handles"} <= graph["refmem._portable"] & graph["refmem._kernel"]


def test_the_checker_sees_a_circle_through_a_lazy_import(tmp_path: Path) -> None:
    """The checker itself: an import inside a function or under TYPE_CHECKING counts, and a circle is found."""
    (tmp_path / "a.py").write_text("def f() -> None:\n    from . import b\n")
    (tmp_path / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import f\n")
    known = {"pkg.a", "pkg.b"}
    graph = {name: imports_of(name, tmp_path / (name[-1] + ".py"), known) for name in sorted(known)}
    assert graph == {"pkg.a": {"pkg.b"}, "pkg.b": {"pkg.a"}}
    assert cycles(graph) == [["pkg.a", "pkg.b"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
