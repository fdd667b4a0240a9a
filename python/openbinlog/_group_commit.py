"""Group commit (spec protocols.md 6.4): the queue of one writer's waiting appenders, and the lead of a batch.

Concurrent ``append`` calls queue; the first becomes the leader, gathers
for a bounded time, commits the whole queue as one batch through the
writer's ``_commit`` (``_commit``), wakes its callers and hands the lead on.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ._ref import Ref
from .errors import WriterClosedError

if TYPE_CHECKING:
    from ._writer import Writer

QUIET_GAPS = 4  # a gathering leader stops after this many average arrival gaps without an arrival


@dataclass
class Ticket:
    payload: bytes
    asqn: int
    ref: Ref | None = None
    error: BaseException | None = None
    done: bool = False


class Call:
    """One ``append`` or ``append_many`` call waiting in the queue, and the lock its thread sleeps on.

    The leader releases ``wake`` when the call's records are committed, or
    after setting ``lead`` when the call is to lead the next batch: each
    waiting thread is woken once, by name, never by a broadcast.
    """

    __slots__ = ("lead", "tickets", "wake")

    def __init__(self, tickets: list[Ticket]) -> None:
        self.tickets = tickets
        self.lead = False
        self.wake = threading.Lock()
        self.wake.acquire()


def gathering(
    whole_delay: bool, group_delay: float, last_batch: int, last_commit_seconds: float
) -> tuple[float, int] | None:
    """How long a leader may wait before it commits, and for how many appends (0: the whole delay), or None.

    ``whole_delay`` (the ``group`` mode) waits ``group_delay``. Otherwise a leader waits only
    when the last batch held several appends: until as many wait again, for
    no longer than the last commit took, nor than ``group_delay``.
    """
    if whole_delay:
        return group_delay, 0
    if last_batch > 1:
        return min(last_commit_seconds, group_delay), last_batch
    return None


class GroupCommit:
    """The queue of one ``Writer``, which commits each batch by calling the writer's ``_commit``."""

    def __init__(self, writer: Writer) -> None:
        self._writer = writer
        self._mutex = threading.Lock()
        self._arrivals = threading.Condition(self._mutex)
        self._idle = threading.Condition(self._mutex)
        self._pending: list[Call] = []
        self._leader_active = False
        self._closing = False  # close() is waiting for the group to go idle
        self._last_batch_calls = 0
        self._last_commit_seconds = 0.0
        self._gathering = False
        self._arrival_gap = 0.0  # seconds between appenders re-queueing while a leader gathers, averaged
        self._last_arrival = 0.0
        self._gather_target = 0  # calls the gathering leader waits for; 0: the whole group_delay

    @contextmanager
    def idle(self) -> Iterator[None]:
        """Hold the queue mutex once no batch is being committed, for ``close``: a later leader finds the queue
        closing and lets ``close`` know when it is done."""
        with self._mutex:
            self._closing = True
            while self._leader_active:
                self._idle.wait()
            yield

    def submit(self, tickets: list[Ticket]) -> list[Ref]:
        """Queue one call's tickets, lead or wait for their batch; return their refs or raise the first error."""
        call = Call(tickets)
        with self._mutex:
            self._writer._check_usable()
            if self._closing:  # close() waits for the queue to drain: nothing joins it any more
                raise WriterClosedError("writer is closing", path=self._writer.directory)
            self._pending.append(call)
            if not self._leader_active:
                self._leader_active = call.lead = True
            elif self._gathering:
                self._note_arrival()
        try:
            if not call.lead:
                call.wake.acquire()
            if call.lead:
                self._lead(call)
        except BaseException:
            self._abandon(call)
            raise
        for ticket in tickets:
            if ticket.error is not None:
                raise ticket.error
        return [ticket.ref for ticket in tickets if ticket.ref is not None]

    def _lead(self, own: Call) -> None:
        """Commit everything queued as one batch, then wake its callers and hand on the lead.

        ``own.lead`` stays set until the lead is handed on, so that an
        interrupted leader's ``_abandon`` knows whether it still has to.
        """
        interrupted: BaseException | None = None
        with self._mutex:
            try:
                self._gather()
            except BaseException as exc:  # an interrupt while gathering: commit the queue first
                interrupted = exc
            calls, self._pending = self._pending, []
        try:
            started = time.monotonic()
            self._writer._commit([ticket for call in calls for ticket in call.tickets])
            self._last_commit_seconds = time.monotonic() - started
        finally:
            with self._mutex:
                self._last_batch_calls = len(calls)
                own.lead = False
                self._hand_on_lead()
            for call in calls:
                if call is not own:
                    call.wake.release()
        if interrupted is not None:
            raise interrupted

    def _gather(self) -> None:
        """Under the queue mutex: wait, for a bounded time, for more appends to join the batch.

        The ``group`` mode waits ``group_delay``. Otherwise the leader waits
        only when the last batch was shared by several calls: until as many
        are queued again, for no longer than the last commit took (nor than
        ``group_delay``), and no longer than a few arrival gaps after the last
        arrival. Threads just woken from the previous batch re-queue a few
        tens of microseconds apart; without the wait, batches split into two
        halves that alternate, each with its own sync. A silence of several
        gaps means the others have stopped appending, so the one appender
        left pays that silence once, not a whole commit. One appender alone
        never waits.
        """
        writer = self._writer
        whole_delay = writer.durability == "group"
        plan = gathering(whole_delay, writer.group_delay, self._last_batch_calls, self._last_commit_seconds)
        if plan is None:
            return
        delay, target = plan
        self._last_arrival = time.monotonic()
        deadline = self._last_arrival + delay
        self._gather_target = target
        self._gathering = True
        try:
            while target == 0 or len(self._pending) < target:
                now = time.monotonic()
                left = deadline - now
                if target and self._arrival_gap:
                    left = min(left, self._last_arrival + QUIET_GAPS * self._arrival_gap - now)
                if left <= 0:
                    break
                self._arrivals.wait(left)
        finally:
            self._gathering = False

    def _note_arrival(self) -> None:
        """Under the queue mutex, while a leader gathers: time the arrival, and wake the leader once
        the batch is as large as it waits for. Waking it at every arrival would cost a thread switch
        per appender, each contending for the interpreter with the appenders still arriving."""
        if not self._gather_target:  # the group mode waits out its delay whatever arrives
            return
        now = time.monotonic()
        gap = now - self._last_arrival
        self._arrival_gap = gap if not self._arrival_gap else 0.8 * self._arrival_gap + 0.2 * gap
        self._last_arrival = now
        if len(self._pending) >= self._gather_target:
            self._arrivals.notify()

    def _hand_on_lead(self) -> None:
        """Under the queue mutex: the first queued call leads the next batch, or no one does."""
        if self._pending:
            successor = self._pending[0]
            successor.lead = True
            successor.wake.release()
        else:
            self._leader_active = False
            if self._closing:
                self._idle.notify_all()

    def _abandon(self, call: Call) -> None:
        """A caller was interrupted: drop its records if still queued, and pass on a lead it still holds."""
        with self._mutex:
            if call in self._pending:
                self._pending.remove(call)
            if call.lead:
                call.lead = False
                self._hand_on_lead()
