"""The published schemas of the files the tools write and read: expectations, JSON report, fuzz finding."""

from __future__ import annotations

import json
import pathlib
from typing import Any, Dict, List

import jsonschema
from conformance_support import run_cli
from referencing import Registry, Resource

SCHEMAS = pathlib.Path(__file__).resolve().parents[2] / "conformance" / "schema"
NAMES = ("expectations", "report", "fuzz-finding")


def _errors(name: str, document: Any) -> List[str]:
    loaded: Dict[str, Dict[str, Any]] = {
        other: json.loads((SCHEMAS / f"{other}.schema.json").read_text(encoding="utf-8")) for other in NAMES
    }
    registry: Registry[Any] = Registry().with_resources(
        [(schema["$id"], Resource.from_contents(schema)) for schema in loaded.values()]
    )
    jsonschema.Draft202012Validator.check_schema(loaded[name])
    validator = jsonschema.Draft202012Validator(loaded[name], registry=registry)
    return [f"{list(error.absolute_path)}: {error.message}" for error in validator.iter_errors(document)]


def test_a_report_and_a_baseline_follow_their_schemas(basic_cases: pathlib.Path, tmp_path: pathlib.Path) -> None:
    known, report, baseline = tmp_path / "known.json", tmp_path / "r.json", tmp_path / "baseline.json"
    known.write_text(
        json.dumps(
            [
                {"id": "t-001", "expect": "fail", "reason": "trailing space", "issue": ""},
                {"id": "gone-*", "expect": "skip"},
            ]
        )
    )
    common = ["--cases-dir", str(basic_cases), "--no-matrix", "--target", "python:fake_backends:wrong"]
    run_cli(*common, "--expectations", str(known), "--report-json", str(report))
    written = json.loads(report.read_text())
    assert {case["outcome"] for case in written["cases"]} >= {"xfail", "fail"} and written["stale_expectations"]
    assert any("findings" in case and "expectation" in case for case in written["cases"])
    assert _errors("report", written) == []
    assert _errors("expectations", json.loads(known.read_text())) == []
    run_cli("baseline", *common, "--output", str(baseline))
    assert json.loads(baseline.read_text()) and _errors("expectations", json.loads(baseline.read_text())) == []


def test_the_schemas_refuse_what_the_readers_refuse(basic_cases: pathlib.Path, tmp_path: pathlib.Path) -> None:
    assert _errors("expectations", [{"id": "x", "expect": "maybe"}])
    assert _errors("expectations", [{"expect": "fail"}])
    report = tmp_path / "r.json"
    run_cli("--cases-dir", str(basic_cases), "--no-matrix", "--target", "python:fake_backends:wrong",
            "--report-json", str(report))
    written = json.loads(report.read_text())
    case = next(case for case in written["cases"] if case.get("findings"))
    case["findings"][0]["class"] = "style"
    assert any("'style' is not one of" in error for error in _errors("report", written))


def test_a_fuzz_finding_file_follows_its_schema() -> None:
    from refmem_harness.finding import Finding

    finding = Finding(
        target="refmem",
        harness="sequence",
        oracle="escape:outside-changed",
        detail="wrote outside the root",
        step=1,
        hostile_layout=True,
        differential=False,
        commands=[{"command": "create", "path": "/memories/" + "a" * 3000, "file_text": "x"}],
        observed=[{"input": {"command": "create"}, "output": "File created", "is_error": False}],
        engine="random",
        seed=1,
        runs=10,
    )
    document = json.loads(json.dumps(finding.to_json()))
    assert _errors("fuzz-finding", document) == []
    document["format"] = "something-else/1"
    assert _errors("fuzz-finding", document)
