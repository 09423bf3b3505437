"""A real-filesystem attack table, one layout per case, run through every command and both walks.

Layout language (each entry is relative to tmp_path; `memories/` is the handler's root, `outside/` a
canary tree and `memories_evil/` a sibling whose name shares the root's prefix):

    "d/"            a directory
    "f"             a regular file (content derived from its path; outside files carry CANARY)
    "a => b"        a symbolic link a pointing at b (`{base}` is replaced by tmp_path: absolute links)
    "h == t"        a hard link h to t (t relative to h's folder)
    "p |"           a FIFO
    "s @"           a socket (made with mknod, so no path-length limit)

Every case runs through view, create, str_replace, insert, delete, rename (the case's path as
old_path and as new_path), each in a thread with a time limit (a FIFO must never block). After each:
the canary trees are unchanged (listing, content, link targets), nothing new appeared outside
`memories/`, no output carries the canary, the host path or a traceback, and the outcome is the one
docs/spec-notes.md gives (D-FS-SYMLINK, D-FS-SPECIAL, D-FS-HARDLINK, D-PATH-RULES, ...).
"""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

import pytest

from refmem import MemoryHandler, Result, tool
from refmem import _kernel as kernel

CANARY = "CANARY-5e1f0c secret bytes from outside"
INTERNAL = "Error: The command could not be completed because of an internal error."
BASE_LAYOUT = [
    "outside/",
    "outside/secret",
    "outside/dir/",
    "outside/dir/secret2",
    "memories_evil/",
    "memories_evil/secret3",
    "memories/",
    "memories/src.txt",
]
DEEP = 40  # levels created on disk; the handler's default depth limit is 16


def file_content(rel: str) -> bytes:
    if rel.startswith("memories/"):
        return f"inside {rel}\n".encode()
    return f"{CANARY} ({rel})\n".encode()


def build(base: Path, entries: List[str]) -> None:
    for entry in entries:
        if " => " in entry:
            name, target = entry.split(" => ")
            os.symlink(target.replace("{base}", str(base)), base / name)
        elif " == " in entry:
            name, target = entry.split(" == ")
            os.link(os.path.normpath(os.path.join(base, os.path.dirname(name), target)), base / name)
        elif entry.endswith(" |"):
            os.mkfifo(base / entry[:-2])
        elif entry.endswith(" @"):
            os.mknod(base / entry[:-2], 0o600 | stat.S_IFSOCK)
        elif entry.endswith("/"):
            (base / entry).mkdir(parents=True, exist_ok=True)
        else:
            (base / entry).parent.mkdir(parents=True, exist_ok=True)
            (base / entry).write_bytes(file_content(entry))


def snapshot(top: Path, skip_handler_files: bool = False) -> Dict[str, Tuple[Any, ...]]:
    """Everything below `top`, never following a link and never opening anything but regular files."""
    found: Dict[str, Tuple[Any, ...]] = {}

    def visit(folder: Path, prefix: str) -> None:
        for name in sorted(os.listdir(folder)):
            if skip_handler_files and prefix == "" and name == ".refmem":
                continue
            path = folder / name
            rel = prefix + name
            info = os.lstat(path)
            if stat.S_ISLNK(info.st_mode):
                found[rel] = ("link", os.readlink(path))
            elif stat.S_ISDIR(info.st_mode):
                found[rel] = ("dir",)
                visit(path, rel + "/")
            elif stat.S_ISREG(info.st_mode):
                found[rel] = ("file", path.read_bytes())
            else:
                found[rel] = ("special", stat.S_IFMT(info.st_mode))

    visit(top, "")
    return found


class Case(NamedTuple):
    id: str
    layout: List[str]
    path: str
    kind: str  # file, dir, missing, link, special, hardlink, through, slash_link, too_deep


DEEP_DIRS = ["memories/" + "d/" * level for level in range(1, DEEP + 1)]
CASES = [
    Case("plain", ["memories/f"], "/memories/f", "file"),
    Case("in-directory", ["memories/d/", "memories/d/f"], "/memories/d/f", "file"),
    Case("missing", [], "/memories/new.txt", "missing"),
    Case("missing-parent", [], "/memories/nd/new.txt", "missing"),
    Case("symlink-to-outside-file", ["memories/l => ../outside/secret"], "/memories/l", "link"),
    Case("symlink-to-outside-dir", ["memories/l => ../outside/dir"], "/memories/l", "link"),
    Case("through-symlink-to-outside-dir", ["memories/l => ../outside/dir"], "/memories/l/secret2", "through"),
    Case("symlink-to-inside-file", ["memories/f", "memories/l => f"], "/memories/l", "link"),
    Case(
        "through-symlink-to-inside-dir", ["memories/d/", "memories/d/f", "memories/l => d"], "/memories/l/f", "through"
    ),
    Case(
        "symlink-chain-escapes",
        ["memories/a => b", "memories/b => c", "memories/c => ../outside/secret"],
        "/memories/a",
        "link",
    ),
    Case(
        "through-symlink-chain-escapes",
        ["memories/a => b", "memories/b => ../outside"],
        "/memories/a/secret",
        "through",
    ),
    Case("symlink-dotdot-slash", ["memories/l => ../"], "/memories/l/outside/secret", "through"),
    Case("symlink-loop", ["memories/a => b", "memories/b => a"], "/memories/a", "link"),
    Case("through-symlink-loop", ["memories/a => b", "memories/b => a"], "/memories/a/x", "through"),
    Case("dangling-symlink", ["memories/l => nowhere"], "/memories/l", "link"),
    Case("dangling-symlink-to-outside-name", ["memories/l => ../outside/new"], "/memories/l", "link"),
    Case("through-dangling-symlink", ["memories/l => nowhere"], "/memories/l/x", "through"),
    Case("symlink-in-middle", ["memories/d/", "memories/d/l => ../../outside"], "/memories/d/l/secret", "through"),
    Case("slash-after-symlink-to-file", ["memories/f", "memories/l => f"], "/memories/l/", "slash_link"),
    Case("slash-after-symlink-to-outside-file", ["memories/l => ../outside/secret"], "/memories/l/", "slash_link"),
    Case("absolute-symlink", ["memories/l => {base}/outside/secret"], "/memories/l", "link"),
    Case("through-absolute-symlink", ["memories/l => {base}/outside"], "/memories/l/secret", "through"),
    Case("symlink-to-evil-sibling", ["memories/l => ../memories_evil"], "/memories/l/secret3", "through"),
    Case("symlink-to-root-itself", ["memories/l => ."], "/memories/l/src.txt", "through"),
    Case("hard-link-to-outside", ["memories/h == ../outside/secret"], "/memories/h", "hardlink"),
    Case("fifo", ["memories/p |"], "/memories/p", "special"),
    Case("through-fifo", ["memories/p |"], "/memories/p/x", "through"),
    Case("socket", ["memories/s @"], "/memories/s", "special"),
    Case("through-file", ["memories/f"], "/memories/f/x", "through"),
    Case("deep-tree-at-limit", DEEP_DIRS + ["memories/" + "d/" * 15 + "f"], "/memories" + "/d" * 15 + "/f", "file"),
    Case("deep-tree-over-limit", DEEP_DIRS, "/memories" + "/d" * 17, "too_deep"),
    Case("deep-tree-top", DEEP_DIRS + ["memories/" + "d/" * DEEP + "f"], "/memories/d", "deep_dir"),
    Case(
        "dir-with-links-out",
        [
            "memories/d/",
            "memories/d/f",
            "memories/d/l => ../../outside",
            "memories/d/m => ../../outside/secret",
            "memories/d/h == ../../outside/dir/secret2",
            "memories/d/p |",
            "memories/d/.hidden",
        ],
        "/memories/d",
        "dir",
    ),
]
SLOTS = {
    {"old_path": "rename_old", "new_path": "rename_new"}.get(parameter, command): (command, parameter)
    for command, parameter in tool.PATH_SLOTS
}
"""Every path a command takes, by the name the table below gives it."""
COMMANDS = list(SLOTS)
VALID = {
    "file_text": "created\n",
    "old_str": "inside",
    "new_str": "EDITED",
    "insert_line": 0,
    "insert_text": "INSERTED",
    "old_path": "/memories/src.txt",
    "new_path": "/memories/moved/away",
}
"""A valid value for each parameter that does not carry the path under test."""


def canonical(raw: str) -> str:
    return raw[:-1] if raw.endswith("/") and raw != "/memories/" else raw


def expected(kind: str, command: str, raw: str) -> Optional[str]:
    """The exact result text, None for a success, or a "prefix|suffix" pattern for ParentNotDir."""
    p = canonical(raw)
    missing = {
        "view": f"The path {p} does not exist. Please provide a valid path.",
        "str_replace": f"Error: The path {p} does not exist. Please provide a valid path.",
        "insert": f"Error: The path {p} does not exist",
        "delete": f"Error: The path {p} does not exist",
        "rename_old": f"Error: The path {p} does not exist",
    }
    exists = {"create": f"Error: File {p} already exists", "rename_new": f"Error: The destination {p} already exists"}
    if kind == "too_deep":
        return f"Error: Invalid path {raw}: a path may be at most 16 levels deep."
    if kind == "deep_dir":  # D-RENAME-LIMITS: moved one level deeper, its deepest file would be too deep
        if command == "rename_old":
            return (
                f"Error: Cannot move {p} to /memories/moved/away: a path inside it would have more than 16 names "
                "below /memories or more than 1024 bytes."
            )
        kind = "dir"
    if kind == "missing":
        return None if command in ("create", "rename_new") else missing[command]
    if kind == "through":
        if command == "create":
            return f"Error: Cannot create {p}: |is not a directory."
        if command == "rename_new":
            return f"Error: Cannot move /memories/src.txt to {p}: |is not a directory."
        return missing[command]
    if kind == "slash_link":
        if command in ("create", "rename_new"):
            return f'Error: Invalid path {raw}: a file path must not end with "/".'
        return missing[command]
    if command in exists:
        return exists[command]
    if command in ("delete", "rename_old"):
        return None
    if kind == "file":
        return None
    if kind == "dir":
        return None if command == "view" else missing[command]
    refusals = {
        "link": f"Error: The path {p} is a symbolic link; links are not followed.",
        "special": f"Error: The path {p} is not a regular file.",
        "hardlink": f"Error: The path {p} has more than one hard link and is refused: its content may be shared "
        "with a file outside /memories.",
    }
    return refusals[kind]


def tool_input(command: str, raw: str) -> Dict[str, Any]:
    name, parameter = SLOTS[command]
    return tool.input_for(name, {**VALID, parameter: raw})


def run_guarded(handler: MemoryHandler, params: Dict[str, Any]) -> Result:
    box: List[Result] = []
    worker = threading.Thread(target=lambda: box.append(handler.execute(params)), daemon=True)
    worker.start()
    worker.join(60)  # a hang guard: the handler never blocks, so this returns as soon as the command does
    assert not worker.is_alive(), f"command blocked: {params!r}"
    assert box, "the handler raised instead of returning a result"
    return box[0]


def rel_of(raw: str) -> str:
    return "/".join(canonical(raw).split("/")[2:])


WALKS = {
    "fd-walk": (False, True),  # descriptors; folders reached in one openat2 call where the kernel has it
    "name-walk": (False, False),  # descriptors, one name at a time (kernels without openat2)
    "portable-walk": (True, False),  # checked host paths
}


@pytest.mark.parametrize("walk", list(WALKS))
@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_attack_table(
    tmp_path: Path, case: Case, command: str, walk: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    portable, one_call = WALKS[walk]
    if not one_call:
        monkeypatch.setattr(kernel, "_openat2", None)
    build(tmp_path, BASE_LAYOUT + case.layout)
    handler = MemoryHandler(tmp_path / "memories", portable_walk=portable)
    outside_before = snapshot(tmp_path / "outside")
    evil_before = snapshot(tmp_path / "memories_evil")
    top_before = sorted(os.listdir(tmp_path))
    inside_before = snapshot(tmp_path / "memories", skip_handler_files=True)

    result = run_guarded(handler, tool_input(command, case.path))

    # nothing outside the root was read, written, created or deleted
    assert snapshot(tmp_path / "outside") == outside_before
    assert snapshot(tmp_path / "memories_evil") == evil_before
    assert sorted(os.listdir(tmp_path)) == top_before
    assert CANARY not in result.output
    assert str(tmp_path) not in result.output
    assert "Traceback" not in result.output
    assert result.output != INTERNAL
    if "secret" not in case.path:
        assert "secret" not in result.output

    want = expected(case.kind, command, case.path)
    if want is None:
        assert not result.is_error, result.output
    elif "|" in want:
        head, tail = want.split("|")
        assert result.is_error
        assert result.output.startswith(head) and result.output.endswith(tail), result.output
    else:
        assert result.output == want
        assert result.is_error

    inside_after = snapshot(tmp_path / "memories", skip_handler_files=True)
    assert not any(".refmem" in name for name in inside_after), "a handler temp file was left behind"
    rel = rel_of(case.path)
    if result.is_error or command == "view":
        assert inside_after == inside_before
        return
    changed = {k for k in set(inside_before) | set(inside_after) if inside_before.get(k) != inside_after.get(k)}
    if command == "create":
        assert inside_after[rel] == ("file", b"created\n")
        assert all(k == rel or rel.startswith(k + "/") for k in changed)
    elif command in ("str_replace", "insert"):
        assert changed == {rel}
        marker = b"EDITED" if command == "str_replace" else b"INSERTED\n"
        assert marker in inside_after[rel][1]
    elif command == "delete":
        assert all(k == rel or k.startswith(rel + "/") for k in changed)
        assert not any(k == rel or k.startswith(rel + "/") for k in inside_after)
    elif command == "rename_old":
        moved = {
            k.replace(rel, "moved/away", 1): v for k, v in inside_before.items() if k == rel or k.startswith(rel + "/")
        }
        for key, value in moved.items():
            assert inside_after[key] == value  # links move as links, targets unresolved
        assert not any(k == rel or k.startswith(rel + "/") for k in inside_after)
    elif command == "rename_new":
        assert inside_after[rel] == inside_before["src.txt"]
        assert "src.txt" not in inside_after


def test_delete_dir_with_links_out_keeps_the_targets(tmp_path: Path) -> None:
    """D-DELETE-RECURSIVE: links inside a deleted folder are unlinked by name, targets survive."""
    case = next(c for c in CASES if c.id == "dir-with-links-out")
    build(tmp_path, BASE_LAYOUT + case.layout)
    before = snapshot(tmp_path / "outside")
    handler = MemoryHandler(tmp_path / "memories")
    assert handler.execute({"command": "delete", "path": "/memories/d"}).output == "Successfully deleted /memories/d"
    assert snapshot(tmp_path / "outside") == before
    assert (tmp_path / "outside" / "secret").read_bytes() == file_content("outside/secret")
    assert (tmp_path / "outside" / "dir" / "secret2").exists()


def test_root_itself_is_a_symlink_elsewhere(tmp_path: Path) -> None:
    """The root may be given as a link (an application's choice): it is resolved once, up front."""
    build(tmp_path, BASE_LAYOUT)
    os.symlink(tmp_path / "memories", tmp_path / "root-link")
    handler = MemoryHandler(tmp_path / "root-link")
    out = handler.execute({"command": "view", "path": "/memories/src.txt"})
    assert out.output.endswith("     1\tinside memories/src.txt")
    assert str(tmp_path) not in out.output


def test_listing_never_shows_outside_names(tmp_path: Path) -> None:
    build(
        tmp_path,
        BASE_LAYOUT
        + [
            "memories/l => ../outside",
            "memories/d/",
            "memories/d/m => ../../outside/dir",
            "memories/e => {base}/memories_evil",
        ],
    )
    for portable in (False, True):
        out = MemoryHandler(tmp_path / "memories", portable_walk=portable).execute(
            {"command": "view", "path": "/memories"}
        )
        assert out.output.split("\n")[1:] == ["4.0K\t/memories", "4.0K\t/memories/d/", "24B\t/memories/src.txt"]
