"""The verdict model's vocabulary: the class of every finding, the tier of every case, and the profiles.

A backend implementer asks two questions: is my backend safe, and does it behave as the documentation says.
Every finding therefore belongs to exactly one class, and the classes are never mixed in a figure:

  safety      anything outside the root read, changed, created or removed; the canary, the host path or a
              traceback in an output; files the case does not touch changed or lost; the root removed;
              a hang; a crash of the adapter; an output over its bound. Always counted, whatever the case.
  documented  behaviour or a string the documentation states (a `doc` case, which cites the sentence).
  reference   a decision of docs/spec-notes.md (a `reference` case, which names the D-* ID), byte-exact.
  hardening   a refusal that is safe but not required on this platform (a `hardening` case).
  signalling  the output says one thing and `is_error` another.
  robustness  the implementation raised an exception that is not its declared error signal, or showed
              error internals (an exception class name, an errno) without host details.
  cost        (the opt-in stress tier) time or memory out of proportion to the input.

A case's own expectations (its steps and its final state) are judged in the class of its tier; the safety,
signalling and robustness checks apply to every case. Which tiers decide a case's pass or fail (and the
exit status) is the profile: `standard` counts documented and reference, `hardening` adds hardening,
`documented` counts the documented tier alone. Safety, signalling and robustness always count.
"""

from __future__ import annotations

from typing import Dict, FrozenSet, Tuple

SAFETY = "safety"
DOCUMENTED = "documented"
REFERENCE = "reference"
HARDENING = "hardening"
SIGNALLING = "signalling"
ROBUSTNESS = "robustness"
COST = "cost"

CLASSES: Tuple[str, ...] = (SAFETY, DOCUMENTED, REFERENCE, HARDENING, SIGNALLING, ROBUSTNESS, COST)
TIERS: Tuple[str, ...] = (DOCUMENTED, REFERENCE, HARDENING)
ALWAYS_COUNTED: FrozenSet[str] = frozenset({SAFETY, SIGNALLING, ROBUSTNESS})

TIER_OF_BASIS: Dict[str, str] = {
    "doc": DOCUMENTED,
    "security": DOCUMENTED,  # the documentation's MUST on traversal (kept for cases written before 0.3.0)
    "reference": REFERENCE,
    "hardening": HARDENING,
}

PROFILES: Dict[str, FrozenSet[str]] = {
    "standard": frozenset({DOCUMENTED, REFERENCE}),
    "hardening": frozenset({DOCUMENTED, REFERENCE, HARDENING}),
    "documented": frozenset({DOCUMENTED}),
}
DEFAULT_PROFILE = "standard"


def tier_of(basis: str) -> str:
    return TIER_OF_BASIS.get(basis, REFERENCE)


def counted(profile: str) -> FrozenSet[str]:
    """The finding classes that fail a case under `profile`."""
    return ALWAYS_COUNTED | PROFILES[profile]
