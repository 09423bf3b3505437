"""The coverage-guided engine: atheris (libFuzzer) drives a harness.

The implementation under test is imported inside `atheris.instrument_imports`, so libFuzzer sees its
code coverage: the reference (`refmem`), or the top-level package of a `python:` target. A `cmd:`
target runs in another process, so only the fuzzer's own decoding is visible to libFuzzer there.

libFuzzer ends the process when the run is over; findings are written as they are found.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Callable, List, Optional

from .harness import Harness

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
    if target == "anthropic-sdk" or target.startswith("python:conformance.adapters.anthropic_sdk:"):
        return ["anthropic.lib.tools"]
    if target.startswith("python:"):
        module = target[len("python:") :].split(":", 1)[0]
        return [module.split(".", 1)[0]]
    return []


def fuzz(
    make_harness: Callable[[], Harness],
    target: str,
    max_time: Optional[float],
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

    started = time.monotonic()

    def finish() -> None:
        on_exit(harness)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(1 if harness.findings else 0)

    def test_one_input(data: bytes) -> None:
        found = harness.one_input(data)
        if found is not None and stop_on_first:
            finish()
        if max_runs is not None and harness.runs >= max_runs:
            finish()
        if max_time is not None and time.monotonic() - started >= max_time:
            finish()

    # libFuzzer leaves without running Python's exit handlers, so the budget is kept here and
    # libFuzzer's own limits are only a backstop.
    argv = [sys.argv[0], f"-seed={seed}", "-print_final_stats=1", "-timeout=60", "-max_len=1024"]
    if max_time is not None:
        argv.append(f"-max_total_time={int(max_time) + 30}")
    argv.extend(libfuzzer_args)
    atheris.Setup(argv, test_one_input)
    atheris.Fuzz()
    finish()
