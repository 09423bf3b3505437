"""The fixtures modules share: `memory`, a handler over a fresh folder (see memory_support.Memory), and
`kernel_root`, a kernel RootDir over one small layout on every walk (the kernel's and the tree's tests).

Folders below keep their own conftest files for their own fixtures; none of them defines these.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

import pytest
from memory_support import Memory

from refmem import kernel


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    """A `Memory` over `tmp_path/memories`; every handler it made is closed after the test."""
    made = Memory(tmp_path)
    yield made
    made.close()


WALKS = {"openat2": (False, True), "name-by-name": (False, False), "portable": (True, False)}


@pytest.fixture(params=list(WALKS))
def kernel_root(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[kernel.RootDir]:
    """Folders a/b with a/b/f.txt, a file `file`, a FIFO `fifo`, and a link `out` to a folder outside the root
    holding secret.txt ("CANARY"); opened with openat2, name by name (openat2 taken away), or portable."""
    portable, one_call = WALKS[request.param]
    if not one_call:
        monkeypatch.setattr(kernel, "_openat2", None)
    top = tmp_path / "root"
    (top / "a" / "b").mkdir(parents=True)
    (top / "a" / "b" / "f.txt").write_text("inside\n")
    (top / "file").write_text("x")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("CANARY")
    (top / "out").symlink_to(tmp_path / "outside")
    os.mkfifo(top / "fifo")
    opened = kernel.RootDir(top, portable=portable)
    yield opened
    opened.close()
