"""Targets for implementations other than the reference: Python callables and protocol adapters."""
