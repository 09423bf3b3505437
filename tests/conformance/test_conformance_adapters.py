"""`cmd:` targets: crashes and hangs are recorded against the case, the adapter restarted; start failures exit 2."""

from __future__ import annotations

import json
import pathlib

import fake_backends
import pytest
from conformance_support import BASIC, adapter, case, run_cli, view, write_cases

TROUBLE = [
    case("t-101", [view("/memories/crash", True)]),
    case("t-102", [view("/memories/missing", True)]),
]


def _report(directory: pathlib.Path, *options: str) -> tuple:
    path = directory / "report.json"
    status, out, err = run_cli("--cases-dir", str(directory), "--no-matrix", "--report-json", str(path), *options)
    return status, out, err, (json.loads(path.read_text()) if path.exists() else None)


def test_a_protocol_adapter_passes_like_the_in_process_target(basic_cases: pathlib.Path) -> None:
    status, out, _, report = _report(basic_cases, "--target", adapter())
    assert status == 0, out
    assert report["implementation"]["name"] == "fake" and report["restarts"] == 0


def test_a_crash_is_recorded_against_its_case_and_the_adapter_restarted(tmp_path: pathlib.Path) -> None:
    status, out, _, report = _report(write_cases(tmp_path, TROUBLE), "--target", adapter("crash"))
    assert status == 1
    findings = {entry["id"]: entry.get("findings", []) for entry in report["cases"]}
    assert findings["t-101"][0]["kind"] == "crashed"
    assert "crashing on purpose" in findings["t-101"][0]["detail"]  # the stderr tail
    assert findings["t-102"] == []
    assert report["restarts"] == 1


def test_a_non_json_reply_is_a_crash(tmp_path: pathlib.Path) -> None:
    cases = [case("t-111", [view("/memories/garbage", True)]), case("t-112", [view("/memories/missing", True)])]
    status, _, _, report = _report(write_cases(tmp_path, cases), "--target", adapter("garbage"))
    assert status == 1
    assert report["cases"][0]["findings"][0]["kind"] == "crashed"
    assert report["cases"][1]["status"] == "pass" and report["restarts"] == 1


def test_a_hung_adapter_times_out_is_killed_and_restarted(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Killed, not waited for: the hung adapter would write its wake-up file after HANG_SECONDS. This test times
    the machine (a 2 s step timeout): a step that is not the hang, timed out on a stalled machine, is run again,
    up to three times in all."""
    woke = tmp_path / "woke"
    monkeypatch.setenv("REFMEM_FAKE_ADAPTER_WOKE", str(woke))
    cases = [case("t-121", [view("/memories/hang", True)]), case("t-122", [view("/memories/missing", True)])]
    for _ in range(3):
        status, _, _, report = _report(write_cases(tmp_path, cases), "--target", adapter("hang"), "--timeout", "2")
        if report["cases"][1]["status"] == "pass":
            break
    assert not woke.exists()
    assert status == 1
    assert report["cases"][0]["findings"][0]["kind"] == "timed_out"
    assert report["cases"][1]["status"] == "pass" and report["restarts"] == 1


def test_an_in_process_hang_times_out(basic_cases: pathlib.Path) -> None:
    """Abandoned, not waited for: the hung call returns only when released after the run. This test times the
    machine (a 2 s step timeout): a case that is not the hang, timed out on a stalled machine, is run again, up to
    three times in all."""
    fake_backends.HANGER_RELEASE.clear()
    fake_backends.HANGER_WOKE.clear()
    try:
        for _ in range(3):
            status, _, _, report = _report(basic_cases, "--target", "python:fake_backends:hanger", "--timeout", "2")
            kinds = {entry["id"]: [f["kind"] for f in entry.get("findings", [])] for entry in report["cases"]}
            if kinds["t-001"] == []:
                break
        assert not fake_backends.HANGER_WOKE.is_set()
    finally:
        fake_backends.HANGER_RELEASE.set()
    assert status == 1
    assert kinds["t-004"] == ["timed_out"] and kinds["t-001"] == []


def test_an_adapter_that_does_not_start_is_an_adapter_failure(basic_cases: pathlib.Path) -> None:
    status, _, err = run_cli("--cases-dir", str(basic_cases), "--no-matrix", "--target", adapter("nostart"))
    assert status == 2 and "did not start" in err
    status, _, err = run_cli("--cases-dir", str(basic_cases), "--no-matrix", "--target", adapter("oldversion"))
    assert status == 2 and "protocol version 99" in err
    status, _, err = run_cli("--cases-dir", str(basic_cases), "--no-matrix", "--target", "cmd:/no/such/adapter")
    assert status == 2


def test_own_storage_skips_fixture_cases_and_checks_state_through_view(tmp_path: pathlib.Path) -> None:
    fixtures = case(
        "t-131", [view("/memories/x", True)], requires="fixtures", setup={"fixtures": [{"type": "symlink", "path": "x", "target": "y"}]}
    )
    cases = [
        *BASIC,
        fixtures,
        case(
            "t-132",
            [view("/memories/a.txt", False)],
            setup={"files": {"a.txt": "1\n"}},
            final={"files": {"a.txt": "2\n"}},
        ),
    ]
    status, out, _, report = _report(write_cases(tmp_path, cases), "--target", adapter("own"))
    assert report["storage"] == "own"
    outcomes = {entry["id"]: entry["status"] for entry in report["cases"]}
    assert outcomes == {
        "t-001": "pass",
        "t-002": "pass",
        "t-003": "pass",
        "t-004": "pass",
        "t-131": "skip",
        "t-132": "fail",
    }
    assert status == 1
