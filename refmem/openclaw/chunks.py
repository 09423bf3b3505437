"""Markdown to search chunks, cut exactly where OpenClaw 2026.9.6 cuts them (`chunkMarkdown`).

Both sides must index the same units for BM25 to rank alike (its document count and average length
come from the chunk table), so this follows OpenClaw to the character (D-OPENCLAW-CHUNK):

* Lines are the text split at `\\n`, as stored: a CRLF line keeps its `\\r`, and a final newline
  leaves an empty last line (part of the last chunk's range).
* Sizes are estimated characters: UTF-16 code units, plus 3 for a common CJK character, 11 for a
  rare one, 7 for a width or tone mark that costs two tokens, 10 for a supplementary ideograph of
  three tokens and 14 for one of four (OpenClaw's `estimateStringChars`); a chunk holds at most
  400 tokens of 4 (1,600), each line counting one more for its newline.
* When the next piece would not fit, the chunk is closed and the next one starts with its last
  lines that fit 80 tokens (never more than leaves room for that piece); when the last line does
  not fit whole, its tail is carried (so a chunk may start inside a line).
* A line longer than a chunk is cut into pieces of at most 1,600 UTF-16 units, and pieces whose
  estimate is still over are cut by characters.
* `MEMORY.md` and `USER.md` start a chunk at every `- ` line and every heading, carrying nothing.
* Chunks of white space only are dropped.

Pure functions.
"""

from __future__ import annotations

import re
from typing import List, NamedTuple, Tuple

CHARS_PER_TOKEN = 4
MIN_CHUNK_CHARS = 32
_HEADING = re.compile(r"#{1,6}(?:\s|$)")

# (first, last, extra units): a code point's estimate is its UTF-16 length plus these.
_WEIGHTED: Tuple[Tuple[int, int, int], ...] = (
    # common CJK: 4 units in all
    (0xB7, 0xB7, 3),
    (0x3000, 0x319F, 3),
    (0x4E00, 0x9FA5, 3),
    (0xAC00, 0xD7AF, 3),
    (0xFF01, 0xFF60, 3),
    # rare BMP CJK: 12 in all
    (0x1100, 0x11FF, 11),
    (0x2E80, 0x2FFF, 11),
    (0x31A0, 0x4DFF, 11),
    (0x9FA6, 0x9FFF, 11),
    (0xA000, 0xA4FF, 11),
    (0xA700, 0xA707, 11),
    (0xA960, 0xA97F, 11),
    (0xD7B0, 0xD7FF, 11),
    (0xF900, 0xFAFF, 11),
    # marks and forms that cost two tokens: 8 in all
    (0x2C7, 0x2C7, 7),
    (0x2C9, 0x2CB, 7),
    (0x2D9, 0x2D9, 7),
    (0x2EA, 0x2EB, 7),
    (0x305, 0x305, 7),
    (0x323, 0x323, 7),
    (0xFE10, 0xFE4F, 7),
    (0xFF61, 0xFFDC, 7),
    (0xFFE0, 0xFFE6, 7),
    # supplementary ideographs of three tokens: 12 in all (2 of them UTF-16 units)
    (0x1D360, 0x1D371, 10),
    # supplementary ideographs of four tokens: 16 in all
    (0x16FE0, 0x16FFF, 14),
    (0x1AFF0, 0x1AFFF, 14),
    (0x1B000, 0x1B16F, 14),
    (0x1F200, 0x1F2FF, 14),
    (0x20000, 0x2FA1F, 14),
    (0x30000, 0x3347F, 14),
)


class Chunk(NamedTuple):
    start_line: int
    end_line: int
    text: str


def _extra(code: int) -> int:
    for first, last, extra in _WEIGHTED:
        if first <= code <= last:
            return extra
    return 0


def utf16_length(text: str) -> int:
    """Length in UTF-16 code units (JavaScript's `length`)."""
    if text.isascii():
        return len(text)
    return len(text) + sum(1 for char in text if ord(char) > 0xFFFF)


def weight(text: str) -> int:
    """Estimated characters (OpenClaw's `estimateStringChars`)."""
    if text.isascii():
        return len(text)
    return utf16_length(text) + sum(_extra(ord(char)) for char in text if ord(char) >= 0xB7)


def estimate_tokens(text: str) -> int:
    return -(-weight(text) // CHARS_PER_TOKEN)


def truncate_utf16(text: str, units: int) -> str:
    """The longest prefix of at most `units` UTF-16 units that does not split a surrogate pair."""
    if len(text) <= units // 2 or (text.isascii() and len(text) <= units):
        return text
    if text.isascii():
        return text[:units]
    used = 0
    for index, char in enumerate(text):
        used += 2 if ord(char) > 0xFFFF else 1
        if used > units:
            return text[:index]
    return text


def _tail(text: str, budget: int) -> str:
    """The longest suffix of `text` whose estimate fits `budget` (never half a surrogate pair)."""
    used = 0
    start = len(text)
    while start > 0:
        used += weight(text[start - 1])
        if used > budget:
            break
        start -= 1
    return text[start:]


def _entry_kind(line: str) -> bool:
    return line.startswith("- ") or _HEADING.match(line) is not None


def chunk_text(content: str, tokens: int, overlap_tokens: int, per_entry: bool = False) -> List[Chunk]:
    """The chunks of `content` (see the module docstring), white-space-only ones dropped."""
    max_chars = max(MIN_CHUNK_CHARS, tokens * CHARS_PER_TOKEN)
    overlap = max(0, overlap_tokens * CHARS_PER_TOKEN)
    chunks: List[Chunk] = []
    current: List[Tuple[str, int]] = []  # (text, line number)
    used = 0

    def flush() -> None:
        if current:
            chunks.append(Chunk(current[0][1], current[-1][1], "\n".join(piece for piece, _ in current)))

    def carry(window: int) -> None:
        nonlocal current, used
        if window <= 0 or not current:
            current, used = [], 0
            return
        kept: List[Tuple[str, int]] = []
        carried = 0
        for piece, number in reversed(current):
            size = weight(piece) + 1
            room = window - carried
            if size > room:
                if not kept:
                    tail = _tail(piece, room - 1)
                    if tail:
                        kept.append((tail, number))
                        carried += weight(tail) + 1
                break
            carried += size
            kept.append((piece, number))
            if carried >= window:
                break
        current, used = kept[::-1], carried

    def append(piece: str, number: int, size: int) -> None:
        nonlocal used
        if used + size + 1 > max_chars and current:
            flush()
            carry(min(overlap, max(0, max_chars - size - 1)))
        current.append((piece, number))
        used += size + 1

    for index, line in enumerate(content.split("\n")):
        number = index + 1
        if per_entry and (_entry_kind(line) or index == 0):
            flush()
            current, used = [], 0
        if not line:
            append("", number, 0)
            continue
        start = 0
        while start < len(line):
            coarse = truncate_utf16(line[start:], max_chars)
            size = weight(coarse)
            if size > max_chars:
                begin, length = 0, 0
                for offset, char in enumerate(coarse):
                    cost = weight(char)
                    if length + cost > max_chars:
                        append(coarse[begin:offset], number, length)
                        begin, length = offset, 0
                    length += cost
                append(coarse[begin:], number, length)
            else:
                append(coarse, number, size)
            start += len(coarse)
    flush()
    return [chunk for chunk in chunks if chunk.text.strip()]
