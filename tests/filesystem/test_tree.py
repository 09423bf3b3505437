"""tree.py: the descent and removal, on every walk, and that they stop when the tree moves under them."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from refmem import _kernel as kernel
from refmem import _tree as tree
from refmem import problems


def test_remove_takes_a_tree_without_following_links(kernel_root: kernel.RootDir, tmp_path: Path) -> None:
    (tmp_path / "root" / "a" / "b" / "link").symlink_to(tmp_path / "outside")
    (tmp_path / "root" / "a" / "ro.txt").write_text("keep")
    (tmp_path / "root" / "a" / "ro.txt").chmod(0o444)
    top = kernel_root.top
    with pytest.raises(problems.OsFailure) as kept:
        tree.remove(top, "a", top.lstat("a"), keep=lambda info: not info.st_mode & stat.S_IWUSR)
    assert kept.value.code == "protected"
    assert (tmp_path / "root" / "a" / "ro.txt").read_text() == "keep"
    tree.remove(top, "a", top.lstat("a"))
    assert not (tmp_path / "root" / "a").exists()
    tree.remove(top, "out", top.lstat("out"))  # the link, not what it points at
    assert (tmp_path / "outside" / "secret.txt").read_text() == "CANARY"


def test_descend_visits_every_folder_after_its_subfolders(kernel_root: kernel.RootDir, tmp_path: Path) -> None:
    (tmp_path / "root" / "a" / "c").mkdir()
    order = [visit.parts for visit in tree.descend(kernel_root.top, lambda parts, name: True)]
    assert order.index(("a", "b")) < order.index(("a",)) and order.index(("a", "c")) < order.index(("a",))
    assert order[-1] == () and ("out",) not in order  # links are not entered


def test_descend_stops_when_the_tree_is_moved_under_it(kernel_root: kernel.RootDir, tmp_path: Path) -> None:
    walk = tree.descend(kernel_root.top, lambda parts, name: True)
    first = next(walk)  # the deepest folder, a/b: its parent a is to be reopened through ".."
    assert first.parts == ("a", "b")
    os.rename(tmp_path / "root" / "a", tmp_path / "moved-away")  # a/b now lives outside the kernel_root...
    (tmp_path / "root" / "a").mkdir()  # ...and another folder took a's name
    with pytest.raises(problems.FsProblem):  # not the folder entered, or no longer inside the kernel_root
        for _visit in walk:
            pass
    assert (tmp_path / "moved-away" / "b").is_dir()
