"""The deployment tier (opt-in): several sessions over one store, tenants, and calls cut off part way.

    report = deployment_report("refmem", workdir)

Every case runs one session against one store; deployments break elsewhere. Two agent sessions edit the same
memory file and one edit vanishes (an edit is a read-modify-write); one user's memories show up in another's
output; a tool runner gives up on a slow call and the call is cut off half done. This tier opens the target as
several sessions over the same storage, each a process of its own (processes, not threads: a lock that only
works inside one interpreter must not pass), and judges what they leave behind.

Checks (each finding carries its effect, conformance/effects.py, which gives its class: lost data or a leak,
both safety; and its evidence):

  lost-updates            K sessions run str_replace, insert, create and rename on shared files and folders at
                          the same moment, each adding a unique token. Flagged when afterwards a token of a
                          command that succeeded is missing (lost) or there twice (duplicated), a token of a
                          refused command is there, or a file is not whole. What the backend adds to every
                          file it creates (a final newline, CRLF endings), as one plain uncontested create read
                          back the same way shows it, is taken off before the tokens are counted, and the
                          evidence says so.
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
Sessions are checked through `view`, so a target with its own storage is judged like one on the filesystem, and
the state is judged, not the formatting: a file is read back by conformance/readback.py, in the documented view
format first, then in every common one (any numbering, spacing, header), then as bytes (the protocol's optional
`read`, or the root on disk), and an update is lost only when no reading shows it (D-DEPLOY-READBACK). Every
finding says which evidence decided it.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import functools
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
from refmem_harness import hosttree
from refmem_harness.adapter_client import AdapterTarget, ProtocolViolation
from refmem_harness.layout import CaseDir, make_case_dir
from refmem_harness.signalling import ErrorPrefix
from refmem_harness.target_base import DEFAULT_STEP_TIMEOUT, StepResult, TargetError
from refmem_harness.visible import redact_secrets

from . import readback
from . import session_adapter as late_calls
from .effects import CRASH, FILE_LOST, HANG, OUTSIDE_CHANGED, OUTSIDE_CONTENT_SHOWN, OUTSIDE_NAME_SHOWN, class_of
from .readback import Reading
from .screen import ScreenedRun

CHECKS = ("lost-updates", "readers-during-writers", "tenants", "abandoned-calls", "abandoned-threads")

SOURCES: Dict[str, List[str]] = {
    "lost-updates": [
        "https://github.com/anthropics/anthropic-sdk-typescript/issues/1181",
        "https://github.com/openclaw/openclaw/issues/117741",
    ],
}
"""Where the failure a check looks for was reported in the field (a finding links them, as a case's `sources`)."""

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


OUTPUT_EVIDENCE = "output"
"""The evidence of a finding read from a call's output (a leak, a hang, a crash), not from a file read back."""


@dataclasses.dataclass
class DeploymentReport:
    """What the tier found: findings ({"class", "check", "detail"}), notes (skips and why), figures by check."""

    findings: List[Dict[str, Any]] = dataclasses.field(default_factory=list)
    notes: List[str] = dataclasses.field(default_factory=list)
    figures: Dict[str, Dict[str, Any]] = dataclasses.field(default_factory=dict)

    def add(self, check: str, detail: str, effect: str = FILE_LOST, evidence: str = OUTPUT_EVIDENCE) -> None:
        """A finding of `check`: its class is the effect's (conformance/effects.py); `evidence` says what showed
        it (an output, or which reading of a file: readback.EVIDENCE)."""
        finding: Dict[str, Any] = {"class": class_of(effect), "effect": effect, "check": check, "detail": detail,
                                   "evidence": evidence}
        if check in SOURCES and effect == FILE_LOST:
            finding["sources"] = list(SOURCES[check])
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


def _screened_effect(problem: str) -> str:
    """The effect of a problem `ScreenedRun.problems` found in an output."""
    if problem.endswith("(a hang)"):
        return HANG
    if problem.startswith("a session crashed"):
        return CRASH
    return OUTSIDE_CONTENT_SHOWN if "canary" in problem else OUTSIDE_NAME_SHOWN


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
            self.report.add(self.check, problem, _screened_effect(problem))

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


# --- reading a file back (conformance/readback.py: the documented view, a tolerant reading, its bytes) -------

def file_lines(output: str) -> List[str]:
    """A view's lines in the documented format, or in the first tolerant reading when it is not."""
    documented = readback.documented_lines(output)
    return documented if documented is not None else readback.tolerant_readings(output)[0]



def file_bytes(run: _Run, session: AdapterTarget, path: str) -> Optional[Reading]:
    """The file's bytes: from the adapter's `read` when it declares it, else from the root on disk for a target
    that stores in the root itself; None when neither can be had (or there is no such file)."""
    data = session.read_bytes(path)
    if data is not None:
        return readback.bytes_reading(data, readback.ADAPTER_BYTES)
    if session.storage == P.STORAGE_FILESYSTEM and (path + "/").startswith("/memories/"):
        data = hosttree.read_bytes(str(run.case.root), path[len("/memories/") :])
        if data is not None:
            return readback.bytes_reading(data, readback.DISK_BYTES)
    return None


def readings(run: _Run, session: AdapterTarget, path: str, view: Optional[StepResult]) -> Iterator[Reading]:
    """Every reading of the file, weakest evidence first: those of `view` (when it succeeded), then its bytes
    (asked for only when the caller reaches them)."""
    if view is not None and not view.is_error:
        yield from readback.view_readings(view.output, path)
    data = file_bytes(run, session, path)
    if data is not None:
        yield data


def read_file(run: _Run, session: AdapterTarget, path: str, lines: int) -> Iterator[Reading]:
    """The file read back in `view_range` pages: its documented reading (every page in the documented format),
    its tolerant reading (each page's likeliest), then its bytes. Nothing when no page can be viewed and there
    are no bytes."""
    documented: Optional[List[str]] = []
    tolerant: List[str] = []
    viewed = False
    start = 1
    while start <= lines:
        last = start + PAGE_VIEW_LINES - 1 >= lines
        end = -1 if last else start + PAGE_VIEW_LINES - 1  # the last page runs to the end, however long
        result = run.run(session, {"command": "view", "path": path, "view_range": [start, end]})
        if result.is_error:
            break
        viewed = True
        strict = readback.documented_lines(result.output)
        page = readback.tolerant_readings(result.output, path)[0]
        documented = None if documented is None or strict is None else documented + strict
        tolerant += page
        if last or len(strict if strict is not None else page) < end - start + 1:
            break
        start = end + 1
    if not viewed:
        yield from readings(run, session, path, run.run(session, {"command": "view", "path": path}))
        return
    if documented is not None:
        yield Reading(documented, readback.DOCUMENTED)
    if tolerant != documented:
        yield Reading(tolerant, readback.TOLERANT)
    data = file_bytes(run, session, path)
    if data is not None:
        yield data


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
    read_back: Dict[str, int] = dataclasses.field(default_factory=dict)
    """Files read back, by the evidence that decided (readback.EVIDENCE)."""
    blamed: List[str] = dataclasses.field(default_factory=list)
    """The evidence of every file read back that showed a problem."""

    def problems(self) -> int:
        return self.lost + self.duplicated + self.refused_applied + len(self.not_whole)

    def merge(self, other: _Tally, evidence: str) -> None:
        """Add what one file, read back by `evidence`, showed."""
        self.lost += other.lost
        self.duplicated += other.duplicated
        self.refused_applied += other.refused_applied
        self.not_whole += other.not_whole
        for command, count in other.by_command.items():
            self.by_command[command] = self.by_command.get(command, 0) + count
        self.read_back[evidence] = self.read_back.get(evidence, 0) + 1
        if other.problems() and evidence not in self.blamed:
            self.blamed.append(evidence)

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
    plain = (f"{base}/plain.txt", f"plain{nonce}\n")
    run.create(first, notes, "notes\nANCHOR\n")
    run.create(first, f"{box}/box.txt", "box\n")
    run.create(first, *plain)  # uncontested: what the backend adds to every file it creates (_added)
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
    read = functools.partial(_readings_less_added, run, checker, _added(run, checker, *plain))
    _judge_notes(run, read, notes, edits, tally)
    _judge_tree(run, checker, read, base, box, creates, tally)
    figures = dataclasses.asdict(tally)
    del figures["blamed"]
    figures["sessions"] = len(sessions)
    figures["per_thousand"] = round((tally.lost + tally.duplicated + tally.refused_applied) * 1000 / tally.commands, 1)
    run.report.figures[run.check] = figures
    evidence = _evidence(tally.blamed)
    if tally.lost or tally.duplicated or tally.refused_applied:
        run.report.add(
            run.check,
            f"{tally.lost} updates lost, {tally.duplicated} duplicated, {tally.refused_applied} applied though "
            f"refused, in {tally.commands} commands of {len(sessions)} sessions ({figures['per_thousand']} per "
            f"thousand commands; by command: {_by_command(tally.by_command)}; evidence: {evidence})",
            FILE_LOST, evidence,
        )
    if tally.not_whole:
        run.report.add(run.check, "not whole afterwards: " + "; ".join(tally.not_whole[:3]) + f" (evidence: "
                       f"{evidence})", FILE_LOST, evidence)


def _by_command(counts: Dict[str, int]) -> str:
    return ", ".join(f"{name} {count}" for name, count in sorted(counts.items())) or "none"


def _evidence(kinds: Sequence[str]) -> str:
    """The evidence of a finding read back from several files: the strongest kind first."""
    ordered = sorted(set(kinds), key=lambda kind: -readback.EVIDENCE.index(readback.evidence_kind(kind))
                     if readback.evidence_kind(kind) in readback.EVIDENCE else 0)
    return ", ".join(ordered) or NO_READING


NO_READING = "no reading (the view was an error and the bytes could not be had)"


def _notes_tally(lines: List[str], notes: str, edits: Dict[str, Tuple[str, bool]]) -> _Tally:
    """What the notes file, read as `lines`, shows of the edits."""
    tally = _Tally()
    seen = Counter(lines)
    for token, (kind, ok) in edits.items():
        count = seen[token]
        if ok:
            tally.lose(kind, int(count == 0))
            tally.lose(kind, max(count - 1, 0), duplicated=True)
        else:
            tally.refused_applied += count
    strange = [line for line in seen if line not in edits and line not in ("notes", "ANCHOR")]
    if seen["notes"] != 1 or seen["ANCHOR"] != 1 or strange:
        tally.not_whole.append(f"{notes} holds lines no command wrote ({len(strange)}) or lost its own")
    return tally


def _added(run: _Run, checker: AdapterTarget, path: str, text: str) -> Dict[str, readback.Added]:
    """What the backend adds to every file it creates, by the kind of evidence that shows it: read from a
    plain create no other command touched (empty for a kind whose reading of it is not its text plus such
    formatting, so nothing is forgiven there)."""
    found: Dict[str, readback.Added] = {}
    for reading in readings(run, checker, path, run.run(checker, {"command": "view", "path": path})):
        added = readback.added_formatting(reading.lines, text.splitlines())
        if added is not None and reading.evidence not in found:
            found[reading.evidence] = added
    return found


def _readings_less_added(run: _Run, checker: AdapterTarget, added: Dict[str, readback.Added],
                         path: str) -> Iterator[Reading]:
    """Every reading of the file (`readings`), each without what the backend adds to every file it creates, when
    it shows exactly that (its evidence then says so)."""
    for reading in readings(run, checker, path, run.run(checker, {"command": "view", "path": path})):
        yield readback.without_added(reading, added[reading.evidence]) if reading.evidence in added else reading


_Read = Callable[[str], Iterator[Reading]]
"""Every reading of a file, by its path (_readings_less_added, bound to a check's run and reader)."""


def _judge_notes(run: _Run, read: _Read, notes: str, edits: Dict[str, Tuple[str, bool]], tally: _Tally) -> None:
    found = readback.judged(read(notes),
                            lambda lines: _notes_tally(lines, notes, edits).problems())
    if found is None:
        lost = _notes_tally([], notes, edits)
        lost.not_whole = [f"{notes} cannot be read back"]
        tally.merge(lost, NO_READING)
        return
    reading, _count = found
    tally.merge(_notes_tally(reading.lines, notes, edits), reading.evidence)


def _create_tally(lines: Optional[List[str]], path: str, attempts: List[Tuple[str, bool]]) -> _Tally:
    """What the file that creates raced to make, read as `lines` (None: it is not there), shows of them: a
    create that said it made the file is lost when its text is not there (a second create that overwrote the
    first loses the first; the survivor is no loss)."""
    tally = _Tally()
    made = [token for token, ok in attempts if ok]
    present = set(lines or [])
    tally.lose("create", sum(token not in present for token in made))
    tally.refused_applied += sum(token in present for token, ok in attempts if not ok)
    if lines is not None and not (len(lines) == 1 and lines[0] in {token for token, _ok in attempts}):
        tally.not_whole.append(f"{path} is not the text of any one create")
    return tally


def _create_problems(lines: List[str], path: str, attempts: List[Tuple[str, bool]]) -> int:
    return _create_tally(lines, path, attempts).problems()


_BOX = re.compile(r"box-(?:0|tok[0-9a-f]+-\d+-\d{3})(?![\w-])")
"""A folder the renames move, by its name wherever a listing shows it (its format is the backend's)."""


def _judge_tree(
    run: _Run, checker: AdapterTarget, read: _Read, base: str, box: str, creates: Dict[str, List[Tuple[str, bool]]],
    tally: _Tally,
) -> None:
    for path, attempts in creates.items():
        found = readback.judged(read(path),
                                functools.partial(_create_problems, path=path, attempts=attempts))
        if found is None:
            tally.merge(_create_tally(None, path, attempts), NO_READING)
        else:
            tally.merge(_create_tally(found[0].lines, path, attempts), found[0].evidence)
    listing = run.run(checker, {"command": "view", "path": base})
    boxes = {f"{base}/{name}" for name in _BOX.findall(listing.output)} if not listing.is_error else set()
    inside_path = f"{box}/box.txt"
    inside = readback.judged(read(inside_path), lambda lines: int(lines != ["box"]))
    moved = _Tally()
    if box not in boxes and inside is None:
        moved.lose("rename")
        moved.not_whole.append(f"the folder {box}, moved there last, is not there")
    elif inside is not None and inside[1]:
        moved.not_whole.append(f"{inside_path} is not whole")
    moved.lose("rename", len(boxes - {box}), duplicated=True)
    tally.merge(moved, inside[0].evidence if inside is not None else NO_READING)


# --- readers during writers -----------------------------------------------------------------------


def _page(letter: str, lines: int) -> List[str]:
    """A version of the page: its first line names the version, the rest is the same in both (so the edit's
    old_str is one line: some implementations match old_str line by line). A rewrite that is not atomic shows
    a reader a file cut short, or without its first line."""
    same = [f"line {number:05d} " + "p" * 54 for number in range(1, lines)]
    return [f"VERSION-{letter} " + letter.lower() * 60] + same


def _shows_a_version(output: str, path: str, versions: List[List[str]]) -> bool:
    """A view shows one version whole: some reading of it is that version, or its text is there in order
    without the other version's first line."""
    if any(reading.lines in versions for reading in readback.view_readings(output, path)):
        return True
    return any(readback.shows_in_order(output, version, [other[0]]) for version, other in zip(versions,
                                                                                            versions[::-1]))


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
            elif not _shows_a_version(seen.output, path, versions):
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
            f"({torn} a mix or a part, {refused} an error for a file that always exists; evidence: "
            f"{readback.EVERY_VIEW_READING})",
            FILE_LOST, readback.EVERY_VIEW_READING,
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


TENANT_VIEWS = "the second tenant's views before and after, compared whole"


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
                                  f"(first: {leaks[0]})", OUTSIDE_CONTENT_SHOWN)
    if changed:
        run.report.add(run.check, "one tenant's commands changed what another sees: " + ", ".join(changed)
                       + f" (evidence: {TENANT_VIEWS})", OUTSIDE_CHANGED, TENANT_VIEWS)


# --- abandoned calls ---------------------------------------------------------------------------------


def _not_one_of(choices: Sequence[List[str]], lines: List[str]) -> int:
    return int(lines not in choices)


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
    evidence: List[str] = []
    for trial in range(plan.cut_trials):
        session = run.open()[0]
        fraction = (trial + 1) / (plan.cut_trials + 1)
        result, _seconds = edit(session, max(uncut * fraction, 0.0005))
        cut += result.timed_out
        session.close()  # a cut-off session was killed already; the call is over either way
        old, new = [f"HEAD-{state}"] + body, [f"HEAD-{state + 1}"] + body
        found = readback.judged(read_file(run, checker, path, plan.big_lines),
                                functools.partial(_not_one_of, (old, new)))
        if found is not None and not found[1]:
            whole += 1
            state += found[0].lines == new
            evidence.append(found[0].evidence)
        else:
            lines = found[0].lines if found is not None else None
            start = f"starting {lines[0][:20]}" if lines else "empty"
            shown = "gone" if lines is None else f"{len(lines)} lines or more, {start}"
            evidence.append(found[0].evidence if found is not None else NO_READING)
            broken.append(f"cut at {fraction:.0%} of the edit: the file is {shown} (evidence: {evidence[-1]})")
            break
    listing = run.run(checker, {"command": "view", "path": "/memories/big"})
    extra = [item for item in readback.listed_paths(listing.output) if item not in ("/memories/big", path)]
    run.report.figures[run.check] = {"trials": plan.cut_trials, "cut": cut, "whole": whole,
                                     "uncut_seconds": round(uncut, 4)}
    if broken:
        run.report.add(run.check, "a call cut off part way left a half-applied change: " + broken[0], FILE_LOST,
                       evidence[-1])
    if extra:
        shown_extra = ", ".join(extra[:3])
        run.report.add(run.check, f"after calls were cut off the store shows what no command made: {shown_extra}",
                       FILE_LOST, "a folder view")


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


def _late_state(lines: List[str], block: Sequence[str], token: str, newer_ok: bool) -> Tuple[bool, bool, bool, bool]:
    """(the newer edit or a line of the file's own lost, the late edit applied whole, part of it applied, lines no
    command wrote) for the file read as `lines`."""
    seen = Counter(lines)
    newer_lost = seen[token] != (1 if newer_ok else 0) or seen["notes"] != 1 or seen["ANCHOR"] != 1
    present = sum(1 for line in block if seen[line])
    applied = present == len(block) and _in_order(lines, block) and all(seen[line] == 1 for line in block)
    known = set(block) | {token, "notes", "ANCHOR"}
    return newer_lost, applied, bool(present) and not applied, any(line not in known for line in seen)


def _late_problems(lines: List[str], block: Sequence[str], token: str, newer_ok: bool) -> int:
    newer_lost, _applied, half, strange = _late_state(lines, block, token, newer_ok)
    return newer_lost + half + strange


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
    blamed: List[str] = []
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
        newer_ok = not newer_result.is_error
        found = readback.judged(read_file(run, checker, path, plan.late_lines + 4),
                                functools.partial(_late_problems, block=block, token=token, newer_ok=newer_ok))
        lines = found[0].lines if found is not None else []
        newer_lost, applied, half, strange = _late_state(lines, block, token, newer_ok)
        if newer_lost or half or strange:
            blamed.append(found[0].evidence if found is not None else NO_READING)
        tally.newer_lost += newer_lost
        tally.late_applied += applied
        tally.half_applied += half
        tally.late_lost += not applied and not half and late_ok
        tally.strange += strange
        if run.failed:
            return
    run.report.figures[run.check] = dataclasses.asdict(tally)
    evidence = _evidence(blamed)
    if tally.newer_lost:
        run.report.add(run.check, f"in {tally.newer_lost} of {tally.trials} trials a call finishing after the runner "
                                  f"stopped waiting for it overwrote a newer edit of another session (evidence: "
                                  f"{evidence})", FILE_LOST, evidence)
    if tally.half_applied:
        run.report.add(run.check, f"in {tally.half_applied} of {tally.trials} trials a call left running left part "
                                  f"of its edit (evidence: {evidence})", FILE_LOST, evidence)
    if tally.strange:
        run.report.add(run.check, f"in {tally.strange} of {tally.trials} trials the file held lines no command wrote "
                                  f"(evidence: {evidence})", FILE_LOST, evidence)


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
    lines = [
        f"DEPLOYMENT {item['check']}: {item['detail']}"
        + (f" (reported in the field: {', '.join(item['sources'])})" if item.get("sources") else "")
        for item in report.get("findings", [])
    ]
    lines += [f"note: {note}" for note in report.get("notes", [])]
    for check, figures in report.get("figures", {}).items():
        lines.append(f"{check}: " + ", ".join(f"{key}={value}" for key, value in figures.items()))
    return [redact_secrets(line) for line in lines] or ["deployment: nothing to report"]
