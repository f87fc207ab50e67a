"""Running synchronous, possibly CPU-bound tool work off the event loop, with a hard limit.

A spec tool's `returns`, effects and observation are plain Python over the
model's arguments; one of them can loop for a long time (a model-written
regex, a huge computation). Run on the event loop, that would stall every
concurrent episode and no ``asyncio`` timeout could fire. :func:`run_blocking`
runs such work in a worker thread instead:

* the caller awaits the result for at most ``timeout`` seconds; then it gets
  :class:`asyncio.TimeoutError` while the event loop keeps serving the other
  episodes (the worker gives the GIL back every few milliseconds);
* at the timeout the worker itself is interrupted: :class:`Interrupted` is
  raised in its thread at the next Python bytecode, so a pure-Python loop
  stops instead of burning a core for the rest of the run. Work stuck inside
  one long C call (e.g. a ``re`` match, a blocking read) stops only when that
  call returns: until then its thread is *held*.

Held threads must not starve the others, whose calls did nothing wrong (96
stuck calls of one session once filled a pool of 64 threads, and another
session's ordinary tool waited behind them until it timed out). So:

* the pool runs up to :data:`MAX_WORKERS` calls that have not timed out, and
  starts a thread in place of each held one (up to :data:`MAX_HELD_THREADS`
  held threads in all, a last bound on what stuck calls can cost; past it,
  calls wait for a thread again);
* each caller — an episode, i.e. its environment, the ``owner`` of its calls —
  may hold at most :data:`MAX_HELD_PER_OWNER` threads; while it holds that
  many, its further calls fail at once with :class:`TooManyStuckCalls` (a tool
  error) instead of taking more. A held thread that finally returns frees its
  place, and a thread above the pool's size then ends.

``Interrupted`` derives from ``BaseException`` so that code catching
``Exception`` (an expression's error capture) cannot swallow it. A call that
times out may have applied some of its effects before it was stopped.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import ctypes
import threading
from collections.abc import Callable
from typing import Any, Literal

__all__ = [
    "MAX_HELD_PER_OWNER",
    "MAX_HELD_THREADS",
    "MAX_WORKERS",
    "FifoSemaphore",
    "Interrupted",
    "TooManyStuckCalls",
    "held_threads",
    "run_blocking",
]

MAX_WORKERS = 64
"""Calls running at once, not counting those held past their timeout; further
calls wait in a queue."""
MAX_HELD_PER_OWNER = 4
"""Threads one owner (an episode) may hold with calls that timed out and have not
returned; while it holds that many, its further calls fail at once."""
MAX_HELD_THREADS = 1024
"""Held threads in all (every owner's together) that the pool starts new threads in
place of; past it, new calls wait for a thread."""


class Interrupted(BaseException):
    """Raised inside a worker whose job ran past its time limit."""


class TooManyStuckCalls(RuntimeError):
    """The caller already holds :data:`MAX_HELD_PER_OWNER` threads with calls that timed
    out and are still running: this call is not run."""

    def __init__(self, held: int) -> None:
        super().__init__(
            f"not run: {held} earlier calls of this episode timed out and are still stuck"
            f" in their worker threads (at most {MAX_HELD_PER_OWNER}); calls fail at once"
            " until one of them returns"
        )


def _raise_in_thread(thread_id: int, exc_type: type[BaseException] | None) -> None:
    """Schedule ``exc_type`` in another thread (``None`` clears a pending one)."""
    target = ctypes.py_object(exc_type) if exc_type is not None else None
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), target)


class _Job:
    """One call: run in a worker, its outcome handed to the event loop's future."""

    def __init__(self, fn: Callable[[], Any], owner: object | None = None) -> None:
        self.fn = fn
        self.owner = owner  # kept alive while the job is: its id() stays its own
        self.loop = asyncio.get_running_loop()
        self.future: asyncio.Future[Any] = self.loop.create_future()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._thread_id: int | None = None
        self._stopped = False  # timed out: do not start, or interrupted once
        self._interrupt_sent = False
        self.held = False  # timed out while running: its worker is held until it returns

    def run(self) -> None:
        with self._lock:
            if self._stopped:
                return
            self._thread = threading.current_thread()
            self._thread_id = threading.get_ident()
        try:
            try:
                value = self.fn()
            finally:
                self._leave()
        except Interrupted:
            self._leave()
            self._settle(exc=asyncio.TimeoutError())
        except BaseException as exc:  # the caller re-raises it on the event loop
            self._settle(exc=exc)
        else:
            self._settle(value=value)

    def _leave(self) -> None:
        """After this returns, no interrupt can reach the worker for this job."""
        with self._lock:
            if self._interrupt_sent and self._thread_id is not None:
                _raise_in_thread(self._thread_id, None)  # drop it if not raised yet
            self._thread_id = None
            self._thread = None

    def expire(self) -> None:
        """The time limit passed: the caller gets :class:`asyncio.TimeoutError`."""
        if not self.future.done():
            self.future.set_exception(asyncio.TimeoutError())

    def stop(self) -> None:
        """The caller gave up: skip the job if queued, interrupt it if running."""
        with self._lock:
            self._stopped = True
            # Only to a worker still alive: a dead thread's id may belong to a new thread
            # by now (one a library's pool just started), which the exception would kill
            # before it signals its start, leaving its starter waiting for ever.
            alive = self._thread is not None and self._thread.is_alive()
            if self._thread_id is not None and alive and not self._interrupt_sent:
                self._interrupt_sent = True
                _raise_in_thread(self._thread_id, Interrupted)

    def mark_held(self) -> bool:
        """After :meth:`stop`: whether the job is still running, so that its worker stays
        busy until it returns (at once for Python code, later for a long C call)."""
        with self._lock:
            if self._thread_id is None or self.held:  # not started, or it has returned
                return False
            self.held = True
            return True

    def _settle(self, value: Any = None, exc: BaseException | None = None) -> None:
        with contextlib.suppress(RuntimeError):  # the event loop is closed: nobody waits
            self.loop.call_soon_threadsafe(_resolve, self.future, value, exc)


def _resolve(future: asyncio.Future[Any], value: Any, exc: BaseException | None) -> None:
    if future.done():  # the caller gave up at its timeout
        return
    if exc is not None:
        future.set_exception(exc)
    else:
        future.set_result(value)


class _Pool:
    """Daemon worker threads, started on demand: :data:`MAX_WORKERS` for calls that have
    not timed out, plus one in place of each thread held by a call that has (see the
    module docstring)."""

    def __init__(self) -> None:
        self._ready = threading.Condition(threading.Lock())
        self._jobs: collections.deque[_Job] = collections.deque()
        self._threads = 0  # alive
        self._waiting = 0  # threads waiting for a job
        self._held = 0  # threads running a job that timed out
        self._held_by: dict[int, int] = {}  # id(owner) -> its held threads

    def held_by(self, owner: object) -> int:
        with self._ready:
            return self._held_by.get(id(owner), 0)

    def held(self) -> int:
        with self._ready:
            return self._held

    def submit(self, job: _Job) -> None:
        with self._ready:
            if job.owner is not None:
                held = self._held_by.get(id(job.owner), 0)
                if held >= MAX_HELD_PER_OWNER:
                    raise TooManyStuckCalls(held)
            self._jobs.append(job)
            if self._waiting >= len(self._jobs):  # a waiting thread takes it
                self._ready.notify()
                return
            if not self._may_start():  # the next thread to finish takes it
                return
            self._threads += 1
        self._start()

    def give_up(self, job: _Job) -> None:
        """The caller of ``job`` stopped waiting (its timeout, or a cancellation): stop
        the job, and if it still runs, count its thread as held until it returns."""
        job.stop()
        with self._ready:  # with the job's own lock inside: _release() sees both or neither
            if not job.mark_held():
                return
            self._held += 1
            if job.owner is not None:
                self._held_by[id(job.owner)] = self._held_by.get(id(job.owner), 0) + 1
            # A thread in place of the held one, if calls wait for one.
            start = len(self._jobs) > self._waiting and self._may_start()
            if start:
                self._threads += 1
        if start:
            self._start()

    def _size(self) -> int:
        """How many threads the pool may have now (the lock is held)."""
        return MAX_WORKERS + min(self._held, MAX_HELD_THREADS)

    def _may_start(self) -> bool:
        return self._threads < self._size()

    def _start(self) -> None:
        # Daemon threads: a worker stuck in a long C call must not hold up interpreter exit.
        threading.Thread(target=self._work, name="agentspec-tool", daemon=True).start()

    def _release(self, job: _Job) -> bool:
        """After ``job`` returned: count its thread free again. Returns whether the thread
        should end (the pool grew in place of held threads, and has more than it needs)."""
        with self._ready:
            if job.held:
                self._held -= 1
                if job.owner is not None:
                    key = id(job.owner)
                    left = self._held_by.pop(key) - 1
                    if left:
                        self._held_by[key] = left
            if self._threads > self._size():
                self._threads -= 1
                return True
            return False

    def _work(self) -> None:
        while True:
            with self._ready:
                self._waiting += 1
                while not self._jobs:
                    self._ready.wait()
                self._waiting -= 1
                job = self._jobs.popleft()
            # An interrupt meant for the job may land between two statements of `run()`;
            # none can arrive after it returns (see _Job._leave).
            with contextlib.suppress(Interrupted):
                job.run()
            if self._release(job):
                return


_POOL = _Pool()


def held_threads(owner: object | None = None) -> int:
    """Threads held by calls that timed out and have not returned: ``owner``'s, or all."""
    return _POOL.held() if owner is None else _POOL.held_by(owner)


async def run_blocking(
    fn: Callable[[], Any], timeout: float | None, owner: object | None = None
) -> Any:
    """``fn()`` in a worker thread; :class:`asyncio.TimeoutError` after ``timeout`` seconds.

    Exceptions of ``fn`` are re-raised here. At the timeout the worker is
    interrupted (see the module docstring). ``owner`` (an episode's environment)
    is whom a thread held past the timeout counts against: while it holds
    :data:`MAX_HELD_PER_OWNER`, this raises :class:`TooManyStuckCalls` at once.
    """
    job = _Job(fn, owner)
    _POOL.submit(job)
    # A timer that fails the future, rather than `asyncio.wait_for`: no extra
    # waiter and callbacks per call, and the same outcome.
    timer = None if timeout is None else job.loop.call_later(timeout, job.expire)
    try:
        return await job.future
    except (asyncio.TimeoutError, asyncio.CancelledError):
        _POOL.give_up(job)
        raise
    finally:
        if timer is not None:
            timer.cancel()


class FifoSemaphore(asyncio.Semaphore):
    """A first-come, first-served semaphore whose ``acquire`` costs the same with
    any number of waiters.

    ``asyncio.Semaphore.acquire`` asks ``locked()``, which on Python 3.11 scans
    every waiter: with hundreds of episodes queued for the tool-call limit,
    each call paid for all of them. Here a released permit goes straight to
    the oldest waiter that is still waiting.
    """

    def __init__(self, value: int = 1) -> None:
        if value < 0:
            raise ValueError("a semaphore needs a value >= 0")
        self._permits = value
        self._queue: collections.deque[asyncio.Future[None]] = collections.deque()

    def __repr__(self) -> str:
        return f"<FifoSemaphore permits={self._permits} waiters={len(self._queue)}>"

    def locked(self) -> bool:
        return self._permits == 0

    async def acquire(self) -> Literal[True]:
        if self._permits > 0 and not self._queue:
            self._permits -= 1
            return True
        granted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queue.append(granted)
        try:
            await granted
        except asyncio.CancelledError:
            if granted.done() and not granted.cancelled():  # handed a permit, then cancelled
                self.release()
            raise
        return True

    def release(self) -> None:
        while self._queue:
            waiter = self._queue.popleft()
            if not waiter.done():  # a cancelled waiter is skipped
                waiter.set_result(None)
                return
        self._permits += 1
