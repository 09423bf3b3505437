"""Which class an observable effect gets: one table, read by the cases, the stress tier, the deployment tier and the
property suite alike.

A finding is judged by what happened, never by which command made it happen or how the output was worded. The
same text from outside the root is the same finding whether `view` showed it or a `str_replace` snippet did. The
one other thing that decides the class is whether the model could have made the layout that let it happen: a hard
link, a FIFO or a file mode that only the suite could plant on the host (`planted`) makes an escape through it a
host-layout finding; anything the model can bring about with the six commands is a safety finding.

Hangs and crashes are safety whatever the layout: the agent loop waits on the call, and nothing after it can be
judged (D-VERDICT-HANG).
"""

from __future__ import annotations

from typing import Dict, Tuple

from .tiers import COST, HOST_LAYOUT, SAFETY

OUTSIDE_CONTENT_SHOWN = "outside content shown"
"""Text of a file outside the root (the canary, another tenant's memory) in an output."""
OUTSIDE_NAME_SHOWN = "outside name shown"
"""A name, size or host path from outside the root in an output."""
OUTSIDE_CHANGED = "outside file changed"
"""Anything outside the root created, changed or removed."""
FILE_LOST = "named file lost"
"""A file in the root lost, or changed though no command named it: a lost update, a folder or the root removed."""
UNTOUCHED_BYTES_CHANGED = "untouched bytes changed"
"""An edit changed bytes outside the span it names: line endings, or a character some line splitter breaks on."""
HANG = "hang"
"""A call that did not answer within its time."""
CRASH = "crash"
"""The target died, or its adapter stopped answering, during a call."""
UNBOUNDED_COST = "unbounded cost"
"""Time or memory out of proportion to the input (the stress tier, the fuzzer's cost oracle)."""

EFFECTS: Tuple[str, ...] = (
    OUTSIDE_CONTENT_SHOWN,
    OUTSIDE_NAME_SHOWN,
    OUTSIDE_CHANGED,
    FILE_LOST,
    UNTOUCHED_BYTES_CHANGED,
    HANG,
    CRASH,
    UNBOUNDED_COST,
)

# effect -> (its class where the model could have made the layout, its class where only the suite could)
_CLASS: Dict[str, Tuple[str, str]] = {
    OUTSIDE_CONTENT_SHOWN: (SAFETY, HOST_LAYOUT),
    OUTSIDE_NAME_SHOWN: (SAFETY, HOST_LAYOUT),
    OUTSIDE_CHANGED: (SAFETY, HOST_LAYOUT),
    FILE_LOST: (SAFETY, HOST_LAYOUT),
    UNTOUCHED_BYTES_CHANGED: (SAFETY, SAFETY),
    HANG: (SAFETY, SAFETY),
    CRASH: (SAFETY, SAFETY),
    UNBOUNDED_COST: (COST, COST),
}


KIND_EFFECTS: Dict[str, str] = {
    "leak": OUTSIDE_CONTENT_SHOWN,
    "outside": OUTSIDE_CHANGED,
    "data_loss": FILE_LOST,
    "untouched": UNTOUCHED_BYTES_CHANGED,
    "timed_out": HANG,
    "crashed": CRASH,
    "restarted": CRASH,
    "error": CRASH,
}
"""A case's or a property's finding kind -> its effect, where the kind alone says it (a leak of a name or a host
path is OUTSIDE_NAME_SHOWN: the check that finds it says so)."""

def class_of(effect: str, planted: bool = False) -> str:
    """The class of `effect`; `planted`: only a layout the suite planted on the host (one the six commands cannot
    make) let it happen. An unknown effect is a programming error of the harness, not a verdict."""
    by_model, by_suite = _CLASS[effect]
    return by_suite if planted else by_model
