"""Worker processes: the benchmark script started again with ``--worker NAME ARGS``.

Workers talk JSON lines on stdout; a worker that must start on a signal
prints ``ready`` and waits for a line on stdin. Every wait has a timeout.
"""

from __future__ import annotations

import json
import select
import subprocess
import sys
from pathlib import Path
from typing import Any

BENCH_SCRIPT = Path(__file__).resolve().parent.parent / "bench.py"
READY = "ready"


def worker_command(name: str, **arguments: Any) -> list[str]:
    return [sys.executable, str(BENCH_SCRIPT), "--worker", name, json.dumps(arguments)]


def start_worker(name: str, env: dict[str, str] | None = None, **arguments: Any) -> subprocess.Popen[str]:
    return subprocess.Popen(
        worker_command(name, **arguments),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def run_worker(name: str, *, timeout: float, env: dict[str, str] | None = None, **arguments: Any) -> Any:
    """Run a worker to its end; return the JSON of its last line of output."""
    done = subprocess.run(
        worker_command(name, **arguments), capture_output=True, text=True, timeout=timeout, env=env, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"worker {name} failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def wait_ready(process: subprocess.Popen[str], *, timeout: float) -> None:
    """Wait until ``process`` prints ``ready``; kill it if it does not within ``timeout`` seconds."""
    assert process.stdout is not None
    readable, _, _ = select.select([process.stdout], [], [], timeout)
    line = process.stdout.readline().strip() if readable else "(no answer)"
    if line != READY:
        process.kill()
        _, error = process.communicate(timeout=10)
        raise RuntimeError(f"worker did not get ready ({line!r}): {error.strip()[-2000:]}")


def finish(process: subprocess.Popen[str], *, timeout: float) -> Any:
    """Collect the JSON a started worker prints last; kill it if it overruns ``timeout``."""
    try:
        output, error = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate(timeout=10)
        raise
    if process.returncode != 0:
        raise RuntimeError(f"worker failed ({process.returncode}): {error.strip()[-2000:]}")
    return json.loads(output.strip().splitlines()[-1])


def signal_ready_and_wait() -> None:
    """Worker side: announce readiness, then wait for the go line."""
    print(READY, flush=True)
    sys.stdin.readline()


def emit(result: Any) -> None:
    """Worker side: the result, as the last line of output."""
    print(json.dumps(result), flush=True)
