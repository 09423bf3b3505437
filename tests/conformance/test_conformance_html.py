"""HTML pages: one report and the matrix, read back with html.parser and compared with the JSON report."""

from __future__ import annotations

import json
import pathlib
from html.parser import HTMLParser
from typing import Any, Dict, List, Optional, Tuple

from conformance_support import run_cli

from refmem_conformance.figures import rows as figure_rows
from refmem_conformance.htmlpage import OUTCOMES, figure_text


class Page(HTMLParser):
    """Rows of every table by the id of their table or row, failure ids, and anything that could fetch."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.failures: List[str] = []
        self.pre: List[str] = []
        self.rows: Dict[str, List[str]] = {}
        self.table_rows: Dict[str, List[List[str]]] = {}
        self.fetching: List[Tuple[str, Any]] = []
        self._table: Optional[str] = None
        self._row: Optional[List[str]] = None
        self._row_id: Optional[str] = None
        self._cell: Optional[List[str]] = None
        self._in_pre = False

    def handle_starttag(self, tag: str, attrs: List[Tuple[str, Optional[str]]]) -> None:
        found = dict(attrs)
        if tag in ("script", "link", "img", "iframe") or any(
            name in ("src", "href") for name in found
        ):
            self.fetching.append((tag, found))
        if tag == "details" and found.get("class") == "failure":
            self.failures.append(str(found["id"])[len("case-") :])
        if tag == "table":
            self._table = found.get("id")
        if tag == "tr":
            self._row, self._row_id = [], found.get("id")
        if tag in ("td", "th"):
            self._cell = []
        if tag == "pre":
            self._in_pre = True
            self.pre.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._row is not None and self._cell is not None:
            self._row.append("".join(self._cell).strip())
            self._cell = None
        if tag == "tr" and self._row is not None:
            if self._row_id:
                self.rows[self._row_id] = self._row
            self.table_rows.setdefault(self._table or "", []).append(self._row)
            self._row = None
        if tag == "pre":
            self._in_pre = False

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)
        if self._in_pre:
            self.pre[-1] += data


def _read(path: pathlib.Path) -> Page:
    page = Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def _run(basic_cases: pathlib.Path, tmp_path: pathlib.Path, target: str) -> Tuple[Dict[str, Any], Page]:
    report, page = tmp_path / f"{target}.json", tmp_path / f"{target}.html"
    run_cli(
        "--cases-dir", str(basic_cases), "--no-matrix", "--target", f"python:conformance_fakes:{target}",
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
    failing = {case["id"] for r in (tiny, wrong) for case in r["cases"] if case["outcome"] in ("fail", "xpass")}
    rows = page.table_rows["cases"][1:]
    assert {row[0] for row in rows} == failing and len(rows) == len(failing)
    for row in rows:
        outcomes = [next(c["outcome"] for c in r["cases"] if c["id"] == row[0]) for r in (tiny, wrong)]
        assert [cell.split(" ")[0] for cell in row[1:]] == outcomes
    assert page.fetching == []


def test_the_matrix_needs_reports_and_a_page(tmp_path: pathlib.Path) -> None:
    assert run_cli("matrix", "--html", str(tmp_path / "m.html"))[0] == 2
    missing = run_cli("matrix", str(tmp_path / "none.json"), "--html", str(tmp_path / "m.html"))
    assert missing[0] == 2 and "not a readable JSON report" in missing[2]
    assert run_cli("run", str(tmp_path / "stray.json"))[0] == 2
