"""The two tools as an application declares them to a model, and as the adapter protocol runs them.

`DEFINITIONS` are custom-tool declarations (name, description, input schema) in the shape of the
Messages API's `tools` list; the schemas are OpenClaw's (`MemoryGetSchema`, `MemorySearchSchema`,
without the wiki and session corpora), the descriptions ours. `reply` is what `refmem serve`
answers to an `execute` request whose `tool` is `memory_get` or `memory_search`
(conformance/openclaw/README.md): the text the model would get, `is_error`, and the object.
"""

from __future__ import annotations

import traceback
from typing import Any, Dict, List

from .workspace import TOOLS, OpenClawMemory, render

DEFINITIONS: List[Dict[str, Any]] = [
    {
        "name": "memory_get",
        "description": (
            "Read an excerpt of a memory file: MEMORY.md, USER.md, dreams.md or a Markdown file under memory/ "
            "(daily logs are memory/YYYY-MM-DD.md). Returns up to 120 lines from line `from` (default 1) within a "
            "12,000-character budget; when more follows, `truncated` is true and `nextFrom` says where to continue. "
            "status=not_found means the file does not exist."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "from": {"type": "integer", "minimum": 1},
                "lines": {"type": "integer", "minimum": 1},
            },
            "required": ["path"],
            "additionalProperties": False,
        },
    },
    {
        "name": "memory_search",
        "description": (
            "Search MEMORY.md, USER.md and the Markdown files under memory/ before answering questions about prior "
            "work, decisions, dates, people, preferences or todos. Returns snippets with their path and line range; "
            "use memory_get with that path and `from` = startLine to read more."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "maxResults": {"type": "integer", "minimum": 1},
                "minScore": {"type": "number"},
            },
            "required": ["query"],
            "additionalProperties": False,
        },
    },
]


def reply(workspace: OpenClawMemory, tool: str, tool_input: Any) -> Dict[str, Any]:
    """The protocol reply fields for one call: `output`, `is_error`, `result` (and `raised` when the
    workspace broke its promise never to raise). KeyError for a tool it does not run."""
    if tool not in TOOLS:
        raise KeyError(tool)
    try:
        result = workspace.execute(tool, tool_input)
    except Exception:  # noqa: BLE001 - a broken promise is reported, never fatal
        return {"output": "", "is_error": True, "result": None, "raised": traceback.format_exc()}
    output, is_error = render(result)
    return {"output": output, "is_error": is_error, "result": result}
