"""The suite and the fuzzer through `--target mcp:` against `refmem mcp --harness`, on the filesystem, SQLite and
PostgreSQL stores: the server is started once per run and reset in place for each case (`refmem/reset`,
D-MCP-RESET), and a reset in place is pinned to be the fresh start a new process would make. A planted buggy MCP
server (tests/programs/mcp_planted_backend.py) is caught by both the conformance run and the fuzzer through MCP."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest

pytest.importorskip("mcp")

import anyio  # noqa: E402
import mcp_types as types  # noqa: E402
from mcp.client.session import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402

from refmem_harness.mcp_target import RESET_METHOD, ResetParams, ResetRequest  # noqa: E402
from refmem_harness.targets import open_target  # noqa: E402

SERVER = f"{sys.executable} -m refmem mcp"
PLANTED = f"{sys.executable} {Path(__file__).resolve().parent / 'mcp_planted_backend.py'} {{root}}"
SCRATCH = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
SLICE = ["--run", "*-00[1-3]", "--run", "paths-0[0-4]?", "--run", "sec-contained-*-view-path", "--run", "sec-proc*"]
"""A slice of the suite in every family (each family's first three cases, the path cases, two security groups):
185 cases. The whole suite is the same command without `--run` (docs/spec-notes.md D-MCP-RESET gives its time)."""


@pytest.fixture
def work() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(dir=SCRATCH) as made:
        yield Path(made)


def _root(work: Path, name: str) -> Path:
    made = work / name / "memories"
    made.mkdir(parents=True)
    return made


def _fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


# --- a reset in place is a fresh start ----------------------------------------------------------------------


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts the server's descriptors in /proc")
def test_a_harness_reset_leaves_nothing_of_the_case_before(work: Path) -> None:
    """Caches, open descriptors, watches: a server reset in place answers as a new process on the new root would,
    and holds no more descriptors after 30 resets than after one."""
    first = _root(work, "a")
    target = open_target(f"mcp:stdio:{SERVER} --harness --openclaw --root {{root}}", first)
    try:
        assert target.resettable and target.storage == "filesystem"  # type: ignore[attr-defined]
        create = {"command": "create", "path": "/memories/MEMORY.md", "file_text": "the heron nests\n"}
        assert not target.execute(create).is_error
        assert target.execute({"query": "heron"}, "memory_search").result["results"]
        assert not target.execute({"command": "view", "path": "/memories/MEMORY.md"}).is_error  # cached, indexed
        second = _root(work, "b")
        (second / "MEMORY.md").write_text("the otter swims\n")
        target.reset(second)
        assert "the otter swims" in target.execute({"command": "view", "path": "/memories/MEMORY.md"}).output
        assert target.execute({"query": "heron"}, "memory_search").result["results"] == []
        assert target.execute({"query": "otter"}, "memory_search").result["results"]
        assert target.execute({"path": "MEMORY.md"}, "memory_get").result["text"] == "the otter swims"
        pid = target.pid
        assert pid is not None
        held = _fds(pid)
        for number in range(30):
            root = _root(work, f"c{number}")
            target.reset(root)
            made = target.execute({"command": "create", "path": f"/memories/n{number}.md", "file_text": "x\n"})
            assert not made.is_error and (root / f"n{number}.md").is_file()
            assert target.execute({"query": "x"}, "memory_search").result is not None
        assert _fds(pid) <= held
        assert target.pid == pid and target.restarts == 0 and target.resets == 31  # type: ignore[attr-defined]
    finally:
        target.close()


def test_a_harness_reset_erases_a_database_store(work: Path) -> None:
    """A database store is the harness's throwaway one: erased on every reset, and when a server starts on it."""
    spec = f"mcp:stdio:{SERVER} --harness --store sqlite:///{work}/memory.db"
    target = open_target(spec, _root(work, "a"))
    try:
        assert target.storage == "own" and target.resettable  # type: ignore[attr-defined]
        create = {"command": "create", "path": "/memories/left.md", "file_text": "left\n"}
        assert not target.execute(create).is_error
        target.reset(_root(work, "b"))
        assert target.execute({"command": "view", "path": "/memories/left.md"}).is_error
        assert not target.execute(create).is_error
    finally:
        target.close()
    again = open_target(spec, _root(work, "c"))
    try:
        assert again.execute({"command": "view", "path": "/memories/left.md"}).is_error
    finally:
        again.close()


async def _ask_reset(argv: List[str]) -> Dict[str, Any]:
    params = StdioServerParameters(command=argv[0], args=argv[1:])
    async with stdio_client(params) as (read_stream, write_stream):
        async with ClientSession(read_stream, write_stream) as session:
            initialized = await session.initialize()
            try:
                await session.send_request(ResetRequest(params=ResetParams(root="/")), types.EmptyResult)
                refused = ""
            except MCPError as exc:
                refused = str(exc)
            return {"experimental": initialized.capabilities.experimental, "refused": refused}


def test_without_the_harness_flag_there_is_no_reset(work: Path) -> None:
    """A server started for clients advertises no reset and answers the request "method not found"; the target
    then starts it again for every reset."""
    seen = anyio.run(_ask_reset, [*SERVER.split(), "--root", str(work)])
    assert not (seen["experimental"] or {}).get(RESET_METHOD)
    assert seen["refused"]
    target = open_target(f"mcp:stdio:{SERVER} --root {{root}}", _root(work, "a"))
    try:
        assert not target.resettable  # type: ignore[attr-defined]
        target.reset(_root(work, "b"))
        assert target.restarts == 1 and target.resets == 0  # type: ignore[attr-defined]
    finally:
        target.close()


def test_the_harness_flag_is_refused_over_http(work: Path) -> None:
    done = subprocess.run(
        [*SERVER.split(), "--harness", "--http", "--root", str(work)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2 and "--harness is for stdio only" in done.stderr and "Traceback" not in done.stderr


# --- the suite through MCP, on every store --------------------------------------------------------------------


def _suite(target: str, workdir: Path, *extra: str, env: Any = None) -> Dict[str, Any]:
    workdir.mkdir(parents=True, exist_ok=True)
    report = workdir / "report.json"
    command = [sys.executable, "-m", "conformance", "run", "--target", target, "--workdir", str(workdir)]
    done = subprocess.run(
        [*command, "--report-json", str(report), "-q", *extra], capture_output=True, text=True, timeout=1200, env=env
    )
    assert report.is_file(), done.stdout[-3000:] + done.stderr[-3000:]
    found = dict(json.loads(report.read_text()))
    found["exit"] = done.returncode
    found["said"] = done.stdout[-3000:] + done.stderr[-3000:]
    return found


def _counts(report: Dict[str, Any]) -> Dict[str, int]:
    counts: Dict[str, int] = {}
    for case in report["cases"]:
        counts[case["status"]] = counts.get(case["status"], 0) + 1
    return counts


def _statuses(report: Dict[str, Any]) -> Dict[str, str]:
    return {case["id"]: case["status"] for case in report["cases"]}


def _passes(report: Dict[str, Any], least: int) -> None:
    counts = _counts(report)
    assert report["exit"] == 0 and counts.get("fail", 0) == 0, report["said"]
    assert counts.get("pass", 0) >= least, counts
    assert report["restarts"] == 0  # one server for the whole run


@pytest.mark.slow
def test_the_suite_passes_refmem_through_mcp_on_the_filesystem_reset_in_place(work: Path) -> None:
    """A slice in every family, one server for the run, and the same verdict for every case as the reference
    in this process gives (its handler made afresh per case as well)."""
    target = f"mcp:stdio:{SERVER} --harness --root {{root}}"
    through_mcp = _suite(target, work / "mcp", "--profile", "hardening", *SLICE)
    _passes(through_mcp, 160)
    direct = _suite("refmem", work / "direct", "--profile", "hardening", *SLICE)
    ran = {case: status for case, status in _statuses(through_mcp).items() if status != "skip"}
    assert ran == {case: _statuses(direct)[case] for case in ran}
    direct_skips = {case["id"]: case.get("reason") for case in direct["cases"] if case["status"] == "skip"}
    for case in through_mcp["cases"]:  # skipped only where the reference is too, or for what MCP cannot carry
        if case["status"] == "skip" and direct_skips.get(case["id"]) != case["reason"]:
            assert "cannot be sent to this target" in case["reason"] or "not supported" in case["reason"], case


@pytest.mark.slow
def test_the_suite_passes_refmem_through_mcp_on_sqlite(work: Path) -> None:
    target = f"mcp:stdio:{SERVER} --harness --openclaw --store sqlite:///{work}/memory.db"
    report = _suite(target, work / "run", "--profile", "hardening", *SLICE)
    assert report["storage"] == "own"
    _passes(report, 100)


@pytest.mark.slow
def test_the_suite_passes_refmem_through_mcp_on_postgres(work: Path, postgres: Any) -> None:
    location = _postgres_location(postgres, work)
    env = dict(os.environ, REFMEM_STORE=location)  # the DSN never on a command line
    report = _suite(f"mcp:stdio:{SERVER} --harness", work / "run", "--profile", "hardening", *SLICE, env=env)
    assert report["storage"] == "own"
    _passes(report, 100)


def _postgres_location(postgres: Any, where: Path) -> str:
    """A postgresql:// location over a schema of its own, its tables made (`refmem db init` does it for users)."""
    from urllib.parse import quote

    from refmem.stores.postgres import PostgresStore

    dsn = postgres.location_dsn(where)
    PostgresStore(dsn, create=True).close()
    schema = dsn.split("search_path=", 1)[1].split()[0].strip("'")
    options = quote(f"-c search_path={schema}", safe="")
    return f"postgresql:///refmem?host={quote(str(postgres.socket), safe='')}&user=refmem_app&options={options}"


# --- OpenClaw's tools through MCP, on every store ---------------------------------------------------------------


def _openclaw_over(spec: str, root: Path, env: Dict[str, str]) -> None:
    saved = {name: os.environ.get(name) for name in env}
    os.environ.update(env)
    try:
        target = open_target(spec, root, tools=("memory", "memory_get", "memory_search"))
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    try:
        assert target.tools == ("memory", "memory_get", "memory_search")
        create = {"command": "create", "path": "/memories/MEMORY.md", "file_text": "the heron nests by the river\n"}
        assert not target.execute(create).is_error
        got = target.execute({"path": "MEMORY.md"}, "memory_get")
        assert (got.is_error, got.result["status"], got.result["text"]) == (False, "ok", "the heron nests by the river")
        found = target.execute({"query": "heron"}, "memory_search")
        assert [hit["path"] for hit in found.result["results"]] == ["MEMORY.md"]
        assert target.execute({"query": "otter"}, "memory_search").result["results"] == []
        escape = target.execute({"path": "../outside/secret.txt"}, "memory_get")
        assert escape.result["status"] != "ok" and not escape.misbehaved
    finally:
        target.close()


def test_openclaw_tools_through_mcp_on_the_filesystem(work: Path) -> None:
    _openclaw_over(f"mcp:stdio:{SERVER} --harness --openclaw --root {{root}}", _root(work, "a"), {})


def test_openclaw_tools_through_mcp_on_sqlite(work: Path) -> None:
    _openclaw_over(f"mcp:stdio:{SERVER} --harness --openclaw --store sqlite:///{work}/m.db", _root(work, "a"), {})


def test_openclaw_tools_through_mcp_on_postgres(work: Path, postgres: Any) -> None:
    location = _postgres_location(postgres, work)
    _openclaw_over(f"mcp:stdio:{SERVER} --harness --openclaw", _root(work, "a"), {"REFMEM_STORE": location})


@pytest.mark.slow
def test_the_openclaw_cases_pass_refmem_through_mcp(work: Path) -> None:
    """OpenClaw's own cases (conformance/openclaw) through `refmem mcp --openclaw`: they lay their workspace out on
    disk, so the filesystem store is the one they run on (a database store skips them all)."""
    report = work / "openclaw.json"
    target = f"mcp:stdio:{SERVER} --harness --openclaw --root {{root}}"
    command = [sys.executable, "-m", "refmem_conformance.openclaw.runner", "--target", target, "--profile", "hardening",
               "--workdir", str(work), "--json", str(report)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    found = json.loads(report.read_text())
    assert _counts(found) == {"pass": len(found["cases"])} and len(found["cases"]) >= 60
    assert found["restarts"] == 0


# --- a planted buggy MCP server is caught -----------------------------------------------------------------------


def test_the_conformance_run_catches_a_planted_mcp_server(work: Path) -> None:
    report = _suite(f"mcp:stdio:{PLANTED}", work, "--run", "paths-00[1-9]", "--run", "create-00[1-3]")
    assert report["exit"] != 0 and report["restarts"] == 0
    kinds = {finding["kind"] for case in report["cases"] for finding in case.get("findings", [])}
    assert kinds & {"escape", "leak", "outside"}, kinds


@pytest.mark.slow
def test_the_fuzzer_catches_a_planted_mcp_server_through_mcp(work: Path) -> None:
    command = [sys.executable, "-m", "fuzz", "run", "--target", f"mcp:stdio:{PLANTED}", "--runs", "400",
               "--max-time", "240", "--no-cost", "--no-growth", "--engine", "random", "--seed", "1",
               "--stop-on-first", "--findings", str(work / "findings")]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=work)
    said = done.stdout + done.stderr
    assert done.returncode != 0, said[-3000:]
    assert list((work / "findings").glob("escape-*")), said[-3000:]


def test_what_mcp_cannot_carry_is_never_sent() -> None:
    from refmem_harness.mcp_target import NOT_FINITE, NOT_UTF8, uncarried

    assert uncarried({"command": "view", "path": "/memories", "view_range": [1, 10 ** 30]}) is None
    assert uncarried(["view"]) and uncarried("view") and uncarried(None)
    assert uncarried({"command": "create", "path": "/memories/a", "file_text": "bad \ud800"}) == NOT_UTF8
    assert uncarried({"command": "view", "nested": [{"\udfff": 1}]}) == NOT_UTF8  # keys too, at any depth
    assert uncarried({"command": "view", "view_range": [1, float("nan")]}) == NOT_FINITE
    assert uncarried({"command": "view", "view_range": [float("-inf"), 2]}) == NOT_FINITE
