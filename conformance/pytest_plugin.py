"""Run the conformance cases as pytest tests, one test per case.

    pytest --memory-target python:mypackage.memory:make
    pytest --memory-target refmem --memory-run 'view-*' --memory-expectations known.json
    pytest --memory-target refmem memory-conformance::view-file-001     # one case by its node ID
    pytest --memory-target refmem -m "memory_must and memory_feature_paths" -k "not unicode"

Installed, the plugin is loaded through its `pytest11` entry point (or `-p refmem_conformance.pytest_plugin` where
plugin autoloading is off); without `--memory-target` it adds nothing. Each case is an item `memory-conformance::ID`
marked with its tier (`memory_documented`, `memory_reference`, `memory_hardening`), level (`memory_must`,
`memory_should`) and features (`memory_feature_view`, ...). Cases expected to fail become strict xfails when
`--memory-strict` is given (an unexpected pass then fails), plain xfails otherwise; cases expected to be skipped are
skipped.

    pytest --memory-target SPEC --memory-properties                  # and one test per property class
    pytest --memory-target SPEC memory-properties::safety --memory-examples 500

`--memory-properties` (or a `memory-properties` node ID, or `--memory-examples`) adds the property-based suite
(conformance/properties): one item `memory-properties::CLASS` per class the profile judges, each a hypothesis
search with a fixed seed (`--memory-seed`) whose failure is the shortest sequence found and a finding file to replay.
"""

from __future__ import annotations

import pathlib
import re
import secrets
import tempfile
from typing import Any, Iterator, List, Optional, Tuple

import pytest

from . import expectations as expect
from .cases import CASES_DIR, Case, Selection, load_cases
from .layout import make_case_dir, remove
from .reports import describe_failure
from .results import FAIL, SKIP
from .runner import run_case
from .signalling import ErrorPrefix
from .targets import DEFAULT_STEP_TIMEOUT, Target, open_target
from .tiers import PROFILES, TIERS, default_profile

ROOT_NAME = "memory-conformance"
"""The collector every case item hangs under; its node ID is this name, so a case's ID is ROOT_NAME::CASE."""


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
        default=None,
        help="what fails a case: documented (the default for every target but the reference), standard (the "
        "reference's default) or hardening; safety, signalling and robustness always",
    )
    group.addoption(
        "--memory-stress",
        choices=("quick", "full"),
        help="also run the stress tier (conformance/stress.py) as one test: any safety or cost finding fails it",
    )
    group.addoption(
        "--memory-error-prefix",
        metavar="TEXT",
        action="append",
        help="python targets: a plain string starting with TEXT is an error; repeat it for several",
    )
    group.addoption(
        "--memory-full-diff", action="store_true", help="print every line of a failure (default: the first difference)"
    )
    _property_options(group)


def _marker(*parts: str) -> str:
    return "memory_" + re.sub(r"\W", "_", "_".join(parts))


def pytest_configure(config: Any) -> None:
    if not config.getoption("memory_target", None):
        return
    names = [(_marker(tier), f"a {tier} case") for tier in TIERS]
    names += [(_marker(level), f"a {level} case") for level in ("must", "should")]
    for name, meaning in names:
        config.addinivalue_line("markers", f"{name}: memory tool conformance: {meaning}")


def case_markers(case: Case) -> List[str]:
    return [_marker(case.tier), _marker(case.level)] + [_marker("feature", name) for name in case.features]


def _register(config: Any, cases: List[Case]) -> None:
    """Every feature's marker, so that -m can name it and --strict-markers accepts it."""
    for name in sorted({_marker("feature", feature) for case in cases for feature in case.features}):
        config.addinivalue_line("markers", f"{name}: memory tool conformance: a case with this feature")


def _is_ours(arg: str) -> bool:
    return arg.lstrip(":").split("::", 1)[0] in (ROOT_NAME, PROPERTIES_ROOT)


@pytest.hookimpl(tryfirst=True)
def pytest_collection(session: Any) -> None:
    """Node IDs of cases are not files: take them out of the arguments pytest resolves as paths, and keep
    them to select the case items."""
    config = session.config
    if not config.getoption("memory_target"):
        return
    ours = [arg.lstrip(":") for arg in config.args if _is_ours(arg)]
    if ours:
        config.args[:] = [arg for arg in config.args if not _is_ours(arg)]
    config._memory_node_ids = ours


class CaseFailed(Exception):
    """A conformance case failed; its text is the runner's description of the findings."""


class _Session:
    """The one target shared by every case item, opened on first use and closed at session end."""

    def __init__(
        self, spec: str, timeout: float, workdir: Optional[str], profile: str, error_prefix: ErrorPrefix
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
        for name in case_markers(case):
            self.add_marker(name)

    def runtest(self) -> None:
        session: _Session = self.config._memory_session  # type: ignore[attr-defined]
        result = run_case(
            session.open(), self.case, session.base, self.index, session.canary, profile=session.profile
        )
        if result.status == SKIP:
            pytest.skip(result.reason)
        if result.status == FAIL:
            result.outcome = "fail"
            raise CaseFailed(describe_failure(result, self.config.getoption("memory_full_diff")))

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
        from .stress import run_stress

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
        config.getoption("memory_profile") or default_profile(spec),
        config.getoption("memory_error_prefix"),
    )
    collector = ConformanceCollector.from_parent(
        session,
        name=ROOT_NAME,
        nodeid=ROOT_NAME,
        cases=selection.apply(cases),
        entries=entries,
        strict=config.getoption("memory_strict"),
    )
    _register(config, collector.cases)
    ours: List[pytest.Item] = list(collector.collect())
    stress = config.getoption("memory_stress")
    if stress:
        ours.append(StressItem.from_parent(collector, name="stress", quick=stress == "quick"))
    chosen = getattr(config, "_memory_node_ids", [])
    if chosen and ROOT_NAME not in chosen:
        ours = [item for item in ours if item.nodeid in chosen]
    items.extend(ours)
    config.hook.pytest_collectreport(report=pytest.CollectReport(ROOT_NAME, "passed", None, list(ours)))
    _collect_properties(session, config, items)


def pytest_sessionfinish(session: Any) -> None:
    memory_session: Optional[_Session] = getattr(session.config, "_memory_session", None)
    if memory_session is not None:
        memory_session.close()


# --- the property-based suite: one item per class, memory-properties::CLASS ------------------------------------

PROPERTIES_ROOT = "memory-properties"
"""The collector the property items hang under: memory-properties::safety, memory-properties::documented, ..."""


def _property_options(group: Any) -> None:
    from .properties import DEFAULT_EXAMPLES, DEFAULT_SEED

    group.addoption(
        "--memory-properties",
        action="store_true",
        help="also run the property-based suite: one test per class the profile judges (memory-properties::safety, "
        "::robustness, ::signalling, ::documented, and ::reference under standard), each random command sequences "
        "shrunk to the shortest that fails; needs hypothesis (the conformance extra). Naming a memory-properties "
        "node ID, or --memory-examples, implies it",
    )
    group.addoption(
        "--memory-examples",
        type=int,
        metavar="N",
        help=f"property tests: sequences per class (default {DEFAULT_EXAMPLES})",
    )
    group.addoption(
        "--memory-seed",
        type=int,
        default=DEFAULT_SEED,
        help="property tests: the seed (default %(default)s): the same seed draws the same sequences, the same verdict",
    )
    group.addoption(
        "--memory-findings",
        metavar="DIR",
        help="property tests: where a failure's finding file goes, to replay or turn into a case (default: a new "
        "temporary folder, named in the failure)",
    )


def _properties_wanted(config: Any) -> bool:
    chosen = getattr(config, "_memory_node_ids", [])
    named = any(node.split("::", 1)[0] == PROPERTIES_ROOT for node in chosen)
    return bool(config.getoption("memory_properties") or config.getoption("memory_examples") is not None or named)


def _collect_properties(session: Any, config: Any, items: List[Any]) -> None:
    """The property items, after the case items: one per class the profile judges, only when asked for."""
    if not _properties_wanted(config):
        return
    try:
        import hypothesis  # noqa: F401 - only whether it is there
    except ImportError:
        raise pytest.UsageError(
            "--memory-properties needs hypothesis: pip install 'refmem[conformance]' (or hypothesis)"
        ) from None
    from .properties.judge import gating_classes

    examples = config.getoption("memory_examples")
    if examples is not None and examples < 1:
        raise pytest.UsageError(f"--memory-examples: {examples} is not a positive number of sequences")
    memory_session: _Session = config._memory_session
    collector = PropertiesCollector.from_parent(session, name=PROPERTIES_ROOT, nodeid=PROPERTIES_ROOT)
    classes = gating_classes(memory_session.profile)
    ours: List[pytest.Item] = [PropertyItem.from_parent(collector, name=cls, property_class=cls) for cls in classes]
    chosen = getattr(config, "_memory_node_ids", [])
    if chosen and PROPERTIES_ROOT not in chosen:
        ours = [item for item in ours if item.nodeid in chosen]
    items.extend(ours)
    config.hook.pytest_collectreport(report=pytest.CollectReport(PROPERTIES_ROOT, "passed", None, list(ours)))


class PropertiesCollector(pytest.Collector):
    def collect(self) -> Iterator[pytest.Item]:
        return iter(())


class PropertyItem(pytest.Item):
    """One class of the property suite: hypothesis searches for a command sequence that breaks it."""

    def __init__(self, *, property_class: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.cls = property_class

    def runtest(self) -> None:
        from .properties import DEFAULT_EXAMPLES
        from .properties.report import failure_text
        from .properties.run import run_class
        from .properties.search import SearchError
        from .targets import TargetError

        session: _Session = self.config._memory_session  # type: ignore[attr-defined]
        findings = self.config.getoption("memory_findings")
        seed = self.config.getoption("memory_seed")
        try:
            result = run_class(
                session.spec,
                self.cls,
                examples=self.config.getoption("memory_examples") or DEFAULT_EXAMPLES,
                seed=seed,
                timeout=session.timeout,
                error_prefix=session.error_prefix,
                workdir=session.base,
                findings=pathlib.Path(findings) if findings else None,
            )
        except (TargetError, SearchError) as exc:
            raise CaseFailed(f"{PROPERTIES_ROOT}::{self.cls}: {exc}") from None
        if result.failure is not None:
            full = self.config.getoption("memory_full_diff")
            raise CaseFailed(failure_text(result, session.spec, session.profile, seed, result.finding_file, full))

    def repr_failure(self, excinfo: Any, style: Any = None) -> str:
        if isinstance(excinfo.value, CaseFailed):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> Tuple[Any, Optional[int], str]:
        return self.path, 0, f"memory properties {self.cls}"
