"""Pooled PostgreSQL stores (refmem.stores.pgpool, D-STORE-PG-POOL) against a real server (the session's throwaway
cluster, postgres_support): tenants apart on a shared connection, the tenant's setting gone from a connection given
back, no update lost among 16 threads sharing 4 connections, never more than `max_size` connections, a connection
terminated between commands, the OpenClaw tools over a pooled store. The storage contract runs over pooled stores
too (test_storage_contract, storage_support.KINDS)."""

from __future__ import annotations

import os
import threading
import traceback
from typing import Any, Dict, Iterator, List, Set

import pytest
from postgres_support import SHARED, TOKENS_EACH, Cluster, add_tokens, import_psycopg

from refmem import MemoryHandler
from refmem.messages import IO_REASONS
from refmem.openclaw import OpenClawMemory
from refmem.store_protocol import TenantError
from refmem.stores import StoreError

psycopg = import_psycopg()

from refmem.stores.core import SqlStore  # noqa: E402
from refmem.stores.pgpool import PooledEngine, PooledStore, PostgresPool, prepared  # noqa: E402
from refmem.stores.postgres import QUERIES, TENANT_SETTING, migrate  # noqa: E402
from refmem.stores.schema import SCHEMA_VERSION  # noqa: E402


def fresh_dsn(postgres: Cluster, name: str) -> str:
    """A schema of its own, and an application name that tells this test's connections in pg_stat_activity."""
    return postgres.location_dsn(f"test_postgres_pool:{name}:{os.getpid()}") + f" application_name=pool-{name}"


def schema_of(dsn: str) -> str:
    """The schema a fresh_dsn's search path names."""
    return dsn.split("search_path=")[1].split("'")[0]


def connections(postgres: Cluster, name: str) -> List[int]:
    """The server processes of the connections the test `name` holds open now (read by the superuser)."""
    with postgres.admin() as admin:
        found = admin.execute(
            "SELECT pid FROM pg_stat_activity WHERE application_name = %s", (f"pool-{name}",)
        ).fetchall()
    return [int(row[0]) for row in found]


@pytest.fixture
def pools() -> Iterator[List[PostgresPool]]:
    made: List[PostgresPool] = []
    yield made
    for pool in made:
        pool.close()


def run(store: Any, **tool_input: Any) -> str:
    result = MemoryHandler(store).execute(tool_input)
    assert not result.is_error, result.output
    return result.output


# --- tenants on shared connections ------------------------------------------------------------------------


def test_one_connection_serves_tenant_after_tenant_and_carries_none_back(
    postgres: Cluster, pools: List[PostgresPool]
) -> None:
    pool = PostgresPool(fresh_dsn(postgres, "tenants"), min_size=1, max_size=1)
    pools.append(pool)
    served: Set[int] = set()
    borrow = pool.borrow

    def borrowed() -> Any:
        connection = borrow()
        served.add(connection.info.backend_pid)
        return connection

    pool.borrow = borrowed  # type: ignore[method-assign]
    default = pool.store()
    alice, bob = pool.store(tenant="alice"), default.for_tenant("bob")
    assert isinstance(bob, PooledStore)
    for store, text in ((default, "DEFAULT"), (alice, "ALICE"), (bob, "BOB")):
        run(store, command="create", path="/memories/d/same.md", file_text=f"{text}\n")
    for store, text in ((default, "DEFAULT"), (alice, "ALICE"), (bob, "BOB"), (alice, "ALICE"), (default, "DEFAULT")):
        seen = run(store, command="view", path="/memories/d/same.md")
        assert text in seen and {"DEFAULT", "ALICE", "BOB"} - {text} & set(seen.split()) == set()
    run(bob, command="str_replace", path="/memories/d/same.md", old_str="BOB", new_str="BOB2")
    run(bob, command="delete", path="/memories/d")
    assert "ALICE" in run(alice, command="view", path="/memories/d/same.md")
    assert "DEFAULT" in run(default, command="view", path="/memories/d/same.md")
    assert len(served) == 1  # one connection served every tenant in turn

    # Inside a store's transaction, a statement with its tenant filter forgotten sees that tenant's rows only.
    with alice.locked():
        assert alice._all("SELECT tenant, path FROM refmem_nodes", ()) == [("alice", "d"), ("alice", "d/same.md")]
    # The connection given back carries no tenant: a statement run on it outside refmem's transactions, with no
    # tenant filter, sees no row of any tenant, in a transaction of its own or not.
    connection = pool.borrow()
    try:
        assert connection.info.backend_pid in served
        assert connection.execute("SELECT current_setting(%s, true)", (TENANT_SETTING,)).fetchone()[0] in ("", None)
        assert connection.execute("SELECT tenant, path FROM refmem_nodes").fetchall() == []
        assert connection.execute("SELECT tenant FROM refmem_tenants").fetchall() == []
        with connection.transaction():
            assert connection.execute("SELECT count(*) FROM refmem_nodes").fetchone()[0] == 0
    finally:
        pool.give_back(connection)


def test_a_pool_refuses_a_bad_tenant_and_a_server_it_cannot_reach(postgres: Cluster, pools: List[PostgresPool]) -> None:
    pool = PostgresPool(fresh_dsn(postgres, "names"), max_size=1)
    pools.append(pool)
    with pytest.raises(TenantError):
        pool.store(tenant="Alice/..")
    with pytest.raises(TenantError):  # a tenant's store has no tenants below it
        pool.store(tenant="alice").for_tenant("bob")
    secret = "host=/nonexistent-refmem-socket dbname=refmem user=someone password=hunter2"
    with pytest.raises(StoreError) as unreachable:
        PostgresPool(secret)
    assert "hunter2" not in str(unreachable.value) and "nonexistent" not in str(unreachable.value)


# --- many threads, one pool -------------------------------------------------------------------------------

THREADS = 16
MAX_SIZE = 4


def tokens_not_once(postgres: Cluster, dsn: str, writers: int) -> Dict[str, int]:
    """The tokens of `writers` writers (postgres_support.add_tokens) that the tenant "shared"'s files hold other
    than once, read from the rows by the superuser."""
    schema = schema_of(dsn)
    with postgres.admin() as admin:
        data = admin.execute(
            f"SELECT data FROM {schema}.refmem_nodes WHERE tenant = 'shared' AND kind = 'file'"  # noqa: S608
        ).fetchall()
    text = b"".join(bytes(row[0]) for row in data).decode()
    counts = {f"tok-{n:02d}-{s:02d}": 0 for n in range(writers) for s in range(TOKENS_EACH)}
    for token in counts:
        counts[token] = text.count(token + "\n")
    return {token: count for token, count in counts.items() if count != 1}


def _writer(pool: PostgresPool, number: int, start: threading.Event, failures: List[str]) -> None:
    """One thread with its own pooled store of the shared pool: its tokens (postgres_support.add_tokens)."""
    try:
        handler = MemoryHandler(pool.store(tenant="shared"))
        start.wait()
        add_tokens(handler, number)
    except BaseException:  # noqa: BLE001  # the test reports it
        failures.append(f"writer {number}: {traceback.format_exc()}")


def test_sixteen_threads_on_four_connections_lose_no_token_and_open_no_more(
    postgres: Cluster, pools: List[PostgresPool]
) -> None:
    pool = PostgresPool(fresh_dsn(postgres, "threads"), min_size=1, max_size=MAX_SIZE)
    pools.append(pool)
    store = pool.store(tenant="shared")
    for path in SHARED:
        run(store, command="create", path=path, file_text="head\n@@\n")
    start, failures, peak = threading.Event(), [], [0]
    done = threading.Event()

    def watch() -> None:  # what the server sees, as often as it can be asked, until the writers end
        while not done.is_set():
            peak[0] = max(peak[0], len(connections(postgres, "threads")))

    watcher = threading.Thread(target=watch)
    writers = [threading.Thread(target=_writer, args=(pool, n, start, failures)) for n in range(THREADS)]
    watcher.start()
    for writer in writers:
        writer.start()
    start.set()
    for writer in writers:
        writer.join(300)
    done.set()
    watcher.join(60)
    assert failures == [] and not any(writer.is_alive() for writer in writers)

    assert THREADS * TOKENS_EACH == 128
    assert tokens_not_once(postgres, fresh_dsn(postgres, "threads"), THREADS) == {}
    for path in SHARED:  # every shared file is back in its place, its marker once
        assert run(store, command="view", path=path).count("@@") == 1
    # The server never saw more than max_size connections of the pool, and the pool did grow past one (the count
    # sees what it should).
    assert 2 <= peak[0] <= MAX_SIZE, peak
    assert pool._pool.get_stats()["connections_num"] >= 2


# --- schema changes while pools are live ------------------------------------------------------------------


def test_pools_opened_at_once_on_an_empty_schema_make_it_once(postgres: Cluster, pools: List[PostgresPool]) -> None:
    """Hosts started together on a new database each make the schema if it is missing (create=True): the first
    makes it under the schema's advisory lock, the others find it made; none fails, and every tenant's memories
    are in the one schema."""
    dsn = fresh_dsn(postgres, "at-once")
    hosts = 6
    barrier, opened, failures = threading.Barrier(hosts), [], []  # type: ignore[var-annotated]
    lock = threading.Lock()

    def host(number: int) -> None:
        try:
            barrier.wait(60)
            pool = PostgresPool(dsn, min_size=1, max_size=2, create=True)
            with lock:
                opened.append(pool)
            run(pool.store(tenant=f"host{number}"), command="create", path="/memories/boot.md", file_text=f"{number}\n")
        except BaseException:  # noqa: BLE001  # the test reports it
            failures.append(f"host {number}: {traceback.format_exc()}")

    threads = [threading.Thread(target=host, args=(n,)) for n in range(hosts)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    pools.extend(opened)
    assert failures == [] and len(opened) == hosts
    schema = schema_of(dsn)
    with postgres.admin() as admin:
        versions = admin.execute(f"SELECT version FROM {schema}.refmem_schema").fetchall()  # noqa: S608
    assert versions == [(SCHEMA_VERSION,)]
    reader = opened[0]
    for number in range(hosts):
        assert run(reader.store(tenant=f"host{number}"), command="view", path="/memories/boot.md").endswith(
            f"\t{number}")


def test_readers_and_writers_through_a_migration_s_ddl_fail_nothing_and_lose_nothing(
    postgres: Cluster, pools: List[PostgresPool]
) -> None:
    """What a later schema version does to live pools: columns and an index added to refmem's tables, and the
    migration run again, while eight threads write through four pooled connections whose statements are
    prepared, and two threads view. The statements name their columns, so the server plans them again and no command
    fails; every token is there once. (The writers' rollbacks, on connections the readers then borrow, are what
    made a view answer "operating system error": psycopg deallocates a connection's statements after one.)"""
    dsn = fresh_dsn(postgres, "ddl")
    pool = PostgresPool(dsn, min_size=1, max_size=MAX_SIZE)
    pools.append(pool)
    store = pool.store(tenant="shared")
    for path in SHARED:
        run(store, command="create", path=path, file_text="head\n@@\n")
        run(store, command="view", path=path)  # the read statement prepared on the connections used
    schema = schema_of(dsn)
    writers_count, start, failures = 8, threading.Event(), []  # type: ignore[var-annotated]
    writers = [threading.Thread(target=_writer, args=(pool, n, start, failures)) for n in range(writers_count)]
    reads, done = [0], threading.Event()

    def reader() -> None:  # views through the prepared read, before, during and after every change
        handler = MemoryHandler(pool.store(tenant="shared"))
        while not done.is_set():
            for path in SHARED:
                result = handler.execute({"command": "view", "path": path})
                reads[0] += 1
                if result.is_error and "does not exist" not in result.output:  # a writer has it renamed away
                    failures.append(f"view: {result.output}")

    readers = [threading.Thread(target=reader) for _ in range(2)]
    for thread in writers + readers:
        thread.start()
    start.set()
    statements = [
        f"ALTER TABLE {schema}.refmem_nodes ADD COLUMN later_a integer",
        f"CREATE INDEX later_i ON {schema}.refmem_nodes (tenant, later_a)",
        f"ALTER TABLE {schema}.refmem_versions ADD COLUMN later_b text DEFAULT 'x'",
        f"ALTER TABLE {schema}.refmem_tenants ADD COLUMN later_c bigint",
        f"ALTER TABLE {schema}.refmem_nodes DROP COLUMN later_a",
    ]
    with postgres.admin() as admin:
        for statement in statements:
            admin.execute(statement)
            assert migrate(dsn) == (SCHEMA_VERSION, SCHEMA_VERSION)
    for writer in writers:
        writer.join(300)
    done.set()
    for thread in readers:
        thread.join(60)
    assert failures == [] and not any(thread.is_alive() for thread in writers + readers)
    assert reads[0] > 0
    for path in SHARED:  # and after them
        assert run(store, command="view", path=path).count("@@") == 1
    assert tokens_not_once(postgres, dsn, writers_count) == {}


# --- connections lost ------------------------------------------------------------------------------------


def test_connections_terminated_between_commands_are_replaced(postgres: Cluster, pools: List[PostgresPool]) -> None:
    pool = PostgresPool(fresh_dsn(postgres, "idle-cut"), min_size=2, max_size=2)
    pools.append(pool)
    store = pool.store(tenant="alice")
    run(store, command="create", path="/memories/first.md", file_text="x\n")
    with postgres.admin() as admin:
        for number in range(3):
            pids = connections(postgres, "idle-cut")
            assert pids
            for pid in pids:  # every connection of the pool, idle in it
                admin.execute("SELECT pg_terminate_backend(%s, 5000)", (pid,))
            command = "create" if number % 2 == 0 else "view"
            if command == "create":
                run(store, command="create", path=f"/memories/n{number}.md", file_text="x\n")
            else:
                assert "first.md" in run(store, command="view", path="/memories")
            assert set(connections(postgres, "idle-cut")).isdisjoint(pids)
    listing = run(store, command="view", path="/memories")
    assert "n0.md" in listing and "n2.md" in listing


class CutEngine(PooledEngine):
    """A pooled store whose connection the server terminates just before the transaction's next statement."""

    cut = False
    admin: Any = None

    def execute(self, sql: str, params: Any) -> Any:
        if self.cut and self.conn is not None:
            self.cut = False
            self.admin.execute("SELECT pg_terminate_backend(%s, 5000)", (self.conn.info.backend_pid,))
        return super().execute(sql, params)


def test_a_connection_cut_mid_command_is_answered_and_the_pool_goes_on(
    postgres: Cluster, pools: List[PostgresPool]
) -> None:
    dsn = fresh_dsn(postgres, "mid-cut")
    pool = PostgresPool(dsn, max_size=1)
    pools.append(pool)
    pool.store(tenant="alice")  # the tenant's row
    cut = CutEngine(pool, "alice")
    store = SqlStore(cut, "alice")
    cut.admin = postgres.admin()
    try:
        run(store, command="create", path="/memories/e.md", file_text="one\n")
        cut.cut = True
        result = MemoryHandler(store).execute(
            {"command": "str_replace", "path": "/memories/e.md", "old_str": "one", "new_str": "ONE"}
        )
        assert result.is_error and IO_REASONS["disconnected"] in result.output, result
        for hidden in (str(postgres.base), "refmem_app", "mid-cut", "dbname"):
            assert hidden not in result.output
        assert "one" in run(store, command="view", path="/memories/e.md")  # nothing half made; the pool goes on
        run(store, command="str_replace", path="/memories/e.md", old_str="one", new_str="ONE")
    finally:
        cut.admin.close()


def test_a_closed_store_or_pool_answers_with_an_error(postgres: Cluster) -> None:
    pool = PostgresPool(fresh_dsn(postgres, "closed"), max_size=1)
    store = pool.store(tenant="alice")
    run(store, command="create", path="/memories/a.md", file_text="x\n")
    other = pool.store(tenant="alice")
    store.close()
    assert MemoryHandler(store).execute({"command": "view", "path": "/memories/a.md"}).is_error
    assert "x" in run(other, command="view", path="/memories/a.md")  # the pool and its other stores go on
    pool.close()
    result = MemoryHandler(other).execute({"command": "view", "path": "/memories/a.md"})
    assert result.is_error and "Traceback" not in result.output


# --- the OpenClaw tools -----------------------------------------------------------------------------------


def test_the_openclaw_tools_over_pooled_stores_keep_tenants_apart(
    postgres: Cluster, pools: List[PostgresPool]
) -> None:
    pool = PostgresPool(fresh_dsn(postgres, "openclaw"), max_size=2)
    pools.append(pool)
    for tenant, canary in (("alice", "okapiquartz"), ("bob", "lemurbasalt")):
        run(pool.store(tenant=tenant), command="create", path="/memories/MEMORY.md", file_text=f"{canary} here\n")
    with OpenClawMemory(pool.store(), tenant="alice") as alice, OpenClawMemory(pool.store(), tenant="bob") as bob:
        assert "okapiquartz" in str(alice.memory_search("okapiquartz", min_score=0))
        assert "okapiquartz" not in str(bob.memory_search("okapiquartz lemurbasalt", min_score=0))
        assert bob.memory_get("MEMORY.md")["text"] == "lemurbasalt here"
        run(pool.store(tenant="alice"), command="create", path="/memories/memory/2026-11-20.md", file_text="zebu\n")
        assert "2026-11-20" in str(alice.memory_search("zebu", min_score=0))  # fresh from the store's journal


def test_reads_go_on_after_what_drops_the_connection_s_prepared_statements(
    postgres: Cluster, pools: List[PostgresPool]
) -> None:
    """psycopg deallocates every prepared statement of a connection after a ROLLBACK once it prepared some of its
    own (an edit's statements, after 5 runs): a read of one statement, prepared on that connection, is prepared
    again, never answered with an error."""
    pool = PostgresPool(fresh_dsn(postgres, "deallocate"), max_size=1)
    pools.append(pool)
    store = pool.store(tenant="alice")
    run(store, command="create", path="/memories/d/e.md", file_text="one\n")
    for number in range(8):  # psycopg prepares the edit's statements on the pool's one connection
        old, new = ("one", "ONE") if number % 2 == 0 else ("ONE", "one")
        run(store, command="str_replace", path="/memories/d/e.md", old_str=old, new_str=new)
        assert "one" in run(store, command="view", path="/memories/d/e.md").lower()
    for _ in range(3):
        refused = MemoryHandler(store).execute({"command": "create", "path": "/memories/d/e.md", "file_text": "x"})
        assert refused.is_error and "already exists" in refused.output  # its transaction rolled back
        assert "one" in run(store, command="view", path="/memories/d/e.md").lower()
        assert "e.md" in run(store, command="view", path="/memories/d")  # a listing: a read transaction
        assert "one" in run(store, command="view", path="/memories/d/e.md").lower()
    with postgres.admin() as admin:  # and a connection of its own, where nothing is prepared yet
        for pid in connections(postgres, "deallocate"):
            admin.execute("SELECT pg_terminate_backend(%s, 5000)", (pid,))
    assert "one" in run(store, command="view", path="/memories/d/e.md").lower()


class MessageCountingEngine(PooledEngine):
    """Counts the messages (round trips) the store sends: its first message of a transaction, and each statement
    after it on the borrowed connection."""

    sent: List[str] = []
    first: List[str] = []

    def send_first_retrying(self, message: str, params: Any, prepare: Any = None) -> Any:
        self.sent.append(message.split(";")[0].split()[0] + "..." if ";" in message else message.split()[0])
        self.first.append(message)
        cursor = super().send_first_retrying(message, params, prepare)
        execute = self.conn.execute

        def counted(query: Any, *args: Any, **kwargs: Any) -> Any:
            self.sent.append(str(query).split()[0])
            return execute(query, *args, **kwargs)

        self.conn.execute = counted
        return cursor

    def rollback(self) -> None:
        connection = self.conn
        super().rollback()  # its end of a transaction counted too (this test's one thread: nobody borrowed it)
        if connection is not None:
            connection.__dict__.pop("execute", None)  # the pool's connection as it was, for its next borrower


def test_a_view_is_one_message_and_an_edit_three(postgres: Cluster, pools: List[PostgresPool]) -> None:
    """A view: BEGIN, the tenant, the prepared statement and COMMIT in one message. An edit: the single-connection
    store's cheaper edit (its read takes the tenant's lock, D-STORE-PG-WRITERS), its BEGIN and the tenant's setting
    in the same message as that read (prepared, as a view's); then the write; COMMIT (D-STORE-PG-POOL-EDIT)."""
    pool = PostgresPool(fresh_dsn(postgres, "messages"), max_size=1)
    pools.append(pool)
    pool.store(tenant="alice")
    counted = MessageCountingEngine(pool, "alice")
    store = SqlStore(counted, "alice")
    locking = QUERIES.read_for_edit_locking
    assert locking is not None
    run(store, command="create", path="/memories/e.md", file_text="one\ntwo\n")
    run(store, command="view", path="/memories/e.md")  # its use recorded once (D-STORE-SQL-USES)
    for number in range(3):
        counted.sent = []
        run(store, command="view", path="/memories/e.md")
        assert counted.sent == ["BEGIN..."], counted.sent
        counted.sent, counted.first = [], []
        old, new = ("two", "TWO") if number % 2 == 0 else ("TWO", "two")
        run(store, command="str_replace", path="/memories/e.md", old_str=old, new_str=new)
        assert counted.sent == ["BEGIN...", "WITH", "COMMIT"], counted.sent
        assert f"EXECUTE {prepared(locking)[0]}(" in counted.first[0], counted.first  # the read, prepared
    assert "pg_advisory_xact_lock" in locking and "FOR UPDATE" in locking  # ... which takes the lock, then the row
