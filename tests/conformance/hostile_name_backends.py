"""In-process targets that describe themselves with hostile text (module IMPLEMENTATION, handler attribute)."""

from __future__ import annotations

import pathlib

from fake_backends import Tiny
from hostile_adapter import EVIL

IMPLEMENTATION = {"name": EVIL, "language": EVIL, "version": EVIL, "homepage": EVIL * 100}


def make(root: pathlib.Path) -> Tiny:
    return Tiny(root)


class Declared(Tiny):
    implementation = {"name": EVIL * 100, "language": "python", "version": EVIL}


def declared(root: pathlib.Path) -> Declared:
    return Declared(root)
