"""Regressions for the second hardening pass: each test failed on the code before its fix.

Findings: (1) str_replace's unbounded line list, (4) the depth limit bypassed by rename and a delete
that failed on deep trees, (7) the bookkeeping folder planted by another program, (8) the allow-list
checked after the filesystem, (9) modes, (10) descriptors held until the cyclic collector ran.
The cost side of (1) is measured by tests/filesystem/test_growth.py.
"""

from __future__ import annotations

import gc
import os
import stat
from pathlib import Path
from typing import List

import pytest

from refmem import Limits, MemoryHandler
from refmem import _kernel as kernel
from refmem import _tree as tree
from refmem.expiry import prune, record_name

CANARY = "CANARY-hardening-7f3a"
WALKS = [pytest.param(False, id="fd-walk"), pytest.param(True, id="portable-walk")]


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


# --- (1) the "multiple occurrences" list is bounded (D-STR-LINES) --------------------------------


def test_multiple_occurrences_lists_at_most_the_cap_then_counts_the_rest(tmp_path: Path) -> None:
    handler = MemoryHandler(tmp_path / "m")
    handler.execute({"command": "create", "path": "/memories/a.txt", "file_text": "a\n" * 5000})
    result = handler.execute({"command": "str_replace", "path": "/memories/a.txt", "old_str": "a", "new_str": "b"})
    shown = ", ".join(str(n) for n in range(1, 101))
    assert result.is_error
    assert result.output == (
        f"No replacement was performed. Multiple occurrences of old_str `a` in lines: {shown} and 4,900 more. "
        "Please ensure it is unique"
    )
    assert (tmp_path / "m" / "a.txt").read_text() == "a\n" * 5000


# --- (4) depth: rename cannot build what no path may name; delete and prune work at any depth --


def _chain(base: Path, depth: int) -> Path:
    """A folder chain `depth` levels deep below `base`, built with relative steps (no long paths)."""
    here = os.open(str(base), os.O_RDONLY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=here)
            child = os.open("d", os.O_RDONLY, dir_fd=here)
            os.close(here)
            here = child
        fd = os.open("leaf.txt", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=here)
        os.write(fd, b"deep\n")
        os.close(fd)
    finally:
        os.close(here)
    return base


def test_rename_refuses_to_build_a_tree_deeper_than_the_limit(tmp_path: Path) -> None:
    handler = MemoryHandler(tmp_path / "m")
    deep = "/memories/" + "/".join(["a"] * 15) + "/f.md"
    assert not handler.execute({"command": "create", "path": deep, "file_text": "x"}).is_error
    other = "/memories/" + "/".join(["b"] * 15)
    assert not handler.execute({"command": "create", "path": other + "/g.md", "file_text": "y"}).is_error
    result = handler.execute({"command": "rename", "old_path": "/memories/a", "new_path": other + "/a"})
    assert result.is_error and "would have more than 16 names below /memories" in result.output
    assert (tmp_path / "m" / "a").is_dir()


def test_rename_refuses_a_path_longer_than_the_limit(tmp_path: Path) -> None:
    handler = MemoryHandler(tmp_path / "m", limits=Limits(max_path_bytes=64))
    assert not handler.execute({"command": "create", "path": "/memories/s/" + "x" * 40, "file_text": "x"}).is_error
    result = handler.execute({"command": "rename", "old_path": "/memories/s", "new_path": "/memories/" + "y" * 20})
    assert result.is_error and "more than 64 bytes" in result.output
    ok = handler.execute({"command": "rename", "old_path": "/memories/s", "new_path": "/memories/t"})
    assert not ok.is_error, ok.output


@pytest.mark.parametrize("portable", WALKS)
def test_delete_removes_a_tree_deeper_than_any_recursion(tmp_path: Path, portable: bool) -> None:
    root = tmp_path / "m"
    root.mkdir()
    depth = 1100 if not portable else 300  # the portable walk names host paths: PATH_MAX bounds it
    _chain(root, depth)
    handler = MemoryHandler(root, portable_walk=portable)
    try:
        result = handler.execute({"command": "delete", "path": "/memories/d"})
        assert result.output == "Successfully deleted /memories/d"
        assert not (root / "d").exists()
    finally:  # never leave a tree deeper than pytest's own (recursive) clean-up can remove
        if (root / "d").exists():
            top = kernel.RootDir(root, create=False)
            tree.remove(top.top, "d", os.lstat(root / "d"))
            top.close()


def test_prune_reaches_files_at_any_depth(tmp_path: Path) -> None:
    root = _chain(tmp_path, 200)
    old = 1_000_000.0
    here = os.open(str(root), os.O_RDONLY)
    for _ in range(200):
        child = os.open("d", os.O_RDONLY, dir_fd=here)
        os.close(here)
        here = child
    os.utime("leaf.txt", (old, old), dir_fd=here)
    os.close(here)
    report = prune(root, 86400.0)
    assert report.removed and report.removed[0].endswith("/leaf.txt")
    assert not (root / "d").exists()  # every folder it emptied went too


# --- (7) the bookkeeping folder planted by another program -----------------------------------


def _write_commands(name: str) -> List[dict]:
    return [
        {"command": "create", "path": f"/memories/{name}-new.md", "file_text": "x\n"},
        {"command": "str_replace", "path": f"/memories/{name}.md", "old_str": "a", "new_str": "b"},
        {"command": "insert", "path": f"/memories/{name}.md", "insert_line": 0, "insert_text": "c\n"},
        {"command": "rename", "old_path": f"/memories/{name}.md", "new_path": f"/memories/{name}-moved.md"},
        {"command": "delete", "path": f"/memories/{name}.md"},
    ]


@pytest.mark.parametrize("plant", ["fifo-lock", "file-bookkeeping", "link-bookkeeping", "hardlink-lock"])
def test_a_planted_bookkeeping_folder_gives_a_clear_error_and_never_hangs(tmp_path: Path, plant: str) -> None:
    root = tmp_path / "m"
    root.mkdir()
    (root / "f.md").write_text("a\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "lock").write_text(CANARY)
    if plant == "fifo-lock":
        (root / ".refmem").mkdir()
        os.mkfifo(root / ".refmem" / "lock")
    elif plant == "file-bookkeeping":
        (root / ".refmem").write_text("not a folder")
    elif plant == "link-bookkeeping":
        (root / ".refmem").symlink_to(outside)
    else:
        (root / ".refmem").mkdir()
        os.link(outside / "lock", root / ".refmem" / "lock")
    handler = MemoryHandler(root)
    for command in _write_commands("f"):
        result = handler.execute(command)
        assert result.is_error, (command, result.output)
        assert result.output.endswith(": the memory directory's own bookkeeping files are not usable."), result.output
        assert ".refmem" not in result.output and str(tmp_path) not in result.output
    assert (root / "f.md").read_text() == "a\n"
    assert (outside / "lock").read_text() == CANARY
    assert not handler.execute({"command": "view", "path": "/memories/f.md"}).is_error  # reads still work


def test_a_view_never_dates_a_record_hard_linked_outside(tmp_path: Path) -> None:
    root = tmp_path / "m"
    handler = MemoryHandler(root)
    handler.execute({"command": "create", "path": "/memories/old.md", "file_text": "x\n"})
    handler.close()
    os.utime(root / "old.md", (1_000_000, 1_000_000))  # old enough that a view records an access
    outside = tmp_path / "outside.txt"
    outside.write_text(CANARY)
    os.utime(outside, (2_000_000, 2_000_000))
    records = root / ".refmem" / "access"
    records.mkdir(parents=True, exist_ok=True)
    os.link(outside, records / record_name("/memories/old.md"))
    handler = MemoryHandler(root)
    assert not handler.execute({"command": "view", "path": "/memories/old.md"}).is_error
    assert outside.stat().st_mtime == 2_000_000 and outside.read_text() == CANARY
    assert (records / record_name("/memories/old.md")).stat().st_nlink == 1  # replaced by a record of our own


# --- (8) the allow-list comes before the filesystem (D-ALLOW, D-INPUT-ORDER) --------------------


@pytest.mark.parametrize("command", ["view", "delete", "rename_old", "rename_new"])
def test_a_refused_name_reads_the_same_whether_it_exists_or_not(tmp_path: Path, command: str) -> None:
    root = tmp_path / "m"
    root.mkdir()
    (root / "secret.key").write_text("k")
    (root / "link.key").symlink_to(root / "secret.key")
    (root / "ok.md").write_text("ok")
    handler = MemoryHandler(root, allow=["*.md"])

    def run(name: str) -> str:
        path = f"/memories/{name}"
        if command == "rename_old":
            return handler.execute({"command": "rename", "old_path": path, "new_path": "/memories/n.md"}).output
        if command == "rename_new":
            return handler.execute({"command": "rename", "old_path": "/memories/ok.md", "new_path": path}).output
        return handler.execute({"command": command, "path": path}).output

    answers = {name: run(name).replace(name, "NAME") for name in ("secret.key", "nothing.key", "link.key")}
    assert len(set(answers.values())) == 1, answers
    assert answers["secret.key"] == "Error: The path /memories/NAME is not one of the allowed memory paths."
    assert (root / "secret.key").read_text() == "k" and (root / "ok.md").exists()


# --- (9) modes (D-MODE) -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command, action",
    [
        ({"command": "str_replace", "path": "/memories/ro.md", "old_str": "a", "new_str": "b"}, "write"),
        ({"command": "insert", "path": "/memories/ro.md", "insert_line": 0, "insert_text": "b\n"}, "write"),
        ({"command": "delete", "path": "/memories/ro.md"}, "delete"),
    ],
)
def test_a_file_its_owner_may_not_write_is_not_changed(tmp_path: Path, command: dict, action: str) -> None:
    root = tmp_path / "m"
    root.mkdir()
    (root / "ro.md").write_text("a\n")
    (root / "ro.md").chmod(0o444)
    result = MemoryHandler(root).execute(command)
    assert result.output == f"Error: Could not {action} /memories/ro.md: the file is read-only."
    assert (root / "ro.md").read_text() == "a\n"


def test_a_folder_holding_a_read_only_file_keeps_it(tmp_path: Path) -> None:
    root = tmp_path / "m"
    (root / "d").mkdir(parents=True)
    (root / "d" / "ro.md").write_text("keep\n")
    (root / "d" / "ro.md").chmod(0o444)
    result = MemoryHandler(root).execute({"command": "delete", "path": "/memories/d"})
    assert result.output == "Error: Could not delete /memories/d: a file inside it is read-only."
    assert (root / "d" / "ro.md").read_text() == "keep\n"


def test_special_mode_bits_never_reach_new_content(tmp_path: Path) -> None:
    root = tmp_path / "m"
    root.mkdir()
    (root / "s.md").write_text("a\n")
    (root / "s.md").chmod(0o6755)
    edit = {"command": "str_replace", "path": "/memories/s.md", "old_str": "a", "new_str": "b"}
    result = MemoryHandler(root).execute(edit)
    assert not result.is_error, result.output
    mode = stat.S_IMODE((root / "s.md").stat().st_mode)
    assert mode == 0o755 and (root / "s.md").read_text() == "b\n"


# --- (10) a dropped handler releases its descriptors at once -----------------------------------


def test_dropped_handlers_release_their_descriptors_without_the_collector(tmp_path: Path) -> None:
    MemoryHandler(tmp_path).execute({"command": "view", "path": "/memories"})  # first-use imports
    gc.collect()
    gc.disable()
    try:
        before = _open_fds()
        for i in range(100):
            handler = MemoryHandler(tmp_path)
            handler.execute({"command": "create", "path": f"/memories/f{i}.md", "file_text": "x"})
            handler.execute({"command": "view", "path": f"/memories/f{i}.md"})
            handler.execute({"command": "delete", "path": f"/memories/f{i}.md"})
            del handler
        assert _open_fds() - before < 10  # before the fix: about 3 per handler (300)
    finally:
        gc.enable()
