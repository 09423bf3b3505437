"""Crash safety: writers killed with SIGKILL at random moments leave every file old or new.

Many short-lived children are forked in parallel batches, each editing its own folder in a loop
(create, str_replace, insert, rename of files and folders, delete of files and folders). Before each
command a child logs, with one unbuffered ``write``, the paths the command touches and their
content before and after; after the command it logs that it finished. The parent kills each child
after a random delay, then checks the folder against the log:

* every command logged as finished is on disk;
* the command in flight at the kill is entirely undone or entirely done (per file for a recursive
  folder delete, which is not atomic and is not promised to be);
* no file is torn, no temp file shows in a listing, no stray name appears;
* the next child (and, at the end, a fresh handler) works on the directory exactly as left.

``REFMEM_KILLS`` sets the number of kills (default 1000), ``REFMEM_KILL_PARALLEL`` the children per
batch (default 4), ``REFMEM_KILL_MAX_MS`` the longest delay before a kill (default 40).
"""

from __future__ import annotations

import json
import os
import random
import signal
import threading
import time
from pathlib import Path
from typing import Dict, List, Optional

import pytest
from forker_support import Forker

from .crash_support import Files
from .reliability_support import MemoryHandler, assert_clean_listing, disk_files, explain, report

KILLS = int(os.environ.get("REFMEM_KILLS", "1000"))
PARALLEL = max(1, int(os.environ.get("REFMEM_KILL_PARALLEL", "4")))
MAX_DELAY = float(os.environ.get("REFMEM_KILL_MAX_MS", "40")) / 1000.0

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork and SIGKILL")]

# --- the parent -------------------------------------------------------------------------------


class Outcome:
    def __init__(self) -> None:
        self.kills = 0
        self.in_flight = 0
        self.in_flight_done = 0
        self.in_flight_undone = 0
        self.commands_finished = 0
        self.child_errors: List[str] = []
        self.temps_seen = 0
        self.max_temps = 0


def _check_folder(root: Path, folder: str, log_path: Path, start: Files, outcome: Outcome) -> Files:
    """Compare the folder with the log; return the state now on disk."""
    raw = log_path.read_bytes() if log_path.exists() else b""
    lines = raw.split(b"\n")
    lines = lines[:-1]  # the last piece is empty or a line cut by the kill: not written whole
    expected = dict(start)
    pending = None
    for line in lines:
        entry = json.loads(line)
        if "unexpected" in entry:
            outcome.child_errors.append(f"{entry['cmd']} -> {entry['unexpected']}")
            pending = None
            continue
        if entry.get("done"):
            assert pending is not None
            for name, text in pending["after"].items():
                if text is None:
                    expected.pop(name, None)
                else:
                    expected[name] = text
            outcome.commands_finished += 1
            pending = None
            continue
        # a new command: what it says about "before" must be what we know
        for name, text in entry["before"].items():
            assert expected.get(name) == text, f"child's view of {folder}/{name} diverged from the log"
        pending = entry
    actual, temps = disk_files(root, folder)
    actual = {os.path.relpath(p, folder): c for p, c in actual.items()}
    outcome.temps_seen += len(temps)
    if pending is None:
        assert actual == expected, _diff(expected, actual)
        return actual
    outcome.in_flight += 1
    after = dict(expected)
    for name, text in pending["after"].items():
        if text is None:
            after.pop(name, None)
        else:
            after[name] = text
    if actual == expected:
        outcome.in_flight_undone += 1
    elif actual == after:
        outcome.in_flight_done += 1
    elif not pending["atomic"]:
        # per file: each path touched is old or new, everything else untouched
        touched = set(pending["after"])
        for name in set(actual) | set(expected):
            if name in touched:
                assert actual.get(name) in (expected.get(name), pending["after"][name]), name
            else:
                assert actual.get(name) == expected.get(name), name
    else:
        raise AssertionError(
            f"after a kill during {pending['cmd']!r}, {folder} is neither the old nor the new state:\n"
            + _diff(expected, actual)
        )
    return actual


def _diff(expected: Files, actual: Files) -> str:
    out = []
    for name in sorted(set(expected) | set(actual)):
        a, b = expected.get(name), actual.get(name)
        if a != b:
            out.append(f"  {name}: expected {_short(a)}, found {_short(b)}")
    return "\n".join(out) or "  (same)"


def _short(text: Optional[str]) -> str:
    if text is None:
        return "nothing"
    return repr(text[:60]) + (f"... ({len(text)} chars)" if len(text) > 60 else "")


@pytest.mark.slow
def test_sigkill_during_writes_leaves_old_or_new(root: Path, tmp_path: Path) -> None:
    started = time.monotonic()
    rng = random.Random(int(os.environ.get("REFMEM_KILL_SEED", "818")))
    folders = [f"w{i}" for i in range(PARALLEL)]
    setup = MemoryHandler(root)
    for folder in folders:
        for i in range(4):
            result = setup.execute(
                {"command": "create", "path": f"/memories/{folder}/seed{i}.md",
                 "file_text": "".join(f"L{j} seed{i}x{j}\n" for j in range(20))}
            )
            assert not result.is_error, result.output
    state: Dict[str, Files] = {}
    for folder in folders:
        files, _ = disk_files(root, folder)
        state[folder] = {os.path.relpath(p, folder): c for p, c in files.items()}
    logs = tmp_path / "logs"
    logs.mkdir()
    outcome = Outcome()
    batch = 0
    with Forker([f"{__package__}.crash_support:warm"]) as forker:  # forks cost 1-2 ms there, 16 ms from a full pytest
        while outcome.kills < KILLS:
            batch += 1
            children = []
            for index, folder in enumerate(folders[: min(PARALLEL, KILLS - outcome.kills)]):
                log_path = logs / f"{folder}.log"
                if log_path.exists():
                    log_path.unlink()
                seed = batch * 1000 + index
                pid = forker.start(f"{__package__}.crash_support:child", str(root), folder, seed, str(log_path))
                children.append((pid, folder, log_path))
            delays = sorted((rng.uniform(0.001, MAX_DELAY), pid) for pid, *_ in children)
            t0 = time.monotonic()
            for delay, pid in delays:
                pause = t0 + delay - time.monotonic()
                if pause > 0:
                    time.sleep(pause)
                os.kill(pid, signal.SIGKILL)
            for pid, folder, log_path in children:
                status = forker.wait(pid)
                if os.WIFEXITED(status):  # it stopped by itself: a command failed or it crashed
                    code = os.WEXITSTATUS(status)
                    if code == 4:
                        outcome.child_errors.append(f"child for {folder} crashed (exit 4)")
                else:
                    assert os.WTERMSIG(status) == signal.SIGKILL
                    outcome.kills += 1
                state[folder] = _check_folder(root, folder, log_path, state[folder], outcome)
            outcome.max_temps = max(outcome.max_temps, outcome.temps_seen)
            assert not outcome.child_errors, "\n".join(outcome.child_errors[:10])

    # The handler works on the directory exactly as the kills left it.
    after = MemoryHandler(root)
    listing = assert_clean_listing(after)
    problems: List[str] = []
    done = threading.Event()

    def run(tool_input: dict):
        result = after.execute(tool_input)
        if result.is_error:
            problems.append(explain(after, tool_input, result))
        return result

    def final_round() -> None:
        try:
            for folder in folders:
                assert_clean_listing(after, f"/memories/{folder}")
                for name, text in sorted(state[folder].items())[:20]:
                    view = run({"command": "view", "path": f"/memories/{folder}/{name}"})
                    if view.is_error:
                        continue
                    numbered = [line for line in view.output.split("\n")[1:] if "\t" in line]
                    shown = "".join(line.split("\t", 1)[1] + "\n" for line in numbered[:-1])
                    if not text.startswith(shown):
                        problems.append(f"view of {folder}/{name} differs from the disk")
                probe = f"/memories/{folder}/after-crash.md"
                run({"command": "create", "path": probe, "file_text": "a\n"})
                run({"command": "str_replace", "path": probe, "old_str": "a", "new_str": "b"})
                run({"command": "insert", "path": probe, "insert_line": 1, "insert_text": "c"})
                if (root / folder / "after-crash.md").read_text() != "b\nc\n":
                    problems.append(f"{probe} has the wrong content after create/str_replace/insert")
                run({"command": "delete", "path": probe})
        except Exception as error:  # noqa: BLE001
            problems.append(f"final round raised {error!r}")
        finally:
            done.set()

    worker = threading.Thread(target=final_round, daemon=True)
    worker.start()
    worker.join(60)
    assert done.is_set(), "the handler did not finish commands on the directory left by the kills (stuck lock?)"
    assert not problems, "\n".join(problems[:5])
    _, temps = disk_files(root)
    elapsed = time.monotonic() - started
    report(
        "crash-sigkill",
        kills=outcome.kills,
        batches=batch,
        parallel=PARALLEL,
        max_delay_ms=MAX_DELAY * 1000,
        commands_finished_before_kills=outcome.commands_finished,
        killed_mid_command=outcome.in_flight,
        mid_command_found_old=outcome.in_flight_undone,
        mid_command_found_new=outcome.in_flight_done,
        mid_command_partial_folder_delete=outcome.in_flight - outcome.in_flight_undone - outcome.in_flight_done,
        torn_files=0,
        temp_files_left_on_disk=len(temps),
        temp_files_listed=0,
        seconds=round(elapsed, 1),
    )
    assert outcome.kills >= KILLS
    assert outcome.in_flight > 0, "no kill landed during a command: raise REFMEM_KILL_MAX_MS"
    assert listing
