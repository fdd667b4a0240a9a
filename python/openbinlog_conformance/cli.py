"""``binlog conformance``: run the suite against implementations and write the reports.

Exit code 0 when every must case passed (or is a listed expected failure)
and no listed expected failure passed; 1 otherwise; 2 for usage errors.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import click

from .manifest import Filters, ManifestError, default_manifest, load
from .mutation import MutantResult, MutantsError, default_testee, list_mutants, run_mutants, score
from .registry import default_registry, implementations, load_registry, parse_choices
from .report import totals, write_reports
from .runner import load_xfail, run
from .vocabulary import LEVELS, ROLES


@click.group("conformance")
def conformance_group() -> None:
    """Run the BinLog conformance suite (spec/conformance.md) against implementations."""


@conformance_group.command("run")
@click.option(
    "--impl",
    "impl_values",
    multiple=True,
    required=True,
    help="A registered name (see 'list-impls'), 'all', a command speaking the session protocol,"
    " or 'cli:COMMAND' for the file-level CLI. Repeatable.",
)
@click.option("--name", "names", multiple=True, help="Name for a command --impl (in order). Repeatable.")
@click.option(
    "--choice",
    "choice_values",
    multiple=True,
    metavar="NAME=VALUE",
    help="An implementation-defined choice of the 'cli:' testees, which have no hello to declare it"
    " (spec/conformance.md 5.4). Repeatable.",
)
@click.option("--level", "levels", type=click.Choice(LEVELS), multiple=True, help="Only cases of this level.")
@click.option("--role", "roles", type=click.Choice(ROLES), multiple=True, help="Only cases of this role.")
@click.option("--case", "case_globs", multiple=True, help="Only case ids matching this glob. Repeatable.")
@click.option("--spec-version", help="Select cases for this spec version instead of the one each testee declares.")
@click.option("--xfail", "xfail_path", type=click.Path(exists=True, dir_okay=False), help="Expected-failure list.")
@click.option("--timeout", type=float, default=10.0, show_default=True, help="Seconds per request.")
@click.option("--out", type=click.Path(file_okay=False), default="build/conformance", show_default=True)
@click.option("--manifest", "manifest_path", type=click.Path(exists=True, dir_okay=False))
@click.option("-v", "--verbose", is_flag=True, help="Print every case as it finishes.")
def run_command(
    *,
    impl_values: tuple[str, ...],
    names: tuple[str, ...],
    choice_values: tuple[str, ...],
    levels: tuple[str, ...],
    roles: tuple[str, ...],
    case_globs: tuple[str, ...],
    spec_version: str | None,
    xfail_path: str | None,
    timeout: float,
    out: str,
    manifest_path: str | None,
    verbose: bool,
) -> None:
    """Run the cases against each --impl and write results.json, junit.xml, matrix.md/.html and badges to --out."""
    try:
        manifest = load(manifest_path or default_manifest())
    except ManifestError as exc:
        raise click.UsageError(str(exc)) from exc
    registry = load_registry(default_registry(manifest.path))
    try:
        impls = implementations(list(impl_values), list(names), registry, parse_choices(choice_values))
        xfail = load_xfail(xfail_path) if xfail_path else {}
    except (ValueError, IndexError) as exc:
        raise click.UsageError(str(exc)) from exc
    filters = Filters(frozenset(levels), frozenset(roles), case_globs, spec_version)
    result = run(
        impls,
        filters,
        manifest=manifest,
        timeout=timeout,
        xfail=xfail,
        progress=(lambda line: click.echo(line, err=True)) if verbose else None,
    )
    paths = write_reports(result, Path(out))
    for impl in result.implementations:
        click.echo(f"{impl.name}: {impl.error or totals(impl)}")
        for item in impl.blocking:
            click.echo(f"  {item.status.upper()} {item.id}: {item.detail[:300]}")
    bad_interop = [item for item in result.interop if item.status in ("failed", "xpassed")]
    if result.interop:
        passed = sum(item.status == "passed" for item in result.interop)
        expected = sum(item.status == "xfailed" for item in result.interop)
        click.echo(
            f"interop: {passed}/{len(result.interop)} reads passed"
            + (f", {expected} expected failures" if expected else "")
        )
        for read in bad_interop:
            click.echo(
                f"  {read.status.upper()} {read.reader} reading {read.writer}'s {read.case}: {read.detail[:300]}"
            )
    click.echo(f"reports: {paths['markdown'].parent}  ({'PASS' if result.ok else 'FAIL'})")
    sys.exit(0 if result.ok else 1)


@conformance_group.command("list-impls")
@click.option("--manifest", "manifest_path", type=click.Path(exists=True, dir_okay=False))
def list_impls(manifest_path: str | None) -> None:
    """The registered implementations."""
    path = Path(manifest_path) if manifest_path else default_manifest()
    for entry in load_registry(default_registry(path)).values():
        click.echo(f"{entry.name:20} {entry.description}")


@conformance_group.command("list")
@click.option("--level", "levels", type=click.Choice(LEVELS), multiple=True)
@click.option("--role", "roles", type=click.Choice(ROLES), multiple=True)
@click.option("--case", "case_globs", multiple=True)
@click.option("--manifest", "manifest_path", type=click.Path(exists=True, dir_okay=False))
def list_cases(
    levels: tuple[str, ...], roles: tuple[str, ...], case_globs: tuple[str, ...], manifest_path: str | None
) -> None:
    """The case ids, with the roles and capabilities each needs."""
    manifest = load(manifest_path or default_manifest(), verify_files=False)
    for case in Filters(frozenset(levels), frozenset(roles), case_globs).select(manifest.cases):
        needs = ",".join(case.requires)
        click.echo(f"{case.id:70} {'/'.join(case.roles):14} {needs}")


@conformance_group.command("mutants")
@click.option("--mutant", "names", multiple=True, help="Only this mutant. Repeatable.")
@click.option("--testee", "testee_path", type=click.Path(exists=True, dir_okay=False), help="The mutants' testee.")
@click.option("--timeout", type=float, default=10.0, show_default=True, help="Seconds per request.")
@click.option("--manifest", "manifest_path", type=click.Path(exists=True, dir_okay=False))
@click.option("--jobs", type=click.IntRange(min=1), help="Mutants run at a time (default: one per processor).")
@click.option("-v", "--verbose", is_flag=True, help="List every case that catches each mutant.")
def mutants_command(
    *,
    names: tuple[str, ...],
    testee_path: str | None,
    timeout: float,
    manifest_path: str | None,
    jobs: int | None,
    verbose: bool,
) -> None:
    """Run the suite against each decision mutant (conformance/mutants/) and print the mutation score.

    Exit code 0 when every mutant fails a case by a wrong answer, including every case it names as pinning it.
    """
    try:
        manifest = load(manifest_path or default_manifest())
        testee = Path(testee_path) if testee_path else default_testee(manifest)
        mutants = list_mutants(testee)
    except (ManifestError, MutantsError) as exc:
        raise click.UsageError(str(exc)) from exc
    unknown = set(names) - {mutant.name for mutant in mutants}
    if unknown:
        raise click.UsageError(f"no such mutant: {', '.join(sorted(unknown))}")
    chosen = [mutant for mutant in mutants if not names or mutant.name in names]

    def show(result: MutantResult) -> None:
        state = "caught" if result.caught else "SURVIVED"
        click.echo(f"{state:8} {result.mutant.name} ({len(result.caught_by)} cases)")
        if verbose:
            for case in result.caught_by:
                click.echo(f"         {case}")
        if result.broken:
            click.echo(f"         broken, not caught: {', '.join(result.broken[:5])}")
        if result.unpinned:
            click.echo(f"         passes the cases said to pin it: {', '.join(result.unpinned)}")

    results = run_mutants(testee, chosen, manifest=manifest, timeout=timeout, jobs=jobs, progress=show)
    click.echo(score(results))
    sys.exit(0 if all(result.caught for result in results) else 1)


@conformance_group.command("skeleton")
@click.argument("destination", type=click.Path(file_okay=False))
@click.option("--manifest", "manifest_path", type=click.Path(exists=True, dir_okay=False))
def skeleton_command(destination: str, manifest_path: str | None) -> None:
    """Copy the skeleton testee in C (conformance/skeleton/c) to DESTINATION, a directory that does not exist yet:
    a small reader that passes its first case once built with make (see its README.md)."""
    try:
        manifest = Path(manifest_path) if manifest_path else default_manifest()
    except ManifestError as exc:
        raise click.UsageError(str(exc)) from exc
    source = manifest.parent / "skeleton" / "c"
    if not source.is_dir():
        raise click.UsageError(f"no skeleton beside {manifest}")
    target = Path(destination)
    if target.exists():
        raise click.UsageError(f"{target} exists: give a new directory")
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("binlog-skeleton", "*.o"))
    click.echo(
        f"the skeleton testee is in {target}: cd {target} && make && binlog conformance run --impl ./binlog-skeleton"
    )
    click.echo(f"the suite's fixtures, for reading by hand: {(manifest.parent / '..' / 'fixtures').resolve()}")
