"""Shared helpers for the reliability tests (crashes, concurrency, faults).

These tests drive the public API only: ``MemoryHandler(root).execute(dict) -> Result``. Figures
they measure (kill counts, outcomes) are printed and, when ``REFMEM_RELIABILITY_REPORT`` names a
file, appended to it as JSON lines, so SECURITY.md can quote the numbers of a given run.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Dict, List, Tuple

from refmem.handler import MemoryHandler  # noqa: F401 - re-exported to the reliability tests

TEMP_PREFIX = ".refmem-tmp-"
BOOKKEEPING = ".refmem"

IO_REASONS = {
    "ENOSPC": "no space left on device",
    "EIO": "input/output error",
    "EACCES": "permission denied",
    "EPERM": "permission denied",
    "EROFS": "read-only file system",
}


def report(name: str, **figures: object) -> None:
    """Print one line of figures and append it to $REFMEM_RELIABILITY_REPORT if set."""
    line = {"test": name, "time": time.strftime("%Y-%m-%dT%H:%M:%S"), **figures}
    print(f"\n[reliability] {json.dumps(line, sort_keys=True)}", file=sys.stderr)
    target = os.environ.get("REFMEM_RELIABILITY_REPORT")
    if target:
        with open(target, "a", encoding="utf-8") as out:
            out.write(json.dumps(line, sort_keys=True) + "\n")


def disk_files(root: Path, below: str = "") -> Tuple[Dict[str, str], List[str]]:
    """({relative path: text} of the regular files a model can see, [temp files left on disk]).

    The bookkeeping folder at the root is skipped; any other hidden name is returned as a file so
    that a test notices it.
    """
    files: Dict[str, str] = {}
    temps: List[str] = []
    base = root / below if below else root
    if not base.exists():
        return files, temps
    for dirpath, dirnames, filenames in os.walk(base):
        rel_dir = os.path.relpath(dirpath, root)
        if rel_dir == ".":
            dirnames[:] = [d for d in dirnames if d != BOOKKEEPING]
        for name in filenames:
            rel = os.path.normpath(os.path.join(rel_dir, name))
            if name.startswith(TEMP_PREFIX):
                temps.append(rel)
                continue
            full = os.path.join(dirpath, name)
            if os.path.islink(full):
                files[rel] = "<symlink>"
                continue
            with open(full, "rb") as handle:
                files[rel] = handle.read().decode("utf-8", "replace")
    return files, temps


def all_temps(root: Path) -> List[str]:
    return disk_files(root)[1]


def assert_clean_listing(handler, path: str = "/memories") -> str:
    result = handler.execute({"command": "view", "path": path})
    assert not result.is_error, result.output
    assert ".refmem" not in result.output, result.output
    return result.output


def io_error_pattern(path: str, reason: str) -> re.Pattern[str]:
    """D-IO: ``Error: Could not {action} {path}: {reason}.``"""
    return re.compile(r"Error: Could not [a-z]+ " + re.escape(path) + ": " + re.escape(reason) + r"\.")


INTERNAL_ERROR = "Error: The command could not be completed because of an internal error."


def explain(handler, tool_input: dict, result) -> str:
    """The result, and for an internal error the handler's traceback (diagnostics only)."""
    text = f"{tool_input!r} -> {result.output[:300]!r}"
    if result.output == INTERNAL_ERROR and hasattr(handler, "_execute"):
        import traceback

        try:
            handler._execute(tool_input)
        except Exception:  # noqa: BLE001
            text += "\n" + traceback.format_exc(limit=6)
    return text
