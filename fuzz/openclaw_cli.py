"""The command line of the OpenClaw plug-in (fuzz/openclaw.py): `python -m refmem_fuzz.openclaw_cli`, a seeded random
run or `replay FILE...`. Apart from the plug-in so that the plug-in imports no engine and no replay: the registry of
harnesses (harnesses.py), which replay reads, imports the plug-in.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time
from typing import List, Optional

from refmem_harness import finding as finding_files
from refmem_harness import hosttree
from refmem_harness.finding import Finding, FindingError
from refmem_harness.sequence_layout import scratch_dir
from refmem_harness.targets import TargetError

from . import engine_random, openclaw
from .harness import Options
from .openclaw import OpenClawHarness
from .printed import printable_cut
from .replay import replay

# --- the command line -----------------------------------------------------------------------------------


def _fuzz(args: argparse.Namespace) -> int:
    if args.runs is None and args.max_time is None:
        args.runs = 500

    def on_finding(found: Finding, path: Optional[pathlib.Path]) -> None:
        commands = printable_cut(json.dumps(found.commands), "command")
        print(f"finding: {printable_cut(found.oracle, 'name')}: {commands}", flush=True)

    deadline = time.monotonic() + args.max_time if args.max_time is not None else None
    options = Options(target=args.target, step_timeout=args.timeout if args.timeout > 0 else None, seed=args.seed,
                      engine="random",
                      findings_dir=pathlib.Path(args.findings) if args.findings else None, on_finding=on_finding,
                      cost=False, growth=False, deadline=deadline)
    work = scratch_dir("refmem-openclaw-fuzz-")
    try:
        harness = OpenClawHarness(options, work)
        try:
            stats = engine_random.fuzz(harness, None, args.runs, args.seed, deadline=deadline)
        finally:
            harness.close()
    finally:
        hosttree.remove(str(work))
    rate = harness.calls / stats.seconds if stats.seconds else 0.0
    print(f"{harness.calls} calls ({stats.runs} inputs) in {stats.seconds:.0f} s ({rate:.0f}/s), "
          f"{len(harness.findings)} findings")
    print("outcomes: " + ", ".join(f"{name} {count}" for name, count in sorted(harness.outcomes.items())))
    return 1 if harness.findings else 0


def _replay(args: argparse.Namespace, files: List[str]) -> int:
    """Each finding file on `--target` (never the file's own): its oracle broken again is reproduced."""
    reproduced = 0
    for name in files:
        found = finding_files.load(pathlib.Path(name))
        broken = sorted({violation.oracle for violation in replay(found, args.target, args.timeout).violations})
        reproduced += found.oracle in broken
        verdict = "reproduced" if found.oracle in broken else "not reproduced"
        said = printable_cut(", ".join(broken) or "no oracle broken", "detail")
        print(f"{printable_cut(name, 'name')}: {verdict}: {said}")
    return 1 if reproduced else 0


def main(argv: Optional[List[str]] = None) -> int:
    summary = (openclaw.__doc__ or "").splitlines()[0]
    parser = argparse.ArgumentParser(prog="python -m refmem_fuzz.openclaw_cli", description=summary)
    parser.add_argument("replay", nargs="*", help='"replay FILE..." to run finding files again')
    parser.add_argument("--target", default="refmem", help="refmem, openclaw, python:MODULE:CALLABLE or cmd:PROGRAM")
    parser.add_argument("--runs", type=int, help="inputs to run (each one to eight calls; default 500)")
    parser.add_argument("--max-time", type=float, help="seconds the run takes at most")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds per call before it counts as a hang")
    parser.add_argument("--findings", help="folder for finding files (default: print only)")
    args = parser.parse_args(argv)
    if args.replay and args.replay[0] != "replay":
        parser.error("the only positional command is: replay FILE...")
    try:
        return _replay(args, args.replay[1:]) if args.replay else _fuzz(args)
    except (TargetError, FindingError, OSError) as error:
        print(f"openclaw fuzz: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
