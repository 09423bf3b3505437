"""Markdown to search chunks: about 400 estimated tokens each, 80 tokens of whole lines of overlap.

The token estimate (D-OPENCLAW-CHUNK): a character counts 1, a character of a script written
without spaces (Han, Hiragana, Katakana, Hangul, fullwidth forms) counts 4, and a token is 4 of
those units, rounded up. OpenClaw 2026.9.6 (`estimateStringChars`, `chunkMarkdown`) uses the same
four-characters-per-token rule with finer weights for rare CJK ranges; its chunks may also start
inside a line (an overlap tail), ours start at a line (or at a piece of a line too long for one
chunk), so that every chunk is lines `start_line`..`end_line` of what memory_get shows.

Curated files (`MEMORY.md`, `USER.md`) are cut per entry, as OpenClaw cuts them: a list item
(`- ` at the start of a line) or a heading starts a new chunk, with no overlap. Chunks holding only
white space are dropped.

Lines are memory_get's: the text split at `\\n` (a CRLF file without its `\\r`), a final `\\n`
starting no line. Pure functions.
"""

from __future__ import annotations

import re
from typing import List, NamedTuple, Tuple

from ..text import is_crlf, split_lines

CHARS_PER_TOKEN = 4
MIN_CHUNK_CHARS = 32
_ENTRY_START = re.compile(r"- |#{1,6}(?:\s|$)")
_WIDE_RANGES: Tuple[Tuple[int, int], ...] = (
    (0x1100, 0x11FF),  # Hangul Jamo
    (0x2E80, 0x2FDF),  # CJK radicals
    (0x3000, 0x30FF),  # CJK punctuation, Hiragana, Katakana
    (0x3130, 0x318F),  # Hangul compatibility Jamo
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xAC00, 0xD7AF),  # Hangul syllables
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0xFF01, 0xFF60),  # fullwidth forms
    (0x20000, 0x3134F),  # CJK extensions B-G
)


class Chunk(NamedTuple):
    start_line: int
    end_line: int
    text: str


def _is_wide(code: int) -> bool:
    return any(low <= code <= high for low, high in _WIDE_RANGES)


def weight(text: str) -> int:
    """Estimated characters: the length, plus 3 for every wide character."""
    if text.isascii():
        return len(text)
    return len(text) + 3 * sum(1 for char in text if ord(char) >= 0x1100 and _is_wide(ord(char)))


def estimate_tokens(text: str) -> int:
    return -(-weight(text) // CHARS_PER_TOKEN)


def memory_lines(content: str) -> List[str]:
    """The lines memory_get numbers."""
    return split_lines(content.replace("\r\n", "\n") if is_crlf(content) else content)


def _segments(line: str, max_chars: int) -> List[Tuple[str, int]]:
    """The line as pieces of at most `max_chars` estimated characters: (text, weight)."""
    size = weight(line)
    if size <= max_chars:
        return [(line, size)]
    pieces: List[Tuple[str, int]] = []
    start, used = 0, 0
    for index, char in enumerate(line):
        cost = 4 if ord(char) >= 0x1100 and _is_wide(ord(char)) else 1
        if used + cost > max_chars and index > start:
            pieces.append((line[start:index], used))
            start, used = index, 0
        used += cost
    pieces.append((line[start:], used))
    return pieces


def chunk_text(content: str, tokens: int, overlap_tokens: int, per_entry: bool = False) -> List[Chunk]:
    """Chunks of `content`: lines are added until the next would pass the size; then the chunk is
    closed and the next one starts with the previous chunk's last whole lines that fit the overlap
    (never more than leaves room for the line that did not fit). With `per_entry`, a line starting
    an entry also closes the chunk, carrying nothing over."""
    max_chars = max(MIN_CHUNK_CHARS, tokens * CHARS_PER_TOKEN)
    overlap = max(0, overlap_tokens * CHARS_PER_TOKEN)
    chunks: List[Chunk] = []
    current: List[Tuple[str, int, int]] = []  # (text, line number, weight)
    used = 0

    def close() -> None:
        text = "\n".join(piece for piece, _, _ in current)
        if text.strip():
            chunks.append(Chunk(current[0][1], current[-1][1], text))

    for number, line in enumerate(memory_lines(content), start=1):
        if per_entry and current and _ENTRY_START.match(line):
            close()
            current, used = [], 0
        for text, size in _segments(line, max_chars):
            if current and used + size + 1 > max_chars:
                close()
                window = min(overlap, max(0, max_chars - size - 1))
                kept: List[Tuple[str, int, int]] = []
                carried = 0
                for piece in reversed(current):
                    if carried + piece[2] + 1 > window:
                        break
                    carried += piece[2] + 1
                    kept.append(piece)
                current = kept[::-1]
                used = carried
            current.append((text, number, size))
            used += size + 1
    if current:
        close()
    return chunks
