"""What the Kaitai cross-checks share: where things are, building the parsers, running the harnesses.

Each harness (tools/ksy/harness/) parses the files named on its command
line with the parsers kaitai-struct-compiler generated from ksy/ and prints
one JSON line per file; the tests compare those lines with the reference.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[3]
TOOLS = REPO / "tools" / "ksy"
BUILD = REPO / "build" / "ksy"
LANGUAGES = ("python", "javascript", "java", "go")
TARGETS = ("python", "javascript", "java", "go", "cpp_stl")


def run(command: list[str], what: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.fail(f"{what} failed (exit {done.returncode}):\n{done.stdout}\n{done.stderr}")
    return done


def build_everything() -> None:
    """Install the toolchain pieces, compile every .ksy, build the Java and Go harnesses."""
    missing = [tool for tool in ("node", "npm", "java", "javac", "mvn", "go") if shutil.which(tool) is None]
    if missing:
        pytest.fail(f"the Kaitai cross-check needs these tools on PATH: {', '.join(missing)}")
    if importlib.util.find_spec("kaitaistruct") is None:
        pytest.fail("kaitaistruct is not installed: pip install -e '.[test]'")
    run(["bash", str(TOOLS / "setup.sh")], "tools/ksy/setup.sh")
    run(["node", str(TOOLS / "compile.js")], "tools/ksy/compile.js")
    run(["bash", str(TOOLS / "build_harnesses.sh")], "tools/ksy/build_harnesses.sh")


def harness_command(language: str) -> list[str]:
    return {
        "python": [sys.executable, str(TOOLS / "harness" / "python" / "harness.py")],
        "javascript": ["node", str(TOOLS / "harness" / "js" / "harness.js")],
        "java": [
            "java",
            "-cp",
            f"{BUILD / 'java-classes'}:{BUILD / 'lib' / 'kaitai-struct-runtime-0.11.jar'}",
            "Harness",
        ],
        "go": [str(BUILD / "go-harness" / "harness")],
    }[language]


def run_harness(language: str, mode: str, paths: list[Path]) -> dict[Path, dict[str, Any]]:
    """One harness process for many files: it prints one JSON line per file."""
    done = run([*harness_command(language), mode, *map(str, paths)], f"{language} harness ({mode})")
    lines = done.stdout.splitlines()
    assert len(lines) == len(paths), done.stdout + done.stderr
    return {path: json.loads(line) for path, line in zip(paths, lines, strict=True)}
