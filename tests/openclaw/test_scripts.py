"""File-name words in every script rank as OpenClaw 2026.9.6 ranks them (D-OPENCLAW-SEARCH-SCRIPTS).

OpenClaw's path search over `unicode61` runs a second plan for a query with non-ASCII words: each such
word must be a substring of the path (NFC, any case) and the ASCII words match through FTS5; a plan
without ASCII words scores every path it finds 1. The expected answers below are OpenClaw's under that
rule (the issue's measured cases: `zoë` in `zoë-9.md` and `王伟` in `王伟-109.md` score 1.0, a
conversational question naming `佐藤花子` finds that person's notes); the same workspace is compared
with OpenClaw itself when it is installed (conformance/adapters/openclaw/install.sh)."""

from __future__ import annotations

import pathlib
import time
from typing import Any, Dict, List, Tuple

import pytest

from refmem.openclaw import OpenClawMemory
from refmem.openclaw.index import Index
from refmem.openclaw.search import path_plans

from .openclaw_support import NOW, openclaw_ready, write

FILES = {
    # The bodies never name the file's person: only the path search can find them.
    "memory/people/zoë-9.md": "Likes climbing and green tea.\n",
    "memory/people/zoë-chen.md": "Works on the billing dashboard.\n",
    "memory/people/王伟-109.md": "Owns the payments rollout.\n",
    "memory/people/佐藤花子-3.md": "Talked about webhooks on Monday.\n",
    "memory/people/佐藤花子-4.md": "Met for the quarterly review.\n",
    "memory/people/josé-2.md": "Budget questions for the offsite.\n",
    "memory/people/bob-1.md": "Stripe billing migration notes.\n",
    "memory/people/Ørsted-5.md": "Energy contract renewal.\n",
    "memory/people/김민준-7.md": "Design review follow-ups.\n",
}

# (query, the paths OpenClaw returns in order, the score of each)
EXPECTED: List[Tuple[str, List[Tuple[str, float]]]] = [
    ("zoë", [("memory/people/zoë-9.md", 1.0), ("memory/people/zoë-chen.md", 1.0)]),
    ("ZOË", [("memory/people/zoë-9.md", 1.0), ("memory/people/zoë-chen.md", 1.0)]),
    ("王伟", [("memory/people/王伟-109.md", 1.0)]),
    ("josé", [("memory/people/josé-2.md", 1.0)]),
    ("ørsted", [("memory/people/Ørsted-5.md", 1.0)]),
    ("김민준", [("memory/people/김민준-7.md", 1.0)]),
    ("花子", [("memory/people/佐藤花子-3.md", 1.0), ("memory/people/佐藤花子-4.md", 1.0)]),
    (
        "what did 佐藤花子 say about Stripe",
        [("memory/people/佐藤花子-3.md", 1.0), ("memory/people/佐藤花子-4.md", 1.0)],
    ),
]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    case = tmp_path_factory.mktemp("scripts")
    for relative, text in FILES.items():
        write(case, relative, text)
    return case / "memories"


def found(result: Dict[str, Any]) -> List[Tuple[str, float]]:
    return [(hit["path"], round(hit["score"], 6)) for hit in result["results"]]


@pytest.mark.parametrize("index", ["memory", "python"])
def test_non_ascii_file_names_rank_as_openclaw_ranks_them(workspace: pathlib.Path, index: str) -> None:
    memory = OpenClawMemory(workspace, clock=lambda: NOW, index="memory")
    if index == "python":  # the index that runs where SQLite has no FTS5
        memory._index = Index.in_memory({"format": "x"}, None, mode="python")
        memory.refresh()
    try:
        differences = [
            (query, found(memory.memory_search(query)), wanted)
            for query, wanted in EXPECTED
            if found(memory.memory_search(query)) != wanted
        ]
    finally:
        memory.close()
    assert differences == []


def test_the_plans_of_a_query() -> None:
    """ASCII queries keep one plan (no extra cost); a non-ASCII word becomes a substring of the path,
    in its NFC and its NFD form, beside the ASCII words' FTS5 expression."""
    assert [plan.substrings for plan in path_plans("alice chen")] == [()]
    plans = path_plans("zoë chen")
    assert plans[0].substrings == ()
    assert [(plan.expression, plan.substrings) for plan in plans[1:]] == [
        ('"chen"', ("zoë",)),
        ('"chen"', ("zoe\u0308",)),
    ]
    assert [(plan.expression, plan.substrings) for plan in path_plans("王伟")[1:]] == [(None, ("王伟",))]


@pytest.mark.skipif(not openclaw_ready(), reason="OpenClaw is not installed (conformance/adapters/openclaw/install.sh)")
def test_same_answers_as_live_openclaw(workspace: pathlib.Path) -> None:
    from refmem_conformance.openclaw.runner import TOOLS, target_spec

    from refmem_harness.targets import open_target

    target = open_target(target_spec("openclaw"), workspace, 300, tools=TOOLS)
    try:
        deadline = time.monotonic() + 300
        while True:
            first = target.execute({"query": "zoë"}, "memory_search").result
            if isinstance(first, dict) and first.get("results") and not first.get("unavailable"):
                break
            assert time.monotonic() < deadline, "OpenClaw's search never answered"
            time.sleep(2)
        theirs = [found(target.execute({"query": query}, "memory_search").result) for query, _ in EXPECTED]
    finally:
        target.close()
    memory = OpenClawMemory(workspace, index="memory")
    try:
        ours = [found(memory.memory_search(query)) for query, _ in EXPECTED]
    finally:
        memory.close()
    assert [pair for pair in zip(EXPECTED, ours, theirs) if pair[1] != pair[2]] == []


def test_a_name_whose_lower_case_is_two_characters_is_searched(tmp_path: pathlib.Path) -> None:
    """`İ` lowers to `i` and a combining dot: ordering such a path once raised (a crash any model could cause by
    naming a note); it sorts as `i` (its first lower-case character), beside the other paths."""
    write(tmp_path, "memory/İstanbul.md", "trip notes\n")
    write(tmp_path, "memory/b.md", "trip plans\n")
    write(tmp_path, "memory/j.md", "trip ideas\n")
    memory = OpenClawMemory(tmp_path / "memories", clock=lambda: NOW, index="memory")
    try:
        result = memory.memory_search("trip")
    finally:
        memory.close()
    assert [hit["path"] for hit in result["results"]] == ["memory/b.md", "memory/İstanbul.md", "memory/j.md"]
