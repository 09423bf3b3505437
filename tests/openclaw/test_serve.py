"""`refmem serve` runs the OpenClaw tools under the session's options, as it runs the memory tool: the
allow-list and read-only apply to memory_get and memory_search too (D-OPENCLAW-ALLOW)."""

from __future__ import annotations

import json
import os
import pathlib
from typing import Any, Dict, List

from refmem import serve

from .openclaw_support import paths_of, write

SECRET = "kept-out-of-reach"


def session_with(root: pathlib.Path, options: Dict[str, Any]) -> serve.Session:
    session = serve.Session()
    assert serve.handle_line(session, json.dumps({"cmd": "start", "version": 1}))["ready"]
    reply = serve.handle_line(session, json.dumps({"cmd": "reset", "seq": 1, "root": str(root), "options": options}))
    assert reply == {"seq": 1, "ok": True}
    return session


def execute(session: serve.Session, tool: str, tool_input: Dict[str, Any]) -> Dict[str, Any]:
    reply = serve.handle_line(session, json.dumps({"cmd": "execute", "seq": 2, "tool": tool, "input": tool_input}))
    assert reply is not None and "error" not in reply, reply
    return reply


def everything(root: pathlib.Path) -> List[str]:
    return sorted(str(path.relative_to(root)) for path in root.rglob("*"))


def seed(case: pathlib.Path) -> pathlib.Path:
    write(case, "MEMORY.md", f"- {SECRET}: the quokka plan\n")
    write(case, "memory/notes/a.md", "quokka sighting in the park\n")
    return case / "memories"


def test_allow_list_applies_to_memory_get_and_memory_search(case: pathlib.Path) -> None:
    session = session_with(seed(case), {"allow": ["memory/notes/*.md"]})
    refused = execute(session, "memory_get", {"path": "MEMORY.md"})
    assert refused["is_error"] and refused["result"]["code"] == "MEMORY_PATH_NOT_ALLOWED"
    assert SECRET not in refused["output"]
    assert execute(session, "memory_get", {"path": "memory/notes/a.md"})["result"]["text"].startswith("quokka")
    found = execute(session, "memory_search", {"query": "quokka", "minScore": 0})
    assert [hit["path"] for hit in found["result"]["results"]] == ["memory/notes/a.md"]
    assert SECRET not in found["output"]


def test_read_only_search_writes_nothing(case: pathlib.Path) -> None:
    root = seed(case)
    before = everything(root)
    session = session_with(root, {"read_only": True})
    found = execute(session, "memory_search", {"query": "quokka", "minScore": 0})
    assert {hit["path"] for hit in found["result"]["results"]} == {"MEMORY.md", "memory/notes/a.md"}
    assert execute(session, "memory_get", {"path": "MEMORY.md"})["result"]["status"] == "ok"
    assert everything(root) == before
    assert not os.path.exists(root / ".refmem")


def test_no_options_keep_the_shared_index(case: pathlib.Path) -> None:
    root = seed(case)
    session = session_with(root, {})
    assert len(execute(session, "memory_search", {"query": "quokka", "minScore": 0})["result"]["results"]) == 2
    assert (root / ".refmem" / "openclaw-index.sqlite").is_file()


def test_a_tenants_reset_reads_and_searches_that_tenants_memories_only(case: pathlib.Path) -> None:
    """A reset with a tenant: memory_get and memory_search see what the memory tool wrote for that tenant, and
    nothing of the default namespace (the reset's root) nor of another tenant (D-OPENCLAW-STORES)."""
    root = seed(case)  # the default namespace: SECRET in MEMORY.md, a quokka note
    session = serve.Session()
    assert serve.handle_line(session, json.dumps({"cmd": "start", "version": 1}))["ready"]
    for seq, (tenant, word) in enumerate((("alice", "wombat"), ("bob", "platypus")), 1):
        reset = {"cmd": "reset", "seq": seq, "root": str(root), "options": {}, "tenant": tenant}
        assert serve.handle_line(session, json.dumps(reset)) == {"seq": seq, "ok": True}
        made = execute(session, "memory", {"command": "create", "path": "/memories/memory/log.md",
                                           "file_text": f"{tenant}'s {word} notes\n"})
        assert not made["is_error"], made
        found = execute(session, "memory_search", {"query": f"quokka {word} wombat", "minScore": 0})
        assert paths_of(found["result"]) == ["memory/log.md"], found
        assert word in found["output"] and SECRET not in found["output"] and "quokka" not in found["output"]
        assert (tenant == "alice") or "wombat" not in found["output"]  # bob never sees alice's note
        got = execute(session, "memory_get", {"path": "MEMORY.md"})
        assert got["result"]["status"] == "not_found" and SECRET not in got["output"], got
