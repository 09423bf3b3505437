"""The memory tool described once: its six commands, their parameters and what each parameter is for.

Every table that lists the commands reads from here: the handler's command table (which adds its own verbs and
functions), and in the harness the fuzzer's decoder and model, the property suite's vocabulary, the data-loss
check, the security matrix and the case schema (conformance/schema/case.schema.json, generated). A new parameter
or command is one row here, and each of those follows it or fails a test that names the difference.

A parameter has a kind (what a well-formed value is), whether the documentation requires it, and a role: what the
command does with it. The roles are finer than "path" and "text" because the checks need them: data loss asks
which paths may change what exists (`Role.changes_existing`) and which only name a new place
(`Role.names_new_place`), and an edit's path is one whose last link the edit may follow to the text the model saw.

Pure data, standard library only; nothing here reads a value a model sent.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Any, Callable, Dict, Mapping, Tuple

STRING, INTEGER, RANGE = "string", "integer", "range"
"""Parameter kinds: a JSON string, a JSON integer (never a boolean), a list of two integers."""


class Role(enum.Enum):
    """What a command does with a parameter."""

    PATH_READ = "path read"
    """Read, never changed (view)."""
    PATH_CREATED = "path created"
    """A new file's place; what already exists there is never overwritten (create)."""
    PATH_EDITED = "path edited"
    """An existing file rewritten in place (str_replace, insert)."""
    PATH_REMOVED = "path removed"
    """Removed with everything below it (delete)."""
    PATH_MOVED_FROM = "path moved from"
    """Moved away with everything below it (rename)."""
    PATH_MOVED_TO = "path moved to"
    """Where a move lands; what already exists there is never overwritten (rename)."""
    TEXT = "text"
    """Text the command writes (file_text, new_str, insert_text)."""
    TEXT_SOUGHT = "text sought"
    """Text the command looks for in a file (old_str)."""
    LINE = "line"
    """A line number (insert_line)."""
    LINE_RANGE = "line range"
    """First and last line shown (view_range)."""

    @property
    def is_path(self) -> bool:
        """A path parameter: where a hostile path can be sent."""
        return self.value.startswith("path ")

    @property
    def is_text(self) -> bool:
        """A text parameter: the handler bounds it by the largest file it writes."""
        return self in (Role.TEXT, Role.TEXT_SOUGHT)

    @property
    def changes_existing(self) -> bool:
        """A path through which the command may change or remove what already exists."""
        return self in (Role.PATH_EDITED, Role.PATH_REMOVED, Role.PATH_MOVED_FROM)

    @property
    def names_new_place(self) -> bool:
        """A path that names a place to make, never the right to change what is there."""
        return self in (Role.PATH_CREATED, Role.PATH_MOVED_TO)


@dataclasses.dataclass(frozen=True)
class Parameter:
    """One parameter of a command, as the documentation gives it."""

    name: str
    kind: str
    """STRING, INTEGER or RANGE."""
    role: Role
    required: bool = True


@dataclasses.dataclass(frozen=True)
class Command:
    """One command: its parameters and whether it may change memories."""

    name: str
    parameters: Tuple[Parameter, ...]
    """In the order the documentation lists them (the order the handler checks them in)."""
    mutating: bool
    """Whether it may change memories (refused in read-only mode)."""

    @property
    def required(self) -> Tuple[str, ...]:
        """The names of the parameters the documentation requires, in order."""
        return tuple(parameter.name for parameter in self.parameters if parameter.required)


_PATH = "path"

COMMANDS: Tuple[Command, ...] = (
    Command(
        "view",
        (Parameter(_PATH, STRING, Role.PATH_READ), Parameter("view_range", RANGE, Role.LINE_RANGE, required=False)),
        mutating=False,
    ),
    Command("create", (Parameter(_PATH, STRING, Role.PATH_CREATED), Parameter("file_text", STRING, Role.TEXT)), True),
    Command(
        "str_replace",
        (
            Parameter(_PATH, STRING, Role.PATH_EDITED),
            Parameter("old_str", STRING, Role.TEXT_SOUGHT),
            Parameter("new_str", STRING, Role.TEXT),
        ),
        mutating=True,
    ),
    Command(
        "insert",
        (
            Parameter(_PATH, STRING, Role.PATH_EDITED),
            Parameter("insert_line", INTEGER, Role.LINE),
            Parameter("insert_text", STRING, Role.TEXT),
        ),
        mutating=True,
    ),
    Command("delete", (Parameter(_PATH, STRING, Role.PATH_REMOVED),), mutating=True),
    Command(
        "rename",
        (Parameter("old_path", STRING, Role.PATH_MOVED_FROM), Parameter("new_path", STRING, Role.PATH_MOVED_TO)),
        mutating=True,
    ),
)
"""The six commands, in the documentation's order."""

BY_NAME: Dict[str, Command] = {command.name: command for command in COMMANDS}
NAMES: Tuple[str, ...] = tuple(BY_NAME)

PATH_SLOTS: Tuple[Tuple[str, str], ...] = tuple(
    (command.name, parameter.name) for command in COMMANDS for parameter in command.parameters if parameter.role.is_path
)
"""(command, parameter) for every path a command takes: where a hostile path can be sent."""


def parameters_where(test: Callable[[Role], bool]) -> Dict[str, Tuple[str, ...]]:
    """For each command with a parameter whose role passes `test`, the names of those parameters in order."""
    found = {
        command.name: tuple(parameter.name for parameter in command.parameters if test(parameter.role))
        for command in COMMANDS
    }
    return {name: parameters for name, parameters in found.items() if parameters}


def input_for(command: str, values: Mapping[str, Any]) -> Dict[str, Any]:
    """The tool input of `command` with the parameters `values` gives, in the command's order (those it does not
    give are left out; a value for a parameter the command does not take is ignored)."""
    found: Dict[str, Any] = {"command": command}
    for parameter in BY_NAME[command].parameters:
        if parameter.name in values:
            found[parameter.name] = values[parameter.name]
    return found
