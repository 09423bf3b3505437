"""The directory a case runs in (CASE-FORMAT.md, "The layout a case runs in"), on-disk fixtures, snapshots.

    CASE/memories/                      the root given to the target
    CASE/outside/secret.txt             canary text (SECRET_SIZE bytes: its size is told apart from a link's)
    CASE/outside/dir/inner.txt          canary text
    CASE/outside/CANARY.txt             a canary NAME (the run's canary token is the file's name)
    CASE/outside/dir/CANARY/inner.txt   a canary-named folder
    CASE/memories_evil/secret.txt       a sibling whose name extends the root's
    CASE/memories_evil/CANARY.txt

Every name and every text of the canary tree holds the run's canary token, so an output that shows any of
them (a file's text, or a listing that walked through a link to the outside) holds the canary: a leak.

Trees are read, compared and removed through `hosttree` only (bounded, never following a link).
"""

from __future__ import annotations

import base64
import dataclasses
import os
import pathlib
from typing import Any, Callable, Dict, Iterable, List, NamedTuple, Optional, Tuple

from . import hosttree
from .hosttree import Node, Read, Tree

RESERVED_PREFIX = ".refmem"
"""Names the reference keeps for its own files; excluded from final-state checks."""

SECRET_SIZE = 4321
"""outside/secret.txt's size: a listing that follows a link to it shows 4.3K, never a link's own size."""

HOST_ONLY_FIXTURES = ("hardlink", "fifo", "mode")
"""Fixture types that plant what the tool itself cannot make: findings they alone cause are host-layout."""


@dataclasses.dataclass(frozen=True)
class CaseDir:
    path: pathlib.Path

    @property
    def root(self) -> pathlib.Path:
        return self.path / "memories"


@dataclasses.dataclass(frozen=True)
class CanaryFile:
    """One file of the canary tree: where it is (relative to CASE/) and the line that identifies its text."""

    path: str
    line: str


def canary_files(canary: str) -> List[CanaryFile]:
    return [
        CanaryFile("outside/secret.txt", f"{canary} outside secret"),
        CanaryFile("outside/dir/inner.txt", f"{canary} outside inner"),
        CanaryFile(f"outside/{canary}.txt", f"{canary} outside named"),
        CanaryFile(f"outside/dir/{canary}/inner.txt", f"{canary} outside named folder"),
        CanaryFile("memories_evil/secret.txt", f"{canary} sibling secret"),
        CanaryFile(f"memories_evil/{canary}.txt", f"{canary} sibling named"),
    ]


def canary_tree(canary: str) -> Dict[str, bytes]:
    files = {}
    for item in canary_files(canary):
        data = (item.line + "\n").encode("utf-8")
        if item.path == "outside/secret.txt":  # one line still: a single "\n" in it, as before
            data = (item.line + " ").encode("utf-8").ljust(SECRET_SIZE - 1, b"s") + b"\n"
        files[item.path] = data
    return files


def make_case_dir(path: pathlib.Path, canary: str) -> CaseDir:
    path.mkdir(parents=True)
    (path / "memories").mkdir()
    for relative, data in canary_tree(canary).items():
        target = path / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return CaseDir(path)


def write_files(case: CaseDir, files: Dict[str, str]) -> None:
    """`setup.files` written into the root directly, in key order, folders made as needed (CASE-FORMAT.md)."""
    for relative, text in files.items():
        target = case.root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(text.encode("utf-8"))


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


class PlainFixtures(NamedTuple):
    """A case's fixtures when they are only files of UTF-8 text and folders: what a target that keeps its own
    storage can be given through the tool's own commands (`create`), in the order the case lists them."""

    files: Dict[str, str]
    folders: List[str]
    """The folders no file of the fixtures (or of `extra`) lies in: they are made through a file created in them
    and deleted again, a missing parent made by `create` staying as on the filesystem."""


def plain_fixtures(fixtures: List[Dict[str, Any]], extra: Iterable[str] = ()) -> Optional[PlainFixtures]:
    """The files and empty folders of `fixtures`, or None when one needs a real directory: a link, a FIFO, a
    hard link, a mode, or bytes that are not UTF-8 (no command can write those). `extra` names the other files
    the case sets up (`setup.files`), which fill folders too."""
    files: Dict[str, str] = {}
    folders: List[str] = []
    for spec in fixtures:
        if spec.get("type") == "dir":
            folders.append(str(spec["path"]).strip("/"))
            continue
        if spec.get("type") != "file":
            return None
        data = base64.b64decode(spec["base64"]) if "base64" in spec else spec["text"].encode("utf-8")
        try:
            text = data.decode("utf-8") * spec.get("repeat", 1) + spec.get("tail", "")
        except UnicodeDecodeError:
            return None
        files[str(spec["path"]).strip("/")] = text
    filled = [*files, *folders, *(name.strip("/") for name in extra)]
    empty = [folder for folder in folders if not any(name.startswith(folder + "/") for name in filled)]
    return PlainFixtures(files, empty)


# --- snapshots ----------------------------------------------------------------------------------


def _reserved(relative: str) -> bool:
    return relative.split("/", 1)[0].startswith(RESERVED_PREFIX)


def memory_read(case: CaseDir, wanted: hosttree.Wanted = hosttree.want_all) -> Read:
    """The root's tree as the final-state and data-loss checks see it: the handler's own `.refmem*` names left
    out; a file's bytes read only where `wanted` says a check needs them."""
    return hosttree.read(str(case.root), wanted, skip=_reserved)


def outside_read(case: CaseDir, wanted: hosttree.Wanted = hosttree.want_all) -> Read:
    """Everything in CASE/ except the root's contents (the root's own entry is kept, its mode left out: the
    root's mode is the handler's business)."""
    read = hosttree.read(str(case.path), wanted, enter=lambda relative: relative != "memories")
    root = read.tree.get("memories")
    if root is not None and root.kind == hosttree.DIR:
        read.tree["memories"] = Node(hosttree.DIR)
    return read


def outside_snapshot(case: CaseDir, wanted: hosttree.Wanted = hosttree.want_all) -> Tree:
    return outside_read(case, wanted).tree


def sizes(tree: Tree) -> Dict[str, int]:
    """The size of every regular file of a tree."""
    return {path: node.size for path, node in tree.items() if node.kind == hosttree.FILE}


def remove(path: pathlib.Path) -> None:
    """Delete a case directory whatever a backend left in it (hosttree.remove: any depth, no link followed,
    permissions that mode fixtures took away given back first)."""
    hosttree.remove(str(path))


def join_relative(base: List[str], relative: str) -> Optional[str]:
    """`relative` (`/`-separated) taken from the folder `base` with `.` and `..` resolved as names; None when it
    climbs above where `base` starts. Pure path arithmetic: nothing on disk is looked at."""
    parts = list(base)
    for segment in relative.split("/"):
        if segment in ("", "."):
            continue
        if segment == "..":
            if not parts:
                return None
            parts.pop()
        else:
            parts.append(segment)
    return "/".join(parts)


def resolve_link(link: str, target: str) -> Optional[str]:
    """Where the link at `link` (relative to CASE/memories) points, relative to CASE/; None for an absolute
    target or one that climbs out of CASE/."""
    if target.startswith("/"):
        return None
    return join_relative(["memories"] + link.split("/")[:-1], target)


def through_links(path: str, memory: Tree, hops: int = 40) -> Tuple[Optional[str], List[str]]:
    """Follow the links on `path` (relative to the root) through `memory`: (where it lands relative to CASE/,
    the names after the first link that leaves the root). Inside the root: (CASE/-relative path, []); through
    a link that leaves it: (the outside place that link points to, the rest of the names), or (None, rest)
    when the link points somewhere unknown (absolute, or above CASE/)."""
    parts = [part for part in path.split("/") if part]
    for _hop in range(hops):
        for index in range(len(parts)):
            prefix = "/".join(parts[: index + 1])
            node = memory.get(prefix)
            if node is None or node.kind != hosttree.LINK:
                continue
            landed = resolve_link(prefix, node.target)
            rest = parts[index + 1 :]
            if landed is None or not (landed == "memories" or landed.startswith("memories/")):
                return landed, rest
            parts = [part for part in landed[len("memories") :].split("/") if part] + rest
            break
        else:
            return "/".join(["memories"] + parts), []
    return "memories/" + "/".join(parts), []
