"""The runner over a target that keeps its own storage (`refmem+sqlite`): a case's plain fixtures (files of UTF-8
text, folders) are given to it through its commands, and its final state is read back whole whatever limits the
case sets (docs/spec-notes.md D-STORE-OWN-SETUP, D-STORE-OWN-FINAL)."""

from __future__ import annotations

import pathlib
import sys
from typing import Any, Dict, List

import pytest

from conformance.cases import Case, load_cases
from conformance.checks import check_final_views
from conformance.results import FAIL, PASS, SKIP
from conformance.runner import SuiteOptions, run_suite
from refmem_harness.targets import StepResult

ON_DISK = "needs on-disk fixtures; the target keeps its own storage"
CUT_BY_LIMITS = ["options-010", "options-011", "options-012", "options-013"]
PLAIN_FIXTURES = [
    "big-001", "encoding-009", "encoding-010", "hardening-006", "options-001", "options-002", "options-004",
    "options-005", "options-006", "options-009", "options-024", "options-025",
]  # fmt: skip
OVER_THE_FILE_LIMIT = ["big-003", "big-004"]  # 2 MB planted on the host: `create` refuses more than 1 MiB


@pytest.fixture(scope="module")
def cases() -> Dict[str, Case]:
    loaded, _warnings = load_cases()
    return {case.id: case for case in loaded}


def _outcomes(spec: str, cases: Dict[str, Case], ids: List[str], tmp_path: pathlib.Path) -> Dict[str, str]:
    run = run_suite(spec, [cases[name] for name in ids], SuiteOptions(workdir=tmp_path, profile="hardening"))
    return {result.case.id: result.outcome + (f": {result.reason}" if result.reason else "") for result in run.results}


def test_a_final_state_is_read_back_past_the_cases_own_limits(cases: Dict[str, Case], tmp_path: pathlib.Path) -> None:
    # max_view_chars 40 and max_listing_entries 3 cut the case's views; the read-back is not cut
    assert _outcomes("refmem+sqlite", cases, CUT_BY_LIMITS, tmp_path) == dict.fromkeys(CUT_BY_LIMITS, PASS)


def test_plain_fixtures_are_made_through_the_targets_commands(cases: Dict[str, Case], tmp_path: pathlib.Path) -> None:
    outcomes = _outcomes("refmem+sqlite", cases, PLAIN_FIXTURES + OVER_THE_FILE_LIMIT, tmp_path)
    assert {name: outcomes[name] for name in PLAIN_FIXTURES} == dict.fromkeys(PLAIN_FIXTURES, PASS)
    for name in OVER_THE_FILE_LIMIT:  # skipped with the target's refusal, as a fixture a platform cannot make
        assert outcomes[name].startswith(f"{SKIP}: the fixture big.txt cannot be made through the target's commands")


def test_fixtures_a_database_cannot_hold_stay_skipped(cases: Dict[str, Case], tmp_path: pathlib.Path) -> None:
    kinds = {"symlink", "fifo", "hardlink", "mode"}
    needing_disk = [
        case.id for case in cases.values()
        if case.requires == "fixtures" and any(spec["type"] in kinds for spec in case.setup.get("fixtures", []))
    ]  # fmt: skip
    raw = [f"encoding-00{number}" for number in range(1, 7)] + ["encoding-011"]  # bytes that are not UTF-8
    assert len(needing_disk) > 150
    outcomes = _outcomes("refmem+sqlite", cases, needing_disk + raw, tmp_path)
    assert set(outcomes.values()) == {f"{SKIP}: {ON_DISK}"}


def test_a_target_that_does_not_share_its_storage_loads_through_the_cases_handler(
    cases: Dict[str, Case], tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(pathlib.Path(__file__).parent))
    sys.modules.pop("own_storage_backends", None)
    spec = "python:own_storage_backends:unshared"
    outcomes = _outcomes(spec, cases, ["encoding-009", "options-004", "options-001", "options-010"], tmp_path)
    assert outcomes["encoding-009"] == PASS  # no options: the case's handler makes its fixture
    assert outcomes["options-004"].startswith(f"{SKIP}: the fixture b.txt cannot be made")  # allow *.md
    assert outcomes["options-001"].startswith(f"{SKIP}: the fixture notes.md cannot be made")  # read-only
    assert outcomes["options-010"] == FAIL  # read back under max_view_chars 40: no other handler to read with


def test_the_final_listing_names_files_only_as_on_disk() -> None:
    listing = "Here're the files...:\n4.0K\t/memories\n4.0K\t/memories/old/\n6B\t/memories/notes.md"

    def view(path: str) -> StepResult:
        return StepResult(listing if path == "/memories" else "file:\n     1\thello", False)

    assert check_final_views({"files": {"notes.md": "hello\n"}, "exact": True}, view, "reference") == []
    stray = listing + "\n2B\t/memories/old/stray.md"

    def view_stray(path: str) -> StepResult:
        return StepResult(stray if path == "/memories" else "file:\n     1\thello", False)

    found = check_final_views({"files": {"notes.md": "hello\n"}, "exact": True}, view_stray, "reference")
    assert [finding.message for finding in found] == ["/memories/old/stray.md: unexpected entry in the listing"]


FINAL_CASES = ["create-001", "create-007", "create-009"]  # one create each, then the final state read back


def _final_findings(spec: str, cases: Dict[str, Case], tmp_path: pathlib.Path) -> Dict[str, List[str]]:
    tmp_path.mkdir()
    run = run_suite(spec, [cases[name] for name in FINAL_CASES], SuiteOptions(workdir=tmp_path, profile="hardening"))
    return {result.case.id: [finding.message for finding in result.findings if finding.kind == "final"]
            for result in run.results}


def test_a_final_state_is_judged_by_what_the_views_show_not_their_format(
    cases: Dict[str, Case], tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Views numbered `  1 | ` under a header of their own, listings drawn `- PATH (SIZE)`: the state is right, so
    no final-state finding; the same views over a store that drops a created file's last line fail every case."""
    monkeypatch.syspath_prepend(str(pathlib.Path(__file__).parent))
    sys.modules.pop("own_storage_backends", None)
    right = _final_findings("python:own_storage_backends:odd_views", cases, tmp_path / "right")
    assert right == dict.fromkeys(FINAL_CASES, []), right
    wrong = _final_findings("python:own_storage_backends:odd_views_dropping", cases, tmp_path / "wrong")
    for name, messages in wrong.items():
        assert messages and all("no reading is the expected text" in message for message in messages), (name, wrong)


def test_a_final_view_in_another_format_shows_the_state_and_a_wrong_one_does_not() -> None:
    def viewer(text: str) -> Any:
        return lambda path: StepResult(text, False)

    final = {"files": {"a.txt": "one\ntwo\n"}}
    assert check_final_views(final, viewer("== /memories/a.txt ==\n  1 | one\n  2 | two\n"), "reference") == []
    assert check_final_views(final, viewer("one\ntwo"), "reference") == []
    [finding] = check_final_views(final, viewer("== /memories/a.txt ==\n  1 | one\n"), "reference")
    assert "evidence: documented view, then every tolerant reading" in finding.message, finding
    assert check_final_views(final, viewer("  1 | one\n  3 | two\n"), "reference") != []
    crlf = {"files": {"w.txt": "one\r\ntwo\r\n"}}  # a view cannot tell CRLF from LF (the documented check neither)
    assert check_final_views(crlf, viewer("== /memories/w.txt ==\n  1 | one\n  2 | two\n"), "reference") == []
    dashes = {"files": {"a.md": "- one\n- two\n"}}  # a tab, then a dash that is the text's (inspect_ai's views)
    shown = "Here's the result of running `cat -n` on /memories/a.md:\n     1\t- one\n     2\t- two\n     3\t\n"
    assert check_final_views(dashes, viewer(shown), "reference") == []
    assert check_final_views(dashes, viewer(shown.replace("- two", "two")), "reference") != []  # its dash lost
