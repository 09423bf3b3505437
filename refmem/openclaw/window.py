"""memory_get's excerpt: a window of lines, fitted to a character budget, with a continuation notice.

OpenClaw's rule (`buildMemoryReadResult`, `fitLinesToCharBudget`): lines are the text split at
`\\n`, a final `\\n` starting no line; the window is `lines` lines from line `from`; whole lines are
kept while the joined text fits `maxChars`, the first line always (cut at the budget when it
alone is longer); `truncated` when lines were left out of the window or remain after it, and then
`nextFrom` is the first line not shown. Differences, all decided in docs/spec-notes.md: a line cut
at the budget still gets a `nextFrom` past it (D-OPENCLAW-GET-LONGLINE), the notice is given
whenever the excerpt is truncated (D-OPENCLAW-GET-NOTICE), lengths are counted in code points, not
UTF-16 units (D-OPENCLAW-GET-TEXT). A CRLF file's lines keep their `\\r`, as OpenClaw shows them.

The file is streamed once through the memory tool's own window (`text.ViewWindow`, plain: lines
cost their text and a newline and keep their `\r`): lines outside the window are counted, not
kept, and a kept line stops growing at the budget, so memory stays bounded whatever the file's
size; the whole file is still decoded, so a non-UTF-8 byte anywhere is reported
(UnicodeDecodeError). `excerpt_from_text` is the plain definition for a text in memory; a property
test holds the two together.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, NamedTuple, Optional, Tuple

from .._text import read_window, split_lines
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


def read_excerpt(chunks: Iterable[bytes], start: int, count: int, max_chars: int) -> Excerpt:
    """Stream a file through a plain `text.ViewWindow`; raises UnicodeDecodeError for a file that is not UTF-8."""
    last = start + count - 1
    window = read_window(chunks, start, last, max_chars, numbered=False)
    wanted = max(0, min(last, window.n_lines) - start + 1)
    return fit(start, [(text, length) for _, text, length in window.lines], wanted, window.n_lines, max_chars)
