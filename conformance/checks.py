"""Comparisons: a step's result against the case, the final tree against `final`, and the leak checks.

Every check returns findings (an empty list when it holds); the runner only collects them.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Dict, Iterable, List, Optional, Pattern, Tuple

from conformance.layout import Entry
from conformance.targets import StepResult
from conformance.visible import clip, diff, inline


@dataclasses.dataclass(frozen=True)
class Finding:
    """One way a case failed. `step` is 1-based; 0 for setup and final-state findings."""

    kind: str
    message: str
    step: int = 0
    expected: Optional[str] = None
    actual: Optional[str] = None
    detail: str = ""

    def as_dict(self) -> Dict[str, Any]:
        return {key: value for key, value in dataclasses.asdict(self).items() if value not in (None, "")}


MISBEHAVIOUR: Tuple[Tuple[str, str], ...] = (
    ("crashed", "the implementation crashed"),
    ("timed_out", "the implementation did not answer in time"),
    ("raised", "the implementation raised an unexpected exception"),
)


def misbehaviour(result: StepResult, step: int) -> List[Finding]:
    return [
        Finding(flag, message, step, detail=result.detail) for flag, message in MISBEHAVIOUR if getattr(result, flag)
    ]


# --- outputs ------------------------------------------------------------------------------------


def _match_problem(match: Dict[str, Any], output: str) -> Optional[str]:
    if "regex" in match:
        return None if re.fullmatch(match["regex"], output, re.DOTALL) else f"does not fully match /{match['regex']}/"
    if "prefix" in match:
        return None if output.startswith(match["prefix"]) else f"does not start with {inline(match['prefix'])}"
    missing = [text for text in match.get("contains", []) if text not in output]
    return "does not contain " + ", ".join(inline(text) for text in missing) if missing else None


def check_step(step: Dict[str, Any], result: StepResult, number: int) -> List[Finding]:
    findings = []
    if "is_error" in step and result.is_error != step["is_error"]:
        findings.append(
            Finding(
                "is_error",
                f"is_error is {str(result.is_error).lower()}, expected {str(step['is_error']).lower()}",
                number,
                actual=clip(result.output),
            )
        )
    if "output" in step and result.output != step["output"]:
        findings.append(
            Finding(
                "output",
                "output differs",
                number,
                step["output"],
                result.output,
                diff(step["output"], result.output),
            )
        )
    if "match" in step:
        problem = _match_problem(step["match"], result.output)
        if problem:
            findings.append(Finding("match", f"output {problem}", number, actual=result.output))
    return findings


# --- leaks --------------------------------------------------------------------------------------

LEAK_PATTERNS: Tuple[Tuple[str, Pattern[str]], ...] = (
    ("a Python traceback", re.compile(r"Traceback")),
    ("an exception repr", re.compile(r"\b[A-Z]\w*(?:Error|Exception|Warning|Exit|Interrupt)\(")),
    ("an exception class name", re.compile(r"\b[A-Z]\w*(?:Error|Exception):")),
    ("an OS error text", re.compile(r"\[(?:Errno|WinError) -?\d+\]")),
    (
        "an errno code",
        re.compile(r"\b(?:ENOENT|EACCES|EEXIST|ENOTDIR|EISDIR|ELOOP|EPERM|ENOTEMPTY|EBUSY|EINVAL|EXDEV)\b"),
    ),
    ("a Python object repr", re.compile(r"<(?:class|function|module|object) '?[\w.]+")),
)


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

    An internals pattern is forgiven when the matched text is in the case itself (a file that says
    `Traceback` may be viewed); the canary and the host path are random per run and never forgiven.
    """

    secrets: Tuple[Tuple[str, str], ...]
    """(what it is, its text): the canary, the host path of the case directory."""
    case_text: str

    def check(self, output: str, number: int) -> List[Finding]:
        findings = [
            Finding("leak", f"the output holds {name}", number, actual=clip(output))
            for name, secret in self.secrets
            if secret in output
        ][:1]
        for name, pattern in LEAK_PATTERNS:
            for found in pattern.finditer(output):
                if found.group(0) not in self.case_text:
                    findings.append(
                        Finding("leak", f"the output holds {name}: {found.group(0)!r}", number, actual=clip(output))
                    )
                    break
        return findings


# --- final state on disk ------------------------------------------------------------------------


def _describe(entry: Optional[Entry]) -> str:
    if entry is None:
        return "nothing"
    if entry[0] == "file":
        return "a file holding " + inline(entry[1].decode("utf-8", "replace"))
    return {"dir": "a folder", "symlink": f"a symbolic link to {entry[1] if len(entry) > 1 else ''}"}.get(
        entry[0], "a special file"
    )


def check_final_tree(final: Dict[str, Any], tree: Dict[str, Entry]) -> List[Finding]:
    findings = []
    files: Dict[str, str] = final.get("files", {})
    for path, text in files.items():
        entry = tree.get(path)
        if entry is None or entry[0] != "file" or entry[1] != text.encode("utf-8"):
            actual = entry[1].decode("utf-8", "replace") if entry and entry[0] == "file" else None
            findings.append(
                Finding(
                    "final",
                    f"{path}: expected a file holding {clip(inline(text), 200)}, found {clip(_describe(entry), 200)}",
                    expected=text,
                    actual=actual,
                    detail=diff(text, actual) if actual is not None else "",
                )
            )
    if final.get("exact"):
        extra = sorted(path for path, entry in tree.items() if entry[0] != "dir" and path not in files)
        findings.extend(Finding("final", f"{path}: unexpected {_describe(tree[path])[:200]}") for path in extra)
    for path in final.get("present", []):
        entry = tree.get(path.rstrip("/"))
        wanted_dir = path.endswith("/")
        if entry is None or (entry[0] == "dir") != wanted_dir:
            findings.append(
                Finding(
                    "final",
                    f"{path}: expected {'a folder' if wanted_dir else 'an entry'}, found {_describe(entry)[:200]}",
                )
            )
    for path in final.get("absent", []):
        if path.rstrip("/") in tree:
            findings.append(
                Finding("final", f"{path}: expected nothing, found {_describe(tree[path.rstrip('/')])[:200]}")
            )
    return findings


def check_outside(before: Dict[str, Entry], after: Dict[str, Entry], label: str = "") -> List[Finding]:
    """The canary tree, the sibling and everything else outside the root: byte-for-byte unchanged."""
    changed = sorted(path for path in set(before) | set(after) if before.get(path) != after.get(path))
    return [
        Finding(
            "outside", f"{label}{path}: was {_describe(before.get(path))[:120]}, now {_describe(after.get(path))[:120]}"
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


def check_final_views(final: Dict[str, Any], view: Any) -> List[Finding]:
    """`final` checked with `view(path) -> StepResult`: content, presence and (for `exact`) the listing.

    An approximation: a view cannot tell a missing final newline, a CRLF file, a hidden file or a file
    more than two levels down, so those go unchecked for targets with their own storage.
    """
    findings = []
    files: Dict[str, str] = final.get("files", {})
    for path, text in files.items():
        result = view(f"/memories/{path}")
        body = result.output.split("\n", 1)[1] if "\n" in result.output else ""
        if result.is_error or body != numbered(text):
            findings.append(
                Finding(
                    "final",
                    f"{path}: viewing it does not show the expected text",
                    expected=numbered(text),
                    actual=result.output,
                    detail=diff(numbered(text), body),
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
                findings.append(Finding("final", f"{shown}: unexpected entry in the listing"))
    for path in final.get("present", []):
        if view(f"/memories/{path.rstrip('/')}").is_error:
            findings.append(Finding("final", f"{path}: expected present, but view reports an error"))
    for path in final.get("absent", []):
        if not view(f"/memories/{path.rstrip('/')}").is_error:
            findings.append(Finding("final", f"{path}: expected absent, but view shows it"))
    return findings
