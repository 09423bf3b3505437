"""A finding file is something a stranger sends: replaying one runs none of its code, refuses what is not
a well-formed finding, and expands nothing without bound (the three points of the fuzzer's audit).

Only `refmem-fuzz`'s command line is used here, so that each test reads the same on the code before the
fix (where it fails) and after.
"""

from __future__ import annotations

import json
import pathlib
import shlex
import sys
import tracemalloc
from typing import Any, Dict

import pytest
from fuzz_support import VULNERABLE
from refmem_fuzz.cli import main

REPO = pathlib.Path(__file__).resolve().parent.parent.parent
COMMITTED = REPO / "fuzz" / "findings" / "anthropic-python-sdk" / "leak-canary-view-e455f1e278d2.json"


def _finding(**changes: Any) -> Dict[str, Any]:
    data: Dict[str, Any] = {
        "format": "refmem-fuzz-finding/2",
        "target": VULNERABLE,
        "harness": "sequence",
        "oracle": "leak:canary:view",
        "detail": "canary bytes from outside the root in the output",
        "step": 0,
        "hostile_layout": False,
        "differential": False,
        "commands": [{"command": "view", "path": "/memories_evil/secret.txt"}],
        "observed": [],
    }
    data.update(changes)
    return data


def _write(path: pathlib.Path, data: Any) -> pathlib.Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _marker_command(marker: pathlib.Path) -> str:
    """A `cmd:` target that leaves a file behind if anything ever starts it."""
    program = f"open({str(marker)!r}, 'w').close()"
    return "cmd:" + shlex.join([sys.executable, "-c", program])


# --- 1. the target a file names is never started ----------------------------------------------------


def test_replay_never_starts_the_target_a_file_names(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture) -> None:
    marker = tmp_path / "started"
    sent = _write(tmp_path / "sent.json", _finding(target=_marker_command(marker)))
    status = main(["replay", str(sent)])
    assert not marker.exists(), "replay started the command named inside the finding file"
    assert status == 0  # replayed on the reference, which does not leak
    out = capsys.readouterr().out
    assert "embedded reference (refmem) only" in out and "NOT REPRODUCED: leak:canary:view on refmem" in out


def test_replay_uses_the_target_given_on_the_command_line(tmp_path: pathlib.Path,
                                                          capsys: pytest.CaptureFixture) -> None:
    marker = tmp_path / "started"
    sent = _write(tmp_path / "sent.json", _finding(target=_marker_command(marker)))
    assert main(["replay", str(sent), "--target", VULNERABLE]) == 1
    assert not marker.exists()
    assert "REPRODUCED: leak:canary:view on python:vulnerable_backend:make" in capsys.readouterr().out


# --- 2. what is not a well-formed finding is refused, status 2 ------------------------------------


def _refused(path: pathlib.Path, capsys: pytest.CaptureFixture) -> str:
    assert main(["replay", str(path)]) == 2
    captured = capsys.readouterr()
    assert "REPRODUCED" not in captured.out and "CLEAN" not in captured.out
    lines = captured.err.splitlines()
    assert len(lines) == 1 and "not a well-formed finding file" in lines[0], captured.err
    return lines[0]


@pytest.mark.parametrize("cut", [10, 200, 600])
def test_a_truncated_finding_file_is_refused(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture, cut: int) -> None:
    text = COMMITTED.read_bytes()
    assert len(text) > cut
    truncated = tmp_path / "truncated.json"
    truncated.write_bytes(text[:cut])
    assert "not JSON" in _refused(truncated, capsys)


@pytest.mark.parametrize(
    "content, said",
    [
        pytest.param(b"{}", "format", id="empty-object"),
        pytest.param(b"", "not JSON", id="empty-file"),
        pytest.param(b'{"format": "\xff"}', "not UTF-8", id="not-utf8"),
        pytest.param(b"[]", "not an object", id="array"),
        pytest.param(json.dumps(_finding(format="refmem-fuzz-finding/9")).encode(), "format", id="wrong-format"),
        pytest.param(json.dumps({k: v for k, v in _finding().items() if k != "commands"}).encode(), "commands",
                     id="no-commands"),
        pytest.param(json.dumps(_finding(commands={"command": "view"})).encode(), "commands", id="commands-not-a-list"),
        pytest.param(json.dumps(_finding(commands=[])).encode(), "commands", id="no-command"),
        pytest.param(json.dumps(_finding(commands=[{"command": "view", "path": "/memories"}] * 300)).encode(),
                     "commands", id="too-many-commands"),
        pytest.param(json.dumps(_finding(oracle="pwned:yes")).encode(), "oracle", id="unknown-oracle"),
        pytest.param(json.dumps(_finding(oracle="leak:canary:view\x1b[2J")).encode(), "oracle",
                     id="oracle-with-escape"),
        pytest.param(json.dumps(_finding(step="0")).encode(), "step", id="step-mistyped"),
        pytest.param(json.dumps(_finding(hostile_layout="yes")).encode(), "hostile_layout", id="layout-mistyped"),
        pytest.param(json.dumps(_finding(target=["cmd:x"])).encode(), "target", id="target-mistyped"),
        pytest.param(json.dumps(_finding(harness="fork-bomb")).encode(), "harness", id="unknown-harness"),
        pytest.param(json.dumps(_finding()).replace('"step": 0', '"step": NaN').encode(), "not JSON", id="nan"),
    ],
)
def test_a_file_that_is_not_a_finding_is_refused(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture,
                                                 content: bytes, said: str) -> None:
    path = tmp_path / "sent.json"
    path.write_bytes(content)
    assert said in _refused(path, capsys)


def test_json_nested_deeper_than_the_parser_goes_is_refused(tmp_path: pathlib.Path,
                                                            capsys: pytest.CaptureFixture) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text('{"format": "refmem-fuzz-finding/2", "commands": ' + "[" * 200_000 + "]" * 200_000 + "}")
    assert "nested deeper" in _refused(deep, capsys)
    shallow_enough_for_json = tmp_path / "deep-command.json"
    nested: Any = "x"
    for _ in range(600):
        nested = [nested]
    _write(shallow_enough_for_json, _finding(commands=[{"command": "view", "path": nested}]))
    assert "nested deeper" in _refused(shallow_enough_for_json, capsys)


def test_a_raw_fuzzer_input_is_decoded_only_when_asked(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture) -> None:
    crash = tmp_path / "crash-0123"
    crash.write_bytes(b"\x03\x01\x02\xff\x00garbage")
    _refused(crash, capsys)
    assert main(["replay", str(crash), "--raw"]) == 0
    assert "decoded by the sequence harness" in capsys.readouterr().out
    assert main(["replay", str(crash), "--harness", "paths"]) == 2  # --harness describes a raw input only
    assert "--raw" in capsys.readouterr().err


# --- 3. expansion is bounded --------------------------------------------------------------------


def _repeat(unit: str, times: int, then: str = "") -> Dict[str, Any]:
    return {"$repeat": unit, "times": times, "then": then}


def test_a_repeat_over_the_bound_for_one_value_is_refused(tmp_path: pathlib.Path,
                                                          capsys: pytest.CaptureFixture) -> None:
    """64 characters x 2^20: 64 Mi characters from a file of 400 bytes, 16 times what one value may hold."""
    big = _write(tmp_path / "big.json", _finding(commands=[
        {"command": "create", "path": "/memories/a", "file_text": _repeat("a" * 64, 1 << 20)}]))
    assert big.stat().st_size < 1000
    assert "expands to 67,108,864 characters" in _refused(big, capsys)


def test_the_audit_file_is_refused_before_anything_is_expanded(tmp_path: pathlib.Path,
                                                               capsys: pytest.CaptureFixture) -> None:
    """The audit's file: a unit of 4,096 characters 2^24 times, 64 Gi characters from 4.4 KB."""
    audit = _write(tmp_path / "audit.json", _finding(commands=[
        {"command": "create", "path": "/memories/a", "file_text": _repeat("a" * 4096, 1 << 24)}]))
    assert audit.stat().st_size < 4500
    tracemalloc.start()
    try:
        _refused(audit, capsys)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20


def test_repeats_over_the_bound_for_the_whole_finding_are_refused(tmp_path: pathlib.Path,
                                                                  capsys: pytest.CaptureFixture) -> None:
    """Five values of 4 Mi characters each: every one within its bound, 20 Mi in all over the finding's 16 Mi."""
    value = _repeat("ab\n", (4 << 20) // 3)
    many = _write(tmp_path / "many.json", _finding(commands=[
        {"command": "create", "path": f"/memories/{index}", "file_text": value} for index in range(5)]))
    assert "over the 16,777,216 a finding may hold" in _refused(many, capsys)


def test_a_finding_file_is_read_with_a_size_bound(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture) -> None:
    huge = tmp_path / "huge.json"
    with huge.open("wb") as out:
        out.write(json.dumps(_finding(detail="")).encode()[:-2])
        out.truncate(17 << 20)  # a sparse file of 17 MiB: nothing is read past the bound
    assert main(["replay", str(huge)]) == 2
    assert "larger than the 16,777,216 bytes" in capsys.readouterr().err
