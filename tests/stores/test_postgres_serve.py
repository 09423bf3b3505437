"""`refmem serve --store postgresql://...` (or REFMEM_STORE) against the session's throwaway cluster: the adapter
protocol over one PostgreSQL database, each reset's root a namespace of its own in it, as `serve --store sqlite`
gives each root a database of its own (D-SERVE-STORE); no reply, error or line printed names the location."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional
from urllib.parse import quote

from postgres_support import APP_ROLE, DATABASE, Cluster, import_psycopg

from refmem import protocol as p
from refmem.serve import DATABASE_NAME, NAMESPACE_NAME, serve

import_psycopg()

from refmem.stores.postgres import migrate  # noqa: E402

CREATE = {"command": "create", "path": "/memories/a.md", "file_text": "ROOT-ONE\n"}
VIEW = {"command": "view", "path": "/memories/a.md"}
NOTE = {"command": "create", "path": "/memories/memory/notes.md", "file_text": "DEFAULT-NOTE\n"}


def location(postgres: Cluster, name: str, password: str = "") -> str:
    """A postgresql:// URI over the cluster's socket, in a schema of its own (made by `refmem db init`'s code)."""
    options = postgres.location_dsn(f"test_postgres_serve:{name}:{os.getpid()}").split("options='")[1].rstrip("'")
    secret = f":{password}" if password else ""
    made = (f"postgresql://{APP_ROLE}{secret}@/{DATABASE}?host={quote(str(postgres.socket), safe='')}"
            f"&options={quote(options, safe='')}")
    migrate(made)
    return made


def requests(*lines: Dict[str, Any]) -> str:
    return "".join(json.dumps(line) + "\n" for line in lines)


def serve_lines(text: str, store: str) -> List[Dict[str, Any]]:
    stdout = io.StringIO()
    assert serve(io.StringIO(text), stdout, location=store) == 0
    return [json.loads(line) for line in stdout.getvalue().splitlines()]


def reset(seq: int, root: Path, tenant: Optional[str] = None) -> Dict[str, Any]:
    return {p.CMD: p.CMD_RESET, p.SEQ: seq, p.ROOT: str(root), **({p.TENANT: tenant} if tenant else {})}


def execute(seq: int, tool_input: Dict[str, Any], tool: Optional[str] = None) -> Dict[str, Any]:
    return {p.CMD: p.CMD_EXECUTE, p.SEQ: seq, p.INPUT: tool_input, **({p.TOOL: tool} if tool else {})}


START = {p.CMD: p.CMD_START, p.VERSION_FIELD: p.VERSION}


def test_each_root_is_a_namespace_of_its_own_in_one_database(postgres: Cluster, tmp_path: Path) -> None:
    store = location(postgres, "roots")
    first, second = tmp_path / "one", tmp_path / "two"
    first.mkdir()
    second.mkdir()
    replies = serve_lines(requests(
        START,
        reset(1, first), execute(2, CREATE), execute(3, VIEW),
        reset(4, second), execute(5, VIEW),
        reset(6, first, tenant="alice"), execute(7, VIEW),
        execute(8, {"command": "create", "path": "/memories/MEMORY.md", "file_text": "ALICE-ONLY\n"}),
        execute(9, {"path": "MEMORY.md"}, tool="memory_get"),
        reset(10, first), execute(11, NOTE),
        execute(12, {"query": "ALICE-ONLY"}, tool="memory_search"),
        execute(13, {"query": "DEFAULT-NOTE"}, tool="memory_search"),
        reset(14, first, tenant="alice"), execute(15, {"query": "DEFAULT-NOTE"}, tool="memory_search"),
        {p.CMD: p.CMD_STOP},
    ), store)
    start = replies[0]
    assert start[p.READY] is True and start[p.STORAGE] == p.STORAGE_OWN and start[p.TOOLS] == list(p.TOOL_NAMES)
    assert replies[2][p.OUTPUT] == "File created successfully at: /memories/a.md"
    assert "ROOT-ONE" in replies[3][p.OUTPUT]
    assert replies[5][p.IS_ERROR] is True and "does not exist" in replies[5][p.OUTPUT]  # another root: nothing
    assert replies[7][p.IS_ERROR] is True  # the model's tenant on the root: a namespace of its own too
    # The OpenClaw tools over the same database store, the reset's tenant's alone (D-SERVE-STORE, D-OPENCLAW-STORES).
    assert json.loads(replies[9][p.OUTPUT])["text"] == "ALICE-ONLY", replies[9]
    assert json.loads(replies[12][p.OUTPUT])["results"] == [], replies[12]  # alice's memory, from the default
    assert [hit["path"] for hit in json.loads(replies[13][p.OUTPUT])["results"]] == ["memory/notes.md"], replies[13]
    assert json.loads(replies[15][p.OUTPUT])["results"] == [], replies[15]  # the default's, from alice
    # The memories are in the database, not in the root: only the root's namespace file is there.
    assert sorted(path.name for path in first.iterdir()) == [NAMESPACE_NAME] and not (first / DATABASE_NAME).exists()
    # Another session (another server process, later) on the same root finds them; a root made again where one
    # was starts empty, as a new memory.db would.
    again = serve_lines(requests(START, reset(1, first), execute(2, VIEW)), store)
    assert "ROOT-ONE" in again[2][p.OUTPUT]
    (first / NAMESPACE_NAME).unlink()
    fresh = serve_lines(requests(START, reset(1, first), execute(2, VIEW)), store)
    assert fresh[2][p.IS_ERROR] is True
    for reply in replies + again + fresh:
        said = json.dumps(reply)
        assert str(postgres.socket) not in said and APP_ROLE not in said and "postgresql" not in said


def test_a_namespace_file_not_made_by_refmem_is_refused(postgres: Cluster, tmp_path: Path) -> None:
    store = location(postgres, "marker")
    (tmp_path / NAMESPACE_NAME).write_text("../../somebody-else\n")
    replies = serve_lines(requests(START, reset(1, tmp_path), execute(2, VIEW)), store)
    assert replies[1][p.ERROR][p.ERROR_CODE] == p.RESET_FAILED
    assert replies[2][p.ERROR][p.ERROR_CODE] == p.NO_ROOT


def run_serve(argv: List[str], text: str, env: Dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(  # noqa: S603
        [sys.executable, "-m", "refmem", "serve", *argv], input=text, capture_output=True, text=True, timeout=120,
        env=dict(os.environ, **env), check=False,
    )


def test_refmem_serve_takes_the_location_from_store_or_the_environment(postgres: Cluster, tmp_path: Path) -> None:
    store = location(postgres, "cli", password="hunter2")  # trust authentication: the password is not checked
    script = requests(START, reset(1, tmp_path), execute(2, CREATE), execute(3, VIEW), {p.CMD: p.CMD_STOP})
    given = run_serve(["--store", store], script, env={})
    assert given.returncode == 0, given.stderr
    replies = [json.loads(line) for line in given.stdout.splitlines()]
    assert replies[0][p.STORAGE] == p.STORAGE_OWN and "ROOT-ONE" in replies[3][p.OUTPUT]
    from_environment = run_serve([], requests(START, reset(1, tmp_path), execute(2, VIEW)),
                                 env={"REFMEM_STORE": store})
    assert "ROOT-ONE" in json.loads(from_environment.stdout.splitlines()[2])[p.OUTPUT]
    directory = run_serve(["--store", "directory"], requests(START), env={"REFMEM_STORE": store})
    assert json.loads(directory.stdout)[p.STORAGE] == p.STORAGE_FILESYSTEM  # --store wins over the environment
    for done in (given, from_environment, directory):
        said = done.stdout + done.stderr
        assert "hunter2" not in said and str(postgres.socket) not in said and APP_ROLE not in said


def test_an_unusable_location_stops_serve_before_start_naming_nothing_of_it(postgres: Cluster, tmp_path: Path) -> None:
    socket = quote(str(postgres.socket), safe="")
    no_schema = postgres.location_dsn(f"test_postgres_serve:none:{os.getpid()}").split("options='")[1].rstrip("'")
    unusable = {
        "no database": f"postgresql://{APP_ROLE}:hunter2@/nowhere?host={socket}",
        "no schema": f"postgresql://{APP_ROLE}:hunter2@/{DATABASE}?host={socket}&options={quote(no_schema, safe='')}",
        "not a location": "postgresq1://hunter2@nowhere",
    }
    for why, store in unusable.items():
        done = run_serve(["--store", store], requests(START), env={})
        assert done.returncode == 2 and done.stdout == "", (why, done.stderr)
        assert done.stderr.startswith("refmem: cannot use the store: ") and "Traceback" not in done.stderr, why
        assert "hunter2" not in done.stderr and str(postgres.socket) not in done.stderr
        assert "nowhere" not in done.stderr and APP_ROLE not in done.stderr, (why, done.stderr)
    assert "refmem db init" in run_serve(["--store", unusable["no schema"]], "", env={}).stderr
