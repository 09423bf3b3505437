"""The import graph of the whole tree: no circle, one direction, no hidden import.

Every package is read (refmem, refmem_harness, conformance, fuzz, bench, and the source tree's refmem_conformance and
refmem_fuzz), and every import counts: at module level, in a function, or for types only.

- No circle. A circle means two modules cannot be read (or loaded) one before the other; the kernel and its
  portable fallback were one until their flags and handle protocol moved to `handles.py`, and the fuzzer's
  command line, engines, harnesses, OpenClaw plug-in and replay were one until the registry (fuzz/harnesses.py).
- One direction: refmem imports none of the others; the harness imports refmem only; conformance and fuzz import
  the harness and refmem, never each other; bench may use them all. conformance/ and fuzz/ are installed as
  refmem_conformance and refmem_fuzz (pyproject.toml `sources`) and import themselves relatively, so an import of
  `conformance` or `fuzz` by the folder's name is refused too (it would load a second copy).
- No hidden import: no exec or compile of source, no `__import__`, no `globals().update`, no module-level
  `__getattr__` forwarding names to another module (D-HARNESS-ONE-NAME: a name is imported from where it is
  defined). A module that imports by a name it computes (importlib) is listed in DECLARED with every project module
  it may reach that way, and those links join the graph, so a circle or a wrong direction through them is seen as
  well.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Set, Tuple

import pytest
import tomllib

REPO = Path(__file__).resolve().parents[2]

MAY_IMPORT: Dict[str, Set[str]] = {
    "refmem": set(),
    "refmem_harness": {"refmem"},
    # refmem as an MCP server: refmem and the mcp SDK, nothing of the harness.
    "refmem_mcp": {"refmem"},
    "conformance": {"refmem", "refmem_harness"},
    "fuzz": {"refmem", "refmem_harness"},
    "bench": {"refmem", "refmem_harness", "conformance", "fuzz"},
    # The source tree's stand-ins for the installed names: each is its folder's search path, nothing more.
    "refmem_conformance": {"conformance"},
    "refmem_fuzz": {"fuzz"},
}
"""Package -> the other packages its modules may import."""

DECLARED: Dict[str, Set[str]] = {
    # A `python:MODULE:CALLABLE` target is the user's module; `refmem` and its stores are the embedded references.
    "refmem_harness.targets": {
        "refmem_harness.reference_target",
        "refmem_harness.reference_sqlite_target",
        "refmem_harness.reference_postgres_target",
    },
    # A feature's module that a vendored copy may leave out (D-VENDOR-SET), loaded when the feature is asked for:
    # the portable walk, a named content policy, and tracked.TrackedDirectory's records over directory.Directory (a layer that
    # imports the module asking for it: the one link back, taken at run time only, never at import).
    "refmem._optional": set(),
    # `refmem mcp` loads the MCP server, a package of its own on an optional extra (D-MCP-PACKAGE), when the command
    # runs: the one link from refmem to another package (COMMANDS_ABOVE), and a missing SDK is said, never raised.
    "refmem.mcp_cli": {"refmem_mcp.server", "refmem_mcp.memories"},
    # Whether an optional package (jsonschema, hypothesis) is installed.
    "conformance.cli": set(),
    # The field's adapters load the implementation they wrap, installed in the field's own environment only
    # (D-FIELD-ENV), and `field` asks whether jsonschema is installed: third-party modules, none of the project's.
    "conformance.field": set(),
    "conformance.adapters.inspect_memory": set(),
    "conformance.adapters.langchain_anthropic": set(),
    "conformance.adapters.memory_lake": set(),
    "conformance.adapters.picoagents_memory": set(),
    "conformance.validate": set(),
    # Runs as a file, outside the packages: loads the two harness modules it needs by their paths.
    "conformance.protocol_relay": {"refmem_harness.adapter_wire", "refmem_harness.visible", "refmem.protocol"},
    # A copy of refmem/ (an earlier version) loaded under another name, to compare with.
    "bench.impls": set(),
}
"""Module -> the project modules it imports by a computed name (importlib), each one named here."""

HIDDEN_CALLS = ("exec", "compile", "__import__")
DYNAMIC_CALLS = ("import_module", "spec_from_file_location")


def installed_names(repo: Path = REPO) -> Dict[str, str]:
    """Installed name -> folder, from the wheel's `sources` (refmem_conformance -> conformance)."""
    wheel = tomllib.loads((repo / "pyproject.toml").read_text("utf-8"))["tool"]["hatch"]["build"]["targets"]["wheel"]
    return {installed: folder for folder, installed in wheel.get("sources", {}).items()}


def module_name(path: Path, repo: Path) -> str:
    parts = list(path.relative_to(repo).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules(repo: Path = REPO) -> Dict[str, Path]:
    """Every module of every package, by its folder's name."""
    found: Dict[str, Path] = {}
    for package in MAY_IMPORT:
        for path in sorted((repo / package).rglob("*.py")):
            if "node_modules" not in path.parts and "oss-fuzz" not in path.parts:
                found[module_name(path, repo)] = path
    return found


def resolve(importer: str, is_package: bool, level: int, target: Optional[str]) -> str:
    """The absolute name `from {level dots}{target} import ...` means inside `importer`."""
    base = importer.split(".") if is_package else importer.split(".")[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


class Imports:
    """What one module imports: project modules (by folder name), and what breaks the rules on the way."""

    def __init__(self, name: str, path: Path, known: Set[str], aliases: Dict[str, str]) -> None:
        self.name, self.known, self.aliases = name, known, aliases
        self.targets: Set[str] = set()
        self.problems: List[str] = []
        self.dynamic = 0
        is_package = path.name == "__init__.py"
        module = ast.parse(path.read_text(encoding="utf-8"))
        for node in module.body:
            if isinstance(node, ast.FunctionDef) and node.name == "__getattr__":
                self.problems.append(f"{self.name}:{node.lineno} forwards names with a module-level __getattr__")
        for node in ast.walk(module):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    self._add(self._absolute(alias.name, node.lineno), node.lineno)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    source = self._normal(resolve(name, is_package, node.level, node.module))
                else:
                    source = self._absolute(node.module or "", node.lineno)
                for alias in node.names:
                    submodule = f"{source}.{alias.name}"
                    self._add(submodule if submodule in known else source, node.lineno)
            elif isinstance(node, ast.Call):
                self._call(node)

    def _normal(self, target: str) -> str:
        """An installed name as its folder's (refmem_conformance.cli -> conformance.cli)."""
        top, _, rest = target.partition(".")
        folder = self.aliases.get(top)
        return folder + ("." + rest if rest else "") if folder else target

    def _absolute(self, target: str, line: int) -> str:
        top = target.split(".")[0]
        if top in self.aliases.values():
            self.problems.append(f"{self.name}:{line} imports {target} by its folder's name (a second copy)")
        top_alias = self.aliases.get(top)
        return f"{top_alias}{target[len(top):]}" if top_alias else target

    def _add(self, target: str, line: int) -> None:
        if target in self.known and target != self.name:
            self.targets.add(target)

    def _call(self, node: ast.Call) -> None:
        func = node.func
        called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        if isinstance(func, ast.Name) and called in HIDDEN_CALLS:
            self.problems.append(f"{self.name}:{node.lineno} calls {called}()")
        elif called == "update" and isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call):
            inner = func.value.func
            if isinstance(inner, ast.Name) and inner.id in ("globals", "vars", "locals"):
                self.problems.append(f"{self.name}:{node.lineno} fills its namespace with {inner.id}().update()")
        elif called in DYNAMIC_CALLS:
            self.dynamic += 1
            if self.name not in DECLARED:
                self.problems.append(f"{self.name}:{node.lineno} imports by a computed name ({called}), undeclared")
            first = node.args[0] if node.args else None
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                target = self._normal(first.value)
                if target in self.known and target not in DECLARED.get(self.name, set()):
                    self.problems.append(f"{self.name}:{node.lineno} imports {target} by name, undeclared")


def import_graph(repo: Path = REPO) -> Tuple[Dict[str, Set[str]], List[str], Dict[str, int]]:
    """(module -> the project modules it imports, the problems found, module -> its importlib calls)."""
    known = modules(repo)
    aliases = installed_names(repo)
    graph: Dict[str, Set[str]] = {}
    problems: List[str] = []
    dynamic: Dict[str, int] = {}
    for name, path in known.items():
        found = Imports(name, path, set(known), aliases)
        graph[name] = found.targets | (DECLARED.get(name, set()) & set(known))
        problems += found.problems
        dynamic[name] = found.dynamic
    return graph, problems, dynamic


COMMANDS_ABOVE: Dict[str, Set[str]] = {"refmem.mcp_cli": {"refmem_mcp.server", "refmem_mcp.memories"}}
"""A sub-command of `refmem` that runs a package standing above refmem, loaded by name when it runs and never at
import: the only links that may point up (a circle through them is still a circle)."""


def upward(graph: Dict[str, Set[str]]) -> Iterator[str]:
    """Every import from one package into another that MAY_IMPORT does not allow."""
    for importer, targets in sorted(graph.items()):
        home = importer.split(".")[0]
        for target in sorted(targets):
            other = target.split(".")[0]
            if other != home and other not in MAY_IMPORT[home] and target not in COMMANDS_ABOVE.get(importer, set()):
                yield f"{importer} -> {target}"


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
                    work.append((child, iter(sorted(graph.get(child, set())))))
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


@pytest.fixture(scope="module")
def tree() -> Tuple[Dict[str, Set[str]], List[str], Dict[str, int]]:
    return import_graph()


def test_every_package_is_read(tree: Tuple[Dict[str, Set[str]], List[str], Dict[str, int]]) -> None:
    graph = tree[0]
    wheel = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))["tool"]["hatch"]["build"]["targets"]["wheel"]
    assert set(wheel["packages"]) | set(installed_names()) <= set(MAY_IMPORT)
    for package in MAY_IMPORT:
        assert package in graph, package
    assert {"refmem._kernel", "refmem_harness.targets", "conformance.runner", "fuzz.cli", "bench.run"} <= set(graph)


def test_no_import_circle_anywhere(tree: Tuple[Dict[str, Set[str]], List[str], Dict[str, int]]) -> None:
    assert cycles(tree[0]) == []


def test_every_import_points_down(tree: Tuple[Dict[str, Set[str]], List[str], Dict[str, int]]) -> None:
    assert list(upward(tree[0])) == []


def test_no_hidden_import(tree: Tuple[Dict[str, Set[str]], List[str], Dict[str, int]]) -> None:
    assert tree[1] == []
    # Every declared module still imports by a computed name (a stale row would hide a new one).
    assert {name for name in DECLARED if tree[2].get(name, 0) == 0} == set()


def test_the_kernel_picks_its_fallback_and_the_fallback_never_imports_the_kernel(
    tree: Tuple[Dict[str, Set[str]], List[str], Dict[str, int]],
) -> None:
    graph = tree[0]
    assert "refmem._portable" in graph["refmem._kernel"]
    assert "refmem._kernel" not in graph["refmem._portable"]
    assert {"refmem._handles"} <= graph["refmem._portable"] & graph["refmem._kernel"]


def test_the_suite_and_the_fuzzer_stand_on_the_harness(
    tree: Tuple[Dict[str, Set[str]], List[str], Dict[str, int]],
) -> None:
    graph = tree[0]
    assert "refmem_harness.targets" in graph["conformance.runner"] and "refmem_harness.targets" in graph["fuzz.reach"]
    # The installed names resolve to the folders: refmem_conformance exports what conformance/ does.
    assert "conformance.versions" in graph["refmem_conformance"]


# --- the checker itself -----------------------------------------------------------------------------------


def write(root: Path, files: Dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def small_tree(tmp_path: Path, files: Dict[str, str]) -> Tuple[Dict[str, Set[str]], List[str], Dict[str, int]]:
    base = {
        "pyproject.toml": '[tool.hatch.build.targets.wheel]\n'
        'packages = ["refmem", "refmem_harness", "conformance", "fuzz"]\n'
        'sources = { "conformance" = "refmem_conformance", "fuzz" = "refmem_fuzz" }\n',
        "refmem/__init__.py": "",
        "refmem/kernel.py": "",
        "refmem_harness/__init__.py": "",
        "conformance/__init__.py": "",
        "fuzz/__init__.py": "",
        "bench/__init__.py": "",
        "refmem_conformance/__init__.py": "",
        "refmem_fuzz/__init__.py": "",
    }
    return import_graph(write(tmp_path, {**base, **files}))


def test_the_checker_sees_a_circle_through_a_lazy_import(tmp_path: Path) -> None:
    """An import inside a function or under TYPE_CHECKING counts, and a circle is found."""
    graph, problems, _ = small_tree(tmp_path, {
        "fuzz/a.py": "def f() -> None:\n    from . import b\n",
        "fuzz/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import f\n",
    })
    assert graph["fuzz.a"] == {"fuzz.b"} and graph["fuzz.b"] == {"fuzz.a"}
    assert cycles(graph) == [["fuzz.a", "fuzz.b"]] and problems == []
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_checker_sees_an_import_that_points_back_up(tmp_path: Path) -> None:
    """The harness importing the suite (by its installed name), the suite the fuzzer, refmem the harness."""
    graph, problems, _ = small_tree(tmp_path, {
        "refmem_harness/targets.py": "from refmem_conformance import runner\n",
        "conformance/runner.py": "import refmem_fuzz.model\n",
        "fuzz/model.py": "from refmem_harness import targets\n",
        "refmem/tool.py": "def f() -> None:\n    import refmem_harness.targets\n",
    })
    assert list(upward(graph)) == [
        "conformance.runner -> fuzz.model",
        "refmem.tool -> refmem_harness.targets",
        "refmem_harness.targets -> conformance.runner",
    ]
    assert problems == []


def test_the_checker_sees_hidden_imports(tmp_path: Path) -> None:
    """The shims this tree had: an exec'd package body, a namespace filled by importlib, a folder's own name, a
    module forwarding names to another."""
    _, problems, _ = small_tree(tmp_path, {
        "refmem_conformance/__init__.py": "exec(compile(open('x').read(), 'x', 'exec'))\n",
        "fuzz/suite.py": "import importlib\nglobals().update({'m': importlib.import_module(__package__ + '.x')})\n",
        "conformance/fuzzer.py": "from fuzz import model\n",
        "refmem_harness/b.py": "__import__('os')\n",
        "refmem/messages.py": "def __getattr__(name: str) -> object:\n    return name\n",
    })
    assert sorted(problems) == [
        "conformance.fuzzer:1 imports fuzz by its folder's name (a second copy)",
        "fuzz.suite:2 fills its namespace with globals().update()",
        "fuzz.suite:2 imports by a computed name (import_module), undeclared",
        "refmem.messages:1 forwards names with a module-level __getattr__",
        "refmem_conformance:1 calls compile()",
        "refmem_conformance:1 calls exec()",
        "refmem_harness.b:1 calls __import__()",
    ]
