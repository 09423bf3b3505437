"""`validate`: the schema, ID rules (unique, group-NNN, sec- for generated, never a retired ID) and format rules."""

from __future__ import annotations

import json
import pathlib

import pytest
import refmem_conformance.validate as validate_module
from conformance_support import BASIC, case, run_cli, view, write_cases

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


# --- "$schema" ------------------------------------------------------------------------------------------------


def _schema_id() -> str:
    return str(json.loads(SCHEMA.read_text(encoding="utf-8"))["$id"])


def _write_file(directory: pathlib.Path, document: dict) -> pathlib.Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{document['group']}.json"
    path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    return path


def _one(group: str) -> list:
    return [case(f"{group}-001", [view("/memories", False)])]


def test_this_repositorys_case_files_must_name_the_case_schema_first(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cases_dir = tmp_path / "cases"
    _write_file(cases_dir, {"$schema": _schema_id(), "group": "good", "cases": _one("good")})
    _write_file(cases_dir, {"group": "missing", "cases": _one("missing")})
    _write_file(cases_dir, {"$schema": "https://example.org/other.json", "group": "wrong", "cases": _one("wrong")})
    _write_file(cases_dir, {"group": "second", "$schema": _schema_id(), "cases": _one("second")})
    monkeypatch.setattr(validate_module, "CASES_DIR", cases_dir)  # stands for conformance/cases/
    status, out, _ = _validate(cases_dir)
    assert status == 1
    assert f'missing.json: "$schema" is missing: a case file here names {_schema_id()} first' in out
    other = "'https://example.org/other.json'"
    assert f'wrong.json: "$schema" is {other}, not the case schema\'s $id {_schema_id()}' in out
    assert 'second.json: "$schema" must be the first key' in out
    assert "good.json" not in out
    assert "4 cases checked, 3 problems" in out


def test_another_cases_dir_may_leave_the_schema_out_or_name_another(tmp_path: pathlib.Path) -> None:
    cases_dir = tmp_path / "theirs"
    _write_file(cases_dir, {"group": "plain", "cases": _one("plain")})
    pinned = "https://example.org/pinned/case.schema.json"
    _write_file(cases_dir, {"$schema": pinned, "group": "own", "cases": _one("own")})
    _write_file(cases_dir, {"$schema": _schema_id(), "group": "ours", "cases": _one("ours")})
    status, out, _ = _validate(cases_dir)
    assert status == 0, out
    assert "3 cases checked, 0 problems" in out
    # but "$schema", when given, is a string, whichever checker runs
    _write_file(cases_dir, {"$schema": 2, "group": "odd", "cases": _one("odd")})
    status, out, _ = _validate(cases_dir)
    assert status == 1 and "odd.json: $schema: 2 is not of type 'string'" in out


def test_the_built_in_check_wants_a_string_schema_too(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(validate_module, "_jsonschema_checker", lambda: None)
    cases_dir = tmp_path / "theirs"
    _write_file(cases_dir, {"$schema": _schema_id(), "group": "ours", "cases": _one("ours")})
    assert _validate(cases_dir)[0] == 0
    _write_file(cases_dir, {"$schema": ["x"], "group": "odd", "cases": _one("odd")})
    status, out, _ = _validate(cases_dir)
    assert status == 1 and 'odd.json: "$schema" must be a string' in out


def test_a_case_file_with_schema_loads_and_runs_through_cases_dir(tmp_path: pathlib.Path) -> None:
    cases_dir = tmp_path / "cases"
    path = _write_file(cases_dir, {"$schema": _schema_id(), "group": "t", "cases": BASIC})
    assert path.read_text(encoding="utf-8").startswith('{\n  "$schema": ')
    status, out, err = run_cli("list", "--cases-dir", str(cases_dir), "--no-matrix")
    assert status == 0, err
    assert [line.split("\t")[0] for line in out.splitlines()] == ["t-001", "t-002", "t-003", "t-004"]
    status, out, err = run_cli("--cases-dir", str(cases_dir), "--no-matrix", "--target", "refmem")
    assert status == 0, out + err
    assert "4 pass, 0 fail" in out
