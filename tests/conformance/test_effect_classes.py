"""One effect, one class, on every path that can see it: the cases, the stress tier, the deployment tier and the
property suite all take a finding's class from conformance/effects.py, by its effect and by whether only a layout
the suite planted let it happen, never by which command showed it (D-VERDICT-EFFECTS, D-VERDICT-PLANTED)."""

from __future__ import annotations

import json
import pathlib
import secrets
import types
from typing import Any, Callable, Dict, List

import pytest
from conformance_support import run_cli

from conformance import effects
from conformance.checks import REACHED, LeakGuard, misbehaviour, planted_layout, reached_through_link
from conformance.deployment import DeploymentReport
from conformance.effects import (
    CRASH,
    FILE_LOST,
    HANG,
    OUTSIDE_CHANGED,
    OUTSIDE_CONTENT_SHOWN,
    UNTOUCHED_BYTES_CHANGED,
    class_of,
)
from conformance.properties.judge import SequenceRun, open_context
from conformance.stress import StressReport, _Run
from conformance.tiers import CLASSES, HOST_LAYOUT, SAFETY
from refmem_harness.layout import canary_files, make_case_dir, remove
from refmem_harness.target_base import StepResult

CANARY = "canary-" + "ab" * 8
HARD = {"type": "hardlink", "path": "hard.txt", "target": "outside/secret.txt"}
FIFO = {"type": "fifo", "path": "pipe"}


def test_the_table_gives_every_effect_a_class_of_the_vocabulary() -> None:
    for effect in effects.EFFECTS:
        assert class_of(effect) in CLASSES and class_of(effect, planted=True) in CLASSES
    assert class_of(HANG, planted=True) == class_of(CRASH, planted=True) == SAFETY  # D-VERDICT-HANG
    assert class_of(OUTSIDE_CONTENT_SHOWN, planted=True) == HOST_LAYOUT
    assert class_of(UNTOUCHED_BYTES_CHANGED) == SAFETY
    assert set(effects.KIND_EFFECTS.values()) <= set(effects.EFFECTS)


# --- the case path ---------------------------------------------------------------------------------------------


def _guard() -> LeakGuard:
    secrets_: List[Any] = [(f"the text of {item.path}", item.line, item.path) for item in canary_files(CANARY)]
    secrets_.append(("a name or text from the canary tree (outside the root)", CANARY, REACHED))
    return LeakGuard(tuple(secrets_), "")


def _case(fixtures: List[Dict[str, Any]]) -> Any:
    return types.SimpleNamespace(setup={"fixtures": fixtures})


def _case_class(command: Dict[str, Any], output: str, fixtures: List[Dict[str, Any]]) -> str:
    """The class the case path gives a leak of `output` after `command` in a case planting `fixtures`."""
    found = _guard().check(output, 1, reached=reached_through_link(command, _case(fixtures)))
    (finding,) = planted_layout(found, fixtures)
    return finding.cls


VIEW = {"command": "view", "path": "/memories/hard.txt"}
EDIT = {"command": "str_replace", "path": "/memories/hard.txt", "old_str": "outside", "new_str": "pwned"}


def test_outside_text_through_a_planted_hard_link_is_one_class_whichever_command_shows_it() -> None:
    """fixtures-special-011/-013/-021: the whole canary line (a view) and a changed one (an edit's snippet)."""
    line = canary_files(CANARY)[0].line
    shown_by_view = _case_class(VIEW, f"Here's the content:\n     1\t{line}", [HARD])
    shown_by_snippet = _case_class(EDIT, f"edited:\n     1\t{line.replace('outside', 'pwned')}", [HARD])
    assert shown_by_view == shown_by_snippet == class_of(OUTSIDE_CONTENT_SHOWN, planted=True)
    # the same text through a path the model chose (no planted link) is safety
    assert _case_class({"command": "view", "path": "/memories/../outside/secret.txt"}, line, []) == SAFETY


@pytest.mark.parametrize("fixtures", [[], [FIFO], [HARD]])
def test_a_hang_and_a_crash_are_safety_in_a_case_whatever_it_planted(fixtures: List[Dict[str, Any]]) -> None:
    hung = planted_layout(misbehaviour(StepResult("", True, timed_out=True), 1), fixtures)
    died = planted_layout(misbehaviour(StepResult("", True, crashed=True), 1), fixtures)
    assert [f.cls for f in hung] == [class_of(HANG, planted=bool(fixtures))]
    assert [f.cls for f in died] == [class_of(CRASH, planted=bool(fixtures))]


# --- the stress and deployment paths -----------------------------------------------------------------------------


def _stress_classes(tmp_path: pathlib.Path, result: StepResult) -> List[str]:
    case = make_case_dir(tmp_path / f"stress-{secrets.token_hex(4)}", CANARY)
    report = StressReport()
    try:
        _Run("check", case, None, CANARY, report).screen({"command": "view"}, result)  # type: ignore[arg-type]
    finally:
        remove(case.path)
    return [finding["class"] for finding in report.findings]


STRESS: Dict[str, Callable[[], StepResult]] = {
    HANG: lambda: StepResult("", True, timed_out=True),
    CRASH: lambda: StepResult("", True, crashed=True),
    OUTSIDE_CONTENT_SHOWN: lambda: StepResult(f"{CANARY} outside secret", False),
}


@pytest.mark.parametrize("effect", sorted(STRESS))
def test_the_stress_tier_classes_an_effect_as_the_cases_do(tmp_path: pathlib.Path, effect: str) -> None:
    assert _stress_classes(tmp_path, STRESS[effect]()) == [class_of(effect)]


def test_the_deployment_tier_classes_its_findings_from_the_table() -> None:
    report = DeploymentReport()
    report.add("lost-updates", "1 update lost")
    report.add("tenants", "one tenant's text in another's output")
    assert [finding["class"] for finding in report.findings] == [class_of(FILE_LOST), class_of(OUTSIDE_CONTENT_SHOWN)]


# --- the property path, beside the case path on one backend ------------------------------------------------------


def test_untouched_bytes_get_one_class_on_the_case_and_the_property_path(tmp_path: pathlib.Path) -> None:
    """The snippet backend rewrites a file through str.splitlines: a U+2028 elsewhere becomes "\\n"."""
    spec = "python:snippet_backend:make"
    path = tmp_path / "report.json"
    run_cli("--target", spec, "--run", "untouched-002", "--report-json", str(path), "--no-matrix")
    (case,) = json.loads(path.read_text())["cases"]
    on_cases = {f["class"] for f in case["findings"] if f["kind"] == "untouched"}

    base = tmp_path / "properties"
    base.mkdir()
    context = open_context(spec, base, CANARY, frozenset(CLASSES), 10.0)
    try:
        run = SequenceRun(context)
        try:
            run.step({"command": "create", "path": "/memories/s.txt", "file_text": "one\u2028two\nthree\n"})
            found = run.step({"command": "insert", "path": "/memories/s.txt", "insert_line": 1, "insert_text": "X\n"})
        finally:
            run.close()
    finally:
        context.close()
    on_properties = {f.cls for f in found if f.kind == "untouched"}
    assert on_cases == on_properties == {class_of(UNTOUCHED_BYTES_CHANGED)}


def test_an_outside_change_is_safety_unless_only_a_planted_link_let_it_happen() -> None:
    """check_outside serves the cases and the property suite alike; only the cases plant layouts."""
    from conformance.checks import check_outside
    from refmem_harness.hosttree import FILE, Node

    changed = check_outside({"outside/secret.txt": Node(FILE, size=1)}, {"outside/secret.txt": Node(FILE, size=2)})
    assert [f.cls for f in changed] == [class_of(OUTSIDE_CHANGED)]
    assert [f.cls for f in planted_layout(changed, [HARD])] == [class_of(OUTSIDE_CHANGED, planted=True)]


# --- untouched bytes: the check itself ----------------------------------------------------------------------------

SEPARATORS = ["\r\n", "\u2028", "\u2029", "\u0085", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\r"]


@pytest.mark.parametrize("separator", SEPARATORS)
def test_an_edit_that_rewrites_a_line_break_it_did_not_name_changes_untouched_bytes(separator: str) -> None:
    from conformance.untouched import untouched_changed

    before = f"one{separator}two\nthree\n".encode()
    replace = {"command": "str_replace", "path": "/memories/s.txt", "old_str": "three", "new_str": "3"}
    insert = {"command": "insert", "path": "/memories/s.txt", "insert_line": 1, "insert_text": "X\n"}
    kept_replace, kept_insert = f"one{separator}two\n3\n".encode(), f"one{separator}two\nX\nthree\n".encode()
    assert untouched_changed(replace, before, kept_replace) is None
    assert untouched_changed(insert, before, kept_insert) is None
    split = "\n".join(f"one{separator}two\nthree\n".splitlines()).encode()
    assert untouched_changed(replace, before, split.replace(b"three", b"3") + b"\n") is not None
    assert untouched_changed(insert, before, split.replace(b"\nthree", b"\nX\nthree") + b"\n") is not None


def test_where_an_insert_lands_and_a_final_newline_are_left_to_the_other_checks() -> None:
    from conformance.untouched import untouched_changed

    insert = {"command": "insert", "path": "/memories/s.txt", "insert_line": 1, "insert_text": "X"}
    # another reading of line 1 (U+2028 as a line end): the insertion lands elsewhere, every old byte is kept
    assert untouched_changed(insert, "a\u2028b\nc".encode(), "a\u2028X\nb\nc".encode()) is None
    assert untouched_changed(insert, b"a\nc", b"a\nX\nc\n") is None  # a final newline given to the file
    assert untouched_changed(insert, b"a\nc\n", b"a\nX\n") is not None  # a line lost


# --- the property suite: every distinct failure ------------------------------------------------------------------


def test_the_property_suite_reports_a_second_bug_behind_the_first(tmp_path: pathlib.Path) -> None:
    """Two safety bugs in one backend: the host path in error text (found at once) and a rename that overwrites.
    Both are reported, each shrunk, each with its finding file (the search stopped at the first before)."""
    from conformance.properties.run import run_class

    result = run_class("python:two_bug_backend:make", "safety", examples=60, findings=tmp_path / "findings")
    kinds = [failure.finding.kind for failure in result.failures]
    assert kinds == ["leak", "data_loss"], [failure.finding.message for failure in result.failures]
    assert [len(failure.commands) for failure in result.failures] == [1, 3]  # each shrunk to its shortest
    assert len(result.finding_files) == 2 and all(path.is_file() for path in result.finding_files)
    assert result.failure is result.failures[0] and result.finding_file == result.finding_files[0]
