"""refmem-conformance new-adapter: the files it writes start, run real cases and speak the protocol by its schemas."""

from __future__ import annotations

import json
import pathlib
import re
import shutil
import subprocess
import sys
from typing import Any, Dict, Iterator, List, Tuple

import pytest
from conformance_support import run_cli

MODULE = "generated_memory_adapter"
CASES = ("--run", "view-*", "--run", "create-*")
"""Real cases, a few dozen: the placeholder passes some and fails others; either way they must run."""

NODE = shutil.which("node")
needs_node = pytest.mark.skipif(NODE is None, reason="node is not on PATH: the node adapter cannot be run")

SCHEMAS = pathlib.Path(__file__).resolve().parents[2] / "conformance" / "schema" / "protocol"


def _tally(out: str) -> Tuple[int, int]:
    """(passed, failed) from the run's summary line."""
    found = re.search(r"^  (\d+) pass, (\d+) fail, ", out, re.MULTILINE)
    assert found, out
    return int(found.group(1)), int(found.group(2))


def _printed_target(out: str) -> str:
    """The --target of the first command new-adapter printed, as a shell would pass it."""
    line = next(line for line in out.splitlines() if "refmem-conformance --target" in line)
    target = line.split("--target ", 1)[1].split(" --validate")[0]
    return target[1:-1] if target.startswith("'") else target


@pytest.fixture
def fresh_module(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> Iterator[pathlib.Path]:
    """tmp_path on sys.path, and no module named MODULE imported before or left behind."""
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop(MODULE, None)
    yield tmp_path
    sys.modules.pop(MODULE, None)


def test_the_python_adapter_runs_the_suite(fresh_module: pathlib.Path) -> None:
    path = fresh_module / f"{MODULE}.py"
    status, out, err = run_cli("new-adapter", "--lang", "python", "--out", str(path))
    assert status == 0, err
    assert f"PYTHONPATH={fresh_module} refmem-conformance --target python:{MODULE}:make_handler" in out
    target = _printed_target(out)
    assert target == f"python:{MODULE}:make_handler"

    status, out, err = run_cli("--target", target, *CASES, "-q")
    assert status in (0, 1), out + err  # 2 would mean the target could not be used at all
    assert "my-memory-backend (python, storage: own)" in out  # the handshake read IMPLEMENTATION and storage
    passed, failed = _tally(out)
    assert passed > 10, out  # the placeholder really answers
    assert "robustness: 0 in 0 cases" in out  # and only through its designed error signal


def test_the_python_adapter_documents_every_accepted_shape(tmp_path: pathlib.Path) -> None:
    path = tmp_path / f"{MODULE}.py"
    assert run_cli("new-adapter", "--lang", "python", "--out", str(path))[0] == 0
    doc = path.read_text(encoding="utf-8").split('"""', 2)[1]
    for shape in (
        "`execute(input)`",
        "`call(input)`",
        "python:mod:MemoryHandler",  # the handler class as the factory
        "lambda input:",  # a plain callable
        "async def",
        'return ("text", True)',
        '{"content": "text", "is_error": True}',
        ".output (or .content) and .is_error",
        '[{"type": "text", "text": "..."}]',
        "raise ToolError",
        'SIGNALLING = {"error_prefix"',
        'SIGNALLING = {"error_exceptions"',
        "IMPLEMENTATION = {",
        'storage = "own"',
        "read_only=False, allow=None, limits=None, content_policy=None",
    ):
        assert shape in doc, shape
    assert "@@" not in path.read_text(encoding="utf-8")  # every placeholder filled in
    assert f"--target python:{MODULE}:make_handler" in doc


@needs_node
def test_the_node_adapter_passes_validate(tmp_path: pathlib.Path) -> None:
    status, out, err = run_cli("new-adapter", "--lang", "node", "--out", str(tmp_path))
    assert status == 0, err
    path = tmp_path / "memory-adapter.mjs"
    assert path.is_file()
    target = _printed_target(out)
    assert target == f"cmd:node {path}"

    status, out, err = run_cli("--target", target, "--validate", *CASES, "-q")
    assert status in (0, 1), out + err
    assert "protocol (--validate): every message follows its schema" in out
    assert "my-memory-backend (javascript, storage: own)" in out
    assert "; 0 restarts;" in out  # the adapter never crashed nor broke the protocol
    passed, _ = _tally(out)
    assert passed > 10, out


def _validator(name: str) -> Any:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((SCHEMAS / f"{name}.schema.json").read_text(encoding="utf-8"))
    return jsonschema.Draft202012Validator(schema)


@needs_node
def test_the_node_adapter_answers_bad_requests_by_the_schemas(tmp_path: pathlib.Path) -> None:
    """What a suite run never sends: the error replies, a lone surrogate, a blank line, requests out of order."""
    assert run_cli("new-adapter", "--lang", "node", "--out", str(tmp_path / "a.mjs"))[0] == 0
    lines: List[str] = [
        json.dumps({"cmd": "execute", "seq": 1, "input": {}}),  # before start
        json.dumps({"cmd": "start", "version": 1}),
        json.dumps({"cmd": "execute", "seq": 2, "input": {"command": "view", "path": "/memories"}}),  # before reset
        "not json",
        "",  # no reply
        json.dumps({"cmd": "launch", "seq": 3}),
        json.dumps({"cmd": "reset", "seq": 4, "root": str(tmp_path), "options": {"read_only": True}}),
        json.dumps({"cmd": "reset", "seq": 5, "root": str(tmp_path)}),
        json.dumps({"cmd": "execute", "seq": 6, "input": {"command": "create", "path": "/memories/\udc80.md",
                                                          "file_text": "caf\u00e9\n"}}),
        json.dumps({"cmd": "execute", "seq": 7, "input": {"command": "view", "path": "/memories/\udc80.md"}}),
        json.dumps({"cmd": "execute", "seq": 8, "input": ["not", "an", "object"]}),
        json.dumps({"cmd": "stop"}),
    ]
    done = subprocess.run(
        [str(NODE), str(tmp_path / "a.mjs")], input="\n".join(lines) + "\n", capture_output=True, text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    raw = done.stdout.splitlines()
    assert all(line.isascii() for line in raw), raw
    replies: List[Dict[str, Any]] = [json.loads(line) for line in raw]
    expected = [
        ("error-reply", "not-started"), ("start-reply", None), ("error-reply", "no-root"), ("error-reply", "bad-json"),
        ("error-reply", "unknown-cmd"), ("error-reply", "bad-request"), ("reset-reply", None),
        ("execute-reply", None), ("execute-reply", None), ("execute-reply", None),
    ]
    assert len(replies) == len(expected), replies
    for reply, (schema, code) in zip(replies, expected):
        problems = [error.message for error in _validator(schema).iter_errors(reply)]
        assert not problems, (reply, problems)
        if code is not None:
            assert reply["error"]["code"] == code, reply
    assert replies[1]["ready"] is True and replies[1]["version"] == 1
    assert [reply.get("seq") for reply in replies] == [1, None, 2, None, 3, 4, 5, 6, 7, 8]
    assert replies[7]["is_error"] is False
    assert replies[8] == {"seq": 7, "output": "Here's the content of /memories/\udc80.md with line numbers:\n"
                                               "     1\tcaf\u00e9", "is_error": False}
    assert replies[9]["is_error"] is True and "raised" not in replies[9]


def test_an_existing_file_is_not_overwritten(tmp_path: pathlib.Path) -> None:
    for lang, name in (("python", "memory_adapter.py"), ("node", "memory-adapter.mjs")):
        path = tmp_path / name
        path.write_text("my own work\n", encoding="utf-8")
        status, out, err = run_cli("new-adapter", "--lang", lang, "--out", str(path))
        assert status == 2, out
        assert f"{path} already exists: not overwritten (--force replaces it)" in err
        assert path.read_text(encoding="utf-8") == "my own work\n"
        status, out, err = run_cli("new-adapter", "--lang", lang, "--out", str(path), "--force")
        assert status == 0, err
        assert "refmem conformance suite" in path.read_text(encoding="utf-8")


def test_usage_errors(tmp_path: pathlib.Path) -> None:
    status, _, err = run_cli("new-adapter", "--out", str(tmp_path / "x.py"))
    assert status == 2 and "new-adapter needs --lang" in err
    for name, problem in (("my-adapter.py", "cannot be imported as a module"), ("adapter.txt", "must end in .py"),
                          ("sys.py", "is taken")):
        status, _, err = run_cli("new-adapter", "--lang", "python", "--out", str(tmp_path / name))
        assert status == 2 and problem in err, err
        assert not (tmp_path / name).exists()
    assert run_cli("new-adapter", "--lang", "ruby")[0] == 2
