"""`validate`: every case file against the schema, IDs unique and never reused, decisions that exist.

Uses `jsonschema` when it is installed; otherwise a built-in check of the same required keys and
vocabularies (less thorough: it does not check fixture shapes).

The case files of this repository (conformance/cases/) must name the case schema's `$id` in `"$schema"`, their
first key; the generated ones get it from the generator, whose output they must be. Another directory
(`--cases-dir`) may leave `"$schema"` out or name another URL (CASE-FORMAT.md, "The file").
"""

from __future__ import annotations

import importlib
import json
import pathlib
import re
from typing import Any, Callable, Dict, Iterable, List, Optional, Set, Tuple

from . import traceability
from .cases import CASES_DIR, GENERATED_SOURCE, generated_cases, read_case_files
from .documentation import may_be_must, sentences, strength
from .security.matrix import differences as matrix_differences

HERE = pathlib.Path(__file__).resolve().parent
SCHEMA_PATH = HERE / "schema" / "case.schema.json"
RETIRED_PATH = HERE / "RETIRED.md"
SPEC_NOTES = HERE.parent / "docs" / "spec-notes.md"

Checker = Callable[[Any, str], List[str]]


def _schema() -> Dict[str, Any]:
    schema: Dict[str, Any] = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    return schema


def schema_id() -> str:
    """The case schema's `$id`: what `"$schema"` names in this repository's case files."""
    return str(_schema()["$id"])


def _schema_key(doc: Any, where: str, expected: Optional[str]) -> List[str]:
    """This repository's files (`expected`, the schema's `$id`): `"$schema"` names it, as the first key."""
    if expected is None or not isinstance(doc, dict):
        return []
    if "$schema" not in doc:
        return [f'{where}: "$schema" is missing: a case file here names {expected} first']
    if doc["$schema"] != expected:
        return [f'{where}: "$schema" is {doc["$schema"]!r}, not the case schema\'s $id {expected}']
    if next(iter(doc)) != "$schema":
        return [f'{where}: "$schema" must be the first key']
    return []


def _jsonschema_checker() -> Optional[Tuple[Checker, Checker]]:
    try:
        jsonschema: Any = importlib.import_module("jsonschema")
    except ImportError:
        return None
    schema = _schema()
    file_validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())
    case_schema = {"$schema": schema["$schema"], "$defs": schema["$defs"], "$ref": "#/$defs/case"}
    case_validator = jsonschema.Draft202012Validator(case_schema, format_checker=jsonschema.FormatChecker())

    def run(validator: Any) -> Checker:
        def check(value: Any, where: str) -> List[str]:
            return [
                f"{where}: {'/'.join(str(part) for part in error.absolute_path) or '(top)'}: {error.message}"
                for error in sorted(validator.iter_errors(value), key=lambda e: list(map(str, e.absolute_path)))
            ]

        return check

    return run(file_validator), run(case_validator)


def _minimal_case(case: Any, where: str) -> List[str]:
    vocab = _schema()["$defs"]
    if not isinstance(case, dict):
        return [f"{where}: a case must be an object"]
    problems = [f"{where}: missing {key}" for key in vocab["case"]["required"] if key not in case]
    problems += [f"{where}: unknown key {key}" for key in case if key not in vocab["case"]["properties"]]
    for key in ("basis", "level", "requires"):
        if key in case and case[key] not in vocab["case"]["properties"][key]["enum"]:
            problems.append(f"{where}: {key} {case[key]!r} is not one of {vocab['case']['properties'][key]['enum']}")
    unknown = set(case.get("features", [])) - set(vocab["feature"]["enum"])
    problems += [f"{where}: unknown feature {name!r}" for name in sorted(unknown)]
    for number, step in enumerate(case.get("steps", []), 1):
        if not isinstance(step, dict) or "input" not in step or not isinstance(step.get("is_error", False), bool):
            problems.append(f"{where}: step {number} needs input, and is_error (when given) must be a boolean")
        elif "output" in step and "match" in step:
            problems.append(f"{where}: step {number} has both output and match")
    return problems


def _minimal_file(doc: Any, where: str) -> List[str]:
    if not isinstance(doc, dict) or not isinstance(doc.get("group"), str) or not isinstance(doc.get("cases"), list):
        return [f'{where}: expected {{"group": NAME, "cases": [...]}}']
    problems = [f'{where}: "$schema" must be a string'] if not isinstance(doc.get("$schema", ""), str) else []
    return problems + [
        problem for index, case in enumerate(doc["cases"]) for problem in _minimal_case(case, f"{where}: cases/{index}")
    ]


def retired_ids(path: Optional[pathlib.Path] = None) -> Set[str]:
    """IDs listed in RETIRED.md: the first cell of a table row, or an ID in backticks."""
    path = path or RETIRED_PATH
    if not path.is_file():
        return set()
    text = path.read_text(encoding="utf-8")
    shape = r"[a-z0-9][a-z0-9_.-]*-[a-z0-9_.-]+"
    cells = re.findall(r"^\|\s*`?(" + shape + r")`?\s*\|", text, re.MULTILINE)
    return set(cells) | set(re.findall(r"`(" + shape + r")`", text))


def decision_ids(path: Optional[pathlib.Path] = None) -> Optional[Set[str]]:
    path = path or SPEC_NOTES
    if not path.is_file():
        return None
    return set(re.findall(r"\b(D-[A-Z0-9]+(?:-[A-Z0-9]+)*)\b", path.read_text(encoding="utf-8")))


def _case_rules(case: Dict[str, Any], where: str, decisions: Optional[Set[str]]) -> List[str]:
    """Rules of CASE-FORMAT.md that a schema cannot say."""
    problems = []
    if case.get("level") == "must" and any(
        "output" in step for step in case.get("steps", []) if isinstance(step, dict)
    ):
        problems.append(f"{where}: a must case states an exact output; use match, or make the wording a should case")
    decision = case.get("decision")
    if decisions is not None and decision and decision not in decisions:
        problems.append(f"{where}: decision {decision} is not in docs/spec-notes.md")
    cite = case.get("cite")
    if cite and cite not in sentences():
        problems.append(f"{where}: cite {cite} is not a sentence of conformance/documentation.json")
    if case.get("level") == "must" and case.get("basis") not in ("doc", "security"):
        problems.append(f"{where}: only the documentation makes a must; a {case.get('basis')} case is should")
    if case.get("level") == "must" and isinstance(cite, str) and cite in sentences() and not may_be_must(cite):
        problems.append(
            f"{where}: cite {cite} is a sentence of strength {strength(cite)!r}: only one that says MUST or states "
            "the behaviour carries a must case"
        )
    for number, step in enumerate(case.get("steps", []), 1):
        pattern = (
            step.get("match", {}).get("regex")
            if isinstance(step, dict) and isinstance(step.get("match"), dict)
            else None
        )
        if isinstance(pattern, str):
            try:
                re.compile(pattern)
            except re.error as exc:
                problems.append(f"{where}: step {number}: bad regex: {exc}")
    return problems


def _id_rules(entries: Iterable[Tuple[str, str, str]], retired: Set[str]) -> List[str]:
    """(id, group or None for generated, where) -> uniqueness, shape and retirement problems."""
    seen: Dict[str, str] = {}
    problems = []
    for case_id, group, where in entries:
        if group and not re.fullmatch(re.escape(group) + r"-\d{3,}", case_id):
            problems.append(f"{where}: id {case_id!r} is not {group}-NNN")
        if not group and not case_id.startswith("sec-"):
            problems.append(f"{where}: generated id {case_id!r} does not start with sec-")
        if case_id in seen:
            problems.append(f"{where}: id {case_id!r} is also used at {seen[case_id]}")
        seen.setdefault(case_id, where)
        if case_id in retired:
            problems.append(f"{where}: id {case_id!r} is retired (RETIRED.md) and must not be reused")
    return problems


def validate(cases_dir: pathlib.Path = CASES_DIR, with_matrix: bool = True) -> Tuple[List[str], List[str], int]:
    """(problems, notes, number of cases checked)."""
    checkers = _jsonschema_checker()
    check_file, check_case = checkers or (_minimal_file, _minimal_case)
    notes = [] if checkers else ["jsonschema is not installed: using the built-in minimal check"]
    decisions = decision_ids()
    problems: List[str] = []
    ids: List[Tuple[str, str, str]] = []
    raws: List[Dict[str, Any]] = []
    # "$schema" is required in this repository's own case files only, not in another --cases-dir
    expected_schema = schema_id() if cases_dir.resolve() == CASES_DIR.resolve() else None
    for path, doc in read_case_files(cases_dir):
        problems += check_file(doc, str(path)) + _schema_key(doc, str(path), expected_schema)
        group = doc.get("group", "") if isinstance(doc, dict) else ""
        for case in doc.get("cases", []) if isinstance(doc, dict) else []:
            if isinstance(case, dict) and isinstance(case.get("id"), str):
                where = f"{path.name}: {case['id']}"
                ids.append((case["id"], group or path.stem, where))
                raws.append(case)
                problems += _case_rules(case, where, decisions)
    generated = generated_cases() if with_matrix else []
    if generated is None:
        notes.append("the committed security matrix (conformance/security/cases/) is missing: not checked")
        generated = []
    elif with_matrix:
        problems += [f"{GENERATED_SOURCE}/{problem}" for problem in matrix_differences()]
    for index, case in enumerate(generated):
        where = f"{GENERATED_SOURCE}[{index}]: {case.get('id', '?')}"
        problems += check_case(case, where) + _case_rules(case, where, decisions)
        if isinstance(case.get("id"), str):
            ids.append((case["id"], "", where))
            raws.append(case)
    problems += _id_rules(ids, retired_ids())
    if with_matrix and generated and cases_dir.resolve() == CASES_DIR.resolve():
        problems += [f"traceability: {problem}" for problem in traceability.problems(raws)]
    return problems, notes, len(ids)
