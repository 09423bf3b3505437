"""Entry points for an external libFuzzer farm (OSS-Fuzz, ClusterFuzzLite): the same harnesses, with
the farm's conventions. A broken oracle raises `OracleBroken`, so the farm records the input as a
crash, minimises it with libFuzzer and files it; `refmem-fuzz replay CRASH_FILE --raw --target SPEC`
decodes that raw input and replays it as a command sequence.
"""

from __future__ import annotations

import pathlib
import sys
from typing import List, Optional

from refmem_harness.sequence_layout import scratch_dir

from .harness import MEMORY_HARNESSES, Options


class OracleBroken(Exception):
    """An oracle broke; the message is the finding file's JSON (host paths already replaced)."""


def run(harness_name: str, target: str = "refmem", argv: Optional[List[str]] = None) -> None:
    import atheris  # type: ignore[import-untyped]

    from refmem_harness.finding import dumps

    from .engine_atheris import instrumented_packages

    # No cost oracle on a farm: its machines differ from run to run and a crash must reproduce on any
    # of them; libFuzzer's own -timeout and -rss_limit_mb are the farm's cost limits.
    options = Options(target=target, minimise_budget=0, engine="libfuzzer", cost=False)
    work = scratch_dir("refmem-fuzz-farm-")
    with atheris.instrument_imports(include=instrumented_packages(target)):
        harness = MEMORY_HARNESSES[harness_name](options, pathlib.Path(work))

    def test_one_input(data: bytes) -> None:
        harness.seen.clear()  # the farm deduplicates; every broken oracle is reported
        found = harness.one_input(data)
        if found is not None:
            raise OracleBroken(dumps(found))

    atheris.Setup(list(argv if argv is not None else sys.argv), test_one_input)
    atheris.Fuzz()
