"""What every mutant of the reference shares: the ``Mutant`` type, patching helpers and a registry.

A judgement call is a place where a careful implementer could read the spec
two ways with a different answer through the conformance protocol, or a
SHOULD/MAY with an observable effect. Its mutant (decisions_reader.py,
decisions_writer.py, decisions_legacy.py) takes the other reading;
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


def resource(module: Any, qualname: str, *edits: tuple[str, str]) -> None:
    """Recompile function ``qualname`` of ``module`` with textual edits (each must occur exactly once) and put the
    mutant in its place: on its class, or everywhere the reference imported the function by name."""
    parts = qualname.split(".")
    owner = module
    for part in parts[:-1]:
        owner = getattr(owner, part)
    function = owner.__dict__[parts[-1]] if isinstance(owner, type) else getattr(owner, parts[-1])
    source = textwrap.dedent(inspect.getsource(function))
    for old, new in edits:
        if source.count(old) != 1:
            raise AssertionError(f"{qualname}: {old!r} found {source.count(old)} times")
        source = source.replace(old, new)
    namespace: dict[str, Any] = {}
    flags = __future__.annotations.compiler_flag
    code = compile(source, f"<mutant {qualname}>", "exec", flags=flags, dont_inherit=True)
    exec(code, module.__dict__, namespace)  # the module's globals: names resolve as in the original
    new = namespace[parts[-1]]
    if isinstance(owner, type):
        setattr(owner, parts[-1], new)
    else:
        replace(module, parts[-1], new)


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
