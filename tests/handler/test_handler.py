"""The handler over the storage interface: what no conformance case can say, since a case sees one store.

* The handler needs nothing but the interface: the same commands over the filesystem store and over
  `storage_support.DictStore` and over the SQLite store give the same results, byte for byte.
* Whatever a store raises, `execute` returns a result (D-INTERNAL for the unforeseen), never raises.
* Who owns a store: a handler closes what it opened (a path, a tenant's store), never what it was given.
* Tenants through the handler, and access records asked of the store only when the handler may write.
"""

from __future__ import annotations

import contextlib
import random
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional

import pytest
from storage_support import DictStore

from refmem import Limits, MemoryHandler, Result
from refmem._store_extras import Changes
from refmem.messages import render
from refmem.paths import VirtualPath
from refmem.store_protocol import Store, TenantError
from refmem.stores.sqlite import SqliteStore
from refmem.tracked import TrackedDirectory

INTERNAL = render("internal_error")
BIG = ("line of a large file\n" * 60_000).encode()  # over a megabyte: the view streams it


def script() -> List[Dict[str, Any]]:
    """Commands that visit every command's successes and refusals, then a seeded random tail."""
    fixed: List[Dict[str, Any]] = [
        {"command": "view", "path": "/memories"},
        {"command": "create", "path": "/memories/notes/today.md", "file_text": "one\ntwo\nthree\n"},
        {"command": "create", "path": "/memories/notes/today.md", "file_text": "again"},
        {"command": "create", "path": "/memories/notes/today.md/x.md", "file_text": "under a file"},
        {"command": "create", "path": "/memories/crlf.md", "file_text": "a\r\nb\r\n"},
        {"command": "create", "path": "/memories/deep/a/b/c/d.md", "file_text": "deep\n"},
        {"command": "view", "path": "/memories/notes/today.md"},
        {"command": "view", "path": "/memories/notes/today.md", "view_range": [2, -1]},
        {"command": "view", "path": "/memories/notes/today.md", "view_range": [5, 6]},
        {"command": "view", "path": "/memories/notes/today.md/"},
        {"command": "view", "path": "/memories/notes/", "view_range": [1, 2]},
        {"command": "view", "path": "/memories/nothing.md"},
        {"command": "view", "path": "/memories/crlf.md"},
        {"command": "str_replace", "path": "/memories/notes/today.md", "old_str": "two", "new_str": "2"},
        {"command": "str_replace", "path": "/memories/notes/today.md", "old_str": "e", "new_str": "E"},
        {"command": "str_replace", "path": "/memories/notes/today.md", "old_str": "absent", "new_str": ""},
        {"command": "str_replace", "path": "/memories/notes", "old_str": "a", "new_str": "b"},
        {"command": "str_replace", "path": "/memories/crlf.md", "old_str": "a\nb", "new_str": "c\nd"},
        {"command": "insert", "path": "/memories/notes/today.md", "insert_line": 1, "insert_text": "inserted"},
        {"command": "insert", "path": "/memories/notes/today.md", "insert_line": 99, "insert_text": "no"},
        {"command": "insert", "path": "/memories/absent.md", "insert_line": 0, "insert_text": "no"},
        {"command": "rename", "old_path": "/memories/notes", "new_path": "/memories/notes/inner"},
        {"command": "rename", "old_path": "/memories/notes/today.md", "new_path": "/memories/crlf.md"},
        {"command": "rename", "old_path": "/memories/notes/today.md", "new_path": "/memories/notes/today.md"},
        {"command": "rename", "old_path": "/memories/notes/today.md", "new_path": "/memories/crlf.md/x"},
        {"command": "rename", "old_path": "/memories/notes/today.md", "new_path": "/memories/moved/"},
        {"command": "rename", "old_path": "/memories/deep", "new_path": "/memories/x/y/z/w/v/u/t"},
        {"command": "rename", "old_path": "/memories/notes", "new_path": "/memories/archive/2024/notes"},
        {"command": "rename", "old_path": "/memories/absent", "new_path": "/memories/b"},
        {"command": "view", "path": "/memories"},
        {"command": "view", "path": "/memories/archive"},
        {"command": "delete", "path": "/memories/archive"},
        {"command": "delete", "path": "/memories/archive"},
        {"command": "delete", "path": "/memories/crlf.md/"},
        {"command": "delete", "path": "/memories"},
        {"command": "view", "path": "/memories"},
    ]
    rng = random.Random(818)
    names = ["a.md", "b.md", "f/c.md", "f/g/d.md", "f", "f/g", "h"]
    texts = ["x\n", "x\ny\nx\n", "", "alpha beta\n" * 3]
    for _ in range(300):
        command = rng.choice(["view", "view", "create", "str_replace", "insert", "delete", "rename"])
        path = "/memories/" + rng.choice(names)
        if command == "view":
            fixed.append({"command": "view", "path": path})
        elif command == "create":
            fixed.append({"command": "create", "path": path, "file_text": rng.choice(texts)})
        elif command == "str_replace":
            fixed.append({"command": command, "path": path, "old_str": rng.choice(["x", "y", "alpha"]), "new_str": "z"})
        elif command == "insert":
            fixed.append({"command": command, "path": path, "insert_line": rng.randrange(-1, 5), "insert_text": "i"})
        elif command == "delete":
            fixed.append({"command": command, "path": path})
        else:
            fixed.append({"command": command, "old_path": path, "new_path": "/memories/" + rng.choice(names)})
    return fixed


@pytest.mark.parametrize(
    "options",
    [{}, {"allow": ["*.md", "notes/*"]}, {"limits": Limits(max_depth=6, max_view_chars=40)}],
    ids=["defaults", "allow-list", "small-limits"],
)
def test_every_store_gives_the_same_results(tmp_path: Path, options: Dict[str, Any]) -> None:
    on_disk = MemoryHandler(tmp_path / "disk", **options)
    in_dict = MemoryHandler(DictStore(str(tmp_path / "dict")), **options)
    database = SqliteStore(tmp_path / "memory.db")
    in_sqlite = MemoryHandler(database, **options)
    try:
        for handler in (on_disk, in_dict, in_sqlite):  # a file too large to read whole, put there before the model came
            with handler.store.locked():
                handler.store.write_new(VirtualPath(("big.md",)), BIG)
        differing = []
        for tool_input in script() + [{"command": "view", "path": "/memories/big.md", "view_range": [59_990, -1]}]:
            expected = on_disk.execute(tool_input)
            for other in (in_dict, in_sqlite):
                got = other.execute(tool_input)
                if expected != got:
                    differing.append((tool_input, expected, got))
        assert differing == []
        assert on_disk.execute({"command": "view", "path": "/memories"}).output.count("\n") > 2
    finally:
        on_disk.close()
        in_dict.close()
        database.close()


# --- a store that fails in unforeseen ways --------------------------------------------------------


class Broken(Exception):
    """Nothing the interface speaks of: a bug of the store."""


class RaisingStore:
    """Every method of the interface raises Broken (or, with `after`, only that method does)."""

    def __init__(self, where: str, only: Optional[str] = None) -> None:
        self._inner = DictStore(where)
        self._only = only

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._inner, name)
        if self._only is not None and name != self._only:
            return method

        def fail(*args: Any, **kwargs: Any) -> Any:
            raise Broken(name)

        return fail


STORE_METHODS = [
    "entry", "open_regular", "children", "extent", "write_new", "open_edit", "delete", "rename", "locked",
    "record_use", "last_access", "changes_since", "for_tenant", "close",
]
COMMANDS = [
    {"command": "view", "path": "/memories"},
    {"command": "view", "path": "/memories/a.md"},
    {"command": "create", "path": "/memories/n.md", "file_text": "n"},
    {"command": "str_replace", "path": "/memories/a.md", "old_str": "a", "new_str": "b"},
    {"command": "insert", "path": "/memories/a.md", "insert_line": 0, "insert_text": "i"},
    {"command": "delete", "path": "/memories/a.md"},
    {"command": "rename", "old_path": "/memories/d", "new_path": "/memories/e"},
]


def _seeded(where: str) -> DictStore:
    store = DictStore(where)
    with store.locked():
        store.write_new(VirtualPath(("a.md",)), b"a\n")
        store.write_new(VirtualPath(("d", "x.md")), b"x\n")
    return store


@pytest.mark.parametrize("method", STORE_METHODS)
def test_a_store_that_raises_the_unforeseen_gives_the_internal_result(tmp_path: Path, method: str) -> None:
    _seeded(str(tmp_path))
    store = RaisingStore(str(tmp_path), only=method)
    assert isinstance(store, Store) is False or True  # a proxy: the handler takes it for what it does
    handler = MemoryHandler(store, allow=None)  # type: ignore[arg-type]
    results = [handler.execute(command) for command in COMMANDS]
    for command, result in zip(COMMANDS, results):
        assert isinstance(result, Result)
        assert result == INTERNAL or method in ("record_use", "last_access", "changes_since", "for_tenant",
                                                "close", "extent") or _untouched(method, command), (method, command)
    if method == "record_use":
        assert results[1] == Result("Here's the content of /memories/a.md with line numbers:\n     1\ta", False)
    handler.close()


def _untouched(method: str, command: Dict[str, Any]) -> bool:
    """Whether `command` never calls `method` (so its result owes nothing to the failure)."""
    calls = {
        "view": {"entry", "open_regular", "children"},
        "create": {"locked", "write_new"},
        "str_replace": {"locked", "open_edit"},
        "insert": {"locked", "open_edit"},
        "delete": {"locked", "delete"},
        "rename": {"locked", "entry", "rename"},
    }
    return method not in calls[command["command"]] or (command["command"] == "view" and method != _viewed(command))


def _viewed(command: Dict[str, Any]) -> str:
    return "children" if command["path"] == "/memories" else "open_regular"


def test_garbage_from_a_store_gives_the_internal_result(tmp_path: Path) -> None:
    class Garbage(DictStore):
        def entry(self, path: VirtualPath) -> Any:
            return "not an entry"

        def open_regular(self, path: VirtualPath, refuse_hard_links: bool = True) -> Any:
            return object()

        def children(self, *args: Any) -> Any:
            return 42

        @contextlib.contextmanager
        def locked(self) -> Iterator[None]:
            yield
            raise Broken("on the way out")

    _seeded(str(tmp_path))
    handler = MemoryHandler(Garbage(str(tmp_path)))
    for command in COMMANDS:
        assert handler.execute(command) == INTERNAL, command


# --- who owns the store ----------------------------------------------------------------------------


class Counting(DictStore):
    closed = 0
    uses = 0

    def close(self) -> None:
        type(self).closed += 1

    def record_use(self, path: VirtualPath, opened: object) -> None:
        type(self).uses += 1
        super().record_use(path, opened)

    def for_tenant(self, tenant: str) -> Counting:
        made = Counting(self.where)
        made.tenant = tenant
        made.space = DictStore(self.where, tenant).space
        return made


def test_a_handler_closes_what_it_opened_and_nothing_it_was_given(tmp_path: Path) -> None:
    Counting.closed = 0
    given = Counting(str(tmp_path))
    MemoryHandler(given).close()
    assert Counting.closed == 0
    tenant = MemoryHandler(given, tenant="alice")
    assert tenant.execute({"command": "create", "path": "/memories/a.md", "file_text": "a"}).is_error is False
    assert given.entry(VirtualPath(("a.md",))) is None  # alice's, not the default namespace's
    tenant.close()
    assert Counting.closed == 1


def test_a_handler_given_a_directory_serves_it_through_the_filesystem_store(tmp_path: Path) -> None:
    handler = MemoryHandler(tmp_path / "m")
    assert isinstance(handler.store, TrackedDirectory) and not hasattr(handler, "root")
    handler.close()


def test_a_handler_takes_a_path_or_a_store_and_nothing_else(tmp_path: Path) -> None:
    for wrong in (42, None, object(), b"/tmp"):
        with pytest.raises(TypeError):
            MemoryHandler(wrong)  # type: ignore[arg-type]


def test_access_records_are_asked_for_only_when_the_handler_may_write(tmp_path: Path) -> None:
    store = Counting(str(tmp_path))
    with store.locked():
        store.write_new(VirtualPath(("a.md",)), b"a")
    Counting.uses = 0
    view = {"command": "view", "path": "/memories/a.md"}
    MemoryHandler(store, read_only=True).execute(view)
    MemoryHandler(store, track_access=False).execute(view)
    MemoryHandler(store).execute({"command": "view", "path": "/memories/missing.md"})
    assert Counting.uses == 0
    MemoryHandler(store).execute(view)
    assert Counting.uses == 1


# --- tenants through the handler ---------------------------------------------------------------------


def test_a_tenant_of_a_directory_lives_in_its_own_folder(tmp_path: Path) -> None:
    root = tmp_path / "memories"
    alice = MemoryHandler(root, tenant="alice")
    plain = MemoryHandler(root)
    try:
        assert not alice.execute({"command": "create", "path": "/memories/a.md", "file_text": "alice"}).is_error
        assert (root / ".refmem" / "tenants" / "alice" / "a.md").read_text() == "alice"
        assert plain.execute({"command": "view", "path": "/memories/a.md"}).is_error
        assert plain.execute({"command": "view", "path": "/memories"}).output.count("\n") == 1
        assert "alice" in alice.execute({"command": "view", "path": "/memories/a.md"}).output
    finally:
        alice.close()
        plain.close()


@pytest.mark.parametrize("tenant", ["Alice", "../x", "", "a/b", "con"])
def test_a_refused_tenant_name_makes_nothing(tmp_path: Path, tenant: str) -> None:
    with pytest.raises(TenantError):
        MemoryHandler(tmp_path / "memories", tenant=tenant)
    assert not (tmp_path / "memories").exists()


def test_the_changes_of_a_handlers_commands_are_in_its_stores_journal(tmp_path: Path) -> None:
    handler = MemoryHandler(tmp_path / "m")
    try:
        mark = handler.store.changes_since(0)
        handler.execute({"command": "create", "path": "/memories/a.md", "file_text": "a"})
        handler.execute({"command": "view", "path": "/memories/a.md"})
        handler.execute({"command": "create", "path": "/memories/a.md", "file_text": "exists"})
        seen = handler.store.changes_since(mark.generation)
        assert isinstance(seen, Changes) and seen.paths == ("/memories/a.md",)
    finally:
        handler.close()
