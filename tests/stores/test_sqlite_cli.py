"""`refmem exec --store sqlite:...` (and REFMEM_STORE) and `refmem serve --store sqlite`: the SQLite store from the
command line, with refusals that name no path, and the adapter protocol over a database per reset."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

from refmem import protocol as p
from refmem.serve import DATABASE_NAME, serve
from refmem.stores import StoreError
from refmem.stores.location import sqlite_path


def run(*argv: str, env: Optional[Dict[str, str]] = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "refmem", *argv], capture_output=True, text=True, timeout=60, env=env
    )


@pytest.mark.parametrize(
    "location, path",
    [("sqlite:///var/lib/m.db", "/var/lib/m.db"), ("sqlite:m.db", "m.db"), ("sqlite:dir/m.db", "dir/m.db")],
)
def test_sqlite_locations(location: str, path: str) -> None:
    assert sqlite_path(location) == path


@pytest.mark.parametrize("location", ["", "sqlite:", "sqlite://", "sqlite://host/m.db", "postgres://x", "m.db",
                                      "sqlite:a\0b"])
def test_other_locations_are_refused(location: str) -> None:
    with pytest.raises(StoreError):
        sqlite_path(location)


def test_exec_over_a_database_and_tenants(tmp_path: Path) -> None:
    import os

    where = f"sqlite://{tmp_path}/m.db"
    create = json.dumps({"command": "create", "path": "/memories/a.md", "file_text": "alice\n"})
    view = json.dumps({"command": "view", "path": "/memories/a.md"})
    assert run("exec", "--store", where, "--tenant", "alice", create).returncode == 0
    seen = run("exec", "--store", where, "--tenant", "alice", view)
    assert (seen.returncode, seen.stdout.splitlines()[-1]) == (0, "     1\talice")
    other = run("exec", "--store", where, "--tenant", "bob", view)
    assert other.returncode == 1 and "does not exist" in other.stdout
    from_environment = run("exec", "--tenant", "alice", view, env={**os.environ, "REFMEM_STORE": where})
    assert from_environment.stdout == seen.stdout


def test_exec_refusals_name_no_location(tmp_path: Path) -> None:
    view = json.dumps({"command": "view", "path": "/memories"})
    secret = tmp_path / "secret-place" / "missing" / "m.db"
    refused = run("exec", "--store", f"sqlite://{secret}", view)
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr.startswith("refmem: cannot use the store: ") and "secret-place" not in refused.stderr
    not_database = tmp_path / "notes.txt"
    not_database.write_text("notes\n" * 500)
    damaged = run("exec", "--store", f"sqlite://{not_database}", view)
    assert damaged.returncode == 2 and "not a database" in damaged.stderr and "notes.txt" not in damaged.stderr
    bad_tenant = run("exec", "--store", f"sqlite://{tmp_path}/m.db", "--tenant", "Alice", view)
    assert bad_tenant.returncode == 2 and bad_tenant.stderr.startswith("refmem: cannot use the tenant: ")
    neither = run("exec", view, env={"PATH": "/usr/bin:/bin"})
    assert neither.returncode == 2 and "--root" in neither.stderr and "Traceback" not in neither.stderr


def _serve(lines: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    stdin = io.StringIO("".join(json.dumps(line) + "\n" for line in lines))
    stdout = io.StringIO()
    assert serve(stdin, stdout, database=True) == 0
    return [json.loads(line) for line in stdout.getvalue().splitlines()]


def test_serve_over_a_database_per_root(tmp_path: Path) -> None:
    first, second = tmp_path / "one", tmp_path / "two"
    first.mkdir()
    second.mkdir()
    create = {"command": "create", "path": "/memories/a.md", "file_text": "x\n"}
    view = {"command": "view", "path": "/memories/a.md"}
    replies = _serve([
        {p.CMD: p.CMD_START, p.VERSION_FIELD: p.VERSION},
        {p.CMD: p.CMD_RESET, p.SEQ: 1, p.ROOT: str(first)},
        {p.CMD: p.CMD_EXECUTE, p.SEQ: 2, p.INPUT: create},
        {p.CMD: p.CMD_RESET, p.SEQ: 3, p.ROOT: str(second)},
        {p.CMD: p.CMD_EXECUTE, p.SEQ: 4, p.INPUT: view},
        {p.CMD: p.CMD_EXECUTE, p.SEQ: 5, p.INPUT: {**create, "path": "/memories/MEMORY.md", "file_text": "TWO\n"}},
        {p.CMD: p.CMD_EXECUTE, p.SEQ: 6, p.TOOL: "memory_get", p.INPUT: {"path": "MEMORY.md"}},
        {p.CMD: p.CMD_EXECUTE, p.SEQ: 7, p.TOOL: "memory_search", p.INPUT: {"query": "TWO"}},
        {p.CMD: p.CMD_STOP},
    ])
    start = replies[0]
    assert start[p.STORAGE] == p.STORAGE_OWN and start[p.TOOLS] == list(p.TOOL_NAMES)
    assert replies[2][p.OUTPUT] == "File created successfully at: /memories/a.md"
    assert replies[4][p.IS_ERROR] is True  # a new root: a new database
    # the OpenClaw tools over the same database store (D-SERVE-STORE, D-OPENCLAW-STORES)
    assert replies[6][p.IS_ERROR] is False and json.loads(replies[6][p.OUTPUT])["text"] == "TWO", replies[6]
    found = json.loads(replies[7][p.OUTPUT])["results"]
    assert replies[7][p.IS_ERROR] is False and [hit["path"] for hit in found] == ["MEMORY.md"], replies[7]
    assert (first / DATABASE_NAME).is_file() and not (first / "a.md").exists()


def test_serve_over_one_database_location_gives_each_root_its_namespace(tmp_path: Path) -> None:
    """`serve --store sqlite:///PATH` (D-SERVE-STORE): the rule of `serve --store postgresql://...`, one database
    for every root, each root's memories apart, none of them in the root."""
    first, second = tmp_path / "one", tmp_path / "two"
    first.mkdir()
    second.mkdir()
    database = tmp_path / "shared.db"
    lines = [
        {p.CMD: p.CMD_START, p.VERSION_FIELD: p.VERSION},
        {p.CMD: p.CMD_RESET, p.SEQ: 1, p.ROOT: str(first)},
        {p.CMD: p.CMD_EXECUTE, p.SEQ: 2, p.INPUT: {"command": "create", "path": "/memories/a.md", "file_text": "1\n"}},
        {p.CMD: p.CMD_RESET, p.SEQ: 3, p.ROOT: str(second)},
        {p.CMD: p.CMD_EXECUTE, p.SEQ: 4, p.INPUT: {"command": "view", "path": "/memories/a.md"}},
        {p.CMD: p.CMD_RESET, p.SEQ: 5, p.ROOT: str(first)},
        {p.CMD: p.CMD_EXECUTE, p.SEQ: 6, p.INPUT: {"command": "view", "path": "/memories/a.md"}},
        {p.CMD: p.CMD_STOP},
    ]
    stdout = io.StringIO()
    assert serve(io.StringIO("".join(json.dumps(line) + "\n" for line in lines)), stdout,
                 location=f"sqlite://{database}") == 0
    replies = [json.loads(line) for line in stdout.getvalue().splitlines()]
    assert replies[0][p.STORAGE] == p.STORAGE_OWN and replies[4][p.IS_ERROR] is True
    assert replies[6][p.OUTPUT].endswith("1\t1") and not replies[6][p.IS_ERROR]
    assert database.is_file() and not (first / DATABASE_NAME).exists() and not (first / "a.md").exists()
    assert str(database) not in stdout.getvalue()
