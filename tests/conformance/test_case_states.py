"""One state per case (results.case_state), read alike by the exit status, the terminal summary, the JSON report
and the JUnit file: a hang, a crash, a restart inside a case or a case the target could not be reset for fails the
run under every profile, in a case that gates or not (D-VERDICT-STATE, D-VERDICT-HANG)."""

from __future__ import annotations

import json
import pathlib
import xml.etree.ElementTree as ET
from typing import Any, Dict, Tuple

import planted_hang
import pytest
import state_backends
from conformance_support import adapter, case, run_cli, view, write_cases

from refmem_conformance import runner
from conformance.tiers import PROFILES

CASES = [
    case("t-201", [view("/memories/hang-crash-201", True)]),  # a must case: gates under every profile
    case("t-202", [view("/memories/hang-crash-202", True)], level="should"),  # gates only beyond `documented`
    case("t-203", [view("/memories/missing", True)]),
]
CUT = {"hang": "timeout", "crash": "crash"}


def _run(cases: pathlib.Path, *options: str) -> Tuple[int, str, Dict[str, Any], ET.Element]:
    report, junit = cases.parent / "report.json", cases.parent / "junit.xml"
    status, out, _ = run_cli(
        "--cases-dir", str(cases), "--no-matrix", "--report-json", str(report), "--junit", str(junit), *options
    )
    return status, out, json.loads(report.read_text()), ET.parse(junit).getroot()



def _assert_two_cut_short(state: str, status: int, out: str, report: Dict[str, Any], junit: ET.Element) -> None:
    """The first two cases ended in `state`, the third passed: exit 1, and 2 failures, 1 pass, alike in the
    summary, the JSON and the JUnit file."""
    first, second, passing = (entry["id"] for entry in report["cases"])
    assert status == 1, out
    assert [entry["state"] for entry in report["cases"]] == [state, state, "pass"]
    assert [entry["status"] for entry in report["cases"]] == ["fail", "fail", "pass"]
    assert report["counts"]["fail"] == 2 and report["counts"]["pass"] == 1
    assert report["states"][state] == 2 and report["verdict"]["exit"] == 1
    assert report["figures"]["gating_failures"] == 2 <= report["counts"]["fail"]
    assert report["figures"]["safe"] is False
    assert f"1 pass, 2 fail, 0 xfail, 0 xpass, 0 skip (2 {state} among the failures)" in out
    assert "verdict: FAIL (exit 1)" in out and f"{state.upper()} {first}" in out
    assert junit.get("failures") == "2" and junit.get("tests") == "3"
    failures = {testcase.get("name"): testcase.find("failure") for testcase in junit.iter("testcase")}
    assert failures[passing] is None
    assert all(failures[name] is not None and failures[name].get("type") == state for name in (first, second))

@pytest.mark.parametrize("profile", sorted(PROFILES))
@pytest.mark.parametrize("mode", sorted(CUT))
def test_a_hang_or_a_crash_fails_the_run_alike_in_every_output(tmp_path: pathlib.Path, mode: str, profile: str) -> None:
    """Two cases cut short (one of them gating under no profile's tier rule but `standard`'s), one that passes:
    exit 1, and 2 failures, 1 pass, in the summary, the JSON and the JUnit file. The 2 s step timeout times the
    machine: a run where the passing case timed out on a stalled machine is made again, up to three times."""
    cases = write_cases(tmp_path / "cases", CASES)
    for _ in range(3):
        status, out, report, junit = _run(cases, "--target", adapter(mode), "--timeout", "2", "--profile", profile)
        if report["cases"][2]["state"] == "pass":
            break
    _assert_two_cut_short(CUT[mode], status, out, report, junit)
    assert [entry["id"] for entry in report["cases"]] == ["t-201", "t-202", "t-203"]


RESTART_CASES = [
    case("t-211", [view("/memories/restart-211", True)]),  # a must case
    case("t-212", [view("/memories/restart-212", True)], level="should"),
    case("t-213", [view("/memories/missing", True)]),
]
ERROR_CASES = [
    case("t-reset-fails-221", [view("/memories/missing", True)]),
    case("t-reset-fails-222", [view("/memories/missing", True)], level="should"),
    case("t-223", [view("/memories/missing", True)]),
]


def _restarting(monkeypatch: pytest.MonkeyPatch) -> None:
    opened = runner.open_target
    monkeypatch.setattr(runner, "open_target", lambda *a, **k: state_backends.Restarting(opened(*a, **k)))


@pytest.mark.parametrize("profile", sorted(PROFILES))
@pytest.mark.parametrize("state", ["restart", "error"])
def test_a_restart_or_an_error_fails_the_run_alike_in_every_output(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, state: str, profile: str
) -> None:
    """A target started again inside a case (restart), or one that cannot be reset for a case (error): two cases
    cut short (a must and a should case), one that passes; exit 1, and 2 failures, 1 pass, in the summary, the JSON
    and the JUnit file, under every profile (D-VERDICT-STATE, D-VERDICT-HANG: either counts as a crash)."""
    if state == "restart":
        _restarting(monkeypatch)
        cases, target = write_cases(tmp_path / "cases", RESTART_CASES), "python:fake_backends:tiny"
    else:
        cases, target = write_cases(tmp_path / "cases", ERROR_CASES), "python:state_backends:reset_fails"
    status, out, report, junit = _run(cases, "--target", target, "--profile", profile)
    _assert_two_cut_short(state, status, out, report, junit)


def test_the_planted_fifo_hang_fails_under_the_documented_profile(tmp_path: pathlib.Path) -> None:
    """The reproduction of a create that hangs on a planted FIFO: a hang is safety whatever the layout, so it is
    not moved to host-layout (which the documented profile only shows) and the run fails."""
    planted_hang.RELEASE.clear()
    try:
        status, out, report, junit = _planted(tmp_path)
    finally:
        planted_hang.RELEASE.set()
    assert status == 1, out
    assert "0 pass, 1 fail" in out and "verdict: FAIL (exit 1)" in out
    (entry,) = report["cases"]
    assert entry["state"] == "timeout" and entry["findings"][0]["class"] == "safety"
    assert report["figures"]["host_layout_findings"] == 0 and report["figures"]["gating_failures"] == 1
    assert junit.get("failures") == "1"


def _planted(tmp_path: pathlib.Path) -> Tuple[int, str, Dict[str, Any], ET.Element]:
    report, junit = tmp_path / "report.json", tmp_path / "junit.xml"
    status, out, _ = run_cli(
        "--target", "python:planted_hang:make", "--run", "sec-fs-fifo-create-path", "--timeout", "2",
        "--profile", "documented", "--report-json", str(report), "--junit", str(junit),
    )
    return status, out, json.loads(report.read_text()), ET.parse(junit).getroot()
