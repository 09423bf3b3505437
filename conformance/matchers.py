"""Output matchers: how a step's `match` judges an output (CASE-FORMAT.md). Pure functions.

`regex`, `prefix` and `contains` compare text. `numbered` and `listing` judge the documented shape of a file
view and a directory listing, and accept every reading the documentation leaves open:

- a file view is one header line, then `{n:>6}\t{line}` per line ("Width: 6 characters, right-aligned",
  "Separator: tab", "1-indexed"); the documentation does not say whether a final newline ends the last line
  or starts an empty one, so both are accepted;
- a listing is one header line, then `{size}\t{path}` per entry, in any order; a size is human-readable
  ("e.g. `5.5K`, `1.2M`": `5.5K`, `6K`, `5.0K`, `60B`, and below 1K a bare count of bytes such as `60` or
  `0`, as `ls -h` and `du -h` print it) and, for a file of known size, within one unit of its last digit of the
  true size; a folder's own size depends on the filesystem (`4.0K` on ext4, `60` or `0` on tmpfs) and is any
  human size; a folder may be shown with or without a trailing `/`.
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any, Dict, List, Optional, Sequence, Tuple

from refmem_harness.visible import inline

HUMAN_SIZE = re.compile(r"(\d+(?:\.\d+)?) ?([BKMGTPE])(?:i?B)?|(\d+)")
UNITS = {"B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50, "E": 1 << 60}


def parse_size(text: str) -> Optional[Tuple[Fraction, Fraction]]:
    """(bytes shown, one step of the last digit in bytes) for a human-readable size; None otherwise.

    Exact fractions: `5.4K` is one step of 102.4 bytes from 5632, which a float would put just inside it.
    """
    found = HUMAN_SIZE.fullmatch(text)
    if not found:
        return None
    if found.group(3) is not None:  # a bare count of bytes: human-readable below 1K only, as `ls -h` prints it
        count = int(found.group(3))
        return (Fraction(count), Fraction(1)) if count < 1024 else None
    number, unit = found.group(1), UNITS[found.group(2)]
    decimals = len(number.partition(".")[2])
    return Fraction(number) * unit, Fraction(unit, 10**decimals)


def size_fits(shown: str, actual: Optional[int]) -> bool:
    """`shown` is a human-readable size and, when `actual` is known, a rounding of it (up, down or nearest)."""
    parsed = parse_size(shown)
    if parsed is None:
        return False
    if actual is None:
        return True
    value, step = parsed
    return abs(value - actual) < step


# --- file views ---------------------------------------------------------------------------------


def _readings(text: str) -> List[List[str]]:
    """The line lists the documentation allows for `text`: a final newline ends a line, or starts one."""
    if not text:
        return [[], [""]]
    lines = text.split("\n")
    if text.endswith("\n"):
        return [lines[:-1], lines]
    return [lines]


def _numbered(lines: Sequence[str], first: int) -> str:
    return "\n".join(f"{number:>6}\t{line}" for number, line in enumerate(lines, first))


def _slice(lines: List[str], view_range: Optional[Sequence[int]]) -> Tuple[List[str], int]:
    if not view_range:
        return lines, 1
    start, end = view_range
    return lines[start - 1 : (None if end == -1 else end)], start


def numbered_bodies(spec: Dict[str, Any]) -> List[str]:
    """Every numbered body (the lines after the header) the spec accepts."""
    bodies = []
    for lines in _readings(spec["text"]):
        shown, first = _slice(lines, spec.get("range"))
        body = _numbered(shown, first)
        if body not in bodies:
            bodies.append(body)
    return bodies


def numbered_problem(spec: Dict[str, Any], output: str) -> Optional[str]:
    header, newline, body = output.partition("\n")
    if not header.strip():
        return "has no header line before the numbered lines"
    bodies = numbered_bodies(spec)
    trimmed = body[:-1] if body.endswith("\n") else body
    if trimmed in bodies or (not newline and "" in bodies):
        return None
    return "does not number the lines as " + " or ".join(inline(candidate) for candidate in bodies)


# --- listings -----------------------------------------------------------------------------------


def _entry_key(path: str) -> str:
    return path[:-1] if path.endswith("/") and path != "/" else path


def listing_problem(spec: Dict[str, Any], output: str) -> Optional[str]:
    lines = output[:-1].split("\n") if output.endswith("\n") else output.split("\n")
    if len(lines) < 2 or not lines[0].strip():
        return "is not a header line followed by entries"
    expected: Dict[str, Tuple[Optional[int], bool]] = {
        _entry_key(path): (size, path.endswith("/")) for path, size in spec["entries"]
    }
    shown: Dict[str, str] = {}
    problems: List[str] = []
    for line in lines[1:]:
        size, tab, path = line.partition("\t")
        if not tab:
            problems.append(f"line {inline(line)} has no TAB between size and path")
            continue
        key = _entry_key(path)
        if key in shown:
            problems.append(f"{inline(key)} is listed twice")
        shown[key] = size
        if path.endswith("/") and key in expected and not expected[key][1]:
            problems.append(f"the file {inline(key)} is shown as a folder")
    for key, (wanted, _folder) in expected.items():
        if key not in shown:
            problems.append(f"{inline(key)} is not listed")
        elif not size_fits(shown[key], wanted):
            what = "a human-readable size" if wanted is None else f"a human-readable rounding of {wanted} bytes"
            problems.append(f"{inline(key)} has size {inline(shown[key])}, not {what}")
    for key in spec.get("absent", []):
        if _entry_key(key) in shown:
            problems.append(f"{inline(_entry_key(key))} is listed but must not be")
    if spec.get("exact", False):
        problems += [f"{inline(key)} is listed but not expected" for key in shown if key not in expected]
    return "; ".join(problems[:6]) or None


# --- text ---------------------------------------------------------------------------------------


def match_problem(match: Dict[str, Any], output: str) -> Optional[str]:
    """None when `output` satisfies `match`, else what is wrong with it."""
    if "regex" in match:
        return None if re.fullmatch(match["regex"], output, re.DOTALL) else f"does not fully match /{match['regex']}/"
    if "prefix" in match:
        return None if output.startswith(match["prefix"]) else f"does not start with {inline(match['prefix'])}"
    if "numbered" in match:
        return numbered_problem(match["numbered"], output)
    if "listing" in match:
        problem = listing_problem(match["listing"], output)
        return f"is not the expected listing: {problem}" if problem else None
    missing = [text for text in match.get("contains", []) if text not in output]
    return "does not contain " + ", ".join(inline(text) for text in missing) if missing else None
