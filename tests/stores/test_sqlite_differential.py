"""Random command sequences (hypothesis) on the filesystem store and the SQLite store: every result equal, byte
for byte, after every step (D-STORE-INTERFACE). The paths mix files, folders, trailing slashes, paths through
files, non-ASCII names and the root; the texts mix CRLF, repeats and empty files, so every refusal is met too."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any, Dict, List

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from refmem import Limits, MemoryHandler
from refmem.stores.sqlite import SqliteStore

PATHS = [
    "/memories", "/memories/", "/memories/a.md", "/memories/a.md/", "/memories/a.md/q", "/memories/d", "/memories/d/",
    "/memories/d/x.md", "/memories/d/e", "/memories/d/e/y.md", "/memories/d/e/f/z.md", "/memories/\u00e9t\u00e9.md",
    "/memories/d-e", "/memories/d0", "/memories/d.e/x.md", "/memories/.hidden/h.md", "/memories/node_modules/m.js",
]
TEXTS = ["", "x\n", "x\ny\nx\n", "a\r\nb\r\n", "alpha\nbeta", "\u00e9\n" * 3]

paths = st.sampled_from(PATHS)
texts = st.sampled_from(TEXTS)
commands = st.one_of(
    st.builds(lambda p: {"command": "view", "path": p}, paths),
    st.builds(lambda p, a, b: {"command": "view", "path": p, "view_range": [a, b]}, paths,
              st.integers(-1, 4), st.integers(-1, 4)),
    st.builds(lambda p, t: {"command": "create", "path": p, "file_text": t}, paths, texts),
    st.builds(lambda p, o, n: {"command": "str_replace", "path": p, "old_str": o, "new_str": n}, paths,
              st.sampled_from(["x", "x\n", "a\r\nb", "alpha", "zz", "\u00e9"]), texts),
    st.builds(lambda p, line, t: {"command": "insert", "path": p, "insert_line": line, "insert_text": t}, paths,
              st.integers(-1, 4), texts),
    st.builds(lambda p: {"command": "delete", "path": p}, paths),
    st.builds(lambda o, n: {"command": "rename", "old_path": o, "new_path": n}, paths, paths),
)


def assert_same_results(on_disk: MemoryHandler, in_database: MemoryHandler, sequence: List[Dict[str, Any]]) -> None:
    """Every step's result the same over both handlers; a listing cut at the cap keeps as many lines, whichever
    entries (D-STORE-SQL-LIST-CAP). The PostgreSQL differential test runs its sequences through this too."""
    for step, command in enumerate(sequence):
        expected, got = on_disk.execute(command), in_database.execute(command)
        if "[Listing truncated at" in expected.output:
            assert expected.output.count("\n") == got.output.count("\n"), (step, command)
            continue
        assert expected == got, (step, command)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(commands, min_size=20, max_size=60), st.sampled_from([{}, {"limits": Limits(max_listing_entries=3)}]))
def test_random_sequences_read_the_same_on_both_stores(sequence: List[Dict[str, Any]], options: Dict[str, Any]) -> None:
    where = Path(tempfile.mkdtemp(prefix="refmem-differential-"))
    store = SqliteStore(where / "m.db")
    on_disk = MemoryHandler(where / "memories", **options)
    try:
        assert_same_results(on_disk, MemoryHandler(store, **options), sequence)
    finally:
        on_disk.close()
        store.close()
        shutil.rmtree(where)
