"""The cost oracle: it finds planted superlinear work, keeps its findings replayable, and its pieces
(budgets, measuring, growth forms, packed finding files) do what they say.

Every search here is bounded by a number of runs, never by seconds: a verdict must not depend on how busy
the machine is. Time limits (the planted backends' step timeout, a subprocess's) only guard against a hang.
"""

from __future__ import annotations

import json
import os
import pathlib
import random
import sys
import tempfile
import time
from typing import Optional

import pytest
from fuzz_support import PREFIX_REFERENCE, QUADRATIC, atheris_run
from refmem_fuzz.harness import Harness, Options
from refmem_fuzz.harnesses import HARNESSES
from refmem_fuzz.meter import CPU, TRACEMALLOC, Cost, Meter
from refmem_fuzz.reach import open as open_target
from refmem_fuzz.replay import replay

from refmem_fuzz import cost, engine_atheris, engine_random, seeds
from refmem_harness import finding as finding_files
from refmem_harness import grow
from refmem_harness.decode import decode

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
RUNS = 3000
"""Inputs each fixed-seed search may take; the seeds below find their backend in far fewer (250 and 133 random
runs, about 180 atheris runs)."""
REFERENCE_RUNS = 300
"""Inputs of the bounded run on the reference, all of them measured."""
HANG_GUARD = 900
"""Seconds after which a search in a subprocess counts as hung; a search ends by its number of runs."""
SLOW_STEP = 60.0
REPLAYS = 3
"""How many times a cost finding may be replayed before its replay counts as failed (each one times the machine)."""
"""The step timeout for the planted backends: on a slow or loaded machine their quadratic steps outlast the default
5 s and would be cut off as hangs; they must run to the end to be measured (and found) as cost."""


def _cost_harness(work: pathlib.Path, target: str, findings: pathlib.Path) -> Harness:
    options = Options(target=target, hostile=False, findings_dir=findings, engine="random", seed=1,
                      step_timeout=SLOW_STEP)
    return HARNESSES["sequence"](options, work / "work")


@pytest.mark.slow
@pytest.mark.parametrize(
    "target, seed, oracle",
    [(QUADRATIC, 6, "cost:time:view"), (PREFIX_REFERENCE, 2, "cost:time:str_replace")],
    ids=["quadratic-view", "prefix-reference-str_replace"],
)
def test_the_cost_oracle_finds_planted_quadratic_work(tmp_path: pathlib.Path, scratch: pathlib.Path, target: str,
                                                      seed: int, oracle: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # The budget is calibrated here, beside what it judges: a unit cached by an earlier test in this process
    # (taken while something else traced allocations or held the caches) is not this test's measure.
    monkeypatch.setattr(cost, "_CALIBRATED", [])
    fuzzer = _cost_harness(scratch, target, tmp_path / "findings")
    try:
        stats = engine_random.fuzz(fuzzer, max_time=None, max_runs=RUNS, seed=seed, stop_on_first=True)
    finally:
        fuzzer.close()
    assert fuzzer.findings, f"nothing found in {stats.runs} runs"
    found = fuzzer.findings[0]
    assert found.oracle == oracle, finding_files.dumps(found)[:2000]
    record = found.cost
    assert record is not None
    # Every run that kept the finding broke the budget, and the file says by how much.
    assert len(record["runs_over_budget"]) == 1 + cost.CONFIRM_RUNS
    assert min(record["runs_over_budget"]) > record["budget"]["seconds"]
    assert record["measured"]["seconds"] > record["budget"]["seconds"]
    # The file is small (the large input packed, long outputs cut), replays, and holds no host path.
    saved = sorted((tmp_path / "findings").glob("cost-*.json"))
    assert len(saved) == 1
    text = saved[0].read_text()
    assert len(text) < 64_000 and '"$repeat"' in text
    assert "CANARY-" not in text and "/dev/shm" not in text and "/tmp/" not in text
    loaded = finding_files.load(saved[0])
    assert loaded.commands == found.commands
    assert max(cost.input_chars(command) for command in loaded.commands) > 10_000
    # A replay times the machine again: on a busy machine one replay can land in a quiet moment of the calibration
    # and a loaded one of the run (or the reverse), so the finding must replay in one of REPLAYS tries.
    replayed = []
    while len(replayed) < REPLAYS and not any(oracle in found for found in replayed):
        replayed.append({v.oracle for v in replay(loaded, target, step_timeout=SLOW_STEP).violations})
    assert any(oracle in found for found in replayed), replayed
    # The same commands on the reference cost a small part of the budget.
    on_reference = replay(loaded, "refmem")
    step = next(r for r in on_reference.costs if r["step"] == found.step)
    assert step["measured"]["seconds"] < step["budget"]["seconds"] / 4
    assert not [v for v in on_reference.violations if v.family == "cost"]


@pytest.mark.slow
def test_a_stalled_machine_does_not_confirm_a_cost_finding(
    tmp_path: pathlib.Path, scratch: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Re-runs on a machine measured eight times slower than at calibration are judged against budgets
    eight times larger: the planted quadratic step, a few times over its budget, is then no finding."""
    fuzzer = _cost_harness(scratch, PREFIX_REFERENCE, tmp_path / "findings")
    try:
        engine_random.fuzz(fuzzer, max_time=None, max_runs=RUNS, seed=2, stop_on_first=True)
        assert fuzzer.findings
        found = fuzzer.findings[0]
        assert found.cost is not None and min(found.cost["runs_over_budget"]) < 8 * found.cost["budget"]["seconds"]
        monkeypatch.setattr(cost, "slowdown", lambda: 8.0)
        assert fuzzer.confirm(found.commands, found.oracle) is None
        assert fuzzer.settings.budget is not None and fuzzer.settings.budget.factor == 1.0  # put back
    finally:
        fuzzer.close()


def test_slowdown_compares_the_calibration_job_now_with_then(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cost, "_CALIBRATED", [cost._job_seconds_per_char(2) / 10])
    assert cost.slowdown() > cost.STALL  # the job "was" ten times faster at calibration


@pytest.mark.slow
@pytest.mark.skipif(not engine_atheris.available(), reason="atheris is not installed")
def test_the_atheris_engine_finds_planted_quadratic_work(tmp_path: pathlib.Path) -> None:
    """libFuzzer's own limit on one unit (60 s) is raised to the hang guard: a unit holds a finding's re-runs and
    minimisation, a dozen runs of quadratic steps, which took 83 s on a machine at load 6."""
    done = atheris_run(PREFIX_REFERENCE, tmp_path, HANG_GUARD, HANG_GUARD + 300, "--runs", str(RUNS),
                       "--step-timeout", str(SLOW_STEP), f"--libfuzzer-arg=-timeout={HANG_GUARD}")
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    assert "FINDING cost:time:str_replace" in done.stdout
    assert list(tmp_path.glob("cost-time-str_replace-*.json"))


@pytest.mark.slow
def test_a_bounded_run_on_the_reference_breaks_no_budget(scratch: pathlib.Path) -> None:
    """A bounded run with the default measuring (memory too) on the hostile layout: no cost finding."""
    options = Options(target="refmem", engine="random", seed=9)
    fuzzer = HARNESSES["sequence"](options, scratch / "work")
    try:
        stats = engine_random.fuzz(fuzzer, max_time=None, max_runs=REFERENCE_RUNS, seed=9)
    finally:
        fuzzer.close()
    assert stats.runs == REFERENCE_RUNS
    assert fuzzer.findings == [], finding_files.dumps(fuzzer.findings[0])[:3000]


# --- pieces ---------------------------------------------------------------------------------------


def test_budgets_are_linear_in_the_input_and_checked_per_kind() -> None:
    budget = cost.Budget(unit_seconds=1e-7)
    assert budget.seconds(2000, CPU) - budget.seconds(1000, CPU) == pytest.approx(
        budget.seconds(1000, CPU) - budget.seconds(0, CPU))
    assert budget.seconds(1000, "wall") == pytest.approx(cost.WALL_SLACK * budget.seconds(1000, CPU))
    chars = 10_000
    fine = Cost(budget.seconds(chars, CPU) / 4, 100, None, CPU)
    assert cost.check(0, {"command": "view"}, fine, budget, chars) == []
    slow = Cost(budget.seconds(chars, CPU) * 2, budget.output_chars(chars) + 1, None, CPU)
    found = cost.check(3, {"command": "str_replace"}, slow, budget, chars)
    assert [v.oracle for v in found] == ["cost:time:str_replace", "cost:output:str_replace"]
    assert all(v.step == 3 for v in found)
    # A call under tracemalloc has a memory figure and no usable time: only memory and output count.
    traced = Cost(budget.seconds(chars, CPU) * 2, 10, budget.memory_bytes(chars) + 1, CPU, TRACEMALLOC)
    assert [v.oracle for v in cost.check(1, {"command": "view"}, traced, budget, chars)] == ["cost:memory:view"]
    assert cost.bucket(slow, budget, chars) == cost.BUCKETS
    assert cost.bucket(fine, budget, chars) == cost.BUCKETS - 1
    assert cost.bucket(traced, budget, chars) == 0
    assert cost.bucket(Cost(0.0, 0, None), budget, chars) == 0


def test_a_cheap_step_gives_the_engine_the_same_feedback_however_busy_the_machine() -> None:
    """An ordinary command costs a few hundredths of a budget or less, and a busy machine can double or treble its
    CPU time: that jitter must not reach the engine as new coverage (it sent an atheris search from one seed from
    180 runs to more than 3,000). Steps from a sixteenth of the budget up keep a gradient."""
    budget = cost.Budget(unit_seconds=1e-7)
    chars = 1000

    def at(fraction: float) -> int:
        return cost.bucket(Cost(budget.seconds(chars, CPU) * fraction, 10, None, CPU), budget, chars)

    assert {at(1 / 90), at(1 / 45), at(1 / 30)} == {0}
    costly = [at(1 / 12), at(1 / 6), at(1 / 3)]
    assert costly == sorted(set(costly)) and costly[0] > 0


def test_calibration_is_measured_once_per_process() -> None:
    unit = cost.calibrate()
    assert 0 < unit < 1e-5
    assert cost.calibrate() == unit
    assert cost.make_budget(True).unit_seconds == unit


def test_input_size_counts_strings_and_survives_deep_nesting() -> None:
    assert cost.input_chars({"command": "view", "path": "/memories"}) == 2 + (7 + 2) + (4 + 2) + (4 + 2) + (9 + 2)
    deep: object = 1
    for _ in range(100_000):
        deep = [deep]
    assert cost.input_chars(deep) > 200_000  # no recursion
    assert cost.input_chars(10**300) > 300


def test_the_meter_sees_time_output_and_memory() -> None:
    with tempfile.TemporaryDirectory() as work:
        target = open_target("refmem", pathlib.Path(work), 5.0)
        meter = Meter(target, memory=True)
        big = "x" * 3_000_000
        step, spent = meter.measure(lambda: target.execute({"command": "create", "path": "/memories/a",
                                                            "file_text": big[:1000]}))
        assert not step.is_error and spent.output_chars == len(step.output)
        _, spent = meter.measure(lambda: bytearray(len(big)), trace=True)
        assert spent.memory is TRACEMALLOC and spent.memory_bytes is not None and spent.memory_bytes >= len(big)
        assert not spent.timed
        _, spent = meter.measure(lambda: bytearray(len(big)))
        assert spent.memory_bytes is None and spent.timed and spent.clock == CPU and spent.seconds >= 0
        target.close()


@pytest.mark.parametrize("step_timeout", [None, 5.0], ids=["caller-thread", "worker-thread"])
def test_the_meter_charges_a_call_its_own_threads_cpu_time(step_timeout: Optional[float]) -> None:
    """Not the process's: a call that sleeps while another thread of the process burns a CPU is charged a few
    milliseconds, on whichever thread the target runs it, however busy the machine is (the process's CPU time
    over the call, which the meter used to take, is at least waiting_backend.SPIN_SECONDS)."""
    import waiting_backend

    with tempfile.TemporaryDirectory() as work:
        target = open_target("python:waiting_backend:make", pathlib.Path(work), step_timeout)
        try:
            meter = Meter(target, memory=False)
            process = time.process_time()
            step, spent = meter.measure(lambda: target.execute({"command": "view", "path": "/memories"}))
            process = time.process_time() - process
        finally:
            target.close()
            waiting_backend.stop()
    assert step.output == "waited" and spent.clock == CPU
    assert process >= waiting_backend.SPIN_SECONDS
    assert spent.seconds < waiting_backend.SPIN_SECONDS / 4, spent


def test_the_meter_measures_an_adapter_process() -> None:
    with tempfile.TemporaryDirectory() as work:
        target = open_target(f"cmd:{sys.executable} -m refmem.serve", pathlib.Path(work), 10.0)
        try:
            meter = Meter(target, memory=True)
            assert not meter.in_process and meter.pid is not None
            step, spent = meter.measure(lambda: target.execute({"command": "view", "path": "/memories"}))
            assert not step.is_error and spent.output_chars == len(step.output)
            if os.path.exists(f"/proc/{meter.pid}/stat"):
                assert spent.clock == CPU
        finally:
            target.close()


def test_growth_forms_decode_deterministically_and_stay_bounded() -> None:
    found = seeds.growth_seeds()
    assert len(found) == len(seeds.SHAPES)  # every shape is reachable from a short input
    for data, matches in zip(found, seeds.SHAPES.values()):
        commands = decode(data)
        assert matches(commands)
        assert decode(data) == commands
        assert len(commands) <= grow.MAX_EXPANDED
        for command in commands:
            for value in command.values() if isinstance(command, dict) else ():
                assert not isinstance(value, str) or len(value) <= grow.MAX_CHARS
    assert seeds.growth_seeds() == found


def test_without_growth_no_input_decodes_to_a_growth_form() -> None:
    rng = random.Random(3)
    inputs = list(seeds.growth_seeds()) + [bytes(rng.randrange(256) for _ in range(200)) for _ in range(300)]

    def large(commands: list) -> bool:
        values = [v for c in commands if isinstance(c, dict) for v in c.values()]
        return (
            len(commands) > 8
            or any(isinstance(v, str) and len(v) > 4096 for v in values)
            or any(isinstance(v, int) and abs(v) >= 2**31 for v in values)
            or any(isinstance(v, list) and any(isinstance(i, int) and abs(i) >= 2**31 for i in v) for v in values)
            or any(cost.input_chars(v) > 200 and not isinstance(v, str) for v in values)
        )

    assert sum(large(decode(data)) for data in inputs) >= len(seeds.SHAPES)
    assert not any(large(decode(data, growth=False)) for data in inputs)


def test_repeated_parameters_are_packed_in_finding_files_and_expanded_on_loading() -> None:
    text = "a\n" * 50_000 + "a"
    assert finding_files.unpack(finding_files.pack(text)) == text
    assert finding_files.pack(text) == {"$repeat": "a\n", "times": 50_000, "then": "a"}
    assert finding_files.pack("short") == "short"
    varied = " ".join(str(i) for i in range(2000))
    assert finding_files.pack(varied) == varied
    found = finding_files.Finding(
        target="refmem", harness="sequence", oracle="cost:time:view", detail="", step=0, hostile_layout=False,
        differential=False, commands=[{"command": "create", "path": "/memories/a", "file_text": text}],
        observed=[{"input": {"command": "create", "path": "/memories/a", "file_text": text}, "output": "x" * 10_000,
                   "is_error": False}],
    )
    data = json.loads(finding_files.dumps(found))
    assert data["format"] == finding_files.FORMAT
    assert len(data["observed"][0]["output"]) < 5000
    assert finding_files.Finding.from_json(data).commands == found.commands


def test_a_calibration_taken_while_tracing_allocations_is_not_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tracing allocations slows the calibration job several times over; kept, that unit would make every
    later time budget of the process as many times too lenient, and planted quadratic work would pass."""
    import tracemalloc

    monkeypatch.setattr(cost, "_CALIBRATED", [])
    tracemalloc.start()
    try:
        traced = cost.calibrate()
    finally:
        tracemalloc.stop()
    assert cost._CALIBRATED == []
    untraced = cost.calibrate()
    assert cost._CALIBRATED == [untraced]
    assert traced > 2 * untraced
