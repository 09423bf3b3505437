"""Every bound the handler enforces, in one place.

A bound that lives in one object can be documented once, tested once and tuned by an embedding
application without hunting through the code for constants.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Limits:
    """Bounds on what one command may read, write or return.

    The defaults suit a memory directory that a model reads into its context window: results stay
    well under typical tool-result budgets, and files stay small enough to view in a few pages.
    """

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

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"Limits.{field.name} must be a positive integer")
        if self.max_name_bytes > 255:
            raise ValueError("Limits.max_name_bytes cannot exceed 255 (NAME_MAX)")


DEFAULT_LIMITS = Limits()
