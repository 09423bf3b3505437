"""Reading an adapter within bounds (conformance/adapter_wire.py), and the relay's log of what it could not check."""

from __future__ import annotations

import json
import pathlib
from typing import Any, Iterator, List

import pytest
from hypothesis import given
from hypothesis import strategies as st

from refmem_conformance import protocol_relay
from refmem_harness import adapter_wire as wire


def _chunks(data: bytes, size: int) -> Any:
    """A read call that gives `data` back `size` bytes at a time, as a pipe would."""
    parts: Iterator[bytes] = iter([data[start : start + size] for start in range(0, len(data), size)])
    return lambda _wanted: next(parts, b"")


@pytest.mark.parametrize("size", [1, 3, 7, 64 * 1024])
def test_lines_are_assembled_across_chunks_and_a_long_one_is_reported_once(size: int) -> None:
    data = b"abc\n" + b"x" * 25 + b"\n\nlast"
    found = list(wire.lines(_chunks(data, size), limit=10))
    assert found[0] == b"abc" and found[2:] == [b"", b"last"]
    assert isinstance(found[1], wire.TooLong) and found[1].excerpt.startswith(b"x")


def test_an_assembler_never_holds_more_than_its_limit() -> None:
    assembler = wire.LineAssembler(limit=100)
    assert assembler.add(b"y" * 60, False) is None
    assert isinstance(assembler.add(b"y" * 60, False), wire.TooLong)
    for _ in range(1000):  # the rest of an endless line is dropped as it comes
        assert assembler.add(b"y" * 1000, False) is None
        assert len(assembler._held) == 0
    assert assembler.add(b"tail", True) is None  # the end of the long line, not a line of its own
    assert assembler.add(b"next", True) == b"next"


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(item) for item in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(item) for item in value), default=0)
    return 0


TRICKY = '[]{}"\\'  # brackets inside strings, and escaped quotes, must not count
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet=TRICKY + "ab"),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(TRICKY, max_size=3), inner, max_size=3),
    max_leaves=30,
)


@given(JSON, st.integers(min_value=0, max_value=8))
def test_nesting_is_measured_as_the_decoder_sees_it(value: Any, bound: int) -> None:
    line = json.dumps(value).encode("ascii")
    assert wire.too_deep(line, bound) == (_depth(value) > bound)


@pytest.mark.parametrize(
    "line, reason",
    [
        (b"", "blank"),
        (b"\xff{}", "not UTF-8"),
        (b"{nope", "not JSON"),
        (b"[" * 65 + b"]" * 65, "deeper than 64 levels"),
        (b'{"a": ' * 100_000, "deeper than 64 levels"),
        (wire.TooLong(b"x"), f"longer than {wire.MAX_LINE_BYTES} bytes"),
    ],
)
def test_a_line_that_is_not_a_message_is_unreadable(line: wire.Line, reason: str) -> None:
    with pytest.raises(wire.Unreadable, match=reason):
        wire.decode(line)


def test_stderr_lines_are_cut_and_counted() -> None:
    data = b"short\r\n" + b"e" * 10_000 + b"\nendless " + b"f" * 50_000
    found = list(wire.stderr_lines(_chunks(data, 4096), line_bytes=100))
    assert found == ["short", "e" * 100 + "... [9900 more bytes]", "endless " + "f" * 92 + "... [49908 more bytes]"]


# --- the relay's log --------------------------------------------------------------------------------------


def _entries(log: pathlib.Path) -> List[Any]:
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


def test_the_relay_logs_a_line_it_cannot_read_printably(tmp_path: pathlib.Path) -> None:
    log = tmp_path / "violations.jsonl"
    checker = protocol_relay.Checker(log)
    checker.reply(b"\x1b[2J##[error]forged")
    checker.reply(b'{"seq": [1], "output": "", "is_error": false}')  # a seq no request can have
    first, second = _entries(log)
    assert first["problems"] == ["the line cannot be read: the line is not JSON"]
    assert first["message"] == "\\x1b[2J##\\x5berror]forged"
    assert second["schema"] == ""


def test_a_relay_thread_that_fails_leaves_a_violation_behind(tmp_path: pathlib.Path) -> None:
    log = tmp_path / "violations.jsonl"
    checker = protocol_relay.Checker(log)

    def failing() -> None:
        raise RecursionError("maximum recursion depth exceeded")

    protocol_relay._guarded(checker, protocol_relay.ADAPTER_TO_RUNNER, failing)()
    (entry,) = _entries(log)
    assert entry["schema"] == "relay"
    assert entry["problems"][0].startswith("the relay stopped checking the replies (RecursionError")
