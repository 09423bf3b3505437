"""The random command sequences of test_sqlite_differential on the filesystem store and the PostgreSQL store
(the session's throwaway cluster): every result equal, byte for byte, after every step (D-STORE-INTERFACE). Each
sequence runs in a tenant of its own, so the sequences share one schema and nothing else."""

from __future__ import annotations

import itertools
import shutil
import tempfile
from pathlib import Path
from typing import Any, Dict, List

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from postgres_support import Cluster, import_psycopg
from test_sqlite_differential import assert_same_results, commands

from refmem import Limits, MemoryHandler

import_psycopg()

from refmem.stores.postgres import PostgresStore  # noqa: E402

_TENANTS = itertools.count()


@pytest.mark.slow
@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(st.lists(commands, min_size=20, max_size=60), st.sampled_from([{}, {"limits": Limits(max_listing_entries=3)}]))
def test_random_sequences_read_the_same_on_disk_and_in_postgresql(
    postgres: Cluster, sequence: List[Dict[str, Any]], options: Dict[str, Any]
) -> None:
    where = Path(tempfile.mkdtemp(prefix="refmem-differential-"))
    store = PostgresStore(postgres.location_dsn("differential"), tenant=f"seq{next(_TENANTS)}")
    on_disk = MemoryHandler(where / "memories", **options)
    try:
        assert_same_results(on_disk, MemoryHandler(store, **options), sequence)
    finally:
        on_disk.close()
        store.erase()
        store.close()
        shutil.rmtree(where)
