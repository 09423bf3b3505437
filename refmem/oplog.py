"""One structured line per command, for the operator of many tenants (D-OPLOG): which tenant, which command, how
long, and the class of its outcome; by construction never the content, never a path, never anything the model chose
but the command's name when it is one of the tool's.

    handler = logged(MemoryHandler(store, tenant="alice"), tenant="alice")   # lines to logging "refmem.commands"
    handler.execute(tool_input)                                               # as before; one line logged

A line is one JSON object (keys sorted): `{"command": "str_replace", "ms": 1.234, "outcome": "ok", "tenant":
"alice"}`. The outcome class comes from the result alone, read against the one message table (refmem/messages.py):
`ok`; for a D-IO result, the reason's key (`busy`, `no_space`, `quota_bytes`, `disconnected`, ...: what an operator
acts on); `internal` for the D-INTERNAL message; `refused` for every other error (what the model sent was refused:
its own to fix). `refmem exec --log-commands` and `refmem serve --log-commands` write the lines to standard error.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from typing import Any, Callable, Dict, Optional

from .messages import IO_REASONS, MESSAGES
from .tool import COMMANDS

LOGGER = "refmem.commands"
"""The `logging` logger the lines go to (level INFO), unless `logged` is given a `sink`."""
_NAMES = frozenset(command.name for command in COMMANDS)
_IO_PREFIX, _, _IO_SUFFIX = MESSAGES["io_error"].template.partition("{action}")
_REASON_BY_TEXT: Dict[str, str] = {text: key for key, text in IO_REASONS.items()}
_INTERNAL = MESSAGES["internal_error"].template


def outcome_class(output: str, is_error: bool) -> str:
    """The class of a result (see the module docstring): a pure function of the result."""
    if not is_error:
        return "ok"
    if output == _INTERNAL:
        return "internal"
    if output.startswith(_IO_PREFIX) and output.endswith("."):
        reason = output[:-1].rpartition(": ")[2]
        if reason in _REASON_BY_TEXT:
            return _REASON_BY_TEXT[reason]
    return "refused"


def command_name(tool_input: object) -> str:
    """The command's name when it is one of the tool's, else `unknown` (the model's text is never logged)."""
    name = tool_input.get("command") if isinstance(tool_input, dict) else None
    return name if isinstance(name, str) and name in _NAMES else "unknown"


def line(tenant: Optional[str], command: str, seconds: float, outcome: str) -> str:
    """One line: the JSON object of the module docstring (the default tenant is "")."""
    fields = {"tenant": tenant or "", "command": command, "ms": round(seconds * 1000, 3), "outcome": outcome}
    return json.dumps(fields, sort_keys=True, ensure_ascii=True)


class LoggedHandler:
    """A handler whose every `execute` logs one line (`logged`); every other attribute is the handler's own."""

    def __init__(self, handler: Any, tenant: Optional[str], sink: Callable[[str], None]) -> None:
        self._handler = handler
        self._tenant = tenant
        self._sink = sink

    def execute(self, tool_input: object) -> Any:
        started = time.monotonic()
        result = self._handler.execute(tool_input)
        elapsed = time.monotonic() - started
        outcome = outcome_class(result.output, result.is_error)
        with contextlib.suppress(Exception):  # a log that fails never fails the command
            self._sink(line(self._tenant, command_name(tool_input), elapsed, outcome))
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self._handler, name)


def _to_logging(text: str) -> None:
    logging.getLogger(LOGGER).info(text)


def logged(handler: Any, tenant: Optional[str] = None, sink: Optional[Callable[[str], None]] = None) -> LoggedHandler:
    """`handler` (anything with `execute(tool_input) -> Result`) logging one line per command for `tenant` to
    `sink` (a function of the line), or to the `logging` logger `LOGGER` at INFO."""
    return LoggedHandler(handler, tenant, _to_logging if sink is None else sink)
