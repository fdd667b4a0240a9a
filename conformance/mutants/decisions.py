"""What every mutant of the reference shares: the ``Mutant`` type, patching helpers and a registry.

A judgement call is a place where a careful implementer could read the spec
two ways with a different answer through the conformance protocol, or a
SHOULD/MAY with an observable effect. Its mutant (decisions_reader.py,
decisions_writer.py, decisions_legacy.py, decisions_index.py) takes the other reading;
requirements.py breaks one writer requirement each. For each mutant,
``decision`` is the reading the spec takes (stated in the section named),
``other`` the reading the mutant takes, and ``pinned_by`` the cases that tell
the two apart. The list in conformance/README.md is generated from them.
"""

from __future__ import annotations
import __future__

import inspect
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from openbinlog_conformance import serve
from openbinlog_conformance.reference_testee import ReferenceTestee

Json = dict[str, Any]


def replace(module: Any, name: str, new: Any) -> None:
    """Replace ``module.name`` everywhere the reference imported it by name."""
    old = getattr(module, name)
    for loaded in list(sys.modules.values()):
        if getattr(loaded, "__name__", "").startswith("openbinlog") and getattr(loaded, name, None) is old:
            setattr(loaded, name, new)


@dataclass(frozen=True)
class Mutant:
    name: str
    section: str
    decision: str
    other: str
    pinned_by: tuple[str, ...]
    patch: Callable[[], None]

    def describe(self) -> Json:
        return {
            "name": self.name,
            "section": self.section,
            "decision": self.decision,
            "other": self.other,
            "pinned_by": list(self.pinned_by),
        }

    def apply(self) -> serve.Handler:
        self.patch()
        return ReferenceTestee()


Edit = tuple[str, str] | tuple[str, str, int]  # old, new and how often old occurs (once unless said)


def mutated(function: Callable[..., Any], *edits: Edit) -> Callable[..., Any]:
    """``function`` compiled again from its own source with each edit made: a mutant of the reference.

    An edit whose text does not occur as often as said fails loudly, so a
    mutant never silently tests code the reference no longer has.
    """
    source = textwrap.dedent(inspect.getsource(function))
    for old, new, *times in edits:
        expected = times[0] if times else 1
        found = source.count(old)
        if found != expected:
            raise ValueError(f"{function.__qualname__}: {old!r} occurs {found} times in its source, not {expected}")
        source = source.replace(old, new)
    module = sys.modules[function.__module__]
    flags = __future__.annotations.compiler_flag
    code = compile(source, f"<mutant of {function.__qualname__}>", "exec", flags=flags, dont_inherit=True)
    namespace: dict[str, Any] = {}
    exec(code, vars(module), namespace)  # the module's globals: the mutant resolves names as the original does
    mutant: Callable[..., Any] = namespace[function.__name__]
    return mutant


def resource(module: Any, qualname: str, *edits: Edit) -> None:
    """Put the mutant of function ``qualname`` of ``module`` in its place: on its class, or everywhere the
    reference imported the function by name."""
    *path, name = qualname.split(".")
    owner = module
    for part in path:
        owner = getattr(owner, part)
    if isinstance(owner, type):
        setattr(owner, name, mutated(owner.__dict__[name], *edits))
    else:
        replace(module, name, mutated(getattr(owner, name), *edits))


class Registry:
    """The mutants of one module, in the order their patches are defined (``@registry.mutant(...)``)."""

    def __init__(self) -> None:
        self.mutants: list[Mutant] = []

    def mutant(
        self, name: str, section: str, decision: str, other: str, pinned_by: tuple[str, ...] = ()
    ) -> Callable[[Callable[[], None]], Callable[[], None]]:
        def register(patch: Callable[[], None]) -> Callable[[], None]:
            self.mutants.append(Mutant(name, section, decision, other, pinned_by, patch))
            return patch

        return register
