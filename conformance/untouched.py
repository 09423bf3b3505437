"""Whether an edit kept the bytes it did not name: the UNTOUCHED_BYTES_CHANGED effect (conformance/effects.py).

A `str_replace` names the one occurrence of `old_str`; an `insert` names the point after line `insert_line`.
Every other byte of the file is the user's data and must come back as it was: a CRLF turned into LF, or a U+2028,
U+2029, NEL (U+0085), VT, FF, FS, GS or RS turned into "\\n" (what rewriting a file through Python's
str.splitlines does) changes a file where nobody asked (D-VERDICT-UNTOUCHED).

The check asks only that the file before the edit is, byte for byte, a prefix and a suffix of the file after it,
split at one point: wherever a backend put the new text (its reading of a line may differ), whatever it made of
the new text itself (a CRLF file may translate it), and whether or not it gave the file a final newline, are left
to the other checks. Pure functions.
"""

from __future__ import annotations

import os
from typing import Any, Optional

MEMORIES = "/memories/"
EDITS = ("str_replace", "insert")


def edited_file(command: Any) -> Optional[str]:
    """The root-relative path an edit names, or None (not an edit, or a path that is not plainly below the root)."""
    if not isinstance(command, dict) or command.get("command") not in EDITS:
        return None
    path = command.get("path")
    if not isinstance(path, str) or not path.startswith(MEMORIES):
        return None
    relative = path[len(MEMORIES) :]
    parts = relative.split("/")
    if not relative or any(part in ("", ".", "..") for part in parts) or "\x00" in relative or "\\" in relative:
        return None
    return relative


def _kept(before: bytes, after: bytes) -> bool:
    """`before` is a prefix of `after` up to some point and the rest of it a suffix of `after`."""
    if len(before) > len(after):
        return False
    prefix = len(os.path.commonprefix([before, after]))
    suffix = len(os.path.commonprefix([before[::-1], after[::-1]]))
    return len(before) - suffix <= prefix


def untouched_changed(command: Any, before: bytes, after: bytes) -> Optional[str]:
    """What an edit that succeeded changed outside its span, or None when it kept every other byte."""
    if before == after:
        return None
    name = command.get("command")
    if name == "str_replace":
        old, new = command.get("old_str"), command.get("new_str", "")
        if not isinstance(old, str) or not old or not isinstance(new, str):
            return None
        span = old.encode("utf-8", "surrogatepass")
        start = before.find(span)
        if start < 0 or before.find(span, start + 1) >= 0:  # no exact single occurrence: other checks judge it
            return None
        head, tail = before[:start], before[start + len(span) :]
        if after.startswith(head) and after[len(head) :].endswith(tail):
            return None
        if after.endswith(b"\n") and not tail.endswith(b"\n") and after[len(head) : -1].endswith(tail):
            return None  # a final newline added: the final-newline state is not this check's
        return _said(before, after)
    if _kept(before, after) or (after.endswith(b"\n") and not before.endswith(b"\n") and _kept(before, after[:-1])):
        return None
    return _said(before, after)


BREAKS = {
    b"\r\n": "CRLF",
    b"\r": "CR",
    "\u2028".encode(): "U+2028",
    "\u2029".encode(): "U+2029",
    "\u0085".encode(): "NEL (U+0085)",
    b"\x0b": "VT",
    b"\x0c": "FF",
    b"\x1c": "FS",
    b"\x1d": "GS",
    b"\x1e": "RS",
}
"""What str.splitlines breaks on besides "\\n", as UTF-8 (CRLF first: its CR is not a lone CR)."""


def _said(before: bytes, after: bytes) -> str:
    """The finding's message: which line breaks went missing, when that is what changed."""
    gone = []
    rest_before, rest_after = before, after
    for raw, name in BREAKS.items():
        if rest_before.count(raw) > rest_after.count(raw):
            gone.append(name)
        rest_before, rest_after = rest_before.replace(raw, b""), rest_after.replace(raw, b"")
    which = f" ({', '.join(gone)} turned into something else)" if gone else ""
    return f"the edit changed bytes of the file outside the span it names{which}"
