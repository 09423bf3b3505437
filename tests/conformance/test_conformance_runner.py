"""The runner against fake targets: verdicts, findings, exit statuses, leak and outside checks."""

from __future__ import annotations

import json
import pathlib

from conformance_support import case, run_cli, view, write_cases


def test_a_correct_target_passes_with_exit_0(basic_cases: pathlib.Path) -> None:
    status, out, _ = run_cli(
        "--cases-dir", str(basic_cases), "--no-matrix", "--target", "python:fake_backends:tiny"
    )
    assert status == 0, out
    assert "safe: yes" in out and "documented: 3/3" in out and "documented wording: 1/1 (shown, not gating)" in out
    assert "conformant: yes: safe, and all 3 cases that gate under the documented profile pass" in out
    assert "verdict: PASS (exit 0)" in out


def test_a_wrong_target_fails_with_exit_1_and_drawn_diffs(basic_cases: pathlib.Path) -> None:
    status, out, _ = run_cli(
        "--cases-dir", str(basic_cases), "--no-matrix", "--target", "python:fake_backends:wrong"
    )
    assert status == 1
    assert "FAIL t-001 [should, documented]" in out and "FAIL t-002 [must, documented]" in out
    assert "[signalling] is_error: is_error is true, expected false" in out
    assert "+␣␣␣␣␣1—»hello␣∎" in out  # the trailing space and the missing final newline, drawn
    # Every output still says what happened: a wrong is_error is a signalling finding, not a documented one;
    # the headline and the exit status agree (signalling always counts).
    assert "signalling: 1/4" in out and "documented wording: 0/1" in out and "documented: 3/3" in out
    assert "conformant: no: 3 cases fail under the documented profile" in out and "verdict: FAIL (exit 1)" in out


def test_an_unexpected_exception_is_an_error_result_and_a_raised_finding(basic_cases: pathlib.Path) -> None:
    status, out, _ = run_cli(
        "--cases-dir",
        str(basic_cases),
        "--no-matrix",
        "--target",
        "python:fake_backends:raiser",
        "--report-json",
        str(basic_cases / "r.json"),
    )
    assert status == 1
    report = json.loads((basic_cases / "r.json").read_text())
    by_id = {entry["id"]: entry for entry in report["cases"]}
    # ValueError("boom"): a robustness finding; its repr, the output, leaks nothing (no host detail).
    findings = by_id["t-004"]["findings"]
    assert [(f["kind"], f["class"]) for f in findings if f["kind"] != "match"] == [("raised", "robustness")]
    assert not [f for f in findings if f["kind"] == "leak"]
    # A ToolError is the designed error signal: an error result, not a finding of its own.
    assert [f["kind"] for f in by_id["t-003"]["findings"]] == ["is_error", "match", "final"]


def test_plain_strings_and_tool_errors_are_understood(basic_cases: pathlib.Path) -> None:
    status, out, _ = run_cli(
        "--cases-dir", str(basic_cases), "--no-matrix", "--target", "python:fake_backends:plain"
    )
    assert status == 0, out


def test_leaks_of_the_canary_and_host_path_are_findings(basic_cases: pathlib.Path) -> None:
    status, out, _ = run_cli(
        "--cases-dir", str(basic_cases), "--no-matrix", "--target", "python:fake_backends:leaker"
    )
    assert status == 1
    assert "t-002" in out and "leak: the output holds the host path" in out


def test_internals_in_the_case_itself_are_not_leaks(tmp_path: pathlib.Path) -> None:
    text = "Traceback ValueError( [Errno 2]"
    cases = [case("t-010", [view("/memories/t.txt", False)], setup={"files": {"t.txt": text}})]
    status, out, _ = run_cli(
        "--cases-dir", str(write_cases(tmp_path, cases)), "--no-matrix", "--target", "python:fake_backends:tiny"
    )
    assert status == 0, out


def test_writing_outside_the_root_is_a_finding(tmp_path: pathlib.Path) -> None:
    create = {"input": {"command": "create", "path": "/memories/n.txt", "file_text": "n"}, "is_error": False}
    cases = [case("t-050", [create], final={"files": {"n.txt": "n"}, "exact": True})]
    status, out, _ = run_cli(
        "--cases-dir", str(write_cases(tmp_path, cases)), "--no-matrix", "--target", "python:fake_backends:escaper"
    )
    assert status == 1
    assert "outside: outside/dropped.txt: was nothing" in out


def test_final_state_exact_reports_extra_and_changed_files(tmp_path: pathlib.Path) -> None:
    cases = [
        case(
            "t-020",
            [view("/memories/a.txt", False)],
            setup={"files": {"a.txt": "1\n", "b.txt": "2\n"}},
            final={"files": {"a.txt": "one\n"}, "exact": True},
        )
    ]
    status, out, _ = run_cli(
        "--cases-dir", str(write_cases(tmp_path, cases)), "--no-matrix", "--target", "python:fake_backends:tiny"
    )
    assert status == 1
    assert "final: a.txt: expected a file holding one↵" in out
    assert "final: b.txt: unexpected a file holding 2↵" in out


def test_fixtures_are_made_on_disk_and_links_are_not_followed_by_the_checks(tmp_path: pathlib.Path) -> None:
    fixtures = [
        {"type": "symlink", "path": "link", "target": "../outside/secret.txt"},
        {"type": "file", "path": "raw.bin", "base64": "/w=="},
        {"type": "dir", "path": "d/e"},
        {"type": "fifo", "path": "pipe"},
        {"type": "hardlink", "path": "hard", "target": "outside/dir/inner.txt"},
        {"type": "mode", "path": "d", "mode": "0o500"},
    ]
    final = {"present": ["link", "raw.bin", "d/", "d/e/", "pipe", "hard"], "absent": ["nothing"]}
    cases = [
        case("t-030", [view("/memories/none", True)], requires="fixtures", setup={"fixtures": fixtures}, final=final)
    ]
    status, out, _ = run_cli(
        "--cases-dir", str(write_cases(tmp_path, cases)), "--no-matrix", "--target", "python:fake_backends:tiny"
    )
    assert status == 0, out


def test_usage_errors_exit_2(basic_cases: pathlib.Path) -> None:
    assert run_cli("--no-such-option")[0] == 2
    status, _, err = run_cli("--cases-dir", str(basic_cases), "--no-matrix", "--target", "nonsense")
    assert status == 2 and "unknown target" in err
    status, _, err = run_cli("--cases-dir", str(basic_cases), "--no-matrix", "--target", "python:no_such_module_x:make")
    assert status == 2 and "cannot import" in err


def test_filters_select_by_id_feature_and_level(tmp_path: pathlib.Path) -> None:
    cases = [
        case("t-001", [view("/memories", False)], features=["view", "listing"]),
        case("t-002", [view("/memories", False)], features=["paths"], level="should"),
        case("t-003", [view("/memories", False)], features=["view"]),
    ]
    directory = str(write_cases(tmp_path, cases))

    def listed(*options: str) -> list:
        status, out, _ = run_cli("list", "--cases-dir", directory, "--no-matrix", *options)
        assert status == 0
        return [line.split("\t")[0] for line in out.splitlines()]

    assert listed() == ["t-001", "t-002", "t-003"]
    assert listed("--run", "t-00[12]", "--skip", "t-001") == ["t-002"]
    assert listed("--features", "listing,paths") == ["t-001", "t-002"]
    assert listed("--skip-features", "view") == ["t-002"]
    assert listed("--level", "should") == ["t-002"]


def test_a_missing_matrix_is_a_loud_warning(basic_cases: pathlib.Path, monkeypatch) -> None:
    import refmem_conformance.cases

    monkeypatch.setattr(refmem_conformance.cases, "generated_cases", lambda: None)
    status, out, err = run_cli("--cases-dir", str(basic_cases), "--target", "python:fake_backends:tiny")
    assert status == 0
    assert "WARNING: the generated security matrix" in err and "WARNING" in out
