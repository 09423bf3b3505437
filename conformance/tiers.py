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
"""

from __future__ import annotations

from typing import Dict, FrozenSet, Tuple

SAFETY = "safety"
HOST_LAYOUT = "host-layout"
DOCUMENTED = "documented"
REFERENCE = "reference"
HARDENING = "hardening"
SIGNALLING = "signalling"
ROBUSTNESS = "robustness"
COST = "cost"

CLASSES: Tuple[str, ...] = (SAFETY, HOST_LAYOUT, DOCUMENTED, REFERENCE, HARDENING, SIGNALLING, ROBUSTNESS, COST)
TIERS: Tuple[str, ...] = (DOCUMENTED, REFERENCE, HARDENING)
ALWAYS_COUNTED: FrozenSet[str] = frozenset({SAFETY, SIGNALLING, ROBUSTNESS})
UNSAFE: FrozenSet[str] = frozenset({SAFETY})
"""The classes that make a run unsafe: no expectation, baseline or profile can forgive them."""

STRESS_TIER, DEPLOYMENT_TIER = "stress", "deployment"

MUST, SHOULD = "must", "should"

TIER_OF_BASIS: Dict[str, str] = {
    "doc": DOCUMENTED,
    "security": DOCUMENTED,  # the documentation's MUST on traversal (kept for cases written before 0.3.0)
    "reference": REFERENCE,
    "hardening": HARDENING,
}

# profile -> (the tiers whose findings fail a case, the levels of documented cases that gate, more classes counted)
_PROFILES: Dict[str, Tuple[FrozenSet[str], FrozenSet[str], FrozenSet[str]]] = {
    "documented": (frozenset({DOCUMENTED}), frozenset({MUST}), frozenset()),
    "standard": (frozenset({DOCUMENTED, REFERENCE}), frozenset({MUST, SHOULD}), frozenset({HOST_LAYOUT})),
    "hardening": (frozenset({DOCUMENTED, REFERENCE, HARDENING}), frozenset({MUST, SHOULD}), frozenset({HOST_LAYOUT})),
}
PROFILES: Dict[str, FrozenSet[str]] = {name: tiers for name, (tiers, _levels, _more) in _PROFILES.items()}
"""The tiers each profile counts (its documented levels and extra classes: `gates`)."""

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
    tiers, _levels, more = _PROFILES[profile]
    return ALWAYS_COUNTED | tiers | more


def gates(profile: str, cls: str, tier: str, level: str) -> bool:
    """Whether a finding of class `cls`, in a case of `tier` and `level`, fails the case under `profile`."""
    tiers, levels, more = _PROFILES[profile]
    if cls in ALWAYS_COUNTED or cls in more:
        return True
    if cls not in tiers:
        return False
    return cls != DOCUMENTED or level in levels


def gating_case(profile: str, tier: str, level: str) -> bool:
    """Whether a case's own expectations decide anything under `profile` (a case that only shows is not)."""
    tiers, levels, _more = _PROFILES[profile]
    return tier in tiers and (tier != DOCUMENTED or level in levels)


def describe_profile(profile: str) -> str:
    """One line naming what gates under `profile`, for summaries and reports."""
    return {
        "documented": "the documentation's must cases gate; its wording and suggestions, the reference's "
        "decisions and hardening are shown",
        "standard": "documented cases (must and wording) and the reference's decisions gate; hardening is shown",
        "hardening": "documented, the reference's decisions and hardening all gate",
    }[profile]
