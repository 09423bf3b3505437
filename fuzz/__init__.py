"""Coverage-guided fuzzing of the reference handler and of any memory backend.

One concept per module:

- `byte_reader`  bytes -> small, bounded decisions
- `tokens`       the dictionary of path names, texts and hostile payload seeds
- `decode`       bytes -> a list of tool inputs (the structured input)
- `grow`         growth forms: large repetitive texts, deep trees, many files, nested and huge values
- `seeds`        one short input per growth form, for both engines' starting corpus
- `model`        a pure in-memory model of the reference semantics (differential oracle)
- `layout`       the case directory: root, hostile fixtures, canary tree, snapshots
- `observe`      the root's tree as the model sees it
- `oracles`      what must hold after every step and every sequence
- `meter`        what one command cost: CPU (or wall) seconds, output characters, peak memory
- `cost`         the cost oracle: budgets linear in the input, calibrated on this machine
- `reach`        how a target is reached (the conformance runner's `open_target`, plus aliases)
- `sdk_target`   a fallback factory for the Anthropic SDK's local memory tool
- `session`      one command sequence against one target in one fresh layout
- `finding`      finding files (JSON), host-path scrubbing
- `minimise`     delta debugging over a failing command list
- `replay`       a finding (or a raw fuzzer input) run again
- `to_case`      a finding as a conformance case
- `harness`      the harnesses: paths (the parser and walk), sequences (the reference or any target)
- `engine_*`     atheris (libFuzzer) and the labelled plain random fallback
- `libfuzzer_entry`  the harnesses for OSS-Fuzz / ClusterFuzzLite (fuzz/oss-fuzz/)
- `cli`          `refmem-fuzz`
"""
