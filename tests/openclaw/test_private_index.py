"""The private search index (a database store's, an allow-listed or read-only workspace's) keeps at most
`private_index_cache_kib` of its pages in memory and the rest in SQLite's anonymous temporary file
(D-OPENCLAW-PRIVATE-INDEX): counted from SQLite's own account of the index (its cache bound, its pages),
never from the process's memory."""

from __future__ import annotations

import pathlib
import random

from refmem import MemoryHandler
from refmem.openclaw import OpenClawMemory
from refmem.openclaw.index import Index
from refmem.stores.sqlite import SqliteStore

from .openclaw_support import NOW, paths_of, write

WORDS = [f"w{n:04d}" for n in range(3000)]


def note(rng: random.Random, n: int) -> str:
    lines = [" ".join(rng.choice(WORDS) for _ in range(12)) for _ in range(160)]
    return f"# note {n}\n" + "\n".join(lines) + f"\nmarker{n}\n"


def test_a_database_stores_index_holds_its_cache_bound_in_memory(tmp_path: pathlib.Path) -> None:
    rng = random.Random(31)
    store = SqliteStore(str(tmp_path / "memory.db"))
    try:
        handler = MemoryHandler(store)
        total = 0
        for n in range(200):
            text = note(rng, n)
            total += len(text)
            result = handler.execute({"command": "create", "path": f"/memories/memory/n{n}.md", "file_text": text})
            assert not result.is_error, result.output
        memory = OpenClawMemory(store, limits={"private_index_cache_kib": 256}, clock=lambda: NOW)
        assert paths_of(memory.memory_search("marker17")) == ["memory/n17.md"]
        held = memory.index_held()
        assert total > 2 << 20
        assert held["in_memory"] == 0  # this SQLite keeps temporary databases in files
        assert held["cache_kib"] == 256
        assert held["database_bytes"] > 8 * 256 * 1024  # most of the index is not in the cache
        memory.close()
    finally:
        store.close()


def test_an_allow_listed_workspace_uses_the_same_bounded_index(case: pathlib.Path) -> None:
    write(case, "memory/a.md", "zebra crossing\n")
    memory = OpenClawMemory(case / "memories", allow=["memory/*.md"], limits={"private_index_cache_kib": 128})
    assert paths_of(memory.memory_search("zebra")) == ["memory/a.md"]
    assert memory.index_held()["cache_kib"] == 128


def test_the_private_index_is_no_file_another_process_can_name() -> None:
    index = Index.in_memory({"format": "x"}, None, cache_kib=64)
    assert index.conn.execute("PRAGMA database_list").fetchone()[2] == ""  # anonymous: no name in any folder
    assert index.held()["cache_kib"] == 64
    index.close()
