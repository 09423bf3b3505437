"""The host-path watcher puts back what a case did to host paths it names, and never through a link a backend
planted on the way (audit point 9: it wrote back and removed through paths whose folders may be links)."""

from __future__ import annotations

import os
import pathlib

import pytest
from refmem_conformance.hostwatch import HostWatch, named_paths

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX links and descriptors")


def _victim(tmp_path: pathlib.Path) -> pathlib.Path:
    victim = tmp_path / "victim"
    (victim / "sub").mkdir(parents=True)
    (victim / "sub" / "file").write_text("the user's own file\n")
    return victim


def test_what_appeared_through_a_planted_link_is_left_alone(tmp_path: pathlib.Path) -> None:
    """The watched path's folder did not exist; the backend made it a link to a folder of the user's. Removing
    "what the case created" by path would delete the user's file through the link."""
    victim = _victim(tmp_path)
    watched = tmp_path / "x" / "sub" / "file"
    watch = HostWatch([str(watched)])
    os.symlink(victim, tmp_path / "x")  # the backend's doing
    changes = dict(watch.settle())
    assert (victim / "sub" / "file").read_text() == "the user's own file\n"
    assert "through a link on the way" in changes[str(watched)]
    assert not os.path.lexists(tmp_path / "x")  # the link itself, which the case created, is removed


def test_a_watched_folder_replaced_by_a_link_is_not_written_through(tmp_path: pathlib.Path) -> None:
    """The watched file's folder existed and held it; the backend moved the folder away and put a link to a folder
    of the user's in its place. Writing the old text back by path would overwrite the user's file."""
    victim = _victim(tmp_path)
    folder = tmp_path / "dir"
    folder.mkdir()
    (folder / "file").write_text("watched text\n")
    watch = HostWatch([str(folder / "file")])
    os.rename(folder, tmp_path / "moved")
    os.symlink(victim / "sub", folder)  # dir/file now leads to the user's file
    changes = dict(watch.settle())
    assert (victim / "sub" / "file").read_text() == "the user's own file\n"
    assert str(folder / "file") in changes


def test_a_change_in_place_is_reported_and_put_back(tmp_path: pathlib.Path) -> None:
    target = tmp_path / "plain" / "secret.txt"
    target.parent.mkdir()
    target.write_text("before\n")
    created = tmp_path / "plain" / "new" / "made.txt"
    watch = HostWatch([str(target), str(created)])
    target.write_text("after\n")
    created.parent.mkdir()
    created.write_text("x")
    changes = dict(watch.settle())
    assert target.read_text() == "before\n" and not created.exists() and not created.parent.exists()
    assert set(changes) == {str(target), str(created), str(created.parent)}


def test_named_paths_resolve_existing_links_before_the_case(tmp_path: pathlib.Path) -> None:
    """A path through a link that exists before the case (a system's /tmp may be one) is watched at its real place,
    so the descriptor walk, which follows no link, can still reach it."""
    real = tmp_path / "real"
    real.mkdir()
    os.symlink(real, tmp_path / "alias")
    paths = named_paths([{"command": "view", "path": str(tmp_path / "alias" / "f.txt")}], str(tmp_path / "case"))
    assert paths and paths[0] == str(real / "f.txt")
