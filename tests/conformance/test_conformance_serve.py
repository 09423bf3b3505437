"""The reference's protocol server: every reply is a schema-valid message, and no line crashes it."""

from __future__ import annotations

import io
import json
import pathlib
import subprocess
import sys
from typing import Any, Dict, List

import pytest

from refmem.serve import serve

SCHEMAS = pathlib.Path(__file__).resolve().parents[2] / "conformance" / "schema" / "protocol"


def _exchange(lines: List[str]) -> List[Dict[str, Any]]:
    out = io.StringIO()
    assert serve(io.StringIO("".join(line + "\n" for line in lines)), out) == 0
    return [json.loads(line) for line in out.getvalue().splitlines()]


def _valid(message: Dict[str, Any], schema: str) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(message, json.loads((SCHEMAS / f"{schema}.schema.json").read_text()))


def test_a_session_speaks_the_protocol(tmp_path: pathlib.Path) -> None:
    root = tmp_path / "memories"
    root.mkdir()
    requests = [
        {"cmd": "start", "version": 1},
        {"cmd": "reset", "seq": 1, "root": str(root)},
        {"cmd": "execute", "seq": 2, "input": {"command": "create", "path": "/memories/a.txt", "file_text": "hi\n"}},
        {"cmd": "execute", "seq": 3, "input": {"command": "view", "path": "/memories/nope"}},
        {"cmd": "execute", "seq": 4, "input": "not an object"},
        {"cmd": "stop"},
        {"cmd": "execute", "seq": 5, "input": {}},  # after stop: never read
    ]
    for request, schema in zip(requests, ["start-request", "reset-request", "execute-request"]):
        _valid(request, schema)
    replies = _exchange([json.dumps(request) for request in requests])
    assert len(replies) == 5
    _valid(replies[0], "start-reply")
    assert replies[0]["ready"] is True and replies[0]["implementation"]["name"] == "refmem"
    assert replies[1] == {"seq": 1, "ok": True}
    for reply in replies[2:]:
        _valid(reply, "execute-reply")
    assert replies[2]["is_error"] is False and (root / "a.txt").read_text() == "hi\n"
    assert replies[3]["is_error"] is True and replies[4]["is_error"] is True


@pytest.mark.parametrize(
    "line, code",
    [
        ("this is not json", "bad-json"),
        ("[1, 2]", "bad-request"),
        ('{"cmd": "fly", "seq": 1}', "unknown-cmd"),
        ('{"cmd": "execute", "seq": 1, "input": {}}', "not-started"),
        ('{"cmd": "start", "version": 1, "seq": "x"}', "bad-request"),
    ],
)
def test_bad_lines_get_error_replies(line: str, code: str) -> None:
    (reply,) = _exchange([line])
    _valid(reply, "error-reply")
    assert reply["error"]["code"] == code


def test_requests_out_of_order_or_malformed_are_refused(tmp_path: pathlib.Path) -> None:
    replies = _exchange(
        [
            '{"cmd": "start", "version": 2}',
            '{"cmd": "start", "version": 1}',
            '{"cmd": "execute", "seq": 1, "input": {}}',
            '{"cmd": "reset", "seq": 2, "root": "relative/dir"}',
            json.dumps({"cmd": "reset", "seq": 3, "root": str(tmp_path / "missing")}),
            "",
            '{"cmd": "reset", "seq": 4}',
        ]
    )
    assert replies[0]["ready"] is False and replies[0]["error"]["code"] == "unsupported-version"
    _valid(replies[0], "start-reply")
    assert [reply["error"]["code"] for reply in replies[2:]] == ["no-root", "bad-request", "bad-root", "bad-request"]
    assert [reply["seq"] for reply in replies[2:]] == [1, 2, 3, 4]


def test_python_m_refmem_serve_answers_start() -> None:
    process = subprocess.run(
        [sys.executable, "-m", "refmem.serve"],
        input=b'{"cmd": "start", "version": 1}\n{"cmd": "stop"}\n',
        capture_output=True,
        timeout=30,
        cwd=pathlib.Path(__file__).resolve().parents[2],
    )
    assert process.returncode == 0
    assert json.loads(process.stdout)["ready"] is True
