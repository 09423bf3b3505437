"""PostgreSQL's edit against its durable floor (bench/stores.py `measure_durable`, issue 30) at a tiny size: both
sockets of one throwaway cluster answer, both sides do the same durable work (the floor's edits leave a version row
with the SHA-256 of the bytes replaced and a journal line each, as refmem's do), and the table's ratios and verdicts
are computed from that same run's figures. No timing threshold: the machine is shared."""

from __future__ import annotations

import hashlib

import postgres_support
import pytest

from bench import stores


def test_the_durable_floor_does_what_one_edit_must() -> None:
    started = postgres_support.cluster()
    dsn = started.location_dsn("bench-durable-floor")
    stores.prepare_durable(dsn)
    floor = stores.DurableFloor(dsn, "t")
    try:
        floor.setup(2)
        before = stores.body().encode()
        for i in (0, 1, 0):
            floor.execute(stores.tool_input("str_replace", i))
        versions = floor.db.execute(
            "SELECT path, number, sha256, data FROM floor_versions WHERE tenant = 't' ORDER BY number").fetchall()
        journal = floor.db.execute("SELECT generation, path FROM floor_changes ORDER BY generation").fetchall()
        generation = floor.db.execute("SELECT generation FROM floor_tenants WHERE tenant = 't'").fetchone()[0]
    finally:
        floor.close()
    assert [(path, number) for path, number, _, _ in versions] == [("f0000.md", 2), ("f0001.md", 3), ("f0000.md", 4)]
    assert versions[0][2] == hashlib.sha256(before).hexdigest() and bytes(versions[0][3]) == before
    assert versions[2][2] == hashlib.sha256(bytes(versions[2][3])).hexdigest() and bytes(versions[2][3]) != before
    assert journal == [(2, "f0000.md"), (3, "f0001.md"), (4, "f0000.md")] and generation == 4


def test_a_tiny_run_gives_both_sockets_and_ratios_of_its_own_figures() -> None:
    if postgres_support.missing() is not None:
        pytest.skip(postgres_support.missing())
    figures = stores.measure_durable(rounds=1, calls=4, least=2, clients=(1, 2))
    assert set(figures) == {(s, side, n) for s in ("unix", "tcp") for side in ("refmem", "floor") for n in (1, 2)}
    assert all(figure.median > 0 and figure.errors == 0 for figure in figures.values())
    table = stores.durable_markdown(figures, 1, clients=(1, 2))
    rows = [line.split(" | ") for line in table.splitlines() if line.startswith(("| unix", "| tcp"))]
    assert len(rows) == 4
    for row in rows:
        socket_name, count = row[0].lstrip("| "), int(row[1])
        ratio = figures[(socket_name, "refmem", count)].median / figures[(socket_name, "floor", count)].median
        assert row[8] == f"{ratio:.2f}x"
        assert row[9] == ("yes" if ratio <= stores.DURABLE_TARGET else "**no**")
