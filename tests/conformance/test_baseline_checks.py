"""Baselines at check granularity (D-BASELINE-*): an entry names a case or one check of a case; a stale entry
fails the run; a contradictory file is refused when it is loaded; no entry covers a safety finding.

The planted backends are fake_backends' `wrong` (view's is_error inverted and a space added: on t-001 the checks
step1.is_error, signalling, and step1.output, a `should` case's documented finding; on t-002 and t-004
step1.is_error) and `leaker` (t-002 and t-004 show the host path: step1.leak, safety).
"""

from __future__ import annotations

import json
import pathlib
from typing import Any, Dict, List, Tuple

import pytest
from conformance_support import run_cli

WRONG = ("--target", "python:fake_backends:wrong")
LEAKER = ("--target", "python:fake_backends:leaker")


def _run(cases: pathlib.Path, tmp_path: pathlib.Path, target: Tuple[str, str], entries: List[Dict[str, Any]],
         *options: str) -> Tuple[int, str, str]:
    known = tmp_path / "known.json"
    known.write_text(json.dumps(entries))
    return run_cli("--cases-dir", str(cases), "--no-matrix", *target, "--expectations", str(known), *options)


def _fail(entry_id: str) -> Dict[str, str]:
    return {"id": entry_id, "expect": "fail", "reason": "known", "issue": ""}


# --- a check entry covers exactly its check ---------------------------------------------------------------


def test_a_check_entry_covers_the_only_failing_check(basic_cases: pathlib.Path, tmp_path: pathlib.Path) -> None:
    status, out, _ = _run(basic_cases, tmp_path, WRONG, [_fail("t-002:step1.is_error")], "--run", "t-002")
    assert status == 0, out
    assert "0 fail, 1 xfail" in out


def test_a_failing_check_no_entry_names_fails_the_case(basic_cases: pathlib.Path, tmp_path: pathlib.Path) -> None:
    # under `standard` t-001 fails two checks: naming one leaves the other failing the case
    one = [_fail("t-001:step1.is_error")]
    status, out, _ = _run(basic_cases, tmp_path, WRONG, one, "--run", "t-001", "--profile", "standard")
    assert status == 1 and "1 fail, 0 xfail" in out, out
    both = one + [_fail("t-001:step1.output")]
    status, out, _ = _run(basic_cases, tmp_path, WRONG, both, "--run", "t-001", "--profile", "standard")
    assert status == 0 and "0 fail, 1 xfail" in out, out


# --- stale entries fail the run ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "entry, profile, said",
    [
        ("t-001:step1.output", "documented", "the check passes"),  # its finding does not gate under documented
        ("t-002:final", "documented", "the check passes"),  # the case fails, but not that check
        ("t-003:step1.match", "documented", "the case passes"),
        ("gone-001:step1.output", "documented", "matches no case"),
        ("gone-*", "documented", "matches no case"),
    ],
)
def test_a_stale_entry_fails_the_run(
    basic_cases: pathlib.Path, tmp_path: pathlib.Path, entry: str, profile: str, said: str
) -> None:
    needed = [_fail("t-001:step1.is_error"), _fail("t-002:step1.is_error"), _fail("t-004:step1.is_error")]
    entries = [item for item in needed if item["id"] != entry] + [_fail(entry)]
    report = tmp_path / "report.json"
    status, out, _ = _run(basic_cases, tmp_path, WRONG, entries, "--profile", profile, "--report-json", str(report))
    assert status == 1, out
    assert f"STALE expectation {entry!r}: {said}" in out
    assert "1 stale expectations" in out
    stale = json.loads(report.read_text())["stale_expectations"]
    assert [(item["id"], item["stale"]) for item in stale] == [(entry, said)]
    # without the stale entry the same run passes: the entry alone failed it
    status, out, _ = _run(basic_cases, tmp_path, WRONG, needed, "--profile", profile)
    assert status == 0, out


def test_a_whole_case_entry_whose_case_passes_fails_the_run(basic_cases: pathlib.Path, tmp_path: pathlib.Path) -> None:
    status, out, _ = _run(basic_cases, tmp_path, WRONG, [_fail("t-003")], "--run", "t-003")
    assert status == 1 and "1 xpass" in out and "unexpected passes (stale expectations)" in out, out


def test_a_check_entry_of_a_case_outside_the_selection_is_not_stale(
    basic_cases: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    status, out, _ = _run(basic_cases, tmp_path, WRONG, [_fail("t-003:final")], "--run", "t-001")
    assert "STALE" not in out and status == 1, out  # t-001 fails for itself; the entry is not judged


# --- contradictory files are refused when loaded ------------------------------------------------------------


@pytest.mark.parametrize(
    "entries, said",
    [
        ([_fail("t-001"), _fail("t-001")], "repeats entry 1 ('t-001')"),
        ([_fail("t-001:step1.output"), _fail("t-001:step1.output")], "repeats entry 1"),
        (
            [_fail("t-00*"), {"id": "t-001", "expect": "skip"}],
            "case t-001: the entries contradict each other ('t-00*' expects fail, 't-001' expects skip)",
        ),
        ([_fail("t-001"), _fail("t-001:step1.output")], "case t-001: a check entry beside the whole-case entry"),
        ([{"id": "t-*", "expect": "skip"}, _fail("t-001:final")], "a check entry beside the whole-case entry 't-*'"),
        ([{"id": "t-001:final", "expect": "skip"}], "a check can only be expected to fail"),
        ([_fail("t-00*:final")], "names one case by its exact ID, not a glob"),
        ([_fail("t-001:Step one")], "is not a check name"),
    ],
)
def test_a_contradictory_file_is_refused(
    basic_cases: pathlib.Path, tmp_path: pathlib.Path, entries: List[Dict[str, str]], said: str
) -> None:
    status, out, err = _run(basic_cases, tmp_path, WRONG, entries)
    assert status == 2 and said in err, err
    assert "pass," not in out  # refused before anything ran


# --- no entry covers a safety finding -------------------------------------------------------------------------


@pytest.mark.parametrize("entry", ["t-002", "t-00[24]", "t-002:step1.leak"])
def test_no_entry_covers_a_safety_finding(basic_cases: pathlib.Path, tmp_path: pathlib.Path, entry: str) -> None:
    entries = [_fail(entry)] + ([_fail("t-002:step1.is_error")] if ":" in entry else [])
    report = tmp_path / "report.json"
    status, out, _ = _run(basic_cases, tmp_path, LEAKER, entries, "--run", "t-002", "--report-json", str(report))
    assert status == 1, out
    assert "1 fail, 0 xfail" in out
    assert "tried to cover a safety finding of case t-002" in out
    data = json.loads(report.read_text())
    (case,) = data["cases"]
    assert case["outcome"] == "fail" and "safety finding" in case["expectation"]["refused"]
    assert any("tried to cover a safety finding" in warning for warning in data["warnings"])


def test_check_entries_beside_a_safety_finding_leave_the_case_failing(
    basic_cases: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    # the entry names only the documented check: the safety check is not covered, and nothing was tried on it
    status, out, _ = _run(basic_cases, tmp_path, LEAKER, [_fail("t-002:step1.is_error")], "--run", "t-002",
                          "--profile", "standard")
    assert status == 1 and "1 fail, 0 xfail" in out, out
    assert "tried to cover" not in out


def test_baseline_keeps_check_entries_that_still_cover(basic_cases: pathlib.Path, tmp_path: pathlib.Path) -> None:
    known = tmp_path / "known.json"
    known.write_text(json.dumps([_fail("t-002:step1.is_error")]))
    status, _, err = run_cli("--cases-dir", str(basic_cases), "--no-matrix", *WRONG, "baseline",
                             "--expectations", str(known))
    assert status == 0, err
    assert [entry["id"] for entry in json.loads(known.read_text())] == ["t-001", "t-002:step1.is_error", "t-004"]
    status, out, _ = run_cli("--cases-dir", str(basic_cases), "--no-matrix", *WRONG, "--expectations", str(known))
    assert status == 0, out
