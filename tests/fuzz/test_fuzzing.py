"""The fuzzer end to end: clean on the reference, finds planted escapes, replays, converts to cases."""

from __future__ import annotations

import json
import pathlib

import pytest
from fuzz_support import VULNERABLE, VULNERABLE_PERCENT_ONLY, atheris_run, harness
from refmem_fuzz.cli import main
from refmem_fuzz.to_case import to_case_file

from refmem_fuzz import engine_atheris, engine_random
from refmem_harness import finding as finding_files

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
SECURITY = ("escape", "leak")


def test_smoke_against_the_reference_finds_nothing(scratch: pathlib.Path) -> None:
    """A fixed number of inputs, not a time: on a busy machine a time-bounded smoke ran too few to mean anything."""
    for kind, runs in (("sequence", 600), ("paths", 1500)):
        fuzzer = harness(scratch / kind, kind=kind)
        try:
            stats = engine_random.fuzz(fuzzer, max_time=None, max_runs=runs, seed=11)
        finally:
            fuzzer.close()
        assert stats.runs == runs
        assert fuzzer.findings == [], finding_files.dumps(fuzzer.findings[0])


@pytest.mark.parametrize("target", [VULNERABLE, VULNERABLE_PERCENT_ONLY])
def test_finds_the_planted_escape_within_a_bounded_number_of_runs(scratch: pathlib.Path, target: str) -> None:
    fuzzer = harness(scratch, target=target, hostile=False)
    try:
        stats = engine_random.fuzz(fuzzer, max_time=None, max_runs=3000, seed=3, stop_on_first=True)
    finally:
        fuzzer.close()
    assert fuzzer.findings, f"nothing found in {stats.runs} runs"
    found = fuzzer.findings[0]
    assert found.oracle.split(":")[0] in SECURITY, finding_files.dumps(found)[:3000]
    assert len(found.commands) == 1  # minimised to the one command that escapes
    paths = json.dumps(found.commands)
    if target == VULNERABLE_PERCENT_ONLY:
        assert "%2" in paths.lower()


def test_the_random_engine_is_deterministic(scratch: pathlib.Path) -> None:
    results = []
    for attempt in range(2):
        fuzzer = harness(scratch / str(attempt), target=VULNERABLE, hostile=False)
        try:
            engine_random.fuzz(fuzzer, max_time=None, max_runs=400, seed=5, stop_on_first=True)
        finally:
            fuzzer.close()
        results.append([(f.oracle, f.commands, f.runs) for f in fuzzer.findings])
    assert results[0] == results[1]


@pytest.fixture()
def saved_finding(tmp_path: pathlib.Path) -> pathlib.Path:
    fuzzer = harness(tmp_path, target=VULNERABLE, hostile=True, findings=tmp_path / "findings")
    try:
        engine_random.fuzz(fuzzer, max_time=None, max_runs=3000, seed=3, stop_on_first=True)
    finally:
        fuzzer.close()
    files = sorted((tmp_path / "findings").glob("*.json"))
    assert files
    return files[0]


def test_finding_files_hold_no_host_path(saved_finding: pathlib.Path) -> None:
    text = saved_finding.read_text()
    assert "/tmp" not in text and "/dev/shm" not in text and "CANARY-" not in text
    found = finding_files.load(saved_finding)
    assert found.target == VULNERABLE and found.commands


def test_replay_reproduces_a_finding(saved_finding: pathlib.Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["replay", str(saved_finding), "--target", VULNERABLE]) == 1
    assert "\nREPRODUCED" in capsys.readouterr().out
    assert main(["replay", str(saved_finding)]) == 0  # the embedded reference, not the target the file names
    out = capsys.readouterr().out
    assert "embedded reference (refmem) only" in out and "NOT REPRODUCED" in out


def test_to_case_gives_a_valid_conformance_case_file(saved_finding: pathlib.Path) -> None:
    document = to_case_file(finding_files.load(saved_finding))
    (case,) = document["cases"]
    assert case["basis"] == "security"
    assert all(isinstance(step["is_error"], bool) for step in case["steps"])
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((ROOT / "conformance" / "schema" / "case.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(document)


@pytest.mark.skipif(not engine_atheris.available(), reason="atheris is not installed")
def test_the_atheris_engine_runs_the_same_harness(tmp_path: pathlib.Path) -> None:
    done = atheris_run(VULNERABLE, tmp_path, max_time=20, timeout=120)
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    assert "FINDING" in done.stdout
    assert list(tmp_path.glob("*.json"))


def test_the_random_engine_is_chosen_when_atheris_is_missing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture
) -> None:
    monkeypatch.setattr(engine_atheris, "available", lambda: False)
    monkeypatch.chdir(tmp_path)
    assert main(["--target", "refmem", "--runs", "50", "--max-time", "30"]) == 0
    out = capsys.readouterr().out
    assert "plain random mutator, no coverage guidance" in out
    assert "50 runs" in out
