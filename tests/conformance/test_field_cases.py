"""Regression cases for bugs reported in the field: each cites its source, the reports link it, and the cases fail on
an SDK version that has the bug (where that version is the one installed)."""

from __future__ import annotations

import json
import pathlib
import xml.etree.ElementTree as ET

import pytest
from conformance_support import case, run_cli, view, write_cases
from refmem_conformance.cases import load_cases, source_label
from refmem_conformance.openclaw.runner import load_cases as load_openclaw_cases

FIELD_BUGS = {
    "https://github.com/anthropics/anthropic-sdk-python/pull/1914",
    "https://github.com/anthropics/anthropic-sdk-python/pull/1906",
    "https://github.com/anthropics/anthropic-sdk-typescript/pull/1047",
    "https://github.com/anthropics/anthropic-sdk-typescript/issues/1180",
    "https://github.com/anthropics/anthropic-sdk-typescript/issues/1181",
    "https://github.com/anthropics/anthropic-sdk-typescript/issues/1182",
    "https://github.com/supermemoryai/supermemory/issues/1043",
    "https://github.com/supermemoryai/supermemory/issues/1309",
    "https://github.com/openclaw/openclaw/pull/68597",
    "https://github.com/openclaw/openclaw/pull/80331",
}
"""The field bugs a case pins (OpenClaw's concurrent appends, issue 117741, is a race: the deployment tier's
lost-updates check cites it, deployment.SOURCES)."""


def test_every_field_bug_has_a_case_that_cites_it() -> None:
    cited = {url for found in (load_cases()[0], load_openclaw_cases()) for item in found for url in item.sources}
    assert FIELD_BUGS <= cited, sorted(FIELD_BUGS - cited)
    assert all(source_label(url) for url in cited), sorted(url for url in cited if not source_label(url))


def test_a_source_is_linked_only_when_it_is_an_issue_or_pull_request_on_github() -> None:
    assert source_label("https://github.com/openclaw/openclaw/issues/117741") == "openclaw/openclaw#117741"
    for url in ["javascript:alert(1)", "https://github.com/a/b/issues/1) [x](https://evil",
                "https://evil.example/a/b/issues/1", "http://github.com/a/b/pull/2"]:
        assert source_label(url) is None, url


def test_the_reports_link_a_failing_case_s_sources(tmp_path: pathlib.Path) -> None:
    url = "https://github.com/anthropics/anthropic-sdk-typescript/issues/1180"
    cases = write_cases(tmp_path / "cases", [case("t-001", [view("/memories/missing", True, output="nope")],
                                                  sources=[url, "javascript:alert(1)"])])
    out = {name: tmp_path / name for name in ("r.json", "r.md", "r.html", "r.xml")}
    status, _, _ = run_cli("--cases-dir", str(cases), "--no-matrix", "--target", "python:fake_backends:wrong",
                           "--report-json", str(out["r.json"]), "--markdown", str(out["r.md"]),
                           "--html", str(out["r.html"]), "--junit", str(out["r.xml"]))
    assert status == 1
    entry = json.loads(out["r.json"].read_text())["cases"][0]
    assert entry["sources"] == [url]
    markdown = out["r.md"].read_text()
    assert f"[anthropics/anthropic-sdk-typescript#1180]({url})" in markdown and "javascript:" not in markdown
    page = out["r.html"].read_text()
    assert f'<a href="{url}">anthropics/anthropic-sdk-typescript#1180</a>' in page and "javascript:" not in page
    properties = {p.get("name"): p.get("value") for p in ET.parse(out["r.xml"]).getroot().iter("property")}
    assert properties["sources"] == url


def test_the_schema_refuses_a_source_that_is_not_an_issue_or_pull_request(tmp_path: pathlib.Path) -> None:
    bad = write_cases(tmp_path / "bad", [case("t-001", [view("/memories", False)], sources=["javascript:alert(1)"])])
    status, out, err = run_cli("validate", "--cases-dir", str(bad))
    assert status != 0 and "sources" in out + err


def _anthropic_version() -> str:
    try:
        import anthropic
    except ImportError:
        return ""
    return str(anthropic.__version__)


PREFIX_BUG = ("2.12.0", "2.13.0", "2.14.0")
"""Versions of the Python SDK whose path check takes `/memoriesX` for `/memories/X` (PR 1914, not merged)."""


@pytest.mark.skipif(_anthropic_version() not in PREFIX_BUG, reason="an SDK version without the /memoriesX bug")
def test_the_prefix_case_fails_on_the_python_sdk_that_has_the_bug(tmp_path: pathlib.Path) -> None:
    report = tmp_path / "sdk.json"
    status, _, _ = run_cli("--target", "python:refmem_conformance.adapters.anthropic_sdk:make", "--run", "field-001",
                           "--profile", "standard", "--report-json", str(report))
    entry = json.loads(report.read_text())["cases"][0]
    assert status == 1 and entry["status"] == "fail", entry
    assert entry["sources"][0] == "https://github.com/anthropics/anthropic-sdk-python/pull/1914"
