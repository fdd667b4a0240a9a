"""The Kaitai cross-checks' shared fixture: the generated parsers and harnesses, built once a session."""

from __future__ import annotations

import pytest
from kaitai_tools import build_everything


@pytest.fixture(scope="session")
def kaitai_build() -> None:
    """Install the toolchain pieces, compile every .ksy, build the Java and Go harnesses."""
    build_everything()
