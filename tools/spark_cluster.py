"""A Spark standalone cluster on 127.0.0.1 from the installed pyspark: a master and workers, for the cluster tests.

python tools/spark_cluster.py run -- COMMAND ...     # start, run COMMAND with the cluster's URL, stop; COMMAND's status
python tools/spark_cluster.py start [--state DIR]    # start and leave running (the URL is printed)
python tools/spark_cluster.py stop [--state DIR]     # stop what `start` recorded in DIR

Every daemon (``bin/spark-class`` running ``org.apache.spark.deploy.master.Master`` or
``...worker.Worker``) starts in a session of its own, so its process group holds
it and everything it starts (executors, their Python workers) and nothing else.
Each is recorded in ``DIR/cluster.json`` as soon as it is started, with its
start time; stopping signals exactly those groups (SIGTERM, then SIGKILL after
a grace period), and never a group whose leader is another process now (a
reused process id). ``run`` stops the cluster whatever the command does (a
failure, an interrupt, SIGTERM), and so does a start that fails or times out.

The master listens on 7077 unless that port is taken (another cluster on this
machine), then on a free port, and says so; the web UIs and worker ports are
free ports. Spark's own port retries are off (``spark.port.maxRetries=0``),
so a daemon listens exactly where it was told or fails, and the start names it.
``run`` sets ``OPENBINLOG_SPARK_MASTER`` (the tests' and the conformance
testee's master URL) and ``OPENBINLOG_SPARK_MASTER_UI`` for the command.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MASTER_VARIABLE = "OPENBINLOG_SPARK_MASTER"
MASTER_UI_VARIABLE = "OPENBINLOG_SPARK_MASTER_UI"  # the master's web UI (its /json/ lists workers and applications)
HOST = "127.0.0.1"
PREFERRED_MASTER_PORT = 7077
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
STATE_FILE = "cluster.json"
# /proc/PID/stat after the command name starts at field 3 of proc(5) (state): the process group is field 5, the
# start time (ticks since boot; a process id that names another process now has another one) field 22.
STAT_PGRP = 5 - 3
STAT_START = 22 - 3
PR_SET_CHILD_SUBREAPER = 36  # prctl(2)


class ClusterError(Exception):
    """A cluster that could not be started or stopped as asked."""


@dataclass
class Daemon:
    name: str
    pid: int  # also its process group and session: it was started with setsid
    started: int  # /proc/PID/stat start time, to tell it from a later process with the same id
    log: str


@dataclass
class Cluster:
    url: str
    master_ui: str
    state: str
    daemons: list[Daemon] = field(default_factory=list)

    def save(self) -> None:
        path = Path(self.state, STATE_FILE)
        temporary = path.with_suffix(".tmp")
        temporary.write_text(json.dumps(asdict(self), indent=2) + "\n")
        temporary.replace(path)

    @classmethod
    def load(cls, state: Path) -> Cluster:
        data: dict[str, Any] = json.loads(Path(state, STATE_FILE).read_text())
        daemons = [Daemon(**item) for item in data.pop("daemons")]
        return cls(**data, daemons=daemons)


# -- processes --------------------------------------------------------------------------------------


def _stat(pid: int) -> tuple[int, int] | None:
    """(process group, start time) of a live process, None when there is none (or only a zombie)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = text[text.rindex(")") + 2 :].split()  # after the command name, which may hold spaces
    if fields[0] == "Z":
        return None
    return int(fields[STAT_PGRP]), int(fields[STAT_START])


def _start_time(pid: int) -> int:
    """The start time of a process just started (a zombie's too: /proc keeps it until it is reaped)."""
    text = Path(f"/proc/{pid}/stat").read_text()
    return int(text[text.rindex(")") + 2 :].split()[STAT_START])


def members(daemon: Daemon) -> list[int]:
    """The live processes of a daemon's group; none when its id now leads a group that is not ours."""
    leader = _stat(daemon.pid)
    if leader is not None and leader[1] != daemon.started:
        return []  # the id was reused (our group died with all its members): not ours to signal
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = _stat(int(entry))
            if stat is not None and stat[0] == daemon.pid:
                found.append(int(entry))
    return sorted(found)


def stop_daemons(daemons: list[Daemon], grace: float = 15.0) -> list[int]:
    """SIGTERM each daemon's group (workers first), SIGKILL what is left after ``grace``; the processes left."""
    for daemon in reversed(daemons):
        if members(daemon):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(daemon.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(members(daemon) for daemon in daemons):
        _reap(daemons)
        time.sleep(0.2)
    for daemon in daemons:
        if members(daemon):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(daemon.pid, signal.SIGKILL)
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline and any(members(daemon) for daemon in daemons):
        _reap(daemons)
        time.sleep(0.1)
    _reap(daemons)
    return [pid for daemon in daemons for pid in members(daemon)]


def _reap(daemons: list[Daemon]) -> None:
    """Collect the exit status of the daemons' processes that are this process's children: the daemons, and under
    ``run`` (a subreaper) the processes of their groups that they left unreaped (spark-class's launcher)."""
    for daemon in daemons:
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-daemon.pid, os.WNOHANG)[0]:
                pass


def _reap_adopted(grace: float = 10.0) -> list[int]:
    """Reap the orphans ``run`` adopted as a subreaper (the command's Spark JVMs end after it); wait ``grace``
    seconds for those still running, and return their ids."""
    deadline = time.monotonic() + grace
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG)[0]:
                continue
        except ChildProcessError:
            return []  # no child left
        children = _children()  # zombies among them are reaped on the next turn
        if not children or time.monotonic() > deadline:
            return [pid for pid in children if _stat(pid) is not None]
        time.sleep(0.1)


def _children() -> list[int]:
    """This process's children, from /proc (field 4 of proc(5)'s stat is the parent)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                text = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(text[text.rindex(")") + 2 :].split()[4 - 3]) == os.getpid():
                found.append(int(entry))
    return found


def _become_subreaper() -> None:
    """Orphans of the daemons come to this process rather than to init, so that stopping reaps them too."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


# -- starting -----------------------------------------------------------------------------------------


def spark_home() -> Path:
    """The installed pyspark: its package directory is a Spark distribution (bin/, jars/)."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        raise ClusterError("pyspark is not installed in this interpreter")
    home = Path(spec.origin).parent
    if not (home / "bin" / "spark-class").is_file():
        raise ClusterError(f"{home} has no bin/spark-class")
    return home


def port_is_free(port: int) -> bool:
    """Whether nothing listens on ``port``: Spark's servers reuse addresses, so a closed connection's TIME_WAIT
    does not make a port taken."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((HOST, port))
        except OSError:
            return False
    return True


def free_ports(count: int) -> list[int]:
    """``count`` different ports nothing listens on (each held until all are chosen, so none repeats)."""
    with contextlib.ExitStack() as stack:
        probes = [stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) for _ in range(count)]
        for probe in probes:
            probe.bind((HOST, 0))
        return [int(probe.getsockname()[1]) for probe in probes]


def master_status(ui: str) -> dict[str, Any] | None:
    try:
        with urllib.request.urlopen(f"{ui}/json/", timeout=2) as answer:
            status: dict[str, Any] = json.load(answer)
            return status
    except (OSError, urllib.error.URLError, ValueError):
        return None


def _tail(path: str, lines: int = 15) -> str:
    try:
        text = Path(path).read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(f"    {line}" for line in text[-lines:])


@dataclass
class Plan:
    """A cluster to start: its URL and ports are known before any daemon runs."""

    cluster: Cluster
    commands: list[tuple[str, list[str]]]
    env: dict[str, str]


def plan(state: Path, *, workers: int = 2, cores: int = 2, memory: str = "2g", port: int = 0) -> Plan:
    """The daemons of a master and ``workers`` workers, and the ports they listen on.

    ``port`` 0: 7077 when it is free, else a free port.
    """
    home = spark_home()
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        raise ClusterError("no Java runtime: Spark needs java on PATH or JAVA_HOME")
    state.mkdir(parents=True, exist_ok=True)
    if (state / STATE_FILE).exists():
        old = Cluster.load(state)
        if any(members(daemon) for daemon in old.daemons):
            raise ClusterError(f"{state} records a cluster that is still running ({old.url}): stop it first")
    ports = iter(free_ports(2 + 2 * workers))  # the master's, its UI's, and each worker's and its UI's
    if port == 0:
        port = PREFERRED_MASTER_PORT if port_is_free(PREFERRED_MASTER_PORT) else next(ports)
        if port != PREFERRED_MASTER_PORT:
            print(f"spark_cluster: port {PREFERRED_MASTER_PORT} is taken, the master listens on {port}", flush=True)
    elif not port_is_free(port):
        raise ClusterError(f"port {port} on {HOST} is taken (another Spark master?)")
    conf = state / "conf"
    conf.mkdir(exist_ok=True)  # an empty SPARK_CONF_DIR: no spark-defaults.conf of the machine applies
    properties = state / "daemon.properties"
    # No REST submission server: it would listen on the fixed port 6066, and a second cluster could not start.
    properties.write_text(
        "spark.port.maxRetries 0\nspark.master.rest.enabled false\nspark.worker.cleanup.enabled false\n"
    )
    env = {
        **os.environ,
        "SPARK_HOME": str(home),
        "SPARK_CONF_DIR": str(conf),
        "SPARK_LOCAL_IP": HOST,
        "SPARK_LOCAL_DIRS": str(state / "local"),
        "SPARK_DAEMON_MEMORY": "512m",
    }
    master_ui = next(ports)
    cluster = Cluster(url=f"spark://{HOST}:{port}", master_ui=f"http://{HOST}:{master_ui}", state=str(state))
    spark_class = [str(home / "bin" / "spark-class")]
    options = ["--host", HOST, "--properties-file", str(properties)]
    commands = [("master", [*spark_class, MASTER_CLASS, *options, "--port", str(port), "--webui-port", str(master_ui)])]
    for number in range(1, workers + 1):
        work = state / f"worker-{number}"
        work.mkdir(exist_ok=True)
        listen = ["--port", str(next(ports)), "--webui-port", str(next(ports))]
        resources = ["--cores", str(cores), "--memory", memory, "--work-dir", str(work)]
        commands.append((f"worker-{number}", [*spark_class, WORKER_CLASS, *options, *listen, *resources, cluster.url]))
    return Plan(cluster, commands, env)


def launch(planned: Plan, timeout: float = 90.0) -> Cluster:
    """Start the master, then the workers once it is alive; return once every worker is registered.

    On a failure, a timeout or an interrupt, stop what was started and raise.
    """
    cluster = planned.cluster
    workers = len(planned.commands) - 1
    try:
        for name, command in planned.commands:
            log = Path(cluster.state, f"{name}.log")
            # No signal between the start of a daemon and its record: what is started is always recorded.
            blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM, signal.SIGHUP})
            try:
                with log.open("wb") as output:
                    process = subprocess.Popen(
                        command,
                        stdin=subprocess.DEVNULL,
                        stdout=output,
                        stderr=subprocess.STDOUT,
                        env=planned.env,
                        cwd=cluster.state,
                        start_new_session=True,
                    )
                cluster.daemons.append(Daemon(name, process.pid, _start_time(process.pid), str(log)))
                cluster.save()
            finally:
                signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
            if name == "master":
                _wait(cluster, timeout, lambda status: status.get("status") == "ALIVE", "the master to be alive")
        _wait(cluster, timeout, lambda status: status.get("aliveworkers") == workers, f"{workers} workers")
    except BaseException:
        left = stop_daemons(cluster.daemons)
        if left:
            print(f"spark_cluster: processes left after a failed start: {left}", file=sys.stderr)
        raise
    return cluster


def start(state: Path, *, timeout: float = 90.0, **options: Any) -> Cluster:
    return launch(plan(state, **options), timeout)


def _wait(cluster: Cluster, timeout: float, ready: Any, what: str) -> None:
    deadline = time.monotonic() + timeout
    while True:
        for daemon in cluster.daemons:
            if _stat(daemon.pid) is None:
                raise ClusterError(f"the {daemon.name} exited while starting; {daemon.log} ends:\n{_tail(daemon.log)}")
        status = master_status(cluster.master_ui)
        if status is not None and ready(status):
            return
        if time.monotonic() > deadline:
            logs = "\n".join(f"  {daemon.log}:\n{_tail(daemon.log)}" for daemon in cluster.daemons)
            raise ClusterError(f"timed out after {timeout:.0f} s waiting for {what}; the logs end:\n{logs}")
        time.sleep(0.25)


def stop(state: Path) -> list[int]:
    """Stop the daemons recorded in ``state``; the process ids still alive afterwards (none, normally)."""
    if not (state / STATE_FILE).exists():
        return []
    cluster = Cluster.load(state)
    return stop_daemons(cluster.daemons)


# -- running a command on a cluster ---------------------------------------------------------------------


class Stopped(Exception):
    """SIGTERM or SIGHUP: unwind so that the cluster is stopped."""


@contextlib.contextmanager
def _signals_unwind() -> Iterator[None]:
    def handler(number: int, frame: FrameType | None) -> None:
        raise Stopped(signal.Signals(number).name)

    previous = {number: signal.signal(number, handler) for number in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for number, action in previous.items():
            signal.signal(number, action)


def run(command: list[str], state: Path | None, *, timeout: float = 90.0, **options: Any) -> int:
    """Start a cluster, run ``command`` with its URL, stop the cluster; the command's exit status.

    The command starts with the daemons (its URL is known before they run), so what it does before it needs the
    cluster overlaps the start; the cluster tests wait for the workers at the master's UI.
    """
    temporary = state is None
    where = Path(tempfile.mkdtemp(prefix="spark-cluster-")) if state is None else state
    _become_subreaper()
    status = 1
    began = time.monotonic()
    with _signals_unwind():
        try:
            planned = plan(where, **options)
            cluster = planned.cluster
            env = {**os.environ, MASTER_VARIABLE: cluster.url, MASTER_UI_VARIABLE: cluster.master_ui}
            child = subprocess.Popen(command, env=env)
            try:
                launch(planned, timeout)
                print(f"spark_cluster: {cluster.url} up in {time.monotonic() - began:.1f} s", flush=True)
                status = child.wait()
            except BaseException:
                child.terminate()
                try:
                    child.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    child.kill()
                    child.wait()
                raise
        except ClusterError as exc:
            print(f"spark_cluster: {exc}", file=sys.stderr)
        except (KeyboardInterrupt, Stopped) as exc:
            print(f"spark_cluster: interrupted ({exc or 'SIGINT'}), stopping the cluster", file=sys.stderr)
            status = 130
        finally:
            left = stop(where)
    lingering = _reap_adopted()
    if lingering:
        print(f"spark_cluster: processes the command left running (not stopped here): {lingering}", file=sys.stderr)
    if left:
        print(f"spark_cluster: processes of the cluster still alive after stopping it: {left}", file=sys.stderr)
        return status or 1
    print(f"spark_cluster: stopped, {time.monotonic() - began:.1f} s in all", flush=True)
    if temporary and status == 0:
        shutil.rmtree(where, ignore_errors=True)
    elif status != 0:
        print(f"spark_cluster: the daemons' logs are in {where}", file=sys.stderr)
    return status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=["run", "start", "stop"], help="run: run the command after --")
    parser.add_argument("--state", type=Path, help="where the cluster's record, logs and scratch go")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--cores", type=int, default=2, help="cores each worker offers (two applications fit)")
    parser.add_argument("--memory", default="2g", help="memory each worker offers to executors")
    parser.add_argument("--port", type=int, default=0, help="the master's port (default 7077, or a free one)")
    parser.add_argument("--timeout", type=float, default=90.0, help="seconds to wait for the workers to register")
    given = sys.argv[1:] if argv is None else argv
    command = given[given.index("--") + 1 :] if "--" in given else []
    args = parser.parse_args(given[: given.index("--")] if "--" in given else given)
    options = {
        "workers": args.workers,
        "cores": args.cores,
        "memory": args.memory,
        "port": args.port,
        "timeout": args.timeout,
    }
    if args.action == "run":
        if not command:
            parser.error("run needs a command: run [OPTIONS] -- COMMAND ...")
        return run(command, args.state, **options)
    state = args.state or ROOT / "build" / "spark-cluster"
    if args.action == "start":
        try:
            cluster = start(state, **options)
        except ClusterError as exc:
            print(f"spark_cluster: {exc}", file=sys.stderr)
            return 1
        print(cluster.url)
        return 0
    left = stop(state)
    if left:
        print(f"spark_cluster: still alive: {left}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
