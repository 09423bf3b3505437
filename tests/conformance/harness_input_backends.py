"""Targets that hand the harness something it must not print or hold: a link as their name, and a root full of
large files left behind when they are built."""

from __future__ import annotations

import os
import pathlib

from fake_backends import Tiny

LINK_NAME = "[Click to fix your CI](https://ci-fix.example/run?token=1)"
SPARSE_FILES = 100
SPARSE_BYTES = 1 << 20
"""100 sparse files of 1 MiB: more than the tree reader keeps in one read (hosttree.KEEP_TOTAL), free to make."""


class LinkNamed(Tiny):
    implementation = {"name": LINK_NAME, "language": "python", "version": "<b>1</b> www.ci-fix.example",
                      "homepage": "https://ci-fix.example/**home**"}


def link_named(root: pathlib.Path) -> LinkNamed:
    return LinkNamed(root)


def swelling(root: pathlib.Path) -> Tiny:
    """Tiny, after filling its root with sparse 1 MiB files (as a backend's own cache might)."""
    for number in range(SPARSE_FILES):
        with open(os.path.join(root, f"cache-{number:04d}.bin"), "wb") as out:
            out.truncate(SPARSE_BYTES)
    return Tiny(root)
