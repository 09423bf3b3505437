"""Traceability (D-TRACE): every sentence of conformance/documentation.json is tested by at least one case, every
cite and `tested_by` names something that exists, conformance/traceability.json is the generator's output, and a
run's JSON and Markdown reports show the coverage per sentence."""

from __future__ import annotations

import json
import pathlib

from conformance_support import run_cli
from refmem_conformance import traceability
from refmem_conformance.cases import load_cases
from refmem_conformance.documentation import MUST_STRENGTHS, sentences

CASES, _ = load_cases()


def test_every_sentence_has_a_case_and_every_cite_a_sentence() -> None:
    assert traceability.problems(CASES) == []
    mapped = traceability.trace(CASES)
    assert set(mapped) == set(sentences()) and all(mapped.values())


def test_every_must_and_stated_sentence_has_a_case_of_its_own_or_named() -> None:
    stated = [key for key, sentence in sentences().items() if sentence["strength"] in MUST_STRENGTHS]
    assert len(stated) >= 30 and all(traceability.trace(CASES)[key] for key in stated)


def test_a_sentence_without_a_case_or_a_cite_of_nothing_is_refused() -> None:
    raws = [case.raw for case in CASES if case.raw.get("cite") != "doc-line-limit"]
    found = traceability.problems(raws, None)
    assert "doc-line-limit: no case tests this sentence" in found
    planted = dict(raws[0], id="planted-001", cite="doc-no-such-sentence")
    assert "planted-001: cites doc-no-such-sentence, which is not a sentence of documentation.json" in (
        traceability.problems(raws + [planted], None)
    )
    # a case a sentence names in tested_by that no longer exists
    without = [raw for raw in raws if raw["id"] != "pagination-001"]
    assert "doc-paginate: tested_by names no case: pagination-001" in traceability.problems(without, None)


def test_a_stale_committed_file_is_refused(tmp_path: pathlib.Path) -> None:
    stale = tmp_path / "traceability.json"
    stale.write_text(traceability.render(CASES).replace('"view-file-035"', '"view-file-001"', 1))
    assert any("not the generator's output" in problem for problem in traceability.problems(CASES, stale))


def test_the_reports_show_coverage_per_sentence(tmp_path: pathlib.Path) -> None:
    report, page = tmp_path / "report.json", tmp_path / "report.md"
    # the planted `wrong` backend inverts is_error on every view and adds a space: view-file-037 fails
    status, out, _ = run_cli(
        "--target", "python:fake_backends:wrong", "--run", "view-file-03[57]", "--run", "view-dir-022",
        "--no-matrix", "--report-json", str(report), "--markdown", str(page),
    )
    assert status == 1, out
    shown = json.loads(report.read_text())["documentation_coverage"]
    assert shown["doc-view-file"] == {"run": 1, "pass": 0, "failed": ["view-file-037"]}
    assert shown["doc-example-file"]["run"] == 1 and shown["doc-line-limit"]["run"] == 0
    text = page.read_text()
    assert "## Documentation coverage" in text
    assert "| doc-view-file | states | 0 / 1 | view-file-037 |" in text
