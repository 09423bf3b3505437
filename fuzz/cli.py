"""`refmem-fuzz`: fuzz the reference or any memory backend, replay findings, turn them into cases.

    refmem-fuzz --target SPEC --max-time SECONDS [--jobs N] [--engine auto|atheris|random]
    refmem-fuzz replay FINDING.json [--target SPEC]
    refmem-fuzz to-case FINDING.json [--id ID] [--decision D-...]

SPEC is what the conformance runner takes: `refmem`, `python:MODULE:CALLABLE`, `cmd:COMMAND LINE`,
or the alias `anthropic-sdk`. Exit status: 0 nothing found (or not reproduced), 1 findings (or
reproduced), 2 usage or target errors.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import time
from typing import Dict, List, Optional, Set

import refmem

from . import engine_atheris, engine_random
from . import finding as finding_files
from .cost import MEMORY_EVERY
from .finding import Finding
from .harness import HARNESSES, Harness, Options
from .layout import scratch_dir

SUBCOMMANDS = ("run", "replay", "to-case", "robust")


def main(argv: Optional[List[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] not in SUBCOMMANDS + ("-h", "--help", "--version"):
        args = ["run"] + args
    parser = _parser()
    ns = parser.parse_args(args)
    try:
        return int(ns.func(ns))
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # a target that cannot be opened, a bad file: say so, briefly
        if type(exc).__name__ in ("TargetError", "ValueError", "FileNotFoundError", "JSONDecodeError"):
            print(f"refmem-fuzz: {exc}", file=sys.stderr)
            return 2
        raise


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="refmem-fuzz", description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", action="version", version=f"refmem-fuzz {refmem.__version__}")
    sub = parser.add_subparsers(dest="subcommand", required=True)

    run = sub.add_parser("run", help="fuzz a target (the default subcommand)")
    run.add_argument("--target", default="refmem", help="refmem | python:MODULE:CALLABLE | cmd:COMMAND | anthropic-sdk")
    run.add_argument("--max-time", type=float, default=60.0, help="seconds to fuzz (per job)")
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
    replay.add_argument("--target", default=None, help="default: the finding's own target")
    replay.add_argument("--step-timeout", type=float, default=5.0)
    replay.add_argument("--harness", choices=tuple(HARNESSES), default="sequence",
                        help="for a raw fuzzer input (a libFuzzer crash file): which harness made it")
    replay.add_argument("--plain-layout", action="store_true", help="for a raw fuzzer input")
    replay.set_defaults(func=cmd_replay)

    to_case = sub.add_parser("to-case", help="print a finding as a conformance case (JSON)")
    to_case.add_argument("file", type=pathlib.Path)
    to_case.add_argument("--id", default=None)
    to_case.add_argument("--decision", default=None, help="spec-notes ID for a behaviour (diverge) finding")
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
    engine = _engine(ns.engine)
    findings_dir = ns.findings or pathlib.Path("fuzz-findings") / _slug(ns.target)
    if ns.jobs > 1:
        return _run_jobs(ns, engine, findings_dir)
    label = engine_atheris.LABEL if engine == "atheris" else engine_random.LABEL
    _say(ns, f"refmem-fuzz: target {ns.target}, harness {ns.harness}, engine {label}, seed {ns.seed}")
    work = scratch_dir("refmem-fuzz-")
    known = _known_oracles(findings_dir, ns.target)

    def on_finding(found: Finding, path: Optional[pathlib.Path]) -> None:
        where = f" -> {path}" if path else ""
        print(f"FINDING {found.oracle} ({len(found.commands)} commands){where}", flush=True)

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
    )
    started = time.monotonic()

    def make_harness() -> Harness:
        nonlocal started
        harness = HARNESSES[ns.harness](options, work)
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
        seconds = time.monotonic() - started
        rate = harness.runs / seconds if seconds > 0 else 0.0
        print(
            f"refmem-fuzz: {harness.runs} runs in {seconds:.1f}s ({rate:.1f} exec/s), "
            f"{len(harness.findings)} new finding(s), engine {engine}",
            flush=True,
        )
        harness.close()
        shutil.rmtree(work, ignore_errors=True)

    if engine == "atheris":
        engine_atheris.fuzz(make_harness, ns.target, ns.max_time, ns.runs, ns.seed, ns.stop_on_first,
                            ns.libfuzzer_arg, summary, ns.instrument)
        return 0  # not reached: libFuzzer exits the process
    harness = make_harness()
    try:
        engine_random.fuzz(harness, ns.max_time, ns.runs, ns.seed, ns.stop_on_first)
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


def _run_jobs(ns: argparse.Namespace, engine: str, findings_dir: pathlib.Path) -> int:
    """N worker processes with consecutive seeds and one findings directory; then one per oracle."""
    package_parent = str(pathlib.Path(__file__).resolve().parent.parent)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_parent, env.get("PYTHONPATH", "")]))
    base = [sys.executable, "-m", f"{__package__}.cli", "run", "--target", ns.target, "--max-time", str(ns.max_time),
            "--engine", engine, "--harness", ns.harness, "--findings", str(findings_dir),
            "--step-timeout", str(ns.step_timeout), "--cost-factor", str(ns.cost_factor)]
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
        child.wait()
    kept = _one_per_oracle(findings_dir, ns.target)
    for oracle, path in sorted(kept.items()):
        print(f"{oracle}: {path}")
    print(f"refmem-fuzz: {ns.jobs} jobs done, {len(kept)} distinct finding(s) for {ns.target}")
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
    from .replay import finding_from_raw_input, replay

    try:
        found = finding_files.load(ns.file)
    except (ValueError, UnicodeDecodeError):  # not a finding file: a raw fuzzer input
        found = finding_from_raw_input(ns.file.read_bytes(), ns.target or "refmem", ns.harness, not ns.plain_layout)
        print(f"raw fuzzer input decoded by the {ns.harness} harness into {len(found.commands)} command(s)")
    target = ns.target or found.target
    result = replay(found, target, ns.step_timeout if ns.step_timeout > 0 else None)
    for index, (command, step) in enumerate(zip(result.commands, result.steps)):
        flags = [flag for flag in ("crashed", "timed_out", "raised") if getattr(step, flag, False)]
        print(f"[{index}] {json.dumps(command, ensure_ascii=True)}")
        print(f"    is_error={step.is_error}{' ' + ','.join(flags) if flags else ''}: {_preview(step.output)}")
    for record in result.costs:
        if found.oracle.startswith("cost:") and record["step"] == found.step:
            measured, budget = record["measured"], record["budget"]
            print(f"    cost of step {record['step']} ({record['input_chars']:,} input characters): "
                  f"{measured['seconds']:.3f} s (budget {budget['seconds']:.3f} s), "
                  f"{measured['output_chars']:,} output characters (budget {budget['output_chars']:,}), "
                  f"memory {measured['memory_bytes']} (budget {budget['memory_bytes']})")
    oracles = sorted({v.oracle for v in result.violations})
    reproduced = found.oracle in oracles if found.oracle else bool(oracles)
    print(f"oracles broken now: {', '.join(oracles) if oracles else 'none'}")
    if found.oracle:
        print(f"{'REPRODUCED' if reproduced else 'NOT REPRODUCED'}: {found.oracle} on {target}")
    else:
        print(f"{'ORACLES BROKEN' if reproduced else 'CLEAN'} on {target}")
    return 1 if reproduced else 0


def cmd_to_case(ns: argparse.Namespace) -> int:
    from .to_case import to_case

    found = finding_files.load(ns.file)
    print(json.dumps(to_case(found, ns.id, ns.decision), indent=2, ensure_ascii=True))
    return 0


def _preview(text: str, limit: int = 200) -> str:
    text = json.dumps(text, ensure_ascii=True)[1:-1]
    return text if len(text) <= limit else text[:limit] + "..."


def _say(ns: argparse.Namespace, text: str) -> None:
    if not getattr(ns, "quiet", False):
        print(text, flush=True)


def cmd_robust(ns: argparse.Namespace) -> int:
    """`refmem-fuzz robust HARNESS`: fuzz/robustness.py's harnesses, with their own drivers."""
    from . import robustness

    argv = [ns.harness, "--engine", ns.engine, "--seed", str(ns.seed)]
    argv += ["--runs", str(ns.runs)] if ns.runs is not None else ["--max-time", str(ns.max_time)]
    return robustness.main(argv)


if __name__ == "__main__":
    sys.exit(main())
