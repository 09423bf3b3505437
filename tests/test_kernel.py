"""Handles after close: a closed folder or root fails every call; it never falls back to the working directory."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from refmem import Limits, MemoryHandler, expiry, kernel, store
from refmem.paths import parse_path


def test_a_closed_folder_handle_fails_instead_of_using_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "root" / "d").mkdir(parents=True)
    (tmp_path / "cwd").mkdir()
    (tmp_path / "cwd" / "x").write_text("decoy")
    monkeypatch.chdir(tmp_path / "cwd")
    root = store.Root(tmp_path / "root")
    folder = root.walk(("d",))
    folder.close()
    folder.close()  # twice is fine
    assert isinstance(folder, kernel.FdDir) and folder.fd == kernel.CLOSED_FD
    with pytest.raises(kernel.OsFailure):
        folder.lstat("x")  # EBADF, not the decoy in the working directory
    with pytest.raises(kernel.FsProblem):
        expiry.put_record(folder, "y", b"data\n", 0)
    assert sorted(os.listdir(tmp_path / "cwd")) == ["x"]
    root.close()


def test_a_closed_root_refuses_every_command_and_writes_nowhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    handler = MemoryHandler(tmp_path / "root")
    assert not handler.execute({"command": "create", "path": "/memories/a.md", "file_text": "a\n"}).is_error
    lent = handler.root.dir.top
    handler.close()
    assert isinstance(lent, kernel.FdDir) and lent.fd == kernel.CLOSED_FD
    for command in (
        {"command": "view", "path": "/memories/a.md"},
        {"command": "create", "path": "/memories/b.md", "file_text": "b\n"},
        {"command": "view", "path": "/memories"},
    ):
        result = handler.execute(command)
        assert result.is_error and result.output.startswith("Error: Could not"), result.output
    with pytest.raises(kernel.OsFailure):
        lent.lstat("a.md")
    assert list((tmp_path / "cwd").iterdir()) == []


def test_a_handlers_limits_are_fixed(tmp_path: Path) -> None:
    """Parsed paths and pages are remembered under the limits the handler was made with."""
    handler = MemoryHandler(tmp_path, limits=Limits(max_view_chars=30))
    with pytest.raises(AttributeError):
        handler.limits = Limits()  # type: ignore[misc]
    assert handler.limits.max_view_chars == 30
    assert parse_path("/memories/a", handler.limits).parts == ("a",)
