"""`refmem serve` reports the session's counts on request (D-SERVE-COUNTS, conformance/PROTOCOL.md): the optional
`counts` request, declared in the start reply, answers the memory tool's commands since `start` by command name and
outcome class (D-OPLOG's), and the milliseconds they took; never a path or any text the model sent."""

from __future__ import annotations

import io
import json
import pathlib
from typing import Any, Dict, List

from refmem.serve import serve


def _exchange(*requests: Dict[str, Any]) -> List[Dict[str, Any]]:
    out = io.StringIO()
    data = "".join(json.dumps(request) + "\n" for request in requests).encode()
    assert serve(io.BytesIO(data), out) == 0
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_counts_answer_the_commands_by_name_and_outcome_class(tmp_path: pathlib.Path) -> None:
    secret = "/memories/secret-name-9f2c.md"

    def run(seq: int, tool_input: Any) -> Dict[str, Any]:
        return {"cmd": "execute", "seq": seq, "input": tool_input}

    replies = _exchange(
        {"cmd": "start", "version": 1},
        {"cmd": "counts", "seq": 1},
        {"cmd": "reset", "seq": 2, "root": str(tmp_path)},
        run(3, {"command": "create", "path": secret, "file_text": "private words\n"}),
        run(4, {"command": "create", "path": secret, "file_text": "again\n"}),  # exists: refused
        run(5, {"command": "str_replace", "path": secret, "old_str": "private", "new_str": "public"}),
        run(6, {"command": "view", "path": secret}),
        run(7, {"command": "exfiltrate /etc/passwd"}),  # no command of the tool's
        run(8, "not even an object"),
        {"cmd": "reset", "seq": 9, "root": str(tmp_path)},  # counts go on across resets
        run(10, {"command": "view", "path": "/memories"}),
        {"cmd": "counts", "seq": 11},
        {"cmd": "stop"},
    )
    start, empty, last = replies[0], replies[1], replies[-1]
    assert start["counts"] is True
    assert empty == {"seq": 1, "counts": {}, "ms": {}}
    assert last["seq"] == 11
    assert last["counts"] == {
        "create": {"ok": 1, "refused": 1}, "str_replace": {"ok": 1}, "unknown": {"refused": 2}, "view": {"ok": 2},
    }
    assert set(last["ms"]) == set(last["counts"]) and all(ms >= 0 for ms in last["ms"].values())
    shown = json.dumps(last)
    assert "secret-name" not in shown and "private" not in shown and "passwd" not in shown


def test_counts_before_start_is_refused_and_a_counts_request_changes_nothing(tmp_path: pathlib.Path) -> None:
    replies = _exchange(
        {"cmd": "counts", "seq": 1},
        {"cmd": "start", "version": 1},
        {"cmd": "counts", "seq": 2},
        {"cmd": "counts", "seq": 3},
    )
    assert replies[0]["error"]["code"] == "not-started"
    assert replies[2] == {"seq": 2, "counts": {}, "ms": {}} and replies[3] == {"seq": 3, "counts": {}, "ms": {}}
