"""Known deviations: expected failures, skips, unexpected passes, stale entries and baseline (check entries:
test_baseline_checks.py)."""

from __future__ import annotations

import json
import pathlib

import pytest
from conformance_support import run_cli

WRONG = ("--target", "python:fake_backends:wrong")
TINY = ("--target", "python:fake_backends:tiny")


def _expectations(path: pathlib.Path, entries: list) -> str:
    path.write_text(json.dumps(entries))
    return str(path)


def _run(cases: pathlib.Path, target: tuple, *options: str) -> tuple:
    return run_cli("--cases-dir", str(cases), "--no-matrix", *target, *options)


def test_expected_failures_keep_the_run_green(basic_cases: pathlib.Path, tmp_path: pathlib.Path) -> None:
    known = _expectations(
        tmp_path / "known.json",
        [
            {"id": "t-00[12]", "expect": "fail", "reason": "inverted is_error", "issue": ""},
            {"id": "t-004", "expect": "skip", "reason": "not implemented", "issue": "https://example.invalid/1"},
        ],
    )
    status, out, _ = _run(basic_cases, WRONG, "--expectations", known, "--strict")
    assert status == 0, out
    assert "1 pass, 0 fail, 2 xfail, 0 xpass, 1 skip" in out
    # the figures describe the implementation, expectations aside: 2 of the 3 cases that ran fail on is_error
    assert "\n  signalling: 1/3\n" in out
    assert "conformant: no: 2 cases fail under the documented profile" in out  # the figures, expectations aside
    assert "verdict: PASS (exit 0)" in out and "2 expected failures in the expectations file" in out


@pytest.mark.parametrize(
    "entry, said",
    [
        ("t-001", "1 xpass"),  # a case expected to fail that passes
        ("gone-*", "STALE expectation 'gone-*': matches no case"),  # an entry no case matches
    ],
)
def test_an_unexpected_pass_or_a_stale_entry_fails_the_run(
    basic_cases: pathlib.Path, tmp_path: pathlib.Path, entry: str, said: str
) -> None:
    known = _expectations(tmp_path / "known.json", [{"id": entry, "expect": "fail", "reason": "", "issue": ""}])
    for options in ((), ("--strict",)):  # --strict is kept for old command lines and changes nothing (D-BASELINE-STALE)
        status, out, _ = _run(basic_cases, TINY, "--expectations", known, *options)
        assert status == 1 and said in out, out


def test_an_entry_outside_the_selection_is_not_stale(basic_cases: pathlib.Path, tmp_path: pathlib.Path) -> None:
    known = _expectations(tmp_path / "known.json", [{"id": "t-002", "expect": "fail", "reason": "", "issue": ""}])
    status, out, _ = _run(basic_cases, WRONG, "--expectations", known, "--strict", "--run", "t-002")
    assert status == 0, out


def test_a_malformed_expectations_file_is_a_usage_error(basic_cases: pathlib.Path, tmp_path: pathlib.Path) -> None:
    bad = _expectations(tmp_path / "bad.json", [{"id": "t-001", "expect": "maybe"}])
    assert _run(basic_cases, TINY, "--expectations", bad)[0] == 2
    assert _run(basic_cases, TINY, "--expectations", str(tmp_path / "missing.json"))[0] == 2


def test_baseline_writes_todays_failures_and_keeps_known_reasons(
    basic_cases: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    known = _expectations(
        tmp_path / "known.json",
        [
            {"id": "t-002", "expect": "fail", "reason": "kept reason", "issue": "https://example.invalid/2"},
            {"id": "t-004", "expect": "skip", "reason": "skipped", "issue": ""},
        ],
    )
    status, _, err = _run(basic_cases, WRONG, "baseline", "--expectations", known)
    assert status == 0 and "wrote 3 expectations" in err
    entries = json.loads(pathlib.Path(known).read_text())
    assert {entry["id"]: entry["expect"] for entry in entries} == {"t-001": "fail", "t-002": "fail", "t-004": "skip"}
    assert [entry for entry in entries if entry["id"] == "t-002"][0]["issue"] == "https://example.invalid/2"
    status, out, _ = _run(basic_cases, WRONG, "--expectations", known, "--strict")
    assert status == 0, out


def test_baseline_without_a_file_prints_json(basic_cases: pathlib.Path) -> None:
    status, out, _ = _run(basic_cases, WRONG, "baseline")
    assert status == 0
    assert [entry["id"] for entry in json.loads(out)] == ["t-001", "t-002", "t-004"]
