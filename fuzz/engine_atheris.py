"""The coverage-guided engine: atheris (libFuzzer) drives a harness.

The implementation under test is imported inside `atheris.instrument_imports`, so libFuzzer sees its
code coverage: the reference (`refmem`), or the top-level package of a `python:` target. A `cmd:`
target runs in another process, so only the fuzzer's own decoding is visible to libFuzzer there.
With the cost oracle on, how close each run came to its time budget is fed back as coverage too
(`cost.cost_ladder`), so inputs that make the target work harder are kept and mutated further.

libFuzzer ends the process when the run is over; findings are written as they are found. The run's
deadline (from `--max-time`, counted from the command's start, so instrumenting and calibrating count)
is checked after every input, and the harness keeps it inside an input too (fuzz/session.py).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from typing import Callable, List, Optional

from refmem_harness.decode import MAX_COMMANDS
from refmem_harness.sequence_layout import scratch_dir_base

from .cost import CONFIRM_RUNS, cost_ladder
from .harness import Harness
from .seeds import growth_seeds

LABEL = "atheris (libFuzzer, coverage-guided)"


def available() -> bool:
    try:
        import atheris  # type: ignore[import-untyped]  # noqa: F401
    except ImportError:
        return False
    return True


def instrumented_packages(target: str) -> List[str]:
    if target in ("refmem", "reference"):
        return ["refmem"]
    if target == "anthropic-sdk" or target.startswith("python:refmem_conformance.adapters.anthropic_sdk:"):
        return ["anthropic.lib.tools"]
    if target.startswith("python:"):
        module = target[len("python:") :].split(":", 1)[0]
        return [module.split(".", 1)[0]]
    return []


BACKSTOP_SECONDS = 60
"""libFuzzer's limit on one input when steps have no timeout of their own (then it is what finds a hang)."""


def input_timeout(step_timeout: Optional[float]) -> int:
    """libFuzzer's per-input limit (`-timeout`): a backstop above the harness's own step timeout. One
    input is at most `MAX_COMMANDS` steps and a reset, measured up to `1 + CONFIRM_RUNS` times when it
    breaks a cost budget; each step is cut at `step_timeout` and reported as a hang by the harness. A
    fixed 60 s killed inputs the harness was still measuring with a long step timeout (the cost
    search's slow planted backends), as a libFuzzer timeout with no finding file."""
    if step_timeout is None or step_timeout <= 0:
        return BACKSTOP_SECONDS
    whole = (MAX_COMMANDS + 1) * (1 + CONFIRM_RUNS) * step_timeout
    return max(BACKSTOP_SECONDS, int(whole) + 30)


def fuzz(
    make_harness: Callable[[], Harness],
    target: str,
    deadline: Optional[float],
    max_runs: Optional[int],
    seed: int,
    stop_on_first: bool,
    libfuzzer_args: List[str],
    on_exit: Callable[[Harness], None],
    instrument: Optional[List[str]] = None,
) -> None:
    import atheris

    packages = instrument or instrumented_packages(target)
    if packages:
        with atheris.instrument_imports(include=packages):
            harness = make_harness()
    else:
        harness = make_harness()

    ladder = atheris.instrument_func(cost_ladder)

    corpus = tempfile.mkdtemp(prefix="refmem-fuzz-corpus-", dir=scratch_dir_base())
    for index, data in enumerate(growth_seeds() if harness.options.growth else ()):
        with open(os.path.join(corpus, f"growth-{index}"), "wb") as out:
            out.write(data)

    def finish() -> None:
        try:
            shutil.rmtree(corpus, ignore_errors=True)
            on_exit(harness)
            sys.stdout.flush()
            sys.stderr.flush()
        except BrokenPipeError:  # the reader has gone: nothing more to say
            pass
        os._exit(1 if harness.findings else 0)

    def test_one_input(data: bytes) -> None:
        found = harness.one_input(data)
        ladder(harness.last_cost_bucket)  # the measured cost as coverage (fuzz/cost.py)
        if found is not None and stop_on_first:
            finish()
        if max_runs is not None and harness.runs >= max_runs:
            finish()
        if deadline is not None and time.monotonic() >= deadline:
            finish()

    # libFuzzer leaves without running Python's exit handlers, so the budget is kept here and
    # libFuzzer's own limits are only a backstop.
    timeout = input_timeout(harness.options.step_timeout)
    argv = [sys.argv[0], f"-seed={seed}", "-print_final_stats=1", f"-timeout={timeout}", "-max_len=1024"]
    if deadline is not None:
        argv.append(f"-max_total_time={int(max(deadline - time.monotonic(), 0)) + 30}")
    argv.extend(libfuzzer_args)
    argv.append(corpus)  # libFuzzer starts from the growth seeds and keeps its new inputs there
    atheris.Setup(argv, test_one_input)
    atheris.Fuzz()
    finish()
