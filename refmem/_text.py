"""Pure text work: lines, line endings, numbering, sizes, edits and the streaming view window.

Nothing here touches the filesystem, so every rule about what a "line" is, how a file is shown and
how an edit lands can be tested exhaustively without a disk.
"""

from __future__ import annotations

import codecs
from bisect import bisect_right
from itertools import accumulate
from operator import add, itemgetter
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
    """Numbered lines; the prefixes of the first 4095 line numbers are made once, not per view.

    Windows hold consecutive lines, so their prefixes are one slice of the table, joined to the texts
    by `map` (no Python work per line)."""
    if not lines:
        return []
    first, last = lines[0][0], lines[-1][0]
    if last < len(_PREFIXES):
        if last - first + 1 == len(lines) and first >= 0:
            return list(map(str.__add__, _PREFIXES[first : last + 1], map(itemgetter(1), lines)))
        return [_PREFIXES[number] + text for number, text, _ in lines]
    return [f"{number:>{LINE_NUMBER_WIDTH}}\t{text}" for number, text, _ in lines]


def fit_numbered(lines: Sequence[Tuple[int, str, int]], budget: int, complete: bool = False) -> NumberedBody:
    """Number lines and keep as many whole ones as fit in `budget` characters (D-VIEW-PAGINATE).

    `lines` holds (number, text, full length); text may already be shorter than its full length when
    the reader stopped keeping a very long line (`complete` promises none was). When not even the
    first line fits, it is cut inside.
    """
    rendered_all = _render(lines)
    # ends[i]: characters of lines 0..i joined by newlines, plus one; a line counts only when kept whole.
    ends = list(map(add, accumulate(map(len, rendered_all)), range(1, len(rendered_all) + 1)))
    if complete and (not ends or ends[-1] - 1 <= budget):  # the common case
        return NumberedBody("\n".join(rendered_all), lines[-1][0] if lines else 0, None)
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
    if content and len(content) + LINE_NUMBER_WIDTH + 1 > budget:  # one line at least: the test below fails
        return None
    crlf = is_crlf(content)
    lines = split_lines(content.replace("\r\n", "\n") if crlf else content)
    count = len(lines)
    # Numbered, a line costs its text, the prefix and a newline; the text is at most the content.
    if count >= len(_PREFIXES) or len(content) + (LINE_NUMBER_WIDTH + 2) * count - 1 > budget:
        return None
    return _numbered_join(lines, count), count


# The prefixes of lines 1, 2, 3... as they stand in a page: every line but the first starts after a newline.
_LINE_STARTS = [""] + [("\n" if number > 1 else "") + prefix for number, prefix in enumerate(_PREFIXES) if number]


def _numbered_join(lines: Sequence[str], count: int) -> str:
    """Lines 1..`count` (`count` < 4096) numbered and joined: prefixes and texts interleaved by two slice
    assignments and joined once, with no string made per line."""
    parts = [""] * (2 * count)
    parts[0::2] = _LINE_STARTS[1 : count + 1]
    parts[1::2] = lines[:count]
    return "".join(parts)


def whole_page(content: str, budget: int) -> Optional[Tuple[int, NumberedBody]]:
    """(number of lines, numbered body) of a view of the whole text, exactly as `window_from_text` and
    `fit_numbered` make it (a property test holds them together), or None when the page would number
    lines past the prefix table (the general path serves those).

    Per line, the work is bounded by the page: only the head that can reach the page is split into lines
    (up to the first line end past `budget + 1` characters); the rest is counted, not made. The head is
    numbered in one join and cut at its last line end within the budget: no Python work per line.
    """
    crlf = is_crlf(content)
    cut = content.find("\n", budget + 1)
    head = content if cut == -1 else content[: cut + 1]
    lines = split_lines(head.replace("\r\n", "\n") if crlf else head)
    n_lines = len(lines) + (0 if cut == -1 else count_lines(content, cut + 1))
    if not lines:
        return n_lines, NumberedBody("", 0, None)
    if len(lines) >= len(_PREFIXES):
        return None
    # Number every line of the head at once; the page is this up to its last line end within the budget,
    # and the number of its last line is read back from that line's prefix.
    numbered = _numbered_join(lines, len(lines))
    if len(numbered) <= budget:
        return n_lines, NumberedBody(numbered, len(lines), None)
    end = numbered.rfind("\n", 0, budget + 1)
    if end != -1:
        start = numbered.rfind("\n", 0, end) + 1
        return n_lines, NumberedBody(numbered[:end], int(numbered[start : start + LINE_NUMBER_WIDTH]), None)
    shown = max(0, budget - len(numbered_line(1, "")))
    return n_lines, NumberedBody(numbered_line(1, lines[0][:shown]), 0, (1, len(lines[0]), shown))


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

    `numbered` says how the page costs a line. Numbered (the memory tool's view), a line costs its text,
    its number and a newline, and a CRLF file's lines lose their `\r` (D-VIEW-CRLF), so up to 2
    characters a line are allowed for. Plain (OpenClaw's memory_get excerpt, refmem/openclaw/window.py),
    a line costs its text and a newline and keeps its `\r`, as OpenClaw shows it. Either way the window
    keeps every line of the window that fits in the budget, and the first that does not.
    """

    def __init__(self, first: int, last: Optional[int], budget: int, numbered: bool = True) -> None:
        self._first = first
        self._last = last
        self._budget = budget
        self._numbered = numbered
        # What a kept line adds to the page besides its text (its number's prefix and a newline, or the newline),
        # and the characters it may lose (its \r): the window is full once the page, less the losses, passes
        # the budget.
        self._overhead = LINE_NUMBER_WIDTH + 2 if numbered else 1
        self._slack = 2 if numbered else 0
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
        self._cut = False  # a kept line's text stopped short of the line

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
        if self._previous_char == "\r" or "\r" in text:  # CR is rare: most texts are not counted twice
            self._crlf_newlines += text.count("\r\n") + (1 if self._previous_char == "\r" and text[0] == "\n" else 0)
        self._previous_char = text[-1]
        line_after = self._line + newlines  # the number of the line being read once `text` is taken
        touches = (
            not self._full and line_after >= self._first and (self._last is None or self._line <= self._last)
        )
        if not touches:  # fast path: count, keep nothing
            self._count_rest(text, 0, line_after)
            return
        start = 0
        while True:
            if self._full or (self._last is not None and self._line > self._last):
                self._count_rest(text, start, line_after)  # past the window: count the rest, keep nothing
                return
            if not self._current_len and self._line >= self._first:
                start = self._keep_lines(text, start)
                if self._full or (self._last is not None and self._line > self._last):
                    continue
            end = text.find("\n", start)
            if end == -1:
                self._add(text[start:])
                return
            self._add(text[start:end])
            self._end_line()
            start = end + 1

    def _count_rest(self, text: str, start: int, line_after: int) -> None:
        """Take `text[start:]` without keeping it; `line_after` says where the line count ends."""
        if line_after > self._line:
            self._line = line_after
            self._current_len = len(text) - text.rfind("\n") - 1
        else:
            self._current_len += len(text) - start

    def _keep_lines(self, text: str, start: int) -> int:
        """Keep the whole lines of the window that start at `text[start]` (a line's start) at once, up to the
        one that fills the budget; returns where the lines taken end. The lines are split from a stretch
        bounded by the budget, and the one that fills it is found by bisection over their running cost,
        so the work is bounded by the page, with no Python work per line."""
        # lines whose numbers fit the prefix's width (plain lines have no number: all of them)
        narrow = 10**LINE_NUMBER_WIDTH - self._line if self._numbered else len(text) + 1
        if narrow <= 0:
            return start  # wider numbers: the line-by-line path numbers them (checked first: no scan per line)
        measure = self._kept_chars - self._slack * len(self._kept)  # full once this passes the budget
        stop = text.find("\n", start + max(0, self._budget - measure))
        if stop == -1:
            stop = text.rfind("\n", start)
            if stop == -1:
                return start  # no whole line here: the line-by-line path takes the piece
        lines = text[start:stop].split("\n")
        lines = lines[: narrow if self._last is None else min(narrow, self._last - self._line + 1)]
        # A kept line adds its text and overhead, less its slack (a CR may go), to the measure.
        step = self._overhead - self._slack
        used: List[int] = list(map(add, accumulate(map(len, lines)), range(step, step * (len(lines) + 1), step)))
        past = bisect_right(used, self._budget - measure)
        texts = lines
        if past < len(lines):  # this line fills the budget: the last one kept
            lines = lines[: past + 1]
            texts = lines[:-1] + [lines[-1][: self._budget + 2]]
            self._full = True
            self._cut = self._cut or len(texts[-1]) < len(lines[-1])
        count = len(lines)
        self._kept.extend(zip(range(self._line, self._line + count), texts, map(len, lines)))
        self._kept_chars = measure + used[count - 1] - len(lines[-1]) + len(texts[-1]) + self._slack * len(self._kept)
        self._line += count
        return start + used[count - 1] - (step - 1) * count

    def _add(self, piece: str) -> None:
        if self._keeping():
            room = self._budget + 2 - self._current_kept
            if room > 0 and piece:
                self._current.append(piece[:room])
                self._current_kept += min(room, len(piece))
            if len(piece) > room:
                self._cut = True
        self._current_len += len(piece)

    def _end_line(self) -> None:
        if self._keeping():
            text = "".join(self._current)
            self._kept.append((self._line, text, self._current_len))
            self._kept_chars += (len(numbered_line(self._line, text)) + 1) if self._numbered else len(text) + 1
            if self._kept_chars - self._slack * len(self._kept) > self._budget:
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
        if crlf and self._numbered:
            # Every line ended by \n ends in \r here; a line cut short has lost its \r already.
            kept = [
                (n, t[:-1] if len(t) == length else t, length - 1) if n <= self._newlines else (n, t, length)
                for n, t, length in kept
            ]
        return WindowResult(n_lines, crlf, kept, not self._cut)


def window_from_text(content: str, first: int, last: Optional[int], budget: Optional[int] = None) -> WindowResult:
    """The same answer as ViewWindow for a text already in memory (small files): the plain definition.

    With a `budget`, only the lines that fit are kept, plus the first one that does not (so the
    cut is still seen): a numbered line costs its text plus 8 characters (number, TAB, newline).
    A window from the first line splits only the head of the text that can reach the page (up to the
    first line end past `budget + 1` characters: its lines alone overflow the budget) and counts the
    lines of the rest without making them, so the work per line is bounded by the page, not the file.
    """
    crlf = is_crlf(content)
    start = max(first, 1)
    head = content
    if budget is not None and start == 1:
        cut = content.find("\n", budget + 1)
        if cut != -1:
            head = content[: cut + 1]
    lines = split_lines(head.replace("\r\n", "\n") if crlf else head)
    n_lines = len(lines) + (0 if head is content else count_lines(content, len(head)))
    chosen = lines[start - 1 : len(lines) if last is None else min(last, len(lines))]
    if budget is not None and len(content) + (LINE_NUMBER_WIDTH + 2) * len(chosen) > budget:
        # used[i] - 1: characters of lines 0..i numbered and joined; keep up to the first past the budget
        step = LINE_NUMBER_WIDTH + 2
        used = list(map(add, accumulate(map(len, chosen)), range(step, step * (len(chosen) + 1), step)))
        past = bisect_right(used, budget + 1)
        if past < len(used):
            chosen = chosen[: past + 1]
    kept = list(zip(range(start, start + len(chosen)), chosen, map(len, chosen)))
    return WindowResult(n_lines, crlf, kept, True)


def count_lines(content: str, start: int = 0) -> int:
    """Lines (D-VIEW-LINES) of `content[start:]`, counted without making them."""
    if start >= len(content):
        return 0
    return content.count("\n", start) + (0 if content.endswith("\n") else 1)


def read_window(
    chunks: Iterable[bytes], first: int, last: Optional[int], budget: int, numbered: bool = True
) -> WindowResult:
    """Stream a file through ViewWindow (see its docstring); raises UnicodeDecodeError for non-UTF-8."""
    window = ViewWindow(first, last, budget, numbered)
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


class Replacement(NamedTuple):
    text: str
    first_line: int  # first changed line, 1-based
    last_line: int  # last line of the inserted text, 1-based


def replace_once(text: str, offset: int, old: str, new: str) -> Replacement:
    result = text[:offset] + new + text[offset + len(old) :]
    first = line_of(text, offset)
    # A final \n in new_str ends its last line; it does not reach into the next one.
    return Replacement(result, first, first + new.count("\n") - (1 if new.endswith("\n") else 0))


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
