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
  one long C call (e.g. a ``re`` match) stops when that call returns; the
  pool starts another worker meanwhile (up to :data:`MAX_WORKERS`).

``Interrupted`` derives from ``BaseException`` so that code catching
``Exception`` (an expression's error capture) cannot swallow it. A call that
times out may have applied some of its effects before it was stopped.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import ctypes
import queue
import threading
from collections.abc import Callable
from typing import Any, Literal

__all__ = ["MAX_WORKERS", "FifoSemaphore", "Interrupted", "run_blocking"]

MAX_WORKERS = 64
"""Worker threads at most (busy ones included); further jobs wait in a queue."""


class Interrupted(BaseException):
    """Raised inside a worker whose job ran past its time limit."""


def _raise_in_thread(thread_id: int, exc_type: type[BaseException] | None) -> None:
    """Schedule ``exc_type`` in another thread (``None`` clears a pending one)."""
    target = ctypes.py_object(exc_type) if exc_type is not None else None
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), target)


class _Job:
    """One call: run in a worker, its outcome handed to the event loop's future."""

    def __init__(self, fn: Callable[[], Any]) -> None:
        self.fn = fn
        self.loop = asyncio.get_running_loop()
        self.future: asyncio.Future[Any] = self.loop.create_future()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._thread_id: int | None = None
        self._stopped = False  # timed out: do not start, or interrupted once
        self._interrupt_sent = False

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
    """Daemon worker threads that grow on demand up to ``MAX_WORKERS``."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._workers = 0
        self._idle = 0

    def submit(self, job: _Job) -> None:
        self._jobs.put(job)
        with self._lock:
            if self._idle > 0:  # a waiting worker takes it
                self._idle -= 1
                return
            if self._workers >= MAX_WORKERS:  # the next free worker takes it
                return
            self._workers += 1
        # Daemon threads: a worker stuck in a long C call must not hold up interpreter exit.
        threading.Thread(target=self._work, name="agentspec-tool", daemon=True).start()

    def _work(self) -> None:
        while True:
            # An interrupt meant for a job may land between two statements of `run()`;
            # the worker lives on (its id must stay its own while jobs refer to it).
            with contextlib.suppress(Interrupted):
                job = self._jobs.get()
                job.run()
            with contextlib.suppress(Interrupted), self._lock:
                self._idle += 1


_POOL = _Pool()


async def run_blocking(fn: Callable[[], Any], timeout: float | None) -> Any:
    """``fn()`` in a worker thread; :class:`asyncio.TimeoutError` after ``timeout`` seconds.

    Exceptions of ``fn`` are re-raised here. At the timeout the worker is
    interrupted (see the module docstring).
    """
    job = _Job(fn)
    _POOL.submit(job)
    # A timer that fails the future, rather than `asyncio.wait_for`: no extra
    # waiter and callbacks per call, and the same outcome.
    timer = None if timeout is None else job.loop.call_later(timeout, job.expire)
    try:
        return await job.future
    except (asyncio.TimeoutError, asyncio.CancelledError):
        job.stop()
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
