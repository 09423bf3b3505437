"""One structured line per command (D-OPLOG) over real SQLite and PostgreSQL stores: tenant, command, duration and
outcome class, and never a path or a byte of content, whatever the model sent."""

from __future__ import annotations

import json
import logging
import os
import threading
from pathlib import Path
from typing import Any, Dict, List

import pytest
from sql_store_support import Opener, refmem_cli

from refmem import MemoryHandler
from refmem.oplog import LOGGER, logged, outcome_class

SECRET_PATH = "/memories/secret-plans-7f3a.md"
SECRET_TEXT = "launch codes 0000-7f3a"


def _lines(sink: List[str]) -> List[Dict[str, Any]]:
    parsed = [json.loads(text) for text in sink]
    for text in sink:
        assert "secret" not in text and "7f3a" not in text and "/memories" not in text, text
    return parsed


def test_each_command_logs_one_line_with_its_outcome_class(opener: Opener) -> None:
    sink: List[str] = []
    handler = logged(MemoryHandler(opener(tenant="alice", quota={"max_files": 1})), tenant="alice", sink=sink.append)
    handler.execute({"command": "create", "path": SECRET_PATH, "file_text": SECRET_TEXT})
    handler.execute({"command": "view", "path": SECRET_PATH})
    handler.execute({"command": "str_replace", "path": SECRET_PATH, "old_str": "absent 7f3a", "new_str": "x"})
    handler.execute({"command": "create", "path": "/memories/secret-two-7f3a.md", "file_text": "y"})  # over quota
    handler.execute({"command": "secret-7f3a", "path": SECRET_PATH})  # not a command: its name never logged
    handler.execute("not even an object")
    lines = _lines(sink)
    assert [(entry["tenant"], entry["command"], entry["outcome"]) for entry in lines] == [
        ("alice", "create", "ok"),
        ("alice", "view", "ok"),
        ("alice", "str_replace", "refused"),
        ("alice", "create", "quota_files"),
        ("alice", "unknown", "refused"),
        ("alice", "unknown", "refused"),
    ]
    assert all(sorted(entry) == ["command", "ms", "outcome", "tenant"] for entry in lines)
    assert all(isinstance(entry["ms"], float) and entry["ms"] >= 0 for entry in lines)


def test_a_busy_store_is_its_own_class(tmp_path: Path) -> None:
    from refmem.stores.sqlite import SqliteStore

    holder = SqliteStore(tmp_path / "m.db", tenant="alice")
    waiter = SqliteStore(tmp_path / "m.db", tenant="alice", busy_seconds=0.05, busy_retries=0)
    sink: List[str] = []
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with holder.locked():
            holding.set()
            release.wait(20)

    thread = threading.Thread(target=hold)
    thread.start()
    try:
        assert holding.wait(20)
        logged(MemoryHandler(waiter), sink=sink.append).execute(
            {"command": "create", "path": SECRET_PATH, "file_text": SECRET_TEXT}
        )
    finally:
        release.set()
        thread.join(30)
        holder.close()
        waiter.close()
    assert [(entry["tenant"], entry["outcome"]) for entry in _lines(sink)] == [("", "busy")]


def test_lines_go_to_logging_by_default(opener: Opener, caplog: pytest.LogCaptureFixture) -> None:
    handler = logged(MemoryHandler(opener(tenant="bob")), tenant="bob")
    with caplog.at_level(logging.INFO, logger=LOGGER):
        handler.execute({"command": "view", "path": "/memories"})
    assert [json.loads(record.getMessage())["command"] for record in caplog.records if record.name == LOGGER] == [
        "view"
    ]


def test_the_outcome_class_reads_the_message_table() -> None:
    assert outcome_class("anything", False) == "ok"
    assert outcome_class("Error: Could not write /memories/a: b: no space left on device.", True) == "no_space"
    assert outcome_class("Error: Could not write /memories/a.md: the memory store is busy with other writers; "
                         "try again.", True) == "busy"
    assert outcome_class("Error: Could not write /memories/a.md: something the table lacks.", True) == "refused"
    assert outcome_class("Error: The command could not be completed because of an internal error.", True) == "internal"


def test_refmem_exec_log_commands_writes_the_line_to_stderr(tmp_path: Path) -> None:
    location = f"sqlite:///{tmp_path / 'memory.db'}"
    create = json.dumps({"command": "create", "path": SECRET_PATH, "file_text": SECRET_TEXT})
    done = refmem_cli("exec", "--store", location, "--tenant", "alice", "--log-commands", create,
                      environment=dict(os.environ))
    assert done.returncode == 0, done.stderr
    assert [(e["tenant"], e["command"], e["outcome"]) for e in _lines(done.stderr.splitlines())] == [
        ("alice", "create", "ok")
    ]
    quiet = refmem_cli("exec", "--store", location, "--tenant", "alice", create, environment=dict(os.environ))
    assert quiet.returncode == 1 and quiet.stderr == ""  # no line unless asked
