"""The three stores side by side under concurrent clients, each against its floor (issue 18, "Bench").

``python -m bench --only stores`` (not part of the default run: it starts processes and a PostgreSQL cluster).

Method
------
* Every client is a process of its own with its own connection (as separate hosts would have), forked
  before anything is opened; the clients of one run start each command's phase together (a barrier) and
  each works on a tenant of its own (the filesystem store: a tenant's folder below one root), as the
  agents of many users would. Writers of one tenant queue by design (D-STORE-PG-WRITERS; SQLite has one
  writer for the whole file whatever the tenant), so one shared tenant would measure that queue instead.
* Per command and client count: the median and p95 of every call's latency over all clients, and the
  throughput while every client runs: the calls that end between the last client's start and the first
  client's end, over that window (`all_running_rate`). A full run's client makes at least `CALLS_PER_CLIENT`
  calls of each writing command, so that window is most of the phase even with 16 processes on 2 cores.
* A run is made of rounds, each over every store and client count, with fresh tenants, files and tables;
  within a round a store and its floor take turns at going first, so that the disk's moods (a folder's
  fsync here takes 0.1 to 10 ms) hit both alike. Latencies are pooled over the rounds; the throughput is
  the median of the rounds'.
* The floors run the same phases in the same kind of processes, beside the store they belong to:
  PostgreSQL's view is a bare ``SELECT data ... WHERE tenant = %s AND path = %s`` on the store's kind of
  psycopg connection, its str_replace a bare locked read-modify-write (``BEGIN; SELECT ... FOR UPDATE;
  UPDATE ...; COMMIT``), both on a table of the same key and no row-level security; SQLite's the same
  with ``sqlite3`` (``BEGIN IMMEDIATE``; WAL and synchronous=FULL as the store's); the filesystem's are
  the bench's ``os`` floor (bench/impls.py), which has every command.
* PostgreSQL's edit against its durable floor (issue 30, ``python -m bench.stores [ROUNDS]``, `measure_durable`):
  the floor is a hand-written transaction on psycopg doing what one edit must (`DurableFloor`: BEGIN; the tenant's
  advisory lock and the file's locked read in one statement; the write, the version row with its SHA-256 and the
  journal line with the tenant's next generation in one; COMMIT: four round trips, as refmem's edit), beside refmem's
  str_replace, at 1, 4 and 16 clients, over the Unix socket and over TCP on localhost of one throwaway cluster
  (`TcpCluster`), in one run; target: refmem's median <= 1.3x the floor's, read as the median of the rounds' own
  ratios (`DurableRow`), printed with their range and with both sides' client and server CPU per edit.
  ``python -m bench.stores split`` (`measure_split`) splits one edit's CPU: the driver's, the rest of the client's,
  the server backend's.
* The PostgreSQL cluster is the tests' throwaway one (tests/postgres_support.py: a Unix socket,
  ``fsync=off``) unless REFMEM_CONFORMANCE_POSTGRES names a server; its rows are skipped, saying why,
  where no cluster can be started. PostgreSQL commits do not reach the disk there, SQLite's and the
  filesystem's do: compare each store with its floor, not the stores with each other.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import sqlite3
import statistics
import sys
import time
import traceback
from typing import Any, Callable, Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple

from . import impls

COMMANDS = ("view", "create", "str_replace", "insert", "rename", "delete")
CLIENTS = (1, 4, 16)
STORES = ("filesystem", "sqlite", "postgresql")
SQL_FLOORS = ("view", "str_replace")
FLOOR_TABLE = "refmem_bench_floor"
OLD, NEW = "line 7: the quick", "line 7: THE QUICK"
TARGETS: Dict[Tuple[str, str], float] = {("postgresql", "view"): 2.0, ("postgresql", "str_replace"): 1.5}
"""(store, command) -> the most the store's median may be, as a multiple of its floor's (issue 18)."""
GROWS_FROM_1_TO_4 = 1.2
STAYS_FROM_4_TO_16 = 0.8
"""Throughput's target on a machine of 2 cores: it grows from 1 client to 4 (two of them run at once) and does
not collapse from 4 to 16 (flat is what 2 cores allow)."""
PHASE_SECONDS = 600
REPEATS = {"view": 10}
"""Calls per file in a command's phase: a view is cheap, and a phase much shorter than a scheduler's time slice
would measure how the clients' processes were woken rather than the store."""


def body(lines: int = 20) -> str:
    return "".join(f"line {i}: the quick brown fox jumps over the lazy dog {i * 7}\n" for i in range(lines))


def tool_input(command: str, i: int) -> Dict[str, Any]:
    """Call `i` of a phase: each call on a file of its own (f{i}), so every client's phases chain: the
    files viewed are edited, renamed into /memories/moved, then deleted there."""
    path = f"/memories/f{i:04d}.md"
    made: Dict[str, Callable[[], Dict[str, Any]]] = {
        "view": lambda: {"command": "view", "path": path},
        "create": lambda: {"command": "create", "path": f"/memories/new/c{i:04d}.md", "file_text": body(5)},
        "str_replace": lambda: {"command": "str_replace", "path": path, "old_str": OLD, "new_str": NEW},
        "insert": lambda: {"command": "insert", "path": path, "insert_line": 1, "insert_text": f"note {i}"},
        "rename": lambda: {"command": "rename", "old_path": path, "new_path": f"/memories/moved/m{i:04d}.md"},
        "delete": lambda: {"command": "delete", "path": f"/memories/moved/m{i:04d}.md"},
    }
    return made[command]()


def is_error(output: object) -> bool:
    return bool(getattr(output, "is_error", False))


# --- what a client runs -----------------------------------------------------------------------------------


class Client:
    """One client's side of a run: `commands` it measures, `setup` (untimed), `execute`, `close`."""

    commands: Tuple[str, ...] = COMMANDS

    def setup(self, files: int) -> None:
        for i in range(files):
            self.execute({"command": "create", "path": f"/memories/f{i:04d}.md", "file_text": body()})

    def execute(self, tool_input: Dict[str, Any]) -> object:  # pragma: no cover - interface
        raise NotImplementedError

    def backend_pid(self) -> Optional[int]:
        """The process id of the PostgreSQL backend serving this client's connection (None: no such process)."""
        return None

    def close(self) -> None:
        pass


class HandlerClient(Client):
    """refmem's handler over the store, one connection (or root) of its own, opened in the client's process."""

    def __init__(self, store: str, where: str, tenant: str) -> None:
        from refmem import MemoryHandler

        self.store: Any = None
        if store == "filesystem":
            self.handler = MemoryHandler(where, tenant=tenant)
        elif store == "sqlite":
            from refmem.stores.sqlite import SqliteStore

            self.store = SqliteStore(where, tenant=tenant)
            self.handler = MemoryHandler(self.store)
        else:
            from refmem.stores.postgres import PostgresStore

            self.store = PostgresStore(where, tenant=tenant, create=False)
            self.handler = MemoryHandler(self.store)

    def setup(self, files: int) -> None:
        super().setup(files)
        for i in range(files):  # a first view, so that every timed view is of a file viewed before
            self.execute(tool_input("view", i))

    def execute(self, tool_input: Dict[str, Any]) -> object:
        return self.handler.execute(tool_input)

    def backend_pid(self) -> Optional[int]:
        connection = getattr(getattr(self.store, "engine", None), "conn", None)
        return None if connection is None else int(connection.info.backend_pid)

    def close(self) -> None:
        self.handler.close()
        if self.store is not None:
            self.store.close()


class FsFloor(Client):
    """The bench's `os` floor (bench/impls.py) over a folder of the client's own."""

    def __init__(self, where: str, tenant: str) -> None:
        root = os.path.join(where, tenant)
        os.makedirs(root, exist_ok=True)
        self.floor = impls.Floor(root)

    def execute(self, tool_input: Dict[str, Any]) -> object:
        return self.floor.execute(tool_input)


class SqlFloor(Client):
    """View and str_replace as the least SQL can do them: one SELECT; one locked read-modify-write."""

    commands = SQL_FLOORS

    def __init__(self, store: str, where: str, tenant: str) -> None:
        self.tenant = tenant
        if store == "sqlite":
            self.db: Any = sqlite3.connect(where, timeout=30, isolation_level=None)
            self.db.execute("PRAGMA synchronous=FULL")
            self.p, self.begin, self.lock = "?", "BEGIN IMMEDIATE", ""
        else:
            from refmem.stores.postgres import connect

            self.db = connect(where)
            self.p, self.begin, self.lock = "%s", "BEGIN ISOLATION LEVEL READ COMMITTED", " FOR UPDATE"
        p = self.p
        self.select = f"SELECT data FROM {FLOOR_TABLE} WHERE tenant = {p} AND path = {p}"  # noqa: S608
        self.update = f"UPDATE {FLOOR_TABLE} SET data = {p} WHERE tenant = {p} AND path = {p}"  # noqa: S608
        self.insert = f"INSERT INTO {FLOOR_TABLE} (tenant, path, data) VALUES ({p}, {p}, {p})"  # noqa: S608

    def setup(self, files: int) -> None:
        self.db.execute(self.begin)
        for i in range(files):
            self.db.execute(self.insert, (self.tenant, f"f{i:04d}.md", body().encode()))
        self.db.execute("COMMIT")

    def execute(self, tool_input: Dict[str, Any]) -> object:
        path = tool_input["path"][len("/memories/"):]
        if tool_input["command"] == "view":
            return self.db.execute(self.select, (self.tenant, path)).fetchone()[0]
        self.db.execute(self.begin)
        data = bytes(self.db.execute(self.select + self.lock, (self.tenant, path)).fetchone()[0])
        text = data.decode().replace(tool_input["old_str"], tool_input["new_str"], 1)
        self.db.execute(self.update, (text.encode(), self.tenant, path))
        self.db.execute("COMMIT")
        return None

    def close(self) -> None:
        self.db.close()


def open_client(store: str, side: str, where: str, tenant: str) -> Client:
    if side.startswith(DURABLE):  # PostgreSQL's edit against its durable floor (`measure_durable`)
        return _durable_client(side[len(DURABLE):], where, tenant)
    if side == "refmem":
        return HandlerClient(store, where, tenant)
    if store == "filesystem":
        return FsFloor(where, tenant)
    return SqlFloor(store, where, tenant)


Phase = Tuple[float, float, List[float], int, List[float]]  # start, end, latencies (s), error results, call ends


Cpu = Tuple[float, Optional[float]]
"""A client's CPU seconds over a phase: its own process's (`time.process_time`), and its PostgreSQL backend's (None
where there is none, or its /proc entry cannot be read)."""


def backend_cpu(pid: Optional[int]) -> Optional[float]:
    """CPU seconds a local process has run (/proc/PID/schedstat, nanoseconds); None when unknown."""
    if pid is None:
        return None
    try:
        with open(f"/proc/{pid}/schedstat", encoding="ascii") as source:
            return int(source.read().split()[0]) / 1e9
    except (OSError, ValueError, IndexError):
        return None


def client_main(store: str, side: str, where: str, tenant: str, files: int, barrier: Any, results: Any,
                number: int) -> None:
    """A client process: opens its own connection, sets up its files, then runs each phase when all do."""
    try:
        client = open_client(store, side, where, tenant)
        cpu: Dict[str, Cpu] = {}
        try:
            client.setup(files)
            phases: Dict[str, Phase] = {}
            for command in client.commands:
                barrier.wait(PHASE_SECONDS)
                latencies: List[float] = []
                ends: List[float] = []
                errors = 0
                pid = client.backend_pid()
                server_before, began_cpu = backend_cpu(pid), time.process_time()
                began = time.perf_counter()
                for i in range(files * REPEATS.get(command, 1)):
                    request = tool_input(command, i % files)
                    started = time.perf_counter()
                    output = client.execute(request)
                    ends.append(time.perf_counter())
                    latencies.append(ends[-1] - started)
                    errors += is_error(output)
                phases[command] = (began, time.perf_counter(), latencies, errors, ends)
                server_after = backend_cpu(pid) if pid == client.backend_pid() else None  # not if it reconnected
                server = None if server_before is None or server_after is None else server_after - server_before
                cpu[command] = (time.process_time() - began_cpu, server)
        finally:
            client.close()
        results.put((number, phases, "", cpu))
    except BaseException:  # noqa: BLE001 - whatever happened, the parent must hear and the others stop waiting
        barrier.abort()
        results.put((number, {}, traceback.format_exc(limit=4), {}))


# --- one run, and the whole set -----------------------------------------------------------------------------


class Figure(NamedTuple):
    median: float
    p95: float
    throughput: float  # calls per second, summed over the clients
    errors: int


def percentile(values: Sequence[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * len(ordered)) - 1))]


def run_clients(store: str, side: str, where: str, clients: int, files: int, label: str,
                cpu: Optional[Dict[str, List[Cpu]]] = None) -> Dict[str, List[Phase]]:
    """`clients` processes of `store` (side "refmem" or "floor"), each on tenant `<label>-c<n>`: every client's
    phase of each command they measure (and, into `cpu`, every client's CPU over each)."""
    context = multiprocessing.get_context("fork")
    barrier = context.Barrier(clients)
    results = context.Queue()
    processes = [
        context.Process(target=client_main, args=(store, side, where, f"{label}-c{n}", files, barrier, results, n))
        for n in range(clients)
    ]
    for process in processes:
        process.start()
    try:
        reports = [results.get(timeout=PHASE_SECONDS * len(COMMANDS)) for _ in processes]
    finally:
        for process in processes:
            process.join(30)
            if process.is_alive():
                process.kill()
                process.join()
    failures = [why for _, _, why, _ in reports if why]
    if failures:
        raise RuntimeError(f"a {store} {side} client failed:\n{failures[0]}")
    if cpu is not None:
        for command in reports[0][1]:
            cpu[command] = [used[command] for _, _, _, used in reports]
    return {command: [phases_of[command] for _, phases_of, _, _ in reports] for command in reports[0][1]}


def all_running_rate(phases: Sequence[Phase]) -> float:
    """Calls per second of all clients while every one of them runs: the calls that end between the last client's
    start and the first client's end, over that window. On 2 cores, 16 processes released by a barrier start (and
    end) tens of milliseconds apart, so over the whole phase (first start to last end) the rate would mix in the
    ramps, where fewer clients run; a phase without such a window (one so short that a client ends before another
    starts) falls back to the whole phase."""
    start, end = max(phase[0] for phase in phases), min(phase[1] for phase in phases)
    inside = sum(start < at <= end for phase in phases for at in phase[4])
    if end > start and inside >= len(phases):
        return inside / (end - start)
    return sum(len(phase[2]) for phase in phases) / (max(phase[1] for phase in phases) - min(p[0] for p in phases))


def figure(runs: Sequence[Sequence[Phase]]) -> Figure:
    """One Figure from the rounds of a command (each the phases of all clients): latencies pooled over the
    rounds; throughput the median of the rounds' (each: `all_running_rate`)."""
    latencies = [value for phases in runs for phase in phases for value in phase[2]]
    rates = [all_running_rate(phases) for phases in runs]
    return Figure(statistics.median(latencies), percentile(latencies, 0.95), statistics.median(rates),
                  sum(phase[3] for phases in runs for phase in phases))


Key = Tuple[str, str, int, str]  # store, side, clients, command


class Report(NamedTuple):
    figures: Dict[Key, Figure]
    stores: Tuple[str, ...]
    clients: Tuple[int, ...]
    skipped: Dict[str, str]  # store -> why its rows are missing
    load_before: str
    load_after: str
    files: int
    rounds: int
    statements: Dict[Tuple[str, str, str], int]  # (store, side, command) -> statements one call sends
    least: int = 2  # the fewest calls of each writing command one client made (`files_for`)


def loadavg() -> str:
    try:
        with open("/proc/loadavg", encoding="ascii") as source:
            return " ".join(source.read().split()[:3])
    except OSError:
        return "unknown"


CALLS_PER_CLIENT = 40
"""The fewest calls of each writing command a client makes in a full run's phase. With 7 (120 calls over 16
clients), a phase lasted about 100 ms, of which the last of 16 clients started 37 ms after the first and the first
ended 75 ms before the last (PostgreSQL's str_replace, 2026-11-26): the 16 clients never all ran at once, and the
throughput measured how processes start on 2 cores rather than the store."""


def files_for(clients: int, calls: int, least: int = 2) -> int:
    """Calls each client makes per command: about `calls` in all, at least `least` each."""
    return max(least, calls // clients)


def measure(base: str, calls: int = 120, clients: Sequence[int] = CLIENTS, stores: Sequence[str] = STORES,
            dsn: Optional[str] = None, rounds: int = 3, log: Callable[[str], None] = lambda line: None,
            least: int = 2) -> Report:
    """Every store and its floor at every client count, in one run of `rounds` rounds (each over every store and
    client count, the store and its floor taking turns at going first: the disk's and the machine's moods hit
    them alike). PostgreSQL at `dsn` (a schema of its own is made there and dropped), else
    REFMEM_CONFORMANCE_POSTGRES's server, else a throwaway cluster."""
    runs: Dict[Key, List[List[Phase]]] = {}
    skipped: Dict[str, str] = {}
    load_before = loadavg()
    with postgres(dsn if "postgresql" in stores else "", skipped) as pg_dsn:
        chosen = tuple(store for store in stores if store not in skipped)
        for round_ in range(rounds):
            for count in clients:
                files = files_for(count, calls, least)
                for turn, store in enumerate(chosen):
                    label = f"r{round_}n{count}"
                    where = prepare(store, base, label, pg_dsn)
                    sides = ("refmem", "floor") if (round_ + turn + count) % 2 else ("floor", "refmem")
                    for side in sides:
                        began = time.perf_counter()
                        for command, phases in run_clients(store, side, where[side], count, files, label).items():
                            runs.setdefault((store, side, count, command), []).append(phases)
                        log(f"  round {round_ + 1}: {store} {side} x{count}: {time.perf_counter() - began:.1f} s")
        load_after = loadavg()
        statements: Dict[Tuple[str, str, str], int] = {}
        for store in chosen:
            if store != "filesystem":
                statements.update(count_statements(store, prepare(store, base, "count", pg_dsn)))
    figures = {key: figure(phases) for key, phases in runs.items()}
    return Report(figures, tuple(s for s in stores if s not in skipped), tuple(clients), skipped, load_before,
                  load_after, files_for(1, calls, least), rounds, statements, least)


class Counting:
    """A connection that counts the statements sent through it (each one a round trip to a server)."""

    def __init__(self, connection: Any) -> None:
        self.connection = connection
        self.count = 0

    def execute(self, *args: Any, **kwargs: Any) -> Any:
        self.count += 1
        return self.connection.execute(*args, **kwargs)

    def cursor(self, *args: Any, **kwargs: Any) -> Any:
        """A cursor whose statements count too (the PostgreSQL store sends every statement on one cursor)."""
        return CountingCursor(self, self.connection.cursor(*args, **kwargs))

    @property
    def pgconn(self) -> Any:
        """libpq's connection, whose statements count too (the PostgreSQL store sends BEGIN, COMMIT and ROLLBACK
        through it: `PostgresEngine._control`)."""
        return CountingCursor(self, self.connection.pgconn)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.connection, name)


class CountingCursor:
    """A cursor of a `Counting` connection: each statement it executes counts on that connection."""

    def __init__(self, counting: Counting, cursor: Any) -> None:
        self.counting = counting
        self.cursor = cursor

    def execute(self, *args: Any, **kwargs: Any) -> Any:
        self.counting.count += 1
        return self.cursor.execute(*args, **kwargs)

    def exec_(self, *args: Any, **kwargs: Any) -> Any:
        self.counting.count += 1
        return self.cursor.exec_(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.cursor, name)


def count_statements(store: str, where: Dict[str, str]) -> Dict[Tuple[str, str, str], int]:
    """The statements one call of each command sends, the store's and its floor's (untimed, one client, after
    the rounds): what a round trip to PostgreSQL costs, each of them pays. Empty where the store keeps its
    connection elsewhere than this looks (`_db`, `_conn`: the bench reads a private attribute here)."""
    counts: Dict[Tuple[str, str, str], int] = {}
    for side in ("refmem", "floor"):
        client = open_client(store, side, where[side], f"count-{side}")
        try:
            client.setup(1)
            holder: Any = client.store if isinstance(client, HandlerClient) else client
            name = "db" if holder is client else ("_db" if store == "sqlite" else "_conn")
            if not hasattr(holder, name):
                return {}
            counting = Counting(getattr(holder, name))
            setattr(holder, name, counting)
            try:
                for command in client.commands:
                    before = counting.count
                    client.execute(tool_input(command, 0))
                    counts[(store, side, command)] = counting.count - before
            finally:
                setattr(holder, name, counting.connection)
        finally:
            client.close()
    return counts


def prepare(store: str, base: str, label: str, pg_dsn: str) -> Dict[str, str]:
    """Where the store and its floor live for one run (fresh folders and files; a fresh floor table)."""
    if store == "filesystem":
        where = {side: os.path.join(base, "fs", label, side, "memories") for side in ("refmem", "floor")}
        for folder in where.values():
            os.makedirs(folder, exist_ok=True)
        return where
    if store == "sqlite":
        folder = os.path.join(base, "sqlite", label)
        os.makedirs(folder, exist_ok=True)
        where = {"refmem": os.path.join(folder, "store.db"), "floor": os.path.join(folder, "floor.db")}
        from refmem.stores.sqlite import SqliteStore

        SqliteStore(where["refmem"]).close()  # the schema, made once before the clients start
        db = sqlite3.connect(where["floor"], isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(f"CREATE TABLE {FLOOR_TABLE} (tenant TEXT NOT NULL, path TEXT NOT NULL, data BLOB,"
                       " PRIMARY KEY (tenant, path))")
        finally:
            db.close()
        return where
    from refmem.stores.postgres import connect, migrate

    migrate(pg_dsn)
    db = connect(pg_dsn)
    try:
        db.execute(f"DROP TABLE IF EXISTS {FLOOR_TABLE}")
        db.execute(f'CREATE TABLE {FLOOR_TABLE} (tenant TEXT COLLATE "C" NOT NULL, path TEXT COLLATE "C" NOT NULL,'
                   " data BYTEA, PRIMARY KEY (tenant, path))")
    finally:
        db.close()
    return {"refmem": pg_dsn, "floor": pg_dsn}


class postgres:
    """The DSN of a schema of its own for this run (dropped after), on the server `dsn` names, else on
    REFMEM_CONFORMANCE_POSTGRES's, else on a throwaway cluster (tests/postgres_support.py) started and stopped
    here; "" with the reason in `skipped` when there is none. `dsn` "" means PostgreSQL is not wanted."""

    def __init__(self, dsn: Optional[str], skipped: Dict[str, str]) -> None:
        self.dsn, self.skipped = dsn, skipped
        self.cluster: Any = None
        self.schema = f"refmem_bench_{os.getpid()}"
        self.server = ""

    def __enter__(self) -> str:
        if self.dsn == "":
            return ""
        try:
            import psycopg
            from psycopg.conninfo import make_conninfo
        except ImportError:
            self.skipped["postgresql"] = "psycopg 3 is not installed (pip install 'refmem[postgres]')"
            return ""
        server = self.dsn or os.environ.get("REFMEM_CONFORMANCE_POSTGRES", "")
        if not server:
            server = self._start_cluster()
            if not server:
                return ""
        try:
            with psycopg.connect(server, autocommit=True) as connection:
                connection.execute(f"CREATE SCHEMA {self.schema}")
        except psycopg.Error as error:
            self.skipped["postgresql"] = f"no schema could be made for the bench ({type(error).__name__})"
            self._stop_cluster()
            return ""
        self.server = server
        return make_conninfo(server, options=f"-c search_path={self.schema}")

    def _start_cluster(self) -> str:
        try:
            from tests import postgres_support
        except ImportError as error:
            self.skipped["postgresql"] = f"tests/postgres_support.py cannot be imported ({error})"
            return ""
        why = postgres_support.missing()
        if why is not None:
            self.skipped["postgresql"] = why
            return ""
        cluster = postgres_support.Cluster()
        try:
            cluster.start()
        except Exception as error:  # noqa: BLE001 - any failure: the rows are skipped, saying why
            cluster.stop()
            self.skipped["postgresql"] = f"the throwaway cluster did not start: {error}"
            return ""
        self.cluster = cluster
        return str(cluster.dsn())

    def _stop_cluster(self) -> None:
        if self.cluster is not None:
            self.cluster.stop()
            self.cluster = None

    def __exit__(self, *exc: object) -> None:
        try:
            if self.server and self.cluster is None:  # a server of someone else's: leave nothing behind
                import psycopg

                with psycopg.connect(self.server, autocommit=True) as connection:
                    connection.execute(f"DROP SCHEMA {self.schema} CASCADE")
        finally:
            self._stop_cluster()


# --- the tables ---------------------------------------------------------------------------------------------


def seconds(value: float) -> str:
    """Three significant digits, in the unit that suits."""
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs")):
        if value >= scale or unit == "µs":
            scaled = value / scale
            return f"{scaled:.{max(0, 2 - len(str(int(scaled))) + 1)}f} {unit}"
    raise AssertionError("not reached")


def rate(value: float) -> str:
    return f"{value:,.0f}/s" if value >= 100 else f"{value:.3g}/s"


def verdict(met: Optional[bool]) -> str:
    return {True: "yes", False: "**no**", None: ""}[met]


def latency_rows(report: Report) -> Iterator[List[str]]:
    for store in report.stores:
        for count in report.clients:
            for command in COMMANDS:
                mine = report.figures[(store, "refmem", count, command)]
                floor = report.figures.get((store, "floor", count, command))
                cells = [store, str(count), command, seconds(mine.median), seconds(mine.p95), rate(mine.throughput)]
                if floor is None:
                    cells += ["-", "-", "-", "-"]
                else:
                    cells += [seconds(floor.median), seconds(floor.p95), rate(floor.throughput),
                              f"{mine.median / floor.median:.2f}x"]
                limit = TARGETS.get((store, command))
                met = None if limit is None or floor is None else mine.median <= limit * floor.median
                cells += [f"<= {limit:g}x floor" if limit is not None else "", verdict(met),
                          str(mine.errors + (floor.errors if floor else 0))]
                yield cells


def throughput_rows(report: Report) -> Iterator[List[str]]:
    counts = report.clients
    for store in report.stores:
        for command in COMMANDS:
            rates = [report.figures[(store, "refmem", count, command)].throughput for count in counts]
            cells = [store, command] + [rate(value) for value in rates]
            cells += [f"{later / rates[0]:.2f}x" for later in rates[1:]]
            met = None
            if counts[:3] == (1, 4, 16):
                met = rates[1] >= GROWS_FROM_1_TO_4 * rates[0] and rates[2] >= STAYS_FROM_4_TO_16 * rates[1]
            yield cells + [verdict(met)]


def markdown(report: Report) -> str:
    counts = report.clients
    head = ["store", "clients", "command", "median", "p95", "cmd/s", "floor median", "floor p95", "floor cmd/s",
            "median ÷ floor", "target", "met", "error results"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(cells) + " |" for cells in latency_rows(report)]
    lines.append("")
    lines.append(f"Throughput (commands per second over all clients) as clients grow; {os.cpu_count()} CPUs here, "
                 f"so the target is growth from 1 to {counts[1] if len(counts) > 1 else '-'} clients "
                 f"(>= {GROWS_FROM_1_TO_4:g}x) and no collapse after (>= {STAYS_FROM_4_TO_16:g}x of it):")
    lines.append("")
    head = ["store", "command"] + [f"{count} clients" for count in counts] + [f"{c} ÷ {counts[0]}" for c in counts[1:]]
    head.append("met")
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(cells) + " |" for cells in throughput_rows(report)]
    sql = [store for store in report.stores if any(key[0] == store for key in report.statements)]
    if sql:
        lines.append("\nStatements one call sends (each a round trip to the server; counted once, untimed):\n")
        head = ["store", "command", "store's statements", "floor's statements"]
        lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for store in sql:
            for command in COMMANDS:
                floor_count = report.statements.get((store, "floor", command))
                lines.append(f"| {store} | {command} | {report.statements[(store, 'refmem', command)]} | "
                             f"{'-' if floor_count is None else floor_count} |")
    for store, why in report.skipped.items():
        lines.append(f"\n{store}: skipped: {why}")
    lines.append(f"\n{report.rounds} rounds; in each, {report.files} files per client for 1 client, each viewed "
                 f"{REPEATS['view']} times and written once by each writing command (fewer each for more clients, "
                 f"about as many in all, at least {report.least} each); "
                 f"load average {report.load_before} before, {report.load_after} after.")
    return "\n".join(lines)


def main_section(base: str, quick: bool) -> str:
    """The section `python -m bench --only stores` prints."""
    folder = os.path.join(base, "stores")
    os.makedirs(folder, exist_ok=True)
    try:
        report = measure(folder, calls=24 if quick else 120, rounds=1 if quick else 3,
                         log=lambda line: print(line, file=sys.stderr), least=2 if quick else CALLS_PER_CLIENT)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return "## The stores under concurrent clients\n\n" + markdown(report)


# --- PostgreSQL's edit against its durable floor, over the Unix socket and over TCP (issue 30, decision 1) ---------

DURABLE = "durable-"
"""A side's prefix (`open_client`): refmem's edit or its durable floor, in `measure_durable`."""
DURABLE_TARGET = 1.3
"""The most refmem's PostgreSQL str_replace median may be, as a multiple of its durable floor's (issue 30)."""
DURABLE_TABLES = (
    'CREATE TABLE floor_tenants (tenant TEXT COLLATE "C" PRIMARY KEY, generation BIGINT NOT NULL)',
    'CREATE TABLE floor_nodes (tenant TEXT COLLATE "C" NOT NULL, path TEXT COLLATE "C" NOT NULL, data BYTEA,'
    " version BIGINT NOT NULL, PRIMARY KEY (tenant, path))",
    'CREATE TABLE floor_versions (tenant TEXT COLLATE "C" NOT NULL, path TEXT COLLATE "C" NOT NULL,'
    " number BIGINT NOT NULL, sha256 TEXT NOT NULL, data BYTEA NOT NULL, PRIMARY KEY (tenant, path, number))",
    'CREATE TABLE floor_changes (tenant TEXT COLLATE "C" NOT NULL, generation BIGINT NOT NULL,'
    ' path TEXT COLLATE "C" NOT NULL)',
    "CREATE INDEX floor_changes_by_generation ON floor_changes (tenant, generation)",
)
"""The floor's tables: what an edit must touch (the file, its tenant's generation, the version row, the journal
line), keyed as refmem's are, with no row-level security and no bookkeeping refmem keeps beyond that."""


class DurableFloor(Client):
    """What one edit must do, hand-written on psycopg (issue 30): BEGIN; the tenant's lock and the locked read of the
    file (one statement, as a careful hand-written transaction sends it); the write, the version row with its SHA-256
    (computed by the server, from the bytes replaced) and the journal line with the tenant's next generation (one
    statement); COMMIT. Four round trips, as refmem's edit."""

    commands = ("str_replace",)

    def __init__(self, where: str, tenant: str) -> None:
        import hashlib

        from refmem.stores.postgres import connect

        self.db: Any = connect(where)
        self.tenant = tenant
        self.key = int.from_bytes(hashlib.sha256(f"floor\0{tenant}".encode()).digest()[:8], "big", signed=True)
        self.read = ("SELECT data, version FROM floor_nodes WHERE tenant = %s AND path = %s"
                     " AND (SELECT pg_advisory_xact_lock(%s)) IS NOT NULL FOR UPDATE")
        self.write = (
            "WITH advanced AS (UPDATE floor_tenants SET generation = generation + 1 WHERE tenant = %s"
            " RETURNING generation),"
            " journal AS (INSERT INTO floor_changes (tenant, generation, path)"
            " SELECT %s, generation, %s FROM advanced),"
            " kept AS (INSERT INTO floor_versions (tenant, path, number, sha256, data)"
            " SELECT n.tenant, n.path, a.generation, encode(sha256(n.data), 'hex'), n.data"
            " FROM floor_nodes n, advanced a WHERE n.tenant = %s AND n.path = %s)"
            " UPDATE floor_nodes SET data = %s, version = (SELECT generation FROM advanced)"
            " WHERE tenant = %s AND path = %s"
        )
        self.cursor = self.db.cursor()

    def backend_pid(self) -> Optional[int]:
        return int(self.db.info.backend_pid)

    def setup(self, files: int) -> None:
        self.db.execute("BEGIN")
        self.db.execute("INSERT INTO floor_tenants (tenant, generation) VALUES (%s, 1)", (self.tenant,))
        names = [f"f{i:04d}.md" for i in range(files)] + [f"w{i:04d}.md" for i in range(WARM_EDITS)]
        for name in names:
            self.db.execute("INSERT INTO floor_nodes (tenant, path, data, version) VALUES (%s, %s, %s, 1)",
                            (self.tenant, name, body().encode()))
        self.db.execute("COMMIT")
        for i in range(WARM_EDITS):
            self.execute(warm_input(i))

    def execute(self, tool_input: Dict[str, Any]) -> object:
        path = tool_input["path"][len("/memories/"):]
        cursor = self.cursor
        cursor.execute("BEGIN ISOLATION LEVEL READ COMMITTED")
        data = bytes(cursor.execute(self.read, (self.tenant, path, self.key)).fetchone()[0])
        text = data.decode().replace(tool_input["old_str"], tool_input["new_str"], 1)
        tenant = self.tenant
        cursor.execute(self.write, (tenant, tenant, path, tenant, path, text.encode(), tenant, path))
        cursor.execute("COMMIT")
        return None

    def close(self) -> None:
        self.db.close()


WARM_EDITS = 20
"""Edits each client of `measure_durable` makes, untimed, before its timed phase (on files of their own), on both
sides: a long-lived process's steady state is measured, not its first calls (its statements prepared by psycopg
after their fifth execution, a forked process's first touches of the code it inherited), which a phase of 40 edits
a client would otherwise pay a large part of."""


def warm_input(i: int) -> Dict[str, Any]:
    return {"command": "str_replace", "path": f"/memories/w{i:04d}.md", "old_str": OLD, "new_str": NEW}


class EditClient(HandlerClient):
    """refmem's handler over the PostgreSQL store, measuring str_replace only (the durable floor's one command)."""

    commands = ("str_replace",)

    def setup(self, files: int) -> None:
        super().setup(files)
        for i in range(WARM_EDITS):
            self.execute({"command": "create", "path": f"/memories/w{i:04d}.md", "file_text": body()})
            self.execute(warm_input(i))


def _durable_client(side: str, where: str, tenant: str) -> Client:
    return EditClient("postgresql", where, tenant) if side == "refmem" else DurableFloor(where, tenant)


def prepare_durable(dsn: str) -> None:
    """refmem's schema and the floor's tables, fresh, in the bench's schema."""
    from refmem.stores.postgres import connect, migrate

    migrate(dsn)
    db = connect(dsn)
    try:
        for table in ("floor_changes", "floor_versions", "floor_nodes", "floor_tenants"):
            db.execute(f"DROP TABLE IF EXISTS {table}")
        for statement in DURABLE_TABLES:
            db.execute(statement)
    finally:
        db.close()


class TcpCluster:
    """The tests' throwaway cluster (tests/postgres_support.py), listening on TCP on localhost too (a free port),
    so the same server is reached over its Unix socket and over TCP in one run."""

    def __init__(self) -> None:
        import socket

        from tests import postgres_support

        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        cluster = postgres_support.Cluster()
        port = self.port

        def start_server() -> None:
            options = (f"-k {cluster.socket} -c listen_addresses='127.0.0.1' -p {port} -c fsync=off"
                       " -c max_connections=100")
            cluster._run(str(postgres_support.BIN / "pg_ctl"), "-D", str(cluster.data), "-l", str(cluster.log),
                         "-o", options, "-w", "start")

        plain_dsn = cluster.dsn

        def dsn(user: str = postgres_support.APP_ROLE, options: str = "",
                database: str = postgres_support.DATABASE) -> str:
            return f"{plain_dsn(user, options, database)} port={port}"  # the socket's name is the port's

        cluster._start_server = start_server  # type: ignore[method-assign]
        cluster.dsn = dsn  # type: ignore[method-assign]
        cluster.start()
        self.cluster = cluster

    def dsns(self, schema: str) -> Dict[str, str]:
        """The application's DSN over `schema`, by the Unix socket and by TCP on localhost."""
        from tests.postgres_support import APP_ROLE, DATABASE

        with self.cluster.admin() as connection:
            connection.execute(f"CREATE SCHEMA IF NOT EXISTS {schema} AUTHORIZATION {APP_ROLE}")
        options = f" options='-c search_path={schema}'"
        return {
            "unix": f"host={self.cluster.socket} port={self.port} dbname={DATABASE} user={APP_ROLE}{options}",
            "tcp": f"host=127.0.0.1 port={self.port} dbname={DATABASE} user={APP_ROLE}{options}",
        }

    def stop(self) -> None:
        self.cluster.stop()


def run_durable(where: str, side: str, clients: int, files: int, label: str,
                cpu: Optional[Dict[str, List[Cpu]]] = None) -> List[Phase]:
    """`clients` processes of one side on `where`, each on tenant `<label>-c<n>`: their str_replace phases (and, into
    `cpu`, their CPU)."""
    return run_clients("postgresql", DURABLE + side, where, clients, files, label, cpu)["str_replace"]


class DurableRow(NamedTuple):
    """One socket and client count of `measure_durable`: each side's Figure (latencies pooled over the rounds) and,
    per round, the ratios of refmem to its floor measured in that round: the medians' (`wall`), the client
    processes' CPU per edit (`client`), and the clients' with their server backends' (`total`; None where a
    backend's CPU could not be read). Each side's CPU per edit, client and server, medians over the rounds."""

    mine: Figure
    floor: Figure
    wall: List[float]
    client: List[float]
    total: List[Optional[float]]
    mine_cpu: Tuple[float, Optional[float]]
    floor_cpu: Tuple[float, Optional[float]]

    @property
    def ratio(self) -> float:
        """The verdict's ratio: the median over the rounds of each round's median ratio."""
        return statistics.median(self.wall)


def _per_edit(used: Sequence[Cpu], calls: int) -> Cpu:
    """CPU per edit over one phase of all clients: (client, server; None if any backend's is unknown)."""
    servers = [server for _, server in used]
    server = None if any(value is None for value in servers) else sum(v for v in servers if v is not None) / calls
    return sum(client for client, _ in used) / calls, server


def _median_or_none(values: Sequence[Optional[float]]) -> Optional[float]:
    known = [value for value in values if value is not None]
    return statistics.median(known) if known and len(known) == len(values) else None


def measure_durable(rounds: int = 5, calls: int = 480, least: int = CALLS_PER_CLIENT,
                    log: Callable[[str], None] = lambda line: None,
                    clients: Sequence[int] = CLIENTS) -> Dict[Tuple[str, int], DurableRow]:
    """refmem's str_replace and its durable floor at 1, 4 and 16 clients (`clients`) over both sockets, in one run of
    `rounds` rounds, the sides taking turns at going first: (socket, clients) -> DurableRow. The server is a
    throwaway cluster of its own (`TcpCluster`), the same one reached both ways.

    The verdict's ratio is the median over the rounds of each round's ratio (refmem's median latency over its
    floor's, measured minutes apart at most), not the ratio of medians pooled over the run: on a shared machine the
    load moves between rounds, and a round where it rose for one side only moves one ratio of several."""
    server = TcpCluster()
    runs: Dict[Tuple[str, str, int], List[List[Phase]]] = {}
    cpus: Dict[Tuple[str, str, int], List[Cpu]] = {}
    try:
        dsns = server.dsns(f"refmem_durable_{os.getpid()}")
        for round_ in range(rounds):
            for count in clients:
                for turn, (socket_name, dsn) in enumerate(dsns.items()):
                    files = files_for(count, calls, least)
                    sides = ("refmem", "floor") if (round_ + turn + count) % 2 else ("floor", "refmem")
                    prepare_durable(dsn)
                    for side in sides:
                        began = time.perf_counter()
                        label = f"r{round_}n{count}{socket_name}"
                        used: Dict[str, List[Cpu]] = {}
                        phases = run_durable(dsn, side, count, files, label, used)
                        runs.setdefault((socket_name, side, count), []).append(phases)
                        cpus.setdefault((socket_name, side, count), []).append(
                            _per_edit(used["str_replace"], sum(len(phase[2]) for phase in phases)))
                        log(f"  round {round_ + 1}: {socket_name} {side} x{count}: {time.perf_counter() - began:.1f} s")
    finally:
        server.stop()
    rows: Dict[Tuple[str, int], DurableRow] = {}
    for socket_name in ("unix", "tcp"):
        for count in clients:
            mine_runs, floor_runs = runs[(socket_name, "refmem", count)], runs[(socket_name, "floor", count)]
            mine_cpu, floor_cpu = cpus[(socket_name, "refmem", count)], cpus[(socket_name, "floor", count)]
            wall = [figure([m]).median / figure([f]).median for m, f in zip(mine_runs, floor_runs)]
            client = [m[0] / f[0] for m, f in zip(mine_cpu, floor_cpu)]
            total = [None if m[1] is None or f[1] is None else (m[0] + m[1]) / (f[0] + f[1])
                     for m, f in zip(mine_cpu, floor_cpu)]
            rows[(socket_name, count)] = DurableRow(
                figure(mine_runs), figure(floor_runs), wall, client, total,
                (statistics.median(c for c, _ in mine_cpu), _median_or_none([s for _, s in mine_cpu])),
                (statistics.median(c for c, _ in floor_cpu), _median_or_none([s for _, s in floor_cpu])))
    return rows


def _spread(values: Sequence[Optional[float]]) -> str:
    """A ratio's median over the rounds and its range: `1.21x (1.10-1.35)`; "-" where one is unknown."""
    if not values or any(value is None for value in values):
        return "-"
    known = [value for value in values if value is not None]
    return f"{statistics.median(known):.2f}x ({min(known):.2f}-{max(known):.2f})"


def _micro(value: Optional[float]) -> str:
    return "-" if value is None else f"{value * 1e6:.0f} µs"


def durable_markdown(rows: Dict[Tuple[str, int], DurableRow], rounds: int, clients: Sequence[int] = CLIENTS) -> str:
    head = ["socket", "clients", "refmem median", "refmem p95", "refmem cmd/s", "floor median", "floor p95",
            "floor cmd/s", "median ÷ floor (rounds' median, range)", f"<= {DURABLE_TARGET:g}x",
            "client CPU/edit refmem / floor", "client CPU ÷ floor", "server CPU/edit refmem / floor",
            "client+server CPU ÷ floor", "error results"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for socket_name in ("unix", "tcp"):
        for count in clients:
            row = rows[(socket_name, count)]
            mine, floor = row.mine, row.floor
            lines.append("| " + " | ".join([
                socket_name, str(count), seconds(mine.median), seconds(mine.p95), rate(mine.throughput),
                seconds(floor.median), seconds(floor.p95), rate(floor.throughput), _spread(row.wall),
                verdict(row.ratio <= DURABLE_TARGET),
                f"{_micro(row.mine_cpu[0])} / {_micro(row.floor_cpu[0])}", _spread(row.client),
                f"{_micro(row.mine_cpu[1])} / {_micro(row.floor_cpu[1])}", _spread(row.total),
                str(mine.errors + floor.errors)]) + " |")
    lines.append(f"\n{rounds} rounds, the sides taking turns at going first; each ratio is the median of the rounds' "
                 "ratios (each round's refmem against the floor run next to it), with their range; CPU per edit: "
                 "all clients' processes (`time.process_time`) and their server backends' (/proc/PID/schedstat) "
                 f"over the phase, divided by its edits, the rounds' median; {os.cpu_count()} CPUs, load average "
                 f"{loadavg()} after.")
    return "\n".join(lines)


class Split(NamedTuple):
    """One side's CPU per edit in `measure_split`, the blocks' medians (seconds): the wall time, the client's CPU,
    the part of it spent in the driver (psycopg's cursor `execute` and `fetchone`, and refmem's statements sent
    straight through libpq: D-STORE-PG-CONTROL), and the server backend's CPU."""

    wall: float
    client: float
    driver: float
    server: Optional[float]


def measure_split(edits: int = 1000, blocks: int = 6, socket_name: str = "unix") -> Dict[str, Any]:
    """Where one edit's CPU goes, both sides in one process, one client each (`python -m bench.stores split`):
    `blocks` blocks of `edits // blocks` edits a side, taking turns at going first (an untimed block first), on fresh
    files. Returns {"refmem": Split, "floor": Split, "ratios": {name: per-block ratios of refmem to the floor}}.
    A single process, so the CPU figures do not include the cost of many processes on 2 cores; the driver's part
    is timed around each call (a timer's cost, about 1 µs a call, is in it)."""
    import psycopg

    from refmem.stores.postgres import PostgresEngine

    per_block = max(1, edits // blocks)
    driver = [0.0]

    def timed(function: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            began = time.process_time()
            try:
                return function(*args, **kwargs)
            finally:
                driver[0] += time.process_time() - began
        return call

    patched = {(psycopg.Cursor, "execute"): psycopg.Cursor.execute,
               (psycopg.Cursor, "fetchone"): psycopg.Cursor.fetchone,
               (PostgresEngine, "_control"): PostgresEngine._control}
    server = TcpCluster()
    try:
        dsn = server.dsns(f"refmem_split_{os.getpid()}")[socket_name]
        prepare_durable(dsn)
        sides: Dict[str, Client] = {"refmem": EditClient("postgresql", dsn, "split-refmem"),
                                    "floor": DurableFloor(dsn, "split-floor")}
        for client in sides.values():
            client.setup(per_block * (blocks + 1))
        for (owner, name), function in patched.items():
            setattr(owner, name, timed(function))
        done = {name: 0 for name in sides}
        found: Dict[str, List[Tuple[float, float, float, Optional[float]]]] = {name: [] for name in sides}
        for block in range(blocks + 1):
            for name in (("refmem", "floor") if block % 2 else ("floor", "refmem")):
                client = sides[name]
                requests = [tool_input("str_replace", done[name] + i) for i in range(per_block)]
                done[name] += per_block
                pid = client.backend_pid()
                driver[0] = 0.0
                server_before, cpu_before, wall_before = backend_cpu(pid), time.process_time(), time.perf_counter()
                for request in requests:
                    if is_error(client.execute(request)):
                        raise RuntimeError(f"{name}'s edit failed")
                wall, cpu = time.perf_counter() - wall_before, time.process_time() - cpu_before
                server_after = backend_cpu(pid)
                used = None if server_before is None or server_after is None else server_after - server_before
                if block:  # the first block warms both sides up
                    found[name].append((wall / per_block, cpu / per_block, driver[0] / per_block,
                                        None if used is None else used / per_block))
        for client in sides.values():
            client.close()
    finally:
        for (owner, name), function in patched.items():
            setattr(owner, name, function)
        server.stop()
    result: Dict[str, Any] = {}
    for name, rows in found.items():
        columns = list(zip(*rows))
        result[name] = Split(*(statistics.median(column) for column in columns[:3]), _median_or_none(columns[3]))
    mine, floor = found["refmem"], found["floor"]
    result["ratios"] = {
        "wall": [m[0] / f[0] for m, f in zip(mine, floor)],
        "client": [m[1] / f[1] for m, f in zip(mine, floor)],
        "driver": [m[2] / f[2] for m, f in zip(mine, floor)],
        "client+server": [None if m[3] is None or f[3] is None else (m[1] + m[3]) / (f[1] + f[3])
                          for m, f in zip(mine, floor)],
    }
    return result


def split_markdown(found: Dict[str, Any], edits: int, blocks: int, socket_name: str) -> str:
    head = ["per edit", "refmem", "floor", "refmem ÷ floor (blocks' median, range)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    mine, floor, ratios = found["refmem"], found["floor"], found["ratios"]
    own = [("wall", mine.wall, floor.wall, ratios["wall"]),
           ("client CPU", mine.client, floor.client, ratios["client"]),
           ("of it, the driver (psycopg, libpq)", mine.driver, floor.driver, ratios["driver"]),
           ("of it, the rest (refmem's Python; the floor's few lines)", mine.client - mine.driver,
            floor.client - floor.driver, None),
           ("server backend CPU", mine.server, floor.server, None),
           ("client + server CPU", None if mine.server is None else mine.client + mine.server,
            None if floor.server is None else floor.client + floor.server, ratios["client+server"])]
    for label, left, right, spread in own:
        lines.append(f"| {label} | {_micro(left)} | {_micro(right)} | {'' if spread is None else _spread(spread)} |")
    lines.append(f"\nOne process, one client a side over the {socket_name} socket, {blocks} blocks of "
                 f"{edits // blocks} edits a side taking turns (and one untimed before); load average {loadavg()} "
                 "after.")
    return "\n".join(lines)


if __name__ == "__main__" and sys.argv[1:2] == ["split"]:  # python -m bench.stores split [EDITS [BLOCKS]]
    chosen_edits = int(sys.argv[2]) if len(sys.argv) > 2 else 1200
    chosen_blocks = int(sys.argv[3]) if len(sys.argv) > 3 else 6
    for chosen_socket in ("unix", "tcp"):
        print(f"## Where one edit's CPU goes, {chosen_socket}\n")
        print(split_markdown(measure_split(chosen_edits, chosen_blocks, chosen_socket), chosen_edits, chosen_blocks,
                             chosen_socket) + "\n")
elif __name__ == "__main__":  # python -m bench.stores [ROUNDS]: the durable floor's tables
    chosen_rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    measured = measure_durable(chosen_rounds, log=lambda line: print(line, file=sys.stderr))
    print("## PostgreSQL's str_replace against its durable floor, Unix socket and TCP\n")
    print(durable_markdown(measured, chosen_rounds))
