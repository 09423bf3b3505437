"""Text from a finding file or a backend as the fuzzer's command lines print it: escaped, then cut by its kind.

The harness's `target_base.clipped` cuts to a length its caller gives; here the length is the kind's (a name, a
command, an output, a detail, an error), so that every line `refmem-fuzz` prints of the same kind is cut alike.
"""

from __future__ import annotations

from typing import Any

from refmem_harness import visible

SHOWN_CHARS = {"name": 200, "command": 300, "output": 200, "detail": 300, "error": 500}
"""How much of each kind of text from a file or a backend is printed (more is cut, with a count)."""


def printable_cut(text: Any, kind: str) -> str:
    """`text` from a file or a backend as it may be printed: non-printable characters escaped
    (line breaks and escape sequences included), cut at SHOWN_CHARS[kind]."""
    text = str(text)
    limit = SHOWN_CHARS[kind]
    drawn = visible.printable(text[: limit + 1])
    if len(text) <= limit and len(drawn) <= limit:
        return drawn
    return drawn[:limit] + f"... [{len(text):,} characters]"
