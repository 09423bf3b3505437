"""PostgreSQL's edit statement (`Queries.edit_in_one`, issue 30): each value it names is bound once, by name, on the
single-connection store and the pooled store alike, and the edit it makes is the same on both (content, version
kept with its SHA-256, journal line)."""

from __future__ import annotations

import hashlib
import os
import re
from typing import Any, List, Mapping

import pytest
from postgres_support import Cluster, import_psycopg

from refmem import MemoryHandler

import_psycopg()

from refmem.paths import parse_path  # noqa: E402
from refmem.stores import pgpool  # noqa: E402
from refmem.stores import postgres as single  # noqa: E402
from refmem.stores.postgres import QUERIES  # noqa: E402

BEFORE, AFTER = "alpha beta\n", "alpha gamma\n"


def _bound(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> List[Any]:
    """The values each execution of the edit statement was given, through `module`'s `bound`."""
    seen: List[Any] = []
    real = module.bound

    def spy(params: Any) -> Any:
        seen.append(params)
        return real(params)

    monkeypatch.setattr(module, name, spy)
    return seen


@pytest.mark.parametrize("kind", ["direct", "pooled"])
def test_the_edit_binds_each_value_once_and_keeps_its_version(
    postgres: Cluster, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    assert QUERIES.edit_in_one is not None
    names = set(re.findall(r"%\((\w+)\)s", QUERIES.edit_in_one))
    assert "%s" not in QUERIES.edit_in_one and len(names) == 12  # 22 values by position before
    dsn = postgres.location_dsn(f"test_postgres_edit:{kind}:{os.getpid()}")
    seen = _bound(monkeypatch, single if kind == "direct" else pgpool, "bound")
    if kind == "direct":
        store: Any = single.PostgresStore(dsn, tenant="alice")
        closing: Any = store
    else:
        closing = pgpool.PostgresPool(dsn, min_size=1, max_size=1)
        store = closing.store(tenant="alice")
    try:
        handler = MemoryHandler(store)
        assert not handler.execute({"command": "create", "path": "/memories/a.md", "file_text": BEFORE}).is_error
        seen.clear()
        edit = {"command": "str_replace", "path": "/memories/a.md", "old_str": "beta", "new_str": "gamma"}
        assert not handler.execute(edit).is_error
        by_name = [params for params in seen if isinstance(params, Mapping)]
        assert len(by_name) == 1 and set(by_name[0]) == names
        assert handler.execute({"command": "view", "path": "/memories/a.md"}).output.endswith("alpha gamma")
        versions = list(store.history(parse_path("/memories/a.md")))
        assert [version.sha256 for version in versions] == [hashlib.sha256(BEFORE.encode()).hexdigest()]
    finally:
        closing.close()

