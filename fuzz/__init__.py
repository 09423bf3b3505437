"""Coverage-guided fuzzing of the reference handler and of any memory backend.

It stands on the harness (refmem_harness/: the byte reader, tokens, decoding, growth forms, the model, the
layouts, the oracles, finding files and the targets), shared with the conformance suite. One concept per module:

- `seeds`        one short input per growth form, for both engines' starting corpus
- `observe`      the root's tree as the model sees it
- `meter`        what one command cost: CPU (or wall) seconds, output characters, peak memory
- `cost`         the cost oracle: budgets linear in the input, calibrated on this machine
- `reach`        how a target is reached (the harness's `open_target`, plus aliases)
- `sdk_target`   a fallback factory for the Anthropic SDK's local memory tool
- `session`      one command sequence against one target in one fresh layout
- `minimise`     delta debugging over a failing command list
- `replay`       a finding (or a raw fuzzer input) run again
- `to_case`      a finding as a conformance case
- `harness`      the memory tool's harnesses: paths (the parser and walk), sequences (the reference or any target)
- `plugin`       what a plug-in for other tools brings; `openclaw` the OpenClaw plug-in, `openclaw_cli` its command
- `harnesses`    every harness and plug-in by name
- `engine_*`     atheris (libFuzzer) and the labelled plain random fallback
- `robustness`   the content policy, `refmem serve` and `refmem exec` fuzzed for crashes
- `libfuzzer_entry`  the harnesses for OSS-Fuzz / ClusterFuzzLite (fuzz/oss-fuzz/)
- `printed`      outside text as the command lines print it
- `cli`          `refmem-fuzz`
"""
