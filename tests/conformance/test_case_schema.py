"""The case schema's tool parts follow refmem/tool.py: the committed file is what conformance/caseschema.py makes."""

from __future__ import annotations

import json
from typing import Any, Dict

import pytest

from conformance import caseschema
from refmem import tool

VALUES: Dict[str, Any] = {
    "path": "/memories/a.md",
    "view_range": [1, 2],
    "file_text": "a\n",
    "old_str": "a",
    "new_str": "b",
    "insert_line": 0,
    "insert_text": "c\n",
    "old_path": "/memories/a.md",
    "new_path": "/memories/b.md",
}


def test_the_committed_schema_is_the_generated_one() -> None:
    assert caseschema.SCHEMA_FILE.read_text(encoding="utf-8") == caseschema.text(), (
        "conformance/schema/case.schema.json differs from refmem/tool.py: run python -m conformance.caseschema"
    )


def test_a_change_to_the_tool_changes_the_schema(monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison above can fail: a seventh command makes a different file."""
    extra = tool.Command("list", (tool.Parameter("path", tool.STRING, tool.Role.PATH_READ),), mutating=False)
    monkeypatch.setattr(tool, "COMMANDS", tool.COMMANDS + (extra,))
    monkeypatch.setattr(tool, "NAMES", tool.NAMES + ("list",))
    assert caseschema.SCHEMA_FILE.read_text(encoding="utf-8") != caseschema.text()


def test_the_layout_reads_back_as_the_same_document() -> None:
    schema = caseschema.generated(json.loads(caseschema.SCHEMA_FILE.read_text(encoding="utf-8")))
    assert json.loads(caseschema.render(schema)) == schema


@pytest.mark.parametrize("command", tool.NAMES)
def test_tool_input_accepts_each_command_and_refuses_it_without_a_required_parameter(command: str) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(caseschema.SCHEMA_FILE.read_text(encoding="utf-8"))
    document = {"$schema": schema["$schema"], "$ref": "#/$defs/tool_input", "$defs": schema["$defs"]}
    validator = jsonschema.Draft202012Validator(document)
    well_formed = tool.input_for(command, VALUES)
    assert validator.is_valid(well_formed)
    for name in tool.BY_NAME[command].required:
        assert not validator.is_valid({key: value for key, value in well_formed.items() if key != name}), name
    assert not validator.is_valid({**well_formed, "command": command.upper()})
