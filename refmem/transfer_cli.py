"""`refmem db export` and `refmem db import` (D-STORE-TRANSFER): one tenant of a database store to a file in the
documented format (docs/tenant-export.md), and back into a fresh tenant of any store. The location is never printed,
nor the file's name: a refusal says what is wrong with the file or the tenant, never where they are."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, BinaryIO

from ._store_messages import TRANSFER_EXPORTED, TRANSFER_IMPORTED, TRANSFER_NEEDS_FILE, TRANSFER_NEEDS_TENANT_STORE

STDIO = "-"
"""The FILE that stands for standard output (export) or standard input (import)."""
FILE_MODE = 0o600
"""An export holds every memory of its tenant: readable by its owner only, as the filesystem store's files are."""


def _fail(reason: str) -> int:
    print(f"refmem: {reason}", file=sys.stderr)
    return 2


def run(location: str, args: argparse.Namespace) -> int:
    """`db export --tenant T FILE` or `db import --tenant T [--replace] FILE` on the store at `location`."""
    from .problems import FsProblem
    from .store_protocol import TenantError
    from .stores import StoreError
    from .stores.location import find, open_location
    from .stores.transfer import TransferError, export_tenant, import_tenant

    exporting = args.db_action == "export"
    if args.file is None:
        return _fail(TRANSFER_NEEDS_FILE.format(action=args.db_action, stream="output" if exporting else "input"))
    if args.yes or args.app_role is not None or (args.replace and exporting):
        return _fail("--yes and --app-role are for db erase and db init; --replace is for db import")
    if find(location) is None:
        return _fail(TRANSFER_NEEDS_TENANT_STORE)
    try:
        store: Any = open_location(location, tenant=args.tenant)
    except TenantError as error:
        return _fail(f"cannot use the tenant: {error}")
    except StoreError as error:
        return _fail(f"cannot use the store: {error}")
    shown = args.tenant or "(default)"
    try:
        if exporting:
            if args.file == STDIO:
                counts = export_tenant(store, sys.stdout.buffer)
                sys.stdout.buffer.flush()
            else:
                with _created(args.file) as out:
                    counts = export_tenant(store, out)
            print(TRANSFER_EXPORTED.format(tenant=shown, **counts._asdict()), file=sys.stderr)
        else:
            if args.file == STDIO:
                counts = import_tenant(store, sys.stdin.buffer, replace=args.replace)
            else:
                with open(args.file, "rb") as source:
                    counts = import_tenant(store, source, replace=args.replace)
            print(TRANSFER_IMPORTED.format(tenant=shown, **counts._asdict()))
    except TransferError as error:
        return _fail(f"cannot import: {error}")
    except FsProblem as problem:
        from .messages import io_reason

        return _fail(f"cannot {args.db_action} the tenant: {io_reason(getattr(problem, 'code', None))}")
    except OSError as error:
        what = "write the export" if exporting else "read the export"
        return _fail(f"cannot {what}: {error.strerror or 'operating system error'}")
    finally:
        store.close()
    return 0


def _created(name: str) -> BinaryIO:
    """The file `name`, made (or emptied) readable by its owner only."""
    descriptor = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    return os.fdopen(descriptor, "wb")
