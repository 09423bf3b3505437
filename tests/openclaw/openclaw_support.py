"""Helpers the OpenClaw tests share (the fixtures are in conftest.py)."""

from __future__ import annotations

import datetime
import os
import pathlib
import shutil
import subprocess
from typing import Any, Dict, List, Union

CANARY = "CANARY-7f3a"
"""The text of the files outside the workspace: never in a result."""
NOW = datetime.datetime(2026, 11, 23, tzinfo=datetime.timezone.utc).timestamp()
"""The clock of the search tests: daily logs decay from this day."""


def write(case: pathlib.Path, relative: str, data: Union[str, bytes]) -> pathlib.Path:
    """Put a file in the workspace CASE/memories, folders made as needed."""
    target = case / "memories" / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    return target


def paths_of(result: Dict[str, Any]) -> List[str]:
    return [hit["path"] for hit in result["results"]]


def openclaw_ready() -> bool:
    """Is OpenClaw installed beside its adapter, with a Node it runs on (>= 24)?"""
    from refmem_harness import openclaw_target

    node = openclaw_target.find_node()
    if not (openclaw_target.ADAPTER_DIR / "node_modules" / "openclaw").is_dir():
        return False
    if shutil.which(node) is None and not os.path.isfile(node):
        return False
    try:
        version = subprocess.run(
            [node, "-p", "process.versions.node"], capture_output=True, text=True, timeout=30
        ).stdout
    except OSError:
        return False
    major = version.strip().split(".")[0]
    return major.isdigit() and int(major) >= 24
