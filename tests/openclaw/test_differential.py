"""The same top hits as OpenClaw: memory_search on a realistic generated workspace (512 notes, 125 queries:
names, topics, tools, file names, dates, conversational questions, paraphrases) against OpenClaw 2026.9.6's
own results, recorded once from its memory_search (tests/openclaw/data/, so CI needs no Node), and live when
OpenClaw is installed (conformance/adapters/openclaw/install.sh)."""

from __future__ import annotations

import json
import pathlib
import time
from typing import Any, Dict, List, Tuple

import pytest

from bench.openclaw_workspace import agreement, generate, write
from refmem.openclaw import OpenClawMemory

from .openclaw_support import openclaw_ready

RECORDED = pathlib.Path(__file__).resolve().parent / "data" / "openclaw-2026.9.6-search.json"


def hits(result: Dict[str, Any]) -> List[Tuple[str, int]]:
    return [(hit["path"], hit["startLine"]) for hit in result["results"]]


def ours(folder: pathlib.Path, queries: List[str], now: float) -> List[List[Tuple[str, int]]]:
    memory = OpenClawMemory(folder, clock=lambda: now, index="memory")
    try:
        return [hits(memory.memory_search(query)) for query in queries]
    finally:
        memory.close()


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    folder = tmp_path_factory.mktemp("differential") / "memories"
    folder.mkdir()
    write(folder, generate())
    return folder


def test_the_recording_is_of_this_workspace() -> None:
    recorded = json.loads(RECORDED.read_text(encoding="utf-8"))
    generated = generate()
    assert [entry["query"] for entry in recorded["queries"]] == generated.queries
    assert len(generated.files) >= 500 and len(generated.queries) >= 100


def test_same_top_hits_as_recorded_openclaw(workspace: pathlib.Path) -> None:
    recorded = json.loads(RECORDED.read_text(encoding="utf-8"))
    queries = [entry["query"] for entry in recorded["queries"]]
    theirs = [hits(entry) for entry in recorded["queries"]]
    found = agreement(ours(workspace, queries, recorded["now"]), theirs)
    assert found.overlap >= 0.95 and found.same_top >= 0.95, found


def test_scores_agree_with_recorded_openclaw(workspace: pathlib.Path) -> None:
    """Not only the order: the scores OpenClaw reports, to the last digits that matter."""
    recorded = json.loads(RECORDED.read_text(encoding="utf-8"))
    memory = OpenClawMemory(workspace, clock=lambda: recorded["now"], index="memory")
    close = 0
    compared = 0
    for entry in recorded["queries"]:
        result = memory.memory_search(entry["query"])
        for mine, theirs in zip(result["results"], entry["results"]):
            if (mine["path"], mine["startLine"]) == (theirs["path"], theirs["startLine"]):
                compared += 1
                close += (
                    abs(mine["score"] - theirs["score"]) < 1e-6 and abs(mine["textScore"] - theirs["textScore"]) < 1e-9
                )
    memory.close()
    assert compared > 400 and close / compared >= 0.95, (close, compared)


@pytest.mark.skipif(not openclaw_ready(), reason="OpenClaw is not installed (conformance/adapters/openclaw/install.sh)")
def test_same_top_hits_as_live_openclaw(workspace: pathlib.Path) -> None:
    from refmem_conformance.openclaw.runner import TOOLS, target_spec

    from refmem_harness.targets import open_target

    queries = generate().queries
    target = open_target(target_spec("openclaw"), workspace, 300, tools=TOOLS)
    try:
        deadline = time.monotonic() + 300
        while True:  # OpenClaw answers `unavailable`, or nothing, while it builds its index
            first = target.execute({"query": queries[0]}, "memory_search").result
            if isinstance(first, dict) and first.get("results") and not first.get("unavailable"):
                break
            assert time.monotonic() < deadline, "OpenClaw's search never answered"
            time.sleep(2)
        theirs = [hits(target.execute({"query": query}, "memory_search").result) for query in queries]
    finally:
        target.close()
    found = agreement(ours(workspace, queries, time.time()), theirs)
    assert found.overlap >= 0.95 and found.same_top >= 0.95, found
