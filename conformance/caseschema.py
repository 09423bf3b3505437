"""The case schema (conformance/schema/case.schema.json): its parts that describe the tool come from refmem/tool.py.

Two parts are generated: the features a case may name (the six commands first, then the rest of the suite's
vocabulary) and `#/$defs/tool_input`, a well-formed input of each command (its parameters' kinds, which are
required, and what the command does with each). A step's `input` stays any JSON value, since cases send malformed
inputs on purpose; `tool_input` documents the well-formed ones for adapter writers. The file is written by
`python -m conformance.caseschema` in one layout, so that tests/conformance/test_case_schema.py can compare it
byte for byte with what this module makes and fail when the tool's description and the file differ.
"""

from __future__ import annotations

import json
import pathlib
import sys
from typing import Any, Dict, List

from refmem import tool

SCHEMA_FILE = pathlib.Path(__file__).resolve().parent / "schema" / "case.schema.json"

OTHER_FEATURES = (
    "listing",
    "errors",
    "input",
    "paths",
    "limits",
    "pagination",
    "security",
    "unicode",
    "crlf",
    "encoding",
    "symlink",
    "special-files",
    "hardlink",
    "root",
    "hidden",
    "sizes",
)
"""The features a case may name besides the commands (a feature named after a command is about that command)."""

KIND_SCHEMAS: Dict[str, Dict[str, Any]] = {
    tool.STRING: {"type": "string"},
    tool.INTEGER: {"type": "integer"},
    tool.RANGE: {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2},
}

WIDTH = 120
"""The longest line the layout puts a value on whole; longer values are spread over lines."""


def tool_input_schema() -> Dict[str, Any]:
    """A well-formed input of one of the commands."""
    variants: List[Dict[str, Any]] = []
    for command in tool.COMMANDS:
        properties: Dict[str, Any] = {"command": {"const": command.name}}
        for parameter in command.parameters:
            properties[parameter.name] = {"description": parameter.role.value, **KIND_SCHEMAS[parameter.kind]}
        variants.append(
            {
                "description": f"{command.name}: {'may change memories' if command.mutating else 'reads only'}.",
                "type": "object",
                "required": ["command", *command.required],
                "additionalProperties": False,
                "properties": properties,
            }
        )
    return {
        "description": "A well-formed input of one of the memory tool's commands (generated from refmem/tool.py).",
        "oneOf": variants,
    }


def generated(schema: Dict[str, Any]) -> Dict[str, Any]:
    """`schema` with its tool parts made from refmem/tool.py (the rest as it is)."""
    definitions = dict(schema["$defs"])
    definitions["feature"] = {"enum": [*tool.NAMES, *OTHER_FEATURES]}
    definitions["tool_input"] = tool_input_schema()
    return {**schema, "$defs": definitions}


def _packed(items: List[Any], inner: int) -> List[str]:
    """Plain values as many a line as fit, each line but the last ending in a comma."""
    lines: List[List[str]] = [[]]
    for item in items:
        piece = json.dumps(item, ensure_ascii=False) + ","
        if lines[-1] and inner + len(" ".join(lines[-1])) + 1 + len(piece) > WIDTH:
            lines.append([])
        lines[-1].append(piece)
    text = [" " * inner + " ".join(line) for line in lines]
    text[-1] = text[-1][:-1]
    return text


def render(value: Any, indent: int = 0, column: int = 0) -> str:
    """JSON in the file's layout: a value on one line when it fits in WIDTH from `column`, else one member or item
    a line (plain values packed), `indent` deeper than its parent."""
    flat = json.dumps(value, ensure_ascii=False)
    if column + len(flat) <= WIDTH or not isinstance(value, (dict, list)) or not value:
        return flat
    inner = indent + 2
    if isinstance(value, dict):
        members = []
        for key, item in value.items():
            head = " " * inner + json.dumps(key, ensure_ascii=False) + ": "
            members.append(head + render(item, inner, len(head)))
        return "{\n" + ",\n".join(members) + "\n" + " " * indent + "}"
    if any(isinstance(item, (dict, list)) for item in value):
        lines = ",\n".join(" " * inner + render(item, inner, inner) for item in value)
    else:
        lines = "\n".join(_packed(value, inner))
    return "[\n" + lines + "\n" + " " * indent + "]"


def text() -> str:
    """The schema file as it must read."""
    return render(generated(json.loads(SCHEMA_FILE.read_text(encoding="utf-8")))) + "\n"


def main() -> int:
    """Write the schema file when it differs from what the tool's description makes; 0 when it was already so."""
    wanted = text()
    if SCHEMA_FILE.read_text(encoding="utf-8") == wanted:
        return 0
    SCHEMA_FILE.write_text(wanted, encoding="utf-8")
    print(f"wrote {SCHEMA_FILE.name}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
