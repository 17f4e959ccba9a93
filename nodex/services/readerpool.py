"""
A fixed pool of reader threads for the state service: reads and calls
against immutable state roots, several at a time, so that one long call
does not hold up the others.

It does what a C{ThreadPool(1, n)} with C{deferToThreadPool} does for a
read, with one bounded queue and no coordinator: every C{eth_call} and uncached
state read crosses to a reader thread and back, and with one client that
crossing is a large part of the answer's time.
"""

import threading
from collections.abc import Callable
from queue import SimpleQueue
from typing import Any, TypeVar

from twisted.internet.defer import Deferred, fail
from twisted.python.failure import Failure

from nodex.api.errors import ServerBusyError
from nodex.services.threads import WorkerThread

T = TypeVar("T")

_Job = tuple[Deferred[Any], Callable[..., Any], tuple[Any, ...]]

MAX_QUEUED = 256
"""
The most jobs that wait for a reader thread.  A job waits at most until its
request's time limit; a full queue means the node cannot answer in time
anyway, and the client learns it at once rather than after the limit.
"""


class ReaderPool:
    """
    C{size} threads taking jobs from one queue, each job's result delivered
    on the reactor thread.  Jobs queued before L{start} wait for it.
    """

    def __init__(self, reactor: Any, size: int, name: str, max_queued: int = MAX_QUEUED) -> None:
        """
        @param reactor: delivers the results (C{callFromThread}).
        @param size: the number of threads, at least one.
        @param name: the prefix of the threads' names.
        @param max_queued: the most jobs waiting for a thread; beyond, a
            job is refused at once (L{ServerBusyError}).
        """
        if size < 1:
            raise ValueError(f"a reader pool needs at least one thread, not {size}")
        self._reactor = reactor
        self._size = size
        self._name = name
        self._max_queued = max_queued
        self._queue: SimpleQueue[_Job | None] = SimpleQueue()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        """
        Start the threads (once).
        """
        if not self._threads:
            self._threads = [
                WorkerThread(target=self._work, name=f"{self._name}-{index}", daemon=True)
                for index in range(self._size)
            ]
            for thread in self._threads:
                thread.start()

    def stop(self) -> None:
        """
        Let the queued jobs run, then end the threads and wait for them.
        """
        threads, self._threads = self._threads, []
        for _ in threads:
            self._queue.put(None)
        for thread in threads:
            thread.join()

    def run(self, function: Callable[..., T], *args: Any) -> "Deferred[T]":
        """
        Queue C{function(*args)}.

        @return: a Deferred that fires on the reactor thread with its result
            or fails with its exception; failing at once with
            L{ServerBusyError} when L{max_queued} jobs wait already.
        """
        if self._queue.qsize() >= self._max_queued:
            return fail(ServerBusyError(
                f"the node is busy: {self._max_queued} requests wait for its {self._size} reader threads;"
                " try again shortly"
            ))
        deferred: Deferred[T] = Deferred()
        self._queue.put((deferred, function, args))
        return deferred

    def queued(self) -> int:
        """
        How many jobs wait for a thread (the running ones not counted).
        """
        return self._queue.qsize()

    def _work(self) -> None:
        """
        One thread: run jobs and hand their outcomes to the reactor, until told to end.
        """
        while True:
            job = self._queue.get()
            if job is None:
                return
            deferred, function, args = job
            try:
                result = function(*args)
            except BaseException:
                self._reactor.callFromThread(deferred.errback, Failure())
            else:
                self._reactor.callFromThread(deferred.callback, result)


__all__ = ["MAX_QUEUED", "ReaderPool"]
