"""The directory a case runs in (CASE-FORMAT.md, "The layout a case runs in"), on-disk fixtures, snapshots.

    CASE/memories/               the root given to the target
    CASE/outside/secret.txt      canary text
    CASE/outside/dir/inner.txt   canary text
    CASE/memories_evil/secret.txt  a sibling whose name extends the root's

Nothing here follows a symbolic link: snapshots and tree reads use lstat and readlink only.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import os
import pathlib
import shutil
import stat
from typing import Any, Callable, Dict, List, Tuple

RESERVED_PREFIX = ".refmem"
"""Names the reference keeps for its own files; excluded from final-state checks."""

Entry = Tuple[Any, ...]
"""("file", bytes, mode) | ("dir", mode) | ("symlink", target) | ("other", kind)"""


@dataclasses.dataclass(frozen=True)
class CaseDir:
    path: pathlib.Path

    @property
    def root(self) -> pathlib.Path:
        return self.path / "memories"


def canary_tree(canary: str) -> Dict[str, str]:
    return {
        "outside/secret.txt": f"{canary} outside secret\n",
        "outside/dir/inner.txt": f"{canary} outside inner\n",
        "memories_evil/secret.txt": f"{canary} sibling secret\n",
    }


def make_case_dir(path: pathlib.Path, canary: str) -> CaseDir:
    path.mkdir(parents=True)
    (path / "memories").mkdir()
    for relative, text in canary_tree(canary).items():
        target = path / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(text.encode("utf-8"))
    return CaseDir(path)


def write_files(case: CaseDir, files: Dict[str, str]) -> None:
    """`setup.files` written into the root directly, in key order, folders made as needed (CASE-FORMAT.md)."""
    for relative, text in files.items():
        target = case.root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(text.encode("utf-8"))


def tree_bytes(case: CaseDir) -> int:
    """The bytes of every regular file in the case directory (root and canary tree), links not followed."""
    total = 0
    for top, _folders, names in os.walk(case.path):
        for name in names:
            try:
                info = os.lstat(os.path.join(top, name))
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode):
                total += info.st_size
    return total


# --- fixtures -----------------------------------------------------------------------------------


class FixtureUnavailable(Exception):
    """This platform cannot make the fixture (no FIFOs, no symlink privilege): the case is skipped."""


def _file(case: CaseDir, spec: Dict[str, Any]) -> None:
    target = case.root / spec["path"]
    target.parent.mkdir(parents=True, exist_ok=True)
    data = base64.b64decode(spec["base64"]) if "base64" in spec else spec["text"].encode("utf-8")
    target.write_bytes(data * spec.get("repeat", 1) + spec.get("tail", "").encode("utf-8"))


def _dir(case: CaseDir, spec: Dict[str, Any]) -> None:
    (case.root / spec["path"]).mkdir(parents=True, exist_ok=True)


def _symlink(case: CaseDir, spec: Dict[str, Any]) -> None:
    link = case.root / spec["path"]
    link.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(spec["target"], link)


def _fifo(case: CaseDir, spec: Dict[str, Any]) -> None:
    fifo = case.root / spec["path"]
    fifo.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(fifo)  # POSIX only: AttributeError elsewhere, reported as an unavailable fixture


def _hardlink(case: CaseDir, spec: Dict[str, Any]) -> None:
    link = case.root / spec["path"]
    link.parent.mkdir(parents=True, exist_ok=True)
    os.link(case.path / spec["target"], link)


def _mode(case: CaseDir, spec: Dict[str, Any]) -> None:
    mode = int(spec["mode"], 8)
    if mode & 0o600 != 0o600 and hasattr(os, "geteuid") and os.geteuid() == 0:
        raise FixtureUnavailable("running as root: file modes do not restrict root")
    os.chmod(case.root / spec["path"], mode)


FIXTURES: Dict[str, Callable[[CaseDir, Dict[str, Any]], None]] = {
    "file": _file,
    "dir": _dir,
    "symlink": _symlink,
    "fifo": _fifo,
    "hardlink": _hardlink,
    "mode": _mode,
}


def apply_fixtures(case: CaseDir, fixtures: List[Dict[str, Any]]) -> None:
    for spec in fixtures:
        try:
            FIXTURES[spec["type"]](case, spec)
        except (AttributeError, NotImplementedError) as exc:
            raise FixtureUnavailable(f"{spec['type']} fixtures are not available here: {exc}") from exc
        except OSError as exc:
            if os.name == "nt":
                raise FixtureUnavailable(f"{spec['type']} fixture: {exc.strerror}") from exc
            raise


# --- reading trees without following links ------------------------------------------------------


def _entry(path: pathlib.Path) -> Entry:
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode):
        return ("symlink", os.readlink(path))
    if stat.S_ISDIR(info.st_mode):
        return ("dir", stat.S_IMODE(info.st_mode))
    if stat.S_ISREG(info.st_mode):
        try:
            data = path.read_bytes()
        except OSError as exc:  # a mode-000 fixture, for instance
            data = f"<unreadable: {exc.strerror}>".encode()
        return ("file", data, stat.S_IMODE(info.st_mode))
    return ("other", stat.S_IFMT(info.st_mode))


def read_tree(top: pathlib.Path, skip: Callable[[str], bool] = lambda name: False) -> Dict[str, Entry]:
    """Every entry below `top` by POSIX relative path; directories are entered, links are not.

    Iterative: a backend under test may have built a tree far deeper than Python's recursion allows.
    """
    tree: Dict[str, Entry] = {}
    pending = [(top, "")]
    while pending:
        directory, prefix = pending.pop()
        try:
            names = sorted(os.listdir(directory))
        except OSError:
            continue
        for name in names:
            if skip(name):
                continue
            relative = prefix + name
            try:
                entry = _entry(directory / name)
            except OSError:
                continue  # gone meanwhile, or a path too long to name
            tree[relative] = entry
            if entry[0] == "dir":
                pending.append((directory / name, relative + "/"))
    return dict(sorted(tree.items()))


def memory_tree(case: CaseDir) -> Dict[str, Entry]:
    """The root's tree as the final-state check sees it: the handler's own `.refmem*` names left out."""
    return read_tree(case.root, skip=lambda name: name.startswith(RESERVED_PREFIX))


def outside_snapshot(case: CaseDir) -> Dict[str, Entry]:
    """Everything in CASE/ except the root's contents (the root's own entry is kept: type and mode)."""
    tree = read_tree(case.path, skip=lambda name: False)
    snapshot = {path: entry for path, entry in tree.items() if not path.startswith("memories/")}
    if snapshot.get("memories", ("",))[0] == "dir":
        snapshot["memories"] = ("dir",)  # the root's own mode is the handler's business
    return snapshot


def _unlock(directory: str) -> None:
    """Give back the permissions mode fixtures took away, in every folder (iteratively: any depth)."""
    pending = [directory]
    while pending:
        here = pending.pop()
        try:
            os.chmod(here, 0o700)
            names = os.listdir(here)
        except OSError:
            continue
        for name in names:
            child = os.path.join(here, name)
            with contextlib.suppress(OSError):
                if stat.S_ISDIR(os.lstat(child).st_mode):
                    pending.append(child)


def remove(path: pathlib.Path) -> None:
    """Delete a case directory, first giving back the permissions that mode fixtures took away. The
    removal is the reference kernel's iterative one (any depth, no link followed); shutil's recursion
    would fail on a tree a deep-nesting backend built."""
    _unlock(str(path))
    from refmem import kernel, problems, tree

    try:
        parent = kernel.RootDir(path.parent, create=False)
        try:
            tree.remove(parent.top, path.name, os.lstat(path))
        finally:
            parent.close()
    except (OSError, problems.FsProblem):
        shutil.rmtree(path, ignore_errors=True)
