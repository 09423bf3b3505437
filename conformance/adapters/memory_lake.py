"""memory-lake-sdk's `MemoryBackendTool` over its `FileSystemMemoryBackend` as a conformance target (thin).

    refmem-conformance field --only memory-lake-sdk-0.3.0

The tool is the Anthropic SDK's `BetaAbstractMemoryTool` with lake's backend behind it; its `call(input)` is the
SDK's, so results are read as for the SDK (a string is a success, a `ToolError` an error result, anything else
raised). The backend keeps memories in `<base>/memories`: the base is the root's parent, as for the SDK.
"""

from __future__ import annotations

import importlib
import pathlib
from typing import Any

IMPLEMENTATION = {"name": "memory-lake-sdk MemoryBackendTool (FileSystemMemoryBackend)", "language": "python",
                  "version": "", "homepage": "https://pypi.org/project/memory-lake-sdk/"}


def make(root: pathlib.Path) -> Any:
    from importlib.metadata import version

    backend = importlib.import_module("memory_lake_sdk.memory_backend")
    memory_tool = importlib.import_module("memory_lake_sdk.memory_tool")

    root = pathlib.Path(root)
    if root.name != "memories":
        raise ValueError("the backend keeps memories in <base>/memories: the root must be a directory named memories")
    tool = memory_tool.MemoryBackendTool(backend.FileSystemMemoryBackend(str(root.parent)))
    tool.implementation = dict(IMPLEMENTATION, version=version("memory-lake-sdk"))
    return tool
