"""Reports: JSON, JUnit XML and Markdown are written and agree with the run; invisible characters are drawn."""

from __future__ import annotations

import json
import pathlib
import xml.etree.ElementTree as ET

from conformance_support import run_cli

import conformance
from conformance.visible import diff, visible


def test_all_three_reports_are_written(basic_cases: pathlib.Path, tmp_path: pathlib.Path) -> None:
    paths = {name: tmp_path / "out" / name for name in ("r.json", "r.xml", "r.md")}
    status, _, _ = run_cli(
        "--cases-dir",
        str(basic_cases),
        "--no-matrix",
        "--target",
        "python:conformance_fakes:wrong",
        "--report-json",
        str(paths["r.json"]),
        "--junit",
        str(paths["r.xml"]),
        "--markdown",
        str(paths["r.md"]),
        "--title",
        "Fake report",
    )
    assert status == 1
    report = json.loads(paths["r.json"].read_text())
    assert report["figures"] == {
        "must_passed": 1,
        "must_ran": 3,
        "all_passed": 1,
        "all_ran": 4,
        "skipped": 0,
        "conformant": False,
        "byte_exact": False,
    }
    assert report["versions"] == {
        "suite": conformance.SUITE_VERSION,
        "protocol": conformance.PROTOCOL_VERSION,
        "case_format": conformance.CASE_FORMAT_VERSION,
    }
    assert report["counts"]["fail"] == 3
    suite = ET.parse(paths["r.xml"]).getroot()
    assert suite.get("tests") == "4" and suite.get("failures") == "3"
    assert len(suite.findall("testcase/failure")) == 3
    markdown = paths["r.md"].read_text()
    assert markdown.startswith("# Fake report")
    assert "**conformant** (all `must` cases pass) | **no**: 1/3" in markdown
    assert "| `t-002` | must |" in markdown


def test_junit_survives_control_characters(tmp_path: pathlib.Path) -> None:
    from conformance_support import case, view, write_cases

    cases = [case("t-201", [view("/memories/a", False, output="bell \x07 here")], level="should")]
    path = tmp_path / "r.xml"
    run_cli(
        "--cases-dir",
        str(write_cases(tmp_path / "c", cases)),
        "--no-matrix",
        "--target",
        "python:conformance_fakes:tiny",
        "--junit",
        str(path),
    )
    assert "\\x07" in ET.parse(path).getroot().find("testcase/failure").text


def test_invisible_characters_are_drawn() -> None:
    assert visible("a b\tc\n") == "a␣b—»c↵\n"
    assert visible("x") == "x∎"
    assert visible("\x00\x7f\u202e") == "\\x00\\x7f\\u202e∎"
    assert visible("␣") == "\\u2423∎"  # a literal marker cannot pass for a space
    assert "-a␣∎" in diff("a ", "a") and "+a∎" in diff("a ", "a")
