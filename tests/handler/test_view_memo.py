"""Remembered pages (refmem/viewcache.py): a hit is proven by the bytes, never assumed.

The handler remembers a small file's rendered view together with the bytes it was made from. These
tests attack that memo: content changed in place with the size, the times and the inode kept; files
swapped; ranges, CRLF and non-UTF-8 content; every answer must equal a handler that remembers nothing.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import List, Optional, Tuple

from hypothesis import given, settings
from hypothesis import strategies as st
from memory_support import Memory

from refmem import Limits, MemoryHandler
from refmem._viewcache import ViewCache
from refmem.messages import Result, render


def view(handler: MemoryHandler, path: str, view_range: Optional[Tuple[int, int]] = None) -> Result:
    command: dict = {"command": "view", "path": path}
    if view_range is not None:
        command["view_range"] = list(view_range)
    return handler.execute(command)


def rewrite_in_place(path: Path, data: bytes) -> None:
    """Overwrite without a new inode, then put the old times back: what a timestamp cache would miss."""
    before = path.stat()
    with open(path, "r+b") as handle:
        handle.write(data)
        handle.truncate(len(data))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def viewed_note(memory: Memory, data: bytes) -> Path:
    """/memories/note.md holding `data`, after one successful view of it."""
    note = memory.put("note.md", data)
    first = memory.run(command="view", path="/memories/note.md")
    assert not first.is_error and data.decode().split("\n")[0] in first.output
    return note


def test_content_changed_in_place_with_the_same_size_and_times_is_seen(memory: Memory) -> None:
    note = viewed_note(memory, b"alpha\nbeta\n")
    inode = note.stat().st_ino
    rewrite_in_place(note, b"gamma\ndelta")
    rewrite_in_place(note, b"gamma\ndelt\n")  # same size as the original, same mtime
    assert note.stat().st_ino == inode and note.stat().st_size == len(b"alpha\nbeta\n")
    second = memory.run(command="view", path="/memories/note.md")
    assert "gamma" in second.output and "alpha" not in second.output
    assert second == memory.with_options(view_cache_bytes=0).run(command="view", path="/memories/note.md")


def test_a_remembered_page_is_not_reused_after_the_file_becomes_unreadable(memory: Memory) -> None:
    note = viewed_note(memory, b"ok\n")
    note.write_bytes(b"\xff\xfe\n")  # not UTF-8 now
    assert memory.run(command="view", path="/memories/note.md") == render("not_utf8", path="/memories/note.md")
    os.link(note, memory.base / "elsewhere")  # a second name: refused, whatever was remembered
    assert memory.run(command="view", path="/memories/note.md") == render("path_hard_linked", path="/memories/note.md")


def test_the_walk_runs_on_every_view_even_when_a_page_is_remembered(memory: Memory) -> None:
    outside = memory.base / "outside"
    outside.mkdir()
    memory.put("d/note.md", b"inside\n")
    (outside / "note.md").write_bytes(b"inside\n")  # the same bytes: a tempting hit
    assert not memory.run(command="view", path="/memories/d/note.md").is_error
    (memory.root / "d").rename(memory.base / "moved")
    (memory.root / "d").symlink_to(outside)
    assert memory.run(command="view", path="/memories/d/note.md") == render("view_missing", path="/memories/d/note.md")


CHUNKS = ["a", "b\n", "\r\n", "é", "\n", "x" * 30, "\t", "\r"]


@settings(max_examples=120, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.lists(st.sampled_from(CHUNKS), max_size=40).map("".join),
            st.one_of(st.none(), st.tuples(st.integers(-1, 12), st.integers(-2, 14))),
            st.booleans(),
        ),
        min_size=1,
        max_size=12,
    ),
    st.integers(min_value=20, max_value=400),
)
def test_remembering_never_changes_an_answer(
    tmp_path_factory, steps: List[Tuple[str, Optional[Tuple[int, int]], bool]], budget: int
) -> None:
    """A handler that remembers pages and one that remembers nothing answer every view alike."""
    root = tmp_path_factory.mktemp("memo") / "memories"
    root.mkdir()
    limits = Limits(max_view_chars=budget)
    remembering = MemoryHandler(root, limits=limits, track_access=False)
    forgetting = MemoryHandler(root, limits=limits, track_access=False, view_cache_bytes=0)
    note = root / "note.md"
    for content, view_range, in_place in steps:
        data = content.encode("utf-8")
        if in_place and note.exists():
            rewrite_in_place(note, data)
        else:
            note.write_bytes(data)
        for _ in range(2):  # the second view of the same bytes is the remembered one
            assert view(remembering, "/memories/note.md", view_range) == view(
                forgetting, "/memories/note.md", view_range
            )


def test_cache_hits_need_identical_bytes() -> None:
    cache = ViewCache(1 << 20)
    result = Result("page", False)
    cache.put("k", b"abc", result)
    assert cache.get("k", b"abc") is result
    assert cache.get("k", b"abd") is None
    assert cache.get("other", b"abc") is None


def test_cache_stays_within_its_bound_and_forgets_the_oldest_first() -> None:
    cache = ViewCache(16 * 1000)
    for i in range(100):
        cache.put(i, bytes([i]) * 400, Result("x" * 400, False))
        assert cache.used_bytes <= cache.max_bytes
    assert cache.get(0, bytes([0]) * 400) is None
    assert cache.get(99, bytes([99]) * 400) is not None
    assert len(cache) == 16000 // 800


def test_cache_refuses_entries_over_a_sixteenth_and_a_zero_bound_remembers_nothing() -> None:
    cache = ViewCache(1600)
    cache.put("big", b"x" * 60, Result("y" * 60, False))
    assert len(cache) == 0
    off = ViewCache(0)
    off.put("k", b"", Result("", False))
    assert len(off) == 0 and off.get("k", b"") is None


def test_non_ascii_results_are_counted_at_four_bytes_a_character() -> None:
    cache = ViewCache(16 * 100)
    cache.put("k", b"", Result("é" * 25, False))
    assert cache.used_bytes == 100
