"""The child of the SIGKILL test (test_crash.py): it edits its own folder in a loop and logs each command before and
after running it, until it is killed. It lives apart from the test so that the process that forks it imports only
this and refmem (tests/forker_support.py)."""

from __future__ import annotations

import json
import os
import random
import string
import tempfile
from pathlib import Path
from typing import Dict, Optional, Tuple

from refmem.handler import MemoryHandler

from .reliability_support import disk_files

Files = Dict[str, str]  # path relative to the worker folder -> content


# --- the child --------------------------------------------------------------------------------


def _token(rng: random.Random, n: int = 12) -> str:
    return "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(n))


def _content(rng: random.Random) -> str:
    size = rng.choice([1, 3, 10, 40, 40, 200, 2000])  # lines; 2000 lines is about 40 KB
    return "".join(f"L{i} {_token(rng)}\n" for i in range(size))


def _plan(rng: random.Random, files: Files, serial: int) -> Optional[Tuple[dict, Files, Files, bool]]:
    """(command, before, after, atomic) for one random valid command on `files`."""
    names = sorted(files)
    roll = rng.random()
    if not names or roll < 0.15:
        name = rng.choice(["", "sub/", "sub/deep/"]) + f"n{serial}_{_token(rng, 4)}.md"
        text = _content(rng)
        return {"command": "create", "file_text": text, "_path": name}, {name: None}, {name: text}, True
    if roll < 0.45:
        name = rng.choice(names)
        lines = files[name].split("\n")[:-1]
        if not lines:
            return None
        index = rng.randrange(len(lines))
        old = lines[index] + "\n"
        number = old.split(" ", 1)[0]
        new = f"{number} {_token(rng)}{'x' * rng.choice([0, 0, 5000])}\n"
        text = files[name].replace(old, new, 1)
        cmd = {"command": "str_replace", "old_str": old, "new_str": new, "_path": name}
        return cmd, {name: files[name]}, {name: text}, True
    if roll < 0.65:
        name = rng.choice(names)
        lines = files[name].split("\n")[:-1]
        at = rng.randint(0, len(lines))
        line = f"I{serial} {_token(rng)}"
        lines.insert(at, line)
        text = "\n".join(lines) + "\n"
        cmd = {"command": "insert", "insert_line": at, "insert_text": line + "\n", "_path": name}
        return cmd, {name: files[name]}, {name: text}, True
    if roll < 0.80:
        name = rng.choice(names)
        target = rng.choice(["", "sub/", "moved/"]) + f"r{serial}_{_token(rng, 4)}.md"
        cmd = {"command": "rename", "_old": name, "_new": target}
        return cmd, {name: files[name], target: None}, {name: None, target: files[name]}, True
    if roll < 0.85:
        folder = rng.choice(["sub", "moved"])
        inside = {n: c for n, c in files.items() if n.startswith(folder + "/")}
        if not inside:
            return None
        target = f"{folder}_{serial}_{_token(rng, 4)}"  # unique: empty folders stay behind
        after: Files = {n: None for n in inside}
        after.update({target + n[len(folder):]: c for n, c in inside.items()})
        before: Files = dict(inside)
        before.update({target + n[len(folder):]: None for n in inside})
        return {"command": "rename", "_old": folder, "_new": target}, before, after, True
    if roll < 0.97:
        name = rng.choice(names)
        return {"command": "delete", "_path": name}, {name: files[name]}, {name: None}, True
    folders = sorted({n.split("/", 1)[0] for n in names if "/" in n})
    if not folders:
        return None
    folder = rng.choice(folders)
    inside = {n: c for n, c in files.items() if n.startswith(folder + "/")}
    # A recursive delete removes one name at a time: each file is old or gone, not all at once.
    return {"command": "delete", "_path": folder}, dict(inside), {n: None for n in inside}, False


def _to_tool_input(cmd: dict, prefix: str) -> dict:
    out = {k: v for k, v in cmd.items() if not k.startswith("_")}
    if "_path" in cmd:
        out["path"] = f"{prefix}/{cmd['_path']}"
    if "_old" in cmd:
        out["old_path"] = f"{prefix}/{cmd['_old']}"
        out["new_path"] = f"{prefix}/{cmd['_new']}"
    return out


def child(root: str, folder: str, seed: int, log_path: str) -> None:
    """Runs in the forked child: never returns."""
    code = 0
    try:
        rng = random.Random(seed)
        handler = MemoryHandler(Path(root))
        files, _ = disk_files(Path(root), folder)
        files = {os.path.relpath(p, folder): c for p, c in files.items()}
        log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o600)
        serial = seed * 1000
        while True:
            serial += 1
            planned = _plan(rng, files, serial)
            if planned is None:
                continue
            cmd, before, after, atomic = planned
            tool_input = _to_tool_input(cmd, f"/memories/{folder}")
            entry = {"cmd": tool_input, "before": before, "after": after, "atomic": atomic}
            os.write(log, (json.dumps(entry) + "\n").encode())
            result = handler.execute(tool_input)
            if result.is_error:
                os.write(log, (json.dumps({"unexpected": result.output[:500], "cmd": tool_input}) + "\n").encode())
                code = 3
                return
            for name, text in after.items():
                if text is None:
                    files.pop(name, None)
                else:
                    files[name] = text
            os.write(log, b'{"done": true}\n')
    except BaseException:  # noqa: BLE001 - report and leave without running the parent's cleanup
        code = 4
    finally:
        os._exit(code)


def warm() -> None:
    """Runs once in the forking process: every command once, so that a child starts as warm as one forked from
    the test, which had run commands already (lazy imports and caches), and reaches its first command quickly."""
    with tempfile.TemporaryDirectory() as scratch:
        handler = MemoryHandler(Path(scratch))
        for tool_input in (
            {"command": "create", "path": "/memories/w/a.md", "file_text": "a\n"},
            {"command": "str_replace", "path": "/memories/w/a.md", "old_str": "a", "new_str": "b"},
            {"command": "insert", "path": "/memories/w/a.md", "insert_line": 1, "insert_text": "c\n"},
            {"command": "view", "path": "/memories/w/a.md"},
            {"command": "rename", "old_path": "/memories/w/a.md", "new_path": "/memories/v/a.md"},
            {"command": "rename", "old_path": "/memories/v", "new_path": "/memories/u"},
            {"command": "delete", "path": "/memories/u/a.md"},
            {"command": "delete", "path": "/memories/u"},
        ):
            handler.execute(tool_input)
        disk_files(Path(scratch), "w")
