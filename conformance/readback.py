"""Reading a file back from what a target shows, without leaning on our own view format.

The deployment tier judges the state sessions leave behind, not how a backend draws it. The documentation
describes a file view as a header and `%6d<TAB>` numbered lines, but a correct backend may number its lines
three wide after a bar, or not at all, put another header or none, and end with a newline or not. Reading every
view through our own format would charge such a backend with lost updates it never lost (D-DEPLOY-READBACK).

So a file is read back in rounds of evidence, each tried only when the one before does not show a sound state:

  documented view   the documented format, strictly (`%6d<TAB>` numbering, the documented header);
  tolerant view     any consistent numbering (any width, a tab, a bar, a colon, an arrow or a space after the
                    number, numbers counting up by one), or none; a header line or none; a final empty line
                    or none;
  bytes             the file's bytes, from the adapter's optional `read` request (PROTOCOL.md) or, for a target
                    that stores in the root itself, from the root on disk.

Bytes are the state itself: when they are read they decide. Pure functions only; the deployment tier asks the
target and reads the disk.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Callable, Iterable, List, Optional, Sequence, Tuple

DOCUMENTED = "documented view"
TOLERANT = "tolerant view"
ADAPTER_BYTES = "bytes from the adapter"
DISK_BYTES = "bytes on disk"
BYTES = (ADAPTER_BYTES, DISK_BYTES)
EVIDENCE = (DOCUMENTED, TOLERANT, ADAPTER_BYTES, DISK_BYTES)
"""Every kind of evidence, weakest first."""
EVERY_VIEW_READING = "views, read the documented way, every tolerant way and as text in order"
"""The evidence of what a view showed at a moment (a torn read): no later bytes can stand for it."""


@dataclasses.dataclass(frozen=True)
class Reading:
    """A file's lines as one kind of evidence shows them."""

    lines: List[str]
    evidence: str


_DOCUMENTED_HEADER = re.compile(r"^Here's the content of .* with line numbers:$")
_DOCUMENTED_LINE = re.compile(r"^( *)(\d+)\t(.*)$", re.DOTALL)
_TOLERANT_LINE = re.compile(r"^[ \t]*(\d+)(?:[ \t]*[|:\u2502\u2192.)\]>-][ \t]?|\t| )(.*)$", re.DOTALL)


def _without_final_empty(lines: List[str]) -> List[str]:
    """A final newline shown as an empty last line, or not shown: the documentation allows either reading."""
    return lines[:-1] if lines and lines[-1] == "" else lines


def documented_lines(output: str) -> Optional[List[str]]:
    """The lines of a view in the documented format (a header, then `%6d<TAB>` lines counting up by one), or
    None when the view is not in that format."""
    rows = output.split("\n")
    if rows and _DOCUMENTED_HEADER.match(rows[0]):
        rows = rows[1:]
    lines = _counting_up(_without_final_empty(rows), _documented_row)
    return None if lines is None else _without_final_empty(lines)


def _documented_row(row: str) -> Optional[Tuple[int, str]]:
    """A `%6d<TAB>text` row: its number and text (a number wider than six columns is not padded)."""
    match = _DOCUMENTED_LINE.match(row)
    if match is None or len(match.group(1)) + len(match.group(2)) != max(6, len(match.group(2))):
        return None
    return int(match.group(2)), match.group(3)


_TAB_LINE = re.compile(r"^[ \t]*(\d+)\t(.*)$", re.DOTALL)


def _tolerant_row(row: str) -> Optional[Tuple[int, str]]:
    match = _TOLERANT_LINE.match(row)
    return None if match is None else (int(match.group(1)), match.group(2))


def _tab_row(row: str) -> Optional[Tuple[int, str]]:
    """A number, a tab, the text: the text kept whole (the general reading takes `\t- x` as a dash after the
    number, so a line that starts with a dash would lose it)."""
    match = _TAB_LINE.match(row)
    return None if match is None else (int(match.group(1)), match.group(2))


def _counting_up(rows: List[str], read: Callable[[str], Optional[Tuple[int, str]]]) -> Optional[List[str]]:
    """The text of `rows` when `read` finds a number and a text in every row and the numbers count up by one;
    else None."""
    lines: List[str] = []
    expected: Optional[int] = None
    for row in rows:
        found = read(row)
        if found is None:
            return None
        number, text = found
        if expected is not None and number != expected:
            return None
        expected = number + 1
        lines.append(text)
    return lines


def _numbered(rows: List[str]) -> List[List[str]]:
    """`rows` without their numbers, in each way every row is numbered, counting up by one (a tab after each
    number, then any separator); empty when they are not numbered."""
    found = []
    for read in (_tab_row, _tolerant_row):
        lines = _counting_up(rows, read)
        if lines is not None and lines not in found:
            found.append(lines)
    return found


def tolerant_readings(output: str, path: str = "") -> List[List[str]]:
    """Every reading of a view a correct backend could have meant, most likely first: numbered lines (after
    any header lines), else the text as it is, with and without a first line that reads as a header (it ends
    in a colon, or names `path`)."""
    rows = output.replace("\r\n", "\n").split("\n")
    while rows and rows[-1] == "":
        rows = rows[:-1]
    found: List[List[str]] = []
    for skip in range(min(3, len(rows))):
        if skip and _TOLERANT_LINE.match(rows[skip - 1]):
            break  # a header is not numbered: a numbered first row that breaks the count is no header
        numbered = _numbered(rows[skip:])
        if numbered and rows[skip:]:
            found += [_without_final_empty(lines) for lines in numbered]
            break
    header = bool(rows) and (rows[0].rstrip().endswith(":") or bool(path) and path in rows[0])
    found += [rows[1:], rows] if header else [rows, rows[1:]]
    unique: List[List[str]] = []
    for lines in found:
        if lines not in unique:
            unique.append(lines)
    return unique


def view_readings(output: str, path: str = "") -> List[Reading]:
    """A view's readings: the documented one when the view is in that format, then the tolerant ones."""
    readings = []
    documented = documented_lines(output)
    if documented is not None:
        readings.append(Reading(documented, DOCUMENTED))
    readings += [Reading(lines, TOLERANT) for lines in tolerant_readings(output, path) if lines != documented]
    return readings


_LISTED = re.compile(r"^[^\t\n]*\t(/memories/[^\n]*)$", re.MULTILINE)
_PATH = re.compile(r"/memories(?:/[^\s,;()]*)?")


def listed_paths(output: str) -> List[str]:
    """The paths a folder view lists, without a folder's final slash: its documented `SIZE<tab>PATH` lines, else
    every `/memories/...` path on a line after the first (a listing drawn another way; the first is a header)."""
    found = _LISTED.findall(output) or [path for line in output.split("\n")[1:] for path in _PATH.findall(line)]
    return [path.rstrip("/") for path in found]


def shows_in_order(output: str, lines: Sequence[str], absent: Sequence[str] = ()) -> bool:
    """Every one of `lines` is in `output`, each after the one before, and none of `absent` is: the view shows
    that text whole, whatever it draws around each line (numbers, quotes, spacing). For lines that are each
    unique, as the tier writes them."""
    at = 0
    for line in lines:
        found = output.find(line, at)
        if found < 0:
            return False
        at = found + len(line)
    return not any(line and line in output for line in absent)


def bytes_reading(data: bytes, evidence: str) -> Reading:
    """A file's bytes as its lines (undecodable bytes shown as U+FFFD; a final newline ends the last line)."""
    text = data.decode("utf-8", errors="replace")
    return Reading(_without_final_empty(text.split("\n")), evidence)


@dataclasses.dataclass(frozen=True)
class Added:
    """What a backend adds to the text of every file it creates, as one kind of evidence shows it: empty lines
    after the last (a newline appended to the text), and a carriage return ending every line (CRLF line
    endings). Neither can hide a loss: the tier's texts hold no empty line and no carriage return."""

    final_empty: int = 0
    carriage_returns: bool = False

    def describe(self) -> str:
        plural = "s" if self.final_empty != 1 else ""
        parts = [f"{self.final_empty} final empty line{plural}"] if self.final_empty else []
        parts += ["a carriage return ending every line"] if self.carriage_returns else []
        return " and ".join(parts)


def _without_carriage_returns(lines: List[str]) -> Optional[List[str]]:
    """`lines` without the carriage return that ends every one of them; None when one does not end so."""
    if not lines or not all(line.endswith("\r") for line in lines):
        return None
    return [line[:-1] for line in lines]


def added_formatting(lines: List[str], text: List[str]) -> Optional[Added]:
    """What a backend added to `text` (the lines of a plain create's `file_text`, none of them empty) when the
    file reads back as `lines`: None when `lines` is not `text` plus formatting the backend adds uniformly
    (final empty lines, carriage returns ending every line)."""
    plain = _without_carriage_returns(lines)
    carriage_returns = plain is not None
    lines = plain if plain is not None else lines
    if lines[: len(text)] != text or any(lines[len(text) :]):
        return None
    return Added(len(lines) - len(text), carriage_returns)


def without_added(reading: Reading, added: Added) -> Reading:
    """`reading` without what the backend adds to every file it creates (`added`), when it shows exactly that:
    its evidence then says so. A reading that does not carry the formatting is returned as it is."""
    lines = reading.lines
    if added.carriage_returns:
        plain = _without_carriage_returns(lines)
        if plain is None:
            return reading
        lines = plain
    count = added.final_empty
    if count:
        if len(lines) <= count or any(lines[-count:]):
            return reading
        lines = lines[:-count]
    if lines == reading.lines:
        return reading
    return Reading(lines, f"{reading.evidence}{LESS_ADDED}{added.describe()}, as a plain create read back the "
                          f"same way shows")


LESS_ADDED = ", less "
"""Joins a kind of evidence (EVIDENCE) and the formatting taken off a reading of it."""


def evidence_kind(evidence: str) -> str:
    """The kind of evidence (EVIDENCE) an evidence text names, without the formatting taken off."""
    return evidence.partition(LESS_ADDED)[0]


def judged(readings: Iterable[Reading], problems: Callable[[List[str]], int]) -> Optional[Tuple[Reading, int]]:
    """The reading that decides, and how many problems it shows: the first that shows none; bytes, when they
    are reached, whatever they show (they are the state); else the view reading that shows the fewest (what is
    wrong however the view is read). None when there was no reading at all."""
    best: Optional[Tuple[Reading, int]] = None
    for reading in readings:
        count = problems(reading.lines)
        if count == 0 or evidence_kind(reading.evidence) in BYTES:
            return reading, count
        if best is None or count < best[1]:
            best = (reading, count)
    return best
