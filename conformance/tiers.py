"""The verdict model's vocabulary: the class of every finding, the tier of every case, and the profiles.

A backend implementer asks two questions: is my backend safe, and does it behave as the documentation says.
Every finding therefore belongs to exactly one class, and the classes are never mixed in a figure:

  safety       anything outside the root read, changed, created or removed; the canary (its text or a name
               from the canary tree), the size of a file outside, the host path or a traceback in an output;
               a file the case does not name changed or lost (a link's target included); the root removed; a
               hang; a crash of the adapter; an output over its bound. Always counted, whatever the case.
  host-layout  what went wrong only because of a layout the suite planted on the host before the case and that
               the tool cannot make (a hard link, a FIFO, a file mode): a write through a planted hard link, a
               read of its outside text (by any command). A hang or a crash is safety even on a planted FIFO
               (D-VERDICT-HANG). Which effect gets which class: conformance/effects.py. Reported beside safety,
               never inside it, and counted by the profiles that hold an implementation to the reference's
               filesystem decisions.
  documented   behaviour or a string the documentation states (a `doc` case, which cites the sentence).
  reference    a decision of docs/spec-notes.md (a `reference` case, which names the D-* ID), byte-exact.
  hardening    a refusal that is safe but not required on this platform (a `hardening` case).
  signalling   the output says one thing and `is_error` another.
  robustness   the implementation raised an exception that is not its declared error signal, or showed
               error internals (an exception class name, an errno) without host details.
  cost         (the opt-in stress tier) time or memory out of proportion to the input.

Two tiers run only when asked, beside the cases: `stress` (--stress: cost, and a race against the tree) and
`deployment` (--deployment: several sessions over one store). Their findings are in the classes above: a
lost or duplicated update, a torn read and a change half applied by a call cut off are data loss, and one
tenant's text in another's output is a leak, so every deployment finding is a safety finding.

A case's own expectations (its steps and its final state) are judged in the class of its tier; the safety,
signalling and robustness checks apply to every case. Which of them decide a case's pass or fail, and so the
exit status, is the profile:

  documented  the documentation alone: documented `must` cases (behaviour it states, every reading it allows
              accepted). Its wording (`should`: it lets an implementation change its strings), the
              safeguards it only suggests ("Consider...") and the reference's decisions are shown, not gating.
              The default for every target but the reference.
  standard    documented (`must` and `should`) and reference, and host-layout findings. The reference's default.
  hardening   standard, and the hardening tier.

Safety, signalling and robustness always count; a safety finding fails the run whatever an expectations file says.
Each class is one row of CLASS_ROWS (its legend, colour, the profiles it gates under, whether it is unsafe, its
figure): a new class is a new row.
"""

from __future__ import annotations

import dataclasses
from typing import Dict, FrozenSet, List, Optional, Tuple

SAFETY = "safety"
HOST_LAYOUT = "host-layout"
DOCUMENTED = "documented"
REFERENCE = "reference"
HARDENING = "hardening"
SIGNALLING = "signalling"
ROBUSTNESS = "robustness"
COST = "cost"

PROFILE_NAMES: Tuple[str, ...] = ("documented", "standard", "hardening")
EVERY_PROFILE: FrozenSet[str] = frozenset(PROFILE_NAMES)
_REFERENCE_PROFILES: FrozenSet[str] = frozenset({"standard", "hardening"})


@dataclasses.dataclass(frozen=True)
class ClassFigure:
    """A class shown as its own figure, "N findings in M cases" (figures.py): its name and what it counts.
    `after` is the figure it follows; the figure's keys are the class's `slug` + `_findings` / `_cases`."""

    name: str
    meaning: str
    after: str = "signalling"


@dataclasses.dataclass(frozen=True)
class FindingClass:
    """One class of finding, all it carries in one row: every writer (the figures, the terminal summary, the JSON
    report and its schema, HTML, Markdown, JUnit) reads the rows, so that a new class is one row here.

    `gates` are the profiles under which a finding of the class fails its case whatever the case's tier; a
    tier's class (`tier`) gates instead where the profile counts the tier (`gates()`)."""

    name: str
    legend: str
    """What a finding of the class is, in one line (the legend of every page)."""
    colour: str
    """The colour the pages mark the class with (the legend's swatch)."""
    gates: FrozenSet[str] = frozenset()
    unsafe: bool = False
    """No expectation, baseline or profile can forgive a finding of the class: the run is not safe."""
    tier: bool = False
    figure: Optional[ClassFigure] = None

    @property
    def slug(self) -> str:
        return self.name.replace("-", "_")


CLASS_ROWS: List[FindingClass] = [
    FindingClass(
        SAFETY,
        "outside the root read, changed, created or removed; canary text, an outside name or size, a host path "
        "or a traceback shown; data lost; a hang, a crash or an unbounded output",
        "#c62828", EVERY_PROFILE, unsafe=True,
    ),
    FindingClass(
        HOST_LAYOUT,
        "only a layout the suite planted and the tool cannot make explains it (hard links, FIFOs)",
        "#8e24aa", _REFERENCE_PROFILES,
        figure=ClassFigure(
            "host layouts",
            "findings caused only by a layout the suite planted and the tool cannot make (hard links, FIFOs, modes)",
            after="safe",
        ),
    ),
    FindingClass(
        DOCUMENTED, "behaviour or a string the documentation states (the case cites the sentence)", "#1565c0",
        tier=True,
    ),
    FindingClass(REFERENCE, "a decision of the reference (docs/spec-notes.md), byte for byte", "#00838f", tier=True),
    FindingClass(HARDENING, "a safe refusal this platform does not require", "#558b2f", tier=True),
    FindingClass(SIGNALLING, "is_error says one thing and the output another", "#ef6c00", EVERY_PROFILE),
    FindingClass(
        ROBUSTNESS, "an exception that is not the implementation's declared error signal", "#6d4c41",
        EVERY_PROFILE,
        figure=ClassFigure("robustness", "exceptions that were not the implementation's declared error signal"),
    ),
    FindingClass(COST, "time or memory out of proportion to the input (the stress tier)", "#757575"),
]
"""The classes of finding, in the order every report shows them. A test may add a row (and take it away)."""


def class_rows() -> Tuple[FindingClass, ...]:
    return tuple(CLASS_ROWS)


def class_names() -> Tuple[str, ...]:
    return tuple(row.name for row in CLASS_ROWS)


def class_row(name: str) -> Optional[FindingClass]:
    return next((row for row in CLASS_ROWS if row.name == name), None)


def unsafe_classes() -> FrozenSet[str]:
    """The classes that make a run unsafe: no expectation, baseline or profile can forgive them."""
    return frozenset(row.name for row in CLASS_ROWS if row.unsafe)


CLASSES: Tuple[str, ...] = class_names()
"""The classes of the rows as they are written here (class_names() for rows added since)."""
TIERS: Tuple[str, ...] = (DOCUMENTED, REFERENCE, HARDENING)
UNSAFE: FrozenSet[str] = unsafe_classes()
"""The rows' unsafe classes as written here (unsafe_classes() for rows added since)."""

STRESS_TIER, DEPLOYMENT_TIER = "stress", "deployment"

MUST, SHOULD = "must", "should"

TIER_OF_BASIS: Dict[str, str] = {
    "doc": DOCUMENTED,
    "security": DOCUMENTED,  # the documentation's MUST on traversal (kept for cases written before 0.3.0)
    "reference": REFERENCE,
    "hardening": HARDENING,
}

# profile -> (the tiers whose findings fail a case, the levels of documented cases that gate); the classes that gate
# whatever the tier are the rows' `gates`
_PROFILES: Dict[str, Tuple[FrozenSet[str], FrozenSet[str]]] = {
    "documented": (frozenset({DOCUMENTED}), frozenset({MUST})),
    "standard": (frozenset({DOCUMENTED, REFERENCE}), frozenset({MUST, SHOULD})),
    "hardening": (frozenset({DOCUMENTED, REFERENCE, HARDENING}), frozenset({MUST, SHOULD})),
}
PROFILES: Dict[str, FrozenSet[str]] = {name: tiers for name, (tiers, _levels) in _PROFILES.items()}
"""The tiers each profile counts (its documented levels and the rows' classes: `gates`)."""

REFERENCE_PROFILE = "standard"
"""The profile the embedded reference is held to by default: it is its own decisions."""
OTHERS_PROFILE = "documented"
"""The profile every other target is judged by unless asked otherwise: the documentation, not our choices."""
DEFAULT_PROFILE = REFERENCE_PROFILE
"""The profile of a run that names none and has no target to choose by (library callers of the runner)."""

REFERENCE_SPECS: FrozenSet[str] = frozenset({"refmem", "reference"})


def default_profile(target: str) -> str:
    """The profile a run against `target` uses when none is asked for: the reference is held to its own
    decisions; anybody else's code to the documentation, with our decisions shown beside it."""
    name = target.split("+", 1)[0]
    return REFERENCE_PROFILE if name in REFERENCE_SPECS else OTHERS_PROFILE


def tier_of(basis: str) -> str:
    return TIER_OF_BASIS.get(basis, REFERENCE)


def counted(profile: str) -> FrozenSet[str]:
    """The finding classes that can fail a case under `profile` (see `gates` for the level rule)."""
    tiers, _levels = _PROFILES[profile]
    return frozenset(row.name for row in CLASS_ROWS if profile in row.gates) | tiers


def gates(profile: str, cls: str, tier: str, level: str) -> bool:
    """Whether a finding of class `cls`, in a case of `tier` and `level`, fails the case under `profile`."""
    tiers, levels = _PROFILES[profile]
    row = class_row(cls)
    if row is not None and profile in row.gates:
        return True
    if cls not in tiers:
        return False
    return cls != DOCUMENTED or level in levels


def gating_case(profile: str, tier: str, level: str) -> bool:
    """Whether a case's own expectations decide anything under `profile` (a case that only shows is not)."""
    tiers, levels = _PROFILES[profile]
    return tier in tiers and (tier != DOCUMENTED or level in levels)


def describe_profile(profile: str) -> str:
    """One line naming what gates under `profile`, for summaries and reports."""
    return {
        "documented": "the documentation's must cases gate; its wording and suggestions, the reference's "
        "decisions and hardening are shown",
        "standard": "documented cases (must and wording) and the reference's decisions gate; hardening is shown",
        "hardening": "documented, the reference's decisions and hardening all gate",
    }[profile]
