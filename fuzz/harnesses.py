"""Every harness by name: the memory tool's (harness.py) and the plug-ins' (plugin.py), one table each.

A plug-in is registered here by a plain import, so that every module that needs a harness by its name (the
command line, replay, a finding file's `harness`) reads it from one place and no module imports it by name at
run time. A new plug-in is a module with its PLUGIN and its Harness, and a row in each table below.
"""

from __future__ import annotations

import pathlib
from typing import Callable, Dict, Optional

from . import openclaw
from .harness import MEMORY_HARNESSES, Harness, Options
from .plugin import Plugin

PLUGINS: Dict[str, Plugin] = {"openclaw": openclaw.PLUGIN}
"""Harness name -> its plug-in. Each name is also one of the finding files' harness names (harness/finding.py
HARNESS_NAMES)."""

HARNESSES: Dict[str, Callable[[Options, pathlib.Path], Harness]] = {
    **MEMORY_HARNESSES,
    "openclaw": openclaw.OpenClawHarness,
}
"""Harness name -> what runs it: the memory tool's, then the plug-ins'."""


def find(harness: str) -> Optional[Plugin]:
    """The plug-in whose finding files carry `harness`; None for the memory tool's own harnesses."""
    return PLUGINS.get(harness)
