import os

import pytest
from hypothesis import HealthCheck, settings
from logtools import log_dir

__all__ = ["log_dir"]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--full",
        action="store_true",
        default=False,
        help="the long runs: larger crash workloads, denser nested crashes, every decision mutant on every case",
    )


@pytest.fixture(scope="session")
def full_run(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--full"))


# Shared machines are noisy: no per-example deadlines; CI draws the same examples each run.
settings.register_profile(
    "default", deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
settings.register_profile(
    "ci", deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
settings.load_profile("ci" if os.environ.get("CI") else "default")
