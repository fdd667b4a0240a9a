"""The registered implementations (``conformance/implementations.json``) and ``--impl`` values."""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .client import Hello
from .runner import Implementation
from .vocabulary import CAPABILITIES, CHOICES, SPEC_VERSION

CLI_PREFIX = "cli:"


@dataclass(frozen=True)
class Registered:
    name: str
    description: str
    command: list[str]
    build: list[str] | None


def default_registry(manifest: Path) -> Path:
    return manifest.parent / "implementations.json"


def load_registry(path: Path) -> dict[str, Registered]:
    """Entries with their commands resolved: ``{python}`` is this interpreter, paths are relative to the repository."""
    root = path.resolve().parent.parent
    data: dict[str, Any] = json.loads(path.read_text())
    entries = {}
    for item in data["implementations"]:
        command = [_resolve(token, root) for token in item["command"]]
        build = None if item.get("build") is None else [_resolve(token, root) for token in item["build"]]
        entries[item["name"]] = Registered(item["name"], item.get("description", ""), command, build)
    return entries


def _resolve(token: str, root: Path) -> str:
    if token == "{python}":
        return sys.executable
    if "/" in token and not token.startswith("/"):
        return str(root / token)
    return token


def parse_choices(values: Iterable[str]) -> dict[str, str]:
    """``--choice NAME=VALUE`` values, each a known choice with one of its allowed values."""
    choices: dict[str, str] = {}
    for value in values:
        name, sep, choice = value.partition("=")
        if not sep or name not in CHOICES:
            raise ValueError(f"--choice {value!r}: expected NAME=VALUE with NAME one of {sorted(CHOICES)}")
        if choice not in CHOICES[name]:
            raise ValueError(f"--choice {value!r}: {name} is one of {list(CHOICES[name])}")
        choices[name] = choice
    return choices


def implementations(
    values: list[str],
    names: list[str],
    registry: dict[str, Registered],
    cli_choices: dict[str, str] | None = None,
) -> list[Implementation]:
    """``--impl`` values: ``all``, a registered name, a session command, or ``cli:COMMAND``.

    ``--name`` values name the command implementations in order; ``cli_choices``
    are the implementation-defined choices of the ``cli:`` testees (they have no hello).
    """
    result: list[Implementation] = []
    pending_names = list(names)
    for value in values:
        if value == "all":
            result += [Implementation(entry.command, entry.name) for entry in registry.values()]
        elif value in registry:
            result.append(Implementation(registry[value].command, value))
        else:
            name = pending_names.pop(0) if pending_names else None
            if value.startswith(CLI_PREFIX):
                command = shlex.split(value[len(CLI_PREFIX) :])
                hello = Hello(
                    name=name or Path(command[0]).name,
                    version="",
                    spec_version=SPEC_VERSION,
                    roles=["reader", "writer"],
                    capabilities=list(CAPABILITIES),
                    choices=dict(cli_choices or {}),
                    declared=False,
                )
                result.append(Implementation(command, hello.name, "cli", hello))
            else:
                result.append(Implementation(shlex.split(value), name))
    return result
