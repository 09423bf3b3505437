"""Text with its invisible characters drawn, and diffs of such text (the yaml-test-suite markers).

space -> ␣    tab -> —»    newline -> ↵ (then a real line break)    no final newline -> ∎ at the end
any other control or non-printable character, and the markers themselves -> \\xNN or \\uNNNN
"""

from __future__ import annotations

import difflib
import os
import pathlib
import re
import sys
import tempfile
from typing import Dict, List, Tuple

MARKERS: Dict[str, str] = {" ": "␣", "\t": "—»", "\n": "↵\n"}
NO_FINAL_NEWLINE = "∎"
_MARKER_CHARS = set("␣—»↵∎\\")


def _char(char: str) -> str:
    if char in MARKERS:
        return MARKERS[char]
    if char in _MARKER_CHARS:
        return f"\\u{ord(char):04x}" if char != "\\" else "\\\\"
    if char.isprintable():
        return char
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def visible(text: str) -> str:
    """`text` with every invisible character drawn; ends with ∎ unless it ends with a newline."""
    drawn = "".join(_char(char) for char in text)
    return drawn if text.endswith("\n") else drawn + NO_FINAL_NEWLINE


def printable(text: str) -> str:
    """`text` with only its non-printable characters escaped (spaces, tabs and newlines escaped too)."""
    return "".join(char if char == " " or char.isprintable() else _char(char).rstrip("\n") for char in text)


def inline(text: str) -> str:
    """`visible` on one line: the real line breaks after ↵ are left out."""
    return visible(text).replace("\n", "")


def clip(text: str, limit: int = 4000) -> str:
    return text if len(text) <= limit else text[:limit] + f"... [{len(text) - limit} more characters]"


def diff(expected: str, actual: str, limit: int = 6000) -> str:
    """A unified diff of the two texts, drawn with `visible`, cut to `limit` characters."""
    lines: List[str] = list(
        difflib.unified_diff(
            visible(expected).splitlines(),
            visible(actual).splitlines(),
            "expected",
            "actual",
            lineterm="",
            n=2,
        )
    )
    return clip("\n".join(lines), limit)


# --- host paths out of published reports --------------------------------------------------------

_RUN_DIR = re.compile(r"(?:/[^/\s'\"`]+)*/refmem-conformance-[A-Za-z0-9_]+")


def _host_prefixes() -> List[Tuple[str, str]]:
    """Host folders a report may meet, longest first, with the placeholder each is shown as."""
    repo = str(pathlib.Path(__file__).resolve().parents[1])
    found = {
        sys.prefix: "<python>",
        sys.base_prefix: "<python>",
        sys.exec_prefix: "<python>",
        repo: "<repo>",
        os.getcwd(): "<cwd>",
        os.path.expanduser("~"): "~",
        tempfile.gettempdir(): "<tmp>",
    }
    return sorted(((path, mark) for path, mark in found.items() if len(path) > 1), key=lambda item: -len(item[0]))


def redact(text: str) -> str:
    """Draw host paths as placeholders (`<RUN>` for the run's case folders), so a report can be published."""
    text = _RUN_DIR.sub("<RUN>", text)
    for path, mark in _host_prefixes():
        text = text.replace(path, mark)
    return text
