"""Daily logs: `append_daily` and `refmem log` append to memory/YYYY-MM-DD.md atomically and safely."""

from __future__ import annotations

import datetime
import json
import os
import pathlib
import subprocess
import sys
import threading
from typing import Any, Callable, Dict, List

import pytest

from refmem import _kernel as kernel
from refmem import openclaw_cli, problems
from refmem.openclaw import OpenClawLimits, OpenClawMemory

DAY = datetime.date(2026, 11, 23)
NOON = datetime.datetime(2026, 11, 23, 12).timestamp()  # local time, as the log's date is


@pytest.fixture()
def root(tmp_path: pathlib.Path) -> pathlib.Path:
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.md").write_text("secret\n")
    return tmp_path / "memories"


def log(root: pathlib.Path) -> pathlib.Path:
    return root / "memory" / "2026-11-23.md"


def test_first_note_makes_the_log(root: pathlib.Path) -> None:
    memory = OpenClawMemory(root, clock=lambda: NOON)
    assert memory.append_daily("Decided to use Postgres.") == {"status": "ok", "path": "memory/2026-11-23.md"}
    assert log(root).read_text() == "Decided to use Postgres.\n"
    assert oct(log(root).stat().st_mode & 0o777) == "0o600"


def test_notes_are_appended_on_their_own_lines(root: pathlib.Path) -> None:
    memory = OpenClawMemory(root)
    log(root).parent.mkdir(parents=True)
    log(root).write_text("no newline at the end")
    memory.append_daily("second", DAY)
    memory.append_daily("third\n", DAY)
    assert log(root).read_text() == "no newline at the end\nsecond\nthird\n"


def test_crlf_log_stays_crlf(root: pathlib.Path) -> None:
    log(root).parent.mkdir(parents=True)
    log(root).write_bytes(b"first\r\n")
    OpenClawMemory(root).append_daily("a\nb", DAY)
    assert log(root).read_bytes() == b"first\r\na\r\nb\r\n"


def test_appended_note_is_found_by_search(root: pathlib.Path) -> None:
    memory = OpenClawMemory(root, clock=lambda: NOON)
    memory.append_daily("Met Alice about the quokka project.")
    assert [hit["path"] for hit in memory.memory_search("quokka")["results"]] == ["memory/2026-11-23.md"]


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("", "INVALID_INPUT"),
        ("   \n", "INVALID_INPUT"),
        (None, "INVALID_INPUT"),
        ("a\x00b", "INVALID_INPUT"),
        ("a\x1b[31m", "INVALID_INPUT"),
        ("a\u202eb", "INVALID_INPUT"),
        ("a\ud800", "INVALID_INPUT"),
    ],
)
def test_bad_text_is_refused_and_nothing_written(root: pathlib.Path, text: object, code: str) -> None:
    result = OpenClawMemory(root).append_daily(text, DAY)
    assert result["status"] == "error" and result["code"] == code
    assert not log(root).exists()


def test_size_limit(root: pathlib.Path) -> None:
    memory = OpenClawMemory(root, limits=OpenClawLimits(max_log_bytes=20))
    assert memory.append_daily("0123456789", DAY)["status"] == "ok"
    result = memory.append_daily("0123456789", DAY)
    assert (
        result["code"] == "MEMORY_LOG_TOO_BIG"
        and result["error"] == "the daily log would be 22 bytes, over the limit of 20"
    )
    assert log(root).read_text() == "0123456789\n"


def test_a_symlinked_log_is_not_written_through(root: pathlib.Path) -> None:
    (root / "memory").mkdir(parents=True)
    os.symlink(root.parent / "outside" / "secret.md", log(root))
    result = OpenClawMemory(root).append_daily("x", DAY)
    assert result["code"] == "MEMORY_SYMLINK"
    assert (root.parent / "outside" / "secret.md").read_text() == "secret\n"


def test_a_hard_linked_log_is_not_written_through(root: pathlib.Path) -> None:
    (root / "memory").mkdir(parents=True)
    os.link(root.parent / "outside" / "secret.md", log(root))
    assert OpenClawMemory(root).append_daily("x", DAY)["code"] == "MEMORY_HARDLINKED"
    assert (root.parent / "outside" / "secret.md").read_text() == "secret\n"


def test_a_symlinked_memory_folder_is_not_written_through(root: pathlib.Path) -> None:
    root.mkdir()
    os.symlink(root.parent / "outside", root / "memory")
    result = OpenClawMemory(root).append_daily("x", DAY)
    assert result["status"] == "error" and result["error"].endswith("memory is not a folder")
    assert sorted(os.listdir(root.parent / "outside")) == ["secret.md"]


def test_not_utf8_log_is_left_alone(root: pathlib.Path) -> None:
    (root / "memory").mkdir(parents=True)
    log(root).write_bytes(b"\xff\n")
    assert OpenClawMemory(root).append_daily("x", DAY)["code"] == "MEMORY_NOT_UTF8"
    assert log(root).read_bytes() == b"\xff\n"


def test_command_line_log(root: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert openclaw_cli.main(["log", "--root", str(root), "--date", "2026-11-23", "hello", "world"]) == 0
    assert capsys.readouterr().out == "memory/2026-11-23.md\n"
    assert log(root).read_text() == "hello world\n"
    assert openclaw_cli.main(["log", "--root", str(root), "--date", "23/11/2026", "x"]) == 2
    assert openclaw_cli.main(["log", "--root", str(root), "--date", "2026-11-23", "a\x00"]) == 1


def test_command_line_get_and_search(root: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    openclaw_cli.main(["log", "--root", str(root), "--date", "2026-11-23", "quokka sighting"])
    capsys.readouterr()
    assert openclaw_cli.main(["memory-get", "--root", str(root), "memory/2026-11-23.md"]) == 0
    assert json.loads(capsys.readouterr().out)["text"] == "quokka sighting"
    assert openclaw_cli.main(["memory-get", "--root", str(root), "../x.md"]) == 1
    capsys.readouterr()
    assert openclaw_cli.main(["memory-search", "--root", str(root), "quokka"]) == 0
    assert json.loads(capsys.readouterr().out)["results"][0]["path"] == "memory/2026-11-23.md"
    assert openclaw_cli.main(["memory-index", "--root", str(root), "--rebuild"]) == 0
    assert capsys.readouterr().out.startswith("1 files, 1 chunks (1 added")


# --- concurrent first appends ---------------------------------------------------------------------
#
# The first writers of a fresh workspace race to make its folders (`.refmem/` for the lock, `memory/`).
# The store's walk opens a name and makes it when missing; a folder another writer made between the two
# was taken for a file in the way, and that append was refused (one entry in 240 lost, two runs in three).
# Both tests force that interleaving instead of hoping for it: every writer sees `.refmem` missing, then
# one makes it before any goes on. Nothing here depends on timing: the gates only wait.

GATED = ".refmem"


def gated_open_dir(arrive: Callable[[kernel.FdDir], None]) -> Callable[[kernel.FdDir, str], kernel.FdDir]:
    """FdDir.open_dir that calls `arrive` the first time it finds `.refmem` missing in this thread."""
    original = kernel.FdDir.open_dir
    seen = threading.local()

    def open_dir(self: kernel.FdDir, name: str) -> kernel.FdDir:
        try:
            return original(self, name)
        except problems.Missing:
            if name == GATED and not getattr(seen, "done", False):
                seen.done = True
                arrive(self)
            raise

    return open_dir


def expected_lines(names: str, count: int) -> List[str]:
    return sorted(f"{name} {i}" for name in names for i in range(count))


@pytest.mark.skipif(not kernel.FD_WALK_AVAILABLE, reason="the race is in the descriptor walk")
def test_concurrent_first_appends_from_threads_lose_nothing(
    root: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Concurrent appends to one daily log all land (OpenClaw's concurrent memory flushes lost one:
    https://github.com/openclaw/openclaw/issues/117741, an unlocked read, concatenate, overwrite)."""
    names = "abcd"
    everyone, made = threading.Barrier(len(names)), threading.Barrier(len(names))

    def arrive(folder: kernel.FdDir) -> None:
        if everyone.wait(60) == 0:  # all saw it missing: one of them makes it
            os.mkdir(GATED, 0o700, dir_fd=folder.fd)
        made.wait(60)

    monkeypatch.setattr(kernel.FdDir, "open_dir", gated_open_dir(arrive))
    results: Dict[str, List[Dict[str, Any]]] = {name: [] for name in names}

    def writer(name: str) -> None:
        memory = OpenClawMemory(root)  # a handler each: the lock must hold across handlers
        for i in range(30):
            results[name].append(memory.append_daily(f"{name} {i}", DAY))

    threads = [threading.Thread(target=writer, args=(name,)) for name in names]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not everyone.broken and not made.broken
    refused = [result for found in results.values() for result in found if result["status"] != "ok"]
    assert refused == []
    assert sorted(log(root).read_text().splitlines()) == expected_lines(names, 30)


CHILD = """
import os, sys, time, datetime
from refmem import _kernel as kernel, problems
from refmem.openclaw import OpenClawMemory

root, gate, name, parties = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
original = kernel.FdDir.open_dir
state = {"done": False}

def wait_for(predicate):
    deadline = time.monotonic() + 60
    while not predicate():
        if time.monotonic() > deadline:
            sys.exit("the gate was never opened")
        time.sleep(0.005)

def open_dir(self, wanted):
    try:
        return original(self, wanted)
    except problems.Missing:
        if wanted == ".refmem" and not state["done"]:
            state["done"] = True
            open(os.path.join(gate, name), "w").close()
            wait_for(lambda: len([n for n in os.listdir(gate) if n != "made"]) == parties)
            if name == "a":
                os.mkdir(".refmem", 0o700, dir_fd=self.fd)
                open(os.path.join(gate, "made"), "w").close()
            wait_for(lambda: os.path.exists(os.path.join(gate, "made")))
        raise

kernel.FdDir.open_dir = open_dir
memory = OpenClawMemory(root)
day = datetime.date(2026, 11, 23)
refused = [r for r in (memory.append_daily(f"{name} {i}", day) for i in range(30)) if r["status"] != "ok"]
sys.exit(f"refused: {refused}" if refused else 0)
"""


@pytest.mark.skipif(not kernel.FD_WALK_AVAILABLE, reason="the race is in the descriptor walk")
def test_concurrent_first_appends_from_processes_lose_nothing(root: pathlib.Path, tmp_path: pathlib.Path) -> None:
    names = "abc"
    gate = tmp_path / "gate"
    gate.mkdir()
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD, str(root), str(gate), name, str(len(names))], stderr=subprocess.PIPE
        )
        for name in names
    ]
    errors = [worker.communicate(timeout=120)[1].decode() for worker in workers]
    assert [worker.returncode for worker in workers] == [0, 0, 0], errors
    assert sorted(log(root).read_text().splitlines()) == expected_lines(names, 30)


def test_read_only_and_allow_list_refuse_the_log(root: pathlib.Path) -> None:
    assert OpenClawMemory(root, read_only=True).append_daily("x", DAY)["code"] == "MEMORY_READ_ONLY"
    assert OpenClawMemory(root, allow=["MEMORY.md"]).append_daily("x", DAY)["code"] == "MEMORY_PATH_NOT_ALLOWED"
    assert OpenClawMemory(root, allow=["memory/*.md"]).append_daily("x", DAY)["status"] == "ok"
    assert log(root).read_text() == "x\n"
