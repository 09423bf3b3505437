"""A store scheme is one row of the registry plus its engine (D-STORE-SCHEMES, D-STORE-ENGINES).

Here, in this test alone, a toy scheme `toy:PATH` is registered: a second SQLite scheme whose row composes the rules
(`SqlStore`) over an engine (`SqliteEngine`) itself, without the SQLite store's class. With nothing else changed,
`refmem exec`, `refmem db init`, `db erase`, `prune --store` and `history --store` take it, and the whole storage
contract (test_storage_contract) runs over it, opened by its location through the registry. Without the row, the
same location is refused as any unknown one is. Every location of the shipped schemes finds its row, and nothing
in refmem asks which engine a location names but the registry."""

from __future__ import annotations

import json
import os
import pathlib
from pathlib import Path
from typing import Any, Iterator, Optional, Tuple

import pytest
import test_storage_contract as contract
from storage_support import StoreKind

from refmem import cli
from refmem._store_messages import STORE_SPEC
from refmem.store_protocol import tenant_name
from refmem.stores import StoreError, location
from refmem.stores.core import SqlStore
from refmem.stores.schema import DEFAULT_TENANT, SCHEMA_VERSION
from refmem.stores.sqlite import SqliteEngine, migrate

PREFIX = "toy:"


def _path(where: str) -> str:
    return where[len(PREFIX) :]


def _open(where: str, tenant: Optional[str], actor: Optional[str], create: bool) -> SqlStore:
    name = None if tenant is None else tenant_name(tenant)
    return SqlStore(SqliteEngine(_path(where), DEFAULT_TENANT if name is None else name), name, actor)


def _migrate(where: str, app_role: Optional[str]) -> Tuple[Optional[int], int]:
    return migrate(_path(where))


TOY = location.Scheme(
    "toy",
    lambda where: where.startswith(PREFIX),
    _open,
    migrate=_migrate,
    present=lambda where: os.path.isfile(_path(where)),
)
"""The toy scheme's whole row: how it is recognised, opened, initialised, and whether a database is there."""


@pytest.fixture
def toy() -> Iterator[location.Scheme]:
    with location.registered(TOY) as scheme:
        yield scheme


def cli_run(capsys: pytest.CaptureFixture[str], *argv: str) -> Tuple[int, str, str]:
    status = cli.main(list(argv))
    said = capsys.readouterr()
    return status, said.out, said.err


def test_the_shipped_locations_find_their_rows() -> None:
    assert location.scheme_of("sqlite:///var/lib/m.db") is location.SQLITE
    assert location.scheme_of("sqlite:m.db") is location.SQLITE
    assert location.scheme_of("postgresql://app@db/memory") is location.POSTGRESQL
    assert location.scheme_of("postgres://app@db/memory") is location.POSTGRESQL
    for unknown in ("toy:/m.db", "/var/lib/m.db", "mysql://db", ""):
        assert location.find(unknown) is None
        with pytest.raises(StoreError) as refused:
            location.open_location(unknown)
        assert str(refused.value) == STORE_SPEC


def test_exec_and_the_database_commands_take_a_registered_scheme(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], toy: location.Scheme
) -> None:
    where = f"{PREFIX}{tmp_path / 'toy.db'}"
    assert cli_run(capsys, "db", "init", "--store", where)[:2] == (0, f"schema made: version {SCHEMA_VERSION}\n")
    create = json.dumps({"command": "create", "path": "/memories/a.md", "file_text": "one\n"})
    status, out, err = cli_run(capsys, "exec", "--store", where, "--tenant", "alice", create)
    assert (status, err) == (0, ""), err
    assert out == "File created successfully at: /memories/a.md\n"
    edit = json.dumps({"command": "str_replace", "path": "/memories/a.md", "old_str": "one", "new_str": "two"})
    assert cli_run(capsys, "exec", "--store", where, "--tenant", "alice", edit)[0] == 0
    view = json.dumps({"command": "view", "path": "/memories/a.md"})
    assert "two" in cli_run(capsys, "exec", "--store", where, "--tenant", "alice", view)[1]
    assert cli_run(capsys, "exec", "--store", where, "--tenant", "bob", view)[0] == 1  # tenants apart
    status, out, _ = cli_run(capsys, "history", "/memories/a.md", "--store", where, "--tenant", "alice")
    assert status == 0 and "str_replace" in out, out
    status, out, _ = cli_run(capsys, "prune", "--store", where, "--tenant", "alice", "--older-than", "1d")
    assert (status, out) == (0, "0 removed, 1 kept\n")
    status, out, _ = cli_run(capsys, "db", "erase", "--store", where, "--tenant", "alice", "--yes")
    assert status == 0 and out.startswith("erased the tenant alice:"), out
    # The row has no check: db check says the location is not one it can check, naming no path.
    status, _, err = cli_run(capsys, "db", "check", "--store", where)
    assert status == 2 and str(tmp_path) not in err and STORE_SPEC in err, err


def test_without_its_row_the_location_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    where = f"{PREFIX}{tmp_path / 'toy.db'}"
    view = json.dumps({"command": "view", "path": "/memories"})
    status, out, err = cli_run(capsys, "exec", "--store", where, view)
    assert (status, out) == (2, "") and err == f"refmem: cannot use the store: {STORE_SPEC}\n", err
    assert not (tmp_path / "toy.db").exists()


def test_no_engine_is_named_outside_the_registry() -> None:
    """The command line, serve, the health check and the conformance targets ask the registry which store a location
    names; none of them tests a location's scheme itself."""
    root = pathlib.Path(__file__).resolve().parents[2]
    here = pathlib.Path(__file__).resolve()
    found = [
        str(path.relative_to(root))
        for folder in ("refmem", "refmem_harness", "refmem_mcp", "conformance", "bench", "tests")
        for path in sorted((root / folder).rglob("*.py"))
        if path.resolve() != here and "is_postgres" in path.read_text(encoding="utf-8", errors="replace")
    ]
    assert found == []


# --- the storage contract, over the toy scheme, through the registry ------------------------------------------


def _toy_kind(where: Path) -> Any:
    return location.open_location(f"{PREFIX}{where}")


@pytest.fixture
def kind(toy: location.Scheme) -> StoreKind:
    return StoreKind("toy", _toy_kind, True)


where = contract.where
store = contract.store
for _name in dir(contract):
    if _name.startswith("test_"):
        globals()[_name] = getattr(contract, _name)
del _name  # the contract's tests are collected here too, each with this module's `kind`
