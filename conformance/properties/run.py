"""A property run: one search per class the profile judges, each in its own folder with its own target.

Each class opens the target afresh (and the embedded reference beside it for the reference class) in a new
folder under `workdir`, searches, and removes the folder; a failure is written as a finding file in
`findings` (a new temporary folder when none is given) before the next class starts.
"""

from __future__ import annotations

import pathlib
import secrets
import tempfile
from typing import Callable, List, Optional, Sequence

from refmem_harness.layout import remove
from refmem_harness.signalling import ErrorPrefix
from refmem_harness.targets import DEFAULT_STEP_TIMEOUT

from . import DEFAULT_EXAMPLES, DEFAULT_SEED, STEPS, report
from .judge import gating_classes, open_context
from .outcome import SearchResult
from .search import search


def run_class(
    spec: str,
    cls: str,
    *,
    examples: int = DEFAULT_EXAMPLES,
    seed: int = DEFAULT_SEED,
    steps: int = STEPS,
    timeout: Optional[float] = DEFAULT_STEP_TIMEOUT,
    error_prefix: ErrorPrefix = None,
    workdir: Optional[pathlib.Path] = None,
    findings: Optional[pathlib.Path] = None,
) -> SearchResult:
    """Search `spec` for a sequence that breaks `cls`; raises TargetError (the target cannot be opened) or
    SearchError (it cannot be reset, or behaves differently on the same sequence)."""
    base = pathlib.Path(tempfile.mkdtemp(prefix="refmem-conformance-properties_", dir=workdir))
    try:
        canary = "canary-" + secrets.token_hex(8)
        context = open_context(spec, base, canary, frozenset({cls}), timeout, error_prefix)
        try:
            result = search(context, cls, examples, seed, steps)
        finally:
            context.close()
    finally:
        remove(base)
    for failure in result.failures:
        result.finding_files.append(report.save(failure, spec, seed, result.runs, findings))
        findings = result.finding_files[0].parent  # every finding file of the run in one folder
    result.finding_file = result.finding_files[0] if result.finding_files else None
    return result


def run_profile(
    spec: str,
    profile: str,
    *,
    classes: Optional[Sequence[str]] = None,
    progress: Optional[Callable[[SearchResult], None]] = None,
    **options: object,
) -> List[SearchResult]:
    """`run_class` for every class `profile` judges (or those of them in `classes`), in order of severity."""
    results = []
    for cls in gating_classes(profile):
        if classes is not None and cls not in classes:
            continue
        result = run_class(spec, cls, **options)  # type: ignore[arg-type]
        results.append(result)
        if progress is not None:
            progress(result)
    return results
