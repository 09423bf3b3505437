"""`refmem exec --profile hosted` and `refmem serve --profile hosted` (D-HOSTED-CLI): the hosted-store profile
(refmem/stores/hosted.py, D-HOSTED-*) over a database store from the command line. Each refusal is shown to be the
profile's: the same input passes without it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest
from sql_store_support import refmem_cli

from refmem import protocol as p
from refmem.messages import IO_REASONS
from refmem.stores.hosted import MAX_CONTENT_BYTES, MAX_NAMES

DEEP = "/memories/" + "/".join(["d"] * MAX_NAMES) + "/x.md"
"""A path of MAX_NAMES + 1 names below /memories: past the hosted stores' rule, within the handler's limits only where a
reset's options raise `max_depth` (the default, 16, refuses it first)."""
HUGE = "x" * (MAX_CONTENT_BYTES + 1)
REFUSED = {
    "deep": ({"command": "create", "path": DEEP, "file_text": "a"}, IO_REASONS["hosted_path"]),
    "nfd": ({"command": "create", "path": "/memories/cafe\u0301.md", "file_text": "a"}, IO_REASONS["hosted_path"]),
    "huge": ({"command": "create", "path": "/memories/huge.md", "file_text": HUGE}, IO_REASONS["hosted_size"]),
}


def _exec(location: str, tool_input: Dict[str, Any], *flags: str) -> subprocess.CompletedProcess:
    return subprocess.run(  # noqa: S603  # our own module
        [sys.executable, "-m", "refmem", "exec", "--store", location, "--tenant", "alice", *flags, "-"],
        input=json.dumps(tool_input), capture_output=True, text=True, timeout=120, check=False,
        env=dict(os.environ),
    )


@pytest.mark.parametrize("case", ["nfd", "huge"])
def test_exec_profile_hosted_refuses_what_a_hosted_store_refuses(tmp_path: Path, case: str) -> None:
    tool_input, reason = REFUSED[case]
    location = f"sqlite:///{tmp_path / 'memory.db'}"
    refused = _exec(location, tool_input, "--profile", "hosted")
    assert refused.returncode == 1 and reason in refused.stdout, (refused.stdout[:300], refused.stderr)
    look = {"command": "view", "path": tool_input["path"]}
    assert _exec(location, look).returncode == 1  # nothing was written
    plain = _exec(location, tool_input)  # without the profile the same create succeeds
    assert plain.returncode == 0, plain.stdout[:300]
    assert _exec(location, look).returncode == 0


def test_exec_profile_needs_a_database_store(tmp_path: Path) -> None:
    root = tmp_path / "memories"
    root.mkdir()
    done = refmem_cli("exec", "--root", str(root), "--profile", "hosted", '{"command": "view", "path": "/memories"}',
                      environment={k: v for k, v in os.environ.items() if k != "REFMEM_STORE"})
    assert done.returncode == 2 and "--profile is for a database store" in done.stderr


def _serve(root: Path, inputs: List[Dict[str, Any]], *flags: str) -> Tuple[subprocess.CompletedProcess, List[str]]:
    root.mkdir(exist_ok=True)
    lines: List[Dict[str, Any]] = [
        {p.CMD: p.CMD_START, p.VERSION_FIELD: p.VERSION},
        {p.CMD: p.CMD_RESET, p.SEQ: 1, p.ROOT: str(root), p.TENANT: "alice",
         p.OPTIONS: {"limits": {"max_depth": 30}}},
    ]
    lines += [{p.CMD: p.CMD_EXECUTE, p.SEQ: 2 + n, p.INPUT: tool_input} for n, tool_input in enumerate(inputs)]
    done = subprocess.run(  # noqa: S603  # our own module
        [sys.executable, "-m", "refmem", "serve", *flags],
        input="".join(json.dumps(line) + "\n" for line in lines), capture_output=True, text=True, timeout=120,
        check=False, env=dict(os.environ),
    )
    assert done.returncode == 0, done.stderr
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    assert all(reply.get(p.OK, True) for reply in replies), replies
    return done, [str(reply) for reply in replies[2:]]


@pytest.mark.parametrize("mode", ["sqlite", "location"])
def test_serve_profile_hosted_refuses_what_a_hosted_store_refuses(tmp_path: Path, mode: str) -> None:
    store = "sqlite" if mode == "sqlite" else f"sqlite:///{tmp_path / 'one.db'}"
    inputs = [REFUSED["deep"][0], REFUSED["huge"][0], {"command": "view", "path": "/memories"}]
    _, hosted = _serve(tmp_path / "hosted", inputs, "--store", store, "--profile", "hosted")
    assert IO_REASONS["hosted_path"] in hosted[0] and IO_REASONS["hosted_size"] in hosted[1]
    assert "huge.md" not in hosted[2] and "/d" not in hosted[2]  # nothing was written
    store = "sqlite" if mode == "sqlite" else f"sqlite:///{tmp_path / 'two.db'}"
    _, plain = _serve(tmp_path / "plain", inputs, "--store", store)  # the same inputs pass without the profile
    assert "hosted" not in plain[0] + plain[1] and "huge.md" in plain[2]


def test_serve_profile_needs_a_database_store() -> None:
    done = refmem_cli("serve", "--profile", "hosted", environment={k: v for k, v in os.environ.items()
                                                                   if k != "REFMEM_STORE"})
    assert done.returncode == 2 and "--profile is for serve --store sqlite or --store LOCATION" in done.stderr
