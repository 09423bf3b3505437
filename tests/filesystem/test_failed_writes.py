"""A create or rename that fails leaves nothing behind: no file, no temp file, no folder it made."""

from __future__ import annotations

import errno

import pytest
from memory_support import Memory

from refmem import _kernel as kernel
from refmem import problems
from refmem.messages import IO_REASONS, io_reason, render


def _no_space(*args: object, **kwargs: object) -> int:
    raise OSError(errno.ENOSPC, "No space left on device")


@pytest.mark.parametrize("existing", [[], ["a"], ["a", "a/b"]])
def test_failed_create_removes_the_folders_it_made(
    memory: Memory, monkeypatch: pytest.MonkeyPatch, existing: list
) -> None:
    for folder in existing:
        (memory.root / folder).mkdir()
    before = memory.tree()
    monkeypatch.setattr(kernel.os, "write", _no_space)
    result = memory.run(command="create", path="/memories/a/b/c/x.txt", file_text="hello")
    assert result == render("io_error", action="create", path="/memories/a/b/c/x.txt", reason=IO_REASONS["no_space"])
    assert memory.tree() == before  # temporary files included: only the handler's own folder is left out


def test_failed_rename_removes_the_folders_it_made(memory: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    memory.put("src.txt", "hello")
    before = memory.tree()

    def refuse(*args: object) -> None:
        raise problems.OsFailure("io")

    monkeypatch.setattr(kernel, "rename_noreplace", refuse)
    result = memory.run(command="rename", old_path="/memories/src.txt", new_path="/memories/n/m/dst.txt")
    assert result == render("io_error", action="rename", path="/memories/src.txt", reason=IO_REASONS["io"])
    assert memory.tree() == before


@pytest.mark.parametrize("code", ["no_such_reason", None, 13, ""])
def test_a_reason_the_table_lacks_is_the_generic_text_never_its_key(code: object) -> None:
    """`messages.io_reason`, the one way every store, the handler and the CLI turn a problem's code into words."""
    assert io_reason(code) == IO_REASONS["os"]


def test_every_reason_of_the_table_is_its_own_text() -> None:
    assert all(io_reason(code) == text for code, text in IO_REASONS.items())

