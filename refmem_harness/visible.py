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
    """`text` on one line that a terminal and a CI log show as plain text: a tab drawn —», a newline ↵, every
    other non-printable character (control, format, separator; the space is kept) escaped as \\xNN or
    \\uNNNN, and the two ways a CI log line turns into a command broken: `::` where the line starts (after
    spaces) and `##[` anywhere in it (GitHub Actions reads both), drawn as `\\x3a:` and `##\\x5b`."""
    drawn = "".join(char if char == " " or char.isprintable() else _char(char).rstrip("\n") for char in text)
    drawn = drawn.replace("##[", "##\\x5b")
    body = drawn.lstrip(" ")
    if body.startswith("::"):
        drawn = drawn[: len(drawn) - len(body)] + "\\x3a" + body[1:]
    return drawn


def log_safe(text: str) -> str:
    """`text` (many lines, already drawn) with the ways a CI log line turns into a command broken on every line:
    `::` where a line starts and `##[` anywhere, as `printable` breaks them on one line. For what the runner
    prints to a terminal or a CI log that may quote an implementation's output (a failure's excerpt)."""
    if "::" not in text and "##[" not in text:
        return text
    lines = []
    for line in text.replace("##[", "##\\x5b").split("\n"):
        body = line.lstrip(" ")
        lines.append(line[: len(line) - len(body)] + "\\x3a" + body[1:] if body.startswith("::") else line)
    return "\n".join(lines)


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

RUN_PLACEHOLDER = "<RUN>"
_RUN_MARK = "/refmem-conformance-"
_PATH = re.compile(r"(?:/[^/\s'\"`]+)+")
"""A run of path names, `/name/name...`: each name starts at its slash and holds none, so a run is matched
in one pass to its end and never re-read (no backtracking)."""
_RUN_NAME = re.compile(r"/refmem-conformance-[A-Za-z0-9_]+")


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


def _run_dirs(text: str) -> str:
    """Each path that runs into a run's folder (`.../refmem-conformance-XXXX`) drawn as `<RUN>`, up to and
    including the last such folder name in the path; the rest of the path is kept. Linear: every character
    is looked at a bounded number of times."""
    if _RUN_MARK not in text:
        return text
    pieces: List[str] = []
    done = 0
    for path in _PATH.finditer(text):
        last = None
        for found in _RUN_NAME.finditer(text, path.start(), path.end()):
            last = found
        if last is not None:
            pieces += [text[done : path.start()], RUN_PLACEHOLDER]
            done = last.end()
    return "".join(pieces) + text[done:]


HIDDEN = "***"
"""What a secret in a target or an adapter's text is shown as."""
_URL_SECRET = re.compile(r"(?i)\b([a-z][a-z0-9+.-]{0,30}://[^\s:/?#@'\"`]*:)[^\s@/?#'\"`]+@")
"""The password of a URL's userinfo (`postgresql://USER:PASSWORD@HOST/DB`)."""
_KEY_SECRET = re.compile(r"(?i)\b(password|pgpassword)(\s*=\s*)('[^']*'|\"[^\"]*\"|[^\s'\"`&;,]+)")
"""A password given as a key (a libpq keyword DSN's `password=...`, an environment's `PGPASSWORD=...`)."""


def redact_secrets(text: str) -> str:
    """The one place secrets are taken out of what the harness shows or writes: a URL's password and a password
    given as a key become HIDDEN. Every writer (the terminal summary, the JSON, Markdown, HTML and JUnit
    reports, property finding files) puts its text through it, and `redact` does too."""
    text = _URL_SECRET.sub(lambda found: found.group(1) + HIDDEN + "@", text)
    return _KEY_SECRET.sub(lambda found: found.group(1) + found.group(2) + HIDDEN, text)


def redact(text: str) -> str:
    """Draw host paths as placeholders (`<RUN>` for the run's case folders) and take secrets out
    (`redact_secrets`), so a report can be published."""
    text = redact_secrets(_run_dirs(text))
    for path, mark in _host_prefixes():
        text = text.replace(path, mark)
    return text
