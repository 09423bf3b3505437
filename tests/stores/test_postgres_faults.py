"""PostgreSQL faults in the middle of a run (issue 18, "Faults"), against the session's throwaway cluster: the server
restarted under several writing clients (each with a connection of its own, then each with a pool of its own), and
clients SIGKILLed in the middle of their commands by the thousand.

What is proved: every command is answered with a result (success, or the D-STORE-PG-RETRY reasons, never the
internal error and never a hang); after the restart the clients' stores connect again on their own and go on; a
token whose command succeeded is in the memories exactly once, one whose command said `disconnected` (nothing
changed) is not there, one whose command said `commit_unknown` is there at most once; no folder is ever half moved;
no result names the server's socket folder, the role, the DSN or the database."""

from __future__ import annotations

import itertools
import json
import mmap
import multiprocessing
import os
import random
import re
import signal
import time
import traceback
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

import pytest
from forker_support import Forker
from postgres_support import APP_ROLE, Cluster, import_psycopg

from refmem import MemoryHandler
from refmem.messages import IO_REASONS

import_psycopg()

from postgres_kill_support import KILL_FILES, KILL_TENANT, RUNNING, STARTING  # noqa: E402

from refmem.stores.postgres import PostgresStore  # noqa: E402

NOTHING_DONE = ("disconnected", "busy", "changed")
"""The reasons of an error result after which the command changed nothing (D-STORE-PG-RETRY, D-STORE-SQL-BUSY)."""
ANSWERS = ("done", "commit_unknown") + NOTHING_DONE


def fresh_dsn(postgres: Cluster, name: str) -> str:
    return postgres.location_dsn(f"test_postgres_faults:{name}:{os.getpid()}")


def node_rows(postgres: Cluster, dsn: str, tenant: str) -> Dict[str, Optional[bytes]]:
    """path -> content (None for a folder) of every row of `tenant`, read by the superuser (no row-level security,
    no refmem code between the rows and the check)."""
    schema = dsn.split("search_path=")[1].rstrip("'")
    with postgres.admin() as connection:
        found = connection.execute(
            f"SELECT path, data FROM {schema}.refmem_nodes WHERE tenant = %s ORDER BY path", (tenant,)  # noqa: S608
        ).fetchall()
    return {path: None if data is None else bytes(data) for path, data in found}


def outcome(output: str, is_error: bool) -> str:
    """What a result says happened: `done`, one of the store's reasons, or `other` (a defect here)."""
    if not is_error:
        return "done"
    for reason in ("commit_unknown",) + NOTHING_DONE:
        if IO_REASONS[reason] in output:
            return reason
    return "other"


def names_the_location(postgres: Cluster, output: str) -> bool:
    said = output.lower()
    secrets = (str(postgres.base).lower(), APP_ROLE, "host=", "dbname", "search_path", "postgres", "5432", ".s.pgsql")
    return any(secret in said for secret in secrets)


# --- a restart of the server in the middle of a run ----------------------------------------------------

RESTART_CLIENTS = 6
RESTART_TENANT = "restart"
SHARED = [f"/memories/shared/f{i}.md" for i in range(3)]
FOLDER_FILES = ("a.md", "b.md", "sub/c.md")
WARM_UP = 5
"""Successful commands each client has made before the restart."""
RESTARTS = (0.0, 0.3, 1.0)
"""How long the server stays down at each restart: at once (commands cut in the middle), and long enough that
commands starting then exhaust their reconnections and are answered `disconnected`."""
AFTER_RESTART = 15
"""Successful commands each client makes after the server is back, before the run ends."""
RUN_SECONDS = 240
"""The bound on each phase of the run: a client that hangs fails the test instead of stalling it."""


def _open_client_store(dsn: str, kind: str) -> Tuple[Any, Callable[[], None]]:
    """A client's store and how to close it: a connection of its own, or a store of a pool of two connections of
    its own (refmem.stores.pgpool), borrowed per transaction."""
    if kind == "connection":
        store = PostgresStore(dsn, tenant=RESTART_TENANT, create=False)
        return store, store.close
    from refmem.stores.pgpool import PostgresPool

    pool = PostgresPool(dsn, min_size=1, max_size=2, create=False)
    return pool.store(tenant=RESTART_TENANT), pool.close


def _restart_client(dsn: str, kind: str, number: int, go: Any, finish: Any, progress: Any, log: str) -> None:
    """One client with its own connection (or pool: `kind`), adding unique tokens until `finish`: str_replace and
    insert on shared files, create, create then rename of a file, and rename of a folder of its own
    (`/memories/dirN/NAME`, moved to a new NAME each time). Every result goes to `log` as a JSON line."""
    with open(log, "w", encoding="utf-8") as records:
        try:
            store, close = _open_client_store(dsn, kind)  # opened after the fork
            handler = MemoryHandler(store)
            folder = "start"

            def run(kind: str, token: str, command: Dict[str, Any]) -> str:
                result = handler.execute(command)
                said = outcome(result.output, result.is_error)
                records.write(json.dumps({"kind": kind, "token": token, "outcome": said, "output": result.output}))
                records.write("\n")
                records.flush()
                if said == "done":
                    with progress.get_lock():
                        progress[number] += 1
                return said

            go.wait()
            step = 0
            while not finish.is_set():
                token = f"t{number}x{step:05d}"
                shared = SHARED[(number + step) % len(SHARED)]
                kind = step % 5
                if kind == 0:
                    run("text", token, {"command": "str_replace", "path": shared, "old_str": "@@\n",
                                        "new_str": f"{token}\n@@\n"})
                elif kind == 1:
                    run("text", token, {"command": "insert", "path": shared, "insert_line": 1,
                                        "insert_text": f"{token}\n"})
                elif kind == 2:
                    run("create", token, {"command": "create", "path": f"/memories/new/{token}.md",
                                          "file_text": f"{token}\n"})
                elif kind == 3:
                    made = run("inbox", token, {"command": "create", "path": f"/memories/inbox/{token}.md",
                                                "file_text": f"{token}\n"})
                    if made == "done":
                        run("move", token, {"command": "rename", "old_path": f"/memories/inbox/{token}.md",
                                            "new_path": f"/memories/done/{token}.md"})
                else:
                    said = run("folder", token, {"command": "rename", "old_path": f"/memories/dir{number}/{folder}",
                                                 "new_path": f"/memories/dir{number}/{token}"})
                    if said == "done":
                        folder = token
                    elif said == "commit_unknown":  # view it, as the reason says, until the server answers
                        for _ in range(1000):
                            seen = handler.execute({"command": "view", "path": f"/memories/dir{number}/{token}"})
                            if not seen.is_error:
                                folder = token
                                break
                            if "does not exist" in seen.output:
                                break
                            time.sleep(0.05)
                        else:
                            raise AssertionError("the server never answered after the restart")
                step += 1
            records.write(json.dumps({"kind": "end", "folder": folder}) + "\n")
            close()
        except BaseException:  # noqa: BLE001  # the parent reports it
            records.write(json.dumps({"kind": "crash", "output": traceback.format_exc()}) + "\n")


def _wait(condition: Any, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not reached within {seconds} s: {what}")
        time.sleep(0.05)


@pytest.mark.parametrize("kind", ["connection", "pool"])
def test_a_server_restart_mid_run_loses_nothing_and_answers_every_command(
    postgres: Cluster, tmp_path: Path, kind: str
) -> None:
    """Each client with a connection of its own, or (`pool`) a pool of its own whose connections the restart
    breaks while idle in the pool or borrowed mid-command (D-STORE-PG-POOL)."""
    dsn = fresh_dsn(postgres, f"restart-{kind}")
    store = PostgresStore(dsn, tenant=RESTART_TENANT)
    handler = MemoryHandler(store)
    paths = list(SHARED) + [f"/memories/dir{n}/start/{name}" for n in range(RESTART_CLIENTS) for name in FOLDER_FILES]
    for path in paths:
        text = "head\n@@\n" if path in SHARED else f"{path}\n"
        assert not handler.execute({"command": "create", "path": path, "file_text": text}).is_error
    store.close()

    context = multiprocessing.get_context("fork")
    go, finish = context.Event(), context.Event()
    progress = context.Array("i", RESTART_CLIENTS)
    logs = [str(tmp_path / f"client{n}.jsonl") for n in range(RESTART_CLIENTS)]
    clients = [
        context.Process(target=_restart_client, args=(dsn, kind, n, go, finish, progress, logs[n]))
        for n in range(RESTART_CLIENTS)
    ]
    for client in clients:
        client.start()
    try:
        go.set()
        _wait(lambda: min(progress) >= WARM_UP, RUN_SECONDS, "every client's first commands")
        for down in RESTARTS:
            before = list(progress)
            postgres.restart(down_seconds=down)  # a fast shutdown: open transactions rolled back, connections closed
            back = [before[n] + AFTER_RESTART for n in range(RESTART_CLIENTS)]
            _wait(lambda: all(progress[n] >= back[n] for n in range(RESTART_CLIENTS)), RUN_SECONDS,  # noqa: B023
                  f"every client going on after the restart (down {down} s)")
        finish.set()
        for client in clients:
            client.join(RUN_SECONDS)
        assert all(client.exitcode == 0 for client in clients), [client.exitcode for client in clients]
    finally:
        finish.set()
        for client in clients:
            if client.is_alive():
                client.kill()
                client.join()

    records = [[json.loads(line) for line in Path(log).read_text(encoding="utf-8").splitlines()] for log in logs]
    crashed = [line["output"] for lines in records for line in lines if line["kind"] == "crash"]
    assert crashed == []
    answered = [line for lines in records for line in lines if line["kind"] != "end"]
    assert {line["outcome"] for line in answered} <= set(ANSWERS), [
        line["output"] for line in answered if line["outcome"] not in ANSWERS
    ]
    assert not [line["output"] for line in answered if names_the_location(postgres, line["output"])]
    lost = [line for line in answered if line["outcome"] in ("disconnected", "commit_unknown")]
    assert lost, "no command met the restart: the test proved nothing"

    state = node_rows(postgres, dsn, RESTART_TENANT)
    text = b"".join(data or b"" for data in state.values()).decode()
    for line in answered:
        token, said, kind = line["token"], line["outcome"], line["kind"]
        if kind == "folder":
            continue
        if kind == "inbox" and said == "done":
            continue  # its move (the next line) says where the file is
        count = text.count(token + "\n")
        where = (f"inbox/{token}.md" in state, f"done/{token}.md" in state)
        if said == "done":
            assert count == 1, line
            if kind == "move":
                assert where == (False, True), line
        elif said == "commit_unknown":
            assert count <= 1, line
            if kind == "move":
                assert where in ((True, False), (False, True)), line
        else:
            assert count == 0 or kind == "move", line
            if kind == "move":
                assert count == 1 and where == (True, False), line
    for number, lines in enumerate(records):
        (end,) = [line for line in lines if line["kind"] == "end"]
        folder = f"dir{number}/{end['folder']}"
        inside = sorted(path for path in state if path.startswith(f"dir{number}/"))
        assert inside == sorted([folder, f"{folder}/sub"] + [f"{folder}/{name}" for name in FOLDER_FILES]), inside
        for name in FOLDER_FILES:  # every file of the folder whole, as made
            assert state[f"{folder}/{name}"] == f"/memories/dir{number}/start/{name}\n".encode()
    for path in SHARED:  # each shared file's marker once: no edit applied twice or torn
        assert state[path[len("/memories/"):]].count(b"@@\n") == 1
    after = PostgresStore(dsn, tenant=RESTART_TENANT, create=False)  # and the cluster serves later tests
    after.close()


# --- clients SIGKILLed in the middle of their commands, by the thousand ---------------------------------

KILLS_MANY = 1000
"""Clients killed in the middle of a command in one run (issue 18 asks for at least 1,000); kills between two
commands do not count."""
KILL_BATCH = 100
"""Kills between two checks of the whole state."""
KILL_CLIENTS = 3
"""Clients alive at once: each is killed at a random moment and another started in its place."""
TOKEN_LINE = re.compile(rb"k-\d+-\d+\n")


def _check_untorn(postgres: Cluster, dsn: str) -> int:
    """Asserts nothing is torn; the number of token lines in the memories."""
    schema = dsn.split("search_path=")[1].rstrip("'")
    with postgres.admin() as connection:
        found = connection.execute(
            f"SELECT path, parent, name, depth, kind, size, data FROM {schema}.refmem_nodes"  # noqa: S608
            " WHERE tenant = %s ORDER BY path", (KILL_TENANT,)
        ).fetchall()
    kinds = {row[0]: row[4] for row in found}
    tops = {path.split("/")[0] for path in kinds} - {"c"}
    assert len(tops) == 1, tops  # the folder is in one place, never in both, never half of it
    (top,) = tops
    moved = sorted(path for path in kinds if path.split("/")[0] == top)
    assert moved == sorted([top, f"{top}/sub"] + [f"{top}/{name}" for name in KILL_FILES]), moved
    tokens: List[bytes] = []
    for path, parent, name, depth, kind, size, data in found:  # every row agrees with its key: no subtree half moved
        parts = path.split("/")
        assert (parent, name, depth) == ("/".join(parts[:-1]), parts[-1], len(parts)), path
        assert parent == "" or kinds.get(parent) == "dir", path
        if kind == "file":
            data = bytes(data)
            assert size == len(data) and data.endswith(b"x\n"), (path, data[-200:])
            body = data[: -len(b"x\n")]
            lines = TOKEN_LINE.findall(body)
            assert b"".join(lines) == body, (path, data[-200:])  # only whole token lines before the final x
            tokens.extend(lines)
    assert len(tokens) == len(set(tokens))  # no command applied twice
    return len(tokens)


@pytest.mark.slow
def test_a_thousand_clients_killed_mid_command_leave_nothing_torn(postgres: Cluster, tmp_path: Path) -> None:
    dsn = fresh_dsn(postgres, "kills")
    store = PostgresStore(dsn, tenant=KILL_TENANT)
    handler = MemoryHandler(store)
    for path in [f"/memories/a/{name}" for name in KILL_FILES] + ["/memories/c/made.md"]:
        create = {"command": "create", "path": path, "file_text": "x\n"}
        assert not handler.execute(create).is_error
    store.close()
    chooser = random.Random(1018)
    flags_path = tmp_path / "flags"
    flags_path.write_bytes(bytes(KILL_CLIENTS + 1))
    with open(flags_path, "r+b") as file:
        flags = mmap.mmap(file.fileno(), 0)  # one byte per client: STARTING, RUNNING or BETWEEN (the support module)
    alive: Dict[int, int] = {}  # pid -> its byte
    kills, mid_command, seeds, tokens_seen = 0, 0, itertools.count(), []
    started = time.monotonic()
    # The clients are forked by a small process: a fork from a pytest that collected the whole suite costs 16 ms.
    with Forker(["postgres_kill_support:warm"]) as forker:
        try:
            while mid_command < KILLS_MANY:
                for _ in range(KILL_BATCH):
                    while len(alive) < KILL_CLIENTS:
                        slot = min(set(range(KILL_CLIENTS + 1)) - set(alive.values()))
                        flags[slot] = STARTING
                        pid = forker.start("postgres_kill_support:churn", dsn, next(seeds), str(flags_path), slot)
                        alive[pid] = slot
                    deadline = time.monotonic() + 60
                    while any(flags[slot] == STARTING for slot in alive.values()):  # connected, polled
                        assert time.monotonic() < deadline, "a client never connected"
                        time.sleep(0.001)
                    time.sleep(chooser.uniform(0.0, 0.02))
                    running = sorted(pid for pid, slot in alive.items() if flags[slot] == RUNNING)
                    victim = chooser.choice(running or sorted(alive))  # one in a command when there is one
                    in_command = flags[alive[victim]] == RUNNING  # read just before the kill: a command was running
                    os.kill(victim, signal.SIGKILL)
                    assert os.WIFSIGNALED(forker.wait(victim))
                    del alive[victim]
                    kills += 1
                    mid_command += in_command
                tokens_seen.append(_check_untorn(postgres, dsn))  # with the others still running: one state, whole
        finally:
            for pid in alive:
                os.kill(pid, signal.SIGKILL)
                forker.wait(pid)
    tokens_seen.append(_check_untorn(postgres, dsn))
    print(f"{kills} clients killed ({mid_command} in a command) in {time.monotonic() - started:.1f} s; token lines"
          f" after each batch: {tokens_seen}")
    assert mid_command >= 1000 and tokens_seen[-1] > tokens_seen[0] > 0  # the clients did work between the kills
