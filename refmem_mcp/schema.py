"""The tools `refmem mcp` lists, with their input schemas. Pure data, standard library only.

The memory tool's schema is made from refmem/tool.py, where the six commands are described once: one object
with `command` (the six names) and every parameter any command takes, only `command` required, since which
others a command needs is the handler's to check and to answer in the documented words (D-MCP-SCHEMA). A schema
that required more would let a client refuse an input before the handler could give its message.
"""

from __future__ import annotations

from typing import Any, Dict, List

from refmem import tool
from refmem.openclaw.tools import DEFINITIONS as OPENCLAW_DEFINITIONS

MEMORY_TOOL = "memory"
"""The memory tool's name, as the Messages API's `memory_20250818` tool is named."""

KIND_SCHEMAS: Dict[str, Dict[str, Any]] = {
    tool.STRING: {"type": "string"},
    tool.INTEGER: {"type": "integer"},
    tool.RANGE: {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2},
}

MEMORY_DESCRIPTION = (
    "Your memory directory, /memories: view a directory or a file (view_range: first and last line), create a "
    "file, str_replace a unique string, insert text after a line, delete, or rename. Paths start with /memories."
)


def memory_input_schema() -> Dict[str, Any]:
    """The memory tool's input schema, from refmem/tool.py."""
    properties: Dict[str, Any] = {"command": {"type": "string", "enum": list(tool.NAMES)}}
    for command in tool.COMMANDS:
        for parameter in command.parameters:
            entry = properties.setdefault(parameter.name, {**KIND_SCHEMAS[parameter.kind], "description": ""})
            used = f"{command.name}: {parameter.role.value}"
            entry["description"] = f"{entry['description']}; {used}" if entry["description"] else used
    return {"type": "object", "properties": properties, "required": ["command"]}


def definitions(openclaw: bool) -> List[Dict[str, Any]]:
    """(name, description, inputSchema) of every tool served: the memory tool, then OpenClaw's with `openclaw`."""
    found = [{"name": MEMORY_TOOL, "description": MEMORY_DESCRIPTION, "inputSchema": memory_input_schema()}]
    if openclaw:
        for definition in OPENCLAW_DEFINITIONS:
            found.append(
                {
                    "name": definition["name"],
                    "description": definition["description"],
                    "inputSchema": definition["input_schema"],
                }
            )
    return found
