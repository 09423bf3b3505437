"""Side-by-side benchmarks of refmem, the Anthropic SDK's local memory tool and a raw `os` floor."""
