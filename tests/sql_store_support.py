"""What the SQL stores' shared fixtures are made of (tests/conftest.py: `engine`, each SQL engine in turn, and
`opener`, stores over one fresh database of that engine, closed after the test). PostgreSQL's is a schema of its own
in the session's throwaway cluster (postgres_support), skipped saying why where none can start (failed under
REFMEM_REQUIRE_POSTGRES=1)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List

import pytest

from refmem import MemoryHandler
from refmem.paths import VirtualPath, parse_path
from refmem.stores.core import SqlStore
from refmem.stores.sqlite import SqliteStore

Opener = Callable[..., SqlStore]
ENGINES = ["sqlite", "postgresql"]


def make_opener(engine: str, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    """Opens stores over one fresh database of the engine (each call a store of its own, on the same data);
    every store opened is closed after the test (the `opener` fixture, tests/conftest.py)."""
    opened: List[SqlStore] = []

    if engine == "sqlite":

        def make(**options: Any) -> SqlStore:
            store = SqliteStore(tmp_path / "memory.db", **options)
            opened.append(store)
            return store

    else:
        cluster = request.getfixturevalue("postgres")
        from refmem.stores.postgres import PostgresStore

        dsn = cluster.location_dsn(f"sql_store_support:{tmp_path}:{os.getpid()}")

        def make(**options: Any) -> SqlStore:
            store = PostgresStore(dsn, **options)
            opened.append(store)
            return store

    yield make
    for store in opened:
        store.close()


def vp(raw: str) -> VirtualPath:
    return parse_path(raw)


def run(handler: MemoryHandler, **command: Any) -> str:
    """The command's output; it must succeed."""
    result = handler.execute(command)
    assert not result.is_error, result.output
    return result.output


def refmem_cli(*arguments: str, environment: Dict[str, str]) -> subprocess.CompletedProcess:
    """`python -m refmem ARGUMENTS` in `environment`, its output captured (the command line's tests)."""
    return subprocess.run(  # noqa: S603  # our own module, arguments of the test's
        [sys.executable, "-m", "refmem", *arguments],
        capture_output=True, text=True, timeout=120, check=False, env=environment,
    )
