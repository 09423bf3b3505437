"""The OpenClaw conformance cases: well formed, all passed by the reference, and the runner's verdicts
catch what they must (a leak, an escape, a wrong result) on deliberately broken targets."""

from __future__ import annotations

import json
import pathlib
from typing import Any, Dict

import pytest
from refmem_conformance.openclaw import expect, runner
from refmem_conformance.openclaw.runner import Case, Reply, Target, load_cases, run_case

from .support import openclaw_ready

DOC_FEATURES = {
    "get",
    "search",
    "paths",
    "window",
    "budget",
    "notice",
    "not-found",
    "symlink",
    "special-files",
    "hardlink",
    "encoding",
    "crlf",
    "input",
    "index",
    "chunking",
    "security",
}


def test_cases_are_well_formed() -> None:
    cases = load_cases()
    assert len(cases) >= 60
    notes = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "spec-notes.md").read_text(encoding="utf-8")
    for case in cases:
        raw = case.raw
        assert raw["basis"] in ("openclaw", "reference", "security"), case.id
        assert set(raw["features"]) <= DOC_FEATURES, case.id
        if raw["basis"] == "reference":
            assert f"**{raw['decision']}**" in notes, case.id
        assert raw["requires"] == ("fixtures" if raw["setup"].get("fixtures") else "portable"), case.id
        for step in raw["steps"]:
            assert "input" in step or "write" in step or "remove" in step, case.id


def test_the_loader_accepts_a_schema_key(tmp_path: pathlib.Path) -> None:
    """A case file may name a schema first ("$schema"); the loader reads the same cases either way."""
    plain = runner.CASES_DIR / "get-fs.json"
    document = json.loads(plain.read_text(encoding="utf-8"))
    (tmp_path / plain.name).write_text(
        json.dumps({"$schema": "https://example.org/openclaw-case.schema.json", **document}, indent=2),
        encoding="utf-8",
    )
    loaded = load_cases(tmp_path)
    assert [(case.id, case.group) for case in loaded] == [
        (case.id, case.group) for case in load_cases() if case.id.startswith("oc-get-fs-")
    ]
    assert loaded and all("$schema" not in case.raw for case in loaded)


def test_every_case_passes_on_the_reference(tmp_path: pathlib.Path) -> None:
    info, results = runner.run("refmem", [], str(tmp_path), 30.0)
    failed = {result.id: result.problems for result in results if not result.passed}
    assert failed == {}
    assert info["name"] == "refmem.openclaw"


class Leaky(Target):
    """Reads any path under the root the simple way: follows links, leaks the host path."""

    def __init__(self) -> None:
        self.root = pathlib.Path("/")

    def reset(self, root: pathlib.Path) -> None:
        self.root = root

    def execute(self, tool: str, tool_input: Any) -> Reply:
        if tool != "memory_get":
            return Reply("{}", False, {"results": []})
        target = self.root / str(tool_input.get("path", ""))
        try:
            text = target.read_text()
            result: Dict[str, Any] = {"status": "ok", "text": text.rstrip("\n"), "path": tool_input["path"]}
        except OSError as error:
            result = {"status": "error", "error": f"{error.strerror}: {target}"}
        return Reply(json.dumps(result), result["status"] == "error", result)


def case_by_id(case_id: str) -> Case:
    return next(case for case in load_cases() if case.id == case_id)


@pytest.mark.parametrize(
    ("case_id", "problem"),
    [
        ("oc-get-fs-001", "leak: the canary text"),
        ("oc-get-017", "leak: the canary text"),
        ("oc-get-010", "leak: a host path"),
        ("oc-get-001", "result.from: missing"),
    ],
)
def test_the_verdicts_catch_a_broken_target(tmp_path: pathlib.Path, case_id: str, problem: str) -> None:
    result = run_case(Leaky(), case_by_id(case_id), tmp_path, "CANARY-test")
    assert not result.passed
    assert any(problem in found for found in result.problems), result.problems


class Vandal(Leaky):
    """Writes outside the workspace on every call."""

    def execute(self, tool: str, tool_input: Any) -> Reply:
        (self.root.parent / "outside" / "secret.txt").write_text("changed")
        return super().execute(tool, tool_input)


def test_an_escape_is_caught(tmp_path: pathlib.Path) -> None:
    result = run_case(Vandal(), case_by_id("oc-get-001"), tmp_path, "CANARY-test")
    assert "escape: something outside the workspace changed" in result.problems


def test_partial_expectations() -> None:
    assert expect.mismatches({"a": 1}, {"a": 1, "b": 2}) == []
    assert expect.mismatches({"a": True}, {"a": 1}) != []
    assert expect.mismatches({"t": {"$prefix": "ab"}}, {"t": "abc"}) == []
    assert expect.mismatches({"t": {"$suffix": "x"}}, {"t": "abc"}) != []
    assert expect.mismatches([{"p": 1}], [{"p": 1}, {"p": 2}]) != []
    assert expect.mismatches({"n": {"$range": [0, 1]}}, {"n": 0.5}) == []
    step = {"is_error": False, "paths": ["a.md"], "absent": ["x"], "count": [1, 1]}
    assert expect.judge_step(step, False, {"results": [{"path": "a.md"}]}) == []
    assert len(expect.judge_step(step, True, {"results": [], "x": 1})) == 4


@pytest.mark.skipif(
    not openclaw_ready(), reason="OpenClaw is not installed (conformance/adapters/openclaw/install.sh) or Node < 24"
)
def test_openclaw_adapter_runs_the_cases(tmp_path: pathlib.Path) -> None:
    info, results = runner.run(
        "openclaw", ["oc-get-001", "oc-get-010", "oc-get-fs-005", "oc-search-001"], str(tmp_path), 120.0
    )
    by_id = {result.id: result for result in results}
    assert info["version"] == "2026.9.6"
    assert by_id["oc-get-001"].passed and by_id["oc-get-010"].passed and by_id["oc-search-001"].passed
    # OpenClaw reads a hard link to a file outside the workspace: the finding the report records.
    assert any("canary" in problem for problem in by_id["oc-get-fs-005"].problems)
