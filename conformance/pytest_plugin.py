"""Run the conformance cases as pytest tests, one test per case.

    pytest --memory-target python:mypackage.memory:make
    pytest --memory-target refmem --memory-run 'view-*' --memory-expectations known.json
    pytest --memory-target refmem memory-conformance::view-file-001     # one case by its node ID
    pytest --memory-target refmem -m "memory_must and memory_feature_paths" -k "not unicode"

Installed, the plugin is loaded through its `pytest11` entry point (or `-p refmem_conformance.pytest_plugin` where
plugin autoloading is off); without a target it adds no test. Each case is an item `memory-conformance::ID`
marked with its tier (`memory_documented`, `memory_reference`, `memory_hardening`), level (`memory_must`,
`memory_should`) and features (`memory_feature_view`, ...); the markers are registered with or without a target,
so `pytest --markers` lists them. Cases expected to fail become strict xfails when `--memory-strict` is given (an
unexpected pass then fails), plain xfails otherwise; cases expected to be skipped are skipped.

Every option is also an ini option of the same name with underscores (`SETTINGS`), so a project can keep its
target and selection in `[tool.pytest.ini_options]` or pytest.ini; the command line wins where both are given:

    [tool.pytest.ini_options]
    memory_target = "python:mypackage.memory:make"
    memory_skip_features = "symlink hardlink"
    memory_workdir = "/dev/shm"

A node ID pytest prints is pasteable as it is, even in the form pytest uses when its rootdir is not the current
folder (`../../memory-conformance::ID`, see `our_node_id`).

    pytest --memory-target SPEC --memory-properties                  # and one test per property class
    pytest --memory-target SPEC memory-properties::safety --memory-examples 500

`--memory-properties` (or a `memory-properties` node ID, or `--memory-examples`) adds the property-based suite
(conformance/properties): one item `memory-properties::CLASS` per class the profile judges, each a hypothesis
search with a fixed seed (`--memory-seed`) whose failure is the shortest sequence found and a finding file to replay.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import re
import secrets
import tempfile
from typing import Any, Dict, Iterator, List, Optional, Tuple

import pytest

from refmem_harness.layout import make_case_dir, remove
from refmem_harness.signalling import ErrorPrefix
from refmem_harness.targets import DEFAULT_STEP_TIMEOUT, Target, open_target

from . import expectations as expect
from .cases import CASES_DIR, Case, Selection, load_cases
from .reports import describe_failure
from .results import FAIL, SKIP
from .runner import SuiteOptions, run_case
from .tiers import PROFILES, TIERS, default_profile

ROOT_NAME = "memory-conformance"
"""The collector every case item hangs under; its node ID is this name, so a case's ID is ROOT_NAME::CASE."""


@dataclasses.dataclass(frozen=True)
class Setting:
    """One option of the plugin: `--memory-NAME` on the command line and `memory_NAME` in the ini file
    (`[tool.pytest.ini_options]`, pytest.ini, tox.ini, setup.cfg). The command line wins where both are given."""

    name: str
    help: str
    kind: str = "text"
    """text, path, number, flag (store_true / ini bool), list (repeatable / ini args) or lines (repeatable /
    ini linelist: one item a line, for items that hold spaces)."""
    metavar: Optional[str] = None
    choices: Optional[Tuple[str, ...]] = None
    default: Any = None

    @property
    def dest(self) -> str:
        return self.name.replace("-", "_")

    @property
    def option(self) -> str:
        return "--" + self.name


_INI_TYPES = {
    "text": "string", "path": "string", "number": "string", "count": "string", "integer": "string", "flag": "bool",
    "list": "args", "lines": "linelist",
}

SETTINGS: Tuple[Setting, ...] = (
    Setting("memory-target", "refmem, python:MODULE:CALLABLE or 'cmd:COMMAND LINE'; without it the plugin adds no "
            "test", metavar="SPEC"),
    Setting("memory-run", "only these case IDs (globs)", "list", "GLOB"),
    Setting("memory-skip", "not these case IDs (globs)", "list", "GLOB"),
    Setting("memory-features", "only cases with any of these features", "list", "A,B"),
    Setting("memory-skip-features", "leave out cases with any of these features (a feature the backend does not "
            "have)", "list", "A,B"),
    Setting("memory-level", "only this level", "list", choices=("must", "should")),
    Setting("memory-expectations", "known deviations (JSON)", "path", "FILE"),
    Setting("memory-strict", "expected failures that pass fail the test", "flag"),
    Setting("memory-timeout", "seconds per step", "number", "S", default=str(DEFAULT_STEP_TIMEOUT)),
    Setting("memory-no-matrix", "leave out the generated security matrix", "flag"),
    Setting("memory-cases-dir", "read case files from DIR instead of the suite's own", "path", "DIR"),
    Setting("memory-workdir", "make case directories under DIR (a tmpfs is fastest); written --memory-workdir=DIR "
            "(or set in the ini file) it leaves pytest's rootdir alone", "path", "DIR"),
    Setting("memory-profile", "what fails a case: documented (the default for every target but the reference), "
            "standard (the reference's default) or hardening; safety, signalling and robustness always", "text",
            choices=tuple(sorted(PROFILES))),
    Setting("memory-stress", "also run the stress tier (conformance/stress.py) as one test: any safety or cost "
            "finding fails it", "text", choices=("quick", "full")),
    Setting("memory-deployment", "also run the deployment tier (conformance/deployment.py) as one test: several "
            "sessions over one store; any finding fails it, a tier the target cannot run is skipped with why",
            "flag"),
    Setting("memory-error-prefix", "python targets: a plain string starting with TEXT is an error; repeat it for "
            "several (in the ini file, one a line)", "lines", "TEXT"),
    Setting("memory-full-diff", "print every line of a failure (default: the first difference)", "flag"),
    Setting("memory-properties", "also run the property-based suite: one test per class the profile judges "
            "(memory-properties::safety, ::robustness, ::signalling, ::documented, and ::reference under standard), "
            "each random command sequences shrunk to the shortest that fails; needs hypothesis (the conformance "
            "extra). Naming a memory-properties node ID, or --memory-examples, implies it", "flag"),
    Setting("memory-examples", "property tests: sequences per class", "count", "N"),
    Setting("memory-seed", "property tests: the seed; the same seed draws the same sequences, the same verdict",
            "integer", "S"),
    Setting("memory-findings", "property tests: where a failure's finding file goes, to replay or turn into a case "
            "(default: a new temporary folder, named in the failure)", "path", "DIR"),
)
"""Every option of the plugin, each both a command-line flag and an ini option."""


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("memory-conformance", "memory tool conformance cases")
    for setting in SETTINGS:
        _add_setting(parser, group, setting)


def _add_setting(parser: Any, group: Any, setting: Setting) -> None:
    """The flag (its default None: not given) and the ini option of the same name (holding the default)."""
    extra: Dict[str, Any] = {"dest": setting.dest, "default": None}
    if setting.kind == "flag":
        extra["action"] = "store_true"
    elif setting.kind in ("list", "lines"):
        extra["action"] = "append"
    if setting.metavar and setting.kind != "flag":
        extra["metavar"] = setting.metavar
    if setting.choices:
        extra["choices"] = setting.choices
    group.addoption(setting.option, help=f"{setting.help} (ini: {setting.dest})", **extra)
    ini_default = setting.default
    if ini_default is None:
        ini_default = {"flag": False, "list": [], "lines": []}.get(setting.kind, "")
    parser.addini(setting.dest, f"memory conformance: {setting.help}", type=_INI_TYPES[setting.kind],
                  default=ini_default)


def setting_value(config: Any, dest: str) -> Any:
    """The value of a setting: the command line's when given, else the ini file's, else its default; paths
    from the ini file are read relative to that file's folder, as pytest reads its own."""
    setting = next(item for item in SETTINGS if item.dest == dest)
    given = config.getoption(dest, None)
    from_ini = given is None
    value = config.getini(dest) if from_ini else given
    if setting.kind == "flag":
        return bool(value)
    if setting.kind in ("list", "lines"):
        items = [str(item) for item in value or []]
        if setting.kind == "list":
            items = [part.strip() for item in items for part in item.split(",") if part.strip()]
        _check_choices(setting, items)
        return items
    text = str(value).strip() if value is not None else ""
    if not text:
        return None
    _check_choices(setting, [text])
    if setting.kind == "number":
        return _number(setting, text)
    if setting.kind in ("count", "integer"):
        return _integer(setting, text)
    if setting.kind == "path" and from_ini and getattr(config, "inipath", None) is not None:
        return str(pathlib.Path(config.inipath).parent / text)
    return text


def _check_choices(setting: Setting, values: List[str]) -> None:
    for value in values:
        if setting.choices and value not in setting.choices:
            raise pytest.UsageError(
                f"{setting.dest} = {value!r}: choose one of {', '.join(setting.choices)}"
            )


def _integer(setting: Setting, text: str) -> int:
    """A whole number: positive for a count (`memory_examples`), any for an integer (`memory_seed`)."""
    try:
        number = int(text)
    except ValueError:
        raise pytest.UsageError(f"{setting.dest} = {text!r}: a whole number") from None
    if setting.kind == "count" and number < 1:
        raise pytest.UsageError(f"{setting.dest} = {text!r}: a positive number")
    return number


def _number(setting: Setting, text: str) -> float:
    try:
        number = float(text)
    except ValueError:
        raise pytest.UsageError(f"{setting.dest} = {text!r}: a number of seconds") from None
    if not number > 0:
        raise pytest.UsageError(f"{setting.dest} = {text!r}: a number of seconds above 0")
    return number


def _marker(*parts: str) -> str:
    return "memory_" + re.sub(r"\W", "_", "_".join(parts))


def _schema_features() -> List[str]:
    """The features the case format knows (schema/case.schema.json), for markers listed before any case loads."""
    try:
        schema = json.loads((CASES_DIR.parent / "schema" / "case.schema.json").read_text(encoding="utf-8"))
        return [str(name) for name in schema["$defs"]["feature"]["enum"]]
    except (OSError, ValueError, KeyError, TypeError):
        return []


def pytest_configure(config: Any) -> None:
    """Markers are registered whether or not a target is given, so that `pytest --markers` lists them and
    `-m` / `--strict-markers` accept them anywhere; the settings are read (and checked) once, here."""
    names = [(_marker(tier), f"a {tier} case") for tier in TIERS]
    names += [(_marker(level), f"a {level} case") for level in ("must", "should")]
    names += [(_marker("feature", name), f"a case with the feature {name}") for name in _schema_features()]
    for name, meaning in names:
        config.addinivalue_line("markers", f"{name}: memory tool conformance: {meaning}")
    config._memory_settings = {setting.dest: setting_value(config, setting.dest) for setting in SETTINGS}


def _settings(config: Any) -> Dict[str, Any]:
    found: Dict[str, Any] = getattr(config, "_memory_settings", None) or {
        setting.dest: setting_value(config, setting.dest) for setting in SETTINGS
    }
    return found


def case_markers(case: Case) -> List[str]:
    return [_marker(case.tier), _marker(case.level)] + [_marker("feature", name) for name in case.features]


def _register(config: Any, cases: List[Case]) -> None:
    """Every feature's marker, so that -m can name it and --strict-markers accepts it."""
    for name in sorted({_marker("feature", feature) for case in cases for feature in case.features}):
        config.addinivalue_line("markers", f"{name}: memory tool conformance: a case with this feature")


def our_node_id(arg: str) -> Optional[str]:
    """The node ID `arg` names under one of the plugin's roots (`memory-conformance::ID`, `memory-properties::CLASS`,
    or a root alone), or None when it names something else.

    pytest prints a node ID relative to the current folder when its rootdir is another one (run from a
    subfolder, or a path given as a separate option value such as `--memory-workdir /dev/shm`, which pytest
    takes into its rootdir): `../../memory-conformance::ID`. That form names the same item, so that any ID
    pytest prints can be pasted back."""
    head, sep, rest = arg.lstrip(":").partition("::")
    for root in (ROOT_NAME, PROPERTIES_ROOT):
        if head == root or (sep and re.split(r"[/\\]", head.rstrip("/\\"))[-1] == root):
            return root + sep + rest
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_collection(session: Any) -> None:
    """Node IDs of cases are not files: take them out of the arguments pytest resolves as paths, and keep
    them to select the case items."""
    config = session.config
    if not _settings(config)["memory_target"]:
        return
    ours = [our_node_id(arg) for arg in config.args]
    if any(ours):
        config.args[:] = [arg for arg, node_id in zip(config.args, ours) if node_id is None]
    config._memory_node_ids = [node_id for node_id in ours if node_id]


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
            self.target = self.open_on(start.root)
            remove(start.path)
        return self.target

    def open_on(self, root: pathlib.Path) -> Target:
        """A target of its own on `root` (the stress tier opens one per root)."""
        return open_target(self.spec, root, self.timeout, error_prefix=self.error_prefix)

    def close(self) -> None:
        if self.target is not None:
            self.target.close()
        remove(self.base)


class _MemoryItem(pytest.Item):
    """A test of this plugin: its failure is the runner's own text, and `title` names it in the report."""

    title: str

    @property
    def memory_session(self) -> _Session:
        """The target shared by every item of the run."""
        return self.config._memory_session  # type: ignore[attr-defined, no-any-return]

    def repr_failure(self, excinfo: Any, style: Any = None) -> str:
        if isinstance(excinfo.value, CaseFailed):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> Tuple[Any, Optional[int], str]:
        return self.path, 0, self.title


class ConformanceItem(_MemoryItem):
    def __init__(self, *, case: Case, index: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case = case
        self.index = index
        self.title = f"memory conformance {case.id}"
        self.checks: List[expect.Expectation] = []
        """The expectations file's entries for single checks of this case (D-BASELINE-CHECK)."""
        for name in case_markers(case):
            self.add_marker(name)

    def runtest(self) -> None:
        session = self.memory_session
        result = run_case(
            session.open(), self.case, session.base, self.index, session.canary, SuiteOptions(profile=session.profile)
        )
        if result.status == SKIP:
            pytest.skip(result.reason)
        stale = expect.stale_after_run(self.checks, [result], [self.case.id], session.profile)
        if stale:  # a check entry whose check passes fails the test (D-BASELINE-STALE)
            raise CaseFailed("\n".join(f"STALE expectation {entry['id']!r}: {entry['stale']}" for entry in stale))
        if result.status == FAIL:
            expect.classify(result, self.checks, session.profile)
            if result.outcome == "xfail":
                pytest.xfail("expectations: " + (result.expectation or {}).get("reason", "known checks"))
            result.outcome = "fail"
            raise CaseFailed(describe_failure(result, _settings(self.config)["memory_full_diff"]))


class StressItem(_MemoryItem):
    """The stress tier as one test: its findings, each with its class, are the failure."""

    title = "memory conformance stress tier"

    def __init__(self, *, quick: bool, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.quick = quick

    def runtest(self) -> None:
        from .stress import run_stress

        workdir = self.memory_session.base / "stress"
        workdir.mkdir(exist_ok=True)
        found = run_stress(self.memory_session.open_on, workdir, quick=self.quick)
        findings = [item for item in found if item.get("class") in ("safety", "cost")]
        if findings:
            raise CaseFailed(
                "\n".join(f"[{item['class']}] {item.get('check')}: {item.get('detail')}" for item in findings)
            )


class DeploymentItem(_MemoryItem):
    """The deployment tier as one test: its findings are the failure; a target that cannot run it is a skip."""

    title = "memory conformance deployment tier"

    def runtest(self) -> None:
        from .deployment import deployment_report, summary_lines

        session = self.memory_session
        workdir = session.base / "deployment"
        workdir.mkdir(exist_ok=True)
        report = deployment_report(session.spec, workdir, timeout=session.timeout, error_prefix=session.error_prefix)
        if report.findings:
            raise CaseFailed("\n".join(summary_lines(report.as_dict())))
        if not report.figures:
            pytest.skip("; ".join(report.notes) or "the deployment tier ran no check")


class ConformanceCollector(pytest.Collector):
    def __init__(self, *, cases: List[Case], entries: List[expect.Expectation], strict: bool, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.cases = cases
        self.entries = entries
        self.strict = strict

    def collect(self) -> Iterator[ConformanceItem]:
        for index, case in enumerate(self.cases, 1):
            item = ConformanceItem.from_parent(self, name=case.id, case=case, index=index)
            item.checks = expect.checks_of(self.entries, case.id)
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
    settings = _settings(config)
    spec = settings["memory_target"]
    if not spec:
        return
    cases_dir = settings["memory_cases_dir"]
    cases, warnings = load_cases(
        pathlib.Path(cases_dir) if cases_dir else CASES_DIR, with_matrix=not settings["memory_no_matrix"]
    )
    for warning in warnings:
        config.issue_config_time_warning(pytest.PytestWarning(warning), stacklevel=2)
    selection = Selection(
        settings["memory_run"],
        settings["memory_skip"],
        settings["memory_features"],
        settings["memory_skip_features"],
        settings["memory_level"],
    )
    path = settings["memory_expectations"]
    entries = expect.load(pathlib.Path(path)) if path else []
    contradicting = expect.contradictions(entries, (case.id for case in cases))
    if contradicting:
        raise pytest.UsageError(f"{path}: " + "; ".join(contradicting))
    config._memory_session = _Session(
        spec,
        settings["memory_timeout"],
        settings["memory_workdir"],
        settings["memory_profile"] or default_profile(spec),
        settings["memory_error_prefix"] or None,
    )
    collector = ConformanceCollector.from_parent(
        session,
        name=ROOT_NAME,
        nodeid=ROOT_NAME,
        cases=selection.apply(cases),
        entries=entries,
        strict=settings["memory_strict"],
    )
    _register(config, collector.cases)
    ours: List[pytest.Item] = list(collector.collect())
    stress = settings["memory_stress"]
    if stress:
        ours.append(StressItem.from_parent(collector, name="stress", quick=stress == "quick"))
    if settings["memory_deployment"]:
        ours.append(DeploymentItem.from_parent(collector, name="deployment"))
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


def _properties_wanted(config: Any) -> bool:
    chosen = getattr(config, "_memory_node_ids", [])
    named = any(node.split("::", 1)[0] == PROPERTIES_ROOT for node in chosen)
    settings = _settings(config)
    return bool(settings["memory_properties"] or settings["memory_examples"] is not None or named)


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


class PropertyItem(_MemoryItem):
    """One class of the property suite: hypothesis searches for a command sequence that breaks it."""

    def __init__(self, *, property_class: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.cls = property_class
        self.title = f"memory properties {property_class}"

    def runtest(self) -> None:
        from refmem_harness.targets import TargetError

        from .properties import DEFAULT_EXAMPLES, DEFAULT_SEED
        from .properties.report import failures_text
        from .properties.run import run_class
        from .properties.search import SearchError

        session = self.memory_session
        settings = _settings(self.config)
        findings = settings["memory_findings"]
        seed = DEFAULT_SEED if settings["memory_seed"] is None else settings["memory_seed"]
        try:
            result = run_class(
                session.spec,
                self.cls,
                examples=settings["memory_examples"] or DEFAULT_EXAMPLES,
                seed=seed,
                timeout=session.timeout,
                error_prefix=session.error_prefix,
                workdir=session.base,
                findings=pathlib.Path(findings) if findings else None,
            )
        except (TargetError, SearchError) as exc:
            raise CaseFailed(f"{PROPERTIES_ROOT}::{self.cls}: {exc}") from None
        if result.failure is not None:
            full = settings["memory_full_diff"]
            raise CaseFailed(failures_text(result, session.spec, session.profile, seed, full))

