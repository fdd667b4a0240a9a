"""The installable package (issue #17): one stable-ABI wheel for CPython 3.11 and later, and a base install,
without extras, that is small and gives a working ``binlog``.

The wheel is built from a copy of the sources (the working tree gets no build/ or egg-info) and installed into a
fresh virtual environment from the package index pip is configured with, so these tests need that index. The
tests of the compiled wheel are skipped only where no Rust toolchain (cargo) is: there the wheel is pure Python.
30 to 60 seconds here, most of it the release build of the accelerator (lto, one codegen unit).
"""

from __future__ import annotations

import base64
import email.parser
import fnmatch
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement

import openbinlog
from openbinlog._optional import EXTRAS, MissingExtraError, require

ROOT = Path(__file__).resolve().parents[2]
# What a build reads: the sdist's files (MANIFEST.in) and the packages' folders, without tests or build output.
SOURCES = (
    "pyproject.toml",
    "setup.cfg",
    "setup.py",
    "MANIFEST.in",
    "README.md",
    "LICENSE",
    "python",
    "spark_udfs",
    "conformance",
    "fixtures",
)
IGNORED = shutil.ignore_patterns("tests", "target", "__pycache__", "*.so", "*.egg-info", ".hypothesis")
CORE_DEPENDENCIES = {"construct", "crc32c", "click", "inotify_simple"}
BASE_INSTALL_LIMIT = 15 * 1024 * 1024
BUILD_TIMEOUT = 600

needs_rust = pytest.mark.skipif(shutil.which("cargo") is None, reason="no Rust toolchain: the wheel is pure Python")


def _build_wheel(tmp: Path, env: dict[str, str] | None = None) -> Path:
    source = tmp / "source"
    source.mkdir()
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, ignore=IGNORED)
        else:
            shutil.copy2(ROOT / name, source / name)
    out = tmp / "dist"
    command = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(out), str(source)]
    subprocess.run(command, env=env, check=True, timeout=BUILD_TIMEOUT)
    (wheel,) = out.glob("openbinlog-*.whl")
    return wheel


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _build_wheel(tmp_path_factory.mktemp("wheel"))


def _metadata(archive: zipfile.ZipFile, name: str) -> str:
    (path,) = [entry for entry in archive.namelist() if entry.endswith(f".dist-info/{name}")]
    return archive.read(path).decode()


@needs_rust
def test_wheel_is_stable_abi_with_the_accelerator_the_types_and_the_command(wheel: Path) -> None:
    assert fnmatch.fnmatch(wheel.name, "openbinlog-*-cp311-abi3-*.whl"), wheel.name
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        tags = [line for line in _metadata(archive, "WHEEL").splitlines() if line.startswith("Tag: ")]
        entry_points = _metadata(archive, "entry_points.txt")
        metadata = email.parser.Parser().parsestr(_metadata(archive, "METADATA"))
    assert tags and all(tag.startswith("Tag: cp311-abi3-") for tag in tags), tags
    assert fnmatch.filter(names, "openbinlog/_native*.abi3.so"), names
    assert {"openbinlog/py.typed", "openbinlog/_native.pyi", "openbinlog_conformance/py.typed"} <= set(names)
    assert "binlog = openbinlog.cli:main" in entry_points
    # Reading, writing and the command need these alone; everything else is an extra named for what it enables.
    requirements = [Requirement(text) for text in metadata.get_all("Requires-Dist") or []]
    core = {requirement.name for requirement in requirements if "extra" not in str(requirement.marker)}
    assert core == CORE_DEPENDENCIES, [str(requirement) for requirement in requirements]
    assert set(metadata.get_all("Provides-Extra") or []) == {*EXTRAS, "all", "test"}


def _site_packages_bytes(venv: Path) -> int:
    (site_packages,) = venv.glob("lib/python3*/site-packages")
    return sum(path.lstat().st_size for path in site_packages.rglob("*") if path.is_file() and not path.is_symlink())


def _run(command: list[str | Path], cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key not in {"PYTHONPATH", "OPENBINLOG_PURE_PYTHON"}}
    return subprocess.run(
        [str(part) for part in command],
        input=stdin,
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


# What the base install says about itself and about what it lacks.
PROBE = """
import io, json, openbinlog
from openbinlog import MissingExtraError
from openbinlog.compressed import unpacking
missing = {}
try:
    unpacking(io.BytesIO(), "zst")
except MissingExtraError as exc:
    missing["zst"] = str(exc)
try:
    import openbinlog_spark
except MissingExtraError as exc:
    missing["spark"] = str(exc)
print(json.dumps({"build": openbinlog.build_info().as_dict(), "missing": missing}))
"""


@needs_rust
def test_base_install_is_small_and_its_binlog_works(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    install = [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", str(wheel)]
    subprocess.run(install, check=True, timeout=BUILD_TIMEOUT)
    installed = _site_packages_bytes(venv)
    assert installed < BASE_INSTALL_LIMIT, f"the base install takes {installed / 2**20:.1f} MiB"

    binlog, log = venv / "bin" / "binlog", tmp_path / "log"
    appended = _run([binlog, "append", log], tmp_path, stdin="one\ntwo\nthree\n")
    assert appended.returncode == 0, appended.stderr
    dumped = _run([binlog, "dump", log], tmp_path)
    assert dumped.returncode == 0, dumped.stderr
    payloads = [base64.b64decode(json.loads(line)["payload"]) for line in dumped.stdout.splitlines()]
    assert payloads == [b"one", b"two", b"three"]
    verified = _run([binlog, "verify", log], tmp_path)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    stat = _run([binlog, "stat", "--json", log], tmp_path)
    assert stat.returncode == 0, stat.stderr
    assert json.loads(stat.stdout)["records"] == 3
    version = _run([binlog, "--version"], tmp_path)
    assert version.returncode == 0 and openbinlog.__version__ in version.stdout and "compiled" in version.stdout
    if " info " in _run([binlog, "--help"], tmp_path).stdout:
        info = _run([binlog, "info", log], tmp_path)
        assert info.returncode == 0, info.stderr

    # The conformance kit: the suite runs against the installed reference from a directory outside any checkout.
    listed = _run([binlog, "conformance", "list", "--case", "must.reader.valid.*"], tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "must.reader.valid.one_record" in listed.stdout
    suite = _run([binlog, "conformance", "run", "--impl", "python", "--out", tmp_path / "report"], tmp_path)
    assert suite.returncode == 0, suite.stdout + suite.stderr
    manifest = json.loads((ROOT / "conformance" / "manifest.json").read_text())
    must = sum(case["level"] == "must" and case["until"] is None for case in manifest["cases"])
    assert f"python: must {must}/{must}" in suite.stdout
    assert str(ROOT) not in (tmp_path / "report" / "results.json").read_text()
    # The skeleton testee in C, from the kit, passes its README's first case (skeleton/c/README.md).
    copied = _run([binlog, "conformance", "skeleton", "mine"], tmp_path)
    assert copied.returncode == 0, copied.stderr
    if shutil.which("cc") is not None:
        subprocess.run(["make", "-s", "-C", str(tmp_path / "mine")], check=True, timeout=120)
        first = ["--case", "must.reader.valid.two_records_tv9", "--out", tmp_path / "first"]
        passed = _run([binlog, "conformance", "run", "--impl", "mine/binlog-skeleton", *first], tmp_path)
        assert passed.returncode == 0 and "must 1/1" in passed.stdout, passed.stdout + passed.stderr

    probe = _run([python, "-c", PROBE], tmp_path)
    assert probe.returncode == 0, probe.stderr
    report = json.loads(probe.stdout)
    assert report["build"]["decoder"] == "compiled" and report["build"]["decoder_note"] is None
    assert report["build"]["extras"] == dict.fromkeys(EXTRAS, False)
    assert report["missing"] == {
        "zst": "reading and writing .zst segments needs the 'zstd' extra: pip install 'openbinlog[zstd]'",
        "spark": "the Spark data source openbinlog_spark needs the 'spark' extra: pip install 'openbinlog[spark]'",
    }


def test_without_rust_the_wheel_is_pure_python(tmp_path: Path) -> None:
    # setuptools-rust runs $CARGO: one that does not exist is a machine without Rust, for the optional extension.
    wheel = _build_wheel(tmp_path, os.environ | {"CARGO": str(tmp_path / "no-cargo")})
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    assert "openbinlog/_accel.py" in names
    assert not fnmatch.filter(names, "openbinlog/_native*.so")


def test_a_missing_optional_module_names_its_extra() -> None:
    with pytest.raises(MissingExtraError) as raised:
        require("openbinlog_absent_module", "zstd", "reading .zst segments")
    assert isinstance(raised.value, ImportError) and not isinstance(raised.value, openbinlog.BinlogError)
    assert str(raised.value) == "reading .zst segments needs the 'zstd' extra: pip install 'openbinlog[zstd]'"
    assert (raised.value.name, raised.value.extra) == ("openbinlog_absent_module", "zstd")


def test_a_module_that_fails_to_import_its_own_dependency_is_not_a_missing_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "openbinlog_broken_module.py").write_text("import openbinlog_absent_dependency\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError) as raised:
        require("openbinlog_broken_module", "zstd", "reading .zst segments")
    assert not isinstance(raised.value, MissingExtraError) and raised.value.name == "openbinlog_absent_dependency"


def _build_info(pure_python: str) -> dict[str, Any]:
    script = "import json, openbinlog; print(json.dumps(openbinlog.build_info().as_dict()))"
    env = os.environ | {"OPENBINLOG_PURE_PYTHON": pure_python}
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    assert not result.stderr  # the decoder chosen, pure or not, is silent at import
    info: dict[str, Any] = json.loads(result.stdout)
    assert set(info) == {"version", "python", "decoder", "decoder_note", "encoder", "extras"}
    assert info["version"] == openbinlog.__version__ and info["encoder"] == info["decoder"]
    assert set(info["extras"]) == set(EXTRAS)
    return info


def test_build_info_says_why_the_decoder_is_pure_python() -> None:
    info = _build_info("1")
    assert (info["decoder"], info["decoder_note"]) == ("pure Python", "OPENBINLOG_PURE_PYTHON=1")


def test_build_info_says_whether_the_decoder_is_compiled() -> None:
    info = _build_info("0")
    compiled = importlib.util.find_spec("openbinlog._native") is not None
    assert (info["decoder"], info["decoder_note"] is None) == ("compiled" if compiled else "pure Python", compiled)


def test_build_info_says_a_package_imported_from_a_zip_cannot_load_its_compiled_module(tmp_path: Path) -> None:
    """As Spark's addPyFile ships it: Python loads no extension module from a zip, and its own message
    blames a circular import."""
    archive = tmp_path / "openbinlog.zip"
    package = Path(openbinlog.__file__).parent
    with zipfile.ZipFile(archive, "w") as zipped:
        for path in package.rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts:
                zipped.write(path, path.relative_to(package.parent).as_posix())
    script = (
        "import json, sys\n"
        "sys.meta_path[:] = [finder for finder in sys.meta_path if 'editable' not in repr(finder).lower()]\n"
        f"sys.path.insert(0, {str(archive)!r})\n"
        "import openbinlog\n"
        "print(json.dumps([openbinlog.__file__, openbinlog.build_info().decoder_note]))\n"
    )
    env = os.environ | {"OPENBINLOG_PURE_PYTHON": "0"}
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    where, note = json.loads(result.stdout)
    assert where.startswith(str(archive))
    assert note == (
        f"openbinlog is imported from the zip archive {archive}, from which Python cannot load the compiled "
        "openbinlog._native: install the package instead"
    )
