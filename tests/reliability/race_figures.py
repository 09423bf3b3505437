"""Figures for SECURITY.md: a folder swapped for a link to the outside, by another process, while commands run.

    python -m tests.reliability.race_figures [--seconds 10] [--walk fd|name|portable]

Another process exchanges `memories/d` with a symbolic link to `outside/` (Linux `renameat2
(RENAME_EXCHANGE)`) as fast as it can, while this process runs view, create, str_replace, insert, delete
and rename through `d`. After every command the outside tree is compared with its original and put back,
so that every escape is counted once: outside text shown, an outside file created, changed or removed.
Prints one line of counts. tests/filesystem/test_race.py is the pass/fail version of the same race.
"""

from __future__ import annotations

import argparse
import ctypes
import multiprocessing
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, Tuple

from refmem import MemoryHandler
from refmem import _kernel as kernel

CANARY = "CANARY-race-figures"
COMMANDS = [
    {"command": "view", "path": "/memories/d/f.txt"},
    {"command": "view", "path": "/memories/d"},
    {"command": "str_replace", "path": "/memories/d/f.txt", "old_str": "line two", "new_str": "line 2"},
    {"command": "str_replace", "path": "/memories/d/f.txt", "old_str": "line 2", "new_str": "line two"},
    {"command": "insert", "path": "/memories/d/g.txt", "insert_line": 0, "insert_text": "PWNED"},
    {"command": "create", "path": "/memories/d/new.txt", "file_text": "PWNED"},
    {"command": "delete", "path": "/memories/d/new.txt"},
    {"command": "delete", "path": "/memories/d/g.txt"},
    {"command": "rename", "old_path": "/memories/src.txt", "new_path": "/memories/d/planted.txt"},
    {"command": "create", "path": "/memories/src.txt", "file_text": "src"},
]


def _swapper(root: str, stop: Any, count: Any) -> None:
    exchange = ctypes.CDLL(None, use_errno=True).renameat2
    exchange.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    d, link = os.fsencode(os.path.join(root, "d")), os.fsencode(os.path.join(root, "d_link"))
    swaps = 0
    while not stop.is_set():
        if exchange(-100, d, -100, link, 2) == 0:
            swaps += 1
    count.value = swaps


def _outside(top: Path) -> Dict[str, bytes]:
    return {p.name: p.read_bytes() for p in top.iterdir() if p.is_file()}


def measure(seconds: float, walk: str) -> Tuple[int, int, Dict[str, int]]:
    base = Path(tempfile.mkdtemp())
    try:
        outside = base / "outside"
        outside.mkdir()
        for name in ("f.txt", "g.txt", "new.txt"):
            (outside / name).write_text(f"{CANARY} {name}\nline two\n")
        original = _outside(outside)
        root = base / "memories"
        (root / "d").mkdir(parents=True)
        (root / "d" / "f.txt").write_text("inside\nline two\n")
        os.symlink(outside, root / "d_link")
        if walk == "name":
            kernel._openat2 = None
        handler = MemoryHandler(root, portable_walk=walk == "portable", track_access=False)
        stop, count = multiprocessing.Event(), multiprocessing.Value("q", 0)
        worker = multiprocessing.Process(target=_swapper, args=(str(root), stop, count))
        worker.start()
        events = {"shown": 0, "created": 0, "changed": 0, "removed": 0}
        ran = 0
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            result = handler.execute(COMMANDS[ran % len(COMMANDS)])
            ran += 1
            events["shown"] += CANARY in result.output
            now = _outside(outside)
            events["created"] += len(set(now) - set(original))
            events["removed"] += len(set(original) - set(now))
            events["changed"] += sum(1 for k in set(now) & set(original) if now[k] != original[k])
            if now != original:
                for name in set(now) - set(original):
                    (outside / name).unlink()
                for name, data in original.items():
                    (outside / name).write_bytes(data)
        stop.set()
        worker.join()
        return count.value, ran, events
    finally:
        shutil.rmtree(base, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--walk", choices=["fd", "name", "portable"], default="fd")
    args = parser.parse_args()
    swaps, ran, events = measure(args.seconds, args.walk)
    counts = " ".join(f"{k}={v}" for k, v in events.items())
    print(f"walk={args.walk} seconds={args.seconds:g} swaps={swaps} commands={ran} {counts}")


if __name__ == "__main__":
    main()
