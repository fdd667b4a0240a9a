"""The collection every catalog module adds its fixtures and cases to."""

from __future__ import annotations

from .model import SINCE_2_0, Case, Fixture, Json
from .mutations import Files, Mutation

# The capability each start of a read request needs.
START_CAPABILITIES = {"after_binary": "refs", "at": "resume_at", "from_index": "seek", "since_us": "seek"}


class Catalog:
    def __init__(self) -> None:
        self.fixtures: dict[str, Fixture] = {}
        self.cases: list[Case] = []

    def fixture(
        self,
        id: str,
        description: str,
        files: Files,
        *,
        workload: list[Json] | None = None,
        faults: list[str] | None = None,
        requirements: list[str] | None = None,
    ) -> Fixture:
        """A fixture written by a workload (a valid log, or a crash state the write protocol leaves)."""
        return self._add(Fixture(id, description, files, faults or [], requirements or [], workload=workload or []))

    def derive(
        self,
        id: str,
        base: Fixture,
        mutation: Mutation,
        description: str,
        *,
        defect: str | None,
        faults: list[str] | None = None,
        requirements: list[str] | None = None,
    ) -> Fixture:
        """A fixture made from ``base`` by ``mutation``: one defect (or one crash effect) per fixture."""
        return self._add(
            Fixture(
                id,
                description,
                mutation.apply(base.files),
                faults or [],
                requirements or [],
                derived_from=base.id,
                mutation=mutation,
                defect=defect,
            )
        )

    def _add(self, fixture: Fixture) -> Fixture:
        if fixture.id in self.fixtures:
            raise ValueError(f"duplicate fixture {fixture.id}")
        self.fixtures[fixture.id] = fixture
        return fixture

    def read(
        self,
        id: str,
        fixture: Fixture,
        expected: Json,
        requirements: list[str],
        *,
        description: str | None = None,
        parser: bool = False,
        after: str | None = None,
        path: str | None = None,
        requires: list[str] | None = None,
        tolerant: bool = False,
        split: tuple[int, int, int] | None = None,
        plan: tuple[int, int] | None = None,
        start: Json | None = None,
        until: str | None = None,
        since: str = SINCE_2_0,
    ) -> Case:
        """A reader case: read the fixture from its start (or after ``after``, tolerantly, or one split).

        ``split`` is (log, start, stop): only segment ``log``'s records whose offset lies in [start, stop).
        ``plan`` is (log, parts): segment ``log`` in up to ``parts`` splits the testee plans, read one after
        another (capability split_plan).
        ``start`` is one of the other starts of the protocol: ``after_binary`` (a binary ref, hexadecimal),
        ``at`` (resume at a ref), ``from_index`` or ``since_us`` (spec/conformance.md section 3.4).
        ``until``: the spec version from which the expectation no longer holds (a retired case keeps its id;
        the corrected expectation gets a new one, spec/conformance.md section 2).
        """
        operation: Json = {"op": "read"}
        needs = list(requires or [])
        if after is not None:
            operation["after"] = after
            needs.append("refs")
        if path is not None:
            operation["path"] = path
        if tolerant:
            operation["tolerant"] = True
            needs.append("tolerant")
        if split is not None:
            log, first, stop = split
            operation.update({"log": log, "start": str(first), "stop": str(stop)})
            needs.append("split")
        if plan is not None:
            log, parts = plan
            operation.update({"log": log, "parts": parts})
            needs.append("split_plan")
        for member, value in (start or {}).items():
            operation[member] = value
            needs.append(START_CAPABILITIES[member])
        return self._case(
            Case(
                id,
                description or fixture.description,
                operation,
                expected,
                requirements,
                fixture=fixture,
                roles=["reader", "parser"] if parser else ["reader"],
                requires=needs,
                faults=list(fixture.faults),
                defect=fixture.defect,
                since=since,
                until=until,
            )
        )

    def recover(
        self,
        id: str,
        fixture: Fixture,
        expected: Json,
        requirements: list[str],
        *,
        description: str | None = None,
        until: str | None = None,
    ) -> Case:
        """A writer case: the testee recovers a copy of the fixture; the reference checks the result."""
        return self._case(
            Case(
                id,
                description or f"recover: {fixture.description}",
                {"op": "recover"},
                expected,
                requirements,
                fixture=fixture,
                roles=["writer"],
                requires=["recover"],
                faults=list(fixture.faults),
                defect=fixture.defect,
                until=until,
            )
        )

    def write(
        self,
        id: str,
        description: str,
        spec: Json,
        expected: Json,
        requirements: list[str],
        *,
        requires: list[str] | None = None,
    ) -> Case:
        """A writer case: the testee writes a new log from ``spec``; every reader reads it back."""
        return self._case(
            Case(
                id,
                description,
                {"op": "write", **spec},
                expected,
                requirements,
                roles=["writer"],
                requires=["write", *(requires or [])],
            )
        )

    def _case(self, case: Case) -> Case:
        if any(existing.id == case.id for existing in self.cases):
            raise ValueError(f"duplicate case {case.id}")
        self.cases.append(case)
        return case
