"""Every string the handler can return, in one table.

Documented strings (`doc`) are byte-exact copies of the documentation, inconsistencies included; the
others are the reference's decisions, each tied to an entry of `docs/spec-notes.md`. Keeping them in
one table lets the conformance suite, the tests and the docs point at one source.
"""

from __future__ import annotations

import unicodedata
from typing import Dict, NamedTuple, Sequence


class Message(NamedTuple):
    template: str
    is_error: bool
    basis: str  # "doc", "editor" (the text editor tool's public wording) or a spec-notes ID


MESSAGES: Dict[str, Message] = {
    # --- view ---------------------------------------------------------------------------------
    "view_dir_header": Message(
        "Here're the files and directories up to 2 levels deep in {path}, excluding hidden items and node_modules:",
        False,
        "doc",
    ),
    "view_file_header": Message("Here's the content of {path} with line numbers:", False, "doc"),
    "view_missing": Message("The path {path} does not exist. Please provide a valid path.", True, "doc"),
    "view_too_many_lines": Message("File {path} exceeds maximum line limit of 999,999 lines.", True, "doc"),
    "view_range_shape": Message("Invalid `view_range`. It should be a list of two integers.", True, "editor"),
    "view_range_start": Message(
        "Invalid `view_range`: {view_range}. Its first element `{start}` should be within the "
        "range of lines of the file: [1, {n_lines}]",
        True,
        "editor",
    ),
    "view_range_end_past": Message(
        "Invalid `view_range`: {view_range}. Its second element `{end}` should be smaller than "
        "the number of lines in the file: `{n_lines}`",
        True,
        "editor",
    ),
    "view_range_end_before": Message(
        "Invalid `view_range`: {view_range}. Its second element `{end}` should be larger or "
        "equal than its first `{start}`",
        True,
        "editor",
    ),
    "view_range_on_dir": Message(
        "Error: The `view_range` parameter is not allowed when `path` points to a directory.",
        True,
        "D-VIEW-RANGE",
    ),
    "listing_truncated": Message(
        "[Listing truncated at {n} entries. View a subfolder to see more.]", False, "D-VIEW-LIST-CAP"
    ),
    "view_truncated": Message(
        "[Output truncated after line {last} of {n_lines}. To see more, view with view_range [{next}, {end}].]",
        False,
        "D-VIEW-PAGINATE",
    ),
    "view_line_cut": Message(
        "[Line {n} is {length} characters long and was cut at {shown}. Lines after it: view_range [{next}, {end}].]",
        False,
        "D-VIEW-PAGINATE",
    ),
    "view_last_line_cut": Message(
        "[Line {n} is {length} characters long and was cut at {shown}.]", False, "D-VIEW-PAGINATE"
    ),
    # --- create -------------------------------------------------------------------------------
    "create_ok": Message("File created successfully at: {path}", False, "doc"),
    "create_exists": Message("Error: File {path} already exists", True, "doc"),
    "create_parent_not_dir": Message(
        "Error: Cannot create {path}: {parent} is not a directory.", True, "D-CREATE-PARENTS"
    ),
    # --- str_replace --------------------------------------------------------------------------
    "str_replace_ok": Message(
        "The memory file has been edited. Here is a snippet of {path} around the edit, with line numbers:",
        False,
        "D-STR-SNIPPET",
    ),
    "str_replace_missing": Message("Error: The path {path} does not exist. Please provide a valid path.", True, "doc"),
    "str_replace_not_found": Message(
        "No replacement was performed, old_str `{old_str}` did not appear verbatim in {path}.",
        True,
        "doc",
    ),
    "str_replace_multiple": Message(
        "No replacement was performed. Multiple occurrences of old_str `{old_str}` in lines: "
        "{line_numbers}. Please ensure it is unique",
        True,
        "doc",
    ),
    "str_replace_empty": Message("Error: Parameter `old_str` must not be empty.", True, "D-STR-EMPTY"),
    # --- insert -------------------------------------------------------------------------------
    "insert_ok": Message("The file {path} has been edited.", False, "doc"),
    "insert_missing": Message("Error: The path {path} does not exist", True, "doc"),
    "insert_bad_line": Message(
        "Error: Invalid `insert_line` parameter: {insert_line}. It should be within the range "
        "of lines of the file: [0, {n_lines}]",
        True,
        "doc",
    ),
    "file_too_big_to_edit": Message(
        "Error: The file {path} is {n} bytes, over the limit of {max} bytes for editing.",
        True,
        "D-LIMIT-WRITE",
    ),
    # --- delete -------------------------------------------------------------------------------
    "delete_ok": Message("Successfully deleted {path}", False, "doc"),
    "delete_missing": Message("Error: The path {path} does not exist", True, "doc"),
    "delete_root": Message("Error: Cannot delete the memory root /memories.", True, "D-DELETE-ROOT"),
    # --- rename -------------------------------------------------------------------------------
    "rename_ok": Message("Successfully renamed {old_path} to {new_path}", False, "doc"),
    "rename_missing": Message("Error: The path {old_path} does not exist", True, "doc"),
    "rename_exists": Message("Error: The destination {new_path} already exists", True, "doc"),
    "rename_root": Message("Error: Cannot rename the memory root /memories.", True, "D-RENAME-ROOT"),
    "rename_into_self": Message("Error: Cannot move {old_path} into itself ({new_path}).", True, "D-RENAME-INTO-SELF"),
    "rename_too_deep": Message(
        "Error: Cannot move {old_path} to {new_path}: a path inside it would have more than {max_depth} names "
        "below /memories or more than {max_bytes} bytes.",
        True,
        "D-RENAME-LIMITS",
    ),
    "rename_parent_not_dir": Message(
        "Error: Cannot move {old_path} to {new_path}: {parent} is not a directory.",
        True,
        "D-RENAME-PARENTS",
    ),
    # --- input --------------------------------------------------------------------------------
    "input_not_object": Message(
        'Error: The tool input must be a JSON object with a "command" field.', True, "D-INPUT-OBJECT"
    ),
    "command_missing": Message("Error: Parameter `command` is required.", True, "D-INPUT-COMMAND"),
    "command_not_string": Message("Error: Parameter `command` must be a string.", True, "D-INPUT-COMMAND"),
    "command_unknown": Message(
        "Error: Unrecognized command {command}. The allowed commands for the memory tool are: "
        "view, create, str_replace, insert, delete, rename",
        True,
        "D-INPUT-COMMAND",
    ),
    "param_missing": Message("Parameter `{name}` is required for command: {command}", True, "editor"),
    "param_type": Message("Error: Parameter `{name}` must be {kind} for command: {command}", True, "D-INPUT-TYPE"),
    "param_too_big": Message(
        "Error: Parameter `{name}` is {n} bytes, over the limit of {max} bytes.", True, "D-INPUT-SIZE"
    ),
    "param_not_unicode": Message("Error: Parameter `{name}` is not valid Unicode text.", True, "D-INPUT-SIZE"),
    # --- paths and objects --------------------------------------------------------------------
    "path_invalid": Message("Error: Invalid path {path}: {rule}.", True, "D-PATH-RULES"),
    "path_symlink": Message("Error: The path {path} is a symbolic link; links are not followed.", True, "D-FS-SYMLINK"),
    "path_not_regular": Message("Error: The path {path} is not a regular file.", True, "D-FS-SPECIAL"),
    "path_hard_linked": Message(
        "Error: The path {path} has more than one hard link and is refused: its content may be "
        "shared with a file outside /memories.",
        True,
        "D-FS-HARDLINK",
    ),
    "not_utf8": Message(
        "Error: The file {path} is not valid UTF-8 text and cannot be shown or edited.",
        True,
        "D-VIEW-ENCODING",
    ),
    "file_too_big": Message(
        "Error: The file {path} would be {n} bytes, over the limit of {max} bytes.",
        True,
        "D-LIMIT-WRITE",
    ),
    "read_only": Message("Error: The memory directory is read-only; {command} is not allowed.", True, "D-READ-ONLY"),
    "not_allowed": Message("Error: The path {path} is not one of the allowed memory paths.", True, "D-ALLOW"),
    "io_error": Message("Error: Could not {action} {path}: {reason}.", True, "D-IO"),
    "internal_error": Message(
        "Error: The command could not be completed because of an internal error.",
        True,
        "D-INTERNAL",
    ),
    "content_refused": Message(
        "Error: The text was not saved: it appears to contain {what}. Remove it and try again.",
        True,
        "D-POLICY",
    ),
}


# The rule a refused path broke (`path_invalid`'s `{rule}`), as paths.parse_path names them (D-PATH-*).
RULE_PREFIX = "it must be /memories or start with /memories/"
RULE_EMPTY = 'empty segments ("//") are not allowed'
RULE_DOTS = '"." and ".." segments are not allowed'
RULE_BACKSLASH = "backslashes are not allowed"
RULE_CONTROL = "control characters are not allowed"
RULE_PERCENT = "percent-encoded separators, dots and control characters are not allowed"
RULE_NFKC = (
    'names that Unicode normalisation (NFKC) turns into "." or ".." or that contain a '
    "look-alike separator are not allowed"
)
RULE_TRAILING = "names must not end with a dot or a space"
RULE_WINDOWS_CHARS = 'names must not contain any of < > : " | ? *'
RULE_DEVICE = "Windows device names (CON, PRN, AUX, NUL, COM1-COM9, LPT1-LPT9) are not allowed"
RULE_RESERVED = 'names starting with ".refmem" are reserved for the handler\'s own files'
RULE_FILE_SLASH = 'a file path must not end with "/"'


def rule_name_too_long(max_bytes: int) -> str:
    return f"a name may be at most {max_bytes} bytes"


def rule_too_long(max_bytes: int) -> str:
    return f"a path may be at most {max_bytes} bytes"


def rule_too_deep(max_depth: int) -> str:
    return f"a path may be at most {max_depth} levels deep"


# How `param_type` names the type a parameter must have.
KIND_STRING, KIND_INTEGER, KIND_RANGE = "a string", "an integer", "a list of two integers"

# Tenant names (refmem.store_protocol.tenant_name), refused when a store is made: told to the application,
# not the model.
TENANT_TYPE = "a tenant name must be a string"
TENANT_FORM = (
    "a tenant name is 1 to 63 characters of lower-case ASCII letters, digits, '-' and '_', "
    "starting with a letter or a digit"
)
TENANT_RESERVED = "a tenant name must not be a Windows device name (con, prn, aux, nul, com0-com9, lpt0-lpt9)"
TENANT_NESTED = "a tenant's store has no tenants of its own"
TENANT_UNSUPPORTED = "this store keeps no tenants (it has no for_tenant)"

# Why a table of bounds (refmem.limits.Bounds: Limits, OpenClawLimits) was refused when it was made: told to the
# application. `{floor}` names the least value a field may take.
LIMIT_TYPE = "{owner}.{name} must be a {floor} integer"
LIMIT_FLOOR_WORDS = {0: "non-negative", 1: "positive"}
LIMIT_POSITIVE = "{owner}.{name} must be positive"
LIMIT_CEILING = "{owner}.{name} cannot exceed {most} ({why})"

# What `{reason}` says in `io_error` for each code a filesystem problem carries (problems.OsFailure.code).
IO_REASONS: Dict[str, str] = {
    "no_space": "no space left on device",
    "io": "input/output error",
    "denied": "permission denied",
    "read_only_fs": "read-only file system",
    "changed": "the file changed while it was being read",
    "tree_changed": "a folder changed while it was being worked on",
    "escaped": "a folder on the way moved outside /memories while it was in use",
    "root_removed": "the memory directory itself was removed",
    "protected": "the file is read-only",  # D-MODE
    "protected_inside": "a file inside it is read-only",  # D-MODE
    "bookkeeping": "the memory directory's own bookkeeping files are not usable",  # D-BOOKKEEPING
    "busy": "the memory store is busy with other writers; try again",  # D-STORE-SQL-BUSY
    "disconnected": (  # D-STORE-PG-RETRY
        "the connection to the memory database was lost before the command finished; nothing was changed"
    ),
    "commit_unknown": (  # D-STORE-PG-RETRY
        "the connection to the memory database was lost while the change was being committed; "
        "view the memory to see whether it was made"
    ),
    "quota_bytes": "the tenant's quota of bytes is used up",  # D-STORE-QUOTA
    "quota_files": "the tenant's quota of files is used up",  # D-STORE-QUOTA
    "hosted_path": (  # D-HOSTED-PATH
        "a hosted memory store keeps only paths of 1 to 20 names, in Unicode NFC, of at most 1,024 bytes"
    ),
    "hosted_size": "a hosted memory store keeps at most 102,400 bytes a file",  # D-HOSTED-SIZE
    "os": "operating system error",
}


def io_reason(code: object) -> str:
    """The text of the IO reason `code` (a problem's, an engine's): the generic `os` one for a code the table
    lacks, so a caller never shows a bare key."""
    return IO_REASONS.get(code, IO_REASONS["os"]) if isinstance(code, str) else IO_REASONS["os"]


def line_list(lines: Sequence[int], more: int) -> str:
    """`1, 4, 9`, or with lines left out, `1, 4, 9 and 1,204 more` (D-STR-LINES)."""
    shown = ", ".join(str(n) for n in lines)
    return f"{shown} and {more:,} more" if more else shown


class Result(NamedTuple):
    """One tool result: `output` is the tool_result content, `is_error` its error flag.

    Immutable and cheap to build: every command returns one, the handler passes it on as it is.
    """

    output: str
    is_error: bool


def render(key: str, **values: object) -> Result:
    """Fill one table entry. Values are inserted as given: callers escape what needs escaping."""
    message = MESSAGES[key]
    return Result(message.template.format(**values), message.is_error)


_NAMED_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\\": "\\\\"}
_BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def is_unsafe_char(char: str) -> bool:
    """True for characters that could forge or hide lines when a value is echoed or listed."""
    category = unicodedata.category(char)
    return category in ("Cc", "Zl", "Zp", "Cs") or char in _BIDI_CONTROLS


def escape(value: str, limit: int) -> str:
    """Make a model-supplied value safe to echo: one line, no control or bidi characters, bounded.

    The escapes are ours (not Python's repr), so the text reads the same on every implementation.
    """
    out = []
    for char in value[:limit]:
        if char in _NAMED_ESCAPES:
            out.append(_NAMED_ESCAPES[char])
        elif is_unsafe_char(char):
            code = ord(char)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
        else:
            out.append(char)
    return "".join(out) + cut_note(len(value), limit)


def clip(value: str, limit: int) -> str:
    """Echo a value verbatim but bounded: the documented str_replace errors quote old_str as sent."""
    return value[:limit] + cut_note(len(value), limit)


def cut_note(length: int, limit: int) -> str:
    return f"...[{length - limit} more characters]" if length > limit else ""

