"""memory_get's excerpt: a window of lines, fitted to a character budget, with a continuation notice.

OpenClaw's rule (`buildMemoryReadResult`, `fitLinesToCharBudget`): lines are the text split at
`\\n`, a final `\\n` starting no line; the window is `lines` lines from line `from`; whole lines are
kept while the joined text fits `maxChars`, the first line always (cut at the budget when it
alone is longer); `truncated` when lines were left out of the window or remain after it, and then
`nextFrom` is the first line not shown. Differences, all decided in docs/spec-notes.md: a line cut
at the budget still gets a `nextFrom` past it (D-OPENCLAW-GET-LONGLINE), the notice is given
whenever the excerpt is truncated (D-OPENCLAW-GET-NOTICE), lengths are counted in code points, not
UTF-16 units (D-OPENCLAW-GET-TEXT). A CRLF file's lines keep their `\\r`, as OpenClaw shows them.

The file is streamed once (`Excerpter`): lines outside the window are counted, not kept, and a
kept line stops growing at the budget, so memory stays bounded whatever the file's size; the
whole file is still decoded, so a non-UTF-8 byte anywhere is reported (UnicodeDecodeError).
`excerpt_from_text` is the plain definition for a text in memory; a property test holds the two
together.
"""

from __future__ import annotations

import codecs
from typing import Any, Dict, Iterable, List, NamedTuple, Optional, Tuple

from ..text import split_lines
from .messages import NOTICE_SEPARATOR, NOTICES


class Excerpt(NamedTuple):
    start: int
    text: str  # the lines shown, joined by \n (no notice)
    lines: int  # how many lines were shown (a cut line counts)
    truncated: bool
    next_from: Optional[int]
    cut: Optional[Tuple[int, int, int]]  # (line, full length, characters shown) of a line cut at the budget

    def result(self, path: str) -> Dict[str, Any]:
        """OpenClaw's result object: status, text (with the notice), path, from, lines, and
        `truncated` / `nextFrom` only when they apply."""
        body = self.text
        if self.truncated:
            body += NOTICE_SEPARATOR + notice(self)
        out: Dict[str, Any] = {"status": "ok", "text": body, "path": path, "from": self.start, "lines": self.lines}
        if self.truncated:
            out["truncated"] = True
        if self.next_from is not None:
            out["nextFrom"] = self.next_from
        return out


def notice(excerpt: Excerpt) -> str:
    if excerpt.cut is None:
        return NOTICES["continue"].format(next=excerpt.next_from)
    number, length, shown = excerpt.cut
    if excerpt.next_from is None:
        return NOTICES["last_line_cut"].format(n=number, length=length, shown=shown)
    return NOTICES["line_cut"].format(n=number, length=length, shown=shown, next=excerpt.next_from)


def fit(start: int, kept: List[Tuple[str, int]], wanted: int, n_lines: int, max_chars: int) -> Excerpt:
    """Fit the window's lines (text, full length) to `max_chars`; `wanted` lines were asked for and
    exist (the window may hold fewer when the reader stopped keeping them: they did not fit)."""
    included, chars = 0, 0
    for _, length in kept:
        following = chars + length + (1 if included else 0)
        if included and following > max_chars:
            break
        included += 1
        chars = following
    after = start - 1 + wanted < n_lines  # lines remain after the window
    if included == 1 and chars > max_chars:  # one line longer than the budget: cut inside it
        text, length = kept[0]
        next_from = start + 1 if start < n_lines else None
        return Excerpt(start, text[:max_chars], 1, True, next_from, (start, length, max_chars))
    text = "\n".join(line for line, _ in kept[:included])
    truncated = after or included < wanted
    return Excerpt(start, text, included, truncated, start + included if truncated else None, None)


def excerpt_from_text(content: str, start: int, count: int, max_chars: int) -> Excerpt:
    """The plain definition: the excerpt of a text already in memory."""
    lines = split_lines(content)
    window = lines[start - 1 : start - 1 + count]
    return fit(start, [(line, len(line)) for line in window], len(window), len(lines), max_chars)


class Excerpter:
    """Stream a file's bytes once, keeping only what the excerpt can show (see the module docstring)."""

    def __init__(self, start: int, count: int, max_chars: int) -> None:
        self._first = start
        self._last = start + count - 1
        self._max = max_chars
        self._decoder = codecs.getincrementaldecoder("utf-8")("strict")
        self._line = 1  # number of the line being read
        self._newlines = 0
        self._crlf_newlines = 0
        self._previous = ""
        self._kept: List[Tuple[str, int]] = []
        self._kept_cost = -1  # the joined length of the kept lines, \r not counted (a lower bound)
        self._full = False  # a line beyond the budget is kept: later lines cannot be shown
        self._current: List[str] = []
        self._current_kept = 0
        self._current_len = 0

    def _keeping(self) -> bool:
        return not self._full and self._first <= self._line <= self._last

    def feed(self, data: bytes, final: bool = False) -> None:
        text = self._decoder.decode(data, final)
        if not text:
            return
        newlines = text.count("\n")
        self._newlines += newlines
        self._crlf_newlines += text.count("\r\n") + (1 if self._previous == "\r" and text[0] == "\n" else 0)
        self._previous = text[-1]
        if self._full or self._line > self._last or self._line + newlines < self._first:
            self._count_only(text, newlines)
            return
        start = 0
        while True:
            end = text.find("\n", start)
            if end == -1:
                self._add(text[start:])
                return
            self._add(text[start:end])
            self._end_line()
            start = end + 1
            if self._full or self._line > self._last:
                self._count_only(text[start:], text.count("\n", start))
                return

    def _count_only(self, rest: str, newlines: int) -> None:
        if newlines:
            self._line += newlines
            self._current_len = len(rest) - rest.rfind("\n") - 1
        else:
            self._current_len += len(rest)

    def _add(self, piece: str) -> None:
        if self._keeping():
            room = self._max + 2 - self._current_kept  # the budget, a possible \r, and one more
            if room > 0 and piece:
                self._current.append(piece[:room])
                self._current_kept += min(room, len(piece))
        self._current_len += len(piece)

    def _end_line(self) -> None:
        if self._keeping():
            text = "".join(self._current)
            self._kept.append((text, self._current_len))
            self._kept_cost += self._current_len + 1
            if self._kept_cost > self._max:
                self._full = True
        self._line += 1
        self._current = []
        self._current_kept = 0
        self._current_len = 0

    def finish(self) -> Excerpt:
        self.feed(b"", final=True)
        if self._current_len:
            self._end_line()
        n_lines = self._line - 1
        kept = self._kept
        wanted = max(0, min(self._last, n_lines) - self._first + 1)
        return fit(self._first, kept, wanted, n_lines, self._max)


def read_excerpt(chunks: Iterable[bytes], start: int, count: int, max_chars: int) -> Excerpt:
    """Stream a file through Excerpter; raises UnicodeDecodeError for a file that is not UTF-8."""
    excerpter = Excerpter(start, count, max_chars)
    for chunk in chunks:
        excerpter.feed(chunk)
    return excerpter.finish()
