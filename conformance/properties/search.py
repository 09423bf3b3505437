"""The search: hypothesis draws command sequences, the judge runs them, hypothesis shrinks what fails.

One search per class: it fails only on a finding of that class, so a backend is never failed in one class for
what another found, and each class gets the whole budget. A sequence is a hypothesis stateful test (a
`RuleBasedStateMachine` with one rule, "the next command"), so hypothesis shrinks a failure to the fewest
commands that still break the same class, and the last run it makes is that shortest sequence.

Deterministic by construction: a fixed seed (hypothesis' `seed`), derandomised settings taken from hypothesis'
built-in default profile (a user's or CI's hypothesis profile changes nothing), no example database (nothing
is written into the project), no wall-clock deadline (a step is bounded by the target's own step timeout), no
health check that measures time. The same backend gives the same sequences and the same verdict, run after run.
"""

from __future__ import annotations

import contextlib
import dataclasses
import tempfile
import time
from typing import Any, Iterator, List, Optional, Tuple

from hypothesis import HealthCheck, Phase, Verbosity, configuration, seed, settings
from hypothesis import strategies as st
from hypothesis.errors import Flaky
from hypothesis.stateful import RuleBasedStateMachine, rule, run_state_machine_as_test

from refmem_harness.targets import TargetError

from ..checks import Finding
from . import DEFAULT_SEED, STEPS, vocabulary
from .judge import Context, SequenceRun
from .outcome import Failure, Known, PropertyFailed, SearchResult, signature
from .report import oracle


class SearchError(Exception):
    """The search cannot say anything: the target could not be reset, or gave hypothesis different
    behaviour for the same sequence while it was drawing."""


MAX_FAILURES = 8
"""Distinct failures one class's search reports at most (each costs a search and a shrink)."""


@dataclasses.dataclass
class _Search:
    context: Context
    cls: str
    known: Known = frozenset()
    """Signatures (outcome.signature) of the failures found already: passed over, so the next one shows."""
    broken: Optional[TargetError] = None
    generated: int = 0
    """Sequences started before the first failure (the budget they spent; shrinking spends none)."""
    failed: bool = False


class SequenceMachine(RuleBasedStateMachine):
    """One sequence: a fresh layout and a reset target, then one command per step until the class breaks."""

    def __init__(self, search: _Search) -> None:
        super().__init__()
        self.search = search
        self.run: Optional[SequenceRun] = None
        if not search.failed:
            search.generated += 1
        if search.broken is None:
            try:
                self.run = SequenceRun(search.context)
            except TargetError as exc:
                search.broken = exc

    @rule(data=st.data())
    def next_command(self, data: st.DataObject) -> None:
        run = self.run
        if run is None or run.stopped:
            return
        step = data.draw(st.binary(min_size=vocabulary.STEP_BYTES, max_size=vocabulary.STEP_BYTES))
        command = vocabulary.command(vocabulary.Reader(step), run.model.tree)
        found = [
            finding
            for finding in run.step(command)
            if finding.cls == self.search.cls and self._signature(run, finding) not in self.search.known
        ]
        if found:
            self.search.failed = True
            failure = Failure(
                self.search.cls, found[0], found[1:], list(run.commands), list(run.results), run.tree_after,
                run.hidden,
            )
            raise PropertyFailed(failure)

    @staticmethod
    def _signature(run: SequenceRun, finding: Finding) -> Tuple[str, str]:
        index = finding.step - 1
        command = run.commands[index] if 0 <= index < len(run.commands) else None
        result = run.results[index] if 0 <= index < len(run.results) else None
        return signature(finding, command, result, oracle)

    def teardown(self) -> None:
        if self.run is not None:
            self.run.close()


def hypothesis_settings(examples: int, steps: int = STEPS) -> settings:
    """The search's settings, on top of hypothesis' built-in default profile (never a project's or CI's)."""
    return settings(
        settings.get_profile("default"),
        max_examples=examples,
        stateful_step_count=steps,
        deadline=None,
        database=None,
        derandomize=True,
        phases=(Phase.generate, Phase.shrink),
        report_multiple_bugs=False,
        suppress_health_check=list(HealthCheck),
        verbosity=Verbosity.quiet,
        print_blob=False,
    )


def search(
    context: Context, cls: str, examples: int, seed_value: int = DEFAULT_SEED, steps: int = STEPS
) -> SearchResult:
    """Search `examples` sequences for every distinct failure of `cls` they reach: a failure found, shrunk and
    kept, the search goes on past it (its signature passed over, the next seed) with the sequences left, until
    one finds nothing new or MAX_FAILURES are kept. Raises SearchError when the search cannot tell."""
    started, runs = time.monotonic(), context.runs
    failures: List[Failure] = []
    known: Known = frozenset()
    left, attempt = examples, 0
    while left > 0 and len(failures) < MAX_FAILURES:
        state = _Search(context, cls, known)
        failure = _search_once(state, left, seed_value + attempt, steps)
        if failure is None:
            break
        failures.append(failure)
        known = known | {
            signature(found, failure.commands[found.step - 1] if 0 < found.step <= len(failure.commands) else None,
                      failure.results[found.step - 1] if 0 < found.step <= len(failure.results) else None, oracle)
            for found in (failure.finding, *failure.others)
        }
        left -= max(state.generated, 1)
        attempt += 1
    return SearchResult(
        cls, examples, context.runs - runs, time.monotonic() - started, failures[0] if failures else None,
        failures=failures,
    )


def _search_once(state: _Search, examples: int, seed_value: int, steps: int) -> Optional[Failure]:
    """One hypothesis search over `examples` sequences, the failures `state.known` passed over: the first new
    failure, shrunk, or None."""

    def machine() -> SequenceMachine:
        return SequenceMachine(state)

    failure: Optional[Failure] = None
    try:
        with _private_storage():
            chosen = hypothesis_settings(examples, steps)
            # Typed differently across hypothesis releases (untyped before, a class expected after, while
            # a factory is what it accepts at run time): called through Any so both type-check.
            run_machine: Any = run_state_machine_as_test
            run_machine(seed(seed_value)(machine), settings=chosen)
    except PropertyFailed as exc:
        failure = exc.failure
    except Flaky as exc:
        found = _inside(exc)
        if found is None:
            raise SearchError(
                "the target answered the same commands differently from one run to the next, so the sequences "
                f"cannot be replayed ({type(exc).__name__})"
            ) from None
        failure = dataclasses.replace(found, flaky=True)
    if state.broken is not None:
        raise SearchError(f"the target cannot be reset: {state.broken}")
    return failure


_HOME = "__hypothesis_home_directory"
"""hypothesis.configuration's module global naming its storage folder (None: `.hypothesis` in the working
directory, or $HYPOTHESIS_STORAGE_DIRECTORY)."""


@contextlib.contextmanager
def _private_storage() -> Iterator[None]:
    """hypothesis' storage pointed at a temporary folder while a search runs, then back where it was: with no
    example database it still caches what it reads of the project's sources (`.hypothesis/constants`), and a
    conformance run writes nothing into the project it runs in."""
    previous = getattr(configuration, _HOME, None)
    with tempfile.TemporaryDirectory(prefix="refmem-properties-hypothesis-") as folder:
        configuration.set_hypothesis_home_dir(folder)
        try:
            yield
        finally:
            setattr(configuration, _HOME, previous)


def _inside(error: BaseException) -> Optional[Failure]:
    """The first PropertyFailed in an exception group (hypothesis' Flaky errors hold what each run raised)."""
    pending = [error]
    while pending:
        current = pending.pop(0)
        if isinstance(current, PropertyFailed):
            return current.failure
        pending.extend(getattr(current, "exceptions", ()))
        if current.__cause__ is not None:
            pending.append(current.__cause__)
    return None
