"""Pure text helpers (`refmem._text`) against D-VIEW-SIZE, D-VIEW-LINES, D-VIEW-CRLF, D-VIEW-PAGINATE,
D-STR-COUNT and D-INSERT-SEMANTICS, plus the streaming view window against a naive reference."""

from __future__ import annotations

import math
import re
from typing import List, Optional, Tuple

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from refmem import _text as text

# --- human_size (D-VIEW-SIZE and the documentation's examples) -------------------------------------


@pytest.mark.parametrize(
    "size, shown",
    [
        (4096, "4.0K"),  # the documented directory size
        (1536, "1.5K"),  # documented listing example
        (2048, "2.0K"),  # documented listing example
        (5632, "5.5K"),  # documented example "5.5K"
        (1_258_291, "1.2M"),  # documented example "1.2M"
    ],
)
def test_human_size_documented_examples(size: int, shown: str) -> None:
    assert text.human_size(size) == shown


@pytest.mark.parametrize(
    "size, shown",
    [
        (0, "0B"),
        (1, "1B"),
        (512, "512B"),
        (1023, "1023B"),
        (1024, "1.0K"),
        (1025, "1.1K"),
        (1126, "1.1K"),
        (1127, "1.2K"),
        (10 * 1024 - 1, "10K"),  # 9.999K rounds up to 10.0: shown whole
        (10 * 1024, "10K"),
        (10_241, "11K"),
        (1023 * 1024, "1023K"),
        (1023 * 1024 + 1, "1.0M"),  # rounds up to 1024K: next unit
        (1_048_575, "1.0M"),
        (1_048_576, "1.0M"),
        (1_048_577, "1.1M"),
        (10 * 1024**2, "10M"),
        (1024**3, "1.0G"),
        (1024**4, "1.0T"),
        (1024**5, "1.0P"),
        (1024**6, "1.0E"),
        (5 * 1024**6, "5.0E"),
    ],
)
def test_D_VIEW_SIZE_edges(size: int, shown: str) -> None:
    assert text.human_size(size) == shown


_UNIT_POWER = {"B": 0, "K": 1, "M": 2, "G": 3, "T": 4, "P": 5, "E": 6}


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=0, max_value=2**62))
def test_human_size_rounds_up_and_stays_within_one_step(size: int) -> None:
    shown = text.human_size(size)
    match = re.fullmatch(r"(\d+)(?:\.(\d))?([BKMGTPE])", shown)
    assert match, shown
    whole, tenth, unit = match.groups()
    scale = 1024 ** _UNIT_POWER[unit]
    if unit == "B":
        assert tenth is None and int(whole) == size < 1024
        return
    value = int(whole) + (int(tenth) / 10 if tenth else 0)
    step = 0.1 if tenth is not None else 1
    assert (tenth is not None) == (value < 10)  # one decimal exactly below 10 units
    assert value * scale >= size  # never rounded down
    assert (value - step) * scale < size  # the smallest such figure
    assert int(whole) < 1024


@given(st.integers(min_value=0, max_value=2**50), st.integers(min_value=0, max_value=2**50))
def test_human_size_is_monotonic(a: int, b: int) -> None:
    def as_bytes(shown: str) -> float:
        match = re.fullmatch(r"([\d.]+)([BKMGTPE])", shown)
        assert match
        return float(match.group(1)) * 1024 ** _UNIT_POWER[match.group(2)]

    low, high = sorted((a, b))
    assert as_bytes(text.human_size(low)) <= as_bytes(text.human_size(high))


# --- split_lines and CRLF (D-VIEW-LINES, D-VIEW-CRLF) ----------------------------------------------


@pytest.mark.parametrize(
    "content, lines",
    [
        ("", []),
        ("\n", [""]),
        ("a", ["a"]),
        ("a\n", ["a"]),
        ("a\nb", ["a", "b"]),
        ("a\nb\n", ["a", "b"]),
        ("a\n\n", ["a", ""]),
        ("\n\n", ["", ""]),
        ("a\r\nb\r\n", ["a\r", "b\r"]),
        ("a\rb", ["a\rb"]),
        ("\u2028x\u0085y", ["\u2028x\u0085y"]),  # only \n splits
    ],
)
def test_D_VIEW_LINES_split_lines(content: str, lines: List[str]) -> None:
    assert text.split_lines(content) == lines


@pytest.mark.parametrize(
    "content, crlf",
    [
        ("", False),
        ("abc", False),
        ("\r", False),
        ("a\r\n", True),
        ("a\r\nb", True),
        ("a\r\nb\r\n", True),
        ("a\r\r\n", True),
        ("\r\n\r\n", True),
        ("a\r\nb\n", False),
        ("a\nb\r\n", False),
        ("a\n", False),
        ("a\rb\r", False),
    ],
)
def test_D_VIEW_CRLF_detection(content: str, crlf: bool) -> None:
    assert text.is_crlf(content) is crlf


# --- the streaming ViewWindow against a naive reference --------------------------------------------


def naive_window(data: bytes, first: int, last: Optional[int]) -> Tuple[int, bool, List[Tuple[int, str, int]]]:
    """Read everything, split per D-VIEW-LINES, strip CR per D-VIEW-CRLF, keep the requested lines."""
    content = data.decode("utf-8")
    pieces = content.split("\n")
    ended = len(pieces) - 1  # lines that end in "\n"
    if pieces[-1] == "":
        pieces.pop()
    newlines = content.count("\n")
    crlf = newlines > 0 and content.count("\r\n") == newlines
    lines = []
    for index, line in enumerate(pieces, start=1):
        if crlf and index <= ended:
            assert line.endswith("\r")
            line = line[:-1]
        lines.append(line)
    stop = len(lines) if last is None else min(last, len(lines))
    kept = [(n, lines[n - 1], len(lines[n - 1])) for n in range(first, stop + 1)]
    return len(lines), crlf, kept


def chunked(data: bytes, cuts: List[int]) -> List[bytes]:
    points = sorted({min(cut, len(data)) for cut in cuts})
    out, previous = [], 0
    for point in points:
        out.append(data[previous:point])
        previous = point
    out.append(data[previous:])
    return out


_pieces = st.sampled_from(["a", "b", "xyz", " ", "\n", "\r\n", "\r", "\u00e9", "\u65e5", "\U0001f600", "\t"])
_texts = st.one_of(
    st.lists(_pieces, max_size=60).map("".join),
    st.lists(st.sampled_from(["line", "\u00e9\u00e9", "long" * 20]), max_size=30).map(
        lambda words: "".join(word + "\r\n" for word in words)
    ),
    st.text(max_size=200),
)


def check_window(content: str, cuts: List[int], first: int, last: Optional[int], budget: int) -> None:
    data = content.encode("utf-8", "surrogatepass")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return
    n_lines, crlf, expected = naive_window(data, first, last)
    window = text.read_window(chunked(data, cuts), first, last, budget)
    assert window.n_lines == n_lines
    assert window.crlf is crlf
    # the window keeps a prefix of the requested lines, each with its full length and a prefix of its text
    assert len(window.lines) <= len(expected)
    for (number, kept, length), (n_want, full, len_want) in zip(window.lines, expected):
        assert number == n_want
        assert length == len_want
        assert full.startswith(kept)
    # ...and enough of them that the page is the same as the naive one
    assert text.fit_numbered(window.lines, budget) == text.fit_numbered(expected, budget)


@settings(max_examples=500, deadline=None)
@given(
    content=_texts,
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=8),
    first=st.integers(min_value=1, max_value=40),
    span=st.one_of(st.none(), st.integers(min_value=0, max_value=40)),
    budget=st.integers(min_value=8, max_value=200),
)
@example(content="x\r\ny\r\n", cuts=[2], first=1, span=None, budget=60)
def test_view_window_matches_naive(content: str, cuts: List[int], first: int, span: Optional[int], budget: int) -> None:
    last = None if span is None else first + span
    check_window(content, cuts, first, last, budget)


def test_view_window_every_chunking_of_a_crlf_text() -> None:
    content = "ab\r\n\u00e9\r\n\r\n\U0001f600x\r\nend"
    data = content.encode()
    for cut in range(len(data) + 1):
        for second in range(cut, len(data) + 1):
            check_window(content, [cut, second], 1, None, 100)


def test_D_VIEW_CRLF_cut_line_length_counts_the_shown_line() -> None:
    """A CRLF line is shown without its `\\r`; its reported length is that of the shown line."""
    data = b"a" * 50 + b"\r\nb\r\n"
    window = text.read_window([data], 1, None, 20)
    assert window.lines[0][0] == 1
    assert window.lines[0][2] == 50


def test_view_window_numbers_past_the_prefix_width_like_the_naive_reading() -> None:
    """Line 1,000,000 has a wider number: the bulk keeper hands it to the line-by-line path, once the narrow
    lines before it are kept, and takes no stretch of text per wide line."""
    data = b"ab\n" * 1_000_010
    first = 999_995
    chunks = [data[at : at + (1 << 20)] for at in range(0, len(data), 1 << 20)]
    for budget in (40, 200, 10_000):
        window = text.read_window(chunks, first, None, budget)
        assert window.n_lines == 1_000_010
        assert window.lines == [(n, "ab", 2) for n in range(first, first + len(window.lines))]
        page = text.fit_numbered(window.lines, budget, window.complete)
        assert page == text.fit_numbered([(n, "ab", 2) for n in range(first, 1_000_011)], budget)


class _CountedSlices(str):
    """A text that counts the characters sliced out of it (the work of keeping lines)."""

    sliced = 0

    def __getitem__(self, key):  # type: ignore[no-untyped-def]
        part = str.__getitem__(self, key)
        if isinstance(key, slice):
            _CountedSlices.sliced += len(part)
        return part


def test_view_window_takes_no_stretch_of_text_per_line_past_the_prefix_width() -> None:
    """Past line 999,999 the lines are numbered one by one, and the bulk keeper gives up before it looks at the
    text (before: it split a budget's worth of text for every such line, 8,573 times here: 3 s of CPU)."""
    window = text.ViewWindow(999_990, None, 60_000)
    _CountedSlices.sliced = 0
    window._feed_text(_CountedSlices("\n" * 1_100_000))
    result = window.finish()
    assert result.n_lines == 1_100_000 and result.lines[0] == (999_990, "", 0) and len(result.lines) == 8573
    assert _CountedSlices.sliced <= 2 * 60_000


def test_view_window_rejects_invalid_utf8_anywhere() -> None:
    with pytest.raises(ValueError):
        text.read_window([b"ok\n" * 10, b"\xff\n"], 1, 2, 100)
    with pytest.raises(ValueError):
        text.read_window([b"ok\n\xe2\x82"], 1, None, 100)  # truncated sequence at the end


def test_view_window_bom_is_text() -> None:
    window = text.read_window([b"\xef\xbb\xbfa\n"], 1, None, 100)
    assert window.lines == [(1, "\ufeffa", 2)]


def test_view_window_counts_lines_it_does_not_keep() -> None:
    data = b"x\n" * 5000
    window = text.read_window([data[i : i + 7] for i in range(0, len(data), 7)], 4999, None, 1000)
    assert window.n_lines == 5000
    assert [n for n, _, _ in window.lines] == [4999, 5000]


def test_view_window_memory_is_bounded_by_the_budget() -> None:
    window = text.read_window([b"y" * 100_000, b"\n", b"z" * 100_000], 1, None, 50)
    assert window.n_lines == 2
    assert sum(len(t) for _, t, _ in window.lines) <= 2 * 52
    assert window.lines[0][2] == 100_000


# --- insert_lines (D-INSERT-SEMANTICS) ------------------------------------------------------------


@pytest.mark.parametrize(
    "content, after, insert, result",
    [
        ("a\nb\n", 0, "x", "x\na\nb\n"),
        ("a\nb\n", 1, "x", "a\nx\nb\n"),
        ("a\nb\n", 2, "x", "a\nb\nx\n"),
        ("a\nb\n", 1, "x\n", "a\nx\nb\n"),  # a final \n in insert_text is optional
        ("a\nb\n", 1, "x\ny", "a\nx\ny\nb\n"),
        ("a\nb\n", 1, "", "a\n\nb\n"),  # "" inserts one empty line
        ("a\nb\n", 1, "\n", "a\n\nb\n"),  # and so does "\n"
        ("a\nb", 2, "x", "a\nb\nx"),  # the file keeps its missing final newline
        ("a\nb", 0, "x\n", "x\na\nb"),
        ("", 0, "x", "x"),  # an empty file takes insert_text's final-newline state
        ("", 0, "x\n", "x\n"),
        ("", 0, "", ""),  # one empty line without a newline: still an empty file
        ("", 0, "\n", "\n"),
        ("\n", 1, "x", "\nx\n"),
    ],
)
def test_D_INSERT_SEMANTICS_insert_lines(content: str, after: int, insert: str, result: str) -> None:
    assert text.insert_lines(content, after, insert) == result


@settings(max_examples=200, deadline=None)
@given(
    lines=st.lists(st.text(alphabet="ab\u00e9 ", max_size=4), max_size=6),
    final=st.booleans(),
    new=st.lists(st.text(alphabet="xy", max_size=3), min_size=1, max_size=3),
    new_final=st.booleans(),
    data=st.data(),
)
def test_insert_lines_adds_exactly_the_new_lines(lines, final, new, new_final, data) -> None:
    content = "\n".join(lines) + ("\n" if final and lines else "")
    assume(text.split_lines(content) == lines)
    # "x\n" and "x" are the same lines; so a trailing "" without a final newline is no extra line
    assume(new_final or new[-1] != "" or new == [""])
    after = data.draw(st.integers(min_value=0, max_value=len(lines)))
    # an empty last line cannot exist in a file without a final newline: leave that corner out
    assume(not (lines and not final and after == len(lines) and new[-1] == ""))
    insert = "\n".join(new) + ("\n" if new_final else "")
    result = text.insert_lines(content, after, insert)
    assert text.split_lines(result) == lines[:after] + new + lines[after:] or (
        # an empty inserted line into an empty file gives an empty file
        not lines and new == [""] and result in ("", "\n")
    )
    if lines:
        assert result.endswith("\n") == content.endswith("\n")


# --- occurrences (D-STR-COUNT) --------------------------------------------------------------------


def _naive_locate(haystack: str, needle: str, cap: int) -> text.Occurrences:
    """The obvious quadratic model: every overlapping offset, each line number counted afresh."""
    offsets = [i for i in range(len(haystack)) if haystack.startswith(needle, i)]
    if not offsets:
        return text.Occurrences(-1, False, [], 0)
    if len(offsets) == 1:
        return text.Occurrences(offsets[0], True, [], 0)
    lines = sorted({haystack.count("\n", 0, i) + 1 for i in offsets})
    return text.Occurrences(offsets[0], False, lines[:cap], max(0, len(lines) - cap))


@pytest.mark.parametrize(
    "haystack, needle, first, unique",
    [
        ("aaa", "aa", 0, False),
        ("aaaa", "aa", 0, False),
        ("abab", "aba", 0, True),
        ("ababa", "aba", 0, False),
        ("abc", "d", -1, False),
        ("abc", "abc", 0, True),
        ("x\nx\nx", "x", 0, False),
        ("\u00e9\u00e9", "\u00e9", 0, False),
    ],
)
def test_D_STR_COUNT_occurrences_overlapping(haystack: str, needle: str, first: int, unique: bool) -> None:
    found = text.locate(haystack, needle, 100)
    assert (found.first, found.unique) == (first, unique)


@given(
    st.text(alphabet="ab\n", max_size=40),
    st.text(alphabet="ab\n", min_size=1, max_size=4),
    st.integers(min_value=1, max_value=4),
)
def test_locate_matches_the_naive_model(haystack: str, needle: str, cap: int) -> None:
    assert text.locate(haystack, needle, cap) == _naive_locate(haystack, needle, cap)


def test_D_STR_LINES_the_list_is_capped_and_counts_the_rest() -> None:
    found = text.locate("a\n" * 250, "a", 100)
    assert found.lines == list(range(1, 101)) and found.more == 150


def test_line_of() -> None:
    content = "a\nbb\n\nc"
    assert [text.line_of(content, i) for i in range(len(content))] == [1, 1, 2, 2, 2, 3, 4]


# --- numbering and fit_numbered (D-VIEW-FILE, D-VIEW-PAGINATE) ------------------------------------


def test_D_VIEW_FILE_numbered_line_format() -> None:
    assert text.numbered_line(1, "Hello World") == "     1\tHello World"
    assert text.numbered_line(100, "x") == "   100\tx"
    assert text.numbered_line(999_999, "") == "999999\t"


def lines_of(*contents: str) -> List[Tuple[int, str, int]]:
    return [(n, c, len(c)) for n, c in enumerate(contents, start=1)]


def test_fit_numbered_everything_fits() -> None:
    body = text.fit_numbered(lines_of("ab", "cd"), 100)
    assert body.body == "     1\tab\n     2\tcd"
    assert body.last_shown == 2
    assert body.cut_line is None


def test_fit_numbered_exact_budget() -> None:
    rendered = "     1\tab\n     2\tcd"
    assert text.fit_numbered(lines_of("ab", "cd"), len(rendered)).last_shown == 2
    shorter = text.fit_numbered(lines_of("ab", "cd"), len(rendered) - 1)
    assert shorter.body == "     1\tab"
    assert shorter.last_shown == 1
    assert shorter.cut_line is None


def test_fit_numbered_first_line_too_long_is_cut() -> None:
    body = text.fit_numbered(lines_of("x" * 100, "y"), 20)
    assert body.body == "     1\t" + "x" * 13
    assert body.last_shown == 0
    assert body.cut_line == (1, 100, 13)


def test_fit_numbered_empty() -> None:
    assert text.fit_numbered([], 10) == text.NumberedBody("", 0, None)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet="ab\t\u00e9", max_size=30), max_size=20), st.integers(min_value=8, max_value=300))
def test_fit_numbered_never_exceeds_budget_and_keeps_whole_lines(contents: List[str], budget: int) -> None:
    lines = lines_of(*contents)
    body = text.fit_numbered(lines, budget)
    assert len(body.body) <= budget
    if body.cut_line is None:
        shown = body.body.split("\n") if body.body else []
        assert shown == [text.numbered_line(n, c) for n, c, _ in lines[: body.last_shown]]
        if body.last_shown < len(lines):  # the next line really did not fit
            assert len(body.body) + 1 + len(text.numbered_line(*lines[body.last_shown][:2])) > budget
    else:
        assert body.last_shown == 0


def test_snippet_lines_clipped_to_the_file() -> None:
    content = "".join(f"{n}\n" for n in range(1, 21))
    assert [n for n, _, _ in text.snippet_lines(content, 10, 10)] == list(range(6, 15))
    assert [n for n, _, _ in text.snippet_lines(content, 2, 3)] == list(range(1, 8))
    assert [n for n, _, _ in text.snippet_lines(content, 19, 20)] == list(range(15, 21))
    assert text.snippet_lines("", 1, 1) == []


def test_replace_once_reports_changed_lines() -> None:
    edit = text.replace_once("a\nb\nc\n", 2, "b", "x\ny\nz")
    assert edit.text == "a\nx\ny\nz\nc\n"
    assert (edit.first_line, edit.last_line) == (2, 4)
    assert math.isfinite(edit.first_line)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(["a", "bb", " ", "\n", "\r\n", "é", "\t", "x" * 50]), max_size=120).map("".join),
    st.integers(min_value=1, max_value=30),
    st.one_of(st.none(), st.integers(min_value=1, max_value=40)),
    st.integers(min_value=1, max_value=200),
    st.integers(min_value=1, max_value=64),
)
def test_in_memory_window_pages_like_the_streaming_one(
    content: str, first: int, last: Optional[int], budget: int, chunk: int
) -> None:
    """Small files take window_from_text, large ones ViewWindow: the page a model sees must not depend on which."""
    data = content.encode("utf-8")
    streamed = text.read_window([data[i : i + chunk] for i in range(0, len(data), chunk)], first, last, budget)
    in_memory = text.window_from_text(content, first, last, budget)
    assert (in_memory.n_lines, in_memory.crlf) == (streamed.n_lines, streamed.crlf)
    assert text.fit_numbered(in_memory.lines, budget, in_memory.complete) == text.fit_numbered(streamed.lines, budget)


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.sampled_from(["a", "bb", " ", "\n", "\r\n", "\r", "é", "\t", "x" * 50]), max_size=120).map("".join),
    st.integers(min_value=1, max_value=400),
)
@example(content="", budget=1)
@example(content="a\r\nb", budget=100)
def test_number_whole_is_the_general_page_when_everything_fits(content: str, budget: int) -> None:
    """The fast path for whole small files gives exactly the general path's page, or declines."""
    whole = text.number_whole(content, budget)
    window = text.window_from_text(content, 1, None, budget)
    general = text.fit_numbered(window.lines, budget, window.complete)
    if whole is None:
        # Declining is allowed only when the text might not fit (the estimate counts every character).
        assert len(content) + 8 * window.n_lines - 1 > budget or window.n_lines >= 4096
        return
    assert whole == (general.body, window.n_lines)
    assert general.last_shown == window.n_lines and general.cut_line is None


@settings(max_examples=500, deadline=None)
@given(
    st.lists(st.sampled_from(["a", "bb", " ", "\n", "\r\n", "\r", "é", "\t", "x" * 50, "\n" * 9]), max_size=160).map(
        "".join
    ),
    st.integers(min_value=1, max_value=400),
)
@example(content="", budget=1)
@example(content="a\r\nb", budget=100)
@example(content="x" * 30 + "\n" + "y\n" * 40, budget=20)
def test_whole_page_is_the_general_page(content: str, budget: int) -> None:
    """A whole view's page from the bounded head is exactly the page the general path makes from every line."""
    paged = text.whole_page(content, budget)
    window = text.window_from_text(content, 1, None, budget)
    general = text.fit_numbered(window.lines, budget, window.complete)
    assert paged == (window.n_lines, general)


def test_whole_page_declines_past_the_prefix_table() -> None:
    assert text.whole_page("\n" * 4096, 60_000) is None
    assert text.whole_page("\n" * 4095, 60_000) is not None


def test_number_whole_declines_past_the_prefix_table() -> None:
    assert text.number_whole("x\n" * 4096, 10**9) is None
    assert text.number_whole("x\n" * 4095, 10**9) is not None


@given(
    st.text(alphabet="ab\n", min_size=1, max_size=5),
    st.integers(min_value=1, max_value=40),
    st.lists(st.tuples(st.integers(min_value=0, max_value=400), st.sampled_from("ab\n")), max_size=3),
    st.integers(min_value=0, max_value=400),
    st.integers(min_value=1, max_value=60),
    st.integers(min_value=1, max_value=5),
)
def test_locate_on_periodic_text_matches_the_naive_model(
    base: str, repeat: int, edits: List[Tuple[int, str]], start: int, length: int, cap: int
) -> None:
    """Long needles that overlap themselves inside runs of one period: the fast path that skips compares."""
    chars = list(base * repeat)
    for index, char in edits:
        chars[index % len(chars)] = char
    haystack = "".join(chars)
    start %= len(haystack)
    needle = haystack[start : start + length]
    assert text.locate(haystack, needle, cap) == _naive_locate(haystack, needle, cap)
