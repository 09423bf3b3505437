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

# A feature whose module a vendored copy left out (refmem._optional, D-VENDOR-SET): told to the application when it
# asks for the feature, never a ModuleNotFoundError from inside.
MODULE_NOT_COPIED = (
    "{feature} needs the module {module}, which is not part of this copy of refmem: copy {file} beside the others "
    "(docs/vendoring.md lists what each feature adds)"
)

# Why a database store could not be opened (refmem.stores.StoreError): told to the application, never naming a host
# path, a host or a password.
STORE_NETWORK_FS = (
    "the SQLite store refuses a database on a network filesystem ({kind}): SQLite's locking is not reliable there, "
    "and writers on two hosts would corrupt it; use a local disk, or the PostgreSQL store"
)
STORE_SCHEMA_NEWER = (
    "the memory database's schema is version {found}, newer than this refmem reads (version {known}): upgrade refmem"
)
STORE_NOT_A_DATABASE = "the memory database is not a database refmem can read, or it is damaged"
STORE_CANNOT_OPEN = "the memory database cannot be opened: {reason}"
STORE_NO_WAL = "the memory database cannot use write-ahead logging on this filesystem"
STORE_SPEC = (
    "a store is given as sqlite:///PATH (an absolute path), sqlite:PATH (a relative one) or postgresql://... "
    "(a PostgreSQL connection string)"
)
STORE_PG_NO_DRIVER = "the PostgreSQL store needs psycopg 3: pip install 'refmem[postgres]'"
STORE_PG_CANNOT_CONNECT = "the PostgreSQL memory database cannot be used: {reason}"
STORE_PG_NOT_UTF8 = (
    "the PostgreSQL memory database's encoding is {found}, not UTF8: refmem stores only in a UTF8 database "
    "(CREATE DATABASE ... ENCODING 'UTF8')"
)
STORE_PG_NO_SCHEMA = "the PostgreSQL memory database has no refmem schema yet: run `refmem db init`"
STORE_PG_SCHEMA_OLDER = (
    "the PostgreSQL memory database's schema is version {found}, older than this refmem's (version {known}): "
    "run `refmem db migrate`"
)
STORE_SCHEMA_OLDER = (
    "the memory database's schema is version {found}, older than this refmem's (version {known}): "
    "run `refmem db migrate`"
)

# `refmem db check` (refmem.stores.health, D-STORE-DB-CHECK): one line per problem found, for the operator; never a
# location, a host or a password.
CHECK_HEALTHY = "healthy: {engine} store, schema version {version}{more}"
CHECK_UNREACHABLE = "unreachable: {reason}"
CHECK_NO_DATABASE = "unreachable: there is no SQLite database there"
CHECK_NO_SCHEMA = "schema: none yet: run `refmem db init`"
CHECK_SCHEMA_OLDER = "schema: version {found}, older than this refmem's ({known}): run `refmem db migrate`"
CHECK_SCHEMA_NEWER = "schema: version {found}, newer than this refmem reads ({known}): upgrade refmem"
CHECK_TABLE_MISSING = "schema: the table {table} is missing"
CHECK_FILE_OPEN = "permissions: the database's {part} is open to other users (mode {mode}): chmod 600 it"
CHECK_NO_RLS = "row-level security: not forced on {table}"
CHECK_NO_POLICY = "row-level security: the policy refmem_tenant is missing on {table}"
CHECK_ROLE_MISSING = "role {role}: there is no such role"
CHECK_ROLE_BYPASSES = "role {role}: row-level security does not hold it (superuser or BYPASSRLS)"
CHECK_ROLE_OWNS = "role {role}: owns {table}, so it can turn row-level security off: let another role own the tables"
CHECK_ROLE_WIDER = (
    "role {role}: may {privilege} on {table}, more than refmem grants (`db migrate --app-role` narrows it)"
)
CHECK_ROLE_CANNOT = "role {role}: may not {privilege} on {table}, which refmem needs"
QUOTA_FORM = "a quota's {name} is a non-negative integer, or None for no bound"
TENANTS_HEADER = "tenant  files  bytes  versions  version_bytes"
TENANTS_LINE = "{tenant}  {files}  {size}  {versions}  {version_bytes}"
TENANTS_DEFAULT = "(default)"
TENANTS_NEED_BYPASS = (
    "listing every tenant needs a role that row-level security does not hold (a superuser or BYPASSRLS): run it as "
    "the database's administrator"
)

# A tenant's export and import (refmem.stores.transfer, `refmem db export|import`; D-STORE-TRANSFER-*): told to the
# operator, never naming a file or a location. `{line}` is the line of the file where the problem is.
TRANSFER_NOT_FORMAT = (
    "the file is not a refmem tenant export (its first line is not the header of format refmem-tenant): nothing was "
    "imported"
)
TRANSFER_VERSION = "the export is of format version {found}; this refmem reads version {known}: nothing was imported"
TRANSFER_BAD_LINE = "line {line} of the export is not a record this format has ({why}): nothing was imported"
TRANSFER_TRUNCATED = "the export ends before its end record (a truncated copy?): nothing was imported"
TRANSFER_AFTER_END = "line {line} of the export follows its end record: nothing was imported"
TRANSFER_COUNTS = "the export's end record counts other records than it holds: nothing was imported"
TRANSFER_NOT_EMPTY = (
    "the tenant {tenant} already holds memories or versions: import into a fresh tenant, or give --replace to erase "
    "it first (in the same transaction)"
)
TRANSFER_OVER_HISTORY = (
    "the export keeps more history than this store's limits allow ({what}): nothing was imported"
)
TRANSFER_NEEDS_FILE = "db {action} needs a FILE (- for standard {stream})"
TRANSFER_NEEDS_TENANT_STORE = "export and import need a database store (sqlite:///PATH.db or postgresql://...)"
TRANSFER_EXPORTED = "exported the tenant {tenant}: {folders} folders, {files} files, {versions} versions"
TRANSFER_IMPORTED = "imported into the tenant {tenant}: {folders} folders, {files} files, {versions} versions"

# History (refmem.stores.history, `refmem history` and `refmem restore`; D-STORE-HISTORY-*): told to the operator or
# the application, never to the model. A location is never named: it may hold a password.
WRITE_DATA_TYPE = "the data of a conditional write must be bytes"
WRITE_EXPECTED_TYPE = "expected_sha256 must be a string of hex digits, or None for a file that must not exist"
RESTORE_NUMBER_TYPE = "a version number must be an integer"
ACTOR_FORM = "an actor is a string of 1 to {most} printable characters, or None"
HISTORY_LINE = "{number}  {at}  {size} bytes  {sha256}  {command}  {actor}"
HISTORY_NO_ACTOR = "-"
HISTORY_NONE = "no versions kept of {path}"
HISTORY_FILESYSTEM = (
    "history is kept by the database stores (--store sqlite:... or postgresql://...), not by a memory directory"
)
HISTORY_NEEDS_STORE = "give --store sqlite:///PATH or postgresql://... (or set {variable})"
HISTORY_BAD_PATH = "cannot use the path {path}: {rule}"
RESTORED = "restored {path} to version {number} (sha256 {sha256})"
RESTORE_PROBLEMS = {
    "no_version": "there is no version {number} of {path} (never kept, or dropped by retention)",
    "not_regular": "cannot restore {path}: a folder is there now",
    "parent_not_dir": "cannot restore {path}: {parent} is a file, not a folder",
    "too_big": "cannot restore {path}: version {number} is {size} bytes, more than the {most} a file may have",
}
RESTORE_FAILED = "cannot restore {path}: {reason}"
HISTORY_FAILED = "cannot read the history of {path}: {reason}"

# Why a table of bounds (refmem.limits.Bounds: Limits, OpenClawLimits) was refused when it was made: told to the
# application. `{floor}` names the least value a field may take.
LIMIT_TYPE = "{owner}.{name} must be a {floor} integer"
LIMIT_FLOOR_WORDS = {0: "non-negative", 1: "positive"}
LIMIT_POSITIVE = "{owner}.{name} must be positive"
LIMIT_CEILING = "{owner}.{name} cannot exceed {most} ({why})"

# Why a duration given to `refmem prune --older-than` was refused.
DURATION_FORMAT = "invalid duration {text!r}: use a number and a unit (s, m, h, d, w), e.g. 30d or 1w2d"
DURATION_NOT_POSITIVE = "invalid duration {text!r}: it must be longer than zero"


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
