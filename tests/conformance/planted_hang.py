"""A planted backend for the case-state tests: the reference handler, except that `create` of a path that is a FIFO
on the host waits (as a blocking open of the FIFO would) until `RELEASE` is set or `WAIT_SECONDS` pass. Never use it
as a backend."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path
from typing import Any

RELEASE = threading.Event()
"""Set after a run: the abandoned call returns instead of waiting out WAIT_SECONDS."""
WAIT_SECONDS = 60


class FifoCreateHangs:
    def __init__(self, root: Path) -> None:
        from refmem import MemoryHandler

        self.root = Path(root)
        self.handler = MemoryHandler(root)

    def execute(self, tool_input: Any) -> Any:
        if isinstance(tool_input, dict) and tool_input.get("command") == "create":
            host = self.root / str(tool_input.get("path", "")).removeprefix("/memories/")
            try:
                fifo = stat.S_ISFIFO(os.lstat(host).st_mode)
            except (OSError, ValueError):
                fifo = False
            if fifo:
                RELEASE.wait(WAIT_SECONDS)
        return self.handler.execute(tool_input)


def make(root: Path) -> FifoCreateHangs:
    return FifoCreateHangs(root)
