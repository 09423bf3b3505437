"""`refmem serve` never stops answering: every non-blank line gets exactly one well-formed reply.

D-SERVE-LINE-LIMIT. The audit's two killers (`{"cmd": []}` and deeply nested JSON) and every other
kind of bad line, in process and through a real `refmem serve` process.
"""

from __future__ import annotations

import io
import json
import os
import pathlib
import subprocess
import sys
from typing import Any, Dict, List, Optional

import pytest

from refmem import protocol
from refmem.serve import Session, handle_line, read_lines, serve

PROJECT = pathlib.Path(__file__).resolve().parents[2]
SCHEMAS = PROJECT / "conformance" / "schema" / "protocol"
START = b'{"cmd": "start", "version": 1}'


def exchange(data: bytes, max_line_bytes: int = protocol.MAX_LINE_BYTES) -> List[Dict[str, Any]]:
    out = io.StringIO()
    assert serve(io.BytesIO(data), out, max_line_bytes) == 0
    replies = [json.loads(line) for line in out.getvalue().splitlines()]
    assert all(isinstance(reply, dict) for reply in replies)
    return replies


def lines(*items: bytes) -> bytes:
    return b"".join(item + b"\n" for item in items)


def reset_line(root: Any, seq: int = 1, **extra: Any) -> bytes:
    return json.dumps(dict({"cmd": "reset", "seq": seq, "root": root}, **extra)).encode()


def schema_valid(reply: Dict[str, Any], name: str) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(reply, json.loads((SCHEMAS / f"{name}.schema.json").read_text()))


def error_code(reply: Dict[str, Any]) -> str:
    schema_valid(reply, "error-reply")
    return str(reply["error"]["code"])


def run_server(data: bytes, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "refmem", "serve"], input=data, capture_output=True, timeout=timeout, cwd=PROJECT
    )


# --- the audit's lines ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line, code",
    [
        (b'{"cmd": []}', "bad-request"),
        (b'{"cmd": {"a": 1}, "seq": 3}', "bad-request"),
        (b"[" * 100_000, "bad-json"),
        (b'{"cmd": "start", "version": ' + b"[" * 100_000 + b"}", "bad-json"),
        (b"{" * 100_000, "bad-json"),
    ],
    ids=["cmd-list", "cmd-object", "nested-arrays", "nested-in-a-request", "nested-objects"],
)
def test_the_audit_lines_get_an_error_and_the_server_carries_on(line: bytes, code: str, tmp_path: pathlib.Path) -> None:
    replies = exchange(lines(line, START, reset_line(str(tmp_path)), b'{"cmd": "execute", "seq": 2, "input": {}}'))
    assert len(replies) == 4
    assert error_code(replies[0]) == code
    assert replies[1]["ready"] is True and replies[2] == {"seq": 1, "ok": True}
    assert replies[3]["seq"] == 2 and replies[3]["is_error"] is True


def test_a_real_server_process_survives_the_audit_lines(tmp_path: pathlib.Path) -> None:
    data = lines(
        b'{"cmd": []}',
        b"[" * 100_000,
        b"\xff\xfe not utf-8",
        START,
        reset_line(str(tmp_path)),
        b'{"cmd": "execute", "seq": 2, "input": {"command": "create", "path": "/memories/a.md", "file_text": "x"}}',
        b'{"cmd": "stop"}',
    )
    done = run_server(data)
    assert done.returncode == 0 and done.stderr == b""
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    assert [reply.get("error", {}).get("code") for reply in replies[:3]] == ["bad-request", "bad-json", "bad-json"]
    assert replies[3]["ready"] is True
    assert replies[5] == {"seq": 2, "output": "File created successfully at: /memories/a.md", "is_error": False}
    assert len(replies) == 6


# --- every other kind of bad line -----------------------------------------------------------------


@pytest.mark.parametrize(
    "line, code, message",
    [
        (b"42", "bad-request", "a request must be a JSON object, not a number"),
        (b'"start"', "bad-request", "a request must be a JSON object, not a string"),
        (b"null", "bad-request", "a request must be a JSON object, not null"),
        (b"true", "bad-request", "a request must be a JSON object, not a boolean"),
        (b"[1, 2]", "bad-request", "a request must be a JSON object, not an array"),
        (b"{}", "bad-request", "`cmd` must be a string, not null"),
        (b'{"cmd": 7}', "bad-request", "`cmd` must be a string, not a number"),
        (b'{"cmd": "fly"}', "unknown-cmd", "unknown cmd 'fly'"),
        (b'{"cmd": "' + b"x" * 5000 + b'"}', "unknown-cmd", "unknown cmd '" + "x" * 79),
        (b"{'cmd': 'start'}", "bad-json", "the line is not JSON"),
        (b'{"cmd": "start"', "bad-json", "the line is not JSON"),
        (b'{"seq": ' + b"9" * 5000 + b"}", "bad-json", "the line is not JSON"),
        (b"\xef\xbb\xbf" + START, "bad-json", "the line is not JSON"),
        (b'{"cmd": "start", "version": 1, "x": "\xff"}', "bad-json", "the line is not UTF-8"),
        (b'{"cmd": "start", "version": 1, "x": "\xed\xa0\x80"}', "bad-json", "the line is not UTF-8"),
        ("\u00a0".encode(), "bad-json", "the line is not JSON"),
        (b"\x00", "bad-json", "the line is not JSON"),
        (b'{"cmd": "execute", "seq": 1, "input": {}}', "not-started", "send start first"),
    ],
    ids=lambda value: repr(value)[:40] if isinstance(value, bytes) else None,
)
def test_bad_lines_get_one_error_reply_each(line: bytes, code: str, message: str) -> None:
    (reply,) = exchange(lines(line))
    assert error_code(reply) == code
    assert reply["error"]["message"] == message


@pytest.mark.parametrize(
    "seq, echoed",
    [
        (0, None),
        (-3, None),
        (1.5, None),
        (True, None),
        ("1", None),
        ([1], None),
        (None, None),
        (7, 7),
        (10**30, 10**30),
    ],
)
def test_seq_is_echoed_only_when_it_is_a_positive_integer(seq: Any, echoed: Optional[int]) -> None:
    request = {"cmd": "fly"} if seq is None else {"cmd": "fly", "seq": seq}
    (reply,) = exchange(lines(json.dumps(request).encode()))
    assert reply.get("seq") == echoed
    assert error_code(reply) == ("unknown-cmd" if seq is None or echoed else "bad-request")


@pytest.mark.parametrize("version", [True, 1.0, "1", None, [1], 2, 0])
def test_start_accepts_only_the_integer_1(version: Any) -> None:
    (reply,) = exchange(lines(json.dumps({"cmd": "start", "version": version}).encode()))
    schema_valid(reply, "start-reply")
    assert reply["ready"] is False and reply["error"]["code"] == "unsupported-version"


def test_unknown_fields_are_ignored(tmp_path: pathlib.Path) -> None:
    replies = exchange(
        lines(
            b'{"cmd": "start", "version": 1, "extra": {"deep": [1, 2, {"x": null}]}, "seq": 1}',
            reset_line(str(tmp_path), 2, colour="green", options=None),
            b'{"cmd": "execute", "seq": 3, "input": {"command": "view", "path": "/memories"}, "why": 1}',
        )
    )
    assert replies[0]["ready"] is True and replies[0]["seq"] == 1
    assert replies[1] == {"seq": 2, "ok": True}
    assert replies[2]["is_error"] is False


def test_blank_lines_get_no_reply_and_crlf_and_lone_cr_are_whitespace() -> None:
    replies = exchange(b"\n   \n\t\r\n" + START + b"\r\n" + b'{"cmd":\r"start",\r"version": 1}\n')
    assert [reply["ready"] for reply in replies] == [True, True]


def _special_roots(tmp_path: pathlib.Path) -> Dict[str, Any]:
    regular = tmp_path / "file"
    regular.write_text("x")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    link = tmp_path / "link-to-file"
    link.symlink_to(regular)
    return {
        "regular-file": str(regular),
        "fifo": str(fifo),
        "link-to-file": str(link),
        "missing": str(tmp_path / "missing" / "deeper"),
        "nul-byte": str(tmp_path) + "/a\x00b",
        "lone-surrogate": str(tmp_path) + "/\udcff",
        "very-long": "/" + "a" * 100_000,
    }


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_root_that_is_not_a_directory_is_refused_and_leaves_no_handler(tmp_path: pathlib.Path) -> None:
    roots = _special_roots(tmp_path)
    good = tmp_path / "memories"
    good.mkdir()
    execute = b'{"cmd": "execute", "seq": 99, "input": {"command": "view", "path": "/memories"}}'
    requests = [START, reset_line(str(good), 1)]
    for seq, root in enumerate(roots.values(), start=2):
        requests += [reset_line(root, seq), execute]
    replies = exchange(lines(*requests))
    assert replies[1] == {"seq": 1, "ok": True}
    for index, name in enumerate(roots):
        refused, after = replies[2 + 2 * index], replies[3 + 2 * index]
        assert error_code(refused) == "bad-root", name
        assert error_code(after) == "no-root", name  # the earlier, good handler is gone


@pytest.mark.parametrize(
    "root",
    [None, 1, ["/tmp"], {"a": 1}, "relative/dir", ""],
)
def test_a_root_that_is_not_an_absolute_path_is_a_bad_request(root: Any) -> None:
    replies = exchange(lines(START, reset_line(root)))
    assert error_code(replies[1]) == "bad-request"


@pytest.mark.parametrize(
    "options",
    [
        [],
        "read_only",
        {"read_only": "yes"},
        {"allow": "*.md"},
        {"allow": [1]},
        {"limits": []},
        {"limits": {"max_view_chars": "40"}},
        {"limits": {"no_such_limit": 1}},
        {"limits": {"max_view_chars": 0}},
        {"content_policy": ["reject"]},
        {"content_policy": {"action": "reject"}},
        {"content_policy": "warn"},
        {"colour": "green"},
    ],
)
def test_options_that_cannot_be_built_are_a_bad_request(options: Any, tmp_path: pathlib.Path) -> None:
    replies = exchange(lines(START, reset_line(str(tmp_path), options=options)))
    assert error_code(replies[1]) == "bad-request"
    assert len(replies[1]["error"]["message"]) <= 200


def test_execute_inputs_of_any_shape_get_a_result(tmp_path: pathlib.Path) -> None:
    inputs = [
        b"null",
        b"[]",
        b"1e999",
        b"-0",
        b'"\\ud800"',
        b"[" * 500 + b"]" * 500,
        b'{"command": ' + b"[" * 500 + b"]" * 500 + b"}",
    ]
    requests = [START, reset_line(str(tmp_path))]
    requests += [b'{"cmd": "execute", "seq": %d, "input": %s}' % (seq, body) for seq, body in enumerate(inputs, 2)]
    replies = exchange(lines(*requests))[2:]
    assert len(replies) == len(inputs)
    for reply in replies:
        schema_valid(reply, "execute-reply")
        assert reply["is_error"] is True and "raised" not in reply


def test_execute_without_input_and_before_reset(tmp_path: pathlib.Path) -> None:
    replies = exchange(
        lines(
            START,
            b'{"cmd": "execute", "seq": 1, "input": {}}',
            reset_line(str(tmp_path), 2),
            b'{"cmd": "execute", "seq": 3}',
        )
    )
    assert [error_code(reply) for reply in replies[1:2] + replies[3:]] == ["no-root", "bad-request"]


def test_stop_ends_the_session_without_a_reply_and_nothing_after_it_is_read() -> None:
    stream = io.BytesIO(lines(START, b'{"cmd": "stop"}', b"garbage"))
    out = io.StringIO()
    assert serve(stream, out) == 0
    assert len(out.getvalue().splitlines()) == 1
    assert stream.read() == b"garbage\n"


def test_stop_with_a_bad_seq_is_refused_and_the_session_goes_on() -> None:
    replies = exchange(lines(b'{"cmd": "stop", "seq": "x"}', START))
    assert error_code(replies[0]) == "bad-request" and replies[1]["ready"] is True


# --- the line bound (D-SERVE-LINE-LIMIT) --------------------------------------------------------


def test_a_line_over_the_bound_is_dropped_with_an_error_and_the_next_line_is_read() -> None:
    padded = START + b" " * (64 - len(START))  # exactly 64 bytes: still accepted
    replies = exchange(lines(padded, b"x" * 65, b"[" * 1000, START), max_line_bytes=64)
    assert replies[0]["ready"] is True
    assert error_code(replies[1]) == "line-too-long"
    assert replies[1]["error"]["message"] == "the line is longer than 64 bytes"
    assert error_code(replies[2]) == "line-too-long"
    assert replies[3]["ready"] is True
    assert len(replies) == 4


def test_the_default_bound_is_16_mib_exactly() -> None:
    assert protocol.MAX_LINE_BYTES == 16 * 1024 * 1024
    at_bound = START + b" " * (protocol.MAX_LINE_BYTES - len(START))
    replies = exchange(lines(at_bound, at_bound + b" ", START))
    assert replies[0]["ready"] is True
    assert error_code(replies[1]) == "line-too-long"
    assert replies[2]["ready"] is True


def test_an_overlong_line_is_never_held_whole() -> None:
    class Recording(io.BytesIO):
        largest = 0

        def readline(self, size: Optional[int] = -1) -> bytes:
            line = super().readline(size)
            Recording.largest = max(Recording.largest, len(line))
            return line

    stream = Recording(b"y" * 5_000_000 + b"\n" + START + b"\n")
    assert [line for line in read_lines(stream, 1000)] == [None, START + b"\n"]
    assert Recording.largest <= 1 << 20


def test_a_real_server_reads_past_a_line_over_16_mib() -> None:
    done = run_server(lines(b"[" * (protocol.MAX_LINE_BYTES + 1), START, b'{"cmd": "stop"}'))
    assert done.returncode == 0 and done.stderr == b""
    first, second = (json.loads(line) for line in done.stdout.splitlines())
    assert first["error"]["code"] == "line-too-long" and second["ready"] is True


def test_a_closed_stdout_ends_the_server_quietly() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "refmem", "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=PROJECT,
    )
    assert process.stdout is not None and process.stdin is not None
    process.stdout.close()
    _, err = process.communicate(lines(START, START), timeout=60)
    assert process.returncode == 0 and b"Traceback" not in err


# --- handle_line and the protocol module --------------------------------------------------------


def test_handle_line_never_raises_when_a_command_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    from refmem import serve as serve_module

    def broken(session: Session, request: Dict[str, Any]) -> Dict[str, Any]:
        raise KeyError("boom")

    monkeypatch.setitem(serve_module._COMMANDS, "start", broken)
    reply = handle_line(Session(), '{"cmd": "start", "version": 1, "seq": 4}')
    assert reply == {"seq": 4, "error": {"code": "internal", "message": "the server failed on this request: KeyError"}}


def test_a_reply_that_cannot_be_encoded_becomes_an_internal_error() -> None:
    from refmem.serve import encode_reply

    line = encode_reply({"seq": 3, "output": object()})
    assert json.loads(line) == {
        "seq": 3,
        "error": {"code": "internal", "message": "the reply could not be encoded as JSON"},
    }


def test_protocol_helpers() -> None:
    assert protocol.decode_line(b" \t\r\n") is protocol.BLANK
    assert protocol.decode_line(b"null") is None
    assert protocol.decode_line('{"a": 1}\n') == {"a": 1}
    for bad, code in (
        (b"\xff", "bad-json"),
        (b"[" * 100_000, "bad-json"),
        (b"x" * (protocol.MAX_LINE_BYTES + 2), "line-too-long"),
    ):
        with pytest.raises(protocol.LineError) as raised:
            protocol.decode_line(bad)
        assert raised.value.code == code
    assert protocol.encode_message({"output": "\ud800é\n"}) == '{"output": "\\ud800\\u00e9\\n"}'
    assert [protocol.valid_seq(v) for v in (1, 0, True, 1.0, "1")] == [True, False, False, False, False]
    assert protocol.error_reply("x", "y", 3) == {"seq": 3, "error": {"code": "x", "message": "y"}}
    assert set(protocol.ERROR_CODES) >= {"bad-json", "bad-request", "internal", "line-too-long"}
    assert protocol.OPTION_NAMES == ("read_only", "allow", "limits", "content_policy")


# --- the OpenClaw tools over the same root -----------------------------------------------------------


def test_serve_runs_the_openclaw_tools_over_the_root_of_the_last_reset(tmp_path: pathlib.Path) -> None:
    (tmp_path / "MEMORY.md").write_text("The billing migration waits for the audit.\n")
    replies = exchange(
        lines(
            START,
            reset_line(str(tmp_path)),
            json.dumps({"cmd": "execute", "seq": 2, "tool": "memory_get", "input": {"path": "MEMORY.md"}}).encode(),
            json.dumps({"cmd": "execute", "seq": 3, "tool": "memory_search", "input": {"query": "billing"}}).encode(),
            json.dumps({"cmd": "execute", "seq": 4, "input": {"command": "view", "path": "/memories/MEMORY.md"}})
            .encode(),
            json.dumps({"cmd": "execute", "seq": 5, "tool": "shell", "input": {}}).encode(),
        )
    )
    start, _reset, get, search, view, unknown = replies
    assert start["tools"] == ["memory", "memory_get", "memory_search"]
    schema_valid(start, "start-reply")
    assert get["result"]["status"] == "ok" and get["result"]["text"].startswith("The billing migration")
    assert [hit["path"] for hit in search["result"]["results"]] == ["MEMORY.md"]
    for reply in (get, search, view):
        schema_valid(reply, "execute-reply")
        assert reply["is_error"] is False
    assert view["output"].endswith("1\tThe billing migration waits for the audit.")
    assert unknown["seq"] == 5 and error_code(unknown) == protocol.UNKNOWN_TOOL


def test_an_openclaw_tool_before_reset_is_no_root() -> None:
    request = json.dumps({"cmd": "execute", "seq": 1, "tool": "memory_get", "input": {"path": "MEMORY.md"}})
    (_start, reply) = exchange(lines(START, request.encode()))
    assert error_code(reply) == protocol.NO_ROOT
