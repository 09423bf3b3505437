"""The reference's protocol server: every reply is a schema-valid message, and no line crashes it."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import pytest
from conformance_support import exchange, valid


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
        valid(request, schema)
    replies = exchange([json.dumps(request) for request in requests])
    assert len(replies) == 5
    valid(replies[0], "start-reply")
    assert replies[0]["ready"] is True and replies[0]["implementation"]["name"] == "refmem"
    assert replies[1] == {"seq": 1, "ok": True}
    for reply in replies[2:]:
        valid(reply, "execute-reply")
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
    (reply,) = exchange([line])
    valid(reply, "error-reply")
    assert reply["error"]["code"] == code


def test_requests_out_of_order_or_malformed_are_refused(tmp_path: pathlib.Path) -> None:
    replies = exchange(
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
    valid(replies[0], "start-reply")
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
