"""The vendored set (docs/vendoring.md, D-VENDOR-SET): exactly the files listed there, copied into a fresh package
in a temporary folder, make a handler that passes the conformance suite (standard profile), imports nothing of the
installed refmem, and refuses a feature whose module was not copied with an error that names it."""

from __future__ import annotations

import ast
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
from typing import Iterator, List

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = REPO / "refmem"
DOC = REPO / "docs" / "vendoring.md"
CASES = REPO / "conformance" / "cases"
COPY = "vendoredmem"  # a package name that is not refmem: the copy must import only itself
MOST_LINES = 4022  # docs/vendoring.md: past this, growth is a decision to write down, not an accident


def vendored_files() -> List[str]:
    block = re.search(r"<!-- vendored-set: begin[^>]*-->\s*```\n(.*?)```\s*<!-- vendored-set: end -->", DOC.read_text(),
                      re.S)
    assert block is not None, "docs/vendoring.md has no vendored-set block"
    return [line.strip() for line in block.group(1).splitlines() if line.strip()]


def _sibling_imports(path: pathlib.Path) -> List[str]:
    """The modules of its own package `path` imports at run time (an import only for type checkers excluded)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):  # `if TYPE_CHECKING:` blocks are never run
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            node.body = []
        elif isinstance(node, ast.Try) and any(  # an import a copy may lack: `except ModuleNotFoundError` guards it
            getattr(handler.type, "id", None) == "ModuleNotFoundError" for handler in node.handlers
        ):
            node.body = []
    found: List[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            found += [node.module.split(".")[0]] if node.module else [alias.name for alias in node.names]
        elif isinstance(node, ast.Import) or (isinstance(node, ast.ImportFrom) and node.level == 0):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            assert not any(name.split(".")[0] == "refmem" for name in names), f"{path.name} imports refmem by name"
    return found


@pytest.fixture(scope="module")
def copy_root() -> Iterator[pathlib.Path]:
    base = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    with tempfile.TemporaryDirectory(prefix="refmem-vendored-", dir=base) as where:
        package = pathlib.Path(where) / COPY
        package.mkdir()
        for name in vendored_files():
            shutil.copyfile(PACKAGE / name, package / name)
        yield pathlib.Path(where)


def _run(copy_root: pathlib.Path, code: str) -> str:
    """`code` in a fresh interpreter that sees the copy and the standard library, never the installed refmem."""
    done = subprocess.run(
        [sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(copy_root)!r})\n{code}"],
        capture_output=True, text=True, timeout=120, cwd=copy_root,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_list_is_closed_under_imports_and_within_its_size() -> None:
    listed = vendored_files()
    assert len(listed) == len(set(listed))
    modules = {name[: -len(".py")] for name in listed}
    for name in listed:
        missing = set(_sibling_imports(PACKAGE / name)) - modules
        assert not missing, f"{name} imports {sorted(missing)}, which the vendored set leaves out"
    lines = sum(len((PACKAGE / name).read_text(encoding="utf-8").splitlines()) for name in listed)
    assert lines <= MOST_LINES, f"the vendored set is {lines} lines, past {MOST_LINES}: docs/vendoring.md"
    assert "handler.py" in listed and "__init__.py" in listed


def test_the_copy_imports_only_itself_and_serves_a_directory(copy_root: pathlib.Path, tmp_path: pathlib.Path) -> None:
    out = _run(copy_root, f"""
import json
from {COPY} import MemoryHandler
handler = MemoryHandler({str(tmp_path / 'm')!r})
results = [handler.execute(c) for c in (
    {{"command": "create", "path": "/memories/a.md", "file_text": "one\\n"}},
    {{"command": "view", "path": "/memories"}},
    {{"command": "rename", "old_path": "/memories/a.md", "new_path": "/memories/d/b.md"}},
    {{"command": "view", "path": "/memories/d/b.md"}},
)]
print(json.dumps([[r.output, r.is_error] for r in results]))
print(json.dumps(sorted(name for name in sys.modules if name.split(".")[0] == "refmem")))
print(type(handler.store).__name__)
""")
    results, refmem_modules, store = out.splitlines()
    assert [error for _, error in json.loads(results)] == [False] * 4
    assert json.loads(results)[3][0].endswith("     1\tone")
    assert json.loads(refmem_modules) == []
    assert store == "Directory"  # no tracked.py copied: the bare directory, without journal or access records
    assert not (tmp_path / "m" / ".refmem" / "access").exists()


@pytest.mark.parametrize(
    "options, module",
    [
        ('content_policy="reject"', "policy"),
        ("track_access=True", "tracked"),
        ("portable_walk=True", "_portable"),
        ('tenant="alice"', "_tenants"),
    ],
)
def test_a_feature_whose_module_was_not_copied_is_refused_naming_it(
    copy_root: pathlib.Path, tmp_path: pathlib.Path, options: str, module: str
) -> None:
    out = _run(copy_root, f"""
from {COPY} import MemoryHandler, MissingModule
try:
    MemoryHandler({str(tmp_path / 'm')!r}, {options})
except MissingModule as error:
    print(type(error).__name__, isinstance(error, ImportError), error)
""")
    assert out.startswith("MissingModule True "), out
    assert f"{COPY}.{module}" in out and f"copy {module}.py" in out, out


def _policy_cases() -> List[str]:
    """The conformance cases that ask for the built-in content policy by name (policy.py is not in the set)."""
    found = []
    for path in sorted(CASES.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        for case in data.get("cases", []) if isinstance(data, dict) else []:
            if "content_policy" in (case.get("options") or {}):
                found.append(case["id"])
    return found


@pytest.mark.slow
def test_the_copy_passes_the_conformance_suite(copy_root: pathlib.Path) -> None:
    skipped = _policy_cases()
    assert skipped, "no case asks for a content policy any more: drop the skips"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(copy_root), str(REPO)]))
    workdir = ["--workdir", "/dev/shm"] if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else []
    command = [sys.executable, "-m", "refmem_conformance", "--target", f"python:{COPY}.handler:MemoryHandler",
               "--strict", "--profile", "standard", "-q", *workdir]
    for case in skipped:
        command += ["--skip", case]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900, cwd=copy_root, env=env)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
