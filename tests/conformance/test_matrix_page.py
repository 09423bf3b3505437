"""The matrix page, read back with html.parser: columns with their profiles, a legend, figures with what they count,
one row per case family with its description and tallies, a drill-down to every case, and with --trend what
changed from each report to the next. Every expectation is computed from the JSON reports the page was made from."""

from __future__ import annotations

import copy
import json
import pathlib
from typing import Any, Dict, List

import pytest
from conformance_support import BASIC, case, run_cli, view, write_cases
from page_support import Page, read
from refmem_conformance.families import STATES, case_state, families, family_of, matrix_family
from refmem_conformance.htmlpage import CSP, profile_text
from refmem_conformance.legend import CLASS_LEGEND, FIGURE_UNITS, OUTCOME_LEGEND, STATE_LEGEND
from refmem_conformance.matrixpage import matrix_page
from refmem_conformance.security.matrix import load as load_payloads
from refmem_conformance.tiers import CLASSES
from refmem_conformance.trend import step

MATRIX_SELECTION = ["--run", "sec-dotdot-*", "--run", "sec-fs-link-in-*", "--run", "view-file-00*"]


def _report(tmp_path: pathlib.Path, name: str, *argv: str) -> Dict[str, Any]:
    path = tmp_path / f"{name}.json"
    status, _out, err = run_cli(*argv, "--report-json", str(path))
    assert status in (0, 1), err
    loaded: Dict[str, Any] = json.loads(path.read_text())
    return loaded


def _page(tmp_path: pathlib.Path, reports: List[Dict[str, Any]], *options: str) -> Page:
    paths = []
    for index, report in enumerate(reports):
        path = tmp_path / f"in-{index}.json"
        path.write_text(json.dumps(report))
        paths.append(str(path))
    out = tmp_path / "matrix.html"
    status, _out, err = run_cli("matrix", *paths, "--html", str(out), *options)
    assert status == 0, err
    return read(out)


@pytest.fixture(scope="module")
def two_reports(tmp_path_factory: pytest.TempPathFactory) -> List[Dict[str, Any]]:
    """The reference and a planted-bug backend over hand-written cases and two generated families."""
    tmp_path = tmp_path_factory.mktemp("reports")
    reference = _report(tmp_path, "refmem", *MATRIX_SELECTION)
    buggy = _report(tmp_path, "buggy", "--target", "python:buggy_backends:make_delete_follows_link", *MATRIX_SELECTION)
    return [reference, buggy]


def test_the_legend_explains_every_state_class_and_outcome(two_reports: List[Dict[str, Any]], tmp_path: pathlib.Path) -> None:
    assert list(STATE_LEGEND) == list(STATES) and list(CLASS_LEGEND) == list(CLASSES)
    page = _page(tmp_path, two_reports)
    states = page.table_rows["legend-states"][0]
    assert [cell.split(":")[0] for cell in states] == [word for word, _meaning in STATE_LEGEND.values()]
    classes = [cell for row in page.table_rows["legend-classes"] for cell in row[::2]]
    assert classes == list(CLASSES)
    outcomes = "".join(text for text in page.text if text)
    assert all(word in outcomes for word in OUTCOME_LEGEND)


def test_each_column_says_its_profile_and_each_figure_what_it_counts(
    two_reports: List[Dict[str, Any]], tmp_path: pathlib.Path
) -> None:
    reference, buggy = two_reports
    assert reference["profile"] != buggy["profile"]  # standard against documented: the page must say so
    page = _page(tmp_path, two_reports)
    profile_row = next(row for row in page.table_rows["columns"] if row[0].startswith("profile"))
    assert profile_row[1:] == [profile_text(report["profile"]) for report in two_reports]
    for key, unit in FIGURE_UNITS.items():
        if f"figure-{key}" in page.rows:
            assert unit in page.rows[f"figure-{key}"][0]
    assert "x/y = must cases passing / must cases run" in page.rows["figure-documented"][0]


def test_one_row_per_family_with_its_description_and_tallies(
    two_reports: List[Dict[str, Any]], tmp_path: pathlib.Path
) -> None:
    page = _page(tmp_path, two_reports)
    payloads = load_payloads()
    titles = {family["key"]: family["title"] for family in payloads["families"]}
    titles.update({f"fs-{hazard['key']}": hazard["title"] for hazard in payloads["fs_hazards"]})
    keys = list(dict.fromkeys(family_of(c) for report in two_reports for c in report["cases"]))
    assert sorted(keys) == sorted(["view-file", "dotdot", "fs-link-in"])
    for key in keys:
        row, classes = page.rows[f"row-{key}"], page.row_classes[f"row-{key}"]
        members = [c for c in two_reports[0]["cases"] if family_of(c) == key]
        if matrix_family(members[0]["id"]):
            assert row[1].startswith(titles[key])  # the payload family's or hazard's own title
        else:
            assert row[1].startswith("features: " + ", ".join(members[0]["features"]))
        for column, report in enumerate(two_reports):
            members = [c for c in report["cases"] if family_of(c) == key and c["outcome"] != "skip"]
            clean = sum(not c.get("classes") for c in members)
            cell = row[3 + column]
            assert f"{clean}/{len(members)}" in cell
            for cls in CLASSES:
                count = sum(cls in c.get("classes", []) for c in members)
                assert (f"{cls} {count}" in cell) == bool(count), (key, cls, cell)
            worst = min((case_state(c) for c in members), key=STATES.index)
            assert f"st-{worst}" in classes[3 + column]
    # the family the buggy backend loses a link's target in is red in its column
    assert "st-unsafe" in page.row_classes["row-fs-link-in"][4] and "st-clean" in page.row_classes["row-fs-link-in"][3]


def test_every_case_has_an_anchor_its_description_and_each_column(
    two_reports: List[Dict[str, Any]], tmp_path: pathlib.Path
) -> None:
    page = _page(tmp_path, two_reports)
    for found in families(two_reports):
        assert f"family-{found.key}" in page.details
    for entry in two_reports[1]["cases"]:
        row, classes = page.rows[f"case-{entry['id']}"], page.row_classes[f"case-{entry['id']}"]
        assert row[0] == entry["id"]
        for column, report in enumerate(two_reports):
            other = next(c for c in report["cases"] if c["id"] == entry["id"])
            assert row[3 + column].split(" ")[0] == other["outcome"]
            assert f"st-{case_state(other)}" in classes[3 + column]
            for cls in other.get("classes", []):
                assert cls in row[3 + column]
    assert set(page.links) <= set(page.ids) and page.fetching == []
    assert any(meta.get("http-equiv") == "Content-Security-Policy" and meta.get("content") == CSP for meta in page.meta)


def test_hostile_report_text_is_drawn_and_escaped(tmp_path: pathlib.Path) -> None:
    hostile = "<script>alert(1)</script>\x1b[31m\u202e<img src=x onerror=alert(1)>\n::error::x"
    report: Dict[str, Any] = {
        "implementation": {"name": "</th><script>x</script>", "version": '"><img src=y>'},
        "versions": {"suite": "suite-4<b>"},
        "target": hostile,
        "profile": "<i>made-up</i>",
        "figures": {"safe": True, "profile": "nonsense", "documented": "not a pair"},
        "cases": [
            {"id": 'x-1"><script>', "group": "<g>", "description": hostile, "outcome": "fail", "level": "must",
             "tier": "documented", "classes": ["documented"],
             "findings": [{"class": "documented", "kind": "<k>", "message": hostile}]},
        ],
    }
    odd = dict(copy.deepcopy(report), implementation="a string", versions=["a list"], verdict="x", figures={})
    out = tmp_path / "page.html"
    out.write_text(matrix_page([report, odd]), encoding="utf-8")
    out.with_name("trend.html").write_text(matrix_page([report, copy.deepcopy(report)], trend=True))
    text = out.read_text(encoding="utf-8")
    page = read(out)
    assert page.fetching == [] and "<script" not in text and "<img" not in text
    assert "\x1b" not in text and "\u202e" not in text and "\\x1b" in text and "\\u202e" in text
    assert set(page.links) <= set(page.ids)


# --- the trend: one implementation over versions ------------------------------------------------------------------


def _versions(tmp_path: pathlib.Path) -> List[Dict[str, Any]]:
    """One fake at three versions: the second breaks a case (t-005's wording) and the third gains a case and
    fixes the wording but breaks signalling (the wrong fake) on its views."""
    missed = case("t-005", [view("/memories/missing", True, match={"regex": "No such memory.*"})])
    first_cases = write_cases(tmp_path / "v1", BASIC)
    later_cases = write_cases(tmp_path / "v2", BASIC + [missed])
    runs = [
        ("1.0", first_cases, "tiny"),
        ("1.1", later_cases, "tiny"),
        ("2.0", later_cases, "wrong"),
    ]
    reports = []
    for version, cases, fake in runs:
        report = _report(tmp_path, version, "--cases-dir", str(cases), "--no-matrix", "--target",
                         f"python:fake_backends:{fake}")
        report["implementation"] = dict(report["implementation"], name="fake", version=version)
        reports.append(report)
    return reports


def test_the_trend_says_what_changed_between_consecutive_versions(tmp_path: pathlib.Path) -> None:
    reports = _versions(tmp_path)
    first, second = step(reports[0], reports[1]), step(reports[1], reports[2])
    assert first.added == ["t-005"] and first.started == [] and first.removed == []
    assert [move.cls for move in first.classes] == ["documented"] and first.classes[0].started == 0
    assert second.added == [] and set(second.started) == {"t-001", "t-002", "t-004"}  # wrong: is_error flipped
    signalling = next(move for move in second.classes if move.cls == "signalling")
    assert (signalling.before, signalling.after, signalling.started, signalling.stopped) == (0, 4, 4, 0)
    assert "documented" in {key for key, *_ in first.figures}  # 3/3 -> 3/4: the new case fails
    assert "signalling" in {key for key, *_ in second.figures}

    page = _page(tmp_path, reports, "--trend")
    assert "change-1" in page.ids and "change-2" in page.ids
    assert [row[0] for row in page.table_rows["change-2-classes"][1:]] == [move.cls for move in second.classes]
    signalling_row = next(row for row in page.table_rows["change-2-classes"] if row[0] == "signalling")
    assert signalling_row[1:] == ["0", "4", "4", "0"]
    figures = {row[0]: row[1:] for row in page.table_rows["change-2-figures"][1:]}
    assert figures["signalling"] == [before for key, name, before, after in second.figures if key == "signalling"] + [
        after for key, name, before, after in second.figures if key == "signalling"
    ]
    assert [row[0] for row in page.table_rows["columns"][:1]] == [""]  # headings are the versions
    assert page.table_rows["columns"][0][1:] == [f"{v} ({reports[0]['versions']['suite']})" for v in ("1.0", "1.1", "2.0")]


def test_trend_refuses_reports_of_several_implementations(tmp_path: pathlib.Path) -> None:
    reports = _versions(tmp_path)
    reports[1]["implementation"]["name"] = "another"
    paths = []
    for index, report in enumerate(reports):
        path = tmp_path / f"mixed-{index}.json"
        path.write_text(json.dumps(report))
        paths.append(str(path))
    status, _out, err = run_cli("matrix", *paths, "--trend", "--html", str(tmp_path / "t.html"))
    assert status == 2 and "one implementation" in err and "'another'" in err
    status, _out, err = run_cli("matrix", paths[0], "--trend", "--html", str(tmp_path / "t.html"))
    assert status == 2 and "two or more" in err


def test_matrix_of_one_implementation_suggests_the_trend(tmp_path: pathlib.Path) -> None:
    reports = _versions(tmp_path)[:2]
    paths = []
    for index, report in enumerate(reports):
        path = tmp_path / f"same-{index}.json"
        path.write_text(json.dumps(report))
        paths.append(str(path))
    status, _out, err = run_cli("matrix", *paths, "--html", str(tmp_path / "m.html"))
    assert status == 0 and "--trend" in err


def test_matrix_refuses_a_file_that_is_not_a_report(tmp_path: pathlib.Path) -> None:
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"cases": "no"}))
    status, _out, err = run_cli("matrix", str(other), "--html", str(tmp_path / "m.html"))
    assert status == 2 and "not a JSON report of refmem-conformance" in err
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    status, _out, err = run_cli("matrix", str(deep), "--html", str(tmp_path / "m.html"))
    assert status == 2 and "not a readable JSON report" in err
