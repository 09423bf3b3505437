"""The storage interface's contract (refmem.store_protocol.Store), run against every store.

Each test takes `kind`, a store factory (storage_support.KINDS): `kind.open(where)` opens a store over
the backing location `where` (a directory for the filesystem store, a database for the stores to come);
two stores opened over one location hold the same memories, as two processes would. To run these tests
against a new store, add a `StoreKind` to KINDS: nothing here names a store.

What is checked is the interface's promise (what is at a path, the error kinds, the lock, the change
journal, the access records, tenants), not the handler's wording: the conformance suite checks the
results the model reads, over the handler.
"""

from __future__ import annotations

import os
import threading
import time
import unicodedata
from pathlib import Path
from typing import Iterator, List

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from storage_support import KINDS, StoreKind

from refmem import problems
from refmem._listing import list_tree
from refmem._store_extras import AccessRecords, ChangeJournal, Changes
from refmem.paths import VirtualPath, parse_path
from refmem.problems import DIR, FILE
from refmem.store_protocol import Store, TenantError, TenantStore, tenant_name


@pytest.fixture(params=KINDS, ids=[kind.name for kind in KINDS])
def kind(request: pytest.FixtureRequest) -> StoreKind:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def where(tmp_path: Path) -> Path:
    return tmp_path / "store"


@pytest.fixture
def store(kind: StoreKind, where: Path) -> Iterator[Store]:
    opened = kind.open(where)
    yield opened
    opened.close()


def need(store: Store, capability: type) -> None:
    """Skip for a store without the optional protocol the test is about (D-STORE-LAYERS: the bare directory store
    keeps no journal, no access records)."""
    if not isinstance(store, capability):
        pytest.skip(f"this store has no {capability.__name__} (an optional protocol)")


def vp(relative: str = "") -> VirtualPath:
    return parse_path("/memories" + ("/" + relative if relative else ""))


def put(store: Store, relative: str, data: bytes = b"x\n") -> None:
    with store.locked():
        store.write_new(vp(relative), data)


def read(store: Store, relative: str) -> bytes:
    with store.open_regular(vp(relative)) as opened:
        return opened.read_all()


# --- what is where ------------------------------------------------------------------------------


def test_entry_says_what_is_at_a_path(store: Store) -> None:
    put(store, "notes/a.md", b"12345")
    assert store.entry(vp()) == (DIR, 0)
    assert store.entry(vp("notes")) == (DIR, 0)
    assert store.entry(vp("notes/a.md")) == (FILE, 5)
    assert store.entry(vp("notes/missing.md")) is None
    assert store.entry(vp("missing/a.md")) is None
    assert store.entry(parse_path("/memories/notes/a.md/")) is None  # a trailing slash names a folder
    assert store.entry(parse_path("/memories/notes/")) == (DIR, 0)


def test_open_regular_reads_whole_or_in_chunks(store: Store) -> None:
    data = bytes(range(256)) * 5000
    put(store, "big.bin", data)
    with store.open_regular(vp("big.bin")) as opened:
        assert opened.size == len(data)
        assert b"".join(opened.chunks()) == data
    with store.open_regular(vp("big.bin")) as opened:
        assert opened.read_all() == data
    with pytest.raises(problems.NotRegular) as refused:
        store.open_regular(vp())
    assert refused.value.kind == DIR
    with pytest.raises(problems.Missing):
        store.open_regular(vp("nothing.md"))


def test_list_tree_is_sorted_depth_first_bounded_and_filtered(store: Store) -> None:
    for name in ("b/z.md", "b/a.md", "a.md", "c/d/e/deep.md", ".hidden/x.md", "node_modules/m.js", "b/NOPE.md"):
        put(store, name)
    found, truncated = list_tree(store, vp(), 2, 100, lambda name: name != "NOPE.md")
    assert not truncated
    assert [("/".join(item.parts), item.kind) for item in found] == [
        ("a.md", FILE), ("b", DIR), ("b/a.md", FILE), ("b/z.md", FILE), ("c", DIR), ("c/d", DIR),
    ]
    assert [item.size for item in found if item.kind == FILE] == [2, 2, 2]
    few, cut = list_tree(store, vp(), 2, 3, lambda name: True)
    whole = list_tree(store, vp(), 2, 100, lambda name: True)[0]
    assert cut and len(few) == 3 and set(few) <= set(whole)  # which ones is the store's (D-VIEW-LIST-CAP)
    assert few[0].parts == ("a.md",) and few[1].parts == ("b",)  # the first level is read first, sorted
    with pytest.raises(problems.Missing):
        list_tree(store, vp("absent"), 2, 10, lambda name: True)


def test_extent_counts_levels_and_the_longest_path(store: Store) -> None:
    put(store, "top/a/b/c.md")
    put(store, "top/x.md")
    assert store.extent(vp("top"), 10) == (3, len("a/b/c.md") + 1)
    assert store.extent(vp("top"), 1)[0] <= 2  # counting stops past the depth asked about


# --- changes --------------------------------------------------------------------------------------


def test_write_new_never_replaces_and_makes_parents(store: Store) -> None:
    put(store, "a/b/c.md", b"one")
    with pytest.raises(problems.Exists):
        put(store, "a/b/c.md", b"two")
    with pytest.raises(problems.Exists):
        put(store, "a/b", b"two")
    assert read(store, "a/b/c.md") == b"one"
    with pytest.raises(problems.ParentNotDir) as refused:
        put(store, "a/b/c.md/d.md")
    assert refused.value.depth == 3
    assert store.entry(vp("a/b/c.md")) == (FILE, 3)


def test_an_edit_replaces_only_what_it_read(kind: StoreKind, where: Path, store: Store) -> None:
    put(store, "e.md", b"old")
    with store.locked(), store.open_edit(vp("e.md"), 100) as edit:
        assert edit.data == b"old"
        edit.replace(b"new")
    assert read(store, "e.md") == b"new"
    other = kind.open(where)
    try:
        with store.open_edit(vp("e.md"), 100) as edit:  # read outside the lock: someone writes meanwhile
            with other.locked():
                other.write_new(vp("theirs.md"), b"theirs")
                other.delete(vp("e.md"))
                other.rename(vp("theirs.md"), vp("e.md"))
            kept = store.history(vp("e.md")) if hasattr(store, "history") else None
            with pytest.raises(problems.OsFailure) as refused:
                edit.replace(b"mine")  # takes the lock, finds another file than the one read
            if kept is not None:  # nothing of the refused write is kept: no version of what it would replace
                assert store.history(vp("e.md")) == kept
        assert refused.value.code == "changed"
    finally:
        other.close()
    assert read(store, "e.md") == b"theirs"
    with pytest.raises(problems.TooBig):
        with store.locked(), store.open_edit(vp("e.md"), 3):
            pass


def test_delete_removes_a_file_or_a_whole_folder(store: Store) -> None:
    for name in ("f/a.md", "f/g/b.md", "f/g/h/c.md", "keep.md"):
        put(store, name)
    with store.locked():
        store.delete(vp("f"))
        store.delete(vp("keep.md"))
        with pytest.raises(problems.Missing):
            store.delete(vp("f"))
    assert store.entry(vp("f")) is None and store.entry(vp("keep.md")) is None
    assert list_tree(store, vp(), 2, 10, lambda name: True) == ([], False)


def test_rename_moves_never_replaces_and_makes_parents(store: Store) -> None:
    put(store, "a.md", b"a")
    put(store, "b.md", b"b")
    put(store, "dir/inner.md", b"i")
    with store.locked():
        with pytest.raises(problems.Exists):
            store.rename(vp("a.md"), vp("b.md"))
        store.rename(vp("a.md"), vp("x/y/a2.md"))
        store.rename(vp("dir"), vp("x/dir2"))
        with pytest.raises(problems.Missing):
            store.rename(vp("a.md"), vp("z.md"))
    assert read(store, "b.md") == b"b" and read(store, "x/y/a2.md") == b"a"
    assert read(store, "x/dir2/inner.md") == b"i"
    assert store.entry(vp("a.md")) is None and store.entry(vp("dir")) is None


def test_the_lock_is_exclusive_between_stores(kind: StoreKind, where: Path, store: Store) -> None:
    other = kind.open(where)
    order: List[str] = []
    holding = threading.Event()

    def second() -> None:
        holding.wait()
        with other.locked():
            order.append("second")

    thread = threading.Thread(target=second)
    thread.start()
    try:
        with store.locked():
            holding.set()
            thread.join(0.2)  # the other store waits (it cannot get the lock while this one holds it)
            order.append("first")
    finally:
        thread.join()
        other.close()
    assert order == ["first", "second"]


def test_a_mutation_outside_the_lock_takes_it(kind: StoreKind, where: Path, store: Store) -> None:
    other = kind.open(where)
    done = threading.Event()

    def write() -> None:
        other.write_new(vp("later.md"), b"x")  # not inside other.locked(): the store takes the lock itself
        done.set()

    try:
        with store.locked():
            thread = threading.Thread(target=write)
            thread.start()
            assert not done.wait(0.2)
            assert store.entry(vp("later.md")) is None
        thread.join()
    finally:
        other.close()
    assert done.is_set() and store.entry(vp("later.md")) == (FILE, 1)


# --- the change journal ---------------------------------------------------------------------------


def changed(store: Store, since: Changes) -> Changes:
    now = store.changes_since(since.generation)
    assert now.generation >= since.generation
    return now


def test_every_mutation_is_in_the_change_journal(store: Store) -> None:
    need(store, ChangeJournal)
    start = store.changes_since(0)
    assert start.paths is None  # a generation it never gave out: rescan
    assert store.changes_since(start.generation) == (start.generation, ())
    put(store, "a/one.md")
    after_create = changed(store, start)
    assert after_create.paths == ("/memories/a/one.md",)
    with store.locked():
        with store.open_edit(vp("a/one.md"), 100) as edit:
            edit.replace(b"edited")
        store.rename(vp("a"), vp("b"))
    after_rename = changed(store, after_create)
    assert after_rename.paths == ("/memories/a", "/memories/a/one.md", "/memories/b")
    with store.locked():
        store.delete(vp("b"))
    assert changed(store, after_rename).paths == ("/memories/b",)
    assert changed(store, start).paths == ("/memories/a", "/memories/a/one.md", "/memories/b")
    unchanged = store.changes_since(changed(store, start).generation)
    assert unchanged.paths == ()


def test_reading_changes_nothing_in_the_journal(store: Store) -> None:
    need(store, ChangeJournal)
    put(store, "r.md")
    mark = store.changes_since(0)
    store.entry(vp("r.md"))
    read(store, "r.md")
    list_tree(store, vp(), 2, 10, lambda name: True)
    assert store.changes_since(mark.generation) == (mark.generation, ())


def test_a_failed_mutation_may_be_recorded_but_a_change_never_goes_unrecorded(store: Store) -> None:
    need(store, ChangeJournal)
    put(store, "a.md")
    mark = store.changes_since(0)
    with pytest.raises(problems.Exists):
        put(store, "a.md")
    seen = store.changes_since(mark.generation)
    assert seen.paths in ((), ("/memories/a.md",))


def test_another_store_on_the_same_memories_sees_the_changes(kind: StoreKind, where: Path, store: Store) -> None:
    need(store, ChangeJournal)
    other = kind.open(where)
    try:
        mark = other.changes_since(0)
        put(store, "shared.md")
        assert other.changes_since(mark.generation).paths == ("/memories/shared.md",)
    finally:
        other.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_another_process_sees_the_changes_and_this_one_sees_its(kind: StoreKind, where: Path, store: Store) -> None:
    need(store, ChangeJournal)
    if not kind.processes:
        pytest.skip(f"the {kind.name} store lives in one process")
    mark = store.changes_since(0)
    pid = os.fork()
    if pid == 0:  # the child: its own store over the same memories
        code = 1
        try:
            child = kind.open(where)
            put(child, "from-child.md")
            child.close()
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    seen = store.changes_since(mark.generation)
    assert seen.paths == ("/memories/from-child.md",)
    put(store, "from-parent.md")
    assert store.changes_since(seen.generation).paths == ("/memories/from-parent.md",)


# --- access records -------------------------------------------------------------------------------


def test_a_use_is_recorded_carried_by_rename_and_dropped_by_delete(store: Store) -> None:
    need(store, AccessRecords)
    put(store, "u.md")
    with store.open_regular(vp("u.md")) as opened:
        opened.read_all()
    store.record_use(vp("u.md"), opened)  # the file was changed just now: a store may skip the record
    used = store.last_access(vp("u.md"))
    assert used is None or abs(used - time.time()) < 60
    with store.locked():
        store.rename(vp("u.md"), vp("v.md"))
    moved = store.last_access(vp("v.md"))
    assert moved is not None and abs(moved - time.time()) < 60  # a rename counts as a use of the new path
    with store.locked():
        store.delete(vp("v.md"))
    assert store.last_access(vp("v.md")) is None  # a delete drops the path's records


# --- tenants --------------------------------------------------------------------------------------


def test_tenants_never_see_each_other(store: Store) -> None:
    need(store, TenantStore)
    alice, bob = store.for_tenant("alice"), store.for_tenant("bob")
    try:
        put(alice, "secret.md", b"alice's")
        put(bob, "secret.md", b"bob's")
        put(store, "shared.md", b"default")
        assert read(alice, "secret.md") == b"alice's" and read(bob, "secret.md") == b"bob's"
        for one in (alice, bob):
            assert [item.parts for item in list_tree(one, vp(), 2, 10, lambda name: True)[0]] == [("secret.md",)]
            assert one.entry(vp("shared.md")) is None
        assert [item.parts for item in list_tree(store, vp(), 2, 10, lambda name: True)[0]] == [("shared.md",)]
        if isinstance(bob, ChangeJournal):  # another tenant's change is not one of bob's
            mark = bob.changes_since(0)
            put(alice, "more.md")
            assert bob.changes_since(mark.generation) == (mark.generation, ())
        with pytest.raises(TenantError):
            alice.for_tenant("carol")  # a tenant's store has no tenants
    finally:
        alice.close()
        bob.close()


@pytest.mark.parametrize(
    "name",
    ["", "..", ".", "a/b", "a\\b", "a\0b", "Alice", "ALICE", "alice ", " alice", "-alice", "_alice", "al.ice",
     "alicé", "ａlice", "x" * 64, "con", "nul", "com1", "lpt9", "a\nb", "\u212a", 7, None, b"alice"],
)
def test_a_tenant_name_outside_the_one_spelling_is_refused(name: object) -> None:
    with pytest.raises(TenantError):
        tenant_name(name)


def test_accepted_tenant_names() -> None:
    for name in ("alice", "a", "0", "tenant-01", "org_7-x", "x" * 63, "con1", "console"):
        assert tenant_name(name) == name


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=70), st.text(max_size=70))
def test_two_accepted_tenant_names_never_collide(first: str, second: str) -> None:
    """Distinct accepted names stay distinct however a filesystem or database compares names."""
    accepted = []
    for name in (first, second, first.lower(), second.upper()):
        try:
            accepted.append(tenant_name(name))
        except TenantError:
            continue
    for a in accepted:
        for b in accepted:
            if a != b:
                for fold in (str.casefold, lambda s: unicodedata.normalize("NFKC", s).casefold()):
                    assert fold(a) != fold(b)
        assert a.isascii() and a == a.lower() and "/" not in a and "." not in a and "\0" not in a
