"""The reference as it was before its str_replace fix: the cost oracle's tests must find it again.

Before the fix, a `str_replace` whose `old_str` occurs several times worked out the line number of
every occurrence by counting newlines from the start of the file (quadratic in the number of
occurrences), under the root's write lock, and listed every one of them in the error. This wrapper
keeps the fixed reference for everything, and for that one error path redoes the old work and
returns the old, unbounded message, so the cost is exactly the old cost on top of the new one.

Test code only: `make(root)` is a `python:prefix_backend:make` target for the fuzzer.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any, List

from refmem import MemoryHandler, Result
from refmem.messages import MESSAGES, clip, render
from refmem.paths import parse_path

MULTIPLE = MESSAGES["str_replace_multiple"].template.split("{", 1)[0]


class PrefixReference:
    storage = "filesystem"

    def __init__(self, root: Path) -> None:
        self.root = str(root)
        self.handler = MemoryHandler(root)

    def execute(self, command: Any) -> Result:
        result = self.handler.execute(command)
        if result.is_error and result.output.startswith(MULTIPLE):
            return self._old_multiple(command)
        return result

    def _old_multiple(self, command: Any) -> Result:
        content = self._read(command["path"])
        old: str = command["old_str"]
        if "\n" in content and content.count("\n") == content.count("\r\n"):
            content, old = content.replace("\r\n", "\n"), old.replace("\r\n", "\n")
        offsets: List[int] = []
        position = content.find(old)
        while position != -1:
            offsets.append(position)
            position = content.find(old, position + 1)
        lines = sorted({content.count("\n", 0, offset) + 1 for offset in offsets})  # the old per-occurrence count
        echoed = clip(command["old_str"], self.handler.limits.max_echo_chars)
        return render("str_replace_multiple", old_str=echoed, line_numbers=", ".join(str(n) for n in lines))

    def _read(self, path: str) -> str:
        """The file the reference has just read; no link is followed on the way."""
        host = self.root
        for name in parse_path(path).parts:
            host = os.path.join(host, name)
            if stat.S_ISLNK(os.lstat(host).st_mode):
                raise ValueError("a link on the way")
        fd = os.open(host, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as handle:
            return handle.read().decode("utf-8")


def make(root: Path) -> PrefixReference:
    return PrefixReference(root)
