"""What a view shows (refmem/view.py), through its three ways to a page: they must agree.

A file's page is built from its text in memory (the one-join fast path for a whole file that fits, a
window otherwise) or from streamed bytes (files over a megabyte, whose chunks a store cuts as it
likes). The conformance cases pin the strings on one way each; these tests check that every way gives
the same page for the same file, wherever the store cuts its chunks, and what a listing keeps and hides.
"""

from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from refmem import Limits
from refmem import _text as text_module
from refmem._text import ViewWindow, split_lines
from refmem._view import file_page, listing, streamed_page
from refmem.problems import DIR, FILE
from refmem.store_protocol import Listed

PATH = "/memories/f.md"
LINE = st.text(alphabet=st.sampled_from("ab \t€😀\r"), max_size=40)
TEXT = st.lists(LINE, max_size=30).map("\n".join) | st.lists(LINE, max_size=30).map(lambda ls: "\n".join(ls) + "\n")


def cut(data: bytes, sizes: Sequence[int]) -> List[bytes]:
    """`data` in chunks of the given sizes (then the rest), as a store might hand them over."""
    chunks, at = [], 0
    for size in sizes:
        chunks.append(data[at : at + size])
        at += size
    return chunks + [data[at:]]


RANGES = st.none() | st.tuples(st.integers(-2, 35), st.integers(-2, 35)).map(list)
LIMITS = st.sampled_from([Limits(), Limits(max_view_chars=25), Limits(max_view_chars=1)])


@settings(max_examples=400, deadline=None)
@given(TEXT, RANGES, st.lists(st.integers(0, 7), max_size=12), LIMITS)
def test_streamed_and_in_memory_pages_agree(text: str, view_range: Optional[List[int]], sizes: List[int],
                                            limits: Limits) -> None:
    """Wherever the chunks are cut (inside a multi-byte character, between \\r and \\n), the page is the same."""
    in_memory = file_page(PATH, text, view_range, limits)
    streamed = streamed_page(PATH, iter(cut(text.encode("utf-8"), sizes)), view_range, limits)
    assert streamed == in_memory


@settings(max_examples=300, deadline=None)
@given(TEXT, LIMITS)
def test_the_whole_file_fast_path_gives_the_page_a_full_range_gives(text: str, limits: Limits) -> None:
    whole = file_page(PATH, text, None, limits)
    if split_lines(text):
        ranged = file_page(PATH, text, [1, -1], limits)
        head, _, body = whole.output.partition("\n")
        assert ranged.output.partition("\n")[0] == head
        # the pages differ at most in their last line, the note that says how to see more
        assert ranged.output.split("\n")[:-1] == whole.output.split("\n")[:-1] or ranged == whole


def item(relative: str, kind: str = FILE, size: int = 3) -> Listed:
    return Listed(tuple(relative.split("/")), kind, size)


def test_a_listing_keeps_the_stores_order_and_filters_files_only() -> None:
    found = [item("b", DIR, 0), item("b/x.txt"), item("b/y.md"), item("a.md", FILE, 2048)]
    shown = listing("/memories", found, False, lambda parts: parts[-1].endswith(".md"))
    lines = shown.output.split("\n")[1:]
    shown_paths = [line.split("\t")[1] for line in lines]
    assert shown_paths == ["/memories", "/memories/b/", "/memories/b/y.md", "/memories/a.md"]
    assert lines[-1].split("\t")[0] == "2.0K"
    assert not shown.is_error


def test_a_truncated_listing_ends_with_a_note_that_counts_what_was_listed() -> None:
    found = [item(f"n{i}.md") for i in range(4)]
    whole = listing("/memories/d", found, False)
    cut_short = listing("/memories/d", found, True)
    assert cut_short.output.startswith(whole.output + "\n")
    note = cut_short.output[len(whole.output) + 1 :]
    assert "\n" not in note and "4" in note
    assert listing("/memories/d", found, False, lambda parts: False).output.count("\n") == 1


def test_an_empty_folder_lists_itself_alone() -> None:
    header, line = listing("/memories/e", [], False).output.split("\n")
    assert line == "4.0K\t/memories/e" and "/memories/e" in header


def test_pages_are_bounded_by_the_budget_whatever_the_file() -> None:
    limits = Limits(max_view_chars=100)
    for text in ("x" * 10_000, "a\n" * 10_000, "€" * 5000 + "\n"):
        page: Tuple[str, bool] = file_page(PATH, text, None, limits)
        body = page[0].split("\n", 1)[1]
        numbered = [line for line in body.split("\n") if line[:6].strip().isdigit()]
        assert sum(len(line) for line in numbered) <= 100 + 7 * len(numbered)


# --- the work of a first view of a large file is bounded by the page, not the file --------------------


def _lines_made(monkeypatch: pytest.MonkeyPatch) -> List[int]:
    """Record how many lines every split of a text into lines makes (refmem._text.split_lines)."""
    made: List[int] = []
    original = text_module.split_lines

    def counting(content: str) -> List[str]:
        lines = original(content)
        made.append(len(lines))
        return lines

    monkeypatch.setattr(text_module, "split_lines", counting)
    return made


@pytest.mark.parametrize("size", [256 * 1024, 1024 * 1024 - 1])
def test_a_whole_view_of_a_large_file_makes_only_the_lines_its_page_can_show(
    monkeypatch: pytest.MonkeyPatch, size: int
) -> None:
    """The page shows at most max_view_chars characters, about 750 lines of 80: the file's other lines are
    counted, never made into strings (before: every line of the file was split out, twice)."""
    limits = Limits()
    n_lines = size // 80
    content = ("y" * 79 + "\n") * n_lines
    made = _lines_made(monkeypatch)
    page = file_page(PATH, content, None, limits)
    last = (limits.max_view_chars + 1) // 87  # a numbered line: 7 + 79 characters and a newline
    assert page.output.rsplit("\n", 1)[1].startswith(f"[Output truncated after line {last} of {n_lines}.")
    # the lines within reach of the page: those starting in its first max_view_chars + 1 characters
    assert sum(made) <= (limits.max_view_chars + 1) // 80 + 1, made


def test_a_streamed_view_keeps_its_page_without_python_work_per_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """Streamed (files over a megabyte), the lines of the page are kept in bulk: the line-by-line path runs
    only for a line cut by a chunk's end (before: once per line shown, about 750 times)."""
    calls = {"n": 0}
    original = ViewWindow._end_line

    def counting(window: ViewWindow) -> None:
        calls["n"] += 1
        original(window)

    monkeypatch.setattr(ViewWindow, "_end_line", counting)
    data = (b"z" * 79 + b"\n") * 30_000  # 2.4 MB
    chunks = [data[at : at + (1 << 20)] for at in range(0, len(data), 1 << 20)]
    page = streamed_page(PATH, iter(chunks), None, Limits())
    assert page.output.rsplit("\n", 1)[1].startswith("[Output truncated after line 689 of 30000.")
    assert calls["n"] <= len(chunks) + 1
