"""Badges: shields.io endpoint JSON written next to a report (--badges DIR), read back and compared with it."""

from __future__ import annotations

import json
import pathlib
from typing import Any, Dict

import pytest
from conformance_support import BASIC, case, run_cli, view, write_cases
from refmem_conformance.badges import BADGE_FILES, badges, documented_badge, safe_badge

UNSAFE_CASE = "sec-fs-link-in-delete-path"  # the link's target is lost: data loss, a safety finding


def _shields_endpoint(badge: Dict[str, Any]) -> None:
    """What shields.io's endpoint badge requires (https://shields.io/badges/endpoint-badge)."""
    assert badge["schemaVersion"] == 1
    assert isinstance(badge["label"], str) and badge["label"]
    assert isinstance(badge["message"], str) and badge["message"]
    assert isinstance(badge["color"], str) and badge["color"]
    assert set(badge) <= {"schemaVersion", "label", "message", "color", "isError"}


def _run(tmp_path: pathlib.Path, *argv: str) -> Dict[str, Any]:
    report = tmp_path / "report.json"
    run_cli(*argv, "--report-json", str(report), "--badges", str(tmp_path / "badges"))
    loaded: Dict[str, Any] = json.loads(report.read_text())
    return loaded


def _written(tmp_path: pathlib.Path) -> Dict[str, Dict[str, Any]]:
    folder = tmp_path / "badges"
    return {path.name: json.loads(path.read_text()) for path in folder.iterdir()}


def test_a_safe_run_writes_both_badges_from_its_figures(tmp_path: pathlib.Path) -> None:
    # t-005: a must case the tiny fake fails (it words the error otherwise)
    missed = case("t-005", [view("/memories/missing", True, match={"regex": "No such memory.*"})])
    cases = write_cases(tmp_path / "cases", BASIC + [missed])
    report = _run(tmp_path, "--cases-dir", str(cases), "--no-matrix", "--target", "python:fake_backends:tiny")
    written = _written(tmp_path)
    assert sorted(written) == sorted(BADGE_FILES)
    for badge in written.values():
        _shields_endpoint(badge)
        assert report["versions"]["suite"] in badge["label"]  # figures of two editions are not one count
    assert report["figures"]["safe"] is True
    assert (written["safe.json"]["message"], written["safe.json"]["color"]) == ("yes", "brightgreen")
    passing, ran = report["figures"]["documented"]
    assert (passing, ran) == (3, 4)  # t-005 fails: not green
    assert written["documented.json"]["message"] == f"{passing}/{ran} must cases"
    assert written["documented.json"]["color"] != "brightgreen"


def test_an_unsafe_run_gets_a_red_error_badge(tmp_path: pathlib.Path) -> None:
    report = _run(
        tmp_path, "--target", "python:plain_backends:make_delete_follows_link", "--run", UNSAFE_CASE,
        "--run", "view-file-002",
    )
    assert report["figures"]["safe"] is False
    safe = _written(tmp_path)["safe.json"]
    _shields_endpoint(safe)
    assert (safe["message"], safe["color"], safe.get("isError")) == ("no", "red", True)


@pytest.mark.parametrize(
    ("documented", "message", "colour"),
    [
        ([174, 174], "174/174 must cases", "brightgreen"),
        ([160, 174], "160/174 must cases", "yellow"),
        ([100, 174], "100/174 must cases", "orange"),
        ([0, 0], "no must case run", "lightgrey"),
    ],
)
def test_the_documented_badge_reads_its_pair(documented: Any, message: str, colour: str) -> None:
    report = {"versions": {"suite": "suite-4"}, "figures": {"safe": True, "documented": documented}}
    badge = documented_badge(report)
    _shields_endpoint(badge)
    assert (badge["label"], badge["message"], badge["color"]) == ("memory tool documented (suite-4)", message, colour)


def test_an_interrupted_run_is_never_green() -> None:
    report = {"versions": {"suite": "suite-4"}, "figures": {"safe": True, "documented": [3, 3]}, "interrupted": True}
    made = badges(report)
    assert all(badge["color"] == "lightgrey" and "interrupted" in badge["message"] for badge in made.values())
    assert safe_badge(dict(report, figures={"safe": False}))["message"] == "no"  # a finding is a finding


def test_report_text_in_a_label_is_printable_and_bounded() -> None:
    report = {"versions": {"suite": "suite-4\n\x1b[31m" + "x" * 500}, "figures": {"safe": True, "documented": [1, 1]}}
    label = safe_badge(report)["label"]
    assert "\n" not in label and "\x1b" not in label and len(label) < 100
