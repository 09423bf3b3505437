"""The OpenClaw path fuzzer: finds nothing on the reference, finds what a broken reader does wrong,
and the committed OpenClaw findings are well formed and do not reproduce on the reference."""

from __future__ import annotations

import json
import pathlib
import random
from typing import Any, Dict

import pytest
from refmem_conformance.openclaw.runner import ReferenceTarget, Reply, Target

from refmem_fuzz import openclaw as harness

FINDINGS = pathlib.Path(__file__).resolve().parents[2] / "fuzz" / "findings" / "openclaw"


def test_reference_survives_a_seeded_run() -> None:
    target = ReferenceTarget()
    try:
        outcome = harness.fuzz(target, "refmem", seed=5, runs=3000)
    finally:
        target.close()
    assert outcome.runs == 3000
    assert [finding.oracle for finding in outcome.findings] == []
    assert outcome.classes.get("ok", 0) > 50 and outcome.classes.get("error", 0) > 50


def test_generation_is_reproducible() -> None:
    first = [harness.generate(random.Random(3)) for _ in range(1)]
    assert first == [harness.generate(random.Random(3)) for _ in range(1)]


class FollowsLinks(Target):
    """A reader that resolves the path the naive way and reports OS errors with their paths."""

    def __init__(self) -> None:
        self.root = pathlib.Path("/")

    def reset(self, root: pathlib.Path) -> None:
        self.root = root

    def execute(self, tool: str, tool_input: Any) -> Reply:
        if tool != "memory_get":
            return Reply("{}", False, {"results": []})
        path = self.root / str(tool_input.get("path", "")).lstrip("/")
        try:
            if path.is_fifo():
                raise OSError(6, "fifo", str(path))
            result: Dict[str, Any] = {"status": "ok", "text": path.read_text(errors="replace")}
        except (OSError, ValueError) as error:
            result = {"status": "error", "error": f"{error}: {path}"}
        return Reply(json.dumps(result), result["status"] == "error", result)


def test_finds_the_leaks_of_a_naive_reader(tmp_path: pathlib.Path) -> None:
    outcome = harness.fuzz(FollowsLinks(), "naive", seed=1, runs=1500, findings_dir=tmp_path)
    oracles = {finding.oracle for finding in outcome.findings}
    assert {"leak:canary:memory_get", "leak:host-path:memory_get"} <= oracles
    files = sorted(tmp_path.glob("*" + harness.SUFFIX))
    assert len(files) == len(oracles)
    for name in files:
        data = json.loads(name.read_text())
        assert data["format"] == harness.FORMAT and data["target"] == "naive"
        assert "CANARY-" not in name.read_text() and str(tmp_path) not in name.read_text()
        assert harness.replay(name, FollowsLinks()), name
        assert harness.replay(name, ReferenceTarget()) == [], name


@pytest.mark.parametrize("path", sorted(FINDINGS.glob("*" + harness.SUFFIX)), ids=lambda path: path.name)
def test_committed_openclaw_findings_do_not_reproduce_on_the_reference(path: pathlib.Path) -> None:
    data = json.loads(path.read_text())
    assert data["format"] == harness.FORMAT and data["target"] == "openclaw"
    assert data["oracle"].startswith(("leak:", "hang:", "crash:", "escape:"))
    assert harness.replay(path, ReferenceTarget()) == []
