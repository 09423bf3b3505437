"""Run the conformance cases as pytest tests, one test per case.

    pytest -p conformance.pytest_plugin --memory-target python:mypackage.memory:make
    pytest -p conformance.pytest_plugin --memory-target refmem --memory-run 'view-*' --memory-expectations known.json

Without `--memory-target` the plugin adds nothing. Cases expected to fail become strict xfails when
`--memory-strict` is given (an unexpected pass then fails), plain xfails otherwise; cases expected to be
skipped are skipped.
"""

from __future__ import annotations

import pathlib
import secrets
import tempfile
from typing import Any, Iterator, List, Optional, Tuple

import pytest

from conformance import expectations as expect
from conformance.cases import CASES_DIR, Case, Selection, load_cases
from conformance.layout import make_case_dir, remove
from conformance.reports import describe_failure
from conformance.runner import FAIL, SKIP, run_case
from conformance.targets import DEFAULT_STEP_TIMEOUT, Target, open_target
from conformance.tiers import DEFAULT_PROFILE, PROFILES


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("memory-conformance", "memory tool conformance cases")
    group.addoption("--memory-target", metavar="SPEC", help="refmem, python:MODULE:CALLABLE or 'cmd:COMMAND LINE'")
    group.addoption("--memory-run", action="append", default=[], metavar="GLOB", help="only these case IDs")
    group.addoption("--memory-skip", action="append", default=[], metavar="GLOB", help="not these case IDs")
    group.addoption(
        "--memory-features", action="append", default=[], metavar="A,B", help="only cases with these features"
    )
    group.addoption("--memory-level", action="append", default=[], choices=("must", "should"), help="only this level")
    group.addoption("--memory-expectations", metavar="FILE", help="known deviations (JSON)")
    group.addoption("--memory-strict", action="store_true", help="expected failures that pass fail the test")
    group.addoption("--memory-timeout", type=float, default=DEFAULT_STEP_TIMEOUT, help="seconds per step")
    group.addoption("--memory-no-matrix", action="store_true", help="leave out the generated security matrix")
    group.addoption("--memory-cases-dir", metavar="DIR", help="read case files from DIR instead of the suite's own")
    group.addoption("--memory-workdir", metavar="DIR", help="make case directories under DIR (a tmpfs is fastest)")
    group.addoption(
        "--memory-profile",
        choices=sorted(PROFILES),
        default=DEFAULT_PROFILE,
        help="which tiers fail a case: standard, hardening or documented (safety always)",
    )
    group.addoption(
        "--memory-stress",
        choices=("quick", "full"),
        help="also run the stress tier (conformance/stress.py) as one test: any safety or cost finding fails it",
    )
    group.addoption(
        "--memory-error-prefix", metavar="TEXT", help="python targets: a plain string starting with TEXT is an error"
    )


class CaseFailed(Exception):
    """A conformance case failed; its text is the runner's description of the findings."""


class _Session:
    """The one target shared by every case item, opened on first use and closed at session end."""

    def __init__(
        self, spec: str, timeout: float, workdir: Optional[str], profile: str, error_prefix: Optional[str]
    ) -> None:
        self.spec = spec
        self.profile = profile
        self.error_prefix = error_prefix
        self.timeout = timeout
        self.base = pathlib.Path(tempfile.mkdtemp(prefix="refmem-conformance-pytest-", dir=workdir))
        self.canary = "canary-" + secrets.token_hex(8)
        self.target: Optional[Target] = None

    def open(self) -> Target:
        if self.target is None:
            start = make_case_dir(self.base / "00000-start", self.canary)
            self.target = open_target(self.spec, start.root, self.timeout, error_prefix=self.error_prefix)
            remove(start.path)
        return self.target

    def close(self) -> None:
        if self.target is not None:
            self.target.close()
        remove(self.base)


class ConformanceItem(pytest.Item):
    def __init__(self, *, case: Case, index: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case = case
        self.index = index

    def runtest(self) -> None:
        session: _Session = self.config._memory_session  # type: ignore[attr-defined]
        result = run_case(
            session.open(), self.case, session.base, self.index, session.canary, profile=session.profile
        )
        if result.status == SKIP:
            pytest.skip(result.reason)
        if result.status == FAIL:
            result.outcome = "fail"
            raise CaseFailed(describe_failure(result))

    def repr_failure(self, excinfo: Any, style: Any = None) -> str:
        if isinstance(excinfo.value, CaseFailed):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> Tuple[Any, Optional[int], str]:
        return self.path, 0, f"memory conformance {self.case.id}"


class StressItem(pytest.Item):
    """The stress tier as one test: its findings, each with its class, are the failure."""

    def __init__(self, *, quick: bool, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.quick = quick

    def runtest(self) -> None:
        from conformance.stress import run_stress

        session: _Session = self.config._memory_session  # type: ignore[attr-defined]
        workdir = session.base / "stress"
        workdir.mkdir(exist_ok=True)

        def open_fresh(root: pathlib.Path) -> Target:
            return open_target(session.spec, root, session.timeout, error_prefix=session.error_prefix)

        found = run_stress(open_fresh, workdir, quick=self.quick)
        findings = [item for item in found if item.get("class") in ("safety", "cost")]
        if findings:
            raise CaseFailed(
                "\n".join(f"[{item['class']}] {item.get('check')}: {item.get('detail')}" for item in findings)
            )

    def repr_failure(self, excinfo: Any, style: Any = None) -> str:
        if isinstance(excinfo.value, CaseFailed):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> Tuple[Any, Optional[int], str]:
        return self.path, 0, "memory conformance stress tier"


class ConformanceCollector(pytest.Collector):
    def __init__(self, *, cases: List[Case], entries: List[expect.Expectation], strict: bool, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.cases = cases
        self.entries = entries
        self.strict = strict

    def collect(self) -> Iterator[ConformanceItem]:
        for index, case in enumerate(self.cases, 1):
            item = ConformanceItem.from_parent(self, name=case.id, case=case, index=index)
            entry = expect.find(self.entries, case.id)
            if entry is not None and entry.expect == "skip":
                item.add_marker(pytest.mark.skip(reason=f"expectations: {entry.reason}"))
            elif entry is not None:
                item.add_marker(
                    pytest.mark.xfail(reason=f"expectations: {entry.reason}", strict=self.strict, raises=CaseFailed)
                )
            yield item


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: Any, config: Any, items: List[Any]) -> None:
    spec = config.getoption("memory_target")
    if not spec:
        return
    cases_dir = config.getoption("memory_cases_dir")
    cases, warnings = load_cases(
        pathlib.Path(cases_dir) if cases_dir else CASES_DIR, with_matrix=not config.getoption("memory_no_matrix")
    )
    for warning in warnings:
        config.issue_config_time_warning(pytest.PytestWarning(warning), stacklevel=2)
    features = [item for value in config.getoption("memory_features") for item in value.split(",") if item]
    selection = Selection(
        config.getoption("memory_run"), config.getoption("memory_skip"), features, (), config.getoption("memory_level")
    )
    path = config.getoption("memory_expectations")
    entries = expect.load(pathlib.Path(path)) if path else []
    config._memory_session = _Session(
        spec,
        config.getoption("memory_timeout"),
        config.getoption("memory_workdir"),
        config.getoption("memory_profile"),
        config.getoption("memory_error_prefix"),
    )
    collector = ConformanceCollector.from_parent(
        session,
        name="memory-conformance",
        cases=selection.apply(cases),
        entries=entries,
        strict=config.getoption("memory_strict"),
    )
    items.extend(collector.collect())
    stress = config.getoption("memory_stress")
    if stress:
        items.append(StressItem.from_parent(collector, name="stress", quick=stress == "quick"))


def pytest_sessionfinish(session: Any) -> None:
    memory_session: Optional[_Session] = getattr(session.config, "_memory_session", None)
    if memory_session is not None:
        memory_session.close()
