"""`--max-time` bounds a whole run: every phase (the engines, each sequence and each step near the end,
confirming a cost, minimising) stops at the deadline, and a run ends within RUN_SLACK of it.

The mechanism is checked without timing (a deadline moved into the past, counted calls, a step that never
returns); whole runs are timed against a generous absolute margin, far below what they took before the bound
(a planted slow backend: 41 s for --max-time 3), so a loaded machine does not fail them.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import threading
import time
from typing import Any, List

import pytest
from fuzz_support import HERE, REPO, VULNERABLE, harness
from refmem_fuzz.cli import RUN_SLACK
from refmem_fuzz.minimise import minimise
from refmem_fuzz.session import Settings, run_sequence

from refmem_fuzz import engine_atheris, engine_random
from refmem_harness.sequence_layout import Layout
from refmem_harness.targets import StepResult

SLOW = "python:slow_backend:make"
MARGIN = 30.0
"""Seconds on top of --max-time + RUN_SLACK for the interpreter's start and a busy machine."""
ESCAPE = {"command": "view", "path": "/memories_evil/secret.txt"}
NOISE = [{"command": "view", "path": "/memories"}, {"command": "create", "path": "/memories/a.md", "file_text": "x"}]


class CountingTarget:
    """An in-memory target that counts its calls and can run a hook on one of them."""

    storage = "memory"

    def __init__(self, hook_at: int = -1, hook: Any = None) -> None:
        self.calls = 0
        self.hook_at, self.hook = hook_at, hook

    def reset(self, root: pathlib.Path) -> None:
        pass

    def execute(self, command: Any) -> StepResult:
        self.calls += 1
        if self.calls == self.hook_at:
            self.hook()
        return StepResult("ok", False)


def _layout(tmp_path: pathlib.Path) -> Layout:
    layout = Layout(tmp_path / "w", hostile=False)
    layout.reset()
    return layout


# --- each phase checks the deadline -------------------------------------------------------------


def test_no_sequence_starts_after_the_deadline(tmp_path: pathlib.Path) -> None:
    target = CountingTarget()
    report = run_sequence(NOISE * 4, target, _layout(tmp_path), Settings(deadline=time.monotonic() - 1))
    assert target.calls == 0 and report.cut and report.commands == [] and report.violations == []


def test_no_step_starts_after_the_deadline(tmp_path: pathlib.Path) -> None:
    settings = Settings(deadline=time.monotonic() + 3600, step_timeout=5.0)

    def deadline_passes() -> None:
        settings.deadline = time.monotonic() - 1

    target = CountingTarget(hook_at=3, hook=deadline_passes)
    commands = NOISE * 4
    report = run_sequence(commands, target, _layout(tmp_path), settings)
    assert target.calls == 3 and report.cut
    assert report.commands == commands[:3] and len(report.steps) == 3 and report.tree_after is None


def test_a_step_still_running_at_the_deadline_is_given_up(tmp_path: pathlib.Path) -> None:
    """A step that never returns (its own timeout an hour away) is abandoned STEP_GRACE after the deadline."""
    release = threading.Event()
    target = CountingTarget(hook_at=2, hook=release.wait)
    settings = Settings(deadline=time.monotonic() + 0.2, step_timeout=3600.0)
    try:
        report = run_sequence(NOISE * 2, target, _layout(tmp_path), settings)
    finally:
        release.set()
    assert report.cut and target.calls == 2 and len(report.steps) == 1 and report.commands == NOISE[:1]


def test_minimising_stops_at_the_deadline() -> None:
    calls: List[int] = []

    def still_fails(candidate: List[Any]) -> bool:
        calls.append(len(candidate))
        return True

    commands = list(range(40))
    assert minimise(commands, still_fails, 200, deadline=time.monotonic() - 1) == commands and calls == []
    assert minimise(commands, still_fails, 200, deadline=time.monotonic() + 3600) != commands and calls


def test_confirming_and_shrinking_stop_at_the_deadline(tmp_path: pathlib.Path) -> None:
    fuzzer = harness(tmp_path, target=VULNERABLE, hostile=False)
    try:
        commands = NOISE * 3 + [ESCAPE] + NOISE
        report = fuzzer.run(commands)
        assert report.primary is not None and report.primary.family in ("escape", "leak")
        calls = [0]
        real = fuzzer.target.execute

        def counted(command: Any) -> Any:
            calls[0] += 1
            return real(command)

        fuzzer.target.execute = counted  # type: ignore[method-assign]
        fuzzer.options.deadline = fuzzer.settings.deadline = time.monotonic() - 1
        found = fuzzer.shrink(report)
        assert found.commands == commands  # kept whole: no time left to minimise
        assert fuzzer.confirm(commands, "cost:time:view") is None
        assert calls[0] == 0
    finally:
        fuzzer.close()


def test_the_random_engine_starts_nothing_after_the_deadline(tmp_path: pathlib.Path) -> None:
    fuzzer = harness(tmp_path)
    try:
        stats = engine_random.fuzz(fuzzer, None, None, 1, deadline=time.monotonic() - 1)
    finally:
        fuzzer.close()
    assert stats.runs == 0 and fuzzer.runs == 0


# --- whole runs ---------------------------------------------------------------------------------


def _timed(*args: str) -> float:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), str(HERE)]))
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "refmem_fuzz", *args], env=env, capture_output=True, text=True,
                          timeout=600)
    seconds = time.monotonic() - started
    assert done.returncode in (0, 1), done.stdout[-2000:] + done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    return seconds


ENGINES = ["random"] + (["atheris"] if engine_atheris.available() else [])


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("target", ["refmem", SLOW])
def test_a_run_ends_within_its_time(tmp_path: pathlib.Path, target: str, engine: str) -> None:
    max_time = 3.0
    seconds = _timed("--target", target, "--engine", engine, "--max-time", str(max_time),
                     "--findings", str(tmp_path / "findings"))
    assert seconds < max_time + RUN_SLACK + MARGIN


def test_parallel_jobs_and_robustness_runs_end_within_their_time(tmp_path: pathlib.Path) -> None:
    seconds = _timed("--target", SLOW, "--engine", "random", "--jobs", "2", "--max-time", "3",
                     "--findings", str(tmp_path / "findings"))
    assert seconds < 3 + RUN_SLACK + MARGIN
    assert _timed("robust", "serve", "--max-time", "2") < 2 + RUN_SLACK + MARGIN
