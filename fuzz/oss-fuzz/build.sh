#!/bin/bash -eu
# Builds the refmem fuzzers for OSS-Fuzz or ClusterFuzzLite (run by the base-builder-python image).
# Each fuzzer is one of fuzz/harness.py's harnesses behind fuzz/libfuzzer_entry.py.

cd "$SRC/refmem"
pip3 install .

for fuzzer in fuzz/oss-fuzz/fuzz_*.py; do
  # --paths: the fuzz and conformance packages are imported from the source tree.
  compile_python_fuzzer "$fuzzer" --paths "$SRC/refmem"
done

# Seed corpus and dictionary: none are needed (the decoder carries its own dictionary of names and
# the conformance payloads); libFuzzer starts from the empty input.
