"""`refmem serve --store LOCATION --tenants-by-name` on SQLite and on the session's throwaway PostgreSQL cluster
(D-SERVE-STORE-NAMES): what serve wrote for a reset's tenant is that tenant's, by name, whatever the root, so that
`refmem db tenants` lists it, and `refmem prune --store` and `refmem db erase` reach it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional
from urllib.parse import quote

import pytest
from postgres_support import DATABASE
from sql_store_support import refmem_cli

from refmem import protocol as p


def _location(engine: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if engine == "sqlite":
        location = f"sqlite:///{tmp_path / 'memory.db'}"
    else:
        cluster = request.getfixturevalue("postgres")
        schema = cluster.location_dsn(tmp_path).split("search_path=")[1].rstrip("'")
        options = quote(f"-c search_path={schema}", safe="")
        # the superuser: `db tenants` on PostgreSQL needs a role row-level security does not hold
        location = f"postgresql://postgres@/{DATABASE}?host={quote(str(cluster.socket), safe='')}&options={options}"
    assert refmem_cli("db", "init", "--store", location, environment=dict(os.environ)).returncode == 0
    return location


def _serve(location: str, root: Path, tenant: Optional[str], tool_input: Dict[str, Any], *flags: str) -> str:
    root.mkdir(exist_ok=True)
    reset: Dict[str, Any] = {p.CMD: p.CMD_RESET, p.SEQ: 1, p.ROOT: str(root)}
    if tenant is not None:
        reset[p.TENANT] = tenant
    lines: List[Dict[str, Any]] = [
        {p.CMD: p.CMD_START, p.VERSION_FIELD: p.VERSION},
        reset,
        {p.CMD: p.CMD_EXECUTE, p.SEQ: 2, p.INPUT: tool_input},
    ]
    done = subprocess.run(  # noqa: S603  # our own module
        [sys.executable, "-m", "refmem", "serve", "--store", location, *flags],
        input="".join(json.dumps(line) + "\n" for line in lines), capture_output=True, text=True, timeout=120,
        check=False, env=dict(os.environ),
    )
    assert done.returncode == 0, done.stderr
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    assert all(reply.get(p.OK, True) for reply in replies), replies
    return str(replies[-1])


def _tenants(location: str) -> List[str]:
    done = refmem_cli("db", "tenants", "--store", location, environment=dict(os.environ))
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()[1:]


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["sqlite", "postgresql"])
def test_serve_by_name_writes_what_db_tenants_prune_and_erase_reach(
    engine: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    location = _location(engine, request, tmp_path)
    create = {"command": "create", "path": "/memories/a.md", "file_text": "ALICE\n"}
    _serve(location, tmp_path / "one", "alice", create, "--tenants-by-name")
    note = {"command": "create", "path": "/memories/b.md", "file_text": "DEFAULT\n"}
    _serve(location, tmp_path / "one", None, note, "--tenants-by-name")
    # another root, the same tenant: the same memories
    view = {"command": "view", "path": "/memories/a.md"}
    seen = _serve(location, tmp_path / "two", "alice", view, "--tenants-by-name")
    assert "ALICE" in seen
    assert _tenants(location) == ["(default)  1  8  0  0", "alice  1  6  0  0"]
    environment = dict(os.environ)
    pruned = refmem_cli("prune", "--store", location, "--older-than", "1d", "--dry-run", environment=environment)
    assert pruned.returncode == 0 and pruned.stdout.endswith("0 would remove, 1 kept\n"), pruned.stdout
    erased = refmem_cli("db", "erase", "--store", location, "--tenant", "alice", "--yes", environment=environment)
    assert erased.returncode == 0 and "1 files and folders" in erased.stdout, erased.stdout + erased.stderr
    gone = _serve(location, tmp_path / "three", "alice", view, "--tenants-by-name")
    assert "ALICE" not in gone and "does not exist" in gone
    # without the option, a root is a namespace of its own, named by a hash (D-SERVE-STORE), as before
    _serve(location, tmp_path / "four", "alice", create)
    hashed = [line for line in _tenants(location) if line.startswith("serve-")]
    assert len(hashed) == 1 and hashed[0].endswith("  1  6  0  0")


def test_tenants_by_name_needs_a_location(tmp_path: Path) -> None:
    done = refmem_cli("serve", "--store", "sqlite", "--tenants-by-name", environment=dict(os.environ))
    assert done.returncode == 2 and "--tenants-by-name is for serve --store LOCATION" in done.stderr


def test_serve_log_commands_names_the_tenant_by_name_and_nothing_of_the_content(tmp_path: Path) -> None:
    """`serve --log-commands` (D-OPLOG): one line per executed command on standard error, with the store's tenant."""
    location = f"sqlite:///{tmp_path / 'memory.db'}"
    root = tmp_path / "root"
    root.mkdir()
    lines = [
        {p.CMD: p.CMD_START, p.VERSION_FIELD: p.VERSION},
        {p.CMD: p.CMD_RESET, p.SEQ: 1, p.ROOT: str(root), p.TENANT: "alice"},
        {p.CMD: p.CMD_EXECUTE, p.SEQ: 2, p.INPUT: {"command": "create", "path": "/memories/hush.md", "file_text": "z"}},
        {p.CMD: p.CMD_EXECUTE, p.SEQ: 3, p.INPUT: {"command": "view", "path": "/memories/none.md"}},
    ]
    done = subprocess.run(  # noqa: S603  # our own module
        [sys.executable, "-m", "refmem", "serve", "--store", location, "--tenants-by-name", "--log-commands"],
        input="".join(json.dumps(line) + "\n" for line in lines), capture_output=True, text=True, timeout=120,
        check=False, env=dict(os.environ),
    )
    assert done.returncode == 0, done.stderr
    logged = [json.loads(text) for text in done.stderr.splitlines()]
    assert [(e["tenant"], e["command"], e["outcome"]) for e in logged] == [
        ("alice", "create", "ok"), ("alice", "view", "refused")
    ]
    assert "hush" not in done.stderr and "none.md" not in done.stderr
