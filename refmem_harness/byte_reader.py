"""Turn an opaque byte string into small, bounded decisions.

Every decision consumes a fixed, small number of bytes, so a mutation of one byte changes one
decision and the fuzzer can climb towards interesting inputs. When the bytes run out every decision
is its smallest value, so short inputs decode to short, valid command lists.
"""

from __future__ import annotations

from typing import Sequence, TypeVar

T = TypeVar("T")


class ByteReader:
    def __init__(self, data: bytes) -> None:
        self._data = data
        self._pos = 0

    @property
    def exhausted(self) -> bool:
        return self._pos >= len(self._data)

    def byte(self) -> int:
        if self._pos >= len(self._data):
            return 0
        value = self._data[self._pos]
        self._pos += 1
        return value

    def below(self, bound: int) -> int:
        """An integer in [0, bound); bounds above 256 take two bytes."""
        if bound <= 1:
            return 0
        if bound <= 256:
            return self.byte() % bound
        return ((self.byte() << 8) | self.byte()) % bound

    def chance(self, numerator: int, denominator: int) -> bool:
        """True with roughly numerator/denominator probability; False when the bytes ran out."""
        return self.below(denominator) >= denominator - numerator

    def pick(self, items: Sequence[T]) -> T:
        return items[self.below(len(items))]

    def raw(self, max_len: int) -> bytes:
        length = self.below(max_len + 1)
        chunk = self._data[self._pos : self._pos + length]
        self._pos += len(chunk)
        return chunk

    def text(self, max_len: int) -> str:
        """Raw bytes as text, lenient: invalid UTF-8 becomes lone surrogates sometimes, U+FFFD else."""
        chunk = self.raw(max_len)
        if self.chance(1, 8):
            return chunk.decode("utf-8", "surrogateescape")
        return chunk.decode("utf-8", "replace")
