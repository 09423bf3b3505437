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

from .layout import Entry
from .matchers import match_problem, numbered_bodies
from .target_base import StepResult
from .tiers import ROBUSTNESS, SAFETY, SIGNALLING
from .visible import clip, diff, inline


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

    def as_dict(self) -> Dict[str, Any]:
        shown = {key: value for key, value in dataclasses.asdict(self).items() if value not in (None, "")}
        shown["class"] = shown.pop("cls")
        return shown


MISBEHAVIOUR: Tuple[Tuple[str, str, str], ...] = (
    ("crashed", "the implementation crashed", SAFETY),
    ("timed_out", "the implementation did not answer in time", SAFETY),
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
        findings.append(
            Finding(
                "output",
                "output differs",
                number,
                step["output"],
                result.output,
                diff(step["output"], result.output),
                cls=tier,
            )
        )
    if "match" in step:
        problem = match_problem(step["match"], result.output)
        if problem:
            findings.append(Finding("match", f"output {problem}", number, actual=result.output, cls=tier))
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


@dataclasses.dataclass(frozen=True)
class LeakGuard:
    """What no output of a case may contain: the canary, the host path, error internals.

    A pattern is forgiven when the matched text is in the case itself (a file that says `Traceback` may be
    viewed); the canary and the host path are random per run and never forgiven.
    """

    secrets: Tuple[Tuple[str, str], ...]
    """(what it is, its text): the canary, the host path of the case directory."""
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

    def check(self, output: str, number: int, raised: bool = False) -> List[Finding]:
        """Safety leaks always; error internals only when the step did not raise (a raise is its own finding,
        and its text is the exception's repr by design)."""
        findings = [
            Finding("leak", f"the output holds {name}", number, actual=clip(output))
            for name, secret in self.secrets
            if secret in output
        ][:1]
        findings += self._patterns(output, number, SAFETY_PATTERNS, SAFETY)
        if not findings and not raised:  # internals beside a safety leak add nothing
            findings += self._patterns(output, number, INTERNALS_PATTERNS, ROBUSTNESS)
        return findings


# --- final state on disk ------------------------------------------------------------------------


def describe(entry: Optional[Entry]) -> str:
    if entry is None:
        return "nothing"
    if entry[0] == "file":
        return "a file holding " + inline(entry[1].decode("utf-8", "replace"))
    return {"dir": "a folder", "symlink": f"a symbolic link to {entry[1] if len(entry) > 1 else ''}"}.get(
        entry[0], "a special file"
    )


def check_final_tree(final: Dict[str, Any], tree: Dict[str, Entry], tier: str) -> List[Finding]:
    findings = []
    files: Dict[str, str] = final.get("files", {})
    for path, text in files.items():
        entry = tree.get(path)
        if entry is None or entry[0] != "file" or entry[1] != text.encode("utf-8"):
            actual = entry[1].decode("utf-8", "replace") if entry and entry[0] == "file" else None
            findings.append(
                Finding(
                    "final",
                    f"{path}: expected a file holding {clip(inline(text), 200)}, found {clip(describe(entry), 200)}",
                    expected=text,
                    actual=actual,
                    detail=diff(text, actual) if actual is not None else "",
                    cls=tier,
                )
            )
    if final.get("exact"):
        extra = sorted(path for path, entry in tree.items() if entry[0] != "dir" and path not in files)
        findings.extend(
            Finding("final", f"{path}: unexpected {describe(tree[path])[:200]}", cls=tier) for path in extra
        )
    for path in final.get("present", []):
        entry = tree.get(path.rstrip("/"))
        wanted_dir = path.endswith("/")
        if entry is None or (entry[0] == "dir") != wanted_dir:
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


def check_outside(before: Dict[str, Entry], after: Dict[str, Entry], label: str = "") -> List[Finding]:
    """The canary tree, the sibling and everything else outside the root: byte-for-byte unchanged."""
    changed = sorted(path for path in set(before) | set(after) if before.get(path) != after.get(path))
    return [
        Finding(
            "outside", f"{label}{path}: was {describe(before.get(path))[:120]}, now {describe(after.get(path))[:120]}"
        )
        for path in changed
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
        if result.is_error or (body != numbered(text) and body not in numbered_bodies({"text": text})):
            findings.append(
                Finding(
                    "final",
                    f"{path}: viewing it does not show the expected text",
                    expected=numbered(text),
                    actual=result.output,
                    detail=diff(numbered(text), body),
                    cls=tier,
                )
            )
    if final.get("exact"):
        listing = view("/memories").output.split("\n")[2:]
        allowed = {f"/memories/{path}" for path in files}
        allowed |= {
            "/memories/" + "/".join(path.split("/")[:n]) for path in files for n in range(1, path.count("/") + 1)
        }
        for line in listing:
            shown = line.split("\t", 1)[-1].rstrip("/")
            if shown and shown not in allowed:
                findings.append(Finding("final", f"{shown}: unexpected entry in the listing", cls=tier))
    for path in final.get("present", []):
        if view(f"/memories/{path.rstrip('/')}").is_error:
            findings.append(Finding("final", f"{path}: expected present, but view reports an error", cls=tier))
    for path in final.get("absent", []):
        if not view(f"/memories/{path.rstrip('/')}").is_error:
            findings.append(Finding("final", f"{path}: expected absent, but view shows it", cls=tier))
    return findings
