"""A class of finding is one row (tiers.CLASS_ROWS): a class added in this test alone, with a planted backend whose
finding gets it, is in every report (terminal summary, JSON and its schema, JUnit, Markdown, HTML) and gates
under the profiles its row names, and nowhere else."""

from __future__ import annotations

import json
import pathlib
import xml.etree.ElementTree as ET
from typing import Any, Dict, List

import pytest
from conformance_support import case, run_cli, view, write_cases

import refmem_conformance.checks as checks
import refmem_conformance.tiers as tiers
from refmem_conformance.reports import REPORT_SCHEMA, report_schema

DRIFT = tiers.FindingClass(
    "drift",
    "the planted backend raised where the row of this test says it drifts",
    "#123456",
    gates=frozenset({"hardening"}),
    figure=tiers.ClassFigure("drift", "raises the row of this test counts as drift"),
)
CASES = [case("t-301", [view("/memories/missing", True)])]  # the planted backend raises on a view of a missing file


@pytest.fixture
def drift(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tiers, "CLASS_ROWS", [*tiers.CLASS_ROWS, DRIFT])
    planted = tuple((flag, message, "drift" if flag == "raised" else cls) for flag, message, cls in checks.MISBEHAVIOUR)
    monkeypatch.setattr(checks, "MISBEHAVIOUR", planted)


def _run(tmp_path: pathlib.Path, profile: str) -> Dict[str, Any]:
    cases = write_cases(tmp_path / "cases", CASES)
    outputs = {name: tmp_path / f"{profile}.{name}" for name in ("json", "xml", "md", "html")}
    status, out, _ = run_cli(
        "--cases-dir", str(cases), "--no-matrix", "--target", "python:fake_backends:raiser", "--profile", profile,
        "--report-json", str(outputs["json"]), "--junit", str(outputs["xml"]), "--markdown", str(outputs["md"]),
    )
    page_status, _, _ = run_cli("matrix", str(outputs["json"]), "--html", str(outputs["html"]))
    assert page_status == 0
    return {
        "status": status,
        "out": out,
        "report": json.loads(outputs["json"].read_text()),
        "junit": ET.parse(outputs["xml"]).getroot(),
        "markdown": outputs["md"].read_text(),
        "html": outputs["html"].read_text(),
    }


def _drift_findings(report: Dict[str, Any]) -> List[Dict[str, Any]]:
    return [finding for entry in report["cases"] for finding in entry["findings"] if finding["class"] == "drift"]


@pytest.mark.parametrize("profile, gates", [("hardening", True), ("documented", False)])
def test_a_class_added_as_a_row_is_in_every_report_and_gates_as_its_row_says(
    drift: None, tmp_path: pathlib.Path, profile: str, gates: bool
) -> None:
    seen = _run(tmp_path, profile)
    report = seen["report"]
    found = len(_drift_findings(report))
    by_id = {entry["id"]: entry for entry in report["cases"]}
    assert found and by_id["t-301"]["classes"] == ["drift"]
    assert (report["figures"]["drift_findings"], report["figures"]["drift_cases"]) == (found, 1)
    assert (by_id["t-301"]["status"], seen["status"]) == (("fail", 1) if gates else ("pass", 0))
    assert report["figures"]["conformant"] is (not gates)
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(report, report_schema())
    counted = "gates" if gates else "shown, not gating"
    assert f"drift: {found} findings in 1 cases ({counted})" in seen["out"]
    assert f"| drift | {found} | 1 |" in seen["markdown"] and "raises the row of this test counts as drift" in seen["markdown"]
    failures = [element.get("message", "") for element in seen["junit"].iter("failure")]
    assert any(message.startswith("[drift]") for message in failures) is gates
    assert '<tr id="figure-drift_findings">' in seen["html"]
    assert "border-left: 0.4em solid #123456\">drift</th>" in seen["html"]
    assert DRIFT.legend in seen["html"]


def test_without_the_row_the_same_backend_is_a_robustness_finding(tmp_path: pathlib.Path) -> None:
    report = _run(tmp_path, "documented")["report"]
    assert not _drift_findings(report) and "drift_findings" not in report["figures"]
    assert report["figures"]["robustness_findings"] and report["figures"]["conformant"] is False


def test_the_schema_file_names_the_classes_the_rows_name() -> None:
    written = json.loads(REPORT_SCHEMA.read_text(encoding="utf-8"))["$defs"]
    assert written["finding"]["properties"]["class"]["enum"] == list(tiers.class_names())
    assert written["case"]["properties"]["classes"]["items"]["enum"] == list(tiers.class_names())
    for row in tiers.class_rows():
        if row.figure is not None:
            assert {f"{row.slug}_findings", f"{row.slug}_cases"} <= set(written["figures"]["properties"])


def test_an_unsafe_class_added_as_a_row_makes_the_run_unsafe_in_the_figures_and_the_badges(
    monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path
) -> None:
    hazard = tiers.FindingClass("hazard", "a planted unsafe class", "#000000", gates=tiers.EVERY_PROFILE, unsafe=True)
    monkeypatch.setattr(tiers, "CLASS_ROWS", [*tiers.CLASS_ROWS, hazard])
    planted = tuple((flag, message, "hazard" if flag == "raised" else cls) for flag, message, cls in checks.MISBEHAVIOUR)
    monkeypatch.setattr(checks, "MISBEHAVIOUR", planted)
    cases, report, badges = write_cases(tmp_path / "cases", CASES), tmp_path / "r.json", tmp_path / "badges"
    status, out, _ = run_cli(
        "--cases-dir", str(cases), "--no-matrix", "--target", "python:fake_backends:raiser", "--profile", "documented",
        "--report-json", str(report), "--badges", str(badges),
    )
    figures = json.loads(report.read_text())["figures"]
    assert status == 1 and figures["safe"] is False and figures["unsafe_cases"] == 1
    assert "safe: NO" in out
    assert json.loads((badges / "safe.json").read_text())["message"] == "no"
