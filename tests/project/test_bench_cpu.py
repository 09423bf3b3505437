"""`python -m bench --only cpu` (bench/cpu.py) makes its whole table in one run: every operation beside its floor,
where it was asked, in both configurations, and the breakdown of a rename by layer. Only the table's shape is
checked here (a few turns each): what the figures say is read from a run on a quiet machine, never by a test."""

from __future__ import annotations

import re
from pathlib import Path

from bench import cpu


def test_the_table_has_every_operation_beside_its_floor(tmp_path: Path) -> None:
    table = cpu.main_section(str(tmp_path), quick=True, disk=str(tmp_path), reps=5)
    rows = re.findall(r"^\| (rename|delete|nested view) \| (tmpfs|disk) \| ([0-9.]+) µs \| (none|made) \| "
                      r"([0-9.]+) µs \|", table, re.M)
    places = {"disk"} | ({"tmpfs"} if "| tmpfs |" in table else set())
    assert {(op, where, journal) for op, where, _, journal, _ in rows} == {
        (op, where, journal) for op in cpu.TARGETS for where in places for journal in ("none", "made")
    }
    assert all(float(mine) > 0 and float(floor) > 0 for _, _, mine, _, floor in rows)
    for layer in cpu.LAYERS:
        assert re.search(rf"^\| {re.escape(cpu.LABELS[layer])} \| [0-9.]+ µs \|", table, re.M), layer
