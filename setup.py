"""The conformance kit goes into the wheel: the manifest, the fixtures, a registry of the reference testee and
the skeleton testee in C, under openbinlog_conformance/kit/, so that ``binlog conformance run`` works without a
checkout.

Everything else is declared in pyproject.toml; this file only adds that step to build_py.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
KIT = Path("openbinlog_conformance") / "kit"
# In the kit the reference testee is the installed package, run as a module.
KIT_REGISTRY = {
    "implementations": [
        {
            "name": "python",
            "description": "the reference implementation (the installed openbinlog), reader and writer",
            "command": ["{python}", "-m", "openbinlog_conformance.reference_testee"],
            "build": None,
        }
    ]
}


class BuildWithKit(build_py):  # type: ignore[misc]
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install finds the checkout's manifest
        manifest = ROOT / "conformance" / "manifest.json"
        if not manifest.is_file() or not (ROOT / "fixtures").is_dir():
            raise SystemExit("the conformance kit needs conformance/manifest.json and fixtures/ (make fixtures)")
        if not (ROOT / "conformance" / "skeleton").is_dir():
            raise SystemExit("the conformance kit needs conformance/skeleton/")
        kit = Path(self.build_lib) / KIT
        shutil.rmtree(kit, ignore_errors=True)
        (kit / "conformance").mkdir(parents=True)
        shutil.copy2(manifest, kit / "conformance" / "manifest.json")
        (kit / "conformance" / "implementations.json").write_text(json.dumps(KIT_REGISTRY, indent=2) + "\n")
        shutil.copytree(ROOT / "fixtures", kit / "fixtures")
        skeleton = ROOT / "conformance" / "skeleton"
        ignore = shutil.ignore_patterns("binlog-skeleton", "*.o", ".gitignore")
        shutil.copytree(skeleton, kit / "conformance" / "skeleton", ignore=ignore)


setup(cmdclass={"build_py": BuildWithKit})
