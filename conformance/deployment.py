"""The deployment tier (opt-in): several sessions over one store, tenants, and calls cut off part way.

    report = deployment_report("refmem", workdir)

Every case runs one session against one store; deployments break elsewhere. Two agent sessions edit the same
memory file and one edit vanishes (an edit is a read-modify-write); one user's memories show up in another's
output; a tool runner gives up on a slow call and the call is cut off half done. This tier opens the target as
several sessions over the same storage, each a process of its own (processes, not threads: a lock that only
works inside one interpreter must not pass), and judges what they leave behind.

Checks (every finding is a safety finding: lost data or a leak):

  lost-updates            K sessions run str_replace, insert, create and rename on shared files and folders at
                          the same moment, each adding a unique token. Flagged when afterwards a token of a
                          command that succeeded is missing (lost) or there twice (duplicated), a token of a
                          refused command is there, or a file is not whole.
  readers-during-writers  one session rewrites a file between two versions while the others view it; flagged
                          when a view shows neither version whole.
  tenants                 two tenants: the security matrix's payloads in one, canary text in the other; flagged
                          for canary text in any output of the first, or any change in what the second sees.
  abandoned-calls         an edit of a large file is cut off by the runner's timeout part way (the session's
                          process is killed, as the runner kills a hung adapter); flagged when the file is then
                          neither the old text nor the new, or the store shows anything else.
  abandoned-threads       `python:` targets: the SDK's way of abandoning a call. A large edit runs on a worker
                          thread of its session's process; the runner stops waiting at its timeout while the
                          thread goes on; another session then edits the same file, and the late call finishes
                          after. Flagged when the late finish overwrote the newer edit (or any acknowledged
                          line), left part of its own edit, or wrote lines no command wrote.
  (any check)             the case canary, a host path or a traceback in an output; a session that hangs or
                          crashes (outside the calls cut off on purpose).

Verdicts count tokens and lines, never time: a lost update is a missing token. How often an unlocked
read-modify-write collides is up to the machine, so the sessions are driven in rounds that start together
(every session's command of a round is sent at the same moment, and the next round waits for all of them);
the figures give how many commands ran and the rate per thousand, so two backends can be compared. The one
timed thing is where a cut-off lands: a call is cut at fractions of its own uncut duration, measured first,
and the figures say how many calls were really cut.

Sessions: a `cmd:` adapter is started K times with `share` in its `start` (PROTOCOL.md, "Several sessions");
a `python:` target (or the embedded reference) is served by K processes of `session_adapter.py`, its factory
called with the same root in each. A target that cannot share says so, and the tier is skipped with its
reason (a note, never silence); the tenants check is skipped the same way for a target without tenants.
Sessions are checked through `view`, so a target with its own storage is judged like one on the filesystem.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import os
import pathlib
import queue
import re
import secrets
import shlex
import sys
import time
from collections import Counter
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Type

from refmem import protocol as P

from . import hosttree
from . import session_adapter as late_calls
from .adapter_client import AdapterTarget, ProtocolViolation
from .effects import deployment_class
from .layout import CaseDir, make_case_dir
from .screen import ScreenedRun
from .signalling import ErrorPrefix
from .target_base import DEFAULT_STEP_TIMEOUT, StepResult, TargetError

CHECKS = ("lost-updates", "readers-during-writers", "tenants", "abandoned-calls", "abandoned-threads")

OPS = ("str_replace", "insert", "create", "rename")
"""The writing commands of the lost-updates rounds, in the order a round's two groups of sessions take them."""


@dataclasses.dataclass(frozen=True)
class Plan:
    """How much each check does; the whole tier against the reference takes a few seconds."""

    sessions: int = 4
    rounds: int = 48
    """Lost updates: rounds of one command per session (the commands counted in the rate)."""
    reader_rounds: int = 24
    views_per_round: int = 3
    page_lines: int = 300
    """Readers: the two versions of the page are this many lines of 66 characters."""
    cut_trials: int = 6
    big_lines: int = 2000
    """Abandoned calls: the edited file's lines of 40 characters (80 KB)."""
    late_trials: int = 3
    late_lines: int = 1600
    """Abandoned threads: the late edit adds this many lines of 40 characters (64 KB) to a small file."""


DEFAULT = Plan()

PAGE_VIEW_LINES = 700
"""Lines per `view_range` page when a large file is read back (a page stays far below a view's bound)."""


@dataclasses.dataclass
class DeploymentReport:
    """What the tier found: findings ({"class", "check", "detail"}), notes (skips and why), figures by check."""

    findings: List[Dict[str, Any]] = dataclasses.field(default_factory=list)
    notes: List[str] = dataclasses.field(default_factory=list)
    figures: Dict[str, Dict[str, Any]] = dataclasses.field(default_factory=dict)

    def add(self, check: str, detail: str) -> None:
        finding = {"class": deployment_class(check), "check": check, "detail": detail}
        if finding not in self.findings:
            self.findings.append(finding)

    def as_dict(self) -> Dict[str, Any]:
        return {"findings": self.findings, "notes": self.notes, "figures": self.figures}


class _Skip(Exception):
    """The check cannot run against this target; the message is the note."""


# --- sessions ---------------------------------------------------------------------------------


def _session_env() -> Dict[str, str]:
    """The runner's environment, with its import path: a session process imports what the runner could."""
    paths = [os.getcwd()] + [entry for entry in sys.path if entry and os.path.isdir(entry)]
    inherited = os.environ.get("PYTHONPATH")
    return dict(os.environ, PYTHONPATH=os.pathsep.join(paths + ([inherited] if inherited else [])))


def session_command(spec: str, error_prefix: ErrorPrefix = None) -> Tuple[str, Optional[Dict[str, str]]]:
    """(the adapter command line of one session of `spec`, its environment or None for the runner's)."""
    if spec.startswith("cmd:"):
        return spec[len("cmd:") :], None
    prefixes = [error_prefix] if isinstance(error_prefix, str) else list(error_prefix or [])
    argv = [sys.executable, "-m", f"{__package__}.session_adapter", spec]
    for prefix in prefixes:
        argv += ["--error-prefix", prefix]
    return " ".join(shlex.quote(part) for part in argv), _session_env()


class Sessions:
    """Opens sessions of one target over one root, and closes every one it opened."""

    def __init__(self, spec: str, timeout: float, error_prefix: ErrorPrefix) -> None:
        self.spec = spec
        self.timeout = timeout
        self.command, self.env = session_command(spec, error_prefix)
        self.opened: List[AdapterTarget] = []

    def open(
        self, root: pathlib.Path, tenant: Optional[str] = None, kind: Type[AdapterTarget] = AdapterTarget
    ) -> AdapterTarget:
        session = kind(self.spec, self.command, root, self.timeout, share=True, env=self.env)
        self.opened.append(session)
        if not session.shares:
            why = session.share_reason or "its start reply has no `share: true` (PROTOCOL.md, several sessions)"
            raise _Skip(f"the target cannot share its storage between sessions: {why}")
        if tenant is not None:
            if not session.tenants:
                raise _Skip("the target declares no tenants (a `tenant` keyword, or `tenants` in the start reply)")
            session.serve_tenant(tenant)
            session.reset(root)
        return session

    def close(self) -> None:
        for session in self.opened:
            session.close()
        self.opened = []


# --- one check: its directory, its sessions, every output screened ------------------------------


class _Run(ScreenedRun):
    crash = "a session crashed during {name}: {detail}"

    def __init__(self, check: str, case: CaseDir, sessions: Sessions, canary: str, report: DeploymentReport) -> None:
        super().__init__(check, case, canary)
        self.sessions = sessions
        self.report = report
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=16, thread_name_prefix="deployment")

    def open(
        self, count: int = 1, tenant: Optional[str] = None, kind: Type[AdapterTarget] = AdapterTarget
    ) -> List[AdapterTarget]:
        return [self.sessions.open(self.case.root, tenant, kind) for _ in range(count)]

    def run(self, session: AdapterTarget, command: Dict[str, Any], timeout: Optional[float] = None) -> StepResult:
        result = session.execute(command, timeout=timeout)
        self.screen(command, result, cut=timeout is not None)
        return result

    def screen(self, command: Dict[str, Any], result: StepResult, cut: bool = False) -> None:
        for problem in self.problems(str(command.get("command")), result, cut):
            self.report.add(self.check, problem)

    def together(self, jobs: Sequence[Callable[[], Any]]) -> List[Any]:
        """Run every job at once, each on its own thread (each session is a process, so they truly overlap);
        wait for them all."""
        futures = [self.pool.submit(job) for job in jobs]
        return [future.result() for future in futures]

    def create(self, session: AdapterTarget, path: str, text: str) -> None:
        result = self.run(session, {"command": "create", "path": path, "file_text": text})
        if result.is_error:
            raise _Skip(f"{self.check}: the target refused to create {path}, which the check needs")

    def close(self) -> None:
        self.pool.shutdown(wait=True)


# --- reading what a view shows ------------------------------------------------------------------

_NUMBERED = re.compile(r"^\s*\d+\t(.*)$")
_LISTED = re.compile(r"^[^\t\n]*\t(/memories/[^\n]*)$", re.MULTILINE)


def file_lines(output: str) -> List[str]:
    """A file view's lines, without their numbers (the documented `%6d\\t` numbering) or the header. A final
    newline shown as an empty numbered line is dropped: the documentation allows either reading."""
    lines = [match.group(1) for line in output.split("\n") for match in [_NUMBERED.match(line)] if match]
    return lines[:-1] if lines and lines[-1] == "" else lines


def listed_paths(output: str) -> List[str]:
    """The paths a folder view lists (its `SIZE<tab>PATH` lines), without a folder's final slash."""
    return [path.rstrip("/") for path in _LISTED.findall(output)]


def read_file(run: _Run, session: AdapterTarget, path: str, lines: int) -> Optional[List[str]]:
    """The file's lines read back in `view_range` pages (None when its first page cannot be viewed)."""
    found: List[str] = []
    start = 1
    while start <= lines:
        last = start + PAGE_VIEW_LINES - 1 >= lines
        end = -1 if last else start + PAGE_VIEW_LINES - 1  # the last page runs to the end, however long
        result = run.run(session, {"command": "view", "path": path, "view_range": [start, end]})
        if result.is_error:
            break
        page = file_lines(result.output)
        found += page
        if last or len(page) < end - start + 1:
            break
        start = end + 1
    if not found and start == 1:
        result = run.run(session, {"command": "view", "path": path})
        return None if result.is_error else file_lines(result.output)
    return found


def _call(run: _Run, session: AdapterTarget, command: Dict[str, Any]) -> Callable[[], StepResult]:
    return lambda: run.run(session, command)


def _bound(job: Callable[[AdapterTarget], Any], session: AdapterTarget) -> Callable[[], Any]:
    return lambda: job(session)


# --- lost updates --------------------------------------------------------------------------------


@dataclasses.dataclass
class _Tally:
    commands: int = 0
    succeeded: int = 0
    lost: int = 0
    duplicated: int = 0
    refused_applied: int = 0
    not_whole: List[str] = dataclasses.field(default_factory=list)
    by_command: Dict[str, int] = dataclasses.field(default_factory=dict)
    """Lost and duplicated updates by the command that made them: which command loses, for the report."""

    def lose(self, command: str, count: int = 1, duplicated: bool = False) -> None:
        if count > 0:
            if duplicated:
                self.duplicated += count
            else:
                self.lost += count
            self.by_command[command] = self.by_command.get(command, 0) + count


def _round_commands(
    r: int, count: int, nonce: str, notes: str, base: str, box: str
) -> List[Tuple[str, str, Dict[str, Any]]]:
    """(kind, token, input) for each session in round `r`: the first half of the sessions take one command
    kind, the second half the next, so that each round has two sessions on the same thing."""
    planned = []
    for index in range(count):
        kind = OPS[(r + (index * 2) // count) % len(OPS)]
        token = f"tok{nonce}-{index}-{r:03d}"
        commands: Dict[str, Dict[str, Any]] = {
            "str_replace": {"command": "str_replace", "path": notes, "old_str": "ANCHOR",
                            "new_str": f"ANCHOR\n{token}"},
            "insert": {"command": "insert", "path": notes, "insert_line": 1, "insert_text": f"{token}\n"},
            "create": {"command": "create", "path": f"{base}/c-{r:03d}.txt", "file_text": f"{token}\n"},
            "rename": {"command": "rename", "old_path": box, "new_path": f"{base}/box-{token}"},
        }
        planned.append((kind, token, commands[kind]))
    return planned


def _lost_updates(run: _Run, plan: Plan) -> None:
    sessions = run.open(plan.sessions)
    first = sessions[0]
    base, nonce = "/memories/shared", secrets.token_hex(3)
    notes, box = f"{base}/notes.txt", f"{base}/box-0"
    run.create(first, notes, "notes\nANCHOR\n")
    run.create(first, f"{box}/box.txt", "box\n")
    tally = _Tally()
    edits: Dict[str, Tuple[str, bool]] = {}
    creates: Dict[str, List[Tuple[str, bool]]] = {}
    for r in range(plan.rounds):
        planned = _round_commands(r, len(sessions), nonce, notes, base, box)
        results: List[StepResult] = run.together(
            [_call(run, session, command) for session, (_kind, _token, command) in zip(sessions, planned)]
        )
        renamed = []
        for (kind, token, command), result in zip(planned, results):
            ok = not result.is_error
            tally.commands += 1
            tally.succeeded += ok
            if kind in ("str_replace", "insert"):
                edits[token] = (kind, ok)
            elif kind == "create":
                creates.setdefault(command["path"], []).append((token, ok))
            elif ok:
                renamed.append(command["new_path"])
        if len(renamed) > 1:
            tally.lose("rename", len(renamed) - 1, duplicated=True)  # two renames of one folder both moved it
        box = renamed[0] if renamed else box
        if run.failed:
            return
    checker = run.open()[0]  # a new session reads the store as any later process would
    _judge_notes(run, checker, notes, edits, tally)
    _judge_tree(run, checker, base, box, creates, tally)
    figures = dataclasses.asdict(tally)
    figures["sessions"] = len(sessions)
    figures["per_thousand"] = round((tally.lost + tally.duplicated + tally.refused_applied) * 1000 / tally.commands, 1)
    run.report.figures[run.check] = figures
    if tally.lost or tally.duplicated or tally.refused_applied:
        run.report.add(
            run.check,
            f"{tally.lost} updates lost, {tally.duplicated} duplicated, {tally.refused_applied} applied though "
            f"refused, in {tally.commands} commands of {len(sessions)} sessions ({figures['per_thousand']} per "
            f"thousand commands; by command: {_by_command(tally.by_command)})",
        )
    if tally.not_whole:
        run.report.add(run.check, "not whole afterwards: " + "; ".join(tally.not_whole[:3]))


def _by_command(counts: Dict[str, int]) -> str:
    return ", ".join(f"{name} {count}" for name, count in sorted(counts.items())) or "none"


def _judge_notes(
    run: _Run, checker: AdapterTarget, notes: str, edits: Dict[str, Tuple[str, bool]], tally: _Tally
) -> None:
    result = run.run(checker, {"command": "view", "path": notes})
    lines = Counter(file_lines(result.output) if not result.is_error else [])
    if result.is_error:
        tally.not_whole.append(f"{notes} cannot be viewed")
    for token, (kind, ok) in edits.items():
        seen = lines[token]
        if ok:
            tally.lose(kind, int(seen == 0))
            tally.lose(kind, max(seen - 1, 0), duplicated=True)
        else:
            tally.refused_applied += seen
    strange = [line for line in lines if line not in edits and line not in ("notes", "ANCHOR")]
    if lines["notes"] != 1 or lines["ANCHOR"] != 1 or strange:
        tally.not_whole.append(f"{notes} holds lines no command wrote ({len(strange)}) or lost its own")


def _judge_tree(
    run: _Run, checker: AdapterTarget, base: str, box: str, creates: Dict[str, List[Tuple[str, bool]]], tally: _Tally
) -> None:
    listing = run.run(checker, {"command": "view", "path": base})
    paths = set(listed_paths(listing.output)) if not listing.is_error else set()
    for path, attempts in creates.items():
        made = [token for token, ok in attempts if ok]
        refused = {token for token, ok in attempts if not ok}
        if path not in paths:
            tally.lose("create", len(made))
            continue
        lines = file_lines(run.run(checker, {"command": "view", "path": path}).output)
        if len(lines) == 1 and lines[0] in made:
            tally.lose("create", len(made) - 1)  # a second create that said it made the file overwrote the first
        elif len(lines) == 1 and lines[0] in refused:
            tally.refused_applied += 1
            tally.lose("create", len(made))
        else:
            tally.not_whole.append(f"{path} is not the text of any one create")
            tally.lose("create", len(made))
    boxes = {path for path in paths if path.rsplit("/", 1)[-1].startswith("box-") and path.count("/") == 3}
    if box not in boxes:
        tally.lose("rename")
        tally.not_whole.append(f"the folder {box}, moved there last, is not there")
    tally.lose("rename", len(boxes - {box}), duplicated=True)
    inside = file_lines(run.run(checker, {"command": "view", "path": f"{box}/box.txt"}).output)
    if box in boxes and inside != ["box"]:
        tally.not_whole.append(f"{box}/box.txt is not whole")


# --- readers during writers -----------------------------------------------------------------------


def _page(letter: str, lines: int) -> List[str]:
    """A version of the page: its first line names the version, the rest is the same in both (so the edit's
    old_str is one line: some implementations match old_str line by line). A rewrite that is not atomic shows
    a reader a file cut short, or without its first line."""
    same = [f"line {number:05d} " + "p" * 54 for number in range(1, lines)]
    return [f"VERSION-{letter} " + letter.lower() * 60] + same


def _readers(run: _Run, plan: Plan) -> None:
    sessions = run.open(plan.sessions)
    writer, readers = sessions[0], sessions[1:]
    versions = [_page("A", plan.page_lines), _page("B", plan.page_lines)]
    path = "/memories/page.txt"
    run.create(writer, path, "\n".join(versions[0]) + "\n")
    current, writes, rewritten, views, torn, refused = 0, 0, 0, 0, 0, 0

    def write() -> StepResult:
        return run.run(writer, {"command": "str_replace", "path": path, "old_str": versions[current][0],
                                "new_str": versions[1 - current][0]})

    def read(reader: AdapterTarget) -> List[StepResult]:
        return [run.run(reader, {"command": "view", "path": path}) for _ in range(plan.views_per_round)]

    for _round in range(plan.reader_rounds):
        jobs: List[Callable[[], Any]] = [write] + [_bound(read, reader) for reader in readers]
        done = run.together(jobs)
        writes += 1
        if not done[0].is_error:
            current = 1 - current
            rewritten += 1
        for seen in (result for batch in done[1:] for result in batch):
            views += 1
            if seen.is_error:
                refused += 1
            elif file_lines(seen.output) not in versions:
                torn += 1
        if run.failed:
            return
    run.report.figures[run.check] = {"writes": writes, "rewritten": rewritten, "views": views, "torn": torn,
                                     "refused": refused, "lines": plan.page_lines}
    if not rewritten:
        run.report.notes.append(f"{run.check}: not judged, the target refused every rewrite of the file")
    if torn or refused:
        run.report.add(
            run.check,
            f"{torn + refused} of {views} views during {writes} rewrites showed neither version whole "
            f"({torn} a mix or a part, {refused} an error for a file that always exists)",
        )


# --- tenants -----------------------------------------------------------------------------------------


def _payloads() -> List[str]:
    """The security matrix's path payloads, expanded, and paths aimed at a sibling tenant's folder."""
    import json

    from .security.matrix import expand

    data = json.loads((pathlib.Path(__file__).parent / "security" / "payloads.json").read_text("utf-8"))
    found = [expand(payload["path_template"]) for family in data["families"] for payload in family["payloads"]]
    aimed = [
        "/memories/../beta", "/memories/../beta/private/notes.txt", "/memories/../../tenants/beta",
        "/memories/../../.refmem/tenants/beta", "/memories/../../../memories/.refmem/tenants/beta/private/notes.txt",
        "/memories/.refmem/tenants/beta", "/memories/../tenants/beta/private/notes.txt", "/memories/beta",
        "/memories/%2e%2e/beta/private/notes.txt", "/memories/..%2fbeta",
    ]
    return list(dict.fromkeys(found + aimed))


def _tenant_inputs(payload: str) -> Iterator[Dict[str, Any]]:
    yield {"command": "view", "path": payload}
    yield {"command": "create", "path": payload, "file_text": "alpha was here\n"}
    yield {"command": "str_replace", "path": payload, "old_str": "TENANTCANARY", "new_str": "alpha"}
    yield {"command": "delete", "path": payload}
    yield {"command": "rename", "old_path": payload, "new_path": "/memories/alpha-moved"}


def _tenants_seen(run: _Run, session: AdapterTarget, paths: Sequence[str]) -> List[Tuple[bool, str]]:
    return [
        (result.is_error, result.output)
        for path in ("/memories",) + tuple(paths)
        for result in [run.run(session, {"command": "view", "path": path})]
    ]


def _tenants(run: _Run, plan: Plan) -> None:
    beta = run.open(1, tenant="beta")[0]
    canary = f"TENANTCANARY{secrets.token_hex(6)}"
    files = [f"/memories/{canary}.txt", "/memories/private/notes.txt", "/memories/valid.txt"]
    for path in files:
        run.create(beta, path, f"{canary}\nthe second tenant's own text\n")
    before = _tenants_seen(run, beta, files)
    alpha = run.open(1, tenant="alpha")[0]
    commands, leaks = 0, []
    for command in [{"command": "view", "path": "/memories"}] + [
        item for payload in _payloads() for item in _tenant_inputs(payload)
    ]:
        result = run.run(alpha, command)
        commands += 1
        if canary in result.output or canary[len("TENANTCANARY"):] in result.output:
            leaks.append(str(command.get("command")))
        if run.failed:
            return
    after = _tenants_seen(run, run.open(1, tenant="beta")[0], files)
    changed = [path for path, was, now in zip(("/memories",) + tuple(files), before, after) if was != now]
    run.report.figures[run.check] = {"commands": commands, "leaks": len(leaks), "changed": len(changed)}
    if leaks:
        run.report.add(run.check, f"{len(leaks)} outputs of one tenant hold another tenant's text or names "
                                  f"(first: {leaks[0]})")
    if changed:
        run.report.add(run.check, "one tenant's commands changed what another sees: " + ", ".join(changed))


# --- abandoned calls ---------------------------------------------------------------------------------


def _abandoned(run: _Run, plan: Plan) -> None:
    path = "/memories/big/big.txt"
    body = [f"line {number:06d} " + "z" * 28 for number in range(1, plan.big_lines)]
    checker, caller = run.open(2)
    run.create(checker, path, "\n".join(["HEAD-0"] + body) + "\n")
    state = 0

    def edit(session: AdapterTarget, timeout: Optional[float]) -> Tuple[StepResult, float]:
        started = time.monotonic()
        result = run.run(session, {"command": "str_replace", "path": path, "old_str": f"HEAD-{state}",
                                   "new_str": f"HEAD-{state + 1}"}, timeout)
        return result, time.monotonic() - started

    durations = []
    for _ in range(2):  # uncut, to learn how long the edit takes
        result, seconds = edit(caller, None)
        if result.is_error or run.failed:
            raise _Skip(f"{run.check}: the edit the check cuts off failed uncut: {result.output[:120]}")
        state += 1
        durations.append(seconds)
    uncut = min(durations)
    cut, whole, broken = 0, 0, []
    for trial in range(plan.cut_trials):
        session = run.open()[0]
        fraction = (trial + 1) / (plan.cut_trials + 1)
        result, _seconds = edit(session, max(uncut * fraction, 0.0005))
        cut += result.timed_out
        session.close()  # a cut-off session was killed already; the call is over either way
        lines = read_file(run, checker, path, plan.big_lines)
        if lines == [f"HEAD-{state}"] + body:
            whole += 1
        elif lines == [f"HEAD-{state + 1}"] + body:
            whole += 1
            state += 1
        else:
            start = f"starting {lines[0][:20]}" if lines else "empty"
            shown = "gone" if lines is None else f"{len(lines)} lines or more, {start}"
            broken.append(f"cut at {fraction:.0%} of the edit: the file is {shown}")
            break
    listing = run.run(checker, {"command": "view", "path": "/memories/big"})
    extra = [item for item in listed_paths(listing.output) if item not in ("/memories/big", path)]
    run.report.figures[run.check] = {"trials": plan.cut_trials, "cut": cut, "whole": whole,
                                     "uncut_seconds": round(uncut, 4)}
    if broken:
        run.report.add(run.check, "a call cut off part way left a half-applied change: " + broken[0])
    if extra:
        shown_extra = ", ".join(extra[:3])
        run.report.add(run.check, f"after calls were cut off the store shows what no command made: {shown_extra}")


# --- abandoned threads ------------------------------------------------------------------------------


class _ThreadedSession(AdapterTarget):
    """A session of `session_adapter.py`, which can run a call the way the SDK's tool runner does."""

    def request(self, message: Dict[str, Any], timeout: float) -> Optional[Dict[str, Any]]:
        """The reply to `message`, or None when the session did not answer in time or broke the protocol (it is
        then killed, as any session that hangs)."""
        child = self._child
        if child is None:
            return None
        try:
            return self._request(child, message, timeout)
        except (queue.Empty, OSError, EOFError, ProtocolViolation):
            self._discard()
            return None


def _late_block(nonce: str, trial: int, lines: int) -> List[str]:
    return [f"late{nonce}-{trial}-{number:05d} " + "w" * 24 for number in range(lines)]


def _late_edit(path: str, block: Sequence[str]) -> Dict[str, Any]:
    return {"command": "str_replace", "path": path, "old_str": "ANCHOR", "new_str": "\n".join(["ANCHOR", *block])}


def _in_order(lines: Sequence[str], block: Sequence[str]) -> bool:
    """The block's lines stand together, in order, once."""
    if not block or block[0] not in lines:
        return False
    start = list(lines).index(block[0])
    return list(lines[start : start + len(block)]) == list(block)


@dataclasses.dataclass
class _LateTally:
    trials: int = 0
    abandoned: int = 0
    finished_late: int = 0
    newer_lost: int = 0
    late_applied: int = 0
    late_lost: int = 0
    """Late calls that said they edited the file, whose edit is not there: nobody was told of that success (the
    runner had stopped waiting), so it is counted, not flagged."""
    half_applied: int = 0
    strange: int = 0
    uncut_seconds: float = 0.0


def _measure(run: _Run, caller: _ThreadedSession, command: Dict[str, Any], wait: float) -> float:
    """How long the edit runs on its thread, uncut (the session's own figure: a round trip of the protocol
    would put every cut after a fast implementation's write)."""
    reply = caller.request({P.CMD: P.CMD_EXECUTE, P.INPUT: command, late_calls.ABANDON_AFTER: wait}, wait + 5)
    seconds = None if reply is None else reply.get(late_calls.SECONDS)
    if reply is None or reply.get(P.IS_ERROR) is not False or not isinstance(seconds, (int, float)):
        shown = "no answer" if reply is None else str(reply.get(P.OUTPUT, ""))[:120]
        raise _Skip(f"{run.check}: the edit the check leaves running failed uncut: {shown}")
    run.screen(command, StepResult(str(reply.get(P.OUTPUT, "")), False))
    return float(seconds)


def _abandoned_threads(run: _Run, plan: Plan) -> None:
    if run.sessions.spec.startswith("cmd:"):
        raise _Skip(f"{run.check}: skipped, a `cmd:` adapter's calls run in its own process, which the runner can "
                    "only kill (abandoned-calls does); threads left running are a `python:` target's")
    caller, newer, checker = run.open(3, kind=_ThreadedSession)
    assert isinstance(caller, _ThreadedSession)
    nonce, folder = secrets.token_hex(3), "/memories/late"
    tally = _LateTally()
    measure = f"{folder}/measure.txt"
    run.create(checker, measure, "notes\nANCHOR\n")
    wait = run.sessions.timeout
    uncut = _measure(run, caller, _late_edit(measure, _late_block(nonce, 99, plan.late_lines)), wait)
    tally.uncut_seconds = round(uncut, 5)
    for trial in range(plan.late_trials):
        path, token = f"{folder}/notes-{trial}.txt", f"new{nonce}-{trial}"
        block = _late_block(nonce, trial, plan.late_lines)
        run.create(checker, path, "notes\nANCHOR\n")
        cut = max(uncut * (trial + 1) / (4 * plan.late_trials), 0.00002)  # early: its write is still to come
        command = _late_edit(path, block)
        first = caller.request({P.CMD: P.CMD_EXECUTE, P.INPUT: command, late_calls.ABANDON_AFTER: cut}, wait)
        if first is None:
            run.report.add(run.check, f"a call run on a worker thread got no answer within {wait:g}s (a hang)")
            return
        tally.trials += 1
        abandoned = first.get(late_calls.ABANDONED) is True
        tally.abandoned += abandoned
        newer_result = run.run(newer, {"command": "str_replace", "path": path, "old_str": "ANCHOR",
                                       "new_str": f"ANCHOR\n{token}"})
        late: Optional[Dict[str, Any]] = first
        if abandoned:
            late = caller.request({P.CMD: late_calls.CMD_LATE, late_calls.WAIT: wait}, wait + 5)
            if late is None or late.get(late_calls.FINISHED) is not True:
                run.report.add(run.check, f"a call left running had not finished {wait:g}s later (a hang)")
                return
            tally.finished_late += 1
        assert late is not None
        run.screen(command, StepResult(str(late.get(P.OUTPUT, "")), late.get(P.IS_ERROR) is True))
        late_ok = late.get(P.IS_ERROR) is False
        lines = read_file(run, checker, path, plan.late_lines + 4) or []
        seen = Counter(lines)
        if seen[token] != (0 if newer_result.is_error else 1) or seen["notes"] != 1 or seen["ANCHOR"] != 1:
            tally.newer_lost += 1
        present = sum(1 for line in block if seen[line])
        if present == len(block) and _in_order(lines, block) and all(seen[line] == 1 for line in block):
            tally.late_applied += 1
        elif present:
            tally.half_applied += 1
        elif late_ok:
            tally.late_lost += 1
        known = set(block) | {token, "notes", "ANCHOR"}
        tally.strange += any(line not in known for line in seen)
        if run.failed:
            return
    run.report.figures[run.check] = dataclasses.asdict(tally)
    if tally.newer_lost:
        run.report.add(run.check, f"in {tally.newer_lost} of {tally.trials} trials a call finishing after the runner "
                                  "stopped waiting for it overwrote a newer edit of another session")
    if tally.half_applied:
        run.report.add(run.check, f"in {tally.half_applied} of {tally.trials} trials a call left running left part "
                                  "of its edit")
    if tally.strange:
        run.report.add(run.check, f"in {tally.strange} of {tally.trials} trials the file held lines no command wrote")


# --- running -----------------------------------------------------------------------------------------

_CHECK_FUNCTIONS: Dict[str, Callable[[_Run, Plan], None]] = {
    "lost-updates": _lost_updates,
    "readers-during-writers": _readers,
    "tenants": _tenants,
    "abandoned-calls": _abandoned,
    "abandoned-threads": _abandoned_threads,
}


def deployment_report(
    spec: str,
    workdir: pathlib.Path,
    *,
    timeout: float = DEFAULT_STEP_TIMEOUT,
    error_prefix: ErrorPrefix = None,
    checks: Optional[Sequence[str]] = None,
    plan: Plan = DEFAULT,
) -> DeploymentReport:
    """Run the chosen checks (all by default) against the target `spec`: findings, notes, figures.
    Raises ValueError for an unknown check; a target that cannot be started is a finding-free note."""
    chosen = list(checks) if checks is not None else list(CHECKS)
    for name in chosen:
        if name not in _CHECK_FUNCTIONS:
            raise ValueError(f"unknown deployment check {name!r}: use one of {', '.join(CHECKS)}")
    report = DeploymentReport()
    workdir = pathlib.Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    for name in chosen:
        canary = f"CANARY-deployment-{secrets.token_hex(8)}"
        case = make_case_dir(workdir / f"deployment-{name}-{secrets.token_hex(4)}", canary)
        sessions = Sessions(spec, timeout, error_prefix)
        run = _Run(name, case, sessions, canary, report)
        try:
            _CHECK_FUNCTIONS[name](run, plan)
        except _Skip as skip:
            report.notes.append(f"{name}: skipped, {skip}" if not str(skip).startswith(name) else str(skip))
            if "cannot share" in str(skip):
                report.notes += [f"{other}: skipped, the same reason" for other in chosen[chosen.index(name) + 1 :]]
                break
        except TargetError as exc:
            report.notes.append(f"{name}: skipped, a session could not be started: {str(exc)[:300]}")
        finally:
            run.close()
            sessions.close()
            hosttree.remove(str(case.path))  # bounded, never through a link the sessions left
    return report


def lost_per_thousand(report: DeploymentReport) -> Optional[float]:
    """The lost-updates rate of a report, or None when the check did not run."""
    figures = report.figures.get("lost-updates")
    return None if figures is None else float(figures["per_thousand"])


def summary_lines(report: Dict[str, Any]) -> List[str]:
    """A report (`as_dict()`) as a CLI shows it: one line per finding, then notes and figures."""
    lines = [f"DEPLOYMENT {item['check']}: {item['detail']}" for item in report.get("findings", [])]
    lines += [f"note: {note}" for note in report.get("notes", [])]
    for check, figures in report.get("figures", {}).items():
        lines.append(f"{check}: " + ", ".join(f"{key}={value}" for key, value in figures.items()))
    return lines or ["deployment: nothing to report"]
