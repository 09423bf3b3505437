"""The reference over the SQLite store gives, byte for byte, the results it gives over the filesystem store, for
every conformance case that a database can hold.

Each case's `setup.files` are put in both stores through the storage interface, then its steps run through the
`refmem` and `refmem+sqlite` targets' handlers (conformance/reference_target.py, reference_sqlite_target.py), built
with the case's options; every step's text and error flag must be equal. Cases that need on-disk fixtures
(links, FIFOs, hard links, modes, raw bytes planted on the host) have no meaning in a database and are the
`refmem+sqlite` target's skips (D-STORE-SQL-FIXTURES); the count of cases compared is checked too, so a loader
that found nothing cannot pass.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any, List, Tuple

import pytest

from conformance.cases import Case, load_cases
from refmem.paths import VirtualPath
from refmem_harness import reference_sqlite_target, reference_target

pytestmark = pytest.mark.slow

MIN_CASES = 1500  # the suite has over 2,000 such cases (suite-4): far fewer means the cases were not found
TRUNCATED = "[Listing truncated at "


def _same(expected: Any, got: Any) -> bool:
    """Equal results; a listing cut at the cap may keep other entries (D-VIEW-LIST-CAP: which ones is the store's;
    the filesystem's are in directory order, the database's the first by name, D-STORE-SQL-LIST-CAP), and must
    keep as many, under the same heading and truncation line."""
    if tuple(expected) == tuple(got):
        return True
    if not (TRUNCATED in expected.output and TRUNCATED in got.output) or expected.is_error != got.is_error:
        return False
    first, second = expected.output.split("\n"), got.output.split("\n")
    return len(first) == len(second) and (first[:2], first[-1]) == (second[:2], second[-1])


def _portable(case: Case) -> bool:
    return case.requires != "fixtures" and all("tool" not in step for step in case.steps)


def _seed(store: Any, files: Any) -> None:
    with store.locked():
        for relative, text in files.items():
            store.write_new(VirtualPath(tuple(relative.split("/"))), text.encode("utf-8"))


def _options(case: Case) -> Any:
    return dict(case.options or {})


def test_every_portable_case_reads_the_same_over_sqlite(tmp_path: Path) -> None:
    """In memory-backed storage where the machine has it (/dev/shm): both stores fsync every write, which proves
    nothing here and made this test the suite's slowest on a loaded disk."""
    if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK):
        with tempfile.TemporaryDirectory(dir="/dev/shm", prefix="refmem-sqlite-conformance-") as where:
            _compare_every_portable_case(Path(where))
    else:
        _compare_every_portable_case(tmp_path)


def _compare_every_portable_case(tmp_path: Path) -> None:
    cases, _warnings = load_cases()
    compared, steps = 0, 0
    differing: List[Tuple[str, int, str, str]] = []
    for number, case in enumerate(c for c in cases if _portable(c)):
        on_disk = reference_target.make(tmp_path / f"{number}-fs", **_options(case))
        in_database = reference_sqlite_target.make(tmp_path / f"{number}-db", **_options(case))
        try:
            _seed(on_disk.store, case.setup.get("files", {}))
            _seed(in_database.store, case.setup.get("files", {}))
            for step_number, step in enumerate(case.steps, 1):
                expected, got = on_disk.execute(step["input"]), in_database.execute(step["input"])
                steps += 1
                if not _same(expected, got):
                    differing.append((case.id, step_number, repr(expected)[:300], repr(got)[:300]))
        finally:
            on_disk.close()
            in_database.close()
        compared += 1
    assert differing == []
    assert compared >= MIN_CASES and steps > compared
