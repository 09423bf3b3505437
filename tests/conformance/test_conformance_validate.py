"""`validate`: the schema, ID rules (unique, group-NNN, sec- for generated, never a retired ID) and format rules."""

from __future__ import annotations

import json
import pathlib

import pytest
from conformance_support import BASIC, case, run_cli, view, write_cases

import conformance.validate as validate_module

SCHEMA = pathlib.Path(validate_module.SCHEMA_PATH)


def test_the_schemas_are_valid_draft_2020_12() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    for path in [SCHEMA, *sorted((SCHEMA.parent / "protocol").glob("*.json"))]:
        jsonschema.Draft202012Validator.check_schema(json.loads(path.read_text()))


def _validate(directory: pathlib.Path) -> tuple:
    return run_cli("validate", "--cases-dir", str(directory), "--no-matrix")


def test_well_formed_cases_validate(basic_cases: pathlib.Path) -> None:
    status, out, _ = _validate(basic_cases)
    assert status == 0, out
    assert "4 cases checked, 0 problems" in out


def test_broken_cases_are_reported(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    retired = tmp_path / "RETIRED.md"
    retired.write_text("| id | why |\n|---|---|\n| `t-009` | replaced by t-010 |\n")
    monkeypatch.setattr(validate_module, "RETIRED_PATH", retired)
    cases = [
        BASIC[1],
        dict(BASIC[1], description="duplicate"),
        case("t-009", [view("/memories", False)]),
        case("x-001", [view("/memories", False)]),
        case("t-011", [view("/memories", False, output="exact")]),
        case("t-012", [view("/memories", False)], features=["teleport"]),
        case("t-013", [view("/memories", False)], basis="reference"),
    ]
    status, out, _ = _validate(write_cases(tmp_path / "cases", cases))
    assert status == 1
    for expected in [
        "id 't-002' is also used",
        "id 't-009' is retired",
        "id 'x-001' is not t-NNN",
        "a must case states an exact output",
        "'teleport' is not one of",
        "'decision' is a required property",
    ]:
        assert expected in out, expected


def test_the_built_in_check_works_without_jsonschema(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(validate_module, "_jsonschema_checker", lambda: None)
    cases = [BASIC[1], case("t-012", [view("/memories", False)], features=["teleport"], level="sometimes")]
    status, out, _ = _validate(write_cases(tmp_path / "cases", cases))
    assert status == 1
    assert "jsonschema is not installed" in out
    assert "unknown feature 'teleport'" in out and "level 'sometimes'" in out


def test_generated_cases_are_checked_too(basic_cases: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    generated = [case("sec-a", [view("/memories", False)]), case("t-001", [view("/memories", False)])]
    monkeypatch.setattr(validate_module, "generated_cases", lambda: generated)
    status, out, _ = run_cli("validate", "--cases-dir", str(basic_cases))
    assert status == 1
    assert "generated id 't-001' does not start with sec-" in out and "id 't-001' is also used" in out
