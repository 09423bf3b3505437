"""The OpenClaw fuzzer as a plug-in of the shared one: its decoder, its oracles over the shared session, and its
findings as shared finding files that refmem-fuzz reads, validates and replays like any other. Seeded runs,
counted in inputs: nothing here depends on timing."""

from __future__ import annotations

import json
import pathlib
import random
from typing import Any, List, Optional, Set

import pytest
from refmem_fuzz.harness import Options
from refmem_fuzz.harnesses import HARNESSES
from refmem_fuzz.replay import replay

from refmem_fuzz import cli, engine_random, harnesses, minimise, openclaw, openclaw_cli
from refmem_harness import finding as finding_files
from refmem_harness.oracles import check_result
from refmem_harness.sequence_layout import Layout
from refmem_harness.targets import StepResult

ROOT = pathlib.Path(__file__).resolve().parents[2]
COMMITTED = sorted((ROOT / "fuzz" / "findings" / "openclaw").glob("*.json"))
PLANTED = "python:openclaw_backends:openclaw_like"
OPENCLAWS_FINDINGS = {"leak:canary:memory_get", "leak:canary:memory_search", "leak:host-path:memory_get"}


def _fuzz(
    target: str, runs: int, work: pathlib.Path, findings: Optional[pathlib.Path] = None
) -> openclaw.OpenClawHarness:
    options = Options(target=target, step_timeout=None, seed=1, engine="random", findings_dir=findings, cost=False,
                      growth=False)
    harness = openclaw.OpenClawHarness(options, work)
    try:
        engine_random.fuzz(harness, None, runs, seed=1)
    finally:
        harness.close()
    return harness


def test_the_decoder_is_deterministic_bounded_and_names_a_tool_in_every_call() -> None:
    assert openclaw.decode(b"") == [{"tool": "memory_get", "path": "MEMORY.md"}]
    rng = random.Random(3)
    for _ in range(300):
        data = bytes(rng.randrange(256) for _ in range(rng.randrange(64)))
        calls = openclaw.decode(data)
        assert calls == openclaw.decode(data) and 1 <= len(calls) <= openclaw.MAX_CALLS
        assert all(call["tool"] in openclaw.TOOLS and None not in call.values() for call in calls)


def test_the_reference_survives_a_seeded_run(tmp_path: pathlib.Path) -> None:
    harness = _fuzz("refmem", 600, tmp_path)
    assert harness.runs == 600 and [found.oracle for found in harness.findings] == []
    assert harness.outcomes.get("ok", 0) > 50 and harness.outcomes.get("error", 0) > 50
    assert harness.outcomes.get("results", 0) > 10


def test_the_planted_backend_s_three_bugs_are_found_minimised_and_replay(tmp_path: pathlib.Path) -> None:
    folder = tmp_path / "findings"
    harness = _fuzz(PLANTED, 400, tmp_path / "work", folder)
    assert {found.oracle for found in harness.findings} == OPENCLAWS_FINDINGS
    files = sorted(folder.glob("*.json"))
    assert len(files) == 3
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert "CANARY-" not in text and str(tmp_path) not in text
        found = finding_files.load(path)
        assert found.harness == "openclaw" and found.target == PLANTED and len(found.commands) == 1
        assert found.oracle in {v.oracle for v in replay(found, PLANTED, None).violations}, path.name
        assert replay(found, "refmem", None).violations == [], path.name


@pytest.mark.parametrize("path", COMMITTED, ids=lambda path: path.name)
def test_the_committed_openclaw_findings_load_and_replay_where_they_did(path: pathlib.Path) -> None:
    """Converted to the shared format: the shared loader reads them; they reproduce on a backend with OpenClaw
    2026.9.6's planted bugs (on OpenClaw itself: tests/fuzz/test_committed_findings.py) and not on the reference."""
    found = finding_files.load(path)
    assert (found.harness, found.target) == ("openclaw", "openclaw")
    assert found.oracle in OPENCLAWS_FINDINGS
    assert found.oracle in {v.oracle for v in replay(found, PLANTED, None).violations}
    assert replay(found, "refmem", None).violations == []


def test_the_committed_findings_are_openclaws_three() -> None:
    assert {finding_files.load(path).oracle for path in COMMITTED} == OPENCLAWS_FINDINGS


def test_refmem_fuzz_runs_and_replays_the_plug_in(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "found"
    status = cli.main(["run", "--harness", "openclaw", "--target", PLANTED, "--engine", "random", "--runs", "300",
                       "--findings", str(folder), "--quiet"])
    assert status == 1 and len(list(folder.glob("*.json"))) == 3
    path = next(iter(sorted(folder.glob("leak-host-path-*.json"))))
    assert cli.main(["replay", str(path), "--target", PLANTED]) == 1
    assert "REPRODUCED: leak:host-path:memory_get" in capsys.readouterr().out
    assert cli.main(["replay", str(path)]) == 0  # the reference, not the file's target
    assert cli.main(["to-case", str(path)]) == 2  # its tools have cases of their own
    assert "a finding of the openclaw harness is not one" in capsys.readouterr().err
    raw = tmp_path / "crash-input"
    raw.write_bytes(b"\x00\x00\x01\x0d")
    assert cli.main(["replay", str(raw), "--raw", "--harness", "openclaw", "--target", PLANTED]) in (0, 1)
    assert "decoded by the openclaw harness" in capsys.readouterr().out


def test_the_openclaw_command_line(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "found"
    assert openclaw_cli.main(["--target", PLANTED, "--runs", "300", "--seed", "1", "--findings", str(folder)]) == 1
    out = capsys.readouterr().out
    assert "3 findings" in out and "outcomes: " in out
    files = [str(path) for path in sorted(folder.glob("*.json"))]
    assert openclaw_cli.main(["replay", *files, "--target", PLANTED]) == 1
    assert capsys.readouterr().out.count(": reproduced: ") == 3
    assert openclaw_cli.main(["replay", *files]) == 0
    not_a_finding = tmp_path / "x.json"
    not_a_finding.write_text("{}")
    assert openclaw_cli.main(["replay", str(not_a_finding)]) == 2
    assert openclaw_cli.main(["--target", "python:nowhere_at_all:make", "--runs", "1"]) == 2


# --- the shared pieces the plug-in needs ----------------------------------------------------------------


def test_a_plug_in_is_found_by_its_harness_name_and_registered_as_a_harness() -> None:
    assert harnesses.find("openclaw") is openclaw.PLUGIN and harnesses.find("sequence") is None
    assert "openclaw" in HARNESSES and "openclaw" in finding_files.HARNESS_NAMES
    # A finding file names its harness; the file format (harness/finding.py) lists every plug-in's name.
    assert set(harnesses.PLUGINS) == set(finding_files.HARNESS_NAMES) - {"sequence", "paths"}


def test_a_layout_takes_a_plug_in_s_fixtures_and_files_beside_the_canary_tree(tmp_path: pathlib.Path) -> None:
    layout = openclaw.PLUGIN.layout(tmp_path / "w")
    layout.reset()
    secret = (layout.case / "outside" / "secret.md").read_text()
    assert secret == f"{layout.canary} outside secret markdown\n"
    assert (layout.root / "memory" / "hard.md").stat().st_nlink == 2 and (layout.root / "memory" / "out").is_symlink()
    assert layout.outside_changes() == []
    plain = Layout(tmp_path / "p", hostile=True)
    assert plain.fixtures[0]["path"] == "notes.md" and plain.outside == {}


def test_a_host_path_the_call_held_is_not_a_leak_but_one_it_did_not_is(tmp_path: pathlib.Path) -> None:
    layout = openclaw.PLUGIN.layout(tmp_path / "w")
    said = f"no such file: {layout.root}/x.md"
    step = StepResult(said, True)
    assert [v.oracle for v in check_result(0, "memory_get", step, layout, False)] == ["leak:host-path:memory_get"]
    assert check_result(0, "memory_get", step, layout, False, sent=f'"{layout.root}/x.md"') == []
    quiet = StepResult("{}", False)
    found = check_result(0, "memory_get", quiet, layout, False, also=f'{{"text": "{layout.canary}"}}')
    assert [v.oracle for v in found] == ["leak:canary:memory_get"]


def test_the_minimiser_shortens_a_plug_in_s_paths_and_drops_its_optional_parameters() -> None:
    calls: List[Any] = [{"tool": "memory_get", "path": "a/memory/hard.md/b", "from": 2, "query": "x"}]
    tried: Set[str] = set()

    def still_fails(candidate: List[Any]) -> bool:
        tried.add(json.dumps(candidate))
        return "hard.md" in candidate[0]["path"]

    smallest = minimise.minimise(calls, still_fails, fields=openclaw.PLUGIN.fields)
    assert smallest == [{"tool": "memory_get", "path": "hard.md", "query": "x"}]
    memory_tool = [{"tool": "memory_get", "path": "a/memory/hard.md", "from": 2, "query": "x"}]
    assert minimise.minimise(calls, still_fails) == memory_tool  # its paths keep `/memories/` and a name
