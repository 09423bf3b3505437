"""A python: target factory for the Anthropic Python SDK's `BetaLocalFilesystemMemoryTool`.

Used only when `conformance/adapters/anthropic_sdk.py` is absent. The SDK tool keeps its memories in
`BASE/memories`; the fuzzer's root is always a folder named `memories`, so BASE is its parent.
"""

from __future__ import annotations

import pathlib
from typing import Any


def make(root: pathlib.Path) -> Any:
    try:
        from anthropic.tools.memory import BetaLocalFilesystemMemoryTool
    except ImportError:  # older SDK layouts
        from anthropic.lib.tools._beta_builtin_memory_tool import BetaLocalFilesystemMemoryTool

    if root.name != "memories":
        raise ValueError("the SDK tool needs a root folder named 'memories'")
    return BetaLocalFilesystemMemoryTool(base_path=str(root.parent))
