"""The stores' bench rows (bench/stores.py, `python -m bench --only stores`) at a tiny size: the tables' shape,
every figure a positive number, every ratio and verdict computed from the figures of that same run. No timing
threshold anywhere: the machine is shared, and what is checked is the arithmetic and the layout, not the speed."""

from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Sequence

import postgres_support
import pytest

from bench import stores

UNITS = {"s": 1.0, "ms": 1e-3, "µs": 1e-6}


def seconds_of(cell: str) -> float:
    value, unit = cell.split(" ")
    return float(value) * UNITS[unit]


def rate_of(cell: str) -> float:
    assert cell.endswith("/s"), cell
    return float(cell[:-2].replace(",", ""))


def times_of(cell: str) -> float:
    assert cell.endswith("x"), cell
    return float(cell[:-1])


def tables(text: str) -> List[List[Dict[str, str]]]:
    """Every Markdown table in `text`, as rows of {column: cell}."""
    found: List[List[Dict[str, str]]] = []
    head: List[str] = []
    for line in text.split("\n"):
        if not line.startswith("|"):
            head = []
            continue
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if not head:
            head = cells
            found.append([])
        elif set(line) <= set("|-"):
            continue
        else:
            assert len(cells) == len(head), line
            found[-1].append(dict(zip(head, cells)))
    return found


def close(shown: float, computed: float) -> bool:
    """`shown` is `computed` as printed from figures of three significant digits, to two decimals."""
    return abs(shown - computed) <= 0.02 * computed + 0.006


def check(report: stores.Report, chosen: Sequence[str]) -> None:
    text = stores.markdown(report)
    latency, throughput = tables(text)[:2]
    assert report.stores == tuple(chosen)
    keys = [(row["store"], int(row["clients"]), row["command"]) for row in latency]
    assert keys == [(s, n, c) for s in chosen for n in stores.CLIENTS for c in stores.COMMANDS]
    for row in latency:
        store, count, command = row["store"], int(row["clients"]), row["command"]
        mine = report.figures[(store, "refmem", count, command)]
        median, p95, rate = seconds_of(row["median"]), seconds_of(row["p95"]), rate_of(row["cmd/s"])
        assert 0 < median <= p95 and rate > 0, row
        assert (row["median"], row["p95"], row["cmd/s"]) == (
            stores.seconds(mine.median), stores.seconds(mine.p95), stores.rate(mine.throughput))
        has_floor = store == "filesystem" or command in stores.SQL_FLOORS
        if not has_floor:
            assert [row[c] for c in ("floor median", "floor p95", "floor cmd/s", "median ÷ floor")] == ["-"] * 4
            assert (row["target"], row["met"]) == ("", "")
            continue
        floor = report.figures[(store, "floor", count, command)]
        floor_median = seconds_of(row["floor median"])
        assert 0 < floor_median <= seconds_of(row["floor p95"]) and rate_of(row["floor cmd/s"]) > 0, row
        assert row["floor median"] == stores.seconds(floor.median)
        assert close(times_of(row["median ÷ floor"]), median / floor_median), row
        limit = stores.TARGETS.get((store, command))
        if limit is None:
            assert (row["target"], row["met"]) == ("", ""), row
        else:
            assert row["target"] == f"<= {limit:g}x floor"
            assert row["met"] == ("yes" if mine.median <= limit * floor.median else "**no**"), row
        assert row["error results"] == "0", row
    assert [(row["store"], row["command"]) for row in throughput] == [(s, c) for s in chosen for c in stores.COMMANDS]
    for row in throughput:
        rates = [rate_of(row[f"{n} clients"]) for n in stores.CLIENTS]
        assert all(value > 0 for value in rates), row
        for count, value in zip(stores.CLIENTS[1:], rates[1:]):
            assert close(times_of(row[f"{count} ÷ 1"]), value / rates[0]), row
        exact = [report.figures[(row["store"], "refmem", n, row["command"])].throughput for n in stores.CLIENTS]
        grows = exact[1] >= stores.GROWS_FROM_1_TO_4 * exact[0] and exact[2] >= stores.STAYS_FROM_4_TO_16 * exact[1]
        assert row["met"] == ("yes" if grows else "**no**"), row
    assert f"load average {report.load_before} before, {report.load_after} after" in text
    counted = [store for store in chosen if store != "filesystem"]
    assert (len(tables(text)) == 3) == bool(counted)
    if counted:
        statements = tables(text)[2]
        assert [(row["store"], row["command"]) for row in statements] == [
            (s, c) for s in counted for c in stores.COMMANDS]
        for row in statements:
            assert int(row["store's statements"]) >= 1, row
            floor = {"view": "1", "str_replace": "4"}.get(row["command"], "-")  # SELECT; BEGIN, SELECT, UPDATE, COMMIT
            assert row["floor's statements"] == floor, row


@pytest.mark.slow
def test_filesystem_and_sqlite_rows(tmp_path: Path) -> None:
    chosen = ("filesystem", "sqlite")
    check(stores.measure(str(tmp_path), calls=2, stores=chosen, rounds=2), chosen)


@pytest.mark.slow
def test_postgresql_rows_beside_the_others(tmp_path: Path) -> None:
    dsn = postgres_support.cluster().dsn()  # skips, saying why, where no cluster can be started
    check(stores.measure(str(tmp_path), calls=2, dsn=dsn, rounds=1), stores.STORES)


def test_postgresql_rows_are_skipped_saying_why_without_initdb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests import postgres_support as imported  # the copy the bench imports

    monkeypatch.delenv("REFMEM_CONFORMANCE_POSTGRES", raising=False)
    monkeypatch.setattr(imported, "BIN", tmp_path / "nowhere")
    report = stores.measure(str(tmp_path), calls=2, clients=(1,), stores=("sqlite", "postgresql"), rounds=1)
    assert report.stores == ("sqlite",)
    assert "initdb" in report.skipped["postgresql"]
    assert f"postgresql: skipped: {report.skipped['postgresql']}" in stores.markdown(report)


def test_throughput_counts_only_while_every_client_runs() -> None:
    """Two clients: one runs from 0 to 10 s, one from 4 to 6 s (a late start, an early end). While both run (4 to
    6 s) 5 calls end (3 of the first's, 2 of the second's): 2.5 calls per second, not the 13 calls over the whole
    10 s; a phase in which no moment has every client running falls back to the whole phase."""
    first = (0.0, 10.0, [0.1] * 11, 0, [0.5, 1.0, 2.0, 3.0, 4.5, 5.0, 5.5, 7.0, 8.0, 9.0, 10.0])
    second = (4.0, 6.0, [0.1] * 2, 0, [5.0, 6.0])
    assert stores.all_running_rate([first, second]) == 5 / 2
    apart = (11.0, 12.0, [0.1], 0, [12.0])
    assert stores.all_running_rate([first, apart]) == 12 / 12
    assert stores.figure([[first, second]]).throughput == 5 / 2


def test_a_full_runs_client_makes_enough_calls_to_run_beside_the_others() -> None:
    assert stores.files_for(16, 120, stores.CALLS_PER_CLIENT) == stores.CALLS_PER_CLIENT >= 40
    assert stores.files_for(1, 120, stores.CALLS_PER_CLIENT) == 120
    assert stores.files_for(16, 2) == 2
