"""The PostgreSQL store against a real server (the session's throwaway cluster, postgres_support): row-level
security as the second wall between tenants, no update lost among 16 writing processes, a connection cut in the
middle of a command, the schema's versions. The storage contract runs over this store too
(test_storage_contract, storage_support.KINDS)."""

from __future__ import annotations

import itertools
import multiprocessing
import os
import random
import signal
import threading
import time
import traceback
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import pytest
from postgres_support import SHARED, TOKENS_EACH, Cluster, add_tokens, import_psycopg

from refmem import MemoryHandler
from refmem.messages import IO_REASONS
from refmem.paths import VirtualPath, parse_path
from refmem.stores import StoreError

psycopg = import_psycopg()

from refmem.stores.core import SqlStore  # noqa: E402
from refmem.stores.postgres import TENANT_PREFIX, TENANT_SETTING, PostgresEngine, PostgresStore  # noqa: E402


def vp(path: str) -> VirtualPath:
    return parse_path(path)


def fresh_dsn(postgres: Cluster, name: str) -> str:
    return postgres.location_dsn(f"test_postgres_store:{name}:{os.getpid()}")


def rows(postgres: Cluster, dsn: str) -> List[Tuple[Any, ...]]:
    """Every row of the memories and tenants tables in the DSN's schema, read by the superuser (who bypasses
    row-level security): the whole state, to compare before and after."""
    schema = dsn.split("search_path=")[1].rstrip("'")
    with postgres.admin() as connection:
        nodes = connection.execute(
            f"SELECT tenant, path, kind, size, data FROM {schema}.refmem_nodes ORDER BY tenant, path"  # noqa: S608
        ).fetchall()
    return [tuple(row) for row in nodes]


# --- row-level security ---------------------------------------------------------------------------------


def test_a_query_without_the_tenant_filter_still_sees_only_its_tenant(postgres: Cluster) -> None:
    dsn = fresh_dsn(postgres, "rls")
    alice, bob = PostgresStore(dsn, tenant="alice"), PostgresStore(dsn, tenant="bob")
    try:
        for store, text in ((alice, "A\n"), (bob, "CANARY\n")):
            name = "/memories/a.md" if store is alice else "/memories/b.md"
            assert not MemoryHandler(store).execute({"command": "create", "path": name, "file_text": text}).is_error
    finally:
        alice.close()
        bob.close()
    assert {row[0] for row in rows(postgres, dsn)} == {"alice", "bob"}  # both are there: the superuser sees them

    options = dsn.split("options=")[1].strip("'")
    with psycopg.connect(postgres.dsn(options=options), autocommit=True) as app:  # the application's role
        # No tenant set at all: a query with no filter sees nothing.
        assert app.execute("SELECT tenant, path FROM refmem_nodes").fetchall() == []
        with app.transaction():
            app.execute("SELECT set_config(%s, %s, true)", (TENANT_SETTING, TENANT_PREFIX + "alice"))
            # Our SQL with its tenant filter forgotten: still alice's rows only, in reads and in writes.
            assert app.execute("SELECT tenant, path FROM refmem_nodes").fetchall() == [("alice", "a.md")]
            assert app.execute("SELECT tenant FROM refmem_tenants").fetchall() == [("alice",)]
            assert app.execute("UPDATE refmem_nodes SET data = 'x'::bytea").rowcount == 1
            assert app.execute("DELETE FROM refmem_changes").rowcount >= 1
            with pytest.raises(psycopg.errors.InsufficientPrivilege):  # a row for another tenant is refused
                with app.transaction():
                    app.execute(
                        "INSERT INTO refmem_nodes (tenant, path, parent, name, depth, kind, size, data, version)"
                        " VALUES ('bob', 'planted.md', '', 'planted.md', 1, 'file', 1, 'x', 1)"
                    )
            app.execute("ROLLBACK")
        # After the transaction the setting is "" (not NULL): the default tenant's rows (tenant "") stay unseen.
        assert app.execute("SELECT tenant, path FROM refmem_nodes").fetchall() == []
    assert ("bob", "b.md", "file", 7, b"CANARY\n") in rows(postgres, dsn)


def test_tenants_through_the_handler_never_meet(postgres: Cluster) -> None:
    dsn = fresh_dsn(postgres, "tenants")
    default = PostgresStore(dsn)
    alice, bob = default.for_tenant("alice"), default.for_tenant("bob")
    try:
        for store, text in ((default, "DEFAULT\n"), (alice, "ALICE\n"), (bob, "BOB\n")):
            handler = MemoryHandler(store)
            assert not handler.execute({"command": "create", "path": "/memories/d/same.md", "file_text": text}).is_error
        for store, text in ((default, "DEFAULT"), (alice, "ALICE"), (bob, "BOB")):
            handler = MemoryHandler(store)
            seen = handler.execute({"command": "view", "path": "/memories/d/same.md"}).output
            assert text in seen and {"DEFAULT", "ALICE", "BOB"} - {text} & set(seen.split()) == set()
        assert not MemoryHandler(bob).execute({"command": "delete", "path": "/memories/d"}).is_error
        assert "ALICE" in MemoryHandler(alice).execute({"command": "view", "path": "/memories/d/same.md"}).output
    finally:
        for store in (alice, bob, default):
            store.close()


# --- many writers ----------------------------------------------------------------------------------------

WRITERS = 16


def _writer(dsn: str, number: int, start: Any, failures: Any) -> None:
    """One writer with its own connection (as another host would have): its tokens (postgres_support.add_tokens)."""
    try:
        store = PostgresStore(dsn, tenant="shared")
        handler = MemoryHandler(store)
        start.wait()
        add_tokens(handler, number)
        store.close()
    except BaseException:  # noqa: BLE001  # the parent reports it
        failures.put(f"writer {number}: {traceback.format_exc()}")


def test_sixteen_writers_lose_no_token(postgres: Cluster) -> None:
    dsn = fresh_dsn(postgres, "writers")
    store = PostgresStore(dsn, tenant="shared")
    handler = MemoryHandler(store)
    for path in SHARED:
        assert not handler.execute({"command": "create", "path": path, "file_text": "head\n@@\n"}).is_error
    context = multiprocessing.get_context("fork")
    start, failures = context.Event(), context.Queue()
    workers = [context.Process(target=_writer, args=(dsn, n, start, failures)) for n in range(WRITERS)]
    for worker in workers:
        worker.start()
    start.set()
    for worker in workers:
        worker.join(300)
    errors = [failures.get() for _ in range(failures.qsize())] if not failures.empty() else []
    assert errors == [] and all(worker.exitcode == 0 for worker in workers)

    text = b"".join(row[4] or b"" for row in rows(postgres, dsn) if row[0] == "shared").decode()
    tokens = [f"tok-{n:02d}-{s:02d}" for n in range(WRITERS) for s in range(TOKENS_EACH)]
    counts = {token: text.count(token + "\n") for token in tokens}
    assert len(counts) == WRITERS * TOKENS_EACH == 128
    assert {token: count for token, count in counts.items() if count != 1} == {}
    for path in SHARED:  # every shared file is back in its place, its marker once
        assert handler.execute({"command": "view", "path": path}).output.count("@@") == 1
    store.close()


# --- a connection cut in the middle of a command -------------------------------------------------------


class CutEngine(PostgresEngine):
    """A store whose connection the server terminates (pg_terminate_backend, from another connection) just
    before its `cut_at`-th statement of the next command: the cut a network failure or a restart makes. A writing
    transaction begins with its first statement (`_begin_write`): the cut comes after its BEGIN, as a cut before
    anything of a command was sent is no cut in its middle (the command then runs on a new connection:
    `test_a_connection_lost_between_commands_is_opened_again`)."""

    cut_at: Optional[int] = None
    admin: Any = None
    armed = False

    def execute(self, sql: str, params: Sequence[Any]) -> Any:
        if self.cut_at is not None:
            self.cut_at -= 1
            if self.cut_at == 0:
                self.cut_at = None
                self.armed = True
        return super().execute(sql, params)

    def _send(self, sql: str, params: Optional[Sequence[Any]] = None) -> Any:
        if self.armed and not sql.startswith("BEGIN"):
            self.armed = False
            self.admin.execute("SELECT pg_terminate_backend(%s, 5000)", (self.conn.info.backend_pid,))
        return super()._send(sql, params)


COMMANDS = [
    {"command": "create", "path": "/memories/d/new.md", "file_text": "new\n"},
    {"command": "str_replace", "path": "/memories/d/e/f.md", "old_str": "one", "new_str": "ONE"},
    {"command": "insert", "path": "/memories/d/e/f.md", "insert_line": 1, "insert_text": "more\n"},
    {"command": "rename", "old_path": "/memories/d", "new_path": "/memories/z/d2"},
    {"command": "delete", "path": "/memories/d"},
]


def test_a_connection_cut_mid_command_changes_nothing_and_is_answered(postgres: Cluster) -> None:
    dsn = fresh_dsn(postgres, "cut")
    cut = CutEngine(dsn, "")
    store = SqlStore(cut, None)
    cut.admin = postgres.admin()
    handler = MemoryHandler(store)
    try:
        for path in ("/memories/d/e/f.md", "/memories/d/g.md", "/memories/d/e/h/i.md"):
            assert not handler.execute({"command": "create", "path": path, "file_text": "one\ntwo\n"}).is_error
        before = rows(postgres, dsn)
        cuts = 0
        for command in COMMANDS:
            for cut_at in range(1, 40):
                cut.cut_at = cut_at
                result = handler.execute(command)
                if cut.cut_at is not None:  # the command ran fewer statements than cut_at: all cut points done
                    cut.cut_at = None
                    assert not result.is_error, result
                    break
                cuts += 1
                assert result.is_error, (command, cut_at)
                assert IO_REASONS["disconnected"] in result.output, (command, cut_at, result.output)
                assert str(postgres.base) not in result.output and "refmem_app" not in result.output
                assert rows(postgres, dsn) == before, (command, cut_at)  # nothing half-applied
            else:
                raise AssertionError("more statements than the test cuts at")
            # The command, uncut, did its work; put the state back for the next command.
            store.erase()
            handler = MemoryHandler(store)
            for path in ("/memories/d/e/f.md", "/memories/d/g.md", "/memories/d/e/h/i.md"):
                assert not handler.execute({"command": "create", "path": path, "file_text": "one\ntwo\n"}).is_error
            before = rows(postgres, dsn)
        assert cuts >= 20  # every statement of the five commands was a cut point once (46 when written, 24 now)
    finally:
        cut.admin.close()
        store.close()


def test_a_connection_lost_between_commands_is_opened_again(postgres: Cluster) -> None:
    store = PostgresStore(fresh_dsn(postgres, "idle-cut"))
    handler = MemoryHandler(store)
    try:
        with postgres.admin() as admin:
            for number in range(3):
                admin.execute("SELECT pg_terminate_backend(%s, 5000)", (store._conn.info.backend_pid,))
                create = {"command": "create", "path": f"/memories/n{number}.md", "file_text": "x\n"}
                assert not handler.execute(create).is_error  # nothing of it had been sent: it runs on a new one
        assert "n2.md" in handler.execute({"command": "view", "path": "/memories"}).output
    finally:
        store.close()


class CommitCutEngine(PostgresEngine):
    def commit(self) -> None:
        if getattr(self, "cut", False):
            self.cut = False
            with psycopg.connect(self.dsn.split(" options=")[0].replace("refmem_app", "postgres")) as admin:
                admin.execute("SELECT pg_terminate_backend(%s, 5000)", (self.conn.info.backend_pid,))
        super().commit()


def test_a_connection_lost_at_commit_says_the_change_may_have_been_made(postgres: Cluster) -> None:
    dsn = fresh_dsn(postgres, "commit-cut")
    engine = CommitCutEngine(dsn, "")
    store = SqlStore(engine, None)
    handler = MemoryHandler(store)
    try:
        engine.cut = True
        result = handler.execute({"command": "create", "path": "/memories/c.md", "file_text": "x\n"})
        assert result.is_error and IO_REASONS["commit_unknown"] in result.output, result
        assert rows(postgres, dsn) == []  # here the COMMIT never reached the server: nothing was made
        assert not handler.execute({"command": "create", "path": "/memories/c.md", "file_text": "x\n"}).is_error
    finally:
        store.close()


# --- clients killed mid-command ---------------------------------------------------------------------------

KILLS = 30
FOLDER_FILES = 6


def _mover(dsn: str) -> None:
    """Moves the folder between /memories/a and /memories/b and edits its files, until killed."""
    store = PostgresStore(dsn)
    handler = MemoryHandler(store)
    for turn in itertools.count():
        here, there = ("/memories/a", "/memories/b") if turn % 2 == 0 else ("/memories/b", "/memories/a")
        handler.execute({"command": "rename", "old_path": here, "new_path": there})
        handler.execute({"command": "insert", "path": f"{there}/f{turn % FOLDER_FILES}.md", "insert_line": 0,
                         "insert_text": "line\n"})


def test_a_client_killed_mid_command_leaves_no_folder_half_moved(postgres: Cluster) -> None:
    dsn = fresh_dsn(postgres, "kills")
    store = PostgresStore(dsn)
    handler = MemoryHandler(store)
    for number in range(FOLDER_FILES):
        create = {"command": "create", "path": f"/memories/a/f{number}.md", "file_text": "x\n"}
        assert not handler.execute(create).is_error
    store.close()
    chooser = random.Random(18)
    for _ in range(KILLS):
        pid = os.fork()
        if pid == 0:
            try:
                _mover(dsn)
            finally:
                os._exit(1)
        time.sleep(chooser.uniform(0.05, 0.3))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        state = rows(postgres, dsn)
        folders = {row[1].split("/")[0] for row in state}
        assert len(folders) == 1, folders  # the folder is in one place, never in both, never half of it
        (folder,) = folders
        assert sorted(row[1] for row in state) == [folder] + [f"{folder}/f{n}.md" for n in range(FOLDER_FILES)]
        assert all(row[4] is None or row[4].endswith(b"x\n") for row in state)  # no file torn


# --- a folder's rename or delete: as many statements for 40 files as for 80 ---------------------------


class CountingStore(PostgresStore):
    statements = 0

    def _execute(self, sql: str, params: Sequence[Any]) -> Any:
        self.statements += 1
        return super()._execute(sql, params)


@pytest.mark.parametrize("command", ["rename", "delete"])
def test_a_folder_move_or_delete_runs_as_many_statements_whatever_its_size(postgres: Cluster, command: str) -> None:
    counts = []
    for files in (40, 80):
        store = CountingStore(fresh_dsn(postgres, f"size-{command}-{files}"))
        handler = MemoryHandler(store)
        try:
            for number in range(files):
                path = f"/memories/big/s{number % 4}/f{number}.md"
                assert not handler.execute({"command": "create", "path": path, "file_text": "x"}).is_error
            store.statements = 0
            if command == "rename":
                moved = {"command": "rename", "old_path": "/memories/big", "new_path": "/memories/moved/big"}
                assert not handler.execute(moved).is_error
            else:
                assert not handler.execute({"command": "delete", "path": "/memories/big"}).is_error
            counts.append(store.statements)
            kept = sum(1 for row in rows(postgres, store._dsn) if row[1].startswith("moved/big/"))
            assert kept == (files + 4 if command == "rename" else 0)
            assert not any(row[1].startswith("big") for row in rows(postgres, store._dsn))
        finally:
            store.close()
    assert counts[0] == counts[1] and counts[0] < 30


# --- the schema ------------------------------------------------------------------------------------------


def test_the_schema_is_made_once_refused_when_missing_or_newer(postgres: Cluster) -> None:
    dsn = fresh_dsn(postgres, "schema")
    with pytest.raises(StoreError, match="refmem db init"):
        PostgresStore(dsn, create=False)
    PostgresStore(dsn).close()
    PostgresStore(dsn, create=False).close()
    schema = dsn.split("search_path=")[1].rstrip("'")
    with postgres.admin() as connection:
        connection.execute(f"UPDATE {schema}.refmem_schema SET version = 99")  # noqa: S608
    with pytest.raises(StoreError, match="version 99, newer") as refused:
        PostgresStore(dsn)
    assert str(postgres.base) not in str(refused.value)


def test_an_unreachable_server_is_refused_naming_no_host_or_password(tmp_path: Path) -> None:
    dsn = f"host={tmp_path} dbname=nowhere user=someone password=hunter2"
    with pytest.raises(StoreError) as refused:
        PostgresStore(dsn)
    said = str(refused.value)
    assert "cannot be used: no server answered" in said and str(tmp_path) not in said and "hunter2" not in said


# --- the writers' lock and what an edit costs ---------------------------------------------------------------


def test_a_writer_queues_behind_its_tenants_writer_and_never_behind_another_tenants(postgres: Cluster) -> None:
    """D-STORE-PG-WRITERS: a writer first takes its tenant's lock. Another writer of the same tenant waits for it,
    then (past `lock_timeout`) is answered busy, having changed nothing; a writer of another tenant does not wait."""
    dsn = fresh_dsn(postgres, "writers")
    holder, waiter, other = (PostgresStore(dsn, tenant=name) for name in ("alice", "alice", "bob"))
    try:
        waiter._conn.execute("SET lock_timeout = '300ms'")
        other._conn.execute("SET lock_timeout = '300ms'")
        with holder.locked():
            holder.write_new(vp("/memories/held.md"), b"h\n")
            result = MemoryHandler(waiter).execute({"command": "create", "path": "/memories/w.md", "file_text": "w"})
            assert result.is_error and IO_REASONS["busy"] in result.output, result
            result = MemoryHandler(other).execute({"command": "create", "path": "/memories/o.md", "file_text": "o"})
            assert not result.is_error, result
        paths = {(row[0], row[1]) for row in rows(postgres, dsn)}
        assert ("alice", "held.md") in paths and ("bob", "o.md") in paths and ("alice", "w.md") not in paths
        result = MemoryHandler(waiter).execute({"command": "create", "path": "/memories/w.md", "file_text": "w"})
        assert not result.is_error, result  # the lock is free again
    finally:
        for store in (holder, waiter, other):
            store.close()


def test_the_same_tenant_in_two_schemas_takes_two_locks() -> None:
    from refmem.stores.postgres import tenant_lock_key

    keys = {tenant_lock_key(schema, tenant) for schema in ("public", "s_a") for tenant in ("", "alice", "bob")}
    assert len(keys) == 6 and all(-(2**63) <= key < 2**63 for key in keys)


class MessageCountingEngine(PostgresEngine):
    """Counts what the store sends to the server, one message (a round trip) at a time."""

    messages = 0
    sent: List[str] = []
    texts: List[str] = []

    def _connect(self) -> Any:
        self.sent, self.texts = [], []
        return super()._connect()

    def _send(self, sql: str, params: Optional[Sequence[Any]] = None) -> Any:
        self.messages += 1
        self.sent.append(sql.split()[0])
        self.texts.append(sql)
        return super()._send(sql, params)

    def _control(self, sql: str) -> None:  # BEGIN, COMMIT, ROLLBACK: straight through libpq, a message each
        self.messages += 1
        self.sent.append(sql.split()[0])
        self.texts.append(sql)
        super()._control(sql)


def message_counting_store(dsn: str) -> Tuple[SqlStore, MessageCountingEngine]:
    engine = MessageCountingEngine(dsn, "")
    return SqlStore(engine, None), engine


@pytest.mark.parametrize(
    "command",
    [
        {"command": "str_replace", "path": "/memories/e.md", "old_str": "two", "new_str": "TWO"},
        {"command": "insert", "path": "/memories/e.md", "insert_line": 1, "insert_text": "more\n"},
    ],
)
def test_an_edit_is_four_round_trips(postgres: Cluster, command: Dict[str, Any]) -> None:
    """An edit (str_replace, insert) sends what a bare locked read-modify-write sends: a bare BEGIN, the file's
    SELECT ... FOR UPDATE (which takes its tenant's lock first), the whole write (one statement: generation,
    journal, version kept, the conditional rewrite), COMMIT; no SAVEPOINT, as the write is the transaction's
    first."""
    store, counted = message_counting_store(fresh_dsn(postgres, f"messages-{command['command']}"))
    handler = MemoryHandler(store)
    try:
        assert not handler.execute({"command": "create", "path": "/memories/e.md", "file_text": "one\ntwo\n"}).is_error
        for number in range(3):
            if "old_str" in command and number % 2:  # and back again
                sent = dict(command, old_str=command["new_str"], new_str=command["old_str"])
            else:
                sent = command
            counted.messages, counted.sent, counted.texts = 0, [], []
            assert not handler.execute(sent).is_error
            assert counted.messages == 4
            assert counted.sent == ["BEGIN", "SELECT", "WITH", "COMMIT"], counted.sent
            assert ";" not in counted.texts[0] and "pg_advisory_xact_lock" in counted.texts[1], counted.texts
    finally:
        store.close()


def test_a_control_statement_sent_through_libpq_fails_as_through_the_cursor(postgres: Cluster) -> None:
    """D-STORE-PG-CONTROL: BEGIN, COMMIT and ROLLBACK go straight through libpq; a server's error there is the
    psycopg error (its SQLSTATE) the cursor raises, and a connection lost while committing is `commit_unknown`."""
    from refmem import problems
    from refmem.stores.postgres import reason_of

    engine = PostgresEngine(fresh_dsn(postgres, "control"), "")
    try:
        with pytest.raises(psycopg.Error) as raised:
            engine._control("SELECT 1 / 0")
        assert raised.value.sqlstate == "22012" and type(raised.value) is psycopg.errors.DivisionByZero
        assert reason_of(raised.value, engine.conn) == "os"  # as the cursor's error: by its SQLSTATE
        engine.begin_write("")  # BEGIN and the tenant's lock
        with postgres.admin() as admin:
            admin.execute("SELECT pg_terminate_backend(%s, 5000)", (engine.conn.info.backend_pid,))
        with pytest.raises(problems.OsFailure) as failed:
            engine.commit()
        assert failed.value.code == "commit_unknown"
        engine.rollback()  # on a broken connection: nothing sent, nothing raised
        engine.begin_write("")  # the next command opens the connection again
        engine.commit()
    finally:
        engine.close()


def test_an_edit_takes_its_tenants_lock_before_it_locks_the_files_row(postgres: Cluster) -> None:
    """D-STORE-PG-WRITERS: the edit's read carries its tenant's lock (after a bare BEGIN), and takes it before it
    reads or locks the file's row: while another writer of the tenant holds the lock, the edit waits for it
    holding no row lock (another transaction locks the row at once, NOWAIT), so two writers never wait for each
    other's locks in opposite orders; once the lock is free, the edit is made."""
    dsn = fresh_dsn(postgres, "edit-lock-order")
    holder, editor = PostgresStore(dsn, tenant="alice"), PostgresStore(dsn, tenant="alice")
    done: List[Any] = []
    try:
        handler = MemoryHandler(editor)
        assert not handler.execute({"command": "create", "path": "/memories/e.md", "file_text": "one\n"}).is_error
        pid = editor._conn.info.backend_pid
        with holder.locked():
            holder.write_new(vp("/memories/held.md"), b"h\n")
            edit = {"command": "str_replace", "path": "/memories/e.md", "old_str": "one", "new_str": "ONE"}
            thread = threading.Thread(target=lambda: done.append(handler.execute(edit)))
            thread.start()
            with postgres.admin() as admin:
                for _ in range(500):
                    waiting = admin.execute(
                        "SELECT wait_event_type, wait_event FROM pg_stat_activity WHERE pid = %s", (pid,)
                    ).fetchone()
                    if waiting == ("Lock", "advisory"):
                        break
                    time.sleep(0.01)
                else:
                    raise AssertionError(f"the edit never waited for its tenant's lock: {waiting}")
                schema = dsn.split("search_path=")[1].rstrip("'")
                with admin.transaction():
                    row = admin.execute(
                        f"SELECT data FROM {schema}.refmem_nodes WHERE tenant = 'alice' AND path = 'e.md'"  # noqa: S608
                        " FOR UPDATE NOWAIT"
                    ).fetchone()
                assert row is not None and bytes(row[0]) == b"one\n"
            assert not done  # still waiting for the tenant's lock
        thread.join(30)
        assert done and not done[0].is_error, done
        assert handler.execute({"command": "view", "path": "/memories/e.md"}).output.endswith("ONE")
    finally:
        holder.close()
        editor.close()


def test_a_refused_first_mutation_rolls_back_and_begins_nothing_more(postgres: Cluster) -> None:
    """A create refused `exists` (its transaction's first mutation, no savepoint): the transaction is rolled back
    and nothing more is sent, so the refusal is what the model hears, never a wait for the tenant's lock again."""
    store, counted = message_counting_store(fresh_dsn(postgres, "refused-first"))
    handler = MemoryHandler(store)
    try:
        create = {"command": "create", "path": "/memories/e.md", "file_text": "one\n"}
        assert not handler.execute(create).is_error
        counted.sent = []
        result = handler.execute(create)
        assert result.is_error and "already exists" in result.output, result
        sent = counted.sent
        assert sent[0] == "BEGIN" and sent.count("BEGIN") == 1 and sent[-1] == "ROLLBACK", sent
        assert "SAVEPOINT" not in sent
    finally:
        store.close()


class CursorCountingEngine(PostgresEngine):
    """Counts the cursors made on the store's connection."""

    cursors = 0

    def _connect(self) -> Any:
        connection = super()._connect()
        store, cursor = self, connection.cursor

        def counted(*args: Any, **kwargs: Any) -> Any:
            store.cursors += 1
            return cursor(*args, **kwargs)

        connection.cursor = counted
        return connection


def test_a_connection_sends_every_statement_on_one_cursor(postgres: Cluster) -> None:
    """A cursor per statement (psycopg's `Connection.execute`) costs a cursor and its adapters each time: the store
    makes one per connection, kept open after each statement's rows are read, for a listing's nested reads too."""
    counted = CursorCountingEngine(fresh_dsn(postgres, "one-cursor"), "")
    store = SqlStore(counted, None)
    handler = MemoryHandler(store)
    try:
        commands: List[Dict[str, Any]] = [
            {"command": "create", "path": "/memories/a/b.md", "file_text": "one\ntwo\n"},
            {"command": "str_replace", "path": "/memories/a/b.md", "old_str": "two", "new_str": "TWO"},
            {"command": "insert", "path": "/memories/a/b.md", "insert_line": 0, "insert_text": "zero\n"},
            {"command": "view", "path": "/memories/a/b.md"},
            {"command": "view", "path": "/memories"},
            {"command": "rename", "old_path": "/memories/a", "new_path": "/memories/c"},
            {"command": "delete", "path": "/memories/c/b.md"},
        ]
        for command in commands:
            assert not handler.execute(command).is_error, command
        assert counted.cursors == 1
        assert [v.command for v in store.history(vp("/memories/a/b.md"))] == ["insert", "str_replace"]
        assert [v.command for v in store.history(vp("/memories/c/b.md"))] == ["delete"]
    finally:
        store.close()
