"""Comparisons: a step's result against the case, the final tree against `final`, and the universal checks.

Every check returns findings (an empty list when it holds), each in one class of conformance/tiers.py; the
runner only collects them. A case's own expectations are judged in its tier's class (`tier` below); leaks,
changes outside the root, data loss, hangs, crashes and unbounded output are safety; an `is_error` that
disagrees with what the output says is signalling; an exception is robustness.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Dict, Iterable, List, Optional, Pattern, Tuple

from refmem_harness import hosttree
from refmem_harness.hosttree import Node, Tree
from refmem_harness.target_base import StepResult
from refmem_harness.visible import clip, diff, inline

from . import readback
from .effects import CRASH, HANG, OUTSIDE_CHANGED, OUTSIDE_CONTENT_SHOWN, OUTSIDE_NAME_SHOWN, class_of
from .excerpt import STORED_HEAD, STORED_TAIL, stored, windows
from .matchers import match_problem, numbered_bodies
from .tiers import ROBUSTNESS, SAFETY, SIGNALLING

STORED_LIMIT = STORED_HEAD + STORED_TAIL + 400
EXCERPT_CHARS = STORED_HEAD

@dataclasses.dataclass(frozen=True)
class Finding:
    """One way a case failed. `step` is 1-based; 0 for setup and final-state findings."""

    kind: str
    message: str
    step: int = 0
    expected: Optional[str] = None
    actual: Optional[str] = None
    detail: str = ""
    cls: str = SAFETY
    """The finding's class (conformance/tiers.py)."""
    source: str = ""
    """For a leak or an outside change: the entry of the canary tree (relative to CASE/) it comes from."""

    def __post_init__(self) -> None:
        # Whatever a backend sent, a finding holds a bounded excerpt of it (head, tail, length, sha256): a
        # report stays small and every later step (diffs, redaction, writing) stays cheap.
        for name in ("message", "expected", "actual", "detail"):
            value = getattr(self, name)
            if isinstance(value, str) and len(value) > STORED_LIMIT:
                object.__setattr__(self, name, stored(value))

    def as_dict(self) -> Dict[str, Any]:
        shown = {key: value for key, value in dataclasses.asdict(self).items() if value not in (None, "")}
        shown["class"] = shown.pop("cls")
        return shown


MISBEHAVIOUR: Tuple[Tuple[str, str, str], ...] = (
    ("crashed", "the implementation crashed", class_of(CRASH)),
    ("timed_out", "the implementation did not answer in time", class_of(HANG)),
    ("raised", "the implementation raised an exception that is not its declared error signal", ROBUSTNESS),
)


def misbehaviour(result: StepResult, step: int) -> List[Finding]:
    return [
        Finding(flag, message, step, detail=result.detail, cls=cls)
        for flag, message, cls in MISBEHAVIOUR
        if getattr(result, flag)
    ]


def output_bound(result: StepResult, bound: int, step: int) -> List[Finding]:
    if len(result.output) <= bound:
        return []
    return [
        Finding(
            "unbounded",
            f"the output is {len(result.output)} characters, over the bound of {bound} for this step",
            step,
            actual=clip(result.output, 600),
        )
    ]


# --- what an output says ------------------------------------------------------------------------

SUCCESS_OPENINGS = (
    "Here're the files",
    "Here's the content",
    "File created successfully",
    "The memory file has been edited",
    "Successfully deleted",
    "Successfully renamed",
)
"""The documented success forms: an output opening with one of them reads as a success."""

ERROR_WORDS = re.compile(
    r"\berror\b|does not exist|doesn't exist|not found|no such|already exists|no replacement was performed"
    r"|\binvalid\b|not allowed|\bis not a\b|\bcannot\b|can't|could not|\brefus|\bdenied\b|not permitted"
    r"|\bmust\b|\bexceeds?\b|\bunsupported\b|\bunknown\b|\bunrecognized\b|\brequired\b|\bescape|\bforbidden\b"
    r"|\bnot valid\b|\bfailed\b|\bloop\b|too many|\btoo (?:long|deep|large|many)\b|\bover the limit\b"
    r"|\bnot a (?:file|directory)\b",
    re.IGNORECASE,
)


def _strings(value: Any) -> List[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for item in value.values() for text in _strings(item)]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    return []


def reads_as_error(output: str, input: Any) -> bool:
    """Whether the output's first line reads as an error, whatever `is_error` says.

    Used only when `is_error` disagrees with the case, to tell a missing signal (signalling) from a command
    that did the wrong thing (the case's tier). The values the model sent are removed first, so that a path
    named `invalid.txt` does not make a success read as an error.
    """
    first = output.split("\n", 1)[0]
    if first.startswith(SUCCESS_OPENINGS):
        return False
    for text in sorted(_strings(input), key=len, reverse=True):
        if len(text) > 2:
            first = first.replace(text, " ")
    return bool(ERROR_WORDS.search(first))


def _word(flag: bool) -> str:
    return "an error" if flag else "a success"


def check_step(step: Dict[str, Any], result: StepResult, number: int, tier: str) -> List[Finding]:
    """The step's own expectations: `is_error` (unless left open), then `output` or `match`."""
    findings = []
    expected = step.get("is_error")
    if isinstance(expected, bool) and result.is_error != expected:
        says_error = reads_as_error(result.output, step.get("input"))
        if says_error == expected:
            message = (
                f"is_error is {str(result.is_error).lower()}, expected {str(expected).lower()}: "
                f"the output reads as {_word(says_error)} but is not flagged as one"
            )
            findings.append(Finding("is_error", message, number, actual=clip(result.output), cls=SIGNALLING))
        else:
            message = f"the command gave {_word(result.is_error)}, expected {_word(expected)}"
            findings.append(Finding("is_error", message, number, actual=clip(result.output), cls=tier))
    if "output" in step and result.output != step["output"]:
        expected_window, actual_window = windows(step["output"], result.output)
        findings.append(
            Finding(
                "output",
                "output differs",
                number,
                expected_window,
                actual_window,
                diff(expected_window, actual_window),
                cls=tier,
            )
        )
    if "match" in step:
        problem = match_problem(step["match"], result.output)
        if problem:
            findings.append(Finding("match", f"output {clip(problem, 2000)}", number, actual=result.output, cls=tier))
    return findings


# --- leaks --------------------------------------------------------------------------------------

SAFETY_PATTERNS: Tuple[Tuple[str, Pattern[str]], ...] = (("a Python traceback", re.compile(r"Traceback")),)
"""Patterns that carry host details whatever they hold (a traceback names source files)."""

INTERNALS_PATTERNS: Tuple[Tuple[str, Pattern[str]], ...] = (
    ("an exception repr", re.compile(r"\b[A-Z]\w*(?:Error|Exception|Warning|Exit|Interrupt)\(")),
    ("an exception class name", re.compile(r"\b[A-Z]\w*(?:Error|Exception):")),
    ("an OS error text", re.compile(r"\[(?:Errno|WinError) -?\d+\]")),
    (
        "an errno code",
        re.compile(r"\b(?:ENOENT|EACCES|EEXIST|ENOTDIR|EISDIR|ELOOP|EPERM|ENOTEMPTY|EBUSY|EINVAL|EXDEV)\b"),
    ),
    ("a Python object repr", re.compile(r"<(?:class|function|module|object) '?[\w.]+")),
)
"""Error internals without host details: robustness, not safety."""


def strings_in(value: Any) -> Iterable[str]:
    """Every string in a JSON value, keys included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from strings_in(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings_in(item)


REACHED = "\x00reached"
"""LeakGuard's source for the canary token: the canary-tree entry the step reached, if any (LeakGuard.check)."""


@dataclasses.dataclass(frozen=True)
class LeakGuard:
    """What no output of a case may contain: the canary, the host path, error internals.

    A pattern is forgiven when the matched text is in the case itself (a file that says `Traceback` may be
    viewed); the canary and the host path are random per run and never forgiven.
    """

    secrets: Tuple[Tuple[str, str, str], ...]
    """(what it is, its text, the canary-tree entry it identifies, "" or REACHED), most specific first: the line of
    each canary file, then the canary token itself (every canary name and text holds it: REACHED, the entry the
    step's path reached, when it reached one), then the host path."""
    case_text: str

    def _patterns(
        self, output: str, number: int, patterns: Tuple[Tuple[str, Pattern[str]], ...], cls: str
    ) -> List[Finding]:
        findings = []
        for name, pattern in patterns:
            for found in pattern.finditer(output):
                if found.group(0) not in self.case_text:
                    message = f"the output holds {name}: {found.group(0)!r}"
                    findings.append(Finding("leak", message, number, actual=clip(output), cls=cls))
                    break
        return findings

    def check(self, output: str, number: int, raised: bool = False, reached: str = "") -> List[Finding]:
        """Safety leaks always; error internals only when the step did not raise (a raise is its own finding,
        and its text is the exception's repr by design). `reached`: the canary-tree entry the step's path leads
        to through a planted hard link: canary text the output holds without a whole canary line (an edit's
        snippet of it, changed) is that entry's, as a view of it would be (D-VERDICT-PLANTED)."""
        findings = [
            Finding("leak", f"the output holds {name}", number, actual=clip(output),
                    source=reached if source == REACHED else source, cls=class_of(OUTSIDE_CONTENT_SHOWN))
            for name, secret, source in self.secrets
            if secret in output
        ][:1]
        findings += self._patterns(output, number, SAFETY_PATTERNS, SAFETY)
        if not findings and not raised:  # internals beside a safety leak add nothing
            findings += self._patterns(output, number, INTERNALS_PATTERNS, ROBUSTNESS)
        return findings


# --- what lies outside, shown through a link ------------------------------------------------------

LISTED_LINES_READ = 20_000
"""Lines of one output looked at for listing lines (a size, a TAB, a path under /memories) at most."""


def _listed(output: str) -> Iterable[Tuple[str, str]]:
    """(size text, path) of each listing-shaped line: plain string work, linear in the output."""
    for count, line in enumerate(output.split("\n")):
        if count >= LISTED_LINES_READ:
            return
        size, tab, path = line.partition("\t")
        path = path.strip()
        if tab and path.startswith("/memories"):
            yield size.strip(), path


def outside_shown(output: str, number: int, memory: Tree, outside: Tree) -> List[Finding]:
    """A listing line that names what lies outside the root through a link planted in it (a name below the
    link), or that gives a link to an outside file the size of that file, not its own: an outside name or size
    shown is a leak, whatever its text (the canary tree's names hold the canary; a host folder's need not)."""
    if "\t/memories" not in output or not any(node.kind == hosttree.LINK for node in memory.values()):
        return []
    from refmem_harness.layout import through_links

    from .matchers import size_fits

    for size, shown in _listed(output):
        relative = shown[len("/memories") :].strip("/")
        if not relative or shown[len("/memories") :][:1] not in ("/", ""):
            continue
        landed, rest = through_links(relative, memory)
        if landed is not None and (landed == "memories" or landed.startswith("memories/")):
            continue
        if rest:
            message = f"the output names what lies outside the root, through a link: {clip(shown, 200)}"
            return [Finding("leak", message, number, actual=clip(output), source=landed or "",
                            cls=class_of(OUTSIDE_NAME_SHOWN))]
        target = outside.get(landed) if landed is not None else None
        link = memory.get(relative)
        if target is not None and target.kind == hosttree.FILE and link is not None:
            if size_fits(size, target.size) and not size_fits(size, link.size):
                message = (
                    f"the output gives the link {clip(shown, 200)} the size of the file outside the root it "
                    f"points to ({target.size} bytes)"
                )
                return [Finding("leak", message, number, actual=clip(output), source=landed or "",
                                cls=class_of(OUTSIDE_NAME_SHOWN))]
    return []


# --- layouts the suite planted --------------------------------------------------------------------


def reached_through_link(input: Any, case: Any) -> str:
    """The outside entry (relative to CASE/) that `input`'s path names through a hard link the case planted, or
    "": what a command on that path shows of outside text came through the planted link."""
    path = input.get("path") if isinstance(input, dict) else None
    if not isinstance(path, str) or not path.startswith("/memories/"):
        return ""
    name = path[len("/memories/") :].strip("/")
    for fixture in case.setup.get("fixtures", []):
        if fixture.get("type") == "hardlink" and str(fixture.get("path", "")).strip("/") == name:
            return str(fixture.get("target", ""))
    return ""


def planted_layout(findings: List[Finding], fixtures: List[Dict[str, Any]]) -> List[Finding]:
    """Safety findings that only a layout the suite planted (and the tool cannot make) explains, given the class
    conformance/effects.py gives their effect on a planted layout: a write to or a read of a hard link's outside
    target (whichever command's output showed it). A hang or a crash stays safety, on a planted FIFO too; anything
    else a case does (an escape by a path, a host path in a message) stays safety."""
    hard_targets = {str(fx.get("target", "")) for fx in fixtures if fx.get("type") == "hardlink"}
    if not hard_targets:
        return findings

    def planted(finding: Finding) -> Optional[str]:
        """The finding's effect when only the planted layout let it happen, else None."""
        if finding.cls != SAFETY:
            return None
        if finding.kind == "leak" and finding.source in hard_targets:
            return OUTSIDE_CONTENT_SHOWN
        if finding.kind == "outside" and finding.message.split(":", 1)[0] in hard_targets:
            return OUTSIDE_CHANGED
        return None  # a hang or a crash, on a planted FIFO too, stays safety (D-VERDICT-HANG)

    return [
        dataclasses.replace(f, cls=class_of(effect, planted=True)) if effect is not None else f
        for f in findings
        for effect in [planted(f)]
    ]


def opening(output: str, words: int = 3) -> str:
    """The first words of an output (for the error-prefix suggestion: what successes begin with)."""
    return " ".join(output.split("\n", 1)[0].split(" ")[:words])[:80]


# --- final state on disk ------------------------------------------------------------------------


def describe(entry: Optional[Node]) -> str:
    return hosttree.describe(entry)


def check_final_tree(final: Dict[str, Any], tree: Tree, tier: str) -> List[Finding]:
    """`final` against the root's tree as read after the case (files named in `final.files` read whole)."""
    findings = []
    files: Dict[str, str] = final.get("files", {})
    for path, text in files.items():
        entry = tree.get(path)
        wanted = text.encode("utf-8")
        if not hosttree.holds(entry, wanted):
            actual = entry.text(len(wanted) + 1) if entry is not None and entry.kind == hosttree.FILE else None
            if actual is not None and entry is not None and entry.data is None:
                actual = None  # only the head was read: a diff against it would mislead
            findings.append(
                Finding(
                    "final",
                    f"{path}: expected a file holding {clip(inline(text), 200)}, found {clip(describe(entry), 200)}",
                    expected=clip(text, EXCERPT_CHARS),
                    actual=clip(actual, EXCERPT_CHARS) if actual is not None else None,
                    detail=diff(text, actual) if actual is not None else "",
                    cls=tier,
                )
            )
    if final.get("exact"):
        extra = sorted(path for path, entry in tree.items() if entry.kind != hosttree.DIR and path not in files)
        findings.extend(
            Finding("final", f"{path}: unexpected {describe(tree[path])[:200]}", cls=tier) for path in extra
        )
    for path in final.get("present", []):
        entry = tree.get(path.rstrip("/"))
        wanted_dir = path.endswith("/")
        if entry is None or (entry.kind == hosttree.DIR) != wanted_dir:
            findings.append(
                Finding(
                    "final",
                    f"{path}: expected {'a folder' if wanted_dir else 'an entry'}, found {describe(entry)[:200]}",
                    cls=tier,
                )
            )
    for path in final.get("absent", []):
        if path.rstrip("/") in tree:
            findings.append(
                Finding("final", f"{path}: expected nothing, found {describe(tree[path.rstrip('/')])[:200]}", cls=tier)
            )
    return findings


def final_wanted(final: Dict[str, Any]) -> hosttree.Wanted:
    """Read the bytes of a file after a case only where `final` names it with a text of that very size."""
    sizes = {path: len(text.encode("utf-8")) for path, text in (final or {}).get("files", {}).items()}

    def wanted(path: str, size: int) -> bool:
        return sizes.get(path) == size

    return wanted


def check_outside(before: Tree, after: Tree, label: str = "") -> List[Finding]:
    """The canary tree, the sibling and everything else outside the root: unchanged (hosttree.same)."""
    return [
        Finding(
            "outside", f"{path}: was {describe(was)[:120]}, now {describe(now)[:120]}", cls=class_of(OUTSIDE_CHANGED)
        )
        for path, was, now in hosttree.changes(before, after, label)
    ]


# --- final state through view commands (targets with their own storage) -------------------------


def numbered(text: str) -> str:
    """`text` as the reference's view numbers it (D-VIEW-LINES, D-VIEW-FILE, D-VIEW-CRLF)."""
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    if lines and text.endswith("\n") and all(line.endswith("\r") for line in lines):
        lines = [line[:-1] for line in lines]
    return "\n".join(f"{number:>6}\t{line}" for number, line in enumerate(lines, 1)) if text else ""


def check_final_views(final: Dict[str, Any], view: Any, tier: str) -> List[Finding]:
    """`final` checked with `view(path) -> StepResult`: content, presence and (for `exact`) the listing.

    An approximation: a view cannot tell a missing final newline, a CRLF file, a hidden file or a file
    more than two levels down, so those go unchecked for targets with their own storage. Both readings of a
    final newline are accepted, as in a documented file view.
    """
    findings = []
    files: Dict[str, str] = final.get("files", {})
    for path, text in files.items():
        result = view(f"/memories/{path}")
        body = result.output.split("\n", 1)[1] if "\n" in result.output else ""
        if result.is_error or body == numbered(text) or body in numbered_bodies({"text": text}):
            evidence = None if not result.is_error else "the view is an error"
        else:
            evidence = _state_shown(result.output, f"/memories/{path}", text)
        if evidence is not None:
            findings.append(
                Finding(
                    "final",
                    f"{path}: viewing it does not show the expected text ({evidence})",
                    expected=stored(numbered(text)),
                    actual=result.output,
                    detail=diff(*windows(numbered(text), body)),
                    cls=tier,
                )
            )
    if final.get("exact"):
        allowed = {f"/memories/{path}" for path in files}
        allowed |= {
            "/memories/" + "/".join(path.split("/")[:n]) for path in files for n in range(1, path.count("/") + 1)
        }
        for shown in _listed_entries(view("/memories").output):
            if shown.endswith("/"):
                continue  # a folder: `exact` names files, as on disk (check_final_tree)
            if shown and shown not in allowed:
                findings.append(Finding("final", f"{shown}: unexpected entry in the listing", cls=tier))
    for path in final.get("present", []):
        if view(f"/memories/{path.rstrip('/')}").is_error:
            findings.append(Finding("final", f"{path}: expected present, but view reports an error", cls=tier))
    for path in final.get("absent", []):
        if not view(f"/memories/{path.rstrip('/')}").is_error:
            findings.append(Finding("final", f"{path}: expected absent, but view shows it", cls=tier))
    return findings


FINAL_EVIDENCE = "documented view, then every tolerant reading of it (readback.py)"
"""What a final-state check through views read: the state is judged, not the view's format (D-FINAL-READBACK)."""


def _state_shown(output: str, path: str, text: str) -> Optional[str]:
    """None when some reading of the view `output` (readback.view_readings: any numbering, spacing or header)
    is the file's expected text, as a documented view of it would read; else the evidence that was read, for the
    finding. The state is judged here, not the format: the cases about the view's format judge that in their
    steps."""
    expected = [readback.documented_lines(body) for body in [numbered(text), *numbered_bodies({"text": text})]]
    if any(reading.lines in expected for reading in readback.view_readings(output, path)):
        return None
    return f"evidence: {FINAL_EVIDENCE}; no reading is the expected text"


_LISTED_ROW = re.compile(r"^[^\t\n]*\t(/memories/[^\n]*)$", re.MULTILINE)
_LISTED_PATH = re.compile(r"/memories/[^\s,;()]+")


def _listed_entries(output: str) -> List[str]:
    """The entries a listing shows below the root, a folder with its final slash: its documented `SIZE<tab>PATH`
    rows, else every `/memories/...` path on a line after the first (a listing drawn another way)."""
    rows = _LISTED_ROW.findall(output)
    return rows or [path for line in output.split("\n")[1:] for path in _LISTED_PATH.findall(line)]
