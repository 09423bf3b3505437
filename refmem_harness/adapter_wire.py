"""Reading what an adapter writes, within bounds: its reply lines, their nesting, the tail of its standard error.

An adapter under test is a hostile party to the harness: it may write a line of gigabytes, JSON nested a
hundred thousand deep, or an endless line of standard error. Everything that reads an adapter (the adapter
client, the OpenClaw runner, the `--validate` relay) reads through this module, so that what the harness
holds is bounded by the protocol's limits, not by what the adapter sends, and what it decodes is shallow
enough for every recursive reader downstream (`repr`, `json.dumps`, schema validation).

Standard library and `refmem.protocol` only, with no relative import: the relay loads this file by its path.
"""

from __future__ import annotations

import collections
import itertools
import operator
import re
import threading
from typing import IO, Any, Callable, Deque, Iterator, List, Optional, Tuple, Union

from refmem import protocol

MAX_LINE_BYTES = protocol.MAX_LINE_BYTES
"""Longest reply line read, in bytes, without its newline: the protocol's bound for either direction."""

MAX_DEPTH = 64
"""Deepest nesting of arrays and objects a reply may have. A reply is a few levels deep (an OpenClaw result
object is four); 64 leaves room while keeping every recursive reader of a reply far from Python's recursion
limit."""

CHUNK_BYTES = 64 * 1024
"""How much is read from a pipe at a time: a line is assembled from chunks, never read whole."""

STDERR_LINES = 200
"""Lines of standard error kept (the last ones)."""

STDERR_LINE_BYTES = 500
"""Bytes kept of one line of standard error; the rest of the line is counted and dropped as it is read."""

EXCERPT_BYTES = 200
"""Bytes of an unreadable line quoted in a report."""


class Unreadable(Exception):
    """A line that is not a message: longer than the bound, blank, not UTF-8, not JSON, or nested too deeply."""


class TooLong:
    """A line that passed the bound; `excerpt` is its first bytes. Reported as soon as the bound is passed, while
    the rest of the line is still being skipped."""

    def __init__(self, excerpt: bytes) -> None:
        self.excerpt = excerpt


Line = Union[bytes, TooLong]
Read = Callable[[int], bytes]


def reader(stream: IO[bytes]) -> Read:
    """`stream`'s read-what-is-there call: returns as soon as some bytes arrive, at most the size asked for.

    A buffered pipe's `read1`; after `close()` it raises ValueError instead of reading a file descriptor that
    may meanwhile belong to another pipe.
    """
    read: Read = getattr(stream, "read1", stream.read)
    return read


def pieces(read: Read, chunk: int = CHUNK_BYTES) -> Iterator[Tuple[bytes, bool]]:
    """The stream as pieces that each lie within one line, with whether the piece ends its line (the newline
    itself dropped). Holds one chunk at a time."""
    while True:
        data = read(chunk)
        if not data:
            return
        start = 0
        while start < len(data):
            end = data.find(b"\n", start)
            if end < 0:
                yield data[start:], False
                break
            yield data[start:end], True
            start = end + 1


class LineAssembler:
    """Joins pieces into lines of at most `limit` bytes. A longer line is given once, as TooLong, when it
    passes the limit, and its rest is dropped as it arrives: nothing past the limit is ever held."""

    def __init__(self, limit: int = MAX_LINE_BYTES) -> None:
        self.limit = limit
        self._held = bytearray()
        self._over = False

    def add(self, piece: bytes, ends_line: bool) -> Optional[Line]:
        """The line this piece completes, or TooLong when it carries its line past the limit, else None."""
        found: Optional[Line] = None
        if not self._over:
            if len(self._held) + len(piece) > self.limit:
                found = TooLong(bytes(self._held[:EXCERPT_BYTES]) or piece[:EXCERPT_BYTES])
                self._held = bytearray()
                self._over = True
            else:
                self._held += piece
        if ends_line:
            if not self._over:
                found = bytes(self._held)
            self._held = bytearray()
            self._over = False
        return found

    def finish(self) -> Optional[bytes]:
        """What is left at the end of the stream: a last line without its newline, or None."""
        if self._over or not self._held:
            return None
        line, self._held = bytes(self._held), bytearray()
        return line


def lines(read: Read, limit: int = MAX_LINE_BYTES) -> Iterator[Line]:
    """Every line of the stream (bytes, without the newline), a line longer than `limit` as TooLong."""
    assembler = LineAssembler(limit)
    for piece, ends_line in pieces(read):
        found = assembler.add(piece, ends_line)
        if found is not None:
            yield found
    last = assembler.finish()
    if last is not None:
        yield last


# --- decoding ---------------------------------------------------------------------------------------------

_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)', re.DOTALL)
"""A JSON string, or an unterminated one running to the end: it never fails once it starts at a quote, so a
line of many quotes is scanned once."""
_STRUCTURE = b"[]{}"
_NOT_STRUCTURE = bytes(set(range(256)) - set(_STRUCTURE))
_STEPS = bytes.maketrans(b"[{]}", b"\x02\x02\x00\x00")
"""Opening a level counts 2 and closing one 0, so that the running sum after k brackets is k + the depth."""


def too_deep(line: bytes, max_depth: int = MAX_DEPTH) -> bool:
    """Whether the JSON text on `line` nests arrays and objects deeper than `max_depth`, found in one pass
    without decoding (brackets inside strings do not count). Linear in the line."""
    if line.count(b"[") + line.count(b"{") <= max_depth:
        return False
    brackets = _STRING.sub(b"", line).translate(None, _NOT_STRUCTURE).translate(_STEPS)
    depths = map(operator.sub, itertools.accumulate(brackets), itertools.count(1))
    return max(depths, default=0) > max_depth


def decode(line: Line, max_depth: int = MAX_DEPTH) -> Any:
    """The JSON value on one line; raises Unreadable, whose message says why, for anything else."""
    if isinstance(line, TooLong):
        raise Unreadable(protocol.LineError("too_long", MAX_LINE_BYTES).message)
    if too_deep(line, max_depth):
        raise Unreadable(f"the line nests arrays or objects deeper than {max_depth} levels")
    try:
        value = protocol.decode_line(line)
    except protocol.LineError as error:
        raise Unreadable(error.message) from None
    if value is protocol.BLANK:
        raise Unreadable("the line is blank")
    return value


def excerpt(line: Line) -> str:
    """The first bytes of a line, decoded leniently (the caller makes them printable)."""
    head = line.excerpt if isinstance(line, TooLong) else line[:EXCERPT_BYTES]
    return head.decode("utf-8", "replace")


# --- standard error ---------------------------------------------------------------------------------------


def stderr_lines(read: Read, line_bytes: int = STDERR_LINE_BYTES) -> Iterator[str]:
    """Each line of standard error, cut to `line_bytes` bytes (with a count of the rest), decoded leniently.
    A line that never ends is read in chunks and cut, never held whole."""
    held, dropped = bytearray(), 0
    for piece, ends_line in pieces(read):
        room = line_bytes - len(held)
        held += piece[:room]
        dropped += max(0, len(piece) - room)
        if ends_line:
            yield _cut_line(held, dropped)
            held, dropped = bytearray(), 0
    if held or dropped:
        yield _cut_line(held, dropped)


def _cut_line(held: bytearray, dropped: int) -> str:
    text = held.decode("utf-8", "replace").rstrip("\r")
    return text + (f"... [{dropped} more bytes]" if dropped else "")


class StderrTail:
    """The last STDERR_LINES lines of an adapter's standard error, each cut; `drain` runs on its own thread."""

    def __init__(self, keep: int = STDERR_LINES) -> None:
        self._lines: Deque[str] = collections.deque(maxlen=keep)
        self._lock = threading.Lock()

    def drain(self, read: Read) -> None:
        try:
            for line in stderr_lines(read):
                with self._lock:
                    self._lines.append(line)
        except (OSError, ValueError):  # the stream was closed under the thread: the adapter is gone
            return

    def lines(self) -> List[str]:
        with self._lock:
            return list(self._lines)
