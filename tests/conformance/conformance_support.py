"""Helpers for the runner's own tests: fake targets importable as `fake_backends`, and case sets."""

from __future__ import annotations

import contextlib
import io
import json
import os
import pathlib
import shutil
import sys
import tempfile
from typing import Any, Dict, Iterator, List, Tuple

import pytest

HERE = pathlib.Path(__file__).resolve().parent

FAKE_ADAPTER = HERE / "fake_adapter.py"


def case(case_id: str, steps: List[Dict[str, Any]], level: str = "must", **extra: Any) -> Dict[str, Any]:
    body: Dict[str, Any] = {
        "id": case_id,
        "description": f"case {case_id}",
        "features": ["view"],
        "basis": "doc",
        "level": level,
        "cite": "doc-view",
        "requires": "portable",
        "steps": steps,
    }
    body.update(extra)
    return body


def view(path: str, is_error: bool, **expect: Any) -> Dict[str, Any]:
    return dict({"input": {"command": "view", "path": path}, "is_error": is_error}, **expect)


# Cases the fake `Tiny` handler passes: an exact output, an error, a deletion with a final state.
BASIC = [
    case(
        "t-001",
        [
            view(
                "/memories/a.txt",
                False,
                output="Here's the content of /memories/a.txt with line numbers:\n     1\thello",
            )
        ],
        level="should",
        setup={"files": {"a.txt": "hello\n"}},
        final={"files": {"a.txt": "hello\n"}, "exact": True},
    ),
    case("t-002", [view("/memories/../outside/secret.txt", True)]),
    case(
        "t-003",
        [
            {
                "input": {"command": "delete", "path": "/memories/a.txt"},
                "is_error": False,
                "match": {"prefix": "Successfully deleted"},
            }
        ],
        setup={"files": {"a.txt": "x"}},
        final={"absent": ["a.txt"], "present": []},
    ),
    case("t-004", [view("/memories/missing", True, match={"regex": "The path /memories/missing does not exist.*"})]),
]


def write_cases(directory: pathlib.Path, cases: List[Dict[str, Any]], group: str = "t") -> pathlib.Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{group}.json").write_text(json.dumps({"group": group, "cases": cases}), encoding="utf-8")
    return directory


@pytest.fixture
def basic_cases(tmp_path: pathlib.Path) -> pathlib.Path:
    return write_cases(tmp_path / "cases", BASIC)


# Case directories on a tmpfs when there is one: the reference fsyncs every write, which costs
# milliseconds per case on a disk and nothing on tmpfs; the checks are the same either way.
SHM = pathlib.Path("/dev/shm")
WORKDIR = ["--workdir", str(SHM)] if SHM.is_dir() and os.access(SHM, os.W_OK) else []


@contextlib.contextmanager
def scratch_folder(tmp_path: pathlib.Path, prefix: str) -> Iterator[pathlib.Path]:
    """A fresh folder on the tmpfs when there is one (removed after), else `tmp_path`: the tiers fsync every write."""
    if not WORKDIR:
        yield tmp_path
        return
    directory = pathlib.Path(tempfile.mkdtemp(prefix=prefix, dir=SHM))
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def run_cli(*argv: str) -> Tuple[int, str, str]:
    """`refmem-conformance ARGV` in-process: (exit status, stdout, stderr)."""
    from refmem_conformance.cli import main

    out, err = io.StringIO(), io.StringIO()
    options = WORKDIR if argv and argv[0] not in ("list", "validate") else []
    status = main([*argv, *options], out=out, err=err)
    return status, out.getvalue(), err.getvalue()


def adapter(*modes: str) -> str:
    """A `cmd:` target spec for the fake adapter in the given modes."""
    return "cmd:" + " ".join([sys.executable, str(FAKE_ADAPTER), *modes])


SCHEMAS = HERE.parents[1] / "conformance" / "schema" / "protocol"


def exchange(requests: List[Any]) -> List[Dict[str, Any]]:
    """`refmem serve` in-process over the requests (a string sent as it is, anything else as its JSON): the replies."""
    from refmem.serve import serve

    lines = (request if isinstance(request, str) else json.dumps(request) for request in requests)
    out = io.StringIO()
    assert serve(io.StringIO("".join(line + "\n" for line in lines)), out) == 0
    return [json.loads(line) for line in out.getvalue().splitlines()]


def valid(message: Dict[str, Any], schema: str) -> None:
    """Fails unless `message` follows the protocol's schema `schema` (skips without jsonschema)."""
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(message, json.loads((SCHEMAS / f"{schema}.schema.json").read_text()))
