"""refmem: the reference client-side handler for the `memory_20250818` tool.

Standard library only. `MemoryHandler(root).execute(tool_input)` runs one command against a real
directory that stands for `/memories`, and always returns a `Result`.
"""

from .handler import MemoryHandler
from .limits import DEFAULT_LIMITS, Limits
from .messages import Result
from .paths import PathError, VirtualPath, parse_path

__all__ = [
    "DEFAULT_LIMITS",
    "Limits",
    "MemoryHandler",
    "PathError",
    "Result",
    "VirtualPath",
    "parse_path",
]
__version__ = "0.1.0"
