"""Memory expiration: last-use records (`access.py`) and pruning (`prune.py`), and the durations a user
gives `refmem prune`. This module keeps the names the command line, the fuzzer and applications import.
"""

from __future__ import annotations

import re

from ._access import (
    DEFAULT_RESOLUTION,
    AccessTracker,
    Record,
    record_name,
    virtual_path,
)
from ._store_messages import DURATION_FORMAT, DURATION_NOT_POSITIVE
from .prune import STALE_TEMP_AGE, PruneReport, prune

__all__ = [
    "DEFAULT_RESOLUTION",
    "STALE_TEMP_AGE",
    "AccessTracker",
    "PruneReport",
    "Record",
    "parse_duration",
    "prune",
    "record_name",
    "virtual_path",
]

_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhdw])")


def parse_duration(text: str) -> float:
    """Seconds in ``30d``, ``12h``, ``90m``, ``3600s``, ``2w`` or a sum such as ``1w2d`` or ``1.5h``.

    Units: s, m (minutes), h, d, w; lower case only (no months or years: their length varies).
    A bare number, an unknown unit, a negative or a zero duration raises ValueError.
    """
    cleaned = text.strip() if isinstance(text, str) else ""
    if not cleaned:
        raise ValueError("empty duration: use a number and a unit, e.g. 30d, 12h, 90m, 3600s, 2w")
    total = 0.0
    pos = 0
    for match in _DURATION.finditer(cleaned):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    if pos != len(cleaned):
        raise ValueError(DURATION_FORMAT.format(text=text))
    if total <= 0:
        raise ValueError(DURATION_NOT_POSITIVE.format(text=text))
    return total
