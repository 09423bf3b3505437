"""The hosted-store profile (D-HOSTED-*, refmem/stores/hosted.py): a store that keeps only what Anthropic's hosted
memory stores keep. Its refusals are conformance cases (conformance/hosted/hosted.json, stable IDs hosted-NNN) run
here by the conformance runner against the reference over a hosted SQLite store; what a case cannot see (no version
for a change that changes nothing, the conditional write, restore, tenants) is tested below, on SQLite and on
PostgreSQL (a real throwaway cluster)."""

from __future__ import annotations

import hashlib
import os
import pathlib
from typing import Any, Callable, MutableMapping, Tuple

import pytest

from refmem import MemoryHandler
from refmem.paths import VirtualPath
from refmem.problems import Conflict, OsFailure
from refmem.stores.hosted import MAX_CONTENT_BYTES, HostedStore, hosted, path_refusal
from refmem_harness.reference_target import over_store

PROJECT = pathlib.Path(__file__).resolve().parents[2]


def _hosted_sqlite(root: pathlib.Path, options: MutableMapping[str, Any]) -> Tuple[Any, bool]:
    from refmem.stores.sqlite import SqliteStore

    return hosted(SqliteStore(pathlib.Path(root) / "memory.db", tenant=options.pop("tenant", None))), False


make_hosted = over_store(_hosted_sqlite)
"""The reference over a hosted SQLite store in each case's root (a python: target for conformance/hosted)."""


def test_the_hosted_cases_pass_under_the_hosted_profile(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from conformance.cli import main

    where = pathlib.Path("/dev/shm") if os.access("/dev/shm", os.W_OK) else tmp_path
    status = main(["--target", f"python:{__name__}:make_hosted", "--cases-dir", str(PROJECT / "conformance" / "hosted"),
                   "--no-matrix", "--strict", "--workdir", str(where)])
    out = capsys.readouterr().out
    assert status == 0 and "verdict: PASS" in out, out[-3000:]
    assert "9 pass, 0 fail" in out, out[-2000:]


def test_the_hosted_cases_fail_without_the_profile(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The cases pin the profile: the plain SQLite store fails the refusals (so they cannot pass by accident)."""
    from conformance.cli import main

    status = main(["--target", "refmem+sqlite", "--cases-dir", str(PROJECT / "conformance" / "hosted"),
                   "--no-matrix", "--strict", "--workdir", str(tmp_path)])
    out = capsys.readouterr().out
    assert status != 0, out[-2000:]
    for refused in ("hosted-001", "hosted-003", "hosted-005", "hosted-006", "hosted-007", "hosted-008"):
        assert refused in out, out[-3000:]


def test_path_rule_is_pure_and_counts_what_is_below() -> None:
    assert path_refusal(VirtualPath(("a.md",))) is None
    assert path_refusal(VirtualPath(tuple("d" for _ in range(20)))) is None
    assert path_refusal(VirtualPath(tuple("d" for _ in range(21)))) == "hosted_path"
    assert path_refusal(VirtualPath(("d",)), below_levels=20) == "hosted_path"
    assert path_refusal(VirtualPath(("x" * 1014,))) is None  # "/memories/" and 1,014 bytes: 1,024
    assert path_refusal(VirtualPath(("x" * 1015,))) == "hosted_path"
    assert path_refusal(VirtualPath(("d",)), below_bytes=1014) == "hosted_path"
    assert path_refusal(VirtualPath(("cafe\u0301",))) == "hosted_path"
    assert path_refusal(VirtualPath(())) == "hosted_path"  # /memories itself is no file's path


def _sqlite(tmp_path: pathlib.Path) -> Callable[[Any], Any]:
    from refmem.stores.sqlite import SqliteStore

    return lambda tenant: SqliteStore(tmp_path / "memory.db", tenant=tenant)


def _postgres(tmp_path: pathlib.Path) -> Callable[[Any], Any]:
    from postgres_support import cluster

    from refmem.stores.postgres import PostgresStore

    dsn = cluster().location_dsn(tmp_path)
    return lambda tenant: PostgresStore(dsn, tenant=tenant)


@pytest.mark.parametrize("engine", [_sqlite, _postgres], ids=["sqlite", "postgres"])
def test_one_version_per_change_and_none_for_a_change_that_changes_nothing(
    engine: Callable[[pathlib.Path], Callable[[Any], Any]], tmp_path: pathlib.Path
) -> None:
    plain = engine(tmp_path)("alice")
    store = hosted(plain)
    handler = MemoryHandler(store)
    path = VirtualPath(("notes.md",))
    steps = [
        ({"command": "create", "path": "/memories/notes.md", "file_text": "one\ntwo\n"}, 0),
        ({"command": "str_replace", "path": "/memories/notes.md", "old_str": "one", "new_str": "one"}, 0),
        ({"command": "str_replace", "path": "/memories/notes.md", "old_str": "one", "new_str": "ONE"}, 1),
        ({"command": "insert", "path": "/memories/notes.md", "insert_line": 1, "insert_text": "1.5"}, 1),
        ({"command": "str_replace", "path": "/memories/notes.md", "old_str": "two", "new_str": "two"}, 0),
    ]
    kept = 0
    for step, more in steps:
        result = handler.execute(step)
        assert not result.is_error, (step, result)
        kept += more
        assert len(store.history(path)) == kept, step
    content = b"ONE\n1.5\ntwo\n"
    digest = hashlib.sha256(content).hexdigest()
    assert store.write(path, content, digest) == digest  # the same content under its own SHA-256: nothing written
    assert len(store.history(path)) == kept
    with pytest.raises(Conflict):
        store.write(path, b"other", "0" * 64)  # a precondition not met: nothing written
    assert store.write(path, b"other", digest.upper()) == hashlib.sha256(b"other").hexdigest()
    assert len(store.history(path)) == kept + 1
    # the plain store, for contrast, keeps a version for the edit that changes nothing
    before = len(plain.history(path))
    assert not MemoryHandler(plain).execute(
        {"command": "str_replace", "path": "/memories/notes.md", "old_str": "other", "new_str": "other"}).is_error
    assert len(plain.history(path)) == before + 1
    plain.close()


def test_conditional_writes_and_restores_keep_the_size_and_the_paths(tmp_path: pathlib.Path) -> None:
    plain = _sqlite(tmp_path)("alice")
    store = hosted(plain)
    big = VirtualPath(("big.md",))
    plain.write(big, b"x" * (MAX_CONTENT_BYTES + 1), None)  # made outside the profile
    plain.write(big, b"small", hashlib.sha256(b"x" * (MAX_CONTENT_BYTES + 1)).hexdigest())
    with pytest.raises(OsFailure) as refused:
        store.restore(big, plain.history(big)[0].number)
    assert refused.value.code == "hosted_size"
    with pytest.raises(OsFailure) as refused:
        store.write(VirtualPath(("cafe\u0301.md",)), b"x", None)
    assert refused.value.code == "hosted_path"
    with pytest.raises(OsFailure) as refused:
        store.write(VirtualPath(("new.md",)), b"x" * (MAX_CONTENT_BYTES + 1), None)
    assert refused.value.code == "hosted_size"
    assert store.write(VirtualPath(("new.md",)), b"x" * MAX_CONTENT_BYTES, None)
    assert store.entry(VirtualPath(("cafe\u0301.md",))) is None
    plain.close()


def test_a_hosted_store_s_tenants_are_hosted_too(tmp_path: pathlib.Path) -> None:
    from refmem.stores.sqlite import SqliteStore

    store = hosted(SqliteStore(tmp_path / "memory.db"))
    assert hosted(store) is store
    alice = store.for_tenant("alice")
    assert isinstance(alice, HostedStore)
    result = MemoryHandler(alice).execute({"command": "create", "path": "/memories/cafe\u0301.md", "file_text": "x"})
    assert result.is_error and "Unicode NFC" in result.output
    handler = MemoryHandler(store, tenant="bob")
    assert handler.execute({"command": "create", "path": "/memories/a.md", "file_text": "x" * 102_401}).is_error
    alice.close()
    handler.close()
    store.close()


def test_an_export_says_what_a_hosted_store_would_refuse(tmp_path: pathlib.Path) -> None:
    """A tenant made under the profile exports with nothing to refuse; one made outside it is named path by path."""
    import io

    from refmem.stores.hosted import export_refusals
    from refmem.stores.transfer import export_tenant

    plain = _sqlite(tmp_path)("alice")
    handler = MemoryHandler(hosted(plain))
    assert not handler.execute({"command": "create", "path": "/memories/a/b.md", "file_text": "x"}).is_error
    assert not handler.execute({"command": "str_replace", "path": "/memories/a/b.md", "old_str": "x",
                                "new_str": "y" * 100_000}).is_error
    out = io.BytesIO()
    export_tenant(plain, out)
    assert list(export_refusals(io.BytesIO(out.getvalue()))) == []
    plain.write(VirtualPath(("cafe\u0301.md",)), b"x", None)
    plain.write(VirtualPath(("big.md",)), b"x" * (MAX_CONTENT_BYTES + 1), None)
    out = io.BytesIO()
    export_tenant(plain, out)
    assert list(export_refusals(io.BytesIO(out.getvalue()))) == [("big.md", "hosted_size"),
                                                                 ("cafe\u0301.md", "hosted_path")]
    plain.close()
