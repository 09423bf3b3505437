#!/bin/bash -eu
# Builds refmem's fuzzers for ClusterFuzzLite (run inside base-builder-python, from $SRC/refmem).
#
# Each .clusterfuzzlite/fuzz_*.py is a small entry script over a harness that already exists in
# fuzz/ (fuzz/libfuzzer_entry.py for the command-sequence and path harnesses, fuzz/robustness.py
# for the content policy, `refmem serve` and `refmem exec`). compile_python_fuzzer bundles each
# one with pyinstaller into $OUT. A broken oracle raises, so ClusterFuzzLite records the input as
# a crash; `refmem-fuzz replay CRASH_FILE --raw [--harness paths]` replays the sequence and paths ones,
# `python .clusterfuzzlite/fuzz_NAME.py CRASH_FILE` any of them.

cd "$SRC/refmem"
pip3 install .

# pyinstaller follows import statements only. Two things it cannot see are named:
# - the reference target's module, which the runner imports by name when `--target refmem` is opened
#   (refmem_harness/targets.py); without it every sequence and paths fuzzer stops at start-up;
# - the conformance suite's hostile path payloads, a data file the fuzzer's dictionary adds when it is
#   there (refmem_harness/tokens.py looks in the suite's folder beside the harness, refmem_conformance).
hidden="refmem_harness.reference_target"
payloads="conformance/security/payloads.json:refmem_conformance/security"

for fuzzer in .clusterfuzzlite/fuzz_*.py; do
  compile_python_fuzzer "$fuzzer" --paths .clusterfuzzlite --hidden-import "$hidden" --add-data "$payloads"
done
