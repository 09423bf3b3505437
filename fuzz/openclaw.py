"""Fuzzing OpenClaw's memory reader (and the reference) with hostile paths on a hostile workspace.

    python -m refmem_fuzz.openclaw --target openclaw --max-time 300      # OpenClaw's memory_get / memory_search
    python -m refmem_fuzz.openclaw --target refmem --runs 20000          # the reference
    python -m refmem_fuzz.openclaw replay fuzz/findings/openclaw/FILE.finding --target openclaw

Each input is a `memory_get` path built from a dictionary of hostile pieces (dot segments, encoded
dots, backslashes, NUL, look-alike dots and slashes, the workspace's own host path, links, the
FIFO, the hard link, the sibling folder) with random `from` / `lines`, and now and then a
`memory_search` for the canary's words. It runs against a workspace seeded with symbolic links to
the outside (a file, a folder, a dangling one), a hard link to the outside secret, a FIFO, a file
that is not UTF-8 and a CRLF file (`LAYOUT`), beside a canary tree. Oracles, by class:

| oracle | broken when |
|---|---|
| `leak:canary:TOOL` | a reply holds the canary text (content from outside the workspace) |
| `leak:host-path:TOOL` | a reply holds the case directory's host path that the input did not contain |
| `hang:TOOL` | a call took longer than the step timeout |
| `crash:TOOL` | the target died, broke the protocol, or raised |
| `escape:outside-changed` | anything outside the workspace changed |

Findings are deduplicated by oracle, minimised (path pieces dropped while the oracle still
breaks), and written as JSON replay files with the host paths and the canary replaced by
`<CASE>` and `<CANARY>`. The engine is a seeded random generator (the target runs in another
process, so there is no coverage to guide it); a run is reproducible from its seed.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import pathlib
import random
import secrets
import shutil
import sys
import tempfile
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from .suite import layout, openclaw_runner

Reply = openclaw_runner.Reply
Target = openclaw_runner.Target
TargetError = openclaw_runner.TargetError
open_target = openclaw_runner.open_target

FORMAT = "refmem-openclaw-finding/1"
SUFFIX = ".finding"
"""Finding files are JSON, named *.finding: fuzz/findings/ also holds the memory tool harness's *.json files."""
SEARCH_SHARE = 0.08
"""Share of inputs that are a memory_search (OpenClaw's search is much slower than its reader)."""

LAYOUT: List[Dict[str, Any]] = [
    {"type": "file", "path": "MEMORY.md", "text": "# Prefs\n- green\n"},
    {"type": "file", "path": "memory/ok.md", "text": "an ordinary note\n"},
    {"type": "file", "path": "memory/crlf.md", "text": "one\r\ntwo\r\n"},
    {"type": "file", "path": "memory/bin.md", "base64": "aGVsbG8g//4K"},
    {"type": "symlink", "path": "memory/link.md", "target": "../../outside/secret.md"},
    {"type": "symlink", "path": "memory/out", "target": "../../outside"},
    {"type": "symlink", "path": "memory/dangling.md", "target": "../../outside/nothing.md"},
    {"type": "symlink", "path": "USER.md", "target": "../outside/secret.md"},
    {"type": "hardlink", "path": "memory/hard.md", "target": "outside/secret.md"},
    {"type": "fifo", "path": "memory/fifo.md"},
    {"type": "dir", "path": "memory/dir.md"},
]
"""The hostile workspace; `outside/secret.md` (the canary) is made before it."""

PIECES = [
    "MEMORY.md", "USER.md", "dreams.md", "DREAMS.md", "memory", "memory.md", "ok.md", "crlf.md", "bin.md",
    "link.md", "out", "secret.md", "dangling.md", "hard.md", "fifo.md", "dir.md", "dir", "inner.txt", "..", ".",
    "", "%2e%2e", "%252e%252e", "..%2f", "%2f", "\\", "..\\", "\u2025", "\uff0e\uff0e", "\u2215", "\x00", "~",
    "memories", "memories_evil", "outside", ".refmem", ".openclaw-repair", "x.md", "a\nb.md", " MEMORY.md ",
    "%00", "....//", "..;", "CON", "x.md:stream", "file:", "?", "*.md",
]  # fmt: skip
PREFIXES = ["", "", "", "/memories/", "/", "./", "<ROOT>/", "<CASE>/", "memory/", "memory/out/", "../", "file://"]
KNOWN = [str(spec["path"]) for spec in LAYOUT] + ["memory/out/secret.md", "memory/out/dir/inner.txt", "dreams.md"]
"""The layout's own paths, which mutations start from (a random path rarely names a file)."""
MUTATIONS: List[Callable[[random.Random, str], str]] = [
    lambda rng, path: rng.choice(PREFIXES) + path,
    lambda rng, path: path.replace("/", rng.choice(["//", "/./", "\\", "/%2f", "\u2215"]), 1),
    lambda rng, path: path.replace("memory/", "memory/" + rng.choice(["../", "x/../", "./", "%2e%2e/", "out/../"]), 1),
    lambda rng, path: path.upper() if rng.random() < 0.5 else path.lower(),
    lambda rng, path: path + rng.choice(["/", "\x00", ".", " ", "%00", ":$DATA", "/..", "?x", "#x"]),
    lambda rng, path: path.replace(".md", rng.choice([".MD", ".md.", ".md ", "%2emd", ".txt", ""]), 1),
    lambda rng, path: "".join(f"%{ord(ch):02x}" if ch == "." and rng.random() < 0.5 else ch for ch in path),
]


@dataclasses.dataclass
class Finding:
    target: str
    oracle: str
    detail: str
    call: Dict[str, Any]
    observed: Dict[str, Any]
    seed: Optional[int] = None
    runs: int = 0

    def key(self) -> str:
        import hashlib

        blob = json.dumps([self.oracle, self.call], sort_keys=True, ensure_ascii=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:12]

    def to_json(self) -> Dict[str, Any]:
        return dict(dataclasses.asdict(self), format=FORMAT, layout="hostile-v1")


def generate(rng: random.Random) -> Dict[str, Any]:
    """One call: mostly memory_get on a built path, sometimes a search for the canary's words."""
    if rng.random() < SEARCH_SHARE:
        words = rng.sample(["<CANARY>", "outside", "secret", "inner", "green", "note", "NEAR(", '"', "*"], 2)
        return {"tool": "memory_search", "query": " ".join(words), "maxResults": rng.choice([None, 1, 6, 50])}
    if rng.random() < 0.5:
        path = rng.choice(KNOWN)
        for _ in range(rng.randint(0, 2)):
            path = rng.choice(MUTATIONS)(rng, path)
    else:
        path = rng.choice(PREFIXES) + "/".join(rng.choice(PIECES) for _ in range(rng.randint(1, 5)))
    call: Dict[str, Any] = {"tool": "memory_get", "path": path}
    if rng.random() < 0.3:
        call["from"] = rng.choice([1, 2, 3, 0, -1, 10**12, 1.5, "2", None])
    if rng.random() < 0.3:
        call["lines"] = rng.choice([1, 2, 120, 0, 10**12, None])
    return call


class Session:
    """A hostile case directory and a target working on it."""

    def __init__(self, target: Target, work: pathlib.Path) -> None:
        self.target = target
        self.canary = "CANARY-" + secrets.token_hex(6)
        self.case = layout.make_case_dir(work / "case", self.canary)
        (self.case.path / "outside" / "secret.md").write_text(f"{self.canary} outside secret markdown\n")
        layout.apply_fixtures(self.case, LAYOUT)
        self.outside = layout.outside_snapshot(self.case)
        self.target.reset(self.case.root)

    def concrete(self, call: Dict[str, Any]) -> Dict[str, Any]:
        """The call with its placeholders filled in (host paths, the canary)."""
        text = json.dumps(call)
        text = text.replace("<ROOT>", json.dumps(str(self.case.root))[1:-1])
        text = text.replace("<CASE>", json.dumps(str(self.case.path))[1:-1]).replace("<CANARY>", self.canary)
        return dict(json.loads(text))

    def run(self, call: Dict[str, Any]) -> Tuple[Reply, float]:
        concrete = self.concrete(call)
        tool = concrete.pop("tool")
        started = time.monotonic()
        reply = self.target.execute(tool, {key: value for key, value in concrete.items() if value is not None})
        return reply, time.monotonic() - started

    def oracles(self, call: Dict[str, Any], reply: Reply) -> List[Tuple[str, str]]:
        tool = str(call["tool"])
        broken: List[Tuple[str, str]] = []
        if reply.failure is not None:
            oracle = "hang" if "timed out" in reply.failure else "crash"
            broken.append((f"{oracle}:{tool}", reply.failure))
        if reply.raised is not None:
            broken.append((f"crash:{tool}", reply.raised.strip().splitlines()[-1][:300]))
        said = reply.output + json.dumps(reply.result, ensure_ascii=False)
        if self.canary in said:
            broken.append((f"leak:canary:{tool}", "the reply holds the canary text from outside the workspace"))
        sent = json.dumps(self.concrete(call), ensure_ascii=False)
        if str(self.case.path) in said and str(self.case.path) not in sent:
            broken.append((f"leak:host-path:{tool}", "the reply holds the workspace's host path"))
        return broken

    def escaped(self) -> bool:
        return layout.outside_snapshot(self.case) != self.outside

    def scrub(self, value: Any) -> Any:
        text = json.dumps(value, ensure_ascii=False)
        for secret, mark in (
            (str(self.case.root), "<ROOT>"),
            (str(self.case.path), "<CASE>"),
            (self.canary, "<CANARY>"),
        ):
            text = text.replace(json.dumps(secret, ensure_ascii=False)[1:-1], mark)
        return json.loads(text)

    def close(self) -> None:
        layout.remove(self.case.path)


def minimise(session: Session, call: Dict[str, Any], oracle: str, budget: int = 40) -> Dict[str, Any]:
    """Drop path pieces and optional parameters while `oracle` still breaks."""
    best = dict(call)
    for key in ("from", "lines", "maxResults"):
        if key in best and budget > 0:
            trial = {k: v for k, v in best.items() if k != key}
            budget -= 1
            if oracle in [name for name, _ in session.oracles(trial, session.run(trial)[0])]:
                best = trial
    if "path" not in best:
        return best
    pieces = str(best["path"]).split("/")
    index = 0
    while index < len(pieces) and budget > 0 and len(pieces) > 1:
        trial_pieces = pieces[:index] + pieces[index + 1 :]
        trial = dict(best, path="/".join(trial_pieces))
        budget -= 1
        if oracle in [name for name, _ in session.oracles(trial, session.run(trial)[0])]:
            pieces, best = trial_pieces, trial
        else:
            index += 1
    return best


@dataclasses.dataclass
class Outcome:
    runs: int
    findings: List[Finding]
    seconds: float
    classes: Dict[str, int]


def fuzz(
    target: Target,
    target_name: str,
    seed: int,
    runs: Optional[int] = None,
    max_time: Optional[float] = None,
    findings_dir: Optional[pathlib.Path] = None,
    on_finding: Optional[Callable[[Finding], None]] = None,
) -> Outcome:
    rng = random.Random(seed)
    work = pathlib.Path(tempfile.mkdtemp(prefix="refmem-openclaw-fuzz-"))
    session = Session(target, work)
    found: Dict[str, Finding] = {}
    classes: Dict[str, int] = {}
    started = time.monotonic()
    count = 0
    try:
        while (runs is None or count < runs) and (max_time is None or time.monotonic() - started < max_time):
            count += 1
            call = generate(rng)
            reply, _ = session.run(call)
            outcome = (reply.result or {}).get("status", "results" if isinstance(reply.result, dict) else "none")
            classes[str(outcome)] = classes.get(str(outcome), 0) + 1
            broken = session.oracles(call, reply)
            if count % 50 == 0 and session.escaped():
                broken.append(("escape:outside-changed", "something outside the workspace changed"))
            for oracle, detail in broken:
                if oracle in found:
                    continue
                if oracle.startswith(("hang", "crash")):
                    session.target.reset(session.case.root)
                small = minimise(session, call, oracle) if not oracle.startswith(("hang", "escape")) else call
                observed_reply = session.run(small)[0]
                finding = Finding(
                    target_name,
                    oracle,
                    detail,
                    session.scrub(small),
                    session.scrub({"output": observed_reply.output[:2000], "result": observed_reply.result}),
                    seed,
                    count,
                )
                found[oracle] = finding
                if findings_dir is not None:
                    findings_dir.mkdir(parents=True, exist_ok=True)
                    name = "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in oracle)
                    path = findings_dir / f"{name}-{finding.key()}{SUFFIX}"
                    path.write_text(json.dumps(finding.to_json(), indent=2, ensure_ascii=True) + "\n", encoding="utf-8")
                if on_finding is not None:
                    on_finding(finding)
                if oracle.startswith("escape"):
                    session.close()
                    session = Session(target, work)
    finally:
        session.close()
        shutil.rmtree(work, ignore_errors=True)
    return Outcome(count, list(found.values()), time.monotonic() - started, classes)


def replay(path: pathlib.Path, target: Target) -> List[Tuple[str, str]]:
    """Run a finding file's call on a fresh hostile workspace: the oracles it breaks now."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if data.get("format") != FORMAT:
        raise ValueError(f"{path.name} is not a finding file of this harness")
    work = pathlib.Path(tempfile.mkdtemp(prefix="refmem-openclaw-replay-"))
    session = Session(target, work)
    try:
        call = data["call"]
        broken = session.oracles(call, session.run(call)[0])
        if session.escaped():
            broken.append(("escape:outside-changed", "something outside the workspace changed"))
        return broken
    finally:
        session.close()
        shutil.rmtree(work, ignore_errors=True)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m refmem_fuzz.openclaw", description=__doc__.splitlines()[0])
    parser.add_argument("replay", nargs="*", help='"replay FILE..." to run finding files again')
    parser.add_argument("--target", default="refmem", help="refmem, openclaw or cmd:PROGRAM ARGS")
    parser.add_argument("--runs", type=int)
    parser.add_argument("--max-time", type=float)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds per call before it counts as a hang")
    parser.add_argument("--findings", help="folder for finding files (default: print only)")
    args = parser.parse_args(argv)
    try:
        target = open_target(args.target, args.timeout)
    except TargetError as error:
        print(f"{__name__}: {error}", file=sys.stderr)
        return 2
    try:
        if args.replay:
            if args.replay[0] != "replay":
                parser.error("the only positional command is: replay FILE...")
            reproduced = 0
            for name in args.replay[1:]:
                broken = replay(pathlib.Path(name), target)
                reproduced += bool(broken)
                print(f"{name}: {', '.join(oracle for oracle, _ in broken) or 'not reproduced'}")
            return 1 if reproduced else 0
        if args.runs is None and args.max_time is None:
            args.runs = 2000
        outcome = fuzz(
            target,
            args.target,
            args.seed,
            args.runs,
            args.max_time,
            pathlib.Path(args.findings) if args.findings else None,
            lambda finding: print(f"finding: {finding.oracle}: {json.dumps(finding.call, ensure_ascii=True)}"),
        )
    finally:
        target.close()
    rate = outcome.runs / outcome.seconds if outcome.seconds else 0.0
    print(f"{outcome.runs} calls in {outcome.seconds:.0f} s ({rate:.0f}/s), {len(outcome.findings)} findings")
    print("outcomes: " + ", ".join(f"{name} {count}" for name, count in sorted(outcome.classes.items())))
    return 1 if outcome.findings else 0


if __name__ == "__main__":
    sys.exit(main())
