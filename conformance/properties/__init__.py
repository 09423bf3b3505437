"""The property-based suite: random command sequences against any target, shrunk to the shortest that fails.

    refmem-conformance --properties 200 --target SPEC          # every class the profile judges, 200 sequences each
    refmem-conformance --replay FINDING.json --target SPEC     # one sequence again, every check of the profile
    pytest --memory-target SPEC --memory-properties             # one test per class: memory-properties::safety ...

Sequences are drawn from the fuzzer's vocabulary and model (vocabulary.py), run in the conformance layout and
judged after every step (judge.py; documented.py says where the documentation settles a command), searched and
shrunk by hypothesis one class at a time (search.py, the only module that needs hypothesis), and a failure is
written as the fuzzer's finding file and shown with the commands that replay it (report.py, replay.py).
"""

DEFAULT_EXAMPLES = 200
"""Sequences hypothesis generates for one class unless asked otherwise (`--properties N`, `--memory-examples N`)."""
DEFAULT_SEED = 0
"""The seed unless asked otherwise: the same seed, the same sequences, the same verdict."""
STEPS = 12
"""Commands a sequence has at most (hypothesis runs nearly all of them while it searches)."""
