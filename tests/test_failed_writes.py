"""A create or rename that fails leaves nothing behind: no file, no temp file, no folder it made."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from refmem import MemoryHandler
from refmem import kernel


def _tree(top: Path) -> list:
    return sorted(str(p.relative_to(top)) for p in top.rglob("*") if ".refmem" not in p.parts)


def _no_space(*args: object, **kwargs: object) -> int:
    raise OSError(errno.ENOSPC, "No space left on device")


@pytest.mark.parametrize("existing", [[], ["a"], ["a", "a/b"]])
def test_failed_create_removes_the_folders_it_made(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, existing: list) -> None:
    root = tmp_path / "memories"
    memory = MemoryHandler(root)
    for folder in existing:
        (root / folder).mkdir()
    before = _tree(root)
    monkeypatch.setattr(kernel.os, "write", _no_space)
    result = memory.execute({"command": "create", "path": "/memories/a/b/c/x.txt", "file_text": "hello"})
    assert result.is_error
    assert result.output == "Error: Could not create /memories/a/b/c/x.txt: no space left on device."
    assert _tree(root) == before
    assert not [name for _, _, files in os.walk(root) for name in files if name.startswith(".refmem-tmp-")]


def test_failed_rename_removes_the_folders_it_made(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "memories"
    memory = MemoryHandler(root)
    memory.execute({"command": "create", "path": "/memories/src.txt", "file_text": "hello"})
    before = _tree(root)

    def refuse(*args: object) -> None:
        raise kernel.OsFailure("io")

    monkeypatch.setattr(kernel, "rename_noreplace", refuse)
    result = memory.execute({"command": "rename", "old_path": "/memories/src.txt", "new_path": "/memories/n/m/dst.txt"})
    assert result.output == "Error: Could not rename /memories/src.txt: input/output error."
    assert _tree(root) == before
    assert (root / "src.txt").read_text() == "hello"
