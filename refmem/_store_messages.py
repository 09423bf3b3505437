"""What only the installed package's deployments say: the database stores, `refmem db check`, history and expiry.
Every module that says one imports it from here; none of them is in the vendored set, which leaves this file out
(D-VENDOR-SET). Told to the application or its operator, never to the model.
"""

from __future__ import annotations

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

# Why a duration given to `refmem prune --older-than` was refused.
DURATION_FORMAT = "invalid duration {text!r}: use a number and a unit (s, m, h, d, w), e.g. 30d or 1w2d"
DURATION_NOT_POSITIVE = "invalid duration {text!r}: it must be longer than zero"

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
