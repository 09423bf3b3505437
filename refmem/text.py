"""Pure text work: lines, line endings, numbering, sizes, edits and the streaming view window.

Nothing here touches the filesystem, so every rule about what a "line" is, how a file is shown and
how an edit lands can be tested exhaustively without a disk.
"""

from __future__ import annotations

import codecs
from bisect import bisect_right
from itertools import accumulate
from typing import Iterable, List, NamedTuple, Optional, Sequence, Tuple

LINE_NUMBER_WIDTH = 6
SNIPPET_CONTEXT = 4
_UNITS = "KMGTPE"


def human_size(size: int) -> str:
    """GNU `ls -h` style: 1023B, 1.0K, 1.5K, 9.9K, 10K, 1.2M; always rounded up (D-VIEW-SIZE)."""
    if size < 1024:
        return f"{size}B"
    for power, unit in enumerate(_UNITS, start=1):
        scale = 1024**power
        if size * 10 < scale * 100:  # below 10 units: one decimal
            tenths = -(-size * 10 // scale)
            return f"{tenths // 10}.{tenths % 10}{unit}" if tenths < 100 else f"10{unit}"
        whole = -(-size // scale)
        if whole < 1024 or unit == _UNITS[-1]:
            return f"{whole}{unit}"
    raise AssertionError("unreachable")  # pragma: no cover


def split_lines(text: str) -> List[str]:
    """Lines per D-VIEW-LINES: split at \\n; a final \\n ends the last line, it starts none."""
    if text == "":
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def is_crlf(text: str) -> bool:
    """A CRLF file: at least one line ending, and every one of them is \\r\\n (D-VIEW-CRLF)."""
    if "\r" not in text:  # the common case, found without counting
        return False
    newlines = text.count("\n")
    return newlines > 0 and text.count("\r\n") == newlines


def numbered_line(number: int, text: str) -> str:
    return f"{number:>{LINE_NUMBER_WIDTH}}\t{text}"


class NumberedBody(NamedTuple):
    body: str
    last_shown: int  # number of the last line shown whole, 0 when none
    cut_line: Optional[Tuple[int, int, int]]  # (number, full length, characters shown)


_PREFIXES = [f"{number:>{LINE_NUMBER_WIDTH}}\t" for number in range(4096)]


def _render(lines: Sequence[Tuple[int, str, int]]) -> List[str]:
    """Numbered lines; the prefixes of the first 4095 line numbers are made once, not per view."""
    if lines and lines[-1][0] < len(_PREFIXES):
        return [_PREFIXES[number] + text for number, text, _ in lines]
    return [f"{number:>{LINE_NUMBER_WIDTH}}\t{text}" for number, text, _ in lines]


def fit_numbered(lines: Sequence[Tuple[int, str, int]], budget: int, complete: bool = False) -> NumberedBody:
    """Number lines and keep as many whole ones as fit in `budget` characters (D-VIEW-PAGINATE).

    `lines` holds (number, text, full length); text may already be shorter than its full length when
    the reader stopped keeping a very long line (`complete` promises none was). When not even the
    first line fits, it is cut inside.
    """
    rendered_all = _render(lines)
    if complete and sum(map(len, rendered_all)) + len(rendered_all) - 1 <= budget:  # the common case
        return NumberedBody("\n".join(rendered_all), lines[-1][0] if lines else 0, None)
    # ends[i]: characters of lines 0..i joined by newlines; a line counts only when kept whole.
    ends = list(accumulate(len(rendered) + 1 for rendered in rendered_all))
    fitting = bisect_right(ends, budget + 1)
    if not complete:
        whole = next((i for i, (_, text, length) in enumerate(lines) if len(text) != length), len(lines))
        fitting = min(fitting, whole)
    if fitting == len(lines):  # the common case: everything fits
        return NumberedBody("\n".join(rendered_all), lines[-1][0] if lines else 0, None)
    if fitting:
        return NumberedBody("\n".join(rendered_all[:fitting]), lines[fitting - 1][0], None)
    number, text, length = lines[0]
    shown = max(0, budget - len(numbered_line(number, "")))
    return NumberedBody(numbered_line(number, text[:shown]), 0, (number, length, shown))


def number_whole(content: str, budget: int) -> Optional[Tuple[str, int]]:
    """(numbered body, number of lines) of a whole text when all of it fits in `budget`; else None.

    The answer is the one `window_from_text` and `fit_numbered` give for a view without a range
    (a property test holds them together); it exists because most views are of small files that
    fit, and building a tuple per line only to join them again costs more than reading the file.
    """
    crlf = is_crlf(content)
    lines = split_lines(content.replace("\r\n", "\n") if crlf else content)
    count = len(lines)
    # Numbered, a line costs its text, the prefix and a newline; the text is at most the content.
    if count >= len(_PREFIXES) or len(content) + (LINE_NUMBER_WIDTH + 2) * count - 1 > budget:
        return None
    return "\n".join(map(str.__add__, _PREFIXES[1 : count + 1], lines)), count


class WindowResult(NamedTuple):
    n_lines: int
    crlf: bool
    lines: List[Tuple[int, str, int]]  # (number, text, full length) for kept lines
    complete: bool = False  # True when every kept text is its whole line


class ViewWindow:
    """Stream a file's bytes once, keeping only the lines a view can show.

    Memory stays bounded by the character budget whatever the file's size: lines outside the window
    are counted, not kept, and a kept line stops growing once it alone exceeds the budget. The whole
    file is still decoded, so a non-UTF-8 byte anywhere is reported (ValueError), and every line is
    counted, so the 999,999-line limit is honest.
    """

    def __init__(self, first: int, last: Optional[int], budget: int) -> None:
        self._first = first
        self._last = last
        self._budget = budget
        self._decoder = codecs.getincrementaldecoder("utf-8")("strict")
        self._line = 1  # number of the line being read
        self._newlines = 0
        self._crlf_newlines = 0
        self._previous_char = ""
        self._kept: List[Tuple[int, str, int]] = []
        self._kept_chars = 0
        self._current: List[str] = []
        self._current_kept = 0
        self._current_len = 0
        self._full = False  # enough kept to fill the budget even after CR stripping

    def _keeping(self) -> bool:
        in_range = self._line >= self._first and (self._last is None or self._line <= self._last)
        return in_range and not self._full

    def feed(self, data: bytes, final: bool = False) -> None:
        text = self._decoder.decode(data, final)
        if text:
            self._feed_text(text)

    def _feed_text(self, text: str) -> None:
        newlines = text.count("\n")
        self._newlines += newlines
        self._crlf_newlines += text.count("\r\n") + (1 if self._previous_char == "\r" and text[0] == "\n" else 0)
        self._previous_char = text[-1]
        touches = (
            not self._full and self._line + newlines >= self._first and (self._last is None or self._line <= self._last)
        )
        if not touches:  # fast path: count, keep nothing
            self._count_only(text)
            return
        start = 0
        while True:
            if self._full or (self._last is not None and self._line > self._last):
                self._count_only(text[start:])  # past the window: count the rest, keep nothing
                return
            end = text.find("\n", start)
            if end == -1:
                self._add(text[start:])
                return
            self._add(text[start:end])
            self._end_line()
            start = end + 1

    def _count_only(self, rest: str) -> None:
        newlines = rest.count("\n")
        if newlines:
            self._line += newlines
            self._current_len = len(rest) - rest.rfind("\n") - 1
        else:
            self._current_len += len(rest)

    def _add(self, piece: str) -> None:
        if self._keeping():
            room = self._budget + 2 - self._current_kept
            if room > 0 and piece:
                self._current.append(piece[:room])
                self._current_kept += min(room, len(piece))
        self._current_len += len(piece)

    def _end_line(self) -> None:
        if self._keeping():
            text = "".join(self._current)
            self._kept.append((self._line, text, self._current_len))
            self._kept_chars += len(numbered_line(self._line, text)) + 1
            if self._kept_chars - 2 * len(self._kept) > self._budget:
                self._full = True
        self._line += 1
        self._current = []
        self._current_kept = 0
        self._current_len = 0

    def finish(self) -> WindowResult:
        self.feed(b"", final=True)
        if self._current_len:
            self._end_line()
        n_lines = self._line - 1
        crlf = self._newlines > 0 and self._crlf_newlines == self._newlines
        kept = self._kept
        if crlf:
            # Every line ended by \n ends in \r here; a line cut short has lost its \r already.
            kept = [
                (n, t[:-1] if len(t) == length else t, length - 1) if n <= self._newlines else (n, t, length)
                for n, t, length in kept
            ]
        return WindowResult(n_lines, crlf, kept)


def window_from_text(content: str, first: int, last: Optional[int], budget: Optional[int] = None) -> WindowResult:
    """The same answer as ViewWindow for a text already in memory (small files): the plain definition.

    With a `budget`, only the lines that fit are kept, plus the first one that does not (so the
    cut is still seen): a numbered line costs its text plus 8 characters (number, TAB, newline).
    """
    crlf = is_crlf(content)
    lines = split_lines(content.replace("\r\n", "\n") if crlf else content)
    start = max(first, 1)
    chosen = lines[start - 1 : len(lines) if last is None else min(last, len(lines))]
    if budget is not None and len(content) + (LINE_NUMBER_WIDTH + 2) * len(chosen) > budget:
        used = -1  # the first line has no newline before it
        for count, line in enumerate(chosen, start=1):
            used += len(line) + LINE_NUMBER_WIDTH + 2
            if used > budget:
                chosen = chosen[:count]
                break
    kept = list(zip(range(start, start + len(chosen)), chosen, map(len, chosen)))
    return WindowResult(len(lines), crlf, kept, True)


def read_window(chunks: Iterable[bytes], first: int, last: Optional[int], budget: int) -> WindowResult:
    """Stream a file through ViewWindow (see its docstring); raises UnicodeDecodeError for non-UTF-8."""
    window = ViewWindow(first, last, budget)
    for chunk in chunks:
        window.feed(chunk)
    return window.finish()


# --- edits ------------------------------------------------------------------------------------


class Occurrences(NamedTuple):
    """Where `needle` occurs: `first` offset (-1: nowhere), whether it is `unique`, and for several,
    the first lines holding one (`lines`, at most the cap asked for) and how many more lines do."""

    first: int
    unique: bool
    lines: List[int]
    more: int


def locate(text: str, needle: str, max_lines: int) -> Occurrences:
    """Find `needle` (occurrences counted overlapping, D-STR-COUNT) in one pass over `text`.

    Linear whatever the input: the line count is carried forward from one occurrence to the next,
    never recounted from the start; after an occurrence the search resumes at the next line, since
    later occurrences starting on the same line add no line number; and a needle that overlaps
    itself (smallest period p shorter than it) is never compared again inside a stretch of text
    with that period, where its occurrences are exactly p apart (`_periodic_end`).
    """
    first = text.find(needle)
    if first == -1:
        return Occurrences(-1, False, [], 0)
    if text.find(needle, first + 1) == -1:
        return Occurrences(first, True, [], 0)
    size = len(needle)
    period = (needle + needle).find(needle, 1)  # the smallest period: size when it never overlaps itself
    lines: List[int] = []
    more = 0
    line, counted_to, position = 1, 0, first
    while position != -1:
        # `position` starts an occurrence; with a periodic needle, so does every `position + k * period`
        # up to `last` (the text keeps the period that far), which need no comparing.
        last = position
        if period < size:
            last += (_periodic_end(text, position + size, period) - size - position) // period * period
        while True:
            line += text.count("\n", counted_to, position)
            counted_to = position
            if len(lines) < max_lines:
                lines.append(line)
            else:
                more += 1
            end = text.find("\n", position)
            if end == -1:
                return Occurrences(first, False, lines, more)
            if end + 1 > last:
                break
            position += -(-(end + 1 - position) // period) * period  # the first start past this line
            if position > last:
                break
        position = text.find(needle, max(end, last) + 1)
    return Occurrences(first, False, lines, more)


def _periodic_end(text: str, start: int, period: int) -> int:
    """The first index at or after `start` where `text` breaks the period (text[i] != text[i - period]),
    or len(text). Slice comparisons of doubling length, then halving: O(L log L) for a stretch of L."""
    limit = len(text) - start
    span = 1
    while span <= limit and text[start : start + span] == text[start - period : start - period + span]:
        span *= 2
    good, bad = span // 2, min(span, limit + 1)  # text[start:start+good] keeps the period
    while bad - good > 1:
        middle = (good + bad) // 2
        if text[start : start + middle] == text[start - period : start - period + middle]:
            good = middle
        else:
            bad = middle
    return start + good


def line_of(text: str, offset: int) -> int:
    """1-based line number of a character offset."""
    return text.count("\n", 0, offset) + 1


class Edit(NamedTuple):
    text: str
    first_line: int  # first changed line, 1-based
    last_line: int  # last line of the inserted text, 1-based


def replace_once(text: str, offset: int, old: str, new: str) -> Edit:
    result = text[:offset] + new + text[offset + len(old) :]
    first = line_of(text, offset)
    # A final \n in new_str ends its last line; it does not reach into the next one.
    return Edit(result, first, first + new.count("\n") - (1 if new.endswith("\n") else 0))


def insert_lines(text: str, after_line: int, insert_text: str) -> str:
    """Insert whole lines after line `after_line` (D-INSERT-SEMANTICS)."""
    lines = split_lines(text)
    new_lines = insert_text[:-1].split("\n") if insert_text.endswith("\n") else insert_text.split("\n")
    final_newline = text.endswith("\n") if lines else insert_text.endswith("\n")
    merged = lines[:after_line] + new_lines + lines[after_line:]
    return "\n".join(merged) + ("\n" if final_newline else "")


def snippet_lines(text: str, first_line: int, last_line: int) -> List[Tuple[int, str, int]]:
    """The lines around an edit: SNIPPET_CONTEXT before the first to SNIPPET_CONTEXT after the last."""
    lines = split_lines(text)
    start = max(1, first_line - SNIPPET_CONTEXT)
    stop = min(len(lines), last_line + SNIPPET_CONTEXT)
    return [(n, lines[n - 1], len(lines[n - 1])) for n in range(start, stop + 1)]
