"""Fuzzer bytes -> a list of tool inputs (the structured input every sequence harness uses).

Mostly well-formed commands over a small world of names, so that sequences build on each other
(create, then edit, rename and delete what was created), with a steady trickle of hostile paths,
raw bytes and malformed inputs, and now and then a growth form (`grow.py`: a megabyte of a repeated
unit, a deep tree, a folder of many files, a nested or huge parameter) for the cost oracle. The output
is plain JSON data: a finding stores it as it is.
"""

from __future__ import annotations

from typing import Any, Dict, List

from . import grow, tokens
from .byte_reader import ByteReader

MAX_COMMANDS = 8
"""Forms per input; a growth form may expand into many commands (at most grow.MAX_EXPANDED in all)."""
COMMANDS = ("view", "create", "create", "str_replace", "insert", "delete", "rename", "view")
"""The draw: every command of tool.NAMES (tests/fuzz/test_pieces.py checks), views and creates twice (views see
what the others did, creates give them names). The order is part of what given bytes decode to."""

Command = Any  # a tool input: almost always a dict, sometimes deliberately not


class _State:
    def __init__(self, growth: bool) -> None:
        self.growth = growth  # growth forms on (grow.py)
        self.paths: List[str] = []
        self.texts: List[str] = []
        self.units: List[str] = []  # units of repeated texts: the old_str that occurs everywhere
        self.grown: List[str] = []  # paths created with a repeated text: later commands aim at them


def decode(data: bytes, growth: bool = True) -> List[Command]:
    """The commands `data` stands for; `growth=False` leaves out every growth form (grow.py)."""
    reader = ByteReader(data)
    state = _State(growth)
    count = 1 + reader.below(MAX_COMMANDS)
    commands: List[Command] = []
    for _ in range(count):
        if state.growth and reader.chance(1, 128):
            commands.extend(_growth(reader, state)[: grow.MAX_EXPANDED - len(commands)])
        else:
            commands.append(_command(reader, state))
        if reader.exhausted or len(commands) >= grow.MAX_EXPANDED:
            break
    return commands


def _growth(reader: ByteReader, state: _State) -> List[Command]:
    """Many files in one folder, or a chain of renames that deepens a tree."""
    top, expanded = grow.batch(reader) if reader.chance(1, 2) else grow.rename_chain(reader)
    state.paths.append(top)
    return list(expanded)


def _command(reader: ByteReader, state: _State) -> Command:
    if state.grown and reader.chance(1, 2):
        return _on_grown(reader, state)
    if reader.chance(1, 40):
        return _malformed(reader, state)
    kind = reader.pick(COMMANDS)
    command: Dict[str, Any] = {"command": kind}
    if kind == "view":
        command["path"] = _path(reader, state)
        if reader.chance(1, 4):
            command["view_range"] = _view_range(reader, state)
    elif kind == "create":
        command["path"] = _path(reader, state)
        units = len(state.units)
        command["file_text"] = _text(reader, state, grow_one_in=5)
        if len(state.units) > units:
            state.grown.append(command["path"])
    elif kind == "str_replace":
        command["path"] = _path(reader, state)
        command["old_str"] = reader.pick(state.units) if state.units and reader.chance(1, 2) else _text(reader, state)
        command["new_str"] = _text(reader, state)
    elif kind == "insert":
        command["path"] = _path(reader, state)
        command["insert_line"] = reader.below(8) - 1 if not reader.chance(1, 16) else _huge_line(reader, state)
        command["insert_text"] = _text(reader, state)
    elif kind == "delete":
        command["path"] = _path(reader, state)
    else:
        command["old_path"] = _path(reader, state)
        command["new_path"] = _path(reader, state)
    return command


def _on_grown(reader: ByteReader, state: _State) -> Command:
    """A command that works on the file last created with a repeated text: view it, or edit it with
    its own unit as old_str (occurring everywhere), or insert into it."""
    path = state.grown[-1]
    kind = reader.pick(("view", "str_replace", "insert"))
    if kind == "view":
        command: Dict[str, Any] = {"command": "view", "path": path}
        if reader.chance(1, 3):
            command["view_range"] = grow.huge_range(reader) if reader.chance(1, 2) else [1, 10]
        return command
    if kind == "insert":
        return {"command": "insert", "path": path, "insert_line": reader.below(3), "insert_text": _text(reader, state)}
    old = state.units[-1] if state.units and reader.chance(3, 4) else _text(reader, state)
    return {"command": "str_replace", "path": path, "old_str": old, "new_str": _text(reader, state)}


def _path(reader: ByteReader, state: _State) -> str:
    if state.grown and reader.chance(1, 2):
        return reader.pick(state.grown)
    if state.paths and reader.chance(1, 3):
        return reader.pick(state.paths)
    if reader.chance(1, 16):
        path = reader.pick(tokens.whole_paths())
    elif state.growth and reader.chance(1, 24):
        path = grow.deep_path(reader)
    else:
        prefix = reader.pick(tokens.ROOT_PREFIXES) if reader.chance(1, 4) else "/memories"
        segments = []
        for _ in range(reader.pick((0, 1, 1, 1, 2, 2, 3, 4))):
            kind = reader.below(12)
            if kind < 7:
                segments.append(reader.pick(tokens.plain_names()))
            elif kind < 10:
                segments.append(reader.pick(tokens.hostile_names()))
            else:
                segments.append(reader.text(12))
        path = "/".join([prefix] + segments)
        if reader.chance(1, 12):
            path += "/"
    state.paths.append(path)
    return path


def _huge_line(reader: ByteReader, state: _State) -> int:
    return grow.huge_int(reader) if state.growth else 10**6


def _text(reader: ByteReader, state: _State, grow_one_in: int = 12) -> str:
    if state.texts and reader.chance(1, 4):
        return reader.pick(state.texts)
    if state.growth and reader.chance(1, grow_one_in):
        text, unit = grow.repeated_text(reader)
        state.units.append(unit)
    elif not reader.chance(1, 4):
        text = reader.pick(tokens.TEXTS)
    else:
        text = reader.text(48)
    state.texts.append(text)
    return text


def _view_range(reader: ByteReader, state: _State) -> Any:
    if reader.chance(1, 10):
        return reader.pick(([1], [1, 2, 3], ["1", "2"], [True, 2], [1.0, 2], "1-2", None))
    if state.growth and reader.chance(1, 6):
        return grow.huge_range(reader) if reader.chance(3, 4) else [grow.nested(reader), 2]
    return [reader.below(6) - 1, reader.below(8) - 2]


def _malformed(reader: ByteReader, state: _State) -> Command:
    choice = reader.below(8)
    if choice == 0:
        return reader.pick((None, [], "view", 3, [{"command": "view", "path": "/memories"}]))
    if choice == 1:
        return {"path": _path(reader, state)}
    if choice == 2:
        return {"command": reader.pick((1, None, ["view"], True)), "path": "/memories"}
    if choice == 3:
        return {"command": reader.pick(("View", "list", "", "view ", "delete\x00")), "path": "/memories"}
    if choice == 4:
        return {"command": "create", "path": _path(reader, state), "file_text": None}
    if choice == 5:
        line = reader.pick((True, "1", 1.0, None))
        return {"command": "insert", "path": _path(reader, state), "insert_line": line, "insert_text": "x"}
    if choice == 6:
        if state.growth and reader.chance(1, 3):
            name = reader.pick(("path", "file_text", "old_str", "insert_text", "insert_line"))
            command = {"command": reader.pick(COMMANDS), "path": "/memories/notes.md"}
            command[name] = grow.nested(reader)
            return command
        return {"command": "view", "path": reader.pick((1, None, ["/memories"], {"p": 1}))}
    return {"command": "rename", "old_path": _path(reader, state)}
