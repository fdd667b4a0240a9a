"""An in-memory picture of a directory tree: what a crash state looks like on disk.

Files and directories are inodes, so a file reached by two names (the
cutover's temporary name and the segment name it is linked to) stays one
file. Inode 0 is the scratch root; the log directory lives inside it.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

ROOT = 0


@dataclass
class Image:
    """File contents by inode and directory entries by directory inode."""

    files: dict[int, bytes] = field(default_factory=dict)
    dirs: dict[int, dict[str, int]] = field(default_factory=lambda: {ROOT: {}})

    def copy(self) -> Image:
        return Image(dict(self.files), {inode: dict(entries) for inode, entries in self.dirs.items()})

    @classmethod
    def load(cls, root: Path) -> Image:
        """Snapshot a real directory tree; hard links become one inode."""
        image = cls()
        by_ino: dict[int, int] = {}

        def walk(path: Path, dir_inode: int) -> None:
            for name in sorted(os.listdir(path)):
                child = path / name
                stat = child.lstat()
                if child.is_dir():
                    inode = image.new_inode()
                    image.dirs[inode] = {}
                    walk(child, inode)
                elif stat.st_ino in by_ino:
                    inode = by_ino[stat.st_ino]
                else:
                    inode = by_ino[stat.st_ino] = image.new_inode()
                    image.files[inode] = child.read_bytes()
                image.dirs[dir_inode][name] = inode

        walk(root, ROOT)
        return image

    def new_inode(self) -> int:
        return max([*self.files, *self.dirs]) + 1

    def reachable(self) -> dict[str, int]:
        """Relative path of every name reachable from the root, with its inode."""
        found: dict[str, int] = {}

        def walk(prefix: str, dir_inode: int) -> None:
            for name, inode in sorted(self.dirs.get(dir_inode, {}).items()):
                path = f"{prefix}{name}"
                found[path] = inode
                if inode in self.dirs:
                    walk(path + "/", inode)

        walk("", ROOT)
        return found

    def fingerprint(self) -> str:
        """Identifies the bytes a crash leaves: names, link structure and contents."""
        digest = hashlib.blake2b(digest_size=16)
        for path, inode in self.reachable().items():
            content = self.files.get(inode)
            digest.update(path.encode() + b"\0")
            digest.update(b"d" if content is None else b"f%d:" % inode + hashlib.blake2b(content).digest())
        return digest.hexdigest()

    def materialise(self, root: Path) -> None:
        """Make the tree under ``root`` exactly this image; shared inodes become hard links.

        Directories already there are emptied and reused rather than recreated:
        removing directories is the slowest part of a state check.
        """
        wanted = self.reachable()
        for path in sorted(root.rglob("*"), key=lambda p: len(p.parts), reverse=True):
            relative = path.relative_to(root).as_posix()
            if path.is_dir() and not path.is_symlink():
                if wanted.get(relative) not in self.dirs:
                    path.rmdir()
            else:
                path.unlink()
        placed: dict[int, Path] = {}
        for relative, inode in wanted.items():
            path = root / relative
            if inode in self.dirs:
                path.mkdir(exist_ok=True)
            elif inode in placed:
                os.link(placed[inode], path)
            else:
                path.write_bytes(self.files[inode])
                placed[inode] = path
