"""`refmem-conformance` / `python -m refmem_conformance`: run, baseline, list, validate.

Exit status is the verdict (figures.run_verdict): 0 safe and nothing unexpected; 1 not safe (whatever the
expectations say), an unexpected failure under the profile, a cost finding, an unexpected pass or a stale
expectation; 2 a usage error, unreadable or contradictory expectations, unreadable cases, or a target that cannot be
used; 130 interrupted (after the reports of what ran are written, marked so).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import pathlib
import shlex
import shutil
import signal
import sys
import tempfile
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, TextIO, Tuple

import refmem
from refmem import terminal
from refmem_harness.targets import DEFAULT_STEP_TIMEOUT, TargetError
from refmem_harness.visible import printable, redact_secrets

from . import CASE_FORMAT_VERSION, PROTOCOL_VERSION, SUITE_VERSION
from . import expectations as expect
from . import htmlpage as html
from .badges import write_badges
from .cases import CASES_DIR, Case, CaseLoadError, Selection, load_cases
from .figures import run_verdict
from .matrixpage import matrix_page
from .reports import as_json, describe_failure, summary, write_json, write_junit, write_markdown
from .results import CaseResult, RunResult
from .runner import DeploymentRunner, StressRunner, SuiteOptions, run_suite
from .scaffold import LANGUAGES, ScaffoldError, new_adapter
from .tiers import PROFILES, default_profile
from .trend import TrendError, check_one_implementation, one_implementation

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
SUBCOMMANDS = ("run", "baseline", "list", "validate", "matrix", "new-adapter")
PROGRESS_EVERY = 100
PROTOCOL_SHOWN = 20
"""--validate: protocol violations listed in the summary and reports at most (all are counted)."""


def _split(values: Optional[Sequence[str]]) -> List[str]:
    return [item.strip() for value in values or () for item in value.split(",") if item.strip()]


Option = Tuple[str, Tuple[str, ...], Dict[str, Any]]
"""An option as argparse takes it, under its concern: the concern, its names, and add_argument's settings."""


def _option(concern: str, *names: str, **settings: Any) -> Option:
    return concern, names, settings


_SELECTION = "what to run: the target, and which of its cases"
_VERDICT = "what decides pass or fail"
_TIERS_ASKED = "the tiers that run only when asked, beside the cases"
_REPORTS = "the files a run writes, and the matrix page"
_SUBCOMMAND = "options of one subcommand: baseline, list, new-adapter"
_PROPERTIES = "the property-based suite (conformance/properties): a run of its own instead of the cases"
_RUNNING = "where the run works and what it prints as it goes"
_CONCERNS = (_SELECTION, _VERDICT, _TIERS_ASKED, _REPORTS, _SUBCOMMAND, _PROPERTIES, _RUNNING)

_OPTIONS: Tuple[Option, ...] = (
    _option(
        _SELECTION, "--target", default="refmem",
        help="refmem (default), refmem+sqlite (the reference over the SQLite store), refmem+postgres (over the "
        "PostgreSQL store, its DSN in REFMEM_CONFORMANCE_POSTGRES), python:MODULE:CALLABLE, or "
        "'cmd:COMMAND LINE' (adapter protocol)",
    ),
    _option(_SELECTION, "--run", action="append", metavar="GLOB", help="run only cases whose ID matches (repeatable)"),
    _option(_SELECTION, "--skip", action="append", metavar="GLOB", help="skip cases whose ID matches (repeatable)"),
    _option(_SELECTION, "--features", action="append", metavar="A,B", help="run only cases tagged with any of these"),
    _option(_SELECTION, "--skip-features", action="append", metavar="A,B", help="skip cases tagged with any of these"),
    _option(_SELECTION, "--level", action="append", choices=("must", "should"), help="run only cases of this level"),
    _option(
        _SELECTION, "--cases-dir", type=pathlib.Path, default=CASES_DIR, metavar="DIR",
        help="read hand-written case files from DIR instead of the suite's own (e.g. a case written by "
        "refmem-fuzz to-case); the generated security matrix is added unless --no-matrix",
    ),
    _option(_SELECTION, "--no-matrix", action="store_true", help="leave out the generated security matrix"),
    _option(
        _VERDICT, "--profile", choices=sorted(PROFILES), default=None,
        help="what decides pass or fail (and the exit status): documented (the documentation's must cases; the "
        "default for every target but the reference), standard (adds its wording and the reference's decisions; "
        "the reference's default), hardening (adds safe refusals not required on this platform); safety, "
        "signalling and robustness always count, and a safety finding always fails the run",
    ),
    _option(
        _VERDICT, "--error-prefix", metavar="TEXT", action="append",
        help="python targets: a plain string result starting with TEXT is an error; repeat it for several "
        "(the documentation's own error strings need three: --error-prefix Error: --error-prefix 'The path' "
        "--error-prefix 'No replacement'), like a module-level SIGNALLING = {'error_prefix': ['Error:', 'The "
        "path', 'No replacement']}; the summary suggests the list when plain errors were read as successes",
    ),
    _option(
        _VERDICT, "--timeout", type=float, default=DEFAULT_STEP_TIMEOUT, help="seconds per step (default %(default)s)",
    ),
    _option(_VERDICT, "--expectations", type=pathlib.Path, metavar="FILE", help="known deviations (JSON)"),
    _option(
        _VERDICT, "--strict", action="store_true",
        help="kept for old command lines: a stale expectation always fails the run",
    ),
    _option(
        _VERDICT, "--validate", action="store_true",
        help="cmd: targets: check every adapter protocol message, both ways, against the published schemas "
        "(conformance/schema/protocol/; needs jsonschema, the conformance extra); a message that does not follow "
        "its schema fails the run",
    ),
    _option(
        _TIERS_ASKED, "--stress", action="store_true",
        help="also run the stress tier (conformance/stress.py): safety and cost",
    ),
    _option(
        _TIERS_ASKED, "--stress-quick", action="store_true", help="the stress tier's quick variant (implies --stress)",
    ),
    _option(
        _TIERS_ASKED, "--deployment", action="store_true",
        help="also run the deployment tier (conformance/deployment.py): several sessions over one store (lost "
        "updates, torn reads, tenants, calls cut off part way); a target that cannot share is skipped, with why",
    ),
    _option(_REPORTS, "--report-json", type=pathlib.Path, metavar="FILE"),
    _option(_REPORTS, "--junit", type=pathlib.Path, metavar="FILE"),
    _option(_REPORTS, "--markdown", type=pathlib.Path, metavar="FILE"),
    _option(
        _REPORTS, "--html", type=pathlib.Path, metavar="FILE",
        help="one self-contained HTML page (figures, features by outcome, every failure); with matrix, the "
        "implementations side by side",
    ),
    _option(
        _REPORTS, "--badges", type=pathlib.Path, metavar="DIR",
        help="write shields.io endpoint badges into DIR: safe.json (yes/no) and documented.json (x/y must cases)",
    ),
    _option(
        _REPORTS, "--trend", action="store_true",
        help="matrix: the reports are of one implementation (versions of it, or suite editions), oldest first: "
        "show what changed from each to the next",
    ),
    _option(_REPORTS, "--title", default="", help="title of the Markdown report"),
    _option(
        _SUBCOMMAND, "--output", "--out", type=pathlib.Path, metavar="FILE",
        help="baseline: where to write (default: --expectations or stdout); new-adapter: the file to write "
        "(default: memory_adapter.py or memory-adapter.mjs here)",
    ),
    _option(_SUBCOMMAND, "--json", action="store_true", help="list: print JSON lines"),
    _option(_SUBCOMMAND, "--lang", choices=sorted(LANGUAGES), help="new-adapter: the adapter's language"),
    _option(_SUBCOMMAND, "--force", action="store_true", help="new-adapter: replace an existing file"),
    _option(_RUNNING, "--keep", action="store_true", help="keep the case directories (for debugging)"),
    _option(
        _RUNNING, "--workdir", type=pathlib.Path, metavar="DIR",
        help="make case directories under DIR (default: the system temporary directory; "
        "a tmpfs such as /dev/shm is much faster when the implementation fsyncs)",
    ),
    _option(
        _RUNNING, "--full-diff", action="store_true",
        help="print every line of each failure's diff and output (default: the first difference, then a count)",
    ),
    _option(
        _RUNNING, "--progress", action="store_true",
        help="show a running count and the current group on stderr even when it is not a terminal",
    ),
    _option(_RUNNING, "-v", "--verbose", action="store_true", help="print every case as it finishes"),
    _option(_RUNNING, "-q", "--quiet", action="store_true", help="print the summary only"),
)
"""Every option of the command line, each under its concern (the group --help shows it in): a new option is a
row here."""


def _property_options() -> Tuple[Option, ...]:
    """The property-based suite's options (conformance/properties): a run of its own instead of the cases."""
    from .properties import DEFAULT_SEED

    return (
        _option(
            _PROPERTIES, "--properties", type=_positive, metavar="N",
            help="run the property-based suite instead of the cases: random command sequences, N for each class "
            "the profile judges (safety, robustness, signalling, documented; the reference's outputs under "
            "standard), each failure shrunk to its shortest sequence and written as a finding file to replay; "
            "needs hypothesis (the conformance extra)",
        ),
        _option(
            _PROPERTIES, "--seed", type=int, default=DEFAULT_SEED,
            help="with --properties: the seed (default %(default)s): the same seed draws the same sequences",
        ),
        _option(
            _PROPERTIES, "--findings", type=pathlib.Path, metavar="DIR",
            help="with --properties: where each failure's finding file goes (default: a new temporary folder)",
        ),
        _option(
            _PROPERTIES, "--replay", type=pathlib.Path, metavar="FILE",
            help="run the commands of a finding file (what --properties or refmem-fuzz writes) on --target, every "
            "property check of the profile after each step; the file's own target is never started",
        ),
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="refmem-conformance",
        description=f"Memory tool conformance suite, edition {SUITE_VERSION} (adapter protocol {PROTOCOL_VERSION}).",
        epilog="Subcommands: run (default), baseline, list, validate, matrix REPORT.json... --html FILE "
        "(implementations side by side; with --trend, one implementation's reports, oldest first), "
        "new-adapter --lang python|node [--out FILE] [--force] (a starting "
        "point for an adapter that already runs). "
        "Exit 0 ok, 1 unexpected failure, 2 usage/adapter failure.",
    )
    parser.add_argument("command", nargs="?", choices=SUBCOMMANDS, default="run")
    parser.add_argument("reports", nargs="*", type=pathlib.Path, metavar="REPORT.json", help="matrix: JSON reports")
    parser.add_argument("--version", action="version", version=version_line())
    groups = {concern: parser.add_argument_group(concern) for concern in _CONCERNS}
    for concern, names, settings in (*_OPTIONS, *_property_options()):
        groups[concern].add_argument(*names, **settings)
    return parser


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not a positive number of sequences")
    return value


def _selection(args: argparse.Namespace) -> Selection:
    return Selection(
        _split(args.run), _split(args.skip), _split(args.features), _split(args.skip_features), args.level or ()
    )


def _list(args: argparse.Namespace, cases: List[Case], out: TextIO) -> int:
    for case in _selection(args).apply(cases):
        if args.json:
            out.write(
                json.dumps(
                    {
                        "id": case.id,
                        "level": case.level,
                        "basis": case.raw.get("basis"),
                        "tier": case.tier,
                        "decision": case.decision,
                        "cite": case.cite,
                        "features": case.features,
                        "requires": case.requires,
                        "description": case.description,
                        "source": case.source,
                    },
                    ensure_ascii=False,
                )
                + "\n"
            )
        else:
            out.write(
                f"{case.id}\t{case.level}\t{case.raw.get('basis', '')}\t{','.join(case.features)}\t{case.description}\n"
            )
    return EXIT_OK


class ValidateUnavailable(Exception):
    """--validate was asked for, but it cannot be done (not a cmd: target, or jsonschema missing)."""


def _check_validate(args: argparse.Namespace) -> None:
    """Refuse --validate, before anything is made, where it cannot be done: no silent downgrade."""
    if not args.target.startswith("cmd:"):
        raise ValidateUnavailable("--validate checks the adapter protocol: it needs a cmd: target")
    try:
        importlib.import_module("jsonschema")
    except ImportError as exc:
        raise ValidateUnavailable(
            "--validate needs jsonschema: pip install 'refmem[conformance]' (or jsonschema)"
        ) from exc


def _relayed(target: str, log: pathlib.Path) -> str:
    """The cmd: target spec that runs the adapter behind conformance/protocol_relay.py, logging to `log`."""
    relay = pathlib.Path(__file__).resolve().parent / "protocol_relay.py"
    quoted = " ".join(shlex.quote(part) for part in (sys.executable, str(relay), str(log), "--"))
    return f"cmd:{quoted} {target[len('cmd:') :]}"


def _protocol_findings(log: pathlib.Path) -> List[str]:
    """The relay's log as report lines: one per message that does not follow its schema."""
    if not log.exists():
        return []
    lines = []
    for raw in log.read_text(encoding="utf-8").splitlines():
        entry = json.loads(raw)
        problems = "; ".join(entry.get("problems", []))
        where = f"protocol {entry['direction']} ({entry['schema'] or 'unknown'})"
        lines.append(f"{where}: {problems}: {entry['message'][:200]}")
    return lines


class MatrixError(Exception):
    """matrix: no reports, no --html, or a report that cannot be read."""


def _read_report(path: pathlib.Path) -> Dict[str, Any]:
    """A JSON report as the matrix reads it: an object with a figures object and a list of cases with IDs."""
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        raise MatrixError(f"{path}: not a readable JSON report ({exc})") from exc
    cases = report.get("cases") if isinstance(report, dict) else None
    if (
        not isinstance(cases, list)
        or not isinstance(report.get("figures"), dict)
        or not all(isinstance(case, dict) and isinstance(case.get("id"), str) for case in cases)
    ):
        raise MatrixError(f"{path}: not a JSON report of refmem-conformance (--report-json)")
    read: Dict[str, Any] = report
    return read


def _matrix(args: argparse.Namespace, err: TextIO) -> int:
    if not args.reports or args.html is None:
        raise MatrixError("matrix needs one or more JSON reports (--report-json) and --html FILE")
    reports = [_read_report(path) for path in args.reports]
    if args.trend:
        try:
            check_one_implementation(reports)
        except TrendError as exc:
            raise MatrixError(str(exc)) from exc
    args.html.parent.mkdir(parents=True, exist_ok=True)
    html.write(matrix_page(reports, args.title, trend=args.trend), args.html)
    kind = "reports of one implementation, oldest first" if args.trend else "implementations"
    err.write(f"wrote {args.html}: {len(reports)} {kind}\n")
    if not args.trend and one_implementation(reports):
        err.write("all the reports are of one implementation: --trend shows what changed from each to the next\n")
    return EXIT_OK


def _validate(args: argparse.Namespace, out: TextIO) -> int:
    from .validate import validate

    problems, notes, count = validate(args.cases_dir, not args.no_matrix)
    for line in notes + problems:
        out.write(line + "\n")
    out.write(f"{count} cases checked, {len(problems)} problems\n")
    return EXIT_FAILED if problems else EXIT_OK


def version_line() -> str:
    return (
        f"refmem-conformance {refmem.__version__} ({SUITE_VERSION}, adapter protocol {PROTOCOL_VERSION}, "
        f"case format {CASE_FORMAT_VERSION})"
    )


def _is_terminal(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def _progress(args: argparse.Namespace, out: TextIO, err: TextIO, total: int) -> Callable[[CaseResult], None]:
    """-v prints each case on stdout; a count and the current group go to stderr when it is a terminal
    (or with --progress), rewritten in place on a terminal, one line every PROGRESS_EVERY cases otherwise."""
    counter = [0]
    live = args.progress or (_is_terminal(err) and not args.quiet)
    in_place = _is_terminal(err)

    def show(result: CaseResult) -> None:
        counter[0] += 1
        if args.verbose:
            out.write(f"{result.outcome:5} {result.case.id}\n")
            out.flush()
        if not args.quiet and result.outcome in ("fail", "xpass") and args.command == "run":
            if live and in_place:
                err.write("\r" + " " * 79 + "\r")  # clear the progress line before the failure
            out.write(describe_failure(result, args.full_diff) + "\n")
            out.flush()
        if not live:
            return
        line = f"[{counter[0]}/{total}] {result.case.group}"
        if in_place:
            err.write("\r" + line[:79].ljust(79) + ("\n" if counter[0] == total else ""))
        elif counter[0] % PROGRESS_EVERY == 0 or counter[0] == total:
            err.write(line + "\n")
        err.flush()

    return show


def _execute(
    args: argparse.Namespace,
    cases: List[Case],
    warnings: List[str],
    out: TextIO,
    err: TextIO,
) -> Tuple[RunResult, List[expect.Expectation]]:
    entries = expect.load(args.expectations) if args.expectations and args.expectations.exists() else []
    if args.expectations and not args.expectations.exists() and args.command == "run":
        raise expect.ExpectationsError(f"{args.expectations}: no such file")
    contradicting = expect.contradictions(entries, (case.id for case in cases))
    if contradicting:
        raise expect.ExpectationsError(f"{args.expectations}: " + "; ".join(contradicting))
    chosen = _selection(args).apply(cases)
    target, protocol_log = args.target, None
    if args.validate:
        _check_validate(args)
        protocol_log = pathlib.Path(tempfile.mkdtemp(prefix="refmem-validate-")) / "violations.jsonl"
        target = _relayed(args.target, protocol_log)
    try:
        return _execute_on(args, target, protocol_log, cases, chosen, entries, warnings, out, err)
    finally:
        if protocol_log is not None:
            shutil.rmtree(protocol_log.parent, ignore_errors=True)


def _skipped_by(entries: List[expect.Expectation]) -> Callable[[Case], Optional[str]]:
    def skipped(case: Case) -> Optional[str]:
        entry = expect.skipped_by_expectation(entries, case.id)
        return None if entry is None else "expectations: " + (entry.reason or "skip")

    return skipped


def _execute_on(
    args: argparse.Namespace,
    target: str,
    protocol_log: Optional[pathlib.Path],
    cases: List[Case],
    chosen: List[Case],
    entries: List[expect.Expectation],
    warnings: List[str],
    out: TextIO,
    err: TextIO,
) -> Tuple[RunResult, List[expect.Expectation]]:
    options = SuiteOptions(
        timeout=args.timeout,
        keep=args.keep,
        progress=_progress(args, out, err, len(chosen)),
        workdir=args.workdir,
        profile=args.profile,
        error_prefix=args.error_prefix,
        stress=_stress(args),
        deployment=_deployment(args),
        classify=lambda result: expect.classify(result, entries, args.profile),
        skipped=_skipped_by(entries),
    )
    run = run_suite(target, chosen, options)
    run.stale = expect.stale_after_run(entries, run.results, (case.id for case in cases), args.profile)
    run.warnings = list(warnings) + expect.refused_warnings(run.results)
    if protocol_log is not None:
        run.target = args.target
        args.protocol_violations = _protocol_findings(protocol_log)
        count = len(args.protocol_violations)
        verdict = (
            "every message follows its schema" if not count
            else "1 message does not follow its schema" if count == 1
            else f"{count} messages do not follow their schemas"
        )
        run.warnings = run.warnings + args.protocol_violations[:PROTOCOL_SHOWN] + [f"protocol (--validate): {verdict}"]
    return run, entries


class PropertiesError(Exception):
    """--properties or --replay cannot run: hypothesis missing, options that do not go together, a file that
    cannot be replayed, a target that cannot be reset or is not deterministic."""


def _properties(args: argparse.Namespace, out: TextIO) -> int:
    """--properties N or --replay FILE: the property-based suite, its exit status the same verdict rules (a
    safety failure fails whatever the profile; the other classes run only where the profile gates them)."""
    if args.command != "run" or (args.properties is not None and args.replay is not None):
        raise PropertiesError("--properties and --replay are runs of their own: give one of them, without a subcommand")
    if args.profile is None:
        args.profile = default_profile(args.target)
    if args.replay is not None:
        from .properties import replay

        try:
            found, steps = replay.replay(args.replay, args.target, args.profile, args.timeout, args.error_prefix,
                                         args.workdir)
        except replay.ReplayRefused as exc:
            raise PropertiesError(str(exc)) from None
        return replay.write(found, steps, args.target, args.profile, out, args.full_diff)
    try:
        importlib.import_module("hypothesis")
    except ImportError as exc:
        raise PropertiesError(
            "--properties needs hypothesis: pip install 'refmem[conformance]' (or hypothesis)"
        ) from exc
    from .properties import report
    from .properties.run import run_profile
    from .properties.search import SearchError

    out.write(
        f"refmem properties: target {printable(redact_secrets(args.target))}, profile {args.profile}, "
        f"{args.properties} sequences "
        f"a class, seed {args.seed}\n"
    )
    out.flush()

    def show(result: Any) -> None:
        out.write(report.class_line(result) + "\n")
        if result.failure is not None:
            text = report.failures_text(result, redact_secrets(args.target), args.profile, args.seed, args.full_diff)
            out.write(text + "\n")
        out.flush()

    try:
        results = run_profile(
            args.target, args.profile, progress=show, examples=args.properties, seed=args.seed,
            timeout=args.timeout, error_prefix=args.error_prefix, workdir=args.workdir, findings=args.findings,
        )
    except SearchError as exc:
        raise PropertiesError(str(exc)) from None
    status, why = report.verdict(results, args.profile)
    out.write(f"  verdict: {'PASS' if status == 0 else 'FAIL'} (exit {status}): {why}\n")
    return status


class StressUnavailable(Exception):
    """--stress was asked for, but the stress tier is not installed."""


def _stress(args: argparse.Namespace) -> Optional[StressRunner]:
    """The stress tier as the runner calls it, when --stress (or --stress-quick) is given."""
    if not (args.stress or args.stress_quick):
        return None
    try:
        from .stress import run_stress
    except ImportError as exc:
        raise StressUnavailable(f"--stress: the stress tier (conformance/stress.py) cannot be loaded: {exc}") from exc
    quick = bool(args.stress_quick)

    def stress(open_fresh: Callable[[pathlib.Path], Any], workdir: pathlib.Path) -> List[Dict[str, Any]]:
        return list(run_stress(open_fresh, workdir, quick=quick))

    return stress


def _deployment(args: argparse.Namespace) -> Optional[DeploymentRunner]:
    """The deployment tier as the runner calls it, when --deployment is given."""
    if not getattr(args, "deployment", False):
        return None
    from .deployment import deployment_report

    def deployment(spec: str, workdir: pathlib.Path) -> Dict[str, Any]:
        # the target as given, not the --validate relay the cases went through: several relays would write one
        # log at once (the sessions' messages are not checked against the schemas)
        report = deployment_report(args.target or spec, workdir, timeout=args.timeout, error_prefix=args.error_prefix)
        return report.as_dict()

    return deployment


def _write_reports(args: argparse.Namespace, run: RunResult) -> None:
    writers: Dict[str, Callable[[RunResult, pathlib.Path], None]] = {
        "report_json": write_json,
        "junit": write_junit,
        "markdown": lambda run, path: write_markdown(run, path, args.title),
        "html": lambda run, path: html.write(html.report_page(as_json(run), args.title), path),
        "badges": lambda run, path: write_badges(as_json(run), path),
    }
    for option, writer in writers.items():
        path = getattr(args, option)
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            writer(run, path)


def _run(args: argparse.Namespace, cases: List[Case], warnings: List[str], out: TextIO, err: TextIO) -> int:
    for warning in warnings:
        err.write(redact_secrets(warning) + "\n")
    if args.profile is None:
        args.profile = default_profile(args.target)
    run, entries = _execute(args, cases, warnings, out, err)
    _write_reports(args, run)
    violations = len(getattr(args, "protocol_violations", None) or [])
    if args.command == "baseline":
        return _baseline(args, run, entries, out, err)
    out.write(summary(run, run.stale, args.strict, violations) + "\n")
    return run_verdict(run, args.strict, violations)[0]


def _baseline(
    args: argparse.Namespace, run: RunResult, entries: List[expect.Expectation], out: TextIO, err: TextIO
) -> int:
    """Write the expectations for today's failures; never an unsafe one (said, by ID and first finding, and
    the exit status says so too: a run that is not safe fails, whatever is recorded)."""
    written, refused = expect.baseline(run.results, entries, args.profile)
    destination = args.output or args.expectations
    if destination is None:
        out.write(json.dumps(written, indent=2, ensure_ascii=False) + "\n")
    else:
        expect.write(destination, written)
        err.write(f"wrote {len(written)} expectations to {destination}\n")
    for result in refused:
        first = next(finding for finding in result.findings if finding.cls == "safety")
        err.write(
            f"NOT RECORDED {result.case.id}: unsafe ({printable(first.kind)}: "
            f"{printable(first.message)[:200]}); an expectation cannot cover a safety finding\n"
        )
    if refused:
        err.write(f"baseline: {len(refused)} unsafe cases were not recorded; the run is not safe\n")
    status, why = run_verdict(run, False)
    if not refused and run.interrupted:
        err.write("baseline: interrupted; the file covers only the cases that ran\n")
        return status
    return 1 if refused else 0


def _terminate(signum: int, frame: Any) -> None:
    """SIGTERM ends a run as Ctrl-C does: reports of what ran are written and the work folder is removed."""
    raise KeyboardInterrupt


@contextlib.contextmanager
def _signals() -> Iterator[None]:
    try:
        previous = signal.signal(signal.SIGTERM, _terminate)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def main(argv: Optional[Sequence[str]] = None, out: Optional[TextIO] = None, err: Optional[TextIO] = None) -> int:
    """The command line; `| head` and a closed pipe end quietly (exit status 0 for what was asked, as `head`
    wanted no more), and SIGTERM is handled like Ctrl-C."""
    try:
        with _signals():
            return _main(argv, out, err)
    except BrokenPipeError:
        terminal.stream_to_devnull(sys.stdout)
        return EXIT_OK
    except KeyboardInterrupt:  # before the run began, or while writing: nothing more to report
        return 130


def _main(argv: Optional[Sequence[str]], out: Optional[TextIO], err: Optional[TextIO]) -> int:
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")  # outputs may hold lone surrogates
    out, err = out or sys.stdout, err or sys.stderr
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:1] == ["field"]:  # the field has its own options (conformance/field.py)
        from .field import main as field_main

        return field_main(arguments[1:], out, err)
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exit:
        return EXIT_USAGE if exit.code else EXIT_OK
    try:
        if args.properties is not None or args.replay is not None:
            return _properties(args, out)
        if args.reports and args.command != "matrix":
            raise MatrixError(f"unexpected arguments: {' '.join(map(str, args.reports))}")
        if args.command == "matrix":
            return _matrix(args, err)
        if args.command == "new-adapter":
            return new_adapter(args.lang, args.output, args.force, out)
        if args.command == "validate":
            return _validate(args, out)
        cases, warnings = load_cases(args.cases_dir, not args.no_matrix)
        if args.command == "list":
            return _list(args, cases, out)
        return _run(args, cases, warnings, out, err)
    except (
        CaseLoadError, expect.ExpectationsError, TargetError, StressUnavailable, MatrixError, ValidateUnavailable,
        ScaffoldError, PropertiesError,
    ) as exc:
        err.write(f"refmem-conformance: {redact_secrets(str(exc))}\n")
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
