"""The keyword searches' orders an index remembers (D-OPENCLAW-SEARCH-TERMS): the same answers as FTS5 asked
again, forgotten when the index changes, and bounded."""

from __future__ import annotations

import contextlib
import pathlib
import random
from typing import Iterator

import pytest

from refmem.openclaw import OpenClawMemory

from .openclaw_support import NOW, paths_of

WORDS = ["concerns", "kubernetes", "redis", "alice", "fatima", "rollback", "audit", "logging", "budget"]


def notes(folder: pathlib.Path, count: int, seed: int) -> None:
    rng = random.Random(seed)
    for number in range(count):
        target = folder / "memory" / f"n{number}.md"
        target.parent.mkdir(parents=True, exist_ok=True)
        lines = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12))) for _ in range(rng.randint(1, 6))]
        target.write_text("\n".join(lines) + "\n", encoding="utf-8")


@contextlib.contextmanager
def opened(folder: pathlib.Path, count: int, seed: int) -> Iterator[OpenClawMemory]:
    """`count` notes in `folder`, and the memory over them, closed after."""
    notes(folder, count, seed)
    memory = OpenClawMemory(folder, index="memory", clock=lambda: NOW)
    try:
        yield memory
    finally:
        memory.close()


QUERIES = [
    "what do we know about Fatima's concerns with Kubernetes",
    "concerns",
    "alice redis",
    "why did we roll back the audit logging",
    "budget",
]


def test_remembered_orders_give_the_answers_of_fts5(tmp_path: pathlib.Path) -> None:
    folder = tmp_path / "memories"
    notes(folder, 300, 1)
    remembering = OpenClawMemory(folder, index="memory", clock=lambda: NOW)
    plain = OpenClawMemory(folder, index="memory", clock=lambda: NOW)
    try:
        if remembering._open_index().mode != "fts5":
            pytest.skip("this SQLite has no FTS5")
        plain._open_index().ranked_terms = 0
        for _ in range(2):  # the second time from what was remembered
            for query in QUERIES:
                for max_results in (6, 50):
                    request = {"query": query, "maxResults": max_results, "minScore": 0}
                    assert remembering.search(request) == plain.search(request)
        assert remembering._open_index()._ranked[1]
        assert not plain._open_index()._ranked[1]
    finally:
        remembering.close()
        plain.close()


def test_a_change_forgets_them(tmp_path: pathlib.Path) -> None:
    folder = tmp_path / "memories"
    with opened(folder, 40, 2) as memory:
        assert "memory/new.md" not in paths_of(memory.memory_search("concerns", max_results=50, min_score=0))
        (folder / "memory" / "new.md").write_text("concerns " * 40 + "\n", encoding="utf-8")
        assert paths_of(memory.memory_search("concerns", max_results=50, min_score=0))[0] == "memory/new.md"


def test_they_are_bounded(tmp_path: pathlib.Path) -> None:
    with opened(tmp_path / "memories", 20, 3) as memory:
        index = memory._open_index()
        index.ranked_terms = 3
        for word in WORDS:
            memory.memory_search(word)
        assert len(index._ranked[1]) == 3
        assert list(index._ranked[1])[-1][0].lower().strip('"') == WORDS[-1]  # the most recent last
