"""PostgreSQL's edit against its durable floor (bench/stores.py `measure_durable`, issue 30) at a tiny size: both
sockets of one throwaway cluster answer, both sides do the same durable work (the floor's edits leave a version row
with the SHA-256 of the bytes replaced and a journal line each, as refmem's do), and the table's ratios and verdicts
are computed from that same run's figures. No timing threshold: the machine is shared."""

from __future__ import annotations

import hashlib
import statistics

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
        versions = floor.db.execute("SELECT path, number, sha256, data FROM floor_versions WHERE tenant = 't'"
                                    " AND path LIKE 'f%' ORDER BY number").fetchall()
        journal = floor.db.execute("SELECT generation, path FROM floor_changes WHERE path LIKE 'f%'"
                                   " ORDER BY generation").fetchall()
        warmed = floor.db.execute("SELECT count(*) FROM floor_versions WHERE path LIKE 'w%'").fetchone()[0]
        generation = floor.db.execute("SELECT generation FROM floor_tenants WHERE tenant = 't'").fetchone()[0]
    finally:
        floor.close()
    w = stores.WARM_EDITS  # the untimed edits of the setup come first, each a version and a journal line too
    assert warmed == w
    assert [(path, number) for path, number, _, _ in versions] == [("f0000.md", w + 2), ("f0001.md", w + 3),
                                                                   ("f0000.md", w + 4)]
    assert versions[0][2] == hashlib.sha256(before).hexdigest() and bytes(versions[0][3]) == before
    assert versions[2][2] == hashlib.sha256(bytes(versions[2][3])).hexdigest() and bytes(versions[2][3]) != before
    assert journal == [(w + 2, "f0000.md"), (w + 3, "f0001.md"), (w + 4, "f0000.md")] and generation == w + 4


def test_a_tiny_run_gives_both_sockets_and_ratios_of_its_own_figures() -> None:
    """Each ratio is the median of the rounds' own ratios (two rounds here), its range the rounds'; the CPU per edit
    of both sides, client and server, is measured (the server's backends are local processes)."""
    if postgres_support.missing() is not None:
        pytest.skip(postgres_support.missing())
    rows = stores.measure_durable(rounds=2, calls=4, least=2, clients=(1, 2))
    assert set(rows) == {(s, n) for s in ("unix", "tcp") for n in (1, 2)}
    for row in rows.values():
        assert row.mine.median > 0 and row.floor.median > 0 and row.mine.errors == row.floor.errors == 0
        assert len(row.wall) == len(row.client) == len(row.total) == 2
        assert all(cpu[0] > 0 and cpu[1] is not None and cpu[1] > 0 for cpu in (row.mine_cpu, row.floor_cpu))
        assert row.ratio == statistics.median(row.wall)
    table = stores.durable_markdown(rows, 2, clients=(1, 2))
    lines = [line.split(" | ") for line in table.splitlines() if line.startswith(("| unix", "| tcp"))]
    assert len(lines) == 4
    for line in lines:
        row = rows[(line[0].lstrip("| "), int(line[1]))]
        assert line[8] == f"{row.ratio:.2f}x ({min(row.wall):.2f}-{max(row.wall):.2f})"
        assert line[9] == ("yes" if row.ratio <= stores.DURABLE_TARGET else "**no**")
        assert line[11] == f"{statistics.median(row.client):.2f}x ({min(row.client):.2f}-{max(row.client):.2f})"


def test_a_rounds_ratio_is_of_that_rounds_figures() -> None:
    """The verdict's ratio: the median of per-round ratios, so one round's load on one side moves one ratio."""
    def phase(latency: float) -> stores.Phase:
        return (0.0, 1.0, [latency] * 3, 0, [0.5, 0.7, 1.0])

    assert stores.figure([[phase(2.0)]]).median / stores.figure([[phase(1.0)]]).median == 2.0
    row = stores.DurableRow(stores.figure([[phase(1.0)]]), stores.figure([[phase(1.0)]]), [1.1, 5.0, 1.2],
                            [1.0], [None], (1.0, None), (1.0, None))
    assert row.ratio == 1.2
    assert stores._spread(row.wall) == "1.20x (1.10-5.00)" and stores._spread(row.total) == "-"


def test_the_split_times_both_sides_drivers_and_gives_the_patched_calls_back() -> None:
    """`measure_split` (`python -m bench.stores split`): each side's client CPU holds its driver's part, the server's
    CPU is read, the ratios are per block; psycopg's and the engine's methods are themselves again afterwards."""
    if postgres_support.missing() is not None:
        pytest.skip(postgres_support.missing())
    import psycopg

    from refmem.stores.postgres import PostgresEngine

    before = (psycopg.Cursor.execute, psycopg.Cursor.fetchone, PostgresEngine._control)
    found = stores.measure_split(edits=12, blocks=2)
    assert (psycopg.Cursor.execute, psycopg.Cursor.fetchone, PostgresEngine._control) == before
    for side in ("refmem", "floor"):
        split = found[side]
        assert 0 < split.driver <= split.client and split.server is not None and split.server > 0 and split.wall > 0
    assert all(len(values) == 2 for values in found["ratios"].values())
    table = stores.split_markdown(found, 12, 2, "unix")
    assert "| of it, the driver (psycopg, libpq) |" in table and table.count("\n| ") == 6  # its six rows
