"""`refmem-fuzz`: fuzz the reference or any memory backend, replay findings, turn them into cases.

    refmem-fuzz --target SPEC --max-time SECONDS [--jobs N] [--engine auto|atheris|random]
    refmem-fuzz replay FINDING.json [--target SPEC]
    refmem-fuzz replay CRASH_FILE --raw [--harness sequence|paths] [--plain-layout] [--target SPEC]
    refmem-fuzz to-case FINDING.json [--id GROUP-NNN] [--decision D-...] [--out FILE]

SPEC is what the conformance runner takes: `refmem`, `python:MODULE:CALLABLE`, `cmd:COMMAND LINE`,
or the alias `anthropic-sdk`. Exit status: 0 nothing found (or not reproduced), 1 findings (or
reproduced), 2 usage or target errors, or a file that is not a well-formed finding.

A finding file may come from anyone (SECURITY.md asks reporters for one): `replay` never starts the
target a file names (the reference, or `--target`), and everything this command prints that came
from a file or a backend is escaped (`refmem_harness.visible.printable`) and cut, so no escape sequence
or line break of theirs reaches the terminal.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import time
from typing import Dict, List, Optional, Set, TextIO

import refmem
from refmem import terminal
from refmem_harness import finding as finding_files
from refmem_harness import hosttree
from refmem_harness.finding import Finding, FindingError
from refmem_harness.sequence_layout import scratch_dir

from . import engine_atheris, engine_random
from .cost import MEMORY_EVERY
from .harness import Harness, Options
from .harnesses import HARNESSES
from .printed import printable_cut

SUBCOMMANDS = ("run", "replay", "to-case", "robust")
RUN_SLACK = 5.0
"""Seconds a run may end after --max-time: a step still running at the deadline is given up a
second after it (session.STEP_GRACE), then the findings are written and the target closed."""
MAX_ORACLES_SHOWN = 20
STATUS_READER_GONE = 141
"""As `refmem exec`: the reader left before a print this command could not tell apart from its work."""


def main(argv: Optional[List[str]] = None) -> int:
    """The `refmem-fuzz` command. A reader that leaves early (`| head`) ends the output quietly:
    what is left to print is dropped, the work goes on, and the exit status is the command's own."""
    began = time.monotonic()
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] not in SUBCOMMANDS + ("-h", "--help", "--version"):
        args = ["run"] + args
    parser = _parser()
    ns = parser.parse_args(args)
    ns.began = began
    try:
        status = int(ns.func(ns))
    except BrokenPipeError:  # a print that did not go through _emit (robust's): the status is unknown
        terminal.stream_to_devnull(sys.stdout)
        return STATUS_READER_GONE
    except KeyboardInterrupt:
        status = 130
    except FindingError as exc:
        hint = "; a raw fuzzer input is replayed with --raw" if ns.subcommand == "replay" else ""
        _emit(f"refmem-fuzz: {printable_cut(ns.file, 'name')}: not a well-formed finding file: {exc}{hint}", sys.stderr)
        status = 2
    except Exception as exc:  # a target that cannot be opened, a file that cannot be read: say so, on one line
        if not isinstance(exc, (OSError, ValueError)) and type(exc).__name__ != "TargetError":
            raise
        _emit(f"refmem-fuzz: {printable_cut(exc, 'error')}", sys.stderr)
        status = 2
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        terminal.stream_to_devnull(sys.stdout)
    return status


def _emit(text: str, stream: Optional[TextIO] = None) -> None:
    """Print a line now; once its reader has gone, print nothing more (no BrokenPipeError)."""
    stream = stream or sys.stdout
    try:
        print(text, file=stream, flush=True)
    except BrokenPipeError:
        terminal.stream_to_devnull(stream)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="refmem-fuzz", description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", action="version", version=f"refmem-fuzz {refmem.__version__}")
    sub = parser.add_subparsers(dest="subcommand", required=True)

    run = sub.add_parser("run", help="fuzz a target (the default subcommand)")
    run.add_argument("--target", default="refmem", help="refmem | python:MODULE:CALLABLE | cmd:COMMAND | anthropic-sdk")
    run.add_argument("--max-time", type=float, default=60.0,
                     help=f"seconds the whole run takes, calibration, confirming and minimising findings included "
                          f"(it ends at most {RUN_SLACK:g} s later)")
    run.add_argument("--deadline", type=float, default=None, help=argparse.SUPPRESS)  # --jobs: the parent's
    run.add_argument("--runs", type=int, default=None, help="stop after this many inputs (per job)")
    run.add_argument("--jobs", type=int, default=1, help="parallel fuzzing processes")
    run.add_argument("--engine", choices=("auto", "atheris", "random"), default="auto")
    run.add_argument("--harness", choices=tuple(HARNESSES), default="sequence")
    run.add_argument("--seed", type=int, default=1)
    run.add_argument("--findings", type=pathlib.Path, default=None, help="directory for finding files")
    run.add_argument("--plain-layout", action="store_true", help="no hostile fixtures inside the root")
    diff = run.add_mutually_exclusive_group()
    diff.add_argument("--differential", dest="differential", action="store_true", default=None,
                      help="compare with the model of the reference (default: only for the reference)")
    diff.add_argument("--no-differential", dest="differential", action="store_false")
    run.add_argument("--step-timeout", type=float, default=5.0, help="seconds before a command counts as a hang")
    run.add_argument("--no-cost", dest="cost", action="store_false",
                     help="no cost oracle (time, output and memory budgets linear in the input)")
    run.add_argument("--no-cost-memory", dest="cost_memory", action="store_false",
                     help="cost oracle without memory (in process, tracemalloc slows the sequences it measures)")
    run.add_argument("--cost-factor", type=float, default=1.0, help="multiply every cost budget by this")
    run.add_argument("--no-growth", dest="growth", action="store_false",
                     help="no growth forms (large repetitive inputs, deep trees, many files): faster, for escapes")
    run.add_argument("--stop-on-first", action="store_true")
    run.add_argument("--libfuzzer-arg", action="append", default=[], help="passed to libFuzzer as is")
    run.add_argument("--instrument", action="append", default=None,
                     help="atheris: package to instrument for coverage (default: the target's own)")
    run.add_argument("--quiet", action="store_true")
    run.set_defaults(func=cmd_run)

    replay = sub.add_parser("replay", help="re-run a finding file and check its oracle again")
    replay.add_argument("file", type=pathlib.Path)
    replay.add_argument("--target", default=None,
                        help="the target to replay on (default: the embedded reference, refmem); the target a "
                             "finding file names is shown, never started")
    replay.add_argument("--step-timeout", type=float, default=5.0)
    replay.add_argument("--raw", action="store_true",
                        help="the file is a raw fuzzer input (a libFuzzer crash file), decoded by --harness")
    replay.add_argument("--harness", choices=tuple(HARNESSES), default=None,
                        help="with --raw: the harness that made the input (default: sequence)")
    replay.add_argument("--plain-layout", action="store_true", default=None,
                        help="with --raw: no hostile fixtures inside the root")
    replay.set_defaults(func=cmd_replay)

    to_case = sub.add_parser("to-case", help="write a finding as a conformance case file (JSON, one group)")
    to_case.add_argument("file", type=pathlib.Path)
    to_case.add_argument("--id", default=None, help="the case ID, GROUP-NNN (default: fuzz-KEY-001, KEY the finding's)")
    to_case.add_argument("--decision", default=None, help="spec-notes ID for a behaviour (diverge) finding")
    to_case.add_argument("--out", type=pathlib.Path, default=None,
                         help="write the case file here (default: standard output); put it in a folder of its own "
                              "and pass that folder to refmem-conformance --cases-dir")
    to_case.add_argument("--force", action="store_true", help="with --out: replace an existing file")
    to_case.set_defaults(func=cmd_to_case)

    from . import robustness

    robust = sub.add_parser(
        "robust", help="fuzz the reference's own programs: the content policy, refmem serve, refmem exec, prune"
    )
    robust.add_argument("harness", choices=tuple(robustness.HARNESSES))
    robust.add_argument("--engine", choices=("random", "atheris"), default="random")
    robust.add_argument("--max-time", type=float, default=60.0, help="seconds (default 60)")
    robust.add_argument("--runs", type=int, help="inputs to run (random engine), instead of --max-time")
    robust.add_argument("--seed", type=int, default=1)
    robust.set_defaults(func=cmd_robust)
    return parser


# --- run ----------------------------------------------------------------------------------------


def _engine(name: str) -> str:
    if name == "auto":
        return "atheris" if engine_atheris.available() else "random"
    if name == "atheris" and not engine_atheris.available():
        raise ValueError("atheris is not importable here; use --engine random")
    return name


def _slug(target: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "-" for ch in target)[:60].strip("-") or "target"


def cmd_run(ns: argparse.Namespace) -> int:
    """Fuzz until --runs or the deadline: --max-time from the command's start (or the parent's, for a
    --jobs worker), which every phase checks (session.py); the run ends at most RUN_SLACK later."""
    deadline = ns.deadline if ns.deadline is not None else ns.began + max(ns.max_time, 0.0)
    engine = _engine(ns.engine)
    findings_dir = ns.findings or pathlib.Path("fuzz-findings") / _slug(ns.target)
    if ns.jobs > 1:
        return _run_jobs(ns, engine, findings_dir, deadline)
    label = engine_atheris.LABEL if engine == "atheris" else engine_random.LABEL
    target = printable_cut(ns.target, "name")
    _say(ns, f"refmem-fuzz: target {target}, harness {ns.harness}, engine {label}, seed {ns.seed}")
    known = _known_oracles(findings_dir, ns.target)

    def on_finding(found: Finding, path: Optional[pathlib.Path]) -> None:
        where = f" -> {printable_cut(path, 'name')}" if path else ""
        _emit(f"FINDING {printable_cut(found.oracle, 'name')} ({len(found.commands)} commands){where}")

    options = Options(
        target=ns.target,
        hostile=not ns.plain_layout,
        differential=ns.differential,
        step_timeout=ns.step_timeout if ns.step_timeout > 0 else None,
        findings_dir=findings_dir,
        engine=engine,
        seed=ns.seed,
        on_finding=on_finding,
        cost=ns.cost and ns.harness == "sequence",
        cost_memory=ns.cost_memory,
        cost_factor=ns.cost_factor,
        growth=ns.growth,
        deadline=deadline,
    )
    work = scratch_dir("refmem-fuzz-")
    started = time.monotonic()

    def make_harness() -> Harness:
        nonlocal started
        try:
            harness = HARNESSES[ns.harness](options, work)
        except BaseException:
            hosttree.remove(str(work))
            raise
        harness.seen |= known
        budget = getattr(getattr(harness, "settings", None), "budget", None)
        if budget is not None:
            base, per_char = budget.seconds(0, "cpu"), budget.seconds(1, "cpu") - budget.seconds(0, "cpu")
            memory = f"memory measured in 1 sequence in {MEMORY_EVERY}" if options.cost_memory else "no memory"
            _say(ns, f"refmem-fuzz: cost oracle on, calibrated at {budget.unit_seconds * 1e9:.0f} ns per character; "
                     f"a command of n input characters may take {base:.3f} s + n x {per_char:.2g} s CPU; {memory}")
        started = time.monotonic()  # the rate counts fuzzing, not imports and instrumentation
        return harness

    def summary(harness: Harness) -> None:
        try:
            harness.close()
        finally:
            hosttree.remove(str(work))
        seconds = time.monotonic() - started
        rate = harness.runs / seconds if seconds > 0 else 0.0
        _emit(
            f"refmem-fuzz: {harness.runs} runs in {seconds:.1f}s ({rate:.1f} exec/s), "
            f"{len(harness.findings)} new finding(s), engine {engine}; "
            f"{time.monotonic() - ns.began:.1f}s in all (--max-time {ns.max_time:g})"
        )

    if engine == "atheris":
        engine_atheris.fuzz(make_harness, ns.target, deadline, ns.runs, ns.seed, ns.stop_on_first,
                            ns.libfuzzer_arg, summary, ns.instrument)
        return 0  # not reached: libFuzzer exits the process
    harness = make_harness()
    try:
        engine_random.fuzz(harness, None, ns.runs, ns.seed, ns.stop_on_first, deadline=deadline)
    finally:
        summary(harness)
    return 1 if harness.findings else 0


def _known_oracles(directory: pathlib.Path, target: str) -> Set[str]:
    known = set()
    if directory.is_dir():
        for path in directory.glob("*.json"):
            try:
                found = finding_files.load(path)
            except (ValueError, OSError, TypeError):
                continue
            if found.target == target:
                known.add(found.oracle)
    return known


def _run_jobs(ns: argparse.Namespace, engine: str, findings_dir: pathlib.Path, deadline: float) -> int:
    """N worker processes with consecutive seeds, one findings directory and this run's deadline
    (time.monotonic() is one clock for every process of the machine); then one finding per oracle."""
    package_parent = str(pathlib.Path(__file__).resolve().parent.parent)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_parent, env.get("PYTHONPATH", "")]))
    base = [sys.executable, "-m", f"{__package__}.cli", "run", "--target", ns.target, "--max-time", str(ns.max_time),
            "--deadline", repr(deadline), "--engine", engine, "--harness", ns.harness,
            "--findings", str(findings_dir), "--step-timeout", str(ns.step_timeout),
            "--cost-factor", str(ns.cost_factor)]
    if not ns.cost:
        base.append("--no-cost")
    if not ns.cost_memory:
        base.append("--no-cost-memory")
    if not ns.growth:
        base.append("--no-growth")
    if ns.runs is not None:
        base += ["--runs", str(ns.runs)]
    if ns.plain_layout:
        base.append("--plain-layout")
    if ns.differential is not None:
        base.append("--differential" if ns.differential else "--no-differential")
    for arg in ns.libfuzzer_arg:
        base += ["--libfuzzer-arg", arg]
    for package in ns.instrument or []:
        base += ["--instrument", package]
    children = [subprocess.Popen(base + ["--seed", str(ns.seed + index)], env=env) for index in range(ns.jobs)]
    for child in children:
        try:  # each worker keeps the deadline itself; this is the backstop for one that does not
            child.wait(timeout=max(deadline + RUN_SLACK - time.monotonic(), 0.0))
        except subprocess.TimeoutExpired:
            child.terminate()
            child.wait()
    kept = _one_per_oracle(findings_dir, ns.target)
    for oracle, path in sorted(kept.items()):
        _emit(f"{printable_cut(oracle, 'name')}: {printable_cut(path, 'name')}")
    _emit(f"refmem-fuzz: {ns.jobs} jobs done, {len(kept)} distinct finding(s) for {printable_cut(ns.target, 'name')}")
    return 1 if kept else 0


def _one_per_oracle(directory: pathlib.Path, target: str) -> Dict[str, pathlib.Path]:
    best: Dict[str, pathlib.Path] = {}
    sizes: Dict[str, int] = {}
    for path in sorted(directory.glob("*.json")) if directory.is_dir() else []:
        try:
            found = finding_files.load(path)
        except (ValueError, OSError, TypeError):
            continue
        if found.target != target:
            continue
        size = len(json.dumps(found.commands))
        if found.oracle not in best or size < sizes[found.oracle]:
            if found.oracle in best:
                best[found.oracle].unlink()
            best[found.oracle], sizes[found.oracle] = path, size
        else:
            path.unlink()
    return best


# --- replay and to-case -------------------------------------------------------------------------


def cmd_replay(ns: argparse.Namespace) -> int:
    from .replay import REFERENCE, finding_from_raw_input, replay

    if not ns.raw and (ns.harness is not None or ns.plain_layout is not None):
        raise ValueError("--harness and --plain-layout describe a raw fuzzer input: give them with --raw")
    target = ns.target or REFERENCE
    try:
        data = finding_files.read_bounded(ns.file)
    except FindingError as exc:  # too large, or not a regular file
        raise ValueError(f"{printable_cut(ns.file, 'name')}: {exc}") from None
    if ns.raw:
        harness = ns.harness or "sequence"
        found = finding_from_raw_input(data, target, harness, not ns.plain_layout)
        _emit(f"raw fuzzer input ({len(data):,} bytes) decoded by the {harness} harness into "
              f"{len(found.commands)} command(s)")
    else:
        found = finding_files.parse(data)
        _emit(f"finding {printable_cut(found.oracle, 'name')}, found on {printable_cut(found.target, 'name')} "
              f"({found.harness} harness, {len(found.commands)} command(s))")
    if ns.target is None:
        _emit(f"replaying on the embedded reference ({REFERENCE}) only; the file's target is not started "
              "(--target SPEC replays on a target you choose)")
    else:
        _emit(f"replaying on {printable_cut(target, 'name')} (--target)")
    result = replay(found, target, ns.step_timeout if ns.step_timeout > 0 else None)
    for index, (command, step) in enumerate(zip(result.commands, result.steps)):
        flags = [flag for flag in ("crashed", "timed_out", "raised") if getattr(step, flag, False)]
        _emit(f"[{index}] {printable_cut(json.dumps(command, ensure_ascii=True), 'command')}")
        _emit(f"    is_error={printable_cut(step.is_error, 'name')}{' ' + ','.join(flags) if flags else ''}: "
              f"{printable_cut(step.output, 'output')}")
        detail = getattr(step, "detail", "")
        if flags and detail:
            _emit(f"    {printable_cut(detail, 'detail')}")
    for record in result.costs:
        if found.oracle.startswith("cost:") and record["step"] == found.step:
            measured, budget = record["measured"], record["budget"]
            _emit(f"    cost of step {record['step']} ({record['input_chars']:,} input characters): "
                  f"{measured['seconds']:.3f} s (budget {budget['seconds']:.3f} s), "
                  f"{measured['output_chars']:,} output characters (budget {budget['output_chars']:,}), "
                  f"memory {measured['memory_bytes']} (budget {budget['memory_bytes']})")
    oracles = sorted({v.oracle for v in result.violations})
    reproduced = found.oracle in oracles if found.oracle else bool(oracles)
    listed = ", ".join(printable_cut(oracle, "name") for oracle in oracles[:MAX_ORACLES_SHOWN])
    more = f" and {len(oracles) - MAX_ORACLES_SHOWN} more" if len(oracles) > MAX_ORACLES_SHOWN else ""
    _emit(f"oracles broken now: {listed + more if oracles else 'none'}")
    for violation in result.violations[:MAX_ORACLES_SHOWN]:
        _emit(f"    {printable_cut(violation.oracle, 'name')}: {printable_cut(violation.detail, 'detail')}")
    if found.oracle:
        _emit(f"{'REPRODUCED' if reproduced else 'NOT REPRODUCED'}: {printable_cut(found.oracle, 'name')} "
              f"on {printable_cut(target, 'name')}")
    else:
        _emit(f"{'ORACLES BROKEN' if reproduced else 'CLEAN'} on {printable_cut(target, 'name')}")
    return 1 if reproduced else 0


def cmd_to_case(ns: argparse.Namespace) -> int:
    from .to_case import to_case_file

    found = finding_files.load(ns.file)
    text = json.dumps(to_case_file(found, ns.id, ns.decision), indent=2, ensure_ascii=True) + "\n"
    if ns.out is None:
        _emit(text.rstrip("\n"))
        return 0
    if ns.out.exists() and not ns.force:
        raise ValueError(f"{printable_cut(ns.out, 'name')} exists: --force replaces it")
    ns.out.parent.mkdir(parents=True, exist_ok=True)
    ns.out.write_text(text, encoding="utf-8")
    _emit(f"wrote {printable_cut(ns.out, 'name')}: run it with refmem-conformance --cases-dir "
          f"{printable_cut(ns.out.parent, 'name')} --target SPEC")
    return 0


def _say(ns: argparse.Namespace, text: str) -> None:
    if not getattr(ns, "quiet", False):
        _emit(text)


def cmd_robust(ns: argparse.Namespace) -> int:
    """`refmem-fuzz robust HARNESS`: fuzz/robustness.py's harnesses, with their own drivers."""
    from . import robustness

    argv = [ns.harness, "--engine", ns.engine, "--seed", str(ns.seed)]
    left = max(ns.began + ns.max_time - time.monotonic(), 0.0)  # the time since the command started counts
    argv += ["--runs", str(ns.runs)] if ns.runs is not None else ["--max-time", repr(left)]
    return robustness.main(argv)


if __name__ == "__main__":
    sys.exit(main())
