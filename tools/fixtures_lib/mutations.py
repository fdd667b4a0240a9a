"""Byte-level mutations that derive one fixture from another.

Each operation is applied to a copy of the base fixture's files and recorded
in the derived fixture's JSON twin exactly as applied, so anyone can redo it
from the base files: ``{"op": "write", "file": ..., "offset": ..., "hex": ...}``
and friends (spec/conformance.md, "Mutations").
"""

from __future__ import annotations

from typing import Any

Files = dict[str, bytes]


class Mutation:
    """A list of operations, applied one after another to a set of files."""

    def __init__(self) -> None:
        self.ops: list[dict[str, Any]] = []

    def write(self, file: str, offset: int, data: bytes) -> Mutation:
        self.ops.append({"op": "write", "file": file, "offset": str(offset), "hex": data.hex()})
        return self

    def fill(self, file: str, offset: int, size: int, byte: int = 0) -> Mutation:
        self.ops.append({"op": "fill", "file": file, "offset": str(offset), "size": str(size), "byte": f"{byte:02x}"})
        return self

    def truncate(self, file: str, size: int) -> Mutation:
        self.ops.append({"op": "truncate", "file": file, "size": str(size)})
        return self

    def append(self, file: str, data: bytes) -> Mutation:
        self.ops.append({"op": "append", "file": file, "hex": data.hex()})
        return self

    def extend(self, file: str, size: int, byte: int = 0) -> Mutation:
        """Append ``size`` copies of one byte (a file that grew before its data arrived)."""
        self.ops.append({"op": "extend", "file": file, "size": str(size), "byte": f"{byte:02x}"})
        return self

    def create(self, file: str, data: bytes) -> Mutation:
        self.ops.append({"op": "create", "file": file, "hex": data.hex()})
        return self

    def remove(self, file: str) -> Mutation:
        self.ops.append({"op": "remove", "file": file})
        return self

    def apply(self, files: Files) -> Files:
        result = dict(files)
        for op in self.ops:
            apply_op(result, op)
        return result


def apply_op(files: Files, op: dict[str, Any]) -> None:
    name = op["file"]
    kind = op["op"]
    if kind == "create":
        if name in files:
            raise ValueError(f"create: {name} exists")
        files[name] = bytes.fromhex(op["hex"])
        return
    if kind == "remove":
        del files[name]
        return
    data = bytearray(files[name])
    if kind == "write":
        offset, patch = int(op["offset"]), bytes.fromhex(op["hex"])
        if offset + len(patch) > len(data):
            raise ValueError(f"write past the end of {name}")
        data[offset : offset + len(patch)] = patch
    elif kind == "fill":
        offset, size = int(op["offset"]), int(op["size"])
        if offset + size > len(data):
            raise ValueError(f"fill past the end of {name}")
        data[offset : offset + size] = bytes([int(op["byte"], 16)]) * size
    elif kind == "truncate":
        size = int(op["size"])
        if size > len(data):
            raise ValueError(f"truncate would extend {name}")
        del data[size:]
    elif kind == "append":
        data += bytes.fromhex(op["hex"])
    elif kind == "extend":
        data += bytes([int(op["byte"], 16)]) * int(op["size"])
    else:
        raise ValueError(f"unknown mutation {kind}")
    files[name] = bytes(data)
