"""The verdict model's acceptance test: a safety finding for exactly each backend's bug, whatever its error convention.

`buggy_backends` (errors raised as BackendError, declared with SIGNALLING["error_exceptions"]) and
`plain_backends` (errors as "Error: ..." strings, declared with SIGNALLING["error_prefix"]) hold one
careful backend and the same backend with one classic bug switched on. The clean backend runs the whole suite
and gets no safety finding in either convention; each buggy one runs a slice of the suite that reaches every
bug, and gets safety findings of its bug's kind, in the cases its bug explains, and nothing else. How an error
is signalled changes none of it. Also here: the stress tier's findings reach the headline and the exit status.

Only the FIFO bug needs the step timeout to decide (its opens block until cut off): it alone runs with a short
one, FIFO_TIMEOUT, and is run again when an unrelated case timed out on a stalled machine. Every other backend
gets HANG_GUARD, which no step of a careful backend comes near, so a busy machine cannot turn a slow step into a
hang finding.
"""

from __future__ import annotations

import io
import json
import os
import pathlib
import re
from typing import Any, Dict, List, Set, Tuple

import pytest
from refmem_conformance.cli import main

pytestmark = pytest.mark.skipif(os.name != "posix", reason="the buggy backends are POSIX only")

MODULES = {"raising": "buggy_backends", "plain": "plain_backends"}
FIFO_TIMEOUT = "2"
HANG_GUARD = "60"
ATTEMPTS = 3

# Every bug's trigger is in this slice; the rest of the suite only repeats them.
SLICE = ["sec-dotdot-*", "sec-prefix-*", "sec-pct1-*", "sec-backslash-*", "sec-mixed-*", "sec-lookalike-*",
         "sec-fs-*", "fixtures-*", "delete-*", "rename-*", "view-file-02*", "paths-06*", "root-*"]

# bug -> (the class its findings are in, the finding kinds it may cause, the case IDs it explains)
SIGNATURES: Dict[str, Tuple[str, Set[str], str]] = {
    "prefix_no_separator": ("safety", {"leak", "outside"}, r"sec-(dotdot-sibling|prefix-dotdot-evil)-.*"),
    "decode_after_dotdot_check": ("safety", {"leak", "outside"}, r"sec-pct1-.*|paths-06[0-9]"),
    "backslash_after_check": ("safety", {"leak", "outside"}, r"sec-(backslash|mixed)-.*|paths-06[0-9]"),
    "nfkc_after_check": ("safety", {"leak", "outside"}, r"sec-lookalike-.*|paths-06[0-9]"),
    "follows_symlink": ("safety", {"leak", "outside", "data_loss"}, r"sec-fs-(through-)?link-.*|fixtures-symlink-.*"),
    "host_path_in_errors": ("safety", {"leak"}, r".*"),
    "rename_overwrites": ("safety", {"data_loss"}, r"rename-.*|sec-fs-.*-rename-new_path|fixtures-symlink-03[78]"),
    "delete_root_wipes": ("safety", {"data_loss"}, r"delete-00[789]|sec-[a-z]+-[a-z-]+-delete-path|root-01[59]"),
    # the root folder itself removed (picoagents 0.5.0): only the case that deletes an empty root shows it
    "delete_empty_root_removes_it": ("safety", {"outside"}, r"root-011"),
    # a link's target removed by a delete that named the link: data loss, not a reference finding
    "delete_follows_link": ("safety", {"data_loss"}, r"sec-fs-link-in.*-delete-path|fixtures-symlink-.*"),
    # names and sizes from outside the root in a listing: a leak, whatever the names hold
    "listing_follows_links": ("safety", {"leak"}, r"sec-fs-link-.*-view-path|fixtures-symlink-.*"),
    # a hang is safety whatever the layout, a planted FIFO's included (D-VERDICT-HANG)
    "fifo_blocking_open": ("safety", {"timed_out"}, r"sec-fs-fifo-.*|fixtures-special-00[1-4]"),
    # what only a layout the suite planted explains: its own class, never inside "safe"
    "edits_in_place": ("host-layout", {"outside", "leak"}, r"sec-fs-hardlink-.*|fixtures-special-.*"),
}


def _report(tmp_path: pathlib.Path, target: str, *options: str, timeout: str = HANG_GUARD) -> Dict[str, Any]:
    path = tmp_path / f"{target.replace(':', '_')}.json"
    argv = ["--target", target, "--report-json", str(path), "--timeout", timeout, "--skip", "big-*", "-q", *options]
    if pathlib.Path("/dev/shm").is_dir():
        argv += ["--workdir", "/dev/shm"]
    main(argv, out=io.StringIO(), err=io.StringIO())
    report: Dict[str, Any] = json.loads(path.read_text())
    return report


def _safety(report: Dict[str, Any], cls: str = "safety") -> List[Tuple[str, str, str]]:
    return [
        (case["id"], finding["kind"], finding["message"])
        for case in report["cases"]
        for finding in case.get("findings", [])
        if finding["class"] == cls
    ]


@pytest.mark.slow
@pytest.mark.parametrize("convention", sorted(MODULES))
def test_the_clean_backend_is_safe_and_its_errors_are_read_in_either_convention(
    convention: str, tmp_path: pathlib.Path
) -> None:
    report = _report(tmp_path, f"python:{MODULES[convention]}:make_clean")
    assert _safety(report) == []
    figures = report["figures"]
    assert figures["safe"] and figures["robustness_findings"] == 0
    assert figures["signalling"][0] == figures["signalling"][1]  # every error is read as an error
    assert figures["documented"][0] > 0.9 * figures["documented"][1]


@pytest.mark.parametrize("convention", sorted(MODULES))
@pytest.mark.parametrize(
    "bug", [pytest.param(bug, marks=pytest.mark.slow) if bug == "fifo_blocking_open" else bug for bug in sorted(SIGNATURES)]
)
def test_each_bug_is_a_safety_finding_where_the_bug_shows(bug: str, convention: str, tmp_path: pathlib.Path) -> None:
    options = [option for glob in SLICE for option in ("--run", glob)]
    cls, kinds, explained = SIGNATURES[bug]
    timeout = FIFO_TIMEOUT if bug == "fifo_blocking_open" else HANG_GUARD
    for _ in range(ATTEMPTS if bug == "fifo_blocking_open" else 1):
        report = _report(tmp_path, f"python:{MODULES[convention]}:make_{bug}", *options, timeout=timeout)
        found = _safety(report, cls)
        if all(re.fullmatch(explained, case_id) for case_id, _, _ in found):
            break
    assert found, f"{bug} ({convention}): no {cls} finding"
    assert {kind for _, kind, _ in found} <= kinds, found[:5]
    assert [case_id for case_id, _, _ in found if not re.fullmatch(explained, case_id)] == [], found[:5]
    if cls != "safety":  # a planted layout's consequence is reported beside safety, never inside it
        assert _safety(report) == [] and report["figures"]["safe"], _safety(report)[:5]
    if bug == "host_path_in_errors":
        assert all(message == "the output holds the host path" for _, _, message in found)


def test_the_convention_changes_no_safety_verdict(tmp_path: pathlib.Path) -> None:
    options = [option for glob in ("sec-pct1-*", "rename-*") for option in ("--run", glob)]
    by_convention = {
        convention: sorted({case_id for case_id, _, _ in _safety(_report(tmp_path / convention, target, *options))})
        for convention, target in (
            ("raising", "python:buggy_backends:make_decode_after_dotdot_check"),
            ("plain", "python:plain_backends:make_decode_after_dotdot_check"),
        )
        if (tmp_path / convention).mkdir() is None
    }
    assert by_convention["raising"] == by_convention["plain"] != []


# --- the stress tier in the headline --------------------------------------------------------------


def test_stress_findings_count_in_the_headline_and_the_exit_status(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import refmem_conformance.stress

    calls: List[Any] = []

    def fake_stress(open_target: Any, workdir: pathlib.Path, *, quick: bool) -> List[Dict[str, Any]]:
        target = open_target(workdir / "memories")
        calls.append((quick, target.execute({"command": "view", "path": "/memories"}).is_error))
        target.close()
        return [
            {"class": "cost", "check": "growth-listing", "detail": "time grows 4x per doubling"},
            {"class": "safety", "check": "race-symlink-swap", "detail": "canary text in a result"},
        ]

    monkeypatch.setattr(refmem_conformance.stress, "run_stress", fake_stress)
    out, path = io.StringIO(), tmp_path / "r.json"
    argv = ["--target", "refmem", "--run", "view-file-001", "--stress-quick", "--report-json", str(path)]
    status = main(argv, out=out, err=io.StringIO())
    assert status == 1 and calls == [(True, False)]
    text = out.getvalue()
    # one count of safety findings, the stress tier's included, in the figures and the verdict alike
    assert "safe: NO: 1 safety findings (1 of them in the stress tier)" in text
    assert "verdict: FAIL (exit 1): not safe: 1 safety findings" in text
    assert "cost (stress): 1 findings" in text and "stress [safety] race-symlink-swap" in text
    report = json.loads(path.read_text())
    assert report["figures"]["stress_safety"] == 1 and report["figures"]["cost_findings"] == 1
    assert report["figures"]["safety_findings"] == 1 and report["figures"]["safe"] is False
    assert [item["check"] for item in report["stress"]] == ["growth-listing", "race-symlink-swap"]
