"""The model's path string to a canonical tuple of names, or an error naming the rule broken.

Parsing is pure and strict: every location has exactly one accepted spelling (plus one optional
trailing slash), and every spelling that could mean something else to some filesystem, decoder or
normaliser along the way is refused rather than interpreted. The walk in `kernel.py` then only ever sees
plain names, never separators, dots or escapes.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Callable, List, NamedTuple, Tuple

from .limits import DEFAULT_LIMITS, Limits
from .messages import (  # the rule sentences a refused path names: every phrase lives in messages.py
    RULE_BACKSLASH,
    RULE_CONTROL,
    RULE_DEVICE,
    RULE_DOTS,
    RULE_EMPTY,
    RULE_NFKC,
    RULE_PERCENT,
    RULE_PREFIX,
    RULE_RESERVED,
    RULE_TRAILING,
    RULE_WINDOWS_CHARS,
    is_unsafe_char,
    rule_name_too_long,
    rule_too_deep,
    rule_too_long,
)

ROOT = "/memories"
RESERVED_PREFIX = ".refmem"


class PathError(ValueError):
    """A path string broke one of the rules; `rule` is the sentence shown to the model."""

    def __init__(self, rule: str) -> None:
        super().__init__(rule)
        self.rule = rule


class VirtualPath(NamedTuple):
    parts: Tuple[str, ...]
    trailing_slash: bool = False

    @property
    def canonical(self) -> str:
        return "/".join((ROOT,) + self.parts)

    @property
    def is_root(self) -> bool:
        return not self.parts

    @property
    def parent(self) -> VirtualPath:
        return VirtualPath(self.parts[:-1])

    @property
    def name(self) -> str:
        return self.parts[-1] if self.parts else ""

    def is_within(self, other: VirtualPath) -> bool:
        """True when self is other or lies below it."""
        return self.parts[: len(other.parts)] == other.parts



_PERCENT_BYTE = re.compile(r"%([0-9A-Fa-f]{2})")
_PERCENT_U = re.compile(r"%[uU]([0-9A-Fa-f]{4})")
_WINDOWS_CHARS = frozenset('<>:"|?*')
_DEVICE_NAMES = frozenset(
    ["CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"]
    + [f"{stem}{n}" for stem in ("COM", "LPT") for n in "123456789\u00b9\u00b2\u00b3"]
)
_MAX_DECODE_ROUNDS = 8


def _percent_decode_once(text: str) -> str:
    """Decode %uNNNN and %XX the way lenient servers do: bytes as UTF-8, invalid ones as Latin-1.

    Decoding invalid UTF-8 leniently is deliberate: an overlong `%c0%ae` must surface as something
    suspicious rather than vanish, and the overlong check below looks at the raw bytes anyway.
    """
    text = _PERCENT_U.sub(lambda m: chr(int(m.group(1), 16)), text)

    def bytes_run(match: re.Match[str]) -> str:
        raw = bytes(int(h, 16) for h in re.findall(r"%([0-9A-Fa-f]{2})", match.group(0)))
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return raw.decode("latin-1")

    return re.sub(r"(?:%[0-9A-Fa-f]{2})+", bytes_run, text)


def _has_overlong_utf8(text: str) -> bool:
    """Overlong encodings (`%c0%ae` = "."): lead bytes C0/C1, or E0/F0 followed by a too-small byte."""
    raw = [int(h, 16) for h in _PERCENT_BYTE.findall(text)]
    for index, byte in enumerate(raw):
        nxt = raw[index + 1] if index + 1 < len(raw) else 0x80
        if byte in (0xC0, 0xC1) or (byte == 0xE0 and nxt < 0xA0) or (byte == 0xF0 and nxt < 0x90):
            return True
    return False


def _dangerous_text(text: str) -> bool:
    """Would this text, read as a name, be a separator, a dot segment or carry a control?"""
    if text in (".", "..") or "/" in text or "\\" in text:
        return True
    return any(is_unsafe_char(char) for char in text)


def _percent_hides_something(name: str) -> bool:
    if "%" not in name:
        return False
    current = name
    for _ in range(_MAX_DECODE_ROUNDS):
        if _has_overlong_utf8(current):
            return True
        decoded = _percent_decode_once(current)
        if decoded == current:
            return False
        if _dangerous_text(decoded) or _dangerous_text(unicodedata.normalize("NFKC", decoded)):
            return True
        current = decoded
    return True  # still decoding after 8 rounds: refuse rather than guess


# Slashes that NFKC leaves alone but that read as a separator to a person or a lenient decoder.
LOOKALIKE_SEPARATORS = frozenset("\u2044\u2215\u2216\u2571\u2572\u29f5\u29f8\u29f9\u3033\u3035")


def _nfkc_hides_something(name: str) -> bool:
    if any(char in LOOKALIKE_SEPARATORS for char in name):
        return True
    folded = unicodedata.normalize("NFKC", name)
    if folded == name:
        return False
    return folded in (".", "..") or "/" in folded or "\\" in folded


def _is_device_name(name: str) -> bool:
    stem = name.split(".", 1)[0].rstrip(" ").upper()
    return stem in _DEVICE_NAMES


# Each name rule: (rule sentence, predicate that is True when the name breaks it). Order matters:
# the first broken rule is reported, and the cheap structural rules come first.
NameRule = Tuple[str, Callable[[str], bool]]
NAME_RULES: List[NameRule] = [
    (RULE_DOTS, lambda name: name in (".", "..")),
    (RULE_BACKSLASH, lambda name: "\\" in name),
    (RULE_CONTROL, lambda name: any(is_unsafe_char(char) for char in name)),
    (RULE_PERCENT, _percent_hides_something),
    (RULE_NFKC, _nfkc_hides_something),
    (RULE_TRAILING, lambda name: name[-1] in ". "),
    (RULE_WINDOWS_CHARS, lambda name: any(char in _WINDOWS_CHARS for char in name)),
    (RULE_DEVICE, _is_device_name),
    (RULE_RESERVED, lambda name: name.lower().startswith(RESERVED_PREFIX)),
]


# Plain ASCII names (the common case) cannot break the escape, control, Unicode or character rules,
# so only the rules that can still apply are run on them; the outcome is the same, only faster.
_PLAIN_NAME = re.compile(r"[A-Za-z0-9_.\- ]+")
_PLAIN_NAME_RULES: List[NameRule] = [
    rule for rule in NAME_RULES if rule[0] in (RULE_DOTS, RULE_TRAILING, RULE_DEVICE, RULE_RESERVED)
]


def _first_broken_rule(name: str, limits: Limits) -> int:
    """Index into NAME_RULE_ORDER of the first rule `name` breaks, or len(NAME_RULE_ORDER) if none."""
    if name == "":
        return 0
    rules = _PLAIN_NAME_RULES if _PLAIN_NAME.fullmatch(name) else NAME_RULES
    for rule, broken in rules:
        if broken(name):
            return NAME_RULE_ORDER.index(rule)
    if len(name) > limits.max_name_bytes // 4 and len(name.encode("utf-8", "surrogatepass")) > limits.max_name_bytes:
        return len(NAME_RULES) + 1
    return len(NAME_RULES) + 2


# The order rules are reported in: the first rule that ANY name breaks wins, whatever the name's place.
NAME_RULE_ORDER: List[str] = [RULE_EMPTY] + [rule for rule, _ in NAME_RULES] + ["name length"]


def is_addressable(name: str, limits: Limits = DEFAULT_LIMITS) -> bool:
    """Could a path ending in this name (as found on disk) be parsed? Listings show only these.

    Pure; a handler remembers the answers per name (its limits are fixed), so nothing is cached here.
    """
    return _first_broken_rule(name, limits) == len(NAME_RULE_ORDER)


def parse_path(raw: str, limits: Limits = DEFAULT_LIMITS) -> VirtualPath:
    """Parse a model-supplied path; raise PathError with the first rule it breaks."""
    if raw == ROOT or raw == ROOT + "/":
        return VirtualPath((), raw.endswith("/"))
    if not raw.startswith(ROOT + "/"):
        raise PathError(RULE_PREFIX)
    rest = raw[len(ROOT) + 1 :]
    trailing_slash = rest.endswith("/")
    if trailing_slash:
        rest = rest[:-1]
    names = rest.split("/")
    first = min(_first_broken_rule(name, limits) for name in names)
    if first < len(NAME_RULE_ORDER) - 1:
        raise PathError(NAME_RULE_ORDER[first])
    if first == len(NAME_RULE_ORDER) - 1:
        raise PathError(rule_name_too_long(limits.max_name_bytes))
    if len(raw.encode("utf-8")) > limits.max_path_bytes:
        raise PathError(rule_too_long(limits.max_path_bytes))
    if len(names) > limits.max_depth:
        raise PathError(rule_too_deep(limits.max_depth))
    return VirtualPath(tuple(names), trailing_slash)
