"""OpenClaw's workspace memory, the reference: `memory_get` and `memory_search` over the memory
tool's directory, daily logs, and the search index (see docs/openclaw.md).

    from refmem.openclaw import OpenClawMemory
    memory = OpenClawMemory("/path/to/memories")
    memory.memory_get("MEMORY.md")
    memory.memory_search("billing migration")
    memory.append_daily("Decided to move billing to Postgres.")
"""

from __future__ import annotations

from .embeddings import EmbeddingError, OpenAIEmbeddings, WordLlamaEmbeddings
from .index import Embed, Refreshed, fts5_available
from .limits import DEFAULT_OPENCLAW_LIMITS, OpenClawLimits
from .workspace import TOOLS, OpenClawMemory, render

__all__ = [
    "DEFAULT_OPENCLAW_LIMITS",
    "TOOLS",
    "Embed",
    "EmbeddingError",
    "OpenClawLimits",
    "OpenAIEmbeddings",
    "OpenClawMemory",
    "Refreshed",
    "fts5_available",
    "WordLlamaEmbeddings",
    "render",
]
