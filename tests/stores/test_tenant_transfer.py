"""A tenant's export and import (D-STORE-TRANSFER, docs/tenant-export.md): a round trip tenant -> file -> fresh tenant
gives byte-identical listings, views and history on SQLite, on PostgreSQL (a real throwaway cluster) and across
engines, and the export itself is byte-identical whatever engine wrote it; an import refuses a file that is not the
format, a damaged one and a tenant that holds something, with a clear message and nothing written."""

from __future__ import annotations

import io
import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

import pytest
from storage_support import fill_with_history

from refmem import MemoryHandler
from refmem._listing import list_tree
from refmem.paths import VirtualPath
from refmem.stores.transfer import FORMAT, FORMAT_VERSION, TransferError, export_tenant, import_tenant


def _fill(handler: MemoryHandler) -> List[str]:
    """Files, folders (an empty one too), edits, renames and deletes: the paths that have history."""
    touched = fill_with_history(
        handler, 9, lambda n: f"/memories/n/ü{n}.md", lambda n: f"line {n}\nünïcödé\r\nEND\n",
        lambda n: f"/memories/moved/deep/g{n}.md",
    )
    for step in ({"command": "create", "path": "/memories/empty/x.md", "file_text": ""},
                 {"command": "delete", "path": "/memories/empty/x.md"}):  # leaves /memories/empty, empty
        assert not handler.execute(step).is_error
    return touched + ["/memories/empty/x.md"]


def _snapshot(store: Any, touched: List[str]) -> Any:
    """The whole listing (sizes too), the view of every folder and file, and each touched path's history."""
    handler = MemoryHandler(store)
    listed, truncated = list_tree(store, VirtualPath(()), 10, 10_000, lambda name: True)
    paths = ["/memories"] + ["/memories/" + "/".join(entry.parts) for entry in listed]
    views = {path: handler.execute({"command": "view", "path": path}) for path in paths}
    history = {path: store.history(VirtualPath(tuple(path.split("/")[2:]))) for path in touched}
    assert len(listed) == 10 and sum(len(kept) for kept in history.values()) == 22  # filled, not empty
    return sorted(listed), truncated, views, history


def _export(store: Any) -> bytes:
    out = io.BytesIO()
    export_tenant(store, out)
    return out.getvalue()


def _sqlite(tmp_path: Path, name: str) -> Callable[[Optional[str]], Any]:
    from refmem.stores.sqlite import SqliteStore

    return lambda tenant: SqliteStore(tmp_path / f"{name}.db", tenant=tenant, actor="ops")


def _postgres(tmp_path: Path, name: str) -> Callable[[Optional[str]], Any]:
    from postgres_support import cluster

    from refmem.stores.postgres import PostgresStore

    dsn = cluster().location_dsn(tmp_path / name)
    return lambda tenant: PostgresStore(dsn, tenant=tenant, actor="ops")


ENGINES = {"sqlite": _sqlite, "postgres": _postgres}


@pytest.mark.parametrize(
    "source, destination",
    [("sqlite", "sqlite"), ("postgres", "postgres"), ("sqlite", "postgres"), ("postgres", "sqlite")],
)
def test_a_round_trip_gives_byte_identical_listings_views_and_history(
    source: str, destination: str, tmp_path: Path
) -> None:
    open_source = ENGINES[source](tmp_path, "source")
    open_destination = ENGINES[destination](tmp_path, "destination")
    original = open_source("alice")
    touched = _fill(MemoryHandler(original))
    before = _snapshot(original, touched)
    exported = _export(original)
    original.close()

    fresh = open_destination("bob")
    counts = import_tenant(fresh, io.BytesIO(exported))
    assert counts == (4, 6, 22)
    assert _snapshot(fresh, touched) == before
    assert _export(fresh) == exported  # the file itself is the same, whichever engine wrote it
    # the imported tenant goes on: its next change's version numbers above every imported one, its usage counted
    handler = MemoryHandler(fresh)
    assert not handler.execute({"command": "str_replace", "path": "/memories/n/ü2.md", "old_str": "top",
                                "new_str": "TOP"}).is_error
    kept = fresh.history(VirtualPath(("n", "ü2.md")))
    assert kept[0].number > max(version.number for versions in before[3].values() for version in versions)
    assert kept[0].actor == "ops" and kept[1:] == before[3]["/memories/n/ü2.md"]
    fresh.close()
    other = open_destination(None)  # the tenant imported into is the only one that changed
    assert _export(other).count(b"\n") == 2
    other.close()


def test_the_export_streams_in_pages_with_bounded_memory(tmp_path: Path) -> None:
    """An export of 300 files reads the rows a page at a time (a statement per page, never the tenant whole): the
    statements it runs are counted."""
    from refmem.stores import transfer

    store = _sqlite(tmp_path, "many")("alice")
    with store.locked():
        for number in range(300):
            store.write_new(VirtualPath(("f", f"{number:03}.md")), b"x" * 10)
    runs: List[str] = []
    real = store._all
    store._all = lambda sql, params: (runs.append(sql), real(sql, params))[1]  # type: ignore[method-assign]
    exported = _export(store)
    pages = [sql for sql in runs if "refmem_nodes" in sql]
    assert len(pages) == (301 + transfer.PAGE_ROWS) // transfer.PAGE_ROWS  # 301 rows, 64 a page: 5 statements
    assert all(str(transfer.PAGE_ROWS) not in sql for sql in pages)  # the page size is a bound parameter
    lines = exported.splitlines()
    assert json.loads(lines[0]) == {"format": FORMAT, "version": FORMAT_VERSION}
    assert json.loads(lines[-1]) == {"type": "end", "folders": 1, "files": 300, "versions": 0}
    store.close()


def _filled_export(tmp_path: Path) -> bytes:
    store = _sqlite(tmp_path, "filled")("alice")
    _fill(MemoryHandler(store))
    exported = _export(store)
    store.close()
    return exported


def _refused(tmp_path: Path, data: bytes, replace: bool = False) -> str:
    """The refusal of importing `data` into tenant carol, which must hold nothing after it."""
    store = _sqlite(tmp_path, "target")("carol")
    try:
        with pytest.raises(TransferError) as refused:
            import_tenant(store, io.BytesIO(data), replace=replace)
        assert _export(store).count(b"\n") == 2  # header and end: nothing written
    finally:
        store.close()
    return str(refused.value)


def _damaged(exported: bytes, index: int, change: Callable[[Dict[str, Any]], None]) -> bytes:
    lines = exported.splitlines(keepends=True)
    record = json.loads(lines[index])
    change(record)
    lines[index] = json.dumps(record).encode() + b"\n"
    return b"".join(lines)


def test_an_import_refuses_what_is_not_the_format_and_writes_nothing(tmp_path: Path) -> None:
    exported = _filled_export(tmp_path)
    lines = exported.splitlines(keepends=True)
    assert "not a refmem tenant export" in _refused(tmp_path, b"")
    assert "not a refmem tenant export" in _refused(tmp_path, b"PK\x03\x04 a zip file\n")
    assert "not a refmem tenant export" in _refused(tmp_path, b'{"format": "other", "version": 1}\n')
    later = b'{"format": "refmem-tenant", "version": 2}\n'
    assert "format version 2" in _refused(tmp_path, later + b"".join(lines[1:]))
    assert "truncated" in _refused(tmp_path, b"".join(lines[:-1]))
    assert "follows its end record" in _refused(tmp_path, exported + lines[1])
    assert "counts other records" in _refused(tmp_path, _damaged(exported, -1, lambda r: r.update(files=5)))
    broken = {
        "SHA-256": lambda r: r.update(sha256="0" * 64),
        "breaks the paths' rules": lambda r: r.update(path="../../etc/passwd"),
        "rules": lambda r: r.update(path=".refmem/x"),  # the stores' own bookkeeping
        "other fields": lambda r: r.update(mode=0o777),
        "not a time": lambda r: r.update(used=-1),
        "not of its size": lambda r: r.update(size=r["size"] + 1),
    }
    first_file = next(index for index, line in enumerate(lines) if b'"type":"file"' in line)
    for why, change in broken.items():
        assert why in _refused(tmp_path, _damaged(exported, first_file, change)), why
    assert "out of order" in _refused(tmp_path, b"".join([lines[0], lines[2], lines[1]] + lines[3:]))
    assert "not a number" in _refused(tmp_path, exported.replace(b'"used":', b'"used":NaN,"x":', 1))
    nested = b"[" * 100_000 + b"]" * 100_000 + b"\n"
    assert "not a JSON object" in _refused(tmp_path, lines[0] + nested)
    for message in (_refused(tmp_path, b"\x00" * 10), _refused(tmp_path, lines[0] + b"{]\n")):
        assert str(tmp_path) not in message and "Traceback" not in message


def test_an_import_refuses_a_tenant_that_holds_something_unless_told(tmp_path: Path) -> None:
    exported = _filled_export(tmp_path)
    store = _sqlite(tmp_path, "target")("carol")
    mine = {"command": "create", "path": "/memories/mine.md", "file_text": "x"}
    assert not MemoryHandler(store).execute(mine).is_error
    with pytest.raises(TransferError, match="already holds memories"):
        import_tenant(store, io.BytesIO(exported))
    assert MemoryHandler(store).execute({"command": "view", "path": "/memories/mine.md"}).output.endswith("x")
    assert import_tenant(store, io.BytesIO(exported), replace=True) == (4, 6, 22)
    assert store.entry(VirtualPath(("mine.md",))) is None
    assert _export(store) == exported
    store.close()


def test_an_import_over_the_quota_is_refused_whole(tmp_path: Path) -> None:
    from refmem.problems import OsFailure
    from refmem.stores.sqlite import SqliteStore

    exported = _filled_export(tmp_path)
    store = SqliteStore(tmp_path / "quota.db", tenant="carol", quota={"max_files": 5})
    with pytest.raises(OsFailure) as refused:
        import_tenant(store, io.BytesIO(exported))
    assert refused.value.code == "quota_files"
    assert _export(store).count(b"\n") == 2
    store.close()


def _cli(*arguments: str, stdin: bytes = b"") -> subprocess.CompletedProcess:  # type: ignore[type-arg]
    return subprocess.run(  # noqa: S603  # nosec B603  # our own command
        [sys.executable, "-m", "refmem", "db", *arguments], input=stdin, capture_output=True, timeout=120,
        check=False,
    )


def test_the_command_line_exports_and_imports_without_naming_a_path(tmp_path: Path) -> None:
    exported = _filled_export(tmp_path)
    source = f"sqlite:///{tmp_path / 'filled.db'}"
    target = f"sqlite:///{tmp_path / 'copy.db'}"
    file = tmp_path / "alice.jsonl"
    done = _cli("export", "--store", source, "--tenant", "alice", str(file))
    assert done.returncode == 0, done.stderr
    assert file.read_bytes() == exported and stat.S_IMODE(os.stat(file).st_mode) == 0o600
    done = _cli("import", "--store", target, "--tenant", "bob", str(file))
    assert done.returncode == 0 and b"4 folders, 6 files, 22 versions" in done.stdout, done.stderr
    done = _cli("import", "--store", target, "--tenant", "bob", "-", stdin=exported)
    assert done.returncode == 2 and b"already holds memories" in done.stderr
    done = _cli("import", "--store", target, "--tenant", "bob", "--replace", "-", stdin=exported)
    assert done.returncode == 0, done.stderr
    done = _cli("export", "--store", target, "--tenant", "bob", "-")
    assert done.returncode == 0 and done.stdout == exported
    done = _cli("import", "--store", target, "--tenant", "dan", str(tmp_path / "copy.db"))
    assert done.returncode == 2 and b"not a refmem tenant export" in done.stderr
    assert b"Traceback" not in done.stderr and str(tmp_path).encode() not in done.stderr
    done = _cli("import", "--store", target, "--tenant", "dan", str(tmp_path / "missing.jsonl"))
    assert done.returncode == 2 and b"cannot read the export" in done.stderr
    assert str(tmp_path).encode() not in done.stderr
