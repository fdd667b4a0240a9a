"""Masked CRC32C, the checksum of every version 2 structure (spec section "Checksums")."""

from __future__ import annotations

import crc32c as _crc32c

MASK_DELTA = 0xA282EAD8


def mask(crc: int) -> int:
    """Rotate right by 15 bits and add a constant, as LevelDB does.

    Masking makes the checksum of an all-zero region non-zero and keeps a CRC
    computed over bytes that embed another CRC from being trivially valid.
    """
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + MASK_DELTA) & 0xFFFFFFFF


def unmask(masked: int) -> int:
    rotated = (masked - MASK_DELTA) & 0xFFFFFFFF
    return ((rotated >> 17) | (rotated << 15)) & 0xFFFFFFFF


def crc32c(data: bytes | bytearray | memoryview, crc: int = 0) -> int:
    """Plain CRC32C (Castagnoli), continuing from ``crc``."""
    return int(_crc32c.crc32c(data, crc))


def masked_crc32c(*parts: bytes | bytearray | memoryview) -> int:
    """Masked CRC32C of the concatenation of ``parts``."""
    crc = 0
    for part in parts:
        crc = _crc32c.crc32c(part, crc)  # the package's function directly: this runs several times per commit
    return mask(crc)
