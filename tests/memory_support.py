"""The memory under test: a handler over a fresh `memories` folder, and what tests do to that folder directly.

Every result passes the checks every result must pass (a string of UTF-8 text, no traceback, no host path,
never the internal-error message, `is_error` set exactly when the text is not a success message), so a
test states only what is particular to it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any, Dict, List, Optional, Union

from refmem import MemoryHandler, Result
from refmem.messages import MESSAGES, render

# How each success message begins: its text up to the first field (the notes that end a page are not results).
SUCCESS_PREFIXES = tuple(
    message.template.split("{", 1)[0]
    for message in MESSAGES.values()
    if not message.is_error and not message.template.startswith("[")
)
INTERNAL_ERROR = render("internal_error").output


class Memory:
    """One `MemoryHandler` over `base/memories` (made by the handler), and helpers for that folder."""

    def __init__(self, base: Path, _opened: Optional[List[MemoryHandler]] = None, **options: Any) -> None:
        self.base = base
        self.root = base / "memories"
        self.handler = MemoryHandler(self.root, **options)
        self._opened = _opened if _opened is not None else []
        self._opened.append(self.handler)

    def with_options(self, **options: Any) -> Memory:
        """Another handler over the same folder, made with `options` (closed with this one)."""
        return Memory(self.base, self._opened, **options)

    def run(self, *given: object, **parameters: Any) -> Result:
        """Execute one tool input, given whole (any value) or as keyword parameters, and check the result."""
        tool_input = given[0] if given else parameters
        result = self.handler.execute(tool_input)
        assert isinstance(result.output, str) and isinstance(result.is_error, bool), result
        assert result.output != INTERNAL_ERROR, f"internal error for {tool_input!r}"
        assert str(self.base) not in result.output and "Traceback" not in result.output, result.output
        result.output.encode("utf-8")  # every result is UTF-8 text
        assert result.is_error is not result.output.startswith(SUCCESS_PREFIXES), result
        return result

    def put(self, rel: str, data: Union[str, bytes]) -> Path:
        """Write a file below the root directly, making its folders: what another program might leave there."""
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data.encode() if isinstance(data, str) else data)
        return path

    def read(self, rel: str) -> bytes:
        return (self.root / rel).read_bytes()

    def tree(self) -> Dict[str, Optional[bytes]]:
        """Every name below the root (the handler's `.refmem` folder aside) and what `_entry` makes of it."""
        found: Dict[str, Optional[bytes]] = {}
        for top, folders, files in os.walk(self.root):
            if top == str(self.root):
                folders[:] = [name for name in folders if name != ".refmem"]
            for name in folders + files:
                path = os.path.join(top, name)
                found[os.path.relpath(path, self.root)] = _entry(path)
        return found

    def close(self) -> None:
        for handler in self._opened:
            handler.close()


def _entry(path: str) -> Optional[bytes]:
    """A file's bytes, `->target` for a link, None for a folder, `<special>` for a FIFO or the like (never read)."""
    mode = os.lstat(path).st_mode
    if stat.S_ISLNK(mode):
        return b"->" + os.readlink(path).encode()
    if stat.S_ISDIR(mode):
        return None
    return Path(path).read_bytes() if stat.S_ISREG(mode) else b"<special>"
