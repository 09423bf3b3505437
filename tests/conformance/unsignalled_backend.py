"""The careful backend answering in plain strings with no SIGNALLING declaration (its own module, so that the
declaration of the module it comes from does not apply): every error reads as a success to the runner."""

from __future__ import annotations

from pathlib import Path

if __package__:
    from .property_backends import Unsignalled
else:  # imported as a top-level module, with this folder on sys.path
    from property_backends import Unsignalled


def make(root: Path) -> Unsignalled:
    return Unsignalled(root)
