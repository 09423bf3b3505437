"""Reports: JSON, JUnit XML and Markdown are written and agree with the run; invisible characters are drawn."""

from __future__ import annotations

import json
import pathlib
import xml.etree.ElementTree as ET

from conformance_support import run_cli

import refmem_conformance as conformance
from refmem_harness.visible import diff, visible


def test_all_three_reports_are_written(basic_cases: pathlib.Path, tmp_path: pathlib.Path) -> None:
    paths = {name: tmp_path / "out" / name for name in ("r.json", "r.xml", "r.md")}
    status, _, _ = run_cli(
        "--cases-dir",
        str(basic_cases),
        "--no-matrix",
        "--target",
        "python:fake_backends:wrong",
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
    figures = report["figures"]
    # exit status and the headline agree: signalling failures fail the run, so it is not conformant
    assert (figures["safe"], figures["conformant"], report["profile"]) == (True, False, "documented")
    assert figures["documented"] == [3, 3] and figures["wording"] == [0, 1]
    assert figures["signalling"] == [1, 4] and figures["passed"] == [1, 4] and figures["skipped"] == 0
    by_id = {entry["id"]: entry for entry in report["cases"]}
    assert by_id["t-002"]["tier"] == "documented" and by_id["t-002"]["classes"] == ["signalling"]
    assert [finding["class"] for finding in by_id["t-001"]["findings"]] == ["signalling", "documented"]
    assert report["versions"] == {
        "suite": conformance.SUITE_VERSION,
        "protocol": conformance.PROTOCOL_VERSION,
        "case_format": conformance.CASE_FORMAT_VERSION,
    }
    assert report["counts"]["fail"] == 3
    suite = ET.parse(paths["r.xml"]).getroot()
    assert suite.get("tests") == "4" and suite.get("failures") == "3"
    assert len(suite.findall("testcase/failure")) == 3
    properties = {
        prop.get("name"): prop.get("value") for prop in suite.find("testcase[@name='t-002']").iter("property")
    }
    assert properties == {
        "tier": "documented", "level": "must", "basis": "doc", "cite": "doc-view", "classes": "signalling"
    }
    markdown = paths["r.md"].read_text()
    assert markdown.startswith("# Fake report")
    assert (
        "| **documented** (must cases: behaviour the documentation states, every reading it allows accepted; "
        "x/y = must cases passing / must cases run) | **3/3** |"
    ) in markdown
    assert "| **conformant** (" in markdown and "| **no: 3 cases fail under the documented profile** |" in markdown
    assert "**Verdict**: FAIL (exit 1): 3 cases fail under the documented profile" in markdown
    assert "| `t-002` | must, documented |" in markdown


def test_junit_survives_control_characters(tmp_path: pathlib.Path) -> None:
    from conformance_support import case, view, write_cases

    cases = [case("t-201", [view("/memories/a", False, output="bell \x07 here")], level="should")]
    path = tmp_path / "r.xml"
    run_cli(
        "--cases-dir",
        str(write_cases(tmp_path / "c", cases)),
        "--no-matrix",
        "--target",
        "python:fake_backends:tiny",
        "--profile",
        "standard",  # the documentation's wording gates: the should case fails and its failure is written
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
