"""What must hold after every step of a sequence, and after the sequence.

Each broken oracle is a `Violation` whose `oracle` is a stable class name (the part before the first
`:` is the family): findings are deduplicated and reported by that class.
"""

from __future__ import annotations

import builtins
import dataclasses
import re
from typing import List, Optional

from .model import Outcome, Tree, render_tree
from .sequence_layout import Layout

_EXCEPTION_NAMES = sorted(
    name
    for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, BaseException) and name not in ("Exception", "BaseException")
)
_EXCEPTION_RE = re.compile(r"\b(?:{})\b".format("|".join(_EXCEPTION_NAMES)))
TRACEBACK_MARK = "Traceback (most recent call last)"


@dataclasses.dataclass(frozen=True)
class Violation:
    oracle: str
    step: Optional[int]
    detail: str

    @property
    def family(self) -> str:
        return self.oracle.split(":", 1)[0]


def check_step(index: int, command: object, step: object, layout: Layout, strict: bool) -> List[Violation]:
    """Oracles on one StepResult (duck-typed: output, is_error, crashed, timed_out, raised, detail)."""
    name = command.get("command") if isinstance(command, dict) else None
    label = name if isinstance(name, str) and name.isidentifier() else "input"
    return check_result(index, label, step, layout, strict)


def check_result(
    index: int, label: str, step: object, layout: Layout, strict: bool, also: str = "", sent: str = ""
) -> List[Violation]:
    """The oracles on what one step did, named by `label`: a hang, a crash, an exception that is not the error
    signal, a result that is not a string with a boolean is_error; then the canary or a host path of the case
    directory in the output (and `also`, what else the step said: a plug-in's result object), a host path the
    input (`sent`) held itself excepted; in strict mode a traceback or an exception class name."""
    found: List[Violation] = []
    output = getattr(step, "output", None)
    if getattr(step, "timed_out", False):
        found.append(Violation(f"hang:{label}", index, "no result within the step timeout"))
    if getattr(step, "crashed", False):
        found.append(Violation(f"crash:{label}", index, _first_line(getattr(step, "detail", ""))))
    if getattr(step, "raised", False):
        found.append(Violation(f"exception:{_exception_type(output)}", index, _first_line(str(output))))
    if not isinstance(output, str) or not isinstance(getattr(step, "is_error", None), bool):
        found.append(Violation("crash:result-type", index, "the result is not a string with a boolean is_error"))
        return found
    said = f"{output}\n{also}" if also else output
    if layout.canary in said:
        found.append(Violation(f"leak:canary:{label}", index, "canary bytes from outside the root in the output"))
    for host_path in layout.host_paths():
        if host_path in said and host_path not in sent:
            detail = "the host path of the case directory in the output"
            found.append(Violation(f"leak:host-path:{label}", index, detail))
            break
    if strict and not getattr(step, "raised", False):
        if TRACEBACK_MARK in said or _EXCEPTION_RE.search(said):
            detail = "a traceback or exception class name in the output"
            found.append(Violation(f"leak:traceback:{label}", index, detail))
    return found


def check_outside(layout: Layout) -> List[Violation]:
    changes = layout.outside_changes()
    if not changes:
        return []
    return [Violation("escape:outside-changed", None, "; ".join(changes[:5]))]


def check_outcome(index: int, command: object, expected: Outcome, is_error: bool) -> Optional[Violation]:
    if expected is Outcome.UNKNOWN:
        return None
    actual = Outcome.ERROR if is_error else Outcome.OK
    if actual is expected:
        return None
    name = command.get("command") if isinstance(command, dict) else None
    label = name if isinstance(name, str) and name.isidentifier() else "input"
    return Violation(
        f"diverge:{label}:{expected.value}-vs-{actual.value}",
        index,
        f"the model of the reference expects {expected.value}, the target gave {actual.value}",
    )


def check_tree(expected: Tree, actual: Tree) -> Optional[Violation]:
    if expected == actual:
        return None
    want, got = render_tree(expected), render_tree(actual)
    missing = sorted(set(want) - set(got))
    extra = sorted(set(got) - set(want))
    differ = sorted(key for key in set(want) & set(got) if want[key] != got[key])
    parts = []
    for title, keys in (("missing", missing), ("unexpected", extra), ("different", differ)):
        if keys:
            parts.append(f"{title}: {', '.join(keys[:5])}")
    return Violation("diverge:tree", None, "; ".join(parts))


def _exception_type(output: object) -> str:
    text = str(output)
    match = re.match(r"([A-Za-z_][\w.]*)\(", text)
    return match.group(1).rsplit(".", 1)[-1] if match else "unknown"


def _first_line(text: str) -> str:
    lines = [line for line in str(text).strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""
