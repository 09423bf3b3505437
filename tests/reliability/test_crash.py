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
import string
import threading
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import pytest

from .reliability_support import MemoryHandler, assert_clean_listing, disk_files, explain, report

KILLS = int(os.environ.get("REFMEM_KILLS", "1000"))
PARALLEL = max(1, int(os.environ.get("REFMEM_KILL_PARALLEL", "4")))
MAX_DELAY = float(os.environ.get("REFMEM_KILL_MAX_MS", "40")) / 1000.0

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork and SIGKILL")]

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


def _child(root: Path, folder: str, seed: int, log_path: Path) -> None:
    """Runs in the forked child: never returns."""
    code = 0
    try:
        rng = random.Random(seed)
        handler = MemoryHandler(root)
        files, _ = disk_files(root, folder)
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
    while outcome.kills < KILLS:
        batch += 1
        children = []
        for index, folder in enumerate(folders[: min(PARALLEL, KILLS - outcome.kills)]):
            log_path = logs / f"{folder}.log"
            if log_path.exists():
                log_path.unlink()
            seed = batch * 1000 + index
            pid = os.fork()
            if pid == 0:
                _child(root, folder, seed, log_path)
            children.append((pid, folder, log_path, started + 0))
        delays = sorted((rng.uniform(0.001, MAX_DELAY), pid) for pid, *_ in children)
        t0 = time.monotonic()
        for delay, pid in delays:
            pause = t0 + delay - time.monotonic()
            if pause > 0:
                time.sleep(pause)
            os.kill(pid, signal.SIGKILL)
        for pid, folder, log_path, _ in children:
            _, status = os.waitpid(pid, 0)
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
