"""An exact memo of rendered file views, checked against the file's bytes on every use.

A model views the same few memory files again and again (the documentation's own prompt tells it to
look at its memory directory before anything else), and numbering a file's lines costs more than
reading it. A view's result depends only on the file's bytes, the path, the range asked for and the
handler's limits, so it can be remembered, provided a hit is proven, not assumed: the handler still
walks to the file, opens and reads it with every check, and a remembered result is used only when the
bytes just read equal, byte for byte, the bytes it was made from. File times and inode numbers are
never trusted for this (timestamps are coarse; inode numbers are reused).

Bounded: at most `max_bytes` of remembered bytes and results in all, each entry at most a sixteenth
of that; the oldest entries go first. Pure memory: nothing here touches the filesystem.
"""

from __future__ import annotations

import threading
from typing import Dict, Hashable, Optional, Tuple

from .messages import Result

_ENTRY_SHARE = 16  # one entry may take at most 1/16 of the whole


class ViewCache:
    """Remembered view results by key (path and range), each with the file bytes it was made from."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._entries: Dict[Hashable, Tuple[bytes, Result, int]] = {}
        self._used = 0
        self._lock = threading.Lock()  # writers only; a read is one dict look-up

    def get(self, key: Hashable, raw: bytes) -> Optional[Result]:
        """The result remembered for `key`, if it was made from exactly `raw`."""
        entry = self._entries.get(key)
        if entry is not None and entry[0] == raw:
            return entry[1]
        return None

    def put(self, key: Hashable, raw: bytes, result: Result) -> None:
        output = result.output
        # A str takes 1 byte a character when it is ASCII, up to 4 otherwise.
        cost = len(raw) + len(output) * (1 if output.isascii() else 4)
        if self.max_bytes <= 0 or cost * _ENTRY_SHARE > self.max_bytes:
            return
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._used -= old[2]
            while self._entries and self._used + cost > self.max_bytes:
                oldest = next(iter(self._entries))
                self._used -= self._entries.pop(oldest)[2]
            self._entries[key] = (raw, result, cost)
            self._used += cost

    @property
    def used_bytes(self) -> int:
        return self._used

    def __len__(self) -> int:
        return len(self._entries)
