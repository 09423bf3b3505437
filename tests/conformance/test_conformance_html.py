"""HTML pages: one report and the matrix, read back with html.parser and compared with the JSON report."""

from __future__ import annotations

import json
import pathlib
from typing import Any, Dict, Tuple

from conformance_support import run_cli
from page_support import Page, read
from refmem_conformance.figures import rows as figure_rows
from refmem_conformance.htmlpage import OUTCOMES, figure_text


def _read(path: pathlib.Path) -> Page:
    return read(path)


def _run(basic_cases: pathlib.Path, tmp_path: pathlib.Path, target: str) -> Tuple[Dict[str, Any], Page]:
    report, page = tmp_path / f"{target}.json", tmp_path / f"{target}.html"
    run_cli(
        "--cases-dir", str(basic_cases), "--no-matrix", "--target", f"python:fake_backends:{target}",
        "--report-json", str(report), "--html", str(page),
    )
    return json.loads(report.read_text()), _read(page)


def test_the_page_has_every_failure_and_the_json_figures(basic_cases: pathlib.Path, tmp_path: pathlib.Path) -> None:
    report, page = _run(basic_cases, tmp_path, "wrong")
    failing = [case["id"] for case in report["cases"] if case["outcome"] in ("fail", "xpass")]
    assert failing and page.failures == failing
    for row in figure_rows(report["figures"]):
        assert page.rows[f"figure-{row.key}"][1] == figure_text(report["figures"], row.key)
    features: Dict[str, Dict[str, int]] = {}
    for case in report["cases"]:
        for feature in case["features"]:
            row = features.setdefault(feature, dict.fromkeys(OUTCOMES, 0))
            row[case["outcome"]] += 1
    shown = {row[0]: [int(cell) for cell in row[1:]] for row in page.table_rows["features"][1:]}
    assert shown == {feature: [row[o] for o in OUTCOMES] for feature, row in features.items()}
    assert page.fetching == []  # self-contained: nothing to load
    assert any("␣" in text or "↵" in text or "∎" in text for text in page.pre)  # whitespace drawn


def test_a_failure_is_bounded_in_the_page(tmp_path: pathlib.Path) -> None:
    from refmem_conformance.htmlpage import case_text

    long = "".join(f"{n}\n" for n in range(5000))
    finding = {"kind": "output", "message": "output differs", "step": 1, "expected": long, "class": "reference"}
    finding["actual"] = long.replace("2500\n", "two thousand five hundred\n")
    case = {"id": "x-001", "outcome": "fail", "level": "should", "tier": "reference", "findings": [finding]}
    text = case_text(case)
    assert len(text.splitlines()) < 10 and "  +two␣thousand␣five␣hundred↵" in text


def test_the_matrix_lays_implementations_side_by_side(basic_cases: pathlib.Path, tmp_path: pathlib.Path) -> None:
    wrong, _ = _run(basic_cases, tmp_path, "wrong")
    tiny, _ = _run(basic_cases, tmp_path, "tiny")
    matrix = tmp_path / "out" / "matrix.html"
    status, _, err = run_cli("matrix", str(tmp_path / "tiny.json"), str(tmp_path / "wrong.json"), "--html", str(matrix))
    assert status == 0, err
    page = _read(matrix)
    for row in figure_rows(tiny["figures"]):
        assert page.rows[f"figure-{row.key}"][1:] == [figure_text(r["figures"], row.key) for r in (tiny, wrong)]
    for case in tiny["cases"]:  # every case has its row in the drill-down, with each column's outcome
        row = page.rows[f"case-{case['id']}"]
        outcomes = [next(c["outcome"] for c in r["cases"] if c["id"] == case["id"]) for r in (tiny, wrong)]
        assert [cell.split(" ")[0] for cell in row[3:]] == outcomes
        assert row[1] == case["description"]
    assert page.fetching == []
    assert set(page.links) <= set(page.ids)  # every in-page link lands somewhere


def test_the_matrix_needs_reports_and_a_page(tmp_path: pathlib.Path) -> None:
    assert run_cli("matrix", "--html", str(tmp_path / "m.html"))[0] == 2
    missing = run_cli("matrix", str(tmp_path / "none.json"), "--html", str(tmp_path / "m.html"))
    assert missing[0] == 2 and "not a readable JSON report" in missing[2]
    assert run_cli("run", str(tmp_path / "stray.json"))[0] == 2
