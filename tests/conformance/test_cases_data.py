"""The conformance cases as data: well-formed, uniquely named, and covering every decision and documented string.

These tests read files only; they never run a target. They guard the suite itself:
- every case file (and every generated case) validates against the case schema;
- IDs are unique across hand-written and generated cases, follow the naming rule, and reuse no retired ID;
- the security matrix is deterministic, fast and yields at least 1000 checks;
- every decision ID of docs/spec-notes.md is pinned by at least one case's `decision` field;
- every documented (`doc`) message template appears, filled in, in at least one expected output.
"""

from __future__ import annotations

import importlib.util
import json
import pathlib
import re
import sys
from typing import Any, Dict, Iterator, List, Tuple

import pytest
from cpu_clock_support import least_seconds
from refmem_conformance.documentation import may_be_must

REPO = pathlib.Path(__file__).resolve().parents[2]
CASES_DIR = REPO / "conformance" / "cases"
GENERATED_DIR = REPO / "conformance" / "security" / "cases"
SCHEMA_FILE = REPO / "conformance" / "schema" / "case.schema.json"
MATRIX_FILE = REPO / "conformance" / "security" / "matrix.py"
RETIRED_FILE = REPO / "conformance" / "RETIRED.md"
SPEC_NOTES = REPO / "docs" / "spec-notes.md"
MESSAGES_FILE = REPO / "refmem" / "messages.py"

MIN_MATRIX_CHECKS = 1000
HAND_WRITTEN_ID = re.compile(r"^(?P<group>[a-z][a-z0-9_]*(?:-[a-z0-9_]+)*)-(?P<number>[0-9]{3})$")


def _case_files() -> List[Tuple[pathlib.Path, Dict[str, Any]]]:
    return [(path, json.loads(path.read_text(encoding="utf-8"))) for path in sorted(CASES_DIR.glob("*.json"))]


def _hand_written() -> List[Dict[str, Any]]:
    return [case for _, doc in _case_files() for case in doc["cases"]]


def _load_matrix_module():
    return importlib.import_module("refmem_conformance.security.matrix")


def _generated() -> List[Dict[str, Any]]:
    return _load_matrix_module().generate()


def _all_cases() -> List[Dict[str, Any]]:
    return _hand_written() + _generated()


def _expected_texts(case: Dict[str, Any]) -> Iterator[str]:
    """Every literal expected text of a case: exact outputs, prefixes and `contains` fragments."""
    for step in case["steps"]:
        if "output" in step:
            yield step["output"]
        match = step.get("match") or {}
        if "prefix" in match:
            yield match["prefix"]
        for fragment in match.get("contains", []):
            yield fragment


def _validator(definition: str = ""):
    jsonschema = pytest.importorskip("jsonschema")
    if not SCHEMA_FILE.exists():
        pytest.skip("conformance/schema/case.schema.json is not there yet")
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    if definition:
        schema = {"$schema": schema.get("$schema"), "$ref": f"#/$defs/{definition}", "$defs": schema["$defs"]}
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


# --- shape -------------------------------------------------------------------------------------


def test_there_are_case_files() -> None:
    assert _case_files(), "no case files under conformance/cases/"


@pytest.mark.parametrize("path", sorted(CASES_DIR.glob("*.json")), ids=lambda p: p.name)
def test_case_file_validates_against_the_schema(path: pathlib.Path) -> None:
    validator = _validator()
    doc = json.loads(path.read_text(encoding="utf-8"))
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message[:300]}" for e in errors[:10])


@pytest.mark.parametrize("path", sorted(CASES_DIR.glob("*.json")), ids=lambda p: p.name)
def test_case_file_is_pretty_printed_utf8(path: pathlib.Path) -> None:
    raw = path.read_bytes()
    text = raw.decode("utf-8")
    assert text.endswith("\n")
    doc = json.loads(text)
    assert text.startswith('{\n  "$schema": '), "2-space indented, $schema first"
    assert list(doc)[:2] == ["$schema", "group"], "$schema first, then group"
    assert doc["group"] == path.stem, "one file per group, named after it"


def _committed_case_files() -> List[pathlib.Path]:
    return sorted(CASES_DIR.glob("*.json")) + sorted(GENERATED_DIR.glob("*.json"))


def test_every_committed_case_file_is_found() -> None:
    names = {path.name for path in _committed_case_files()}
    assert len(names) >= 50 and "view-file.json" in names and "sec-fs.json" in names


@pytest.mark.parametrize("path", _committed_case_files(), ids=lambda p: str(p.relative_to(REPO / "conformance")))
def test_case_file_names_the_case_schema_first(path: pathlib.Path) -> None:
    """Every committed case file, hand-written or generated, starts with "$schema": the case schema's $id."""
    schema_id = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))["$id"]
    assert schema_id.startswith("https://") and schema_id.endswith("/case.schema.json")
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert "$schema" in doc, f"{path.name} has no $schema"
    assert doc["$schema"] == schema_id, f"{path.name}: $schema {doc['$schema']!r} is not the case schema's $id"
    assert next(iter(doc)) == "$schema", f"{path.name}: $schema is not the first key"


def test_generated_cases_validate_against_the_schema() -> None:
    validator = _validator("case")
    failures = []
    for case in _generated():
        for error in validator.iter_errors(case):
            failures.append(f"{case['id']}: {list(error.absolute_path)}: {error.message[:200]}")
    assert not failures, "\n".join(failures[:20])


# --- IDs ---------------------------------------------------------------------------------------


def test_hand_written_ids_follow_their_group() -> None:
    for path, doc in _case_files():
        for case in doc["cases"]:
            match = HAND_WRITTEN_ID.match(case["id"])
            assert match, f"{path.name}: {case['id']} is not {{group}}-{{nnn}}"
            assert match.group("group") == doc["group"], f"{path.name}: {case['id']} is not in group {doc['group']}"


def test_ids_are_unique_across_hand_written_and_generated_cases() -> None:
    seen: Dict[str, int] = {}
    for case in _all_cases():
        seen[case["id"]] = seen.get(case["id"], 0) + 1
    duplicates = sorted(case_id for case_id, count in seen.items() if count > 1)
    assert not duplicates, duplicates[:20]


def test_generated_ids_are_sec_and_hand_written_ids_are_not() -> None:
    assert all(case["id"].startswith("sec-") for case in _generated())
    assert not any(case["id"].startswith("sec-") for case in _hand_written())


def test_no_retired_id_is_in_use() -> None:
    text = RETIRED_FILE.read_text(encoding="utf-8")
    retired = set(re.findall(r"^\|\s*`([a-z0-9][a-z0-9_.-]*)`\s*\|", text, flags=re.MULTILINE))
    in_use = {case["id"] for case in _all_cases()}
    assert not (retired & in_use), sorted(retired & in_use)


# --- the security matrix -----------------------------------------------------------------------


def test_matrix_yields_enough_checks() -> None:
    assert len(_generated()) >= MIN_MATRIX_CHECKS


def test_matrix_is_deterministic_and_fast() -> None:
    """Fast against a yardstick measured here and now, not the clock: generating the matrix costs less CPU time
    than ten JSON round trips of what it generates (it costs about one)."""
    module = _load_matrix_module()
    first = module.generate()
    assert first == module.generate()
    generating, round_trip = least_seconds([module.generate, lambda: json.loads(json.dumps(first))], rounds=3)
    shown = f"generate() took {generating * 1e3:.1f} ms, a round trip {round_trip * 1e3:.1f} ms"
    assert generating < 10 * round_trip, shown


def test_the_committed_matrix_is_exactly_the_generators_output(tmp_path: pathlib.Path) -> None:
    module = _load_matrix_module()
    assert module.differences() == [], "run: python -m refmem_conformance.security.matrix --write"
    # and the check notices a change: a copy with one expectation flipped differs
    for name, text in module.expanded_files().items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    flipped = tmp_path / "sec-ads.json"
    flipped.write_text(flipped.read_text(encoding="utf-8").replace('"is_error": true', '"is_error": false', 1))
    assert module.differences(tmp_path) == ["sec-ads.json: differs from the generator's output"]


def test_refusals_are_documented_exactly_where_the_documentation_asks() -> None:
    module = _load_matrix_module()
    asks = {"/memories/../x": "doc-reject-dotdot", "/memories/a\\..\\x": "doc-reject-dotdot",
            "/memories/%2e%2e/x": "doc-url-encoded", "/etc/passwd": "doc-prefix", "memories/x": "doc-prefix"}
    leaves_open = ["/memories/./x", "/memories//x", "/memories/NUL", "/memories/a.", "/memories/%252e%252e/x",
                   "/memories/....//x", "/memories_evil/x", "/memories/a\u202eb"]
    assert {payload: module.documented_refusal(payload) for payload in asks} == asks
    assert [payload for payload in leaves_open if module.documented_refusal(payload)] == []
    for case in module.generate():
        if case["basis"] == "doc":
            # must only where the documentation says MUST or states the behaviour; its "Consider these
            # protections" list (start with /memories, reject ../, watch for %2e%2e%2f, canonical form) is should
            level = "must" if may_be_must(case["cite"]) else "should"
            assert case["level"] == level and case["cite"], case["id"]
        else:
            assert case["level"] == "should" and case["decision"], case["id"]


def test_matrix_ids_come_from_data_keys() -> None:
    module = _load_matrix_module()
    data = module.load()
    expected = set()
    for family in data["families"]:
        slots = module.SLOTS if family["expect"] == "refused" else module.CONTAINED_SLOTS
        for entry in family["payloads"]:
            for command, argument in slots:
                expected.add(f"sec-{family['key']}-{entry['key']}-{command}-{argument}")
    for hazard in data.get("fs_hazards", []):
        for command, argument in module.SLOTS:
            expected.add(f"sec-fs-{hazard['key']}-{command}-{argument}")
    assert {case["id"] for case in module.generate()} == expected


def test_every_refused_payload_is_crossed_with_every_command_and_argument() -> None:
    module = _load_matrix_module()
    by_payload: Dict[str, set] = {}
    for case in module.generate():
        if case["id"].startswith("sec-fs-"):
            continue
        family_payload = case["id"].rsplit("-", 2)[0]
        by_payload.setdefault(family_payload, set()).add(tuple(case["id"].rsplit("-", 2)[1:]))
    data = module.load()
    for family in data["families"]:
        if family["expect"] != "refused":
            continue
        for entry in family["payloads"]:
            key = f"sec-{family['key']}-{entry['key']}"
            assert by_payload[key] == set(module.SLOTS), key


def test_payload_families_are_broad() -> None:
    data = _load_matrix_module().load()
    refused = [entry for family in data["families"] if family["expect"] == "refused" for entry in family["payloads"]]
    assert len(refused) >= 80
    keys = [(family["key"], entry["key"]) for family in data["families"] for entry in family["payloads"]]
    assert len(keys) == len(set(keys))


# --- coverage ----------------------------------------------------------------------------------


def _decision_ids() -> List[str]:
    return sorted(set(re.findall(r"\*\*(D-[A-Z0-9]+(?:-[A-Z0-9]+)*)\*\*", SPEC_NOTES.read_text(encoding="utf-8"))))


def test_spec_notes_have_decisions() -> None:
    assert len(_decision_ids()) >= 40


NOT_TOOL_BEHAVIOUR = (
    "D-SERVE-", "D-EXEC-", "D-STORE-", "D-SDK-", "D-DEPLOY-", "D-VERDICT-", "D-HARNESS-", "D-MCP-", "D-OPLOG",
    "D-PUBLIC-NAMES", "D-VENDOR-SET", "D-VIEW-LIST-RULES", "D-BASELINE-", "D-TRACE", "D-HOSTED-SHA256",
    "D-FIELD-", "D-CI-", "D-TEST-", "D-FINAL-READBACK", "D-FS-KEPT-FOLDER", "D-HOSTED-CLI",
)
"""Decisions about the reference's programs (`refmem serve`, `refmem exec`, `refmem mcp`, its command log), its
storage interface (stores, tenants, the change journal, where the listing rule is decided), its SDK tools (how they
run the handler), how it is packaged (public names, the vendored set) and the harness (how a verdict, the deployment
tier and the MCP target judge a backend) rather than the memory tool's behaviour: no tool input reaches them, so no
conformance case can pin them; their own tests do (tests/conformance/test_case_states.py, test_effect_classes.py, test_baseline_checks.py, test_traceability.py,
tests/programs/test_mcp.py, tests/programs/test_oplog.py, tests/project/test_public_names.py, tests/project/test_vendoring.py,
tests/stores/test_storage_contract.py, tests/conformance/test_field.py for the field's installer and history; how
this repository's CI runs its tests (D-CI-*) is .ci/run, tests/conftest.py and tests/conformance/test_deployment.py;
the hosted store's sha256 precondition is a store call, not a tool input:
tests/stores/test_hosted_profile.py; the hosted profile's options of exec and serve (D-HOSTED-CLI):
tests/stores/test_hosted_cli.py; the filesystem store's kept folder, which changes system calls and not results
(D-FS-KEPT-FOLDER): tests/filesystem/test_fewer_looks.py; the final-state check's readings (D-FINAL-READBACK):
tests/conformance/test_own_storage.py; how this repository's slow tests are made cheaper (D-TEST-*): the tests
themselves). The listing itself is pinned by the view-dir and hidden cases."""
OTHER_TOOL_PREFIX = "D-OPENCLAW-"
"""OpenClaw's workspace-memory tools have their own cases (conformance/openclaw/cases) and their own checks."""


HOSTED_CASES = REPO / "conformance" / "hosted" / "hosted.json"
"""The hosted-store profile's opt-in cases (D-HOSTED-*): run only against a hosted store, so kept apart."""


def test_every_decision_is_pinned_by_a_case() -> None:
    hosted = json.loads(HOSTED_CASES.read_text(encoding="utf-8"))["cases"]
    pinned = {case.get("decision") for case in [*_hand_written(), *hosted]}
    decisions = [d for d in _decision_ids() if not d.startswith(OTHER_TOOL_PREFIX)]
    missing = [d for d in decisions if d not in pinned and not d.startswith(NOT_TOOL_BEHAVIOUR)]
    assert not missing, f"decisions without a case: {missing}"


def test_every_decision_named_by_a_case_exists() -> None:
    known = set(_decision_ids()) | {"D-ECHO"}
    unknown = sorted({case["decision"] for case in _hand_written() if "decision" in case} - known)
    assert not unknown, unknown


def _doc_templates() -> Dict[str, str]:
    """The `doc` entries of refmem/messages.py's table (the module asks `_optional` for what a vendored copy may
    leave out, so it is imported as part of its package)."""
    module = importlib.import_module("refmem.messages")
    assert pathlib.Path(module.__file__ or "").resolve() == MESSAGES_FILE.resolve()
    return {key: message.template for key, message in module.MESSAGES.items() if message.basis == "doc"}


def _template_pattern(template: str) -> "re.Pattern[str]":
    parts = re.split(r"\{[a-z_]+\}", template)
    return re.compile("(?s)" + ".+?".join(re.escape(part) for part in parts))


def test_every_documented_string_appears_in_an_expected_output() -> None:
    texts = [text for case in _hand_written() for text in _expected_texts(case)]
    missing = []
    for key, template in _doc_templates().items():
        pattern = _template_pattern(template)
        if not any(pattern.search(text) for text in texts):
            missing.append(f"{key}: {template}")
    assert not missing, "documented strings no case expects:\n" + "\n".join(missing)


def test_documented_worked_examples_are_reproduced_exactly() -> None:
    listing = (
        "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items and "
        "node_modules:\n4.0K\t/memories\n1.5K\t/memories/customer_service_guidelines.xml\n2.0K\t/memories/refund_policies.xml"
    )
    file_view = (
        "Here's the content of /memories/customer_service_guidelines.xml with line numbers:\n     1\t<guidelines>\n"
        "     2\t<addressing_customers>\n"
    )
    texts = [text for case in _hand_written() for text in _expected_texts(case)]
    assert any(text.startswith(file_view) for text in texts)
    # the worked listing byte for byte, but for the folder's own size, which is the filesystem's: 4.0K on ext4
    # as in the documentation, 60 on tmpfs, 0 for du; a case pinning 4.0K failed correct backends on tmpfs
    worked = next(case for case in _hand_written() if case["id"] == "view-dir-001")["steps"][0]["match"]["regex"]
    for folder_size in ("4.0K", "60", "0", "4K"):
        assert re.fullmatch(worked, listing.replace("4.0K", folder_size, 1)), folder_size
    assert not re.fullmatch(worked, listing.replace("1.5K", "1536", 1))


# --- the cases' own consistency ------------------------------------------------------------------


def test_reference_cases_name_their_decision_and_must_cases_do_not_pin_wording_alone() -> None:
    for case in _hand_written():
        if case["basis"] == "reference":
            assert case.get("decision"), case["id"]


def test_mutating_cases_state_the_final_tree() -> None:
    mutating = {"create", "str_replace", "insert", "delete", "rename"}
    missing = []
    for case in _hand_written():
        succeeded = any(
            isinstance(step["input"], dict) and isinstance(step["input"].get("command"), str) and step["input"]["command"] in mutating and not step.get("is_error", False)
            for step in case["steps"]
        )
        if succeeded and "final" not in case:
            missing.append(case["id"])
    assert not missing, missing


def test_case_json_stays_small() -> None:
    sizes = {path.name: path.stat().st_size for path in CASES_DIR.glob("*.json")}
    # big.json holds the two cases that need about 1 MiB each (the 999,999-line and the write limit);
    # everything else stays under 1.2 MB together.
    assert sum(size for name, size in sizes.items() if name != "big.json") < 1_200_000
    assert sizes.get("big.json", 0) < 2_600_000


def test_there_are_enough_hand_written_cases() -> None:
    assert len(_hand_written()) >= 170
