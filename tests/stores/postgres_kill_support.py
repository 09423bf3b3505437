"""The client of the thousand-kills test (test_postgres_faults.py), apart from the test so that the process that
forks it imports only this, refmem and psycopg (tests/forker_support.py)."""

from __future__ import annotations

import itertools
import mmap
import random
from typing import Any, Dict

from refmem import MemoryHandler
from refmem.stores.postgres import PostgresStore

KILL_TENANT = "kills"
KILL_FILES = ("f0.md", "f1.md", "f2.md", "sub/g0.md", "sub/g1.md")
"""The files of the folder the clients move between /memories/a and /memories/b."""
STARTING, RUNNING, BETWEEN = 0, 1, 2
"""A client's byte in the shared flag file: not connected yet, in a command, connected and between commands."""


def churn(dsn: str, seed: int, flags_path: str, slot: int) -> None:
    """A client that, once connected (its byte in the flag file turns BETWEEN), moves the folder between
    /memories/a and /memories/b, inserts and str_replaces unique token lines in its files, creates files in
    /memories/c and deletes the one it created before, until killed. Every file it writes is token lines then `x`.
    (Files are created in a folder that never moves: a create where the moving folder just was would make that
    folder again.) Its byte is RUNNING while a command runs."""
    with open(flags_path, "r+b") as file:
        flags = mmap.mmap(file.fileno(), 0)  # shared with the test: the child's writes are seen there at once
    store = PostgresStore(dsn, tenant=KILL_TENANT, create=False)
    inner = MemoryHandler(store)

    class Flagged:
        @staticmethod
        def execute(command: Dict[str, Any]) -> Any:
            flags[slot] = RUNNING
            try:
                return inner.execute(command)
            finally:
                flags[slot] = BETWEEN

    handler = Flagged()
    flags[slot] = BETWEEN
    chooser = random.Random(seed)
    here, made = "/memories/a", None
    for step in itertools.count():
        token = f"k-{seed}-{step}"
        there = "/memories/b" if here == "/memories/a" else "/memories/a"
        file = f"{here}/{chooser.choice(KILL_FILES)}"
        kind = chooser.randrange(5)
        if kind == 0:
            result = handler.execute({"command": "rename", "old_path": here, "new_path": there})
            here = there if not result.is_error or "does not exist" in result.output else here
        elif kind == 1:
            result = handler.execute({"command": "insert", "path": file, "insert_line": 0, "insert_text": f"{token}\n"})
        elif kind == 2:
            result = handler.execute({"command": "str_replace", "path": file, "old_str": "\nx\n",
                                      "new_str": f"\n{token}\nx\n"})
        elif kind == 3:
            create = {"command": "create", "path": f"/memories/c/n-{token}.md", "file_text": f"{token}\nx\n"}
            result = handler.execute(create)
            made = f"n-{token}.md" if not result.is_error else made
        else:
            result = handler.execute({"command": "delete", "path": f"/memories/c/{made or 'none.md'}"})
        if result.is_error and "does not exist" in result.output and kind in (1, 2):
            here = there  # the folder moved: another client's rename


def warm() -> None:
    """Runs once in the forking process: psycopg's lazy imports, so that a child connects at once."""
    import psycopg  # noqa: F401
    import psycopg.pq  # noqa: F401
