"""One command sequence against a target in the conformance layout, every step judged as it happens.

Each sequence runs in a fresh case directory (refmem_harness/layout.py: the root beside the canary tree), the
target reset onto its root. After every step the findings are those of the runner's own checks, each in its
class (conformance/tiers.py):

  safety      nothing outside the root changed, created or removed (the canary tree, the folder the case
              directories live in, host paths a command names: watched and put back); no canary text or
              name, outside name or size, host path or traceback in the output; no file the step does not
              name changed or gone (conformance/dataloss.py); no hang past the step timeout, no crash, no
              output over its bound.
  robustness  an exception that is not the declared error signal; error internals in an output.
  documented  where the documentation settles the command (documented.py): its outcome, the file or listing
  signalling  a view shows, and the tree afterwards, all read off the fuzzer's model; an `is_error` that
              disagrees while the output reads as the documented outcome is signalling.
  reference   the embedded reference, run on the same commands in a parallel layout: the same `is_error`,
              the same output byte for byte, the same tree.

Nothing here needs hypothesis: the search (search.py) draws the commands, `--replay` reads them from a file.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
from typing import Any, Callable, Dict, FrozenSet, List, Optional, Sequence, Set, Tuple

from refmem_harness import hosttree, model, oracles
from refmem_harness.layout import CaseDir, canary_files, make_case_dir, memory_read, outside_read, remove
from refmem_harness.signalling import ErrorPrefix
from refmem_harness.targets import StepResult, Target, open_target

from ..checks import (
    Finding,
    LeakGuard,
    check_outside,
    check_step,
    describe,
    misbehaviour,
    output_bound,
    outside_shown,
    strings_in,
)
from ..dataloss import lost, readings, shared_inodes, touched, why_lost
from ..effects import FILE_LOST, OUTSIDE_CHANGED, UNTOUCHED_BYTES_CHANGED, class_of
from ..hostwatch import PATH_ARGUMENTS, HostWatch, named_paths
from ..runner import OUTPUT_BOUND_BASE, OUTPUT_BOUND_FACTOR
from ..tiers import DOCUMENTED, MUST, REFERENCE, ROBUSTNESS, SAFETY, SIGNALLING, gates
from ..untouched import edited_file, untouched_changed
from . import documented

CLASSES: Tuple[str, ...] = (SAFETY, ROBUSTNESS, SIGNALLING, DOCUMENTED, REFERENCE)
"""The classes the property suite judges, most severe first."""
REFERENCE_SPEC = "refmem"


@dataclasses.dataclass
class Context:
    """What every sequence of one run shares: the target, the embedded reference when the reference class is
    judged, the folder the case directories are made in, the run's canary, and the classes judged."""

    target: Target
    base: pathlib.Path
    canary: str
    classes: FrozenSet[str]
    reference: Optional[Target] = None
    runs: int = 0
    """Sequences started (generated, shrunk and replayed alike)."""

    def close(self) -> None:
        try:
            self.target.close()
        finally:
            if self.reference is not None:
                self.reference.close()


def open_context(
    spec: str,
    base: pathlib.Path,
    canary: str,
    classes: FrozenSet[str],
    timeout: Optional[float],
    error_prefix: ErrorPrefix = None,
) -> Context:
    """The target `spec` (and the embedded reference when `classes` holds the reference class) opened on a
    start directory under `base`; raises TargetError when a target cannot be used."""
    start = make_case_dir(base / "start", canary)
    try:
        target = open_target(spec, start.root, timeout, error_prefix=error_prefix)
        try:
            mirror = open_target(REFERENCE_SPEC, start.root, timeout) if REFERENCE in classes else None
        except BaseException:
            target.close()
            raise
    finally:
        remove(start.path)
    return Context(target, base, canary, classes, mirror)


def model_tree(tree: hosttree.Tree, kept: Callable[[str], bool] = lambda path: True) -> model.Tree:
    """A tree as read from disk, in the model's terms: a regular file of one link holding UTF-8 is a file,
    a folder a folder, anything else (a link, a special file, a hard link, bytes that are not UTF-8) opaque;
    only the entries `kept` accepts."""
    found: model.Tree = {(): model.DIR}
    for path, node in tree.items():
        if not kept(path):
            continue
        parts = tuple(path.split("/"))
        if node.kind == hosttree.DIR:
            found[parts] = model.DIR
            continue
        text = None
        if node.kind == hosttree.FILE and node.nlink == 1 and node.data is not None:
            try:
                text = node.data.decode("utf-8")
            except UnicodeDecodeError:
                text = None
        found[parts] = model.OPAQUE if text is None else model.file_node(text)
    return found


class SequenceRun:
    """One sequence: its case directory (and the reference's beside it), the commands so far, the findings of
    each step in the classes the context judges."""

    def __init__(self, context: Context) -> None:
        context.runs += 1
        self.context = context
        self.case = make_case_dir(context.base / f"{context.runs:06d}", context.canary)
        self.mirror: Optional[CaseDir] = None
        try:
            context.target.reset(self.case.root)
            if context.reference is not None:
                self.mirror = make_case_dir(context.base / f"{context.runs:06d}-reference", context.canary)
                context.reference.reset(self.mirror.root)
        except BaseException:
            remove(self.case.path)
            if self.mirror is not None:
                remove(self.mirror.path)
            raise
        self.on_disk = context.target.storage == "filesystem"
        self.commands: List[Any] = []
        self.results: List[StepResult] = []
        self.stopped = False
        """The target crashed or hung: it is gone until the next sequence resets it."""
        self.model = model.Model([], documented.parse)
        self.tree_after: Optional[model.Tree] = None
        self.memory: hosttree.Tree = {}
        self.named: Set[str] = set()
        """Every root-relative path the commands so far may name (dataloss.readings), the root left out: what
        lies at or under one of them, or on the way to one, is the sequence's data; anything else in the root is
        the backend's own (an index, a lock file) and neither data to lose nor a file the documentation knows."""
        self.outside = outside_read(self.case).tree
        self.outside_bytes = sum(node.size for node in self.outside.values())
        self.size = self.outside_bytes
        self.sent = 0
        self.around: Set[str] = set(os.listdir(context.base))
        self.start = self.around - {self.case.path.name} - ({self.mirror.path.name} if self.mirror else set())
        secrets: List[Tuple[str, str, str]] = [
            (f"the text of {item.path}", item.line, item.path) for item in canary_files(context.canary)
        ]
        secrets.append(("a name or text from the canary tree (outside the root)", context.canary, ""))
        secrets += [("the host path", path, "") for path in sorted({str(context.base), os.path.realpath(context.base)})]
        self.secrets = tuple(secrets)
        folders = sorted({str(context.base), os.path.realpath(context.base)}, key=len, reverse=True)
        self.hidden = tuple((folder, "<WORK>") for folder in folders) + ((context.canary, "<CANARY>"),)
        """(text, placeholder) for what a finding file must never hold (the fuzzer's placeholders)."""

    def close(self) -> None:
        """Remove the case directories, and whatever appeared beside them (reported already): every sequence
        starts from the same host, so that a shorter sequence breaks what a longer one did."""
        remove(self.case.path)
        if self.mirror is not None:
            remove(self.mirror.path)
        for name in set(os.listdir(self.context.base)) - self.start:
            remove(self.context.base / name)

    def step(self, command: Any) -> List[Finding]:
        """Run one command and judge it; the findings in the classes the context judges."""
        number = len(self.commands) + 1
        self.commands.append(command)
        if isinstance(command, dict):
            for argument in PATH_ARGUMENTS:
                self.named |= readings(command.get(argument)) - {""}
        self.sent += sum(len(text) for text in strings_in(command))
        # a name with a NUL cannot be a host path (the system refuses it), and hostwatch cannot walk one
        watch = HostWatch(path for path in named_paths([command], str(self.case.path)) if "\x00" not in path)
        try:
            result = self.context.target.execute(command)
        finally:
            put_back = watch.settle()
        self.results.append(result)
        found = self._screen(result, number, put_back)
        if result.crashed or result.timed_out:
            self.stopped = True
            return self._kept(found)
        after: Optional[model.Tree] = None
        if self.on_disk:
            read = memory_read(self.case)
            if read.truncated:
                found.append(Finding("unbounded", "the root holds more entries than can be read", number))
            if read.unread:
                found.append(Finding("unbounded", read.budget_note(), number))
            found += self._data_loss(command, number, read.tree)
            found += self._untouched(command, result, number, read.tree)
            after = model_tree(read.tree, self.ours)
            self.memory, self.size = read.tree, read.total_bytes + self.outside_bytes
        found += self._documented(command, result, number, after)
        if self.context.reference is not None and self.mirror is not None:
            found += self._reference(command, result, number, after)
        self.tree_after = after
        return self._kept(found)

    def _kept(self, found: List[Finding]) -> List[Finding]:
        return [finding for finding in found if finding.cls in self.context.classes]

    # --- safety and robustness: every step ---------------------------------------------------------------

    def _screen(self, result: StepResult, number: int, put_back: Sequence[Tuple[str, str]]) -> List[Finding]:
        guard = LeakGuard(self.secrets, "\x00".join(strings_in(self.commands)))
        found = guard.check(result.output, number, result.raised)
        found += outside_shown(result.output, number, self.memory, self.outside)
        found += output_bound(result, OUTPUT_BOUND_BASE + OUTPUT_BOUND_FACTOR * (self.size + self.sent), number)
        found += misbehaviour(result, number)
        moved = class_of(OUTSIDE_CHANGED)  # nothing a sequence meets was planted: the model made every layout
        found += [Finding("outside", f"host path {path}: {change} (put back)", number, cls=moved)
                  for path, change in put_back]
        outside = outside_read(self.case, hosttree.wanted_like(self.outside))
        if outside.truncated:
            found.append(Finding("unbounded", "more entries appeared around the root than can be read", number))
        found += [dataclasses.replace(finding, step=number) for finding in check_outside(self.outside, outside.tree)]
        self.outside = outside.tree
        around = set(os.listdir(self.context.base)) - self.around
        found += [Finding("outside", f"{name}: appeared next to the case directory", number, cls=moved)
                  for name in sorted(around)]
        self.around |= around
        return found

    def _data_loss(self, command: Any, number: int, after: hosttree.Tree) -> List[Finding]:
        names = touched([command], self.memory, shared_inodes(self.memory))
        return [
            Finding(
                "data_loss",
                f"{path}: {why_lost(path, [command], self.memory)}, but it was {describe(was)[:120]}, "
                f"now {describe(now)[:120]}",
                number,
                cls=class_of(FILE_LOST),
            )
            for path, was, now in lost(self.memory, after, names)
            if self.ours(path)
        ]

    def _untouched(self, command: Any, result: StepResult, number: int, after: hosttree.Tree) -> List[Finding]:
        """An edit that changed bytes of its file outside the span it names (conformance/untouched.py)."""
        edited = edited_file(command)
        was, now = self.memory.get(edited or ""), after.get(edited or "")
        if edited is None or result.is_error or was is None or now is None:
            return []
        if was.kind != hosttree.FILE or now.kind != hosttree.FILE or was.nlink != 1 or now.nlink != 1:
            return []
        if was.data is None or now.data is None:
            return []
        said = untouched_changed(command, was.data, now.data)
        if said is None:
            return []
        return [Finding("untouched", f"/memories/{edited}: {said}", number, cls=class_of(UNTOUCHED_BYTES_CHANGED))]

    def ours(self, path: str) -> bool:
        """Whether `path` (root-relative) is the sequence's: at or under a path a command named, or on the way."""
        return any(path == name or path.startswith(name + "/") or name.startswith(path + "/") for name in self.named)

    # --- documented and signalling: where the documentation settles the command ------------------------

    def _documented(self, command: Any, result: StepResult, number: int, after: Optional[model.Tree]) -> List[Finding]:
        said = None if self.model.lost else documented.statement(command, self.model.tree)
        before = dict(self.model.tree)
        outcome = self.model.apply(command) if said is not None else model.Outcome.UNKNOWN
        if outcome is model.Outcome.UNKNOWN:
            self._follow(before, result, after)
            return []
        step: Dict[str, Any] = {"input": command, "is_error": outcome is model.Outcome.ERROR}
        if outcome is model.Outcome.OK and command.get("command") == "view":
            match = documented.view_match(command, before)
            if match is not None:
                step["match"] = match
        found = [
            dataclasses.replace(finding, message=f"{said}: {finding.message}")
            for finding in check_step(step, result, number, DOCUMENTED)
        ]
        if after is not None:
            problem = oracles.check_tree(self.model.tree, after)
            if problem is not None and outcome is model.Outcome.ERROR and _only_new_folders(self.model.tree, after):
                problem = None  # folders a failed command left: D-CREATE-PARENTS, the reference's (rename-033)
            if problem is not None:
                message = f"{said}, but the tree afterwards is not that: {problem.detail}"
                found.append(Finding("final", message, number, cls=DOCUMENTED))
            self.model.tree = after
        elif any(finding.cls == DOCUMENTED for finding in found):
            self.model.lost = True  # own storage: what it holds now is not known
        return found

    def _follow(self, before: model.Tree, result: StepResult, after: Optional[model.Tree]) -> None:
        """After a command the documentation leaves open: the tree is what the disk shows; with storage of
        its own, an error is taken to have changed nothing and a success leaves the tree unknown."""
        if after is not None:
            self.model.tree, self.model.lost = after, False
        elif result.is_error:
            self.model.tree = before
        else:
            self.model.lost = True

    # --- reference: the embedded reference on the same commands --------------------------------------

    def _reference(self, command: Any, result: StepResult, number: int, after: Optional[model.Tree]) -> List[Finding]:
        assert self.context.reference is not None and self.mirror is not None
        expected = self.context.reference.execute(command)
        if expected.misbehaved:
            return []
        step = {"input": command, "is_error": expected.is_error, "output": expected.output}
        found = [
            dataclasses.replace(finding, cls=REFERENCE, message=f"as the reference: {finding.message}")
            for finding in check_step(step, result, number, REFERENCE)
        ]
        if after is not None:
            theirs = model_tree(memory_read(self.mirror).tree, self.ours)
            problem = oracles.check_tree(theirs, after)
            if problem is not None:
                message = f"the tree afterwards differs from the reference's: {problem.detail}"
                found.append(Finding("final", message, number, cls=REFERENCE))
        return found


def _only_new_folders(expected: model.Tree, after: model.Tree) -> bool:
    """`after` is `expected` with folders added and nothing else: what the documentation leaves open after a
    command that failed (whether it removes the parent folders it made is a decision, D-CREATE-PARENTS)."""
    new = [key for key in after if key not in expected]
    return bool(new) and all(after[key] == model.DIR for key in new) and all(
        after.get(key) == node for key, node in expected.items()
    )


def gating_classes(profile: str) -> Tuple[str, ...]:
    """The classes judged under `profile`: those whose findings fail a `must` case of their own tier (safety,
    robustness and signalling always; documented under every profile; the reference's outputs under standard
    and hardening)."""
    return tuple(cls for cls in CLASSES if gates(profile, cls, cls if cls == REFERENCE else DOCUMENTED, MUST))
