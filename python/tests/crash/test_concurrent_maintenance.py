"""Every maintenance command at once, beside writer processes killed at random (spec 2.7).

Two writer processes append and cut over; one at a time is killed with
SIGKILL and restarted. Meanwhile real ``binlog`` processes run ``compress``,
``retain``, ``repair`` and ``verify`` over and over, and a durable subscriber
consumes and commits its checkpoint. Asserted: no command fails, nothing
acknowledged is lost (unless the subscriber consumed it and retention then
removed it), and no removed segment comes back.
"""

from __future__ import annotations

import itertools
import os
import random
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from openbinlog import Reader, Subscriber, add_subscriber, recover, verify
from openbinlog._format import SEGMENT_NAME

CHILD = Path(__file__).resolve().parents[1] / "child_writer.py"
COMMANDS = (
    ("compress",),
    ("retain", "--max-bytes", "1"),
    ("repair",),
    ("verify",),
    ("info",),
    # Dry runs hold no lock: what they list may be gone by the time they read it.
    ("compress", "--dry-run"),
    ("retain", "--max-bytes", "1", "--dry-run"),
    ("repair", "--dry-run"),
)


@dataclass
class _WriterProcess:
    directory: Path
    acked: set[int]
    process: subprocess.Popen[bytes] | None = None
    drain: threading.Thread | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(CHILD), str(self.directory), "15"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        stdout = self.process.stdout
        assert stdout is not None
        # Only whole lines are acknowledgements: the child prints an index once append returned.
        self.drain = threading.Thread(
            target=lambda: self.acked.update(int(line) for line in stdout if line.endswith(b"\n"))
        )
        self.drain.start()

    def kill(self) -> None:
        assert self.process is not None and self.drain is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()
        self.drain.join()


@dataclass
class _Campaign:
    directory: Path
    stop: threading.Event = field(default_factory=threading.Event)
    failures: list[str] = field(default_factory=list)
    runs: dict[str, int] = field(default_factory=dict)
    consumed: int = 0  # the subscriber's checkpoint index
    resurrected: list[str] = field(default_factory=list)

    def maintain(self, seed: int) -> None:
        # Every command in turn, in an order of the seed's: each runs in a short campaign too.
        order = random.Random(seed).sample(COMMANDS, len(COMMANDS))
        for command in itertools.cycle(order):
            if self.stop.is_set():
                break
            done = subprocess.run(
                [sys.executable, "-m", "openbinlog", command[0], str(self.directory), *command[1:]],
                capture_output=True,
                check=False,
                timeout=120,
            )
            self.runs[" ".join(command)] = self.runs.get(" ".join(command), 0) + 1
            if done.returncode != 0:
                self.failures.append(f"{' '.join(command)} exited {done.returncode}: {done.stderr.decode()[-400:]}")

    def subscribe(self) -> None:
        while not self.stop.is_set():
            try:
                with Subscriber(self.directory, "archiver") as subscriber:
                    last = None
                    for count, entry in enumerate(subscriber):
                        last = entry
                        if count == 40:
                            break
                    if last is not None:
                        subscriber.commit(last)
                        self.consumed = last.index
            except Exception as exc:
                self.failures.append(f"subscriber: {type(exc).__name__}: {exc}")
            time.sleep(0.05)

    def watch(self) -> None:
        """The lowest segment present never goes down: a removed segment never comes back."""
        lowest = 0
        while not self.stop.is_set():
            logs = [int(m[1]) for name in os.listdir(self.directory) if (m := SEGMENT_NAME.match(name))]
            if logs:
                if min(logs) < lowest:
                    self.resurrected.append(f"segment {min(logs)} is back after {lowest} became the lowest")
                lowest = max(lowest, min(logs))
            time.sleep(0.01)


def test_maintenance_beside_killed_writers_loses_nothing_and_brings_nothing_back(
    tmp_path: Path, full_run: bool
) -> None:
    duration = 60.0 if full_run else 12.0
    directory = tmp_path / "log"
    acked: set[int] = set()
    writers = [_WriterProcess(directory, acked) for _ in range(2)]
    writers[0].start()
    while not acked:  # the first writer has created the log
        time.sleep(0.01)
    writers[1].start()
    add_subscriber(directory, "archiver")
    campaign = _Campaign(directory)
    helpers = [threading.Thread(target=campaign.maintain, args=(seed,)) for seed in range(2)] + [
        threading.Thread(target=campaign.subscribe),
        threading.Thread(target=campaign.watch),
    ]
    for helper in helpers:
        helper.start()
    chooser = random.Random(7)
    deadline = time.monotonic() + duration
    kills = 0
    try:
        while time.monotonic() < deadline:
            time.sleep(chooser.uniform(0.2, 0.8))
            victim = chooser.choice(writers)
            victim.kill()
            kills += 1
            victim.start()
    finally:
        campaign.stop.set()
        for helper in helpers:
            helper.join()
        for writer in writers:
            writer.kill()

    recover(directory)
    with Reader(directory) as reader:
        indexes = [entry.index for entry in reader]
    assert verify(directory).ok
    assert campaign.failures == []
    assert campaign.resurrected == []
    assert kills >= 10 and set(campaign.runs) == {" ".join(c) for c in COMMANDS}, (kills, campaign.runs)
    first = indexes[0] if indexes else max(acked) + 1
    assert indexes == list(range(first, first + len(indexes)))
    lost = sorted(i for i in acked if i >= first and i not in set(indexes))
    assert lost == [], f"acknowledged records lost: {lost[:10]}"
    removed_unconsumed = sorted(i for i in acked if i < first and i > campaign.consumed)
    assert removed_unconsumed == [], f"removed before the subscriber consumed them: {removed_unconsumed[:10]}"
    assert first > 1, "retention never removed a segment: the test did not exercise it"
