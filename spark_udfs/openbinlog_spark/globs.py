"""Load paths and ``pathGlobFilter`` read as Hadoop reads globs, which is how Spark's file sources read them.

Hadoop's globber (``FileSystem.globStatus``) first expands every brace
group that holds a ``/`` into separate patterns (``GlobExpander``), then
matches each pattern one path component at a time (``GlobPattern``): a
component with a wildcard (``*``, ``?``, ``[...]``, ``{a,b}``, braces
nested) against the names listed in the directories the components before it
matched, a component without one as the name it spells. A backslash escapes
the character after it (``glob\\[1\\]`` is the directory ``glob[1]``,
``\\{`` a brace).

Hadoop makes a regular expression of a pattern, where ``\\d`` is a digit and
``\\o`` an error: here a backslash escapes only ASCII punctuation or a space,
and any other is refused (``GlobError``), never read as another pattern.
"""

from __future__ import annotations

import posixpath
import re
import warnings
from typing import Any

from openbinlog.errors import BinlogIOError

WILDCARDS = "*?[{"
_ESCAPED = re.compile(r"\\(.)", re.DOTALL)


class GlobError(ValueError):
    """A pattern Hadoop would not read as this one: what is wrong with it."""


def check_escapes(pattern: str) -> None:
    """``GlobError`` when a backslash of ``pattern`` escapes anything but ASCII punctuation or a space."""
    chars = iter(pattern)
    for char in chars:
        if char == "\\":
            escaped = next(chars, "")
            if not (escaped.isascii() and escaped and not escaped.isalnum()):
                raise GlobError("a backslash escapes only ASCII punctuation or a space")


def load_pattern(path: str) -> tuple[str, bool]:
    """``path`` and True when it has a wildcard no backslash escapes; otherwise the path it names (its backslashes
    dropped) and False."""
    check_escapes(path)
    chars = iter(path)
    for char in chars:
        if char == "\\":
            next(chars)
        elif char in WILDCARDS:
            return path, True
    return _ESCAPED.sub(r"\1", path), False


def expand_braces(pattern: str) -> list[str]:
    """Hadoop's ``GlobExpander.expand``: ``pattern`` as the patterns in which no brace group holds a ``/``, the
    leftmost outer such group expanded first (``p{a/b,c/d}s``: ``pa/bs``, ``pc/ds``; ``{a,b}/{c,d/e}``:
    ``{a,b}/c``, ``{a,b}/d/e``). As in Hadoop, the alternatives of an expanded group lose their backslashes, each
    keeping the character it escaped."""
    done: list[str] = []
    pending: list[tuple[str, int]] = [(pattern, 0)]
    while pending:
        text, offset = pending.pop(0)
        expanded = _expand_leftmost(text, offset)
        if expanded is None:
            done.append(text)
        else:
            pending[:0] = expanded
    return done


def _leftmost_group_with_slash(pattern: str, offset: int) -> int:
    depth = 0
    leftmost = -1
    slash = False
    at = offset
    while at < len(pattern):
        char = pattern[at]
        if char == "\\":
            at += 1
        elif char == "{":
            if depth == 0:
                leftmost = at
            depth += 1
        elif char == "}" and depth > 0:
            depth -= 1
            if depth == 0 and leftmost != -1 and slash:
                return leftmost
        elif char == "/" and depth > 0:
            slash = True
        at += 1
    return -1


def _expand_leftmost(pattern: str, offset: int) -> list[tuple[str, int]] | None:
    leftmost = _leftmost_group_with_slash(pattern, offset)
    if leftmost == -1:
        return None
    prefix = pattern[:leftmost]
    alternatives: list[str] = []
    alternative: list[str] = []
    suffix = ""
    depth = 0
    at = leftmost
    while at < len(pattern):
        char = pattern[at]
        if depth == 0 and at > leftmost:
            suffix = pattern[at:]  # the group is closed: the rest, as it is
            break
        if char == "\\":
            at += 1
            alternative.append(pattern[at])
        elif char == "{":
            if depth > 0:
                alternative.append(char)
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                alternatives.append("".join(alternative))
                alternative.clear()
            else:
                alternative.append(char)
        elif char == "," and depth == 1:
            alternatives.append("".join(alternative))
            alternative.clear()
        else:
            alternative.append(char)
        at += 1
    return [(prefix + choice + suffix, len(prefix)) for choice in alternatives]


def glob_pattern(glob: str) -> tuple[re.Pattern[str], bool]:
    """Hadoop's ``GlobPattern`` of ``glob`` (a name's pattern: ``/`` is no separator in it): the regular expression
    a whole name must match, and whether ``glob`` has a wildcard (``*``, ``?``, ``[``, ``{``)."""
    check_escapes(glob)
    regex: list[str] = []
    in_set = False
    depth = 0
    wildcard = False
    at = 0
    while at < len(glob):
        char = glob[at]
        if char == "\\":
            at += 1
            regex.append("\\" + glob[at])
        elif char in ".$()|+":
            regex.append("\\" + char)
        elif char == "*":
            regex.append(".*")
            wildcard = True
        elif char == "?":
            regex.append(".")
            wildcard = True
        elif char == "{":
            regex.append("(?:")
            depth += 1
            wildcard = True
        elif char == ",":
            regex.append("|" if depth > 0 else ",")
        elif char == "}" and depth > 0:
            regex.append(")")
            depth -= 1
        elif char == "[":
            if in_set:
                raise GlobError(f"Unclosed character class at pos {at}")
            regex.append("[")
            in_set = wildcard = True
        elif char == "^":
            regex.append("^" if in_set else "\\^")
        elif char == "!":
            regex.append("^" if in_set and glob[at - 1] == "[" else "!")
        elif char == "]":
            regex.append("]")
            in_set = False
        else:
            regex.append(char)
        at += 1
    if in_set:
        raise GlobError(f"Unclosed character class at pos {len(glob)}")
    if depth > 0:
        raise GlobError(f"Unclosed group at pos {len(glob)}")
    try:
        with warnings.catch_warnings():
            # Python warns that it may one day read "--" or "&&" in a set otherwise; today it reads them as Java.
            warnings.simplefilter("ignore", FutureWarning)
            return re.compile("".join(regex)), wildcard
    except re.error as error:
        raise GlobError(str(error)) from None


def glob(fs: Any, path: str, *, local: bool) -> list[str]:
    """The paths of ``fs`` the glob ``path`` (as ``fs`` names paths) matches, as Hadoop's globber finds them, each
    once, in order. Of an object store's path, the bucket is never a glob (Hadoop globs a URL's path alone)."""
    if local or path.startswith("/"):
        root, below = "", path
    else:
        root, _, rest = path.partition("/")
        below = "/" + rest
    found: set[str] = set()
    for flat in expand_braces(below):
        components = [part for part in flat.split("/") if part]
        # Each candidate with whether it is a directory: None where not known yet (a name no listing gave).
        candidates: list[tuple[str, bool | None]] = [(root, True)]
        for position, component in enumerate(components):
            pattern, wildcard = glob_pattern(component)
            name = _ESCAPED.sub(r"\1", component)  # the name a component without a wildcard spells
            last = position == len(components) - 1
            following: list[tuple[str, bool | None]] = []
            for candidate, directory in candidates:
                if not wildcard:
                    following.append((f"{candidate}/{name}", None))
                    continue
                for child, is_directory in _children(fs, candidate or "/", directory):
                    # Hadoop goes into directories only: a file matches the last component alone.
                    if pattern.fullmatch(child) and (last or is_directory is not False):
                        following.append((f"{candidate}/{child}", is_directory))
            candidates = following
        found.update(
            candidate or "/" for candidate, directory in candidates if directory is not None or fs.exists(candidate)
        )
    return sorted(found)


def _children(fs: Any, directory: str, known: bool | None) -> list[tuple[str, bool | None]]:
    """The names ``directory`` lists, each with whether it is a directory (None: not known, as of a link); none
    when it is gone or a file."""
    try:
        entries = fs.ls(directory, detail=True)
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as error:
        raise BinlogIOError(
            f"cannot list a directory the glob goes through: {error.strerror or error}", path=directory
        ) from error
    if (
        known is None
        and len(entries) == 1
        and entries[0]["name"].rstrip("/") == directory.rstrip("/")
        and entries[0].get("type") != "directory"
    ):
        return []  # a file, which lists itself
    kinds = {"directory": True, "file": False}
    return [(posixpath.basename(entry["name"].rstrip("/")), kinds.get(entry.get("type"))) for entry in entries]
