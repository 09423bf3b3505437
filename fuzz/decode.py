"""Fuzzer bytes -> a list of tool inputs (the structured input every sequence harness uses).

Mostly well-formed commands over a small world of names, so that sequences build on each other
(create, then edit, rename and delete what was created), with a steady trickle of hostile paths,
raw bytes and malformed inputs. The output is plain JSON data: a finding stores it as it is.
"""

from __future__ import annotations

from typing import Any, Dict, List

from . import tokens
from .byte_reader import ByteReader

MAX_COMMANDS = 8
COMMANDS = ("view", "create", "create", "str_replace", "insert", "delete", "rename", "view")

Command = Any  # a tool input: almost always a dict, sometimes deliberately not


class _State:
    def __init__(self) -> None:
        self.paths: List[str] = []
        self.texts: List[str] = []


def decode(data: bytes) -> List[Command]:
    reader = ByteReader(data)
    state = _State()
    count = 1 + reader.below(MAX_COMMANDS)
    commands = []
    for _ in range(count):
        commands.append(_command(reader, state))
        if reader.exhausted and len(commands) >= 1:
            break
    return commands


def _command(reader: ByteReader, state: _State) -> Command:
    if reader.chance(1, 40):
        return _malformed(reader, state)
    kind = reader.pick(COMMANDS)
    command: Dict[str, Any] = {"command": kind}
    if kind == "view":
        command["path"] = _path(reader, state)
        if reader.chance(1, 4):
            command["view_range"] = _view_range(reader)
    elif kind == "create":
        command["path"] = _path(reader, state)
        command["file_text"] = _text(reader, state)
    elif kind == "str_replace":
        command["path"] = _path(reader, state)
        command["old_str"] = _text(reader, state)
        command["new_str"] = _text(reader, state)
    elif kind == "insert":
        command["path"] = _path(reader, state)
        command["insert_line"] = reader.below(8) - 1 if not reader.chance(1, 16) else 10**6
        command["insert_text"] = _text(reader, state)
    elif kind == "delete":
        command["path"] = _path(reader, state)
    else:
        command["old_path"] = _path(reader, state)
        command["new_path"] = _path(reader, state)
    return command


def _path(reader: ByteReader, state: _State) -> str:
    if state.paths and reader.chance(1, 3):
        return reader.pick(state.paths)
    if reader.chance(1, 16):
        path = reader.pick(tokens.whole_paths())
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


def _text(reader: ByteReader, state: _State) -> str:
    if state.texts and reader.chance(1, 4):
        return reader.pick(state.texts)
    if not reader.chance(1, 4):
        text = reader.pick(tokens.TEXTS)
    else:
        text = reader.text(48)
    state.texts.append(text)
    return text


def _view_range(reader: ByteReader) -> Any:
    if reader.chance(1, 10):
        return reader.pick(([1], [1, 2, 3], ["1", "2"], [True, 2], [1.0, 2], "1-2", None))
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
        return {"command": "view", "path": reader.pick((1, None, ["/memories"], {"p": 1}))}
    return {"command": "rename", "old_path": _path(reader, state)}
