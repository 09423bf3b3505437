"""The fixtures modules share: `memory`, a handler over a fresh folder (see memory_support.Memory), and
`kernel_root`, a kernel RootDir over one small layout on every walk (the kernel's and the tree's tests).

The session's host guard: no test may touch anything outside its temporary folders. The shared devices, the
working tree and a sentinel file are recorded when the session starts and compared when it ends; any
difference fails the run, named in a "host changed" section (see host_guard_support). The devices are also looked at
after every test, so that the section names the test after which a device was first seen changed. Under
pytest-xdist (`-n 2`) the controller keeps the guard: it snapshots before the workers start and after they end, and
looks at the devices as each test's report arrives.

Folders below keep their own conftest files for their own fixtures; none of them defines these.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator, List, Optional

import postgres_support
import pytest
from host_guard_support import Sentinel, devices, differences, snapshot
from memory_support import Memory
from sql_store_support import ENGINES, Opener, make_opener

from refmem import _kernel as kernel

_HOST = pytest.StashKey[dict]()
_CONFIG: Optional[pytest.Config] = None


def pytest_configure(config: pytest.Config) -> None:
    global _CONFIG
    _CONFIG = config


def _is_worker(config: pytest.Config) -> bool:
    """A pytest-xdist worker: the controller alone keeps the host guard, since a worker's snapshot would see the
    other worker's tests at work (and a worker's summary is never shown)."""
    return hasattr(config, "workerinput")


def pytest_sessionstart(session: pytest.Session) -> None:
    if _is_worker(session.config):
        return
    sentinel = Sentinel()
    session.config.stash[_HOST] = {
        "sentinel": sentinel,
        "before": snapshot(session.config.rootpath, sentinel),
        "changed": [],
        "first_seen": {},
    }


def pytest_collection_modifyitems(config: pytest.Config, items: List[pytest.Item]) -> None:
    """Under pytest-xdist the long tests (marked `slow`) are handed out first (D-CI-ORDER). `--dist loadgroup` hands
    each worker one test (or one xdist_group) at a time in collection order, so a long test collected last (the
    folders are collected alphabetically: tests/reliability and tests/stores hold the kill tests) kept one worker
    busy alone while the other had nothing left; started first, the thousands of short tests fill in behind them.
    Both workers sort alike (the controller checks that they collected the same list); one process keeps the files'
    order."""
    if _is_worker(config):
        items.sort(key=lambda item: item.get_closest_marker("slow") is None)  # stable: the order within each part


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """After each test's teardown, in the process that keeps the guard (with workers: as their reports arrive,
    so the named test is the first one reported after the change, within the tests running at the time)."""
    if report.when != "teardown" or _CONFIG is None:
        return
    host = _CONFIG.stash.get(_HOST, None)
    if host is not None:
        for device, state in devices().items():
            if state != host["before"][device]:
                host["first_seen"].setdefault(device, report.nodeid)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    postgres_support.stop()  # the session's throwaway PostgreSQL cluster, if a test started one
    host = session.config.stash.get(_HOST, None)
    if host is None:
        return
    try:
        changed = differences(host["before"], snapshot(session.config.rootpath, host["sentinel"]))
        first_seen = host["first_seen"]
        host["changed"] = [
            line + (f" (first seen after {first_seen[name]})" if name in first_seen else "")
            for line, name in ((line, line.split(":", 1)[0]) for line in changed)
        ]
    finally:
        host["sentinel"].close()
    if host["changed"]:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    host = config.stash.get(_HOST, None)
    if not host or not host["changed"]:
        return
    terminalreporter.write_sep(
        "!", "host changed: something outside the temporary folders changed during the run", red=True
    )
    terminalreporter.write_line(
        "A test of this run touched it, or another process on this machine did (the devices are shared).", red=True
    )
    for line in host["changed"]:
        terminalreporter.write_line(line, red=True)
    # An error in the short summary and the last line ("1 error"): a run whose tests all passed must not read
    # as a pass.
    report = pytest.TestReport(
        nodeid="host guard",
        location=("tests/conftest.py", None, "host guard"),
        keywords={},
        outcome="failed",
        longrepr="host changed: " + "; ".join(host["changed"]),
        when="teardown",
    )
    terminalreporter.stats.setdefault("error", []).append(report)


@pytest.fixture(scope="session")
def postgres() -> postgres_support.Cluster:
    """The session's throwaway PostgreSQL cluster (postgres_support): started once, stopped when the session ends;
    the test skips saying why where none can start (fails under REFMEM_REQUIRE_POSTGRES=1)."""
    return postgres_support.cluster()


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    """Each SQL engine in turn (sql_store_support)."""
    return str(request.param)


@pytest.fixture
def opener(engine: str, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    """Stores over one fresh database of `engine`, each call a store of its own on the same data, all closed after
    the test (sql_store_support.make_opener)."""
    yield from make_opener(engine, request, tmp_path)


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    """A `Memory` over `tmp_path/memories`; every handler it made is closed after the test."""
    made = Memory(tmp_path)
    yield made
    made.close()


WALKS = {"openat2": (False, True), "name-by-name": (False, False), "portable": (True, False)}


@pytest.fixture(params=list(WALKS))
def kernel_root(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[kernel.RootDir]:
    """Folders a/b with a/b/f.txt, a file `file`, a FIFO `fifo`, and a link `out` to a folder outside the root
    holding secret.txt ("CANARY"); opened with openat2, name by name (openat2 taken away), or portable."""
    portable, one_call = WALKS[request.param]
    if not one_call:
        monkeypatch.setattr(kernel, "_openat2", None)
    top = tmp_path / "root"
    (top / "a" / "b").mkdir(parents=True)
    (top / "a" / "b" / "f.txt").write_text("inside\n")
    (top / "file").write_text("x")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("CANARY")
    (top / "out").symlink_to(tmp_path / "outside")
    os.mkfifo(top / "fifo")
    opened = kernel.RootDir(top, portable=portable)
    yield opened
    opened.close()
