"""The adapter protocol's vocabulary (conformance/PROTOCOL.md), written once.

Both ends of the protocol, the server in `refmem/serve.py` and the conformance runner, name the same
messages, fields, codes and bounds; keeping them here means a rename or a new bound cannot leave one
side speaking an older dialect. Standard library only, no state: names, and pure functions that turn
one line into a message and back.
"""

from __future__ import annotations

import json
from typing import Any, Dict, Optional, Tuple, Union

VERSION = 1
"""The protocol version this vocabulary describes (`start` request and reply)."""

MAX_LINE_BYTES = 16 * 1024 * 1024
"""Longest request line a server reads, in bytes, without its newline (D-SERVE-LINE-LIMIT).

A write may carry a file of up to `Limits.max_file_bytes` (1 MiB) and an edit two such texts; with
every character written as a `\\uXXXX` escape (6 bytes for each 1-byte character) that is 12 MiB of
JSON, so 16 MiB leaves room while bounding what one line can make a server hold in memory. A longer
line is read to its end, dropped, and answered with a `line-too-long` error."""

# --- message kinds (the `cmd` of a request) ---------------------------------------------------

CMD_START = "start"
CMD_RESET = "reset"
CMD_EXECUTE = "execute"
CMD_STOP = "stop"
COMMANDS = (CMD_START, CMD_RESET, CMD_EXECUTE, CMD_STOP)
SEQUENCED_COMMANDS = (CMD_RESET, CMD_EXECUTE)
"""Requests that carry `seq` (every request but `start` and `stop`)."""

# --- request fields ---------------------------------------------------------------------------

CMD = "cmd"
SEQ = "seq"
VERSION_FIELD = "version"  # in `start` and its reply
ROOT = "root"  # reset
OPTIONS = "options"  # reset (an object), start reply (a list of names)
INPUT = "input"  # execute
TOOL = "tool"  # execute: which tool runs the input (default TOOL_MEMORY); the start reply lists them in TOOLS
TOOLS = "tools"
RESULT = "result"  # execute reply for an OpenClaw tool: its result object as well as the rendered output
SHARE = "share"  # start (true: this process is one of several sessions over the same storage) and its reply
TENANT = "tenant"  # reset: whose memories the handler serves; the start reply's TENANTS says it can
TENANTS = "tenants"  # start reply: true when reset accepts a tenant
SHARE_REASON = "share_reason"  # start reply with share false: why this adapter cannot share its storage
CMD_READ = "read"  # optional request: a file's bytes (`path`), sent only to an adapter whose start reply has READS
READS = "read"  # start reply: true when the adapter answers CMD_READ
PATH = "path"  # read: the file, as the model names it (`/memories/...`)
FOUND = "found"  # read reply: false when there is no such file
CONTENT_BASE64 = "base64"  # read reply: the file's bytes, in base64
CMD_COUNTS = "counts"  # optional request: the session's memory-tool commands so far, sent only to an adapter whose
# start reply has COUNTS (D-SERVE-COUNTS); it changes nothing
COUNTS = "counts"  # start reply: true when the adapter answers CMD_COUNTS; counts reply: {command: {outcome: n}}
COUNTS_MS = "ms"  # counts reply: {command: milliseconds those commands took, summed}

# --- reply fields -----------------------------------------------------------------------------

READY = "ready"
IMPLEMENTATION = "implementation"
IMPLEMENTATION_FIELDS = ("name", "language", "version", "homepage")
STORAGE = "storage"
OK = "ok"
OUTPUT = "output"
IS_ERROR = "is_error"
RAISED = "raised"
ERROR = "error"
ERROR_CODE = "code"
ERROR_MESSAGE = "message"

STORAGE_FILESYSTEM = "filesystem"
STORAGE_OWN = "own"
STORAGE_KINDS = (STORAGE_FILESYSTEM, STORAGE_OWN)

TOOL_MEMORY = "memory"  # the memory_20250818 tool: view, create, str_replace, insert, delete, rename
TOOL_NAMES = (TOOL_MEMORY, "memory_get", "memory_search")  # what `refmem serve` runs over one root
"""`storage` in the start reply; absent means `filesystem`."""

OPTION_NAMES = ("read_only", "allow", "limits", "content_policy")
"""Every handler option a `reset` may carry (CASE-FORMAT.md `options`)."""

# --- error codes ------------------------------------------------------------------------------

BAD_JSON = "bad-json"
BAD_REQUEST = "bad-request"
UNKNOWN_CMD = "unknown-cmd"
NOT_STARTED = "not-started"
NO_ROOT = "no-root"
BAD_ROOT = "bad-root"
RESET_FAILED = "reset-failed"
UNSUPPORTED_VERSION = "unsupported-version"
INTERNAL = "internal"
LINE_TOO_LONG = "line-too-long"
UNKNOWN_TOOL = "unknown-tool"
ERROR_CODES = (
    BAD_JSON,
    BAD_REQUEST,
    UNKNOWN_CMD,
    NOT_STARTED,
    NO_ROOT,
    BAD_ROOT,
    RESET_FAILED,
    UNSUPPORTED_VERSION,
    INTERNAL,
    LINE_TOO_LONG,
    UNKNOWN_TOOL,
)

# --- the runner's documented waits ------------------------------------------------------------

START_TIMEOUT_SECONDS = 60.0
"""How long the runner waits for the `start` reply."""
STEP_TIMEOUT_SECONDS = 10.0
"""How long the runner waits for any other reply, unless told otherwise (`--timeout`)."""
STOP_GRACE_SECONDS = 2.0
"""How long the runner waits after `stop` before it kills the adapter."""

# --- protocol-level error texts (not tool results) ---------------------------------------------

LINE_ERRORS: Dict[str, Tuple[str, str]] = {
    "too_long": (LINE_TOO_LONG, "the line is longer than {limit} bytes"),
    "not_utf8": (BAD_JSON, "the line is not UTF-8"),
    "not_json": (BAD_JSON, "the line is not JSON"),
    "too_deep": (BAD_JSON, "the line nests arrays or objects too deeply to read"),
}
"""Why a line could not be read: key -> (code, message template; `{limit}` is the line bound)."""


_JSON_WHITESPACE = " \t\r\n"


class LineError(Exception):
    """A line that is not a JSON text; `code` and `message` are what the error reply says."""

    def __init__(self, key: str, limit: int = MAX_LINE_BYTES) -> None:
        code, template = LINE_ERRORS[key]
        message = template.format(limit=limit)
        super().__init__(message)
        self.code = code
        self.message = message


class _Blank:
    def __repr__(self) -> str:
        return "BLANK"


BLANK: Any = _Blank()
"""What `decode_line` returns for a blank line (JSON whitespace only), which is not a request."""


def decode_line(line: Union[str, bytes]) -> Any:
    """The JSON value on one line, or `BLANK`; raises LineError for a line that is not a JSON text.

    Bytes must be UTF-8 (JSON's encoding between systems). A line longer than the bound (counted in
    characters for a str) is refused before it is decoded; nesting deep enough to exhaust the
    parser's stack is refused too. Blank means JSON whitespace only: a line of other spaces is not
    JSON and is answered.
    """
    if len(line) > MAX_LINE_BYTES + 1:  # the newline is not counted
        raise LineError("too_long")
    if isinstance(line, bytes):
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError:
            raise LineError("not_utf8") from None
    else:
        text = line
    if not text.strip(_JSON_WHITESPACE):
        return BLANK
    try:
        return json.loads(text)
    except RecursionError:
        raise LineError("too_deep") from None
    except ValueError:
        raise LineError("not_json") from None


def encode_message(message: Dict[str, Any]) -> str:
    """One message as a line of ASCII JSON, without the newline: non-ASCII characters, lone
    surrogates included, travel as `\\uXXXX` escapes, which survive any pipe."""
    return json.dumps(message, ensure_ascii=True)


def error_reply(code: str, message: str, seq: Optional[int] = None) -> Dict[str, Any]:
    """The error object sent in place of a reply, echoing `seq` when the request had a valid one."""
    reply: Dict[str, Any] = {} if seq is None else {SEQ: seq}
    reply[ERROR] = {ERROR_CODE: code, ERROR_MESSAGE: message}
    return reply


def valid_seq(value: Any) -> bool:
    """`seq` is a positive integer (a JSON number without fraction; true and false are not numbers)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def json_type(value: Any) -> str:
    """The JSON name of a decoded value's type, for error messages that must not echo the value."""
    for kind, name in _JSON_TYPES:
        if isinstance(value, kind):
            return name
    return type(value).__name__


_JSON_TYPES: Tuple[Tuple[Any, str], ...] = (
    (bool, "a boolean"),
    (type(None), "null"),
    (int, "a number"),
    (float, "a number"),
    (str, "a string"),
    (list, "an array"),
    (dict, "an object"),
)
