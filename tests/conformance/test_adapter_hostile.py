"""A backend under test is hostile to the harness: what it writes is read within bounds and taken in printable.

Each attack is a planted adapter (hostile_adapter.py): replies nested 100,000 deep, a reply line and a stderr
line four times the protocol's 16 MiB bound, and escape sequences and forged CI log commands in every string
the harness shows.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
from typing import Any, Dict, List, Optional, Tuple

import pytest
from conformance_support import HERE, case, run_cli, view, write_cases

from refmem import protocol
from refmem_harness import target_base
from refmem_harness.targets import open_target

HOSTILE_ADAPTER = HERE / "hostile_adapter.py"
LIMIT = protocol.MAX_LINE_BYTES
EVIL_CHARS = ("\x1b", "\r", "\x07", "\u202e")


def hostile(*modes: str) -> str:
    return "cmd:" + " ".join([sys.executable, str(HOSTILE_ADAPTER), *modes])


def _report(cases: pathlib.Path, *options: str) -> Tuple[int, str, str, Optional[Dict[str, Any]]]:
    path = cases.parent / "report.json"
    status, out, err = run_cli("--cases-dir", str(cases), "--no-matrix", "--report-json", str(path), *options)
    return status, out, err, (json.loads(path.read_text()) if path.exists() else None)


def _findings(report: Dict[str, Any]) -> Dict[str, List[Dict[str, Any]]]:
    return {entry["id"]: entry.get("findings", []) for entry in report["cases"]}


def _harmless(text: str) -> List[str]:
    """The lines of `text` a terminal or a CI log would not show as plain text (empty when all are fine)."""
    return [
        line
        for line in text.split("\n")
        if any(char in line for char in EVIL_CHARS)
        or line.lstrip(" ").startswith("::")
        or "##[" in line
        or not all(char == " " or char.isprintable() for char in line)
    ]


# --- nesting ----------------------------------------------------------------------------------------------


def test_replies_nested_too_deeply_are_protocol_violations_and_the_run_goes_on(tmp_path: pathlib.Path) -> None:
    cases = [
        case("t-201", [view("/memories/deep", True)]),
        case("t-202", [view("/memories/missing", True)]),
        case("t-203", [view("/memories/deepout", True)]),
        case("t-204", [view("/memories/missing", True)]),
    ]
    status, _, _, report = _report(write_cases(tmp_path / "cases", cases), "--target", hostile())
    assert status == 1 and report is not None
    findings = _findings(report)
    for crashed in ("t-201", "t-203"):
        assert [finding["kind"] for finding in findings[crashed]] == ["crashed"]
        assert "the line nests arrays or objects deeper than 64 levels" in findings[crashed][0]["detail"]
    assert findings["t-202"] == [] and findings["t-204"] == []
    assert report["restarts"] == 2


def test_validate_counts_a_reply_it_cannot_read_as_a_violation(tmp_path: pathlib.Path) -> None:
    cases = [
        case("t-211", [view("/memories/deep", True)]),
        case("t-212", [view("/memories/long", True)]),
        case("t-213", [view("/memories/missing", True)]),
    ]
    options = ("--target", hostile(), "--validate", "--timeout", "5")
    status, out, _, report = _report(write_cases(tmp_path / "cases", cases), *options)
    assert status == 1 and report is not None
    assert "every message follows its schema" not in out
    assert "the line cannot be read: the line nests arrays or objects deeper than 64 levels" in out
    assert f"the line cannot be read: the line is longer than {LIMIT} bytes" in out
    findings = _findings(report)
    assert [finding["kind"] for finding in findings["t-211"]] == ["crashed"]
    assert [finding["kind"] for finding in findings["t-212"]] == ["crashed"]
    assert findings["t-213"] == []


# --- length -----------------------------------------------------------------------------------------------

MEASURE = """
import json, pathlib, sys, tempfile
from refmem_harness.targets import open_target

def status(key):
    with open("/proc/self/status") as lines:
        return next(int(line.split()[1]) * 1024 for line in lines if line.startswith(key))

target = open_target(sys.argv[1], pathlib.Path(tempfile.mkdtemp()), timeout=120)
before = status("VmRSS:")
step = target.execute({"command": "view", "path": "/memories/" + sys.argv[2]})
peak = status("VmHWM:")
target.close()
print(json.dumps({"growth": peak - before, "crashed": step.crashed, "detail": step.detail[:300]}))
"""


def _runner_memory(word: str, size: int) -> Dict[str, Any]:
    """The runner's peak resident memory above where it stood before one step, in a process of its own."""
    env = dict(os.environ, HOSTILE_BYTES=str(size))
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, hostile(), word], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result: Dict[str, Any] = json.loads(done.stdout)
    return result


@pytest.mark.skipif(not pathlib.Path("/proc/self/status").exists(), reason="reads VmHWM from /proc")
def test_a_reply_line_past_the_bound_is_a_violation_read_in_chunks() -> None:
    measured = _runner_memory("long", 4 * LIMIT)
    assert measured["crashed"] and f"the line is longer than {LIMIT} bytes" in measured["detail"]
    assert measured["growth"] < 2 * LIMIT, measured  # about one bound held, not the 64 MiB line


@pytest.mark.skipif(not pathlib.Path("/proc/self/status").exists(), reason="reads VmHWM from /proc")
def test_an_endless_stderr_line_is_cut_as_it_is_read() -> None:
    measured = _runner_memory("noisy", 4 * LIMIT)
    assert not measured["crashed"], measured
    assert measured["growth"] < LIMIT // 2, measured  # a bounded tail, not the 64 MiB line


# --- text -------------------------------------------------------------------------------------------------


def test_adapter_text_is_printable_and_bounded_where_it_is_taken_in(tmp_path: pathlib.Path) -> None:
    target = open_target(hostile("evilname"), tmp_path, timeout=30)
    try:
        for value in target.implementation.values():
            assert _harmless(value) == [], value
            assert len(value) <= target_base.NAME_CHARS + 40, value  # the cut, and its count
        assert "##\\x5b" in target.implementation["name"]  # drawn, not dropped
        steps = {}
        for word in ("raises", "refuse", "rawline", "crash"):
            steps[word] = target.execute({"command": "view", "path": f"/memories/{word}"})
            target.reset(tmp_path)
        assert steps["raises"].raised and steps["refuse"].crashed and steps["crash"].crashed
        assert steps["rawline"].crashed and "the line is not JSON" in steps["rawline"].detail
        assert "Traceback (most recent call last):" in steps["raises"].detail
        assert "forged annotation" in steps["crash"].detail  # the stderr tail
        for word, step in steps.items():
            assert _harmless(step.detail) == [], (word, step.detail)
    finally:
        target.close()


@pytest.mark.parametrize("factory", ["make", "declared"])
def test_an_in_process_implementation_describes_itself_printably(tmp_path: pathlib.Path, factory: str) -> None:
    target = open_target(f"python:hostile_name_backends:{factory}", tmp_path)
    for value in target.implementation.values():
        assert _harmless(value) == [], value
        assert len(value) <= target_base.NAME_CHARS + 40, value
    assert "forged" in target.implementation["name"]


def test_no_adapter_text_reaches_the_terminal_or_the_summary_raw(tmp_path: pathlib.Path) -> None:
    words = ["raises", "refuse", "rawline", "crash"]
    cases = [case(f"t-22{n}", [view(f"/memories/{word}", True)]) for n, word in enumerate(words)]
    summary = tmp_path / "summary.md"
    options = ("--target", hostile("evilname"), "--validate", "--markdown", str(summary))
    status, out, err, _ = _report(write_cases(tmp_path / "cases", cases), *options)
    assert status == 1
    assert "forged annotation" in out  # shown, drawn printable
    for text in (out, err, summary.read_text(encoding="utf-8")):
        assert _harmless(text) == []
    assert "the adapter exited" in out  # a crash behind the relay is seen at once, not after the step timeout


def test_another_tools_replies_are_read_within_the_same_bounds(tmp_path: pathlib.Path) -> None:
    """The OpenClaw runner reaches its tools through the same client (the protocol's `tool` field)."""
    target = open_target(hostile(), tmp_path, 30)
    try:
        failures = []
        for word in ("deep", "long"):
            target.reset(tmp_path)
            step = target.execute({"path": word}, tool="memory_get")
            failures.append((step.crashed, step.detail.split(":")[0]))
        assert failures == [
            (True, "the line nests arrays or objects deeper than 64 levels"),
            (True, f"the line is longer than {LIMIT} bytes"),
        ]
    finally:
        target.close()


# --- an adapter that stops reading ------------------------------------------------------------------------


def test_an_adapter_that_stops_reading_its_input_times_out_and_the_run_goes_on(tmp_path: pathlib.Path) -> None:
    """Writing a request larger than the pipe's buffer to an adapter that no longer reads blocked the runner for
    good: a write is bounded by the step timeout like a reply, then the adapter is killed and restarted."""
    big = {"input": {"command": "create", "path": "/memories/big.txt", "file_text": "x" * 1_000_000}}
    cases = [
        case("t-301", [view("/memories/deaf", True), dict(big, is_error=False)]),
        case("t-302", [view("/memories/missing", True)]),
    ]
    done = subprocess.run(
        [sys.executable, "-m", "refmem_conformance", "--cases-dir", str(write_cases(tmp_path / "cases", cases)),
         "--no-matrix", "--target", hostile(), "--timeout", "2", "--report-json", str(tmp_path / "r.json")],
        capture_output=True, text=True, timeout=120,
    )
    report = json.loads((tmp_path / "r.json").read_text())
    findings = _findings(report)
    assert [finding["kind"] for finding in findings["t-301"]] == ["timed_out"], findings["t-301"]
    assert findings["t-302"] == [] and done.returncode == 1
