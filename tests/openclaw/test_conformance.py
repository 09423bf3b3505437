"""The OpenClaw conformance cases are well formed and the step expectations read as documented (the runs
themselves, on the reference, planted backends and OpenClaw: tests/conformance/test_openclaw_runner.py)."""

from __future__ import annotations

import json
import pathlib

from refmem_conformance.openclaw import expect, runner
from refmem_conformance.openclaw.runner import load_cases

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
