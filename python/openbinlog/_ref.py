"""Refs: the language-neutral position of a record, ``(log, offset, index)``."""

from __future__ import annotations

import re
from typing import NamedTuple

from construct import ConstructError

from ._format import RefBinary
from .errors import InvalidRefError

_TEXT = re.compile(r"([0-9]{1,10}):([0-9]{1,20}):([0-9]{1,20})")  # whole text, ASCII digits only
_WHITE_SPACE = " \t\r\n"  # the only white space around a text ref (spec 10.6)
_U4 = 2**32
_U8 = 2**64


class _RefFields(NamedTuple):
    log: int
    offset: int
    index: int  # type: ignore[assignment]  # the field shadows tuple.index, which a ref has no use for


class Ref(_RefFields):
    """Where a record lives: its segment's log number, its byte offset, its index.

    The text form is ``LOG:OFFSET:INDEX`` in decimal (``1:256:1``); the binary
    form is 20 bytes, big-endian ``u4 u8 u8``. A ref is checked when a reader
    resumes from it: the record at that offset must carry that index.

    A named tuple rather than a frozen dataclass: a writer returns one per
    append, and a buffered append costs less than building a frozen dataclass.
    Writers build theirs with ``tuple.__new__(Ref, fields)``, skipping the range
    check their fields cannot fail.
    """

    __slots__ = ()

    def __new__(cls, log: int, offset: int, index: int) -> Ref:
        if not (0 < log < _U4 and 0 <= offset < _U8 and 0 <= index < _U8):
            raise InvalidRefError(f"ref fields out of range: {log}:{offset}:{index}")
        return super().__new__(cls, log, offset, index)

    def __str__(self) -> str:
        return f"{self.log}:{self.offset}:{self.index}"

    @classmethod
    def parse(cls, text: str) -> Ref:
        match = _TEXT.fullmatch(text.strip(_WHITE_SPACE))
        if match is None:
            raise InvalidRefError(f"not a ref (expected LOG:OFFSET:INDEX): {text!r}")
        return cls(int(match[1]), int(match[2]), int(match[3]))

    def to_bytes(self) -> bytes:
        return bytes(RefBinary.build({"log_number": self.log, "offset": self.offset, "index": self.index}))

    @classmethod
    def from_bytes(cls, data: bytes) -> Ref:
        if len(data) != RefBinary.sizeof():
            raise InvalidRefError(f"a binary ref is {RefBinary.sizeof()} bytes, got {len(data)}")
        try:
            fields = RefBinary.parse(data)
        except ConstructError as exc:  # pragma: no cover - fixed-size parse of enough bytes
            raise InvalidRefError(f"unreadable binary ref: {exc}") from exc
        return cls(fields.log_number, fields.offset, fields.index)
