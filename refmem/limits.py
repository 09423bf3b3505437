"""Every bound the handler enforces, in one place.

A bound that lives in one object can be documented once, tested once and tuned by an embedding
application without hunting through the code for constants.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar, Dict, Mapping, Tuple, Type, TypeVar, Union, cast

from .messages import LIMIT_CEILING, LIMIT_FLOOR_WORDS, LIMIT_POSITIVE, LIMIT_TYPE

B = TypeVar("B", bound="Bounds")


@dataclasses.dataclass(frozen=True)
class Bounds:
    """The shape of a table of bounds (`Limits`, `refmem.openclaw.OpenClawLimits`): a frozen dataclass of
    integer fields, checked once when it is made, and made as well from a mapping of its fields (the
    plain-data form a `python:` factory, `refmem serve` and an embedding application's settings pass).

    A table says its bounds as data: `FLOOR`, the least value of every field (the type check's message
    names it: "positive" or "non-negative"); `POSITIVE`, the fields that must be at least 1 under a
    floor of 0; `CEILINGS`, the fields with a most, and why. `OWNER` names the table in the messages
    (refmem/messages.py), whatever a subclass is called.
    """

    OWNER: ClassVar[str] = "Bounds"
    FLOOR: ClassVar[int] = 1
    POSITIVE: ClassVar[Tuple[str, ...]] = ()
    CEILINGS: ClassVar[Dict[str, Tuple[int, str]]] = {}

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if not isinstance(value, int) or isinstance(value, bool) or value < self.FLOOR:
                floor = LIMIT_FLOOR_WORDS[self.FLOOR]
                raise ValueError(LIMIT_TYPE.format(owner=self.OWNER, name=field.name, floor=floor))
        for name in self.POSITIVE:
            if getattr(self, name) < 1:
                raise ValueError(LIMIT_POSITIVE.format(owner=self.OWNER, name=name))
        for name, (most, why) in self.CEILINGS.items():
            if getattr(self, name) > most:
                raise ValueError(LIMIT_CEILING.format(owner=self.OWNER, name=name, most=most, why=why))

    @classmethod
    def from_mapping(cls: Type[B], values: Union[B, Mapping[str, int]]) -> B:
        """The table itself, or one made from a mapping of its fields (the others keep their defaults); an
        unknown field is a TypeError, a bad value a ValueError, as when the table is made directly."""
        if isinstance(values, cls):
            return values
        return cls(**dict(cast(Mapping[str, int], values)))


@dataclasses.dataclass(frozen=True)
class Limits(Bounds):
    """Bounds on what one command may read, write or return.

    The defaults suit a memory directory that a model reads into its context window: results stay
    well under typical tool-result budgets, and files stay small enough to view in a few pages.
    """

    OWNER = "Limits"
    CEILINGS = {"max_name_bytes": (255, "NAME_MAX")}

    max_file_bytes: int = 1_048_576
    """Largest file a write (create, str_replace, insert) may produce, in UTF-8 bytes."""

    max_view_chars: int = 60_000
    """Most characters of numbered lines one file view returns; longer views are paginated."""

    max_listing_entries: int = 1_000
    """Most entries one directory listing shows; each folder is read only until this is met."""

    max_name_bytes: int = 255
    """Longest single name, in UTF-8 bytes (NAME_MAX on Linux and macOS)."""

    max_path_bytes: int = 1_024
    """Longest virtual path, `/memories` included, in UTF-8 bytes."""

    max_depth: int = 16
    """Most names below `/memories` in one path."""

    max_lines: int = 999_999
    """Most lines a viewable file may have (the documented limit)."""

    max_echo_chars: int = 1_000
    """Longest model-supplied value echoed back in a message before it is cut."""

    max_listing_depth: int = 2
    """Levels below the listed folder that a listing shows (the documented 2)."""

    max_listed_lines: int = 100
    """Most line numbers a "multiple occurrences" error lists before "and N more" (D-STR-LINES)."""


DEFAULT_LIMITS = Limits()


@dataclasses.dataclass(frozen=True)
class HistoryLimits(Bounds):
    """How much history a database store keeps (D-STORE-HISTORY-RETENTION): the deployer's bounds, given to the
    store's constructor (`SqliteStore(path, history=...)`, a `HistoryLimits` or a mapping of its fields).

    When a write passes either bound, the oldest versions go first, in the write's own transaction.
    """

    OWNER = "HistoryLimits"

    versions_per_file: int = 20
    """Most versions kept of one path; the oldest beyond them are dropped when a new one is kept."""

    bytes_per_tenant: int = 64 * 1024 * 1024
    """Most bytes of versions one tenant keeps, all paths together; past it the tenant's oldest go first. A
    version larger than this on its own is not kept."""

    max_actor_chars: int = 200
    """Longest actor name (who made a change) a store accepts from its deployer."""


DEFAULT_HISTORY_LIMITS = HistoryLimits()
