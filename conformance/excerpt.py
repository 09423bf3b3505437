"""Bounded views of long texts for a failure report: the first difference, then how much more there is.

A failing view of a million-line file must not print a million lines: a reader needs the first place the
output goes wrong, drawn with its invisible characters (refmem_harness/visible.py), and a count of what is
left out. `--full-diff` asks for everything instead.
"""

from __future__ import annotations

import difflib
from typing import List

from refmem_harness.visible import visible

HEAD_LINES = 3
"""Lines of an output shown before "N more lines"."""

CONTEXT_LINES = 1
"""Unchanged lines shown before the first difference."""

CHANGE_LINES = 6
"""Removed and added lines of the first difference shown at most."""

FINDINGS_SHOWN = 5
"""Findings of one case shown in full; the rest are counted by class and kind."""

DETAIL_LINES = 12
"""Lines of a finding's own detail (a traceback, an adapter's stderr) shown at most."""

LINE_CHARS = 240
"""Characters of one shown line at most (a one-line output can be a megabyte)."""


def clip_line(text: str) -> str:
    return text if len(text) <= LINE_CHARS else text[:LINE_CHARS] + f"... [{len(text) - LINE_CHARS} more characters]"


def more(count: int) -> List[str]:
    return [f"... {count} more line{'s' if count != 1 else ''} (--full-diff shows all)"] if count > 0 else []


def drawn_lines(text: str) -> List[str]:
    """`text` drawn with `visible`, one entry per line (each line's ↵ kept)."""
    return visible(text).split("\n") if text else [visible(text)]


def head(text: str, lines: int = HEAD_LINES) -> List[str]:
    """The first `lines` lines of `text`, drawn, then "N more lines"."""
    drawn = [line for line in drawn_lines(text) if line] or [visible(text)]
    return [clip_line(line) for line in drawn[:lines]] + more(len(drawn) - lines)


def full_diff(expected: str, actual: str) -> List[str]:
    """The whole unified diff of the drawn texts."""
    return list(
        difflib.unified_diff(
            [line for line in drawn_lines(expected) if line],
            [line for line in drawn_lines(actual) if line],
            "expected",
            "actual",
            lineterm="",
            n=2,
        )
    )


def first_difference(expected: str, actual: str) -> List[str]:
    """The first differing lines (expected `-`, actual `+`) with the line number and one line of context,
    then how many more diff lines the whole diff has."""
    old = [line for line in drawn_lines(expected) if line]
    new = [line for line in drawn_lines(actual) if line]
    opcodes = difflib.SequenceMatcher(None, old, new).get_opcodes()
    changed = sum(
        old_end - old_start + new_end - new_start
        for tag, old_start, old_end, new_start, new_end in opcodes
        if tag != "equal"
    )
    for tag, old_start, old_end, new_start, new_end in opcodes:
        if tag == "equal":
            continue
        shown = [f"first difference at line {old_start + 1} of expected, line {new_start + 1} of actual:"]
        shown += ["   " + clip_line(line) for line in old[max(0, old_start - CONTEXT_LINES) : old_start]]
        changes = ["  -" + clip_line(line) for line in old[old_start:old_end]]
        changes += ["  +" + clip_line(line) for line in new[new_start:new_end]]
        shown += changes[:CHANGE_LINES]
        return shown + more(changed - min(len(changes), CHANGE_LINES))
    return []


def first_hunk(unified: List[str]) -> List[str]:
    """A unified diff cut after its first run of changed lines (one line of context before it)."""
    changed = [index for index, line in enumerate(unified) if line[:1] in "-+" and line[:3] not in ("---", "+++")]
    if not changed:
        return [clip_line(line) for line in unified[:CHANGE_LINES]] + more(len(unified) - CHANGE_LINES)
    start = changed[0]
    end = start
    while end < len(unified) and unified[end][:1] in "-+" and end - start < CHANGE_LINES:
        end += 1
    context = [line for line in unified[max(0, start - CONTEXT_LINES) : start] if line[:2] != "@@"]
    shown = [line for line in unified[:start] if line[:3] in ("---", "+++")] + context + unified[start:end]
    return [clip_line(line) for line in shown] + more(sum(1 for index in changed if index >= end))


# --- what a finding stores ------------------------------------------------------------------------

STORED_HEAD = 12_000
STORED_TAIL = 3_000
"""A text a finding stores (an output, an expected text) keeps at most this much of its start and end; the
report says how long it was and its sha256, so a report of a run with a 10 MB output stays small."""

WINDOW_BEFORE = 400
"""Characters kept before the first difference of two long texts (whole lines, about)."""


def stored(text: str, head_chars: int = STORED_HEAD, tail_chars: int = STORED_TAIL) -> str:
    """`text` itself when short; else its head, a line saying what was cut (length and sha256), and its tail."""
    if len(text) <= head_chars + tail_chars + 200:
        return text
    import hashlib

    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    cut = len(text) - head_chars - tail_chars
    note = f"\n...[{cut} characters cut: {len(text)} in all, sha256 {digest}...]...\n"
    return text[:head_chars] + note + text[-tail_chars:]


def _common_prefix(one: str, other: str) -> int:
    """Length of the common prefix, in O(n) with chunked comparisons."""
    limit = min(len(one), len(other))
    low, step = 0, 4096
    while low < limit:
        high = min(limit, low + step)
        if one[low:high] != other[low:high]:
            while low < high and one[low] == other[low]:
                low += 1
            return low
        low = high
    return limit


def windows(expected: str, actual: str) -> tuple[str, str]:
    """Bounded views of two texts that differ, both starting a little before their first difference (at a line
    start) and saying how much equal text was left out; short texts come back as they are."""
    if len(expected) + len(actual) <= 2 * (STORED_HEAD + STORED_TAIL):
        return expected, actual
    first = _common_prefix(expected, actual)
    start = expected.rfind("\n", 0, max(0, first - WINDOW_BEFORE)) + 1 if first > WINDOW_BEFORE else 0
    note = f"...[{start} equal characters before the first difference left out]...\n" if start else ""
    return note + stored(expected[start:]), note + stored(actual[start:])
